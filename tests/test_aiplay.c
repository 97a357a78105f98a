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

/* Plays deals of `level` against easy under the rules (name, value pairs; "players" "6" for six
 * players) and asserts that no move was refused. */
static void play_deals(const char *level, const char *const *rules, int deals, uint64_t seed)
{
    arena_options o;
    char why[256];
    memset(&o, 0, sizeof o);
    g304_rules_default(&o.rules);
    for (int i = 0; rules[i]; i += 2) {
        if (strcmp(rules[i], "players") == 0)
            cr_assert_eq(g304_rules_set_players(&o.rules, atoi(rules[i + 1]), NULL), 0);
        else
            cr_assert_eq(g304_rules_set(&o.rules, rules[i], rules[i + 1], NULL), 0);
    }
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

/* Six-player 304 (R-SIX-…) under its rules variants: many hands, no move refused, at both searching
 * levels (a search that runs out of budget or finds no world still answers a legal move). */
Test(aiplay, six_players_always_legal)
{
    static const char *const variants[][9] = {
        {"players", "6", NULL},
        {"players", "6", "bid8_opener", "dealer_right", "caps", "strict", NULL},
        {"players", "6", "spoilt", "auto", "caps", "off", NULL},
    };
    for (int v = 0; v < 3; v++) play_deals("expert", variants[v], 8, 60 + (uint64_t)v);
    for (int v = 0; v < 3; v++) play_deals("normal", variants[v], 8, 90 + (uint64_t)v);
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

/* Plays a hand of `players` players with the heuristic player up to move `stop`. */
static int reach_game(g304_state *st, int players, uint64_t seed, int stop)
{
    g304_rules r;
    g304_rules_default(&r);
    cr_assert_eq(g304_rules_set_players(&r, players, NULL), 0);
    uint64_t s = seed;
    uint8_t bytes[DEAL_SEED_BYTES];
    for (int i = 0; i < DEAL_SEED_BYTES; i++) bytes[i] = (uint8_t)aiworld_random(&s);
    card_t deck[CARD_IDS];
    g304_shuffle(bytes, &r, deck);
    const int16_t tokens[2] = {11, 11};
    g304_start(st, &r, (int)(seed % (uint64_t)players), tokens, deck, NULL);
    for (int k = 0; k < stop; k++) {
        if (st->phase == G304_PHASE_DONE || st->to_act == G304_NO_SEAT) return 0;
        ai304_input in;
        g304_action a;
        ai304_input_of(st, st->to_act, &in);
        if (ai304_choose(&in, (uint64_t)k, &a) != 0 || g304_apply(st, st->to_act, &a, NULL, NULL) != G304_OK) return 0;
    }
    return st->phase != G304_PHASE_DONE && st->caps_seat == G304_NO_SEAT;
}

static int reach_move(g304_state *st, uint64_t seed, int stop) { return reach_game(st, 4, seed, stop); }

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

/* Two states that differ only in cards seat `me` cannot see (swapped between two other seats) give it
 * byte-identical knowledge and the same expert move: `want` such pairs of the game of `players`. */
static void hides_the_unseen(int players, int want)
{
    aiplay *ai = aiplay_new();
    cr_assert_not_null(ai);
    int compared = 0;
    for (uint64_t seed = 1; compared < want && seed < 400; seed++) {
        g304_state st;
        if (!reach_game(&st, players, seed, (int)(seed % 30) + 4)) continue;
        int me = st.to_act, p = (me + 1) % players, q = (me + 3) % players;
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
    cr_assert_eq(compared, want);
    aiplay_free(ai);
}

Test(aiplay, knowledge_hides_the_unseen) { hides_the_unseen(4, 40); }

Test(aiplay, six_players_knowledge_hides_the_unseen) { hides_the_unseen(6, 16); }

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

/* Every world drawn for a six-player seat in play fits what the seat knows: the game's numbers, its
 * own cards, every other hand's size, the suits a seat showed out of, the cards seen played by their
 * players, the trump as far as it is known, the trick on the table; every seat dealt six cards of the
 * 36-card pack (the sixes included) exactly once; and the seat's legal cards in the world are the
 * engine's. */
Test(aiplay, six_player_worlds_fit_the_knowledge)
{
    const cardset_t pack = CARDSET_ALL | CARDSET_SIXES;
    int checked = 0, sixes_placed = 0, voids_seen = 0;
    for (uint64_t seed = 1; checked < 60 && seed < 600; seed++) {
        g304_state st;
        if (!reach_game(&st, 6, seed, 10 + (int)(seed % 30)) || st.phase != G304_PHASE_PLAY) continue;
        int me = st.to_act;
        aiworld_input in;
        aiworld_input_of(&st, me, NULL, &in);
        uint64_t rng = seed;
        aiworld worlds[20];
        int nw = aiworld_draw(&in, &rng, worlds, 20);
        cr_assert_gt(nw, 0, "no world for a real deal (seed %llu)", (unsigned long long)seed);
        g304_action legal[G304_MAX_LEGAL];
        int nl = g304_legal(&st, me, legal);
        for (int w = 0; w < nw; w++) {
            const dd_pos *y = &worlds[w].pos;
            cr_assert_eq(y->nseats, 6);
            cr_assert_eq(y->ntricks, 6);
            cr_assert_eq(y->trick_no, st.trick_no);
            cr_assert_eq(y->to_act, me);
            cr_assert_eq(y->maker, st.maker);
            cr_assert_eq(y->pcc, st.pcc);
            cr_assert(in.know.trumps >> y->trump & 1, "a trump the seat has ruled out");
            if (in.base.view.trump >= 0) cr_assert_eq(y->trump, in.base.view.trump);
            cr_assert_eq(y->n, st.tricks[st.trick_no].n);
            for (int i = 0; i < y->n; i++) {
                cr_assert_eq(y->seat[i], st.tricks[st.trick_no].seat[i]);
                card_t seen = g304_trick_card_for(&st, &st.tricks[st.trick_no], i, me);
                if (seen != CARD_HIDDEN) cr_assert_eq(y->card[i], seen);
            }
            cardset_t all = 0;
            for (int p = 0; p < 6; p++) {
                cardset_t held = y->hand[p] | (y->ind_down && p == y->maker ? CARDSET_BIT(y->indicator) : 0);
                cr_assert_eq(cardset_count(held), cardset_count(g304_cards_of(&st, p)), "seat %d's hand size", p);
                if (p == me) cr_assert_eq(held, g304_cards_of(&st, me), "the seat's own cards");
                for (int s = 0; s < SUIT_COUNT; s++) /* a shown indicator back in hand aside */
                    if (in.know.voids[p] >> s & 1)
                        cr_assert_eq(y->hand[p] & ~in.know.held[p] & CARDSET_SUIT(s), 0, "a void broken");
                voids_seen += in.know.voids[p] != 0;
                cardset_t dealt = worlds[w].dealt[p];
                cr_assert_eq(cardset_count(dealt), 6, "seat %d was dealt %d cards", p, cardset_count(dealt));
                cr_assert_eq(dealt & all, 0, "a card dealt twice");
                cr_assert_eq(held & ~dealt, 0, "a card held but not dealt");
                cr_assert_eq(in.base.seen[p] & ~dealt, 0, "a card seen played by seat %d is not its", p);
                all |= dealt;
            }
            cr_assert_eq(all, pack, "the worlds' deal is not the 36-card pack");
            cr_assert_eq(worlds[w].dealt[me], st.dealt[me]);
            for (int p = 0; p < 6; p++) sixes_placed += p != me && (y->hand[p] & CARDSET_SIXES) != 0;
            card_t mine[G304_TRICKS];
            int nm = dd_legal(y, mine), k = 0;
            for (int i = 0; i < nl; i++)
                if (legal[i].kind == G304_DO_PLAY) cr_assert_eq(legal[i].card, mine[k++], "legal cards differ");
            cr_assert_eq(nm, k, "legal cards differ");
        }
        checked++;
    }
    cr_assert_eq(checked, 60);
    cr_assert_gt(sixes_placed, 0, "no six ever placed in another hand");
    cr_assert_gt(voids_seen, 0, "no void came up");
}

/* Starts a six-player hand (R-SIX-DEAL) from six hands of six cards, dealer seat 0. */
static void start_six(g304_state *st, const char *const hands[6])
{
    g304_rules r;
    g304_rules_default(&r);
    cr_assert_eq(g304_rules_set_players(&r, 6, NULL), 0);
    card_t h[G304_MAX_SEATS][G304_TRICKS], deck[CARD_IDS];
    for (int s = 0; s < 6; s++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", hands[s]);
        int n = 0;
        for (char *save = NULL, *t = strtok_r(buf, " |", &save); t; t = strtok_r(NULL, " |", &save)) h[s][n++] = C(t);
        cr_assert_eq(n, 6);
    }
    cr_assert_eq(g304_deck_from_hands_of(&r, (const card_t(*)[G304_TRICKS])h, 0, deck), 0);
    const int16_t tokens[2] = {11, 11};
    g304_start(st, &r, 0, tokens, deck, NULL);
}

/* Six players, the first turn (seat 1, the dealer's right): the expert bids on J 9 A 10 of hearts and
 * not on 6S 8D 7C 6C; and then, holding the bid, it places an indicator of hearts. */
Test(aiplay, six_players_bid_on_a_strong_trump_suit_only)
{
    const char *strong[6] = {"7S 8S 9S TS | JS QS", "JH 9H AH TH | KS AS", "KH QH 8H 7H | 6S 6H",
                             "7D 8D 9D TD | JD QD", "KD AD 6D 7C | 8C 9C", "TC JC QC KC | AC 6C"};
    const char *weak[6] = {"7S 8S 9S TS | JS QS", "6S 8D 7C 6C | KS AS", "JH 9H AH TH | KH QH",
                           "8H 7H 6H 7D | 9D TD", "JD QD KD AD | 6D 8C", "9C TC JC QC | KC AC"};
    aiplay *ai = aiplay_new();
    cr_assert_not_null(ai);
    for (uint64_t seed = 1; seed <= 2; seed++) {
        g304_state st;
        aiworld_input in;
        g304_action a;
        start_six(&st, weak);
        aiworld_input_of(&st, 1, NULL, &in);
        cr_assert_eq(aiplay_choose(ai, AIPLAY_EXPERT, &in, seed, &a), 0);
        cr_assert_neq(a.kind, G304_DO_BID, "a bid with 6S 8D 7C 6C");
        start_six(&st, strong);
        aiworld_input_of(&st, 1, NULL, &in);
        cr_assert_eq(aiplay_choose(ai, AIPLAY_EXPERT, &in, seed, &a), 0);
        cr_assert_eq(a.kind, G304_DO_BID, "no bid with J 9 A 10 of hearts");
        cr_assert_geq(a.amount, 160);
        cr_assert_eq(g304_apply(&st, 1, &a, NULL, NULL), G304_OK);
        for (int s = 2; st.phase == G304_PHASE_BID4; s = (s + 1) % 6) {
            g304_action pass = test_action(G304_DO_PASS, 0, 0);
            cr_assert_eq(g304_apply(&st, s, &pass, NULL, NULL), G304_OK);
        }
        cr_assert_eq(st.phase, G304_PHASE_TRUMP);
        aiworld_input_of(&st, 1, NULL, &in);
        cr_assert_eq(aiplay_choose(ai, AIPLAY_EXPERT, &in, seed, &a), 0);
        cr_assert_eq(a.kind, G304_DO_TRUMP);
        cr_assert_eq(CARD_SUIT(a.card), SUIT_H, "the indicator %s", card_str(a.card));
    }
    aiplay_free(ai);
}
