/* test_arena.c — `cardroom arena` (bot/arena.h) and the exec protocol for outside players
 * (bot/aiexec.h).
 *
 * The duplicate pairing (both plays of a deal see the same decks and dealer, team A changes seats,
 * and the same players then make the same moves: a margin of exactly zero), reruns giving the same
 * results, outside players that answer well (the README's example player), wrongly, illegally,
 * too slowly, not at all or by dying — each loses its decisions to a random move, counted, and the
 * arena finishes — and requests that never name a card the seat may not see. Six-player 304 the same
 * way with teams of three (outside players are refused there). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "aiexec.h"
#include "aiplay.h"
#include "arena.h"
#include "deal.h"

static void options(arena_options *o, const char *a, const char *b, long limit_ms)
{
    char why[256];
    memset(o, 0, sizeof *o);
    g304_rules_default(&o->rules);
    o->seed = 7;
    o->limit_ms = limit_ms;
    cr_assert_eq(arena_spec_parse(a, &o->a, why, sizeof why), 0, "%s", why);
    cr_assert_eq(arena_spec_parse(b, &o->b, why, sizeof why), 0, "%s", why);
    o->a_partner = o->a;
}

static arena *make(const arena_options *o)
{
    char why[256];
    arena *ar = arena_new(o, why, sizeof why);
    cr_assert_not_null(ar, "%s", why);
    return ar;
}

Test(arena, duplicate_pairing_and_reruns)
{
    arena_options o;
    options(&o, "easy", "random", 1000);
    arena *ar = make(&o), *again = make(&o);
    for (long i = 0; i < 24; i++) {
        arena_deal d, e;
        cr_assert_eq(arena_play_deal(ar, i, &d), 0);
        cr_assert_eq(memcmp(d.play[0].deck, d.play[1].deck, CARD_COUNT), 0, "deal %ld: the plays saw other cards", i);
        cr_assert_eq(d.play[0].dealer, i % G304_SEATS);
        cr_assert_eq(d.play[1].dealer, d.play[0].dealer);
        cr_assert_eq(d.play[0].a_team, 0);
        cr_assert_eq(d.play[1].a_team, 1);
        for (int k = 0; k < 2; k++) {
            const arena_play *p = &d.play[k];
            cr_assert_eq(p->tokens_a, p->result.delta[p->a_team]);
            cr_assert_eq(p->tokens_b, p->result.delta[!p->a_team]);
        }
        cr_assert_eq(arena_play_deal(again, i, &e), 0);
        cr_assert_eq(memcmp(&d.play[0].result, &e.play[0].result, sizeof d.play[0].result), 0, "deal %ld differs on a rerun", i);
        cr_assert_eq(d.margin, e.margin);
    }
    arena_free(ar);
    arena_free(again);
}

/* The same players on both sides play the same game twice with the seats exchanged: luck cancels to
 * exactly zero. */
Test(arena, equal_players_tie_every_deal)
{
    arena_options o;
    options(&o, "easy", "easy", 1000);
    arena *ar = make(&o);
    for (long i = 0; i < 40; i++) {
        arena_deal d;
        cr_assert_eq(arena_play_deal(ar, i, &d), 0);
        cr_assert_eq(d.margin, 0.0, "deal %ld: margin %g", i, d.margin);
        cr_assert_eq(d.play[0].tokens_a, d.play[1].tokens_b);
    }
    arena_free(ar);
}

/* Six-player 304 (R-SIX-…): both plays see the same 36-card deck and the dealer goes round six
 * seats; team A (three seats) changes seats, and equal players tie every deal. */
Test(arena, six_players)
{
    arena_options o;
    options(&o, "easy", "easy", 1000);
    cr_assert_eq(g304_rules_set_players(&o.rules, 6, NULL), 0);
    arena *ar = make(&o);
    for (long i = 0; i < 12; i++) {
        arena_deal d;
        cr_assert_eq(arena_play_deal(ar, i, &d), 0);
        cr_assert_eq(d.play[0].seats, 6);
        cr_assert_eq(memcmp(d.play[0].deck, d.play[1].deck, CARD_IDS), 0, "deal %ld: the plays saw other cards", i);
        cardset_t pack = 0;
        for (int k = 0; k < CARD_IDS; k++) pack |= CARDSET_BIT(d.play[0].deck[k]);
        cr_assert_eq(pack, CARDSET_ALL | CARDSET_SIXES, "deal %ld: not the 36-card pack", i);
        cr_assert_eq(d.play[0].dealer, i % 6);
        cr_assert_eq(d.play[1].dealer, d.play[0].dealer);
        cr_assert_eq(d.play[1].a_team, 1);
        cr_assert_eq(d.margin, 0.0, "deal %ld: margin %g", i, d.margin);
    }
    arena_free(ar);
    char why[256];
    options(&o, "exec:true", "easy", 1000);
    cr_assert_eq(g304_rules_set_players(&o.rules, 6, NULL), 0);
    cr_assert_null(arena_new(&o, why, sizeof why));
    cr_assert(strstr(why, "four-player game only") != NULL, "%s", why);
}

