/* test_aiplay.c — the computer players behind aiplay_choose() (bot/aiplay.h) and the knowledge they get
 * (bot/aiworld.h).
 *
 * Always legal: whole deals in `cardroom arena` against the heuristic player under every rules
 * variant, with no move the engine refuses (the arena counts them). Nothing hidden leaks: two states
 * that differ only in cards a seat cannot see give that seat byte-identical knowledge and the same
 * move. The same input and seed give the same move whatever was searched before. And a few choices a
 * person can check: the ace thrown onto partner's trick that would fall later anyway, a bid with a
 * strong trump suit and none with nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aiplay.h"
#include "arena.h"
#include "deal.h"
#include "replay.h"
#include "test_file.h"
#include "test_hands.h"

static void play_deals(const char *level, const char *const *rules, int deals, uint64_t seed)
{
    arena_options o;
    char why[256];
    memset(&o, 0, sizeof o);
    g304_rules_default(&o.rules);
    for (int i = 0; rules[i]; i += 2) cr_assert_eq(g304_rules_set(&o.rules, rules[i], rules[i + 1], NULL), 0);
    o.seed = seed;
    o.limit_ms = 1000;
    cr_assert_eq(arena_spec_parse(level, &o.a, why, sizeof why), 0);
    cr_assert_eq(arena_spec_parse("easy", &o.b, why, sizeof why), 0);
    o.a_partner = o.a;
    arena *ar = arena_new(&o, why, sizeof why);
    cr_assert_not_null(ar, "%s", why);
    for (long i = 0; i < deals; i++) {
        arena_deal d;
        cr_assert_eq(arena_play_deal(ar, i, &d), 0, "%s: deal %ld did not end", level, i);
    }
    const arena_faults *f = arena_faults_of(ar, 0);
    cr_assert_eq(f->refused, 0, "%s made %ld moves the engine refused (or none when it had to)", level, f->refused);
    arena_free(ar);
}

Test(aiplay, expert_always_legal)
{
    static const char *const variants[][9] = {
        {NULL},
        {"bidding", "single", "bid8_opener", "dealer_right", NULL},
        {"caps", "strict", "step_above_200", "5", NULL},
        {"spoilt", "auto", "caps", "off", NULL},
    };
    for (int v = 0; v < 4; v++) play_deals("expert", variants[v], 2, 40 + (uint64_t)v);
}

Test(aiplay, normal_always_legal)
{
    static const char *const variants[][9] = {
        {NULL},
        {"bidding", "single", "bid8_opener", "dealer_right", NULL},
        {"caps", "strict", "spoilt", "auto", NULL},
    };
    for (int v = 0; v < 3; v++) play_deals("normal", variants[v], 12, 80 + (uint64_t)v);
}

/* Plays a hand with the heuristic player up to move `stop`. */
static int reach_move(g304_state *st, uint64_t seed, int stop)
{
    g304_rules r;
    g304_rules_default(&r);
    uint64_t s = seed;
    uint8_t bytes[DEAL_SEED_BYTES];
    for (int i = 0; i < DEAL_SEED_BYTES; i++) bytes[i] = (uint8_t)aiworld_random(&s);
    card_t deck[CARD_COUNT];
    deal_shuffle(bytes, deck, CARD_COUNT);
    const int16_t tokens[2] = {11, 11};
    g304_start(st, &r, (int)(seed & 3), tokens, deck, NULL);
    for (int k = 0; k < stop; k++) {
        if (st->phase == G304_PHASE_DONE || st->to_act == G304_NO_SEAT) return 0;
        ai304_input in;
        g304_action a;
        ai304_input_of(st, st->to_act, &in);
        if (ai304_choose(&in, (uint64_t)k, &a) != 0 || g304_apply(st, st->to_act, &a, NULL, NULL) != G304_OK) return 0;
    }
    return st->phase != G304_PHASE_DONE && st->caps_seat == G304_NO_SEAT;
}

/* A card of seat p's hand that seat `me` cannot see (not a shown indicator). */
static card_t unseen_card(const g304_state *st, int me, int p, uint64_t pick)
{
    g304_view v;
    g304_view_of(st, me, &v);
    cardset_t h = st->hand[p];
    if (v.indicator != CARD_NONE) h &= ~CARDSET_BIT(v.indicator);
    int n = cardset_count(h);
    if (!n) return CARD_NONE;
    for (int k = (int)(pick % (uint64_t)n); k > 0; k--) h &= h - 1;
    return cardset_first(h);
}

static void swap_card(cardset_t *a, cardset_t *b, card_t x, card_t y)
{
    *a = (*a & ~CARDSET_BIT(x)) | CARDSET_BIT(y);
    *b = (*b & ~CARDSET_BIT(y)) | CARDSET_BIT(x);
}