static void expect_faults(const char *player, long limit_ms, long deals, int which)
{
    arena_options o;
    options(&o, player, "easy", limit_ms);
    arena *ar = make(&o);
    for (long i = 0; i < deals; i++) {
        arena_deal d;
        cr_assert_eq(arena_play_deal(ar, i, &d), 0, "%s: deal %ld did not finish", player, i);
    }
    const arena_faults *f = arena_faults_of(ar, 0);
    long got[4] = {f->wrong, f->slow, f->gone, f->refused};
    for (int k = 0; k < 4; k++) {
        if (k == which) cr_expect_gt(got[k], 0, "%s: no fault of kind %d counted", player, k);
        else cr_expect_eq(got[k], 0, "%s: %ld faults of kind %d", player, got[k], k);
    }
    arena_free(ar);
}

Test(arena, exec_example_player)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "exec:python3 %s/tests/arena/example_player.py", SOURCE_DIR);
    expect_faults(cmd, 5000, 4, -1);
}

Test(arena, exec_wrong_and_illegal_answers)
{
    expect_faults("exec:while read r; do echo 'no json'; done", 2000, 2, 0);
    expect_faults("exec:while read r; do echo '{\"do\":\"dance\"}'; done", 2000, 1, 0);
    expect_faults("exec:while read r; do echo '{\"do\":\"play\",\"card\":\"JH\",\"seat\":3}'; done", 2000, 1, 0);
    expect_faults("exec:while read r; do echo '{\"do\":\"bid\",\"amount\":999}'; done", 2000, 1, 0);
}

Test(arena, exec_slow_player_is_cut_off)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_faults("exec:while read r; do sleep 10; done", 50, 1, 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_expect_lt(t1.tv_sec - t0.tv_sec, 60, "the arena waited on a slow player");
}

Test(arena, exec_crashing_player)
{
    expect_faults("exec:exit 3", 2000, 1, 2);
    expect_faults("exec:read r; kill -SEGV $$", 2000, 1, 2);
    expect_faults("exec:/nonexistent/player", 2000, 1, 2);
}

/* A player that dies after a few answers is started again and answers again. */
Test(arena, exec_player_restarted)
{
    const char *cmd = "i=0; while read r; do i=$((i+1)); [ $i -gt 3 ] && exit 1; echo '{\"do\":\"pass\"}'; done";
    aiexec *x = aiexec_new(cmd, 5000);
    cr_assert_not_null(x);
    g304_rules r;
    g304_rules_default(&r);
    card_t deck[CARD_COUNT];
    uint8_t seed[DEAL_SEED_BYTES] = {1};
    deal_shuffle(seed, deck, CARD_COUNT);
    const int16_t tokens[2] = {11, 11};
    g304_state st;
    g304_start(&st, &r, 0, tokens, deck, NULL);
    char *req = aiexec_request(&st, st.to_act, NULL), reply[AIEXEC_LINE_MAX];
    int ok = 0, gone = 0;
    for (int i = 0; i < 8; i++) {
        aiexec_status s = aiexec_ask(x, req, reply, sizeof reply);
        ok += s == AIEXEC_OK;
        gone += s == AIEXEC_GONE;
    }
    cr_assert_geq(ok, 6);
    cr_assert_geq(gone, 1);
    cr_assert_geq(aiexec_starts(x), 2);
    free(req);
    aiexec_free(x);
}

Test(arena, exec_reply_reading)
{
    g304_action a;
    char err[200];
    g304_rules four;
    g304_rules_default(&four);
    cr_assert_eq(aiexec_reply(&four, "{\"do\":\"play\",\"card\":\"J♥\"}", strlen("{\"do\":\"play\",\"card\":\"J♥\"}"), 2, &a, err,
                              sizeof err),
                 0, "%s", err);
    cr_assert_eq(a.kind, G304_DO_PLAY);
    cr_assert_eq(a.card, CARD_MAKE(SUIT_H, RANK_J));
    const char *pcc = "{\"seat\":2,\"do\":\"bid\",\"amount\":\"pcc\"}";
    cr_assert_eq(aiexec_reply(&four, pcc, strlen(pcc), 2, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.amount, G304_PCC);
    const char *other = "{\"seat\":1,\"do\":\"pass\"}";
    cr_assert_eq(aiexec_reply(&four, other, strlen(other), 2, &a, err, sizeof err), -1);
    cr_assert(strstr(err, "seat 1") != NULL, "%s", err);
    cr_assert_eq(aiexec_reply(&four, "[1,2]", 5, 2, &a, err, sizeof err), -1);
    cr_assert_eq(aiexec_reply(&four, "{\"do\":\"play\"}", 13, 2, &a, err, sizeof err), -1);
    cr_assert_eq(aiexec_reply(&four, "", 0, 2, &a, err, sizeof err), -1);
    const char *six = "{\"do\":\"play\",\"card\":\"6H\"}";
    cr_assert_eq(aiexec_reply(&four, six, strlen(six), 2, &a, err, sizeof err), -1, "a six in a four-player game");
}

/* Collects every card named anywhere in a JSON value. */
static void cards_in(const json_t *v, cardset_t *out)
{
    if (json_is_string(v)) {
        card_t c;
        const char *s = json_string_value(v);
        if (strlen(s) == 2 && card_parse(s, 2, &c, NULL, 0) == 0) *out |= CARDSET_BIT(c);
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) cards_in(json_array_get(v, i), out);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            if (strcmp(k, "legal") != 0) cards_in(x, out);
        }
    }
}

/* Over whole hands of heuristic players, every request names only cards its seat may know. */
Test(arena, requests_hide_what_the_seat_cannot_see)
{
    g304_rules r;
    g304_rules_default(&r);
    uint64_t s = 11;
    long checked = 0;
    for (int hand = 0; hand < 60; hand++) {
        uint8_t seed[DEAL_SEED_BYTES];
        for (int i = 0; i < DEAL_SEED_BYTES; i++) seed[i] = (uint8_t)aiworld_random(&s);
        card_t deck[CARD_COUNT];
        deal_shuffle(seed, deck, CARD_COUNT);
        const int16_t tokens[2] = {11, 11};
        g304_state st;
        g304_start(&st, &r, hand % 4, tokens, deck, NULL);
        for (int k = 0; k < 200 && st.phase != G304_PHASE_DONE; k++) {
            for (int seat = 0; seat < G304_SEATS; seat++) {
                char *req = aiexec_request(&st, seat, NULL);
                json_t *doc = json_loads(req, 0, NULL);
                cr_assert_not_null(doc);
                cardset_t named = 0, may = g304_cards_of(&st, seat);
                cards_in(doc, &named);
                g304_view v;
                g304_view_of(&st, seat, &v);
                if (v.indicator != CARD_NONE) may |= CARDSET_BIT(v.indicator);
                may |= v.caps_shown;
                for (int t = 0; t <= st.trick_no && t < G304_TRICKS; t++)
                    for (int i = 0; i < st.tricks[t].n; i++) {
                        card_t c = g304_trick_card_for(&st, &st.tricks[t], i, seat);
                        if (c < CARD_COUNT) may |= CARDSET_BIT(c);
                    }
                cr_assert_eq(named & ~may, 0, "a request for seat %d names a card it may not see", seat);
                json_decref(doc);
                free(req);
                checked++;
            }
            ai304_input in;
            g304_action a;
            ai304_input_of(&st, st.to_act, &in);
            cr_assert_eq(ai304_choose(&in, (uint64_t)k, &a), 0);
            cr_assert_eq(g304_apply(&st, st.to_act, &a, NULL, NULL), G304_OK);
        }
    }
    cr_assert_gt(checked, 5000);
}

static int run(const char *args, char *out, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s arena %s 2>&1", CARDROOM_BIN, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(arena, command_line)
{
    char out[8192];
    cr_assert_eq(run("--a easy --b random --deals 6 --jobs 2 --options caps=strict,scoring=bank", out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "deal 6 (dealer 1)") != NULL, "%s", out);
    cr_assert(strstr(out, "A - B, tokens per deal:") != NULL, "%s", out);
    cr_assert_eq(run("--a easy --b easy --deals 3 --json --quiet", out, sizeof out), 0, "%s", out);
    json_t *doc = json_loads(out, 0, NULL);
    cr_assert_not_null(doc, "%s", out);
    cr_assert_eq(json_integer_value(json_object_get(doc, "deals")), 3);
    cr_assert_eq(json_real_value(json_object_get(doc, "margin")), 0.0);
    json_decref(doc);
    cr_assert_eq(run("--a nobody --b easy --deals 1", out, sizeof out), 2);
    cr_assert(strstr(out, "unknown player") != NULL, "%s", out);
    cr_assert_eq(run("--a easy --b easy", out, sizeof out), 2);
    cr_assert_eq(run("--a easy --b easy --deals 0", out, sizeof out), 2);
    cr_assert_eq(run("--a easy --b easy --deals 1 --options caps=sometimes", out, sizeof out), 2);
    cr_assert_eq(run("--a exec: --b easy --deals 1", out, sizeof out), 2);
    /* six players: teams of three */
    cr_assert_eq(run("--a easy --b random --deals 2 --options players=6,caps=strict", out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "deal 2 (dealer 1):  A at 0/2/4:") != NULL, "%s", out);
    cr_assert(strstr(out, "| A at 1/3/5:") != NULL, "%s", out);
    cr_assert_eq(run("--a easy --b easy --deals 1 --json --options players=6", out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "\"a_seats\":[0,2,4]") != NULL && strstr(out, "\"a_seats\":[1,3,5]") != NULL, "%s", out);
    cr_assert_eq(run("--a easy --b easy --deals 1 --options players=5", out, sizeof out), 2);
    cr_assert(strstr(out, "option players is 4 or 6, not \"5\"") != NULL, "%s", out);
    cr_assert_eq(run("--a exec:true --b easy --deals 1 --options players=6", out, sizeof out), 2);
    cr_assert(strstr(out, "outside players (exec:) play the four-player game only") != NULL, "%s", out);
}