Test(aiplay, knowledge_hides_the_unseen)
{
    aiplay *ai = aiplay_new();
    cr_assert_not_null(ai);
    int compared = 0;
    for (uint64_t seed = 1; compared < 40 && seed < 400; seed++) {
        g304_state st;
        if (!reach_move(&st, seed, (int)(seed % 30) + 4)) continue;
        int me = st.to_act, p = (me + 1) % 4, q = (me + 3) % 4;
        card_t x = unseen_card(&st, me, p, seed), y = unseen_card(&st, me, q, seed >> 3);
        if (x == CARD_NONE || y == CARD_NONE) continue;
        g304_state other = st;
        swap_card(&other.hand[p], &other.hand[q], x, y);
        swap_card(&other.dealt[p], &other.dealt[q], x, y);
        aiworld_input a, b;
        aiworld_input_of(&st, me, NULL, &a);
        aiworld_input_of(&other, me, NULL, &b);
        cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "seat %d's knowledge changed with cards it cannot see", me);
        g304_action ma, mb;
        int ra = aiplay_choose(ai, AIPLAY_EXPERT, &a, seed, &ma), rb = aiplay_choose(ai, AIPLAY_EXPERT, &b, seed, &mb);
        cr_assert_eq(ra, rb);
        cr_assert_eq(memcmp(&ma, &mb, sizeof ma), 0);
        compared++;
    }
    cr_assert_eq(compared, 40);
    aiplay_free(ai);
}

Test(aiplay, same_input_same_move)
{
    aiplay *ai = aiplay_new();
    cr_assert_not_null(ai);
    int checked = 0;
    for (uint64_t seed = 500; checked < 12 && seed < 700; seed++) {
        g304_state st;
        if (!reach_move(&st, seed, 12 + (int)(seed % 14)) || st.phase != G304_PHASE_PLAY) continue;
        aiworld_input in;
        aiworld_input_of(&st, st.to_act, NULL, &in);
        g304_action first, other, again;
        cr_assert_eq(aiplay_choose(ai, AIPLAY_EXPERT, &in, seed, &first), 0);
        aiworld_input elsewhere;
        g304_state st2;
        if (reach_move(&st2, seed + 1000, 20)) {
            aiworld_input_of(&st2, st2.to_act, NULL, &elsewhere);
            aiplay_choose(ai, AIPLAY_EXPERT, &elsewhere, seed, &other); /* fills the table with other things */
        }
        cr_assert_eq(aiplay_choose(ai, AIPLAY_EXPERT, &in, seed, &again), 0);
        cr_assert_eq(memcmp(&first, &again, sizeof first), 0, "another move for the same input and seed");
        checked++;
    }
    cr_assert_eq(checked, 12);
    aiplay_free(ai);
}

/* tests/scenarios/solve/solve-01: seat 2's AC and KC both fall to 9C in the last trick unless thrown
 * onto partner's JS now; every world the seat can imagine agrees. */
Test(aiplay, throws_the_ace_onto_partners_trick)
{
    size_t len;
    char *in = test_read_file(SCENARIO_DIR "/solve/solve-01-throw-the-ace.json", &len), err[256];
    g304_state st;
    cr_assert_eq(replay_304_position(in, len, &st, err, sizeof err), 0, "%s", err);
    free(in);
    aiplay *ai = aiplay_new();
    aiworld_input k;
    aiworld_input_of(&st, 2, NULL, &k);
    for (int level = AIPLAY_NORMAL; level <= AIPLAY_EXPERT; level++) {
        g304_action a;
        cr_assert_eq(aiplay_choose(ai, level, &k, 9, &a), 0);
        cr_assert_eq(a.kind, G304_DO_PLAY);
        cr_assert_eq(a.card, C("AC"), "%s played %s", aiplay_level_name(level), card_str(a.card));
    }
    aiplay_free(ai);
}

/* The first bid of a deal: seat 1 (the dealer's right) speaks first. */
static int first_bid(const char *const hands[4], uint64_t seed)
{
    g304_state st;
    start_from(&st, NULL, 0, hands, NULL);
    aiplay *ai = aiplay_new();
    aiworld_input in;
    aiworld_input_of(&st, 1, NULL, &in);
    g304_action a;
    cr_assert_eq(aiplay_choose(ai, AIPLAY_EXPERT, &in, seed, &a), 0);
    aiplay_free(ai);
    return a.kind == G304_DO_BID ? a.amount : 0;
}

Test(aiplay, bids_on_a_strong_trump_suit_only)
{
    const char *strong[4] = {"7S 8S 9S TS | JS QS KS AS", "JH 9H AH TH | 7D 8D 9D TD", "KH QH 8H 7H | JD QD KD AD",
                             "7C 8C 9C TC | JC QC KC AC"};
    const char *weak[4] = {"JH 9H AH TH | JS QS KS AS", "7S 8D 7C 8C | 9S TS 9D TD", "KH QH 8H 7H | JD QD KD AD",
                           "8S 7D 9C TC | JC QC KC AC"};
    for (uint64_t seed = 1; seed <= 3; seed++) {
        cr_assert_geq(first_bid(strong, seed), 160, "no bid with J 9 A 10 of hearts");
        cr_assert_eq(first_bid(weak, seed), 0, "a bid with 7S 8D 7C 8C");
    }
}
