/* test_aigrid.c — the ContractGrid computer player (bot/aigrid.h).
 *
 * Covers: every move it makes is legal, over thousands of hands of whole matches with every
 * option set (deck 25, small, bids 1 to 6, unmarked_point 0, a low cap), some seats played by
 * a random player so that it meets all kinds of positions; its bids never name a cell twice
 * and always name exactly `bids` cells; its bids succeed clearly more often than random bids
 * on the same deals (with the same player making the plays); it excludes its weakest suit
 * with a strong hand; its grids are valid; and it is deterministic in its seed. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "aigrid.h"
#include "grid.h"

TestSuite(aigrid, .timeout = 300);

static uint64_t mix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void seed_bytes(uint64_t n, uint8_t seed[DEAL_SEED_BYTES])
{
    uint64_t x = n * 0x2545F4914F6CDD1Dull + 1;
    for (int i = 0; i < DEAL_SEED_BYTES; i += 8) {
        uint64_t v = mix(&x);
        memcpy(seed + i, &v, 8);
    }
}

/* A random legal move (a random choice of cells for a bid). */
static void random_move(const grid_state *st, int seat, uint64_t *rng, grid_action *out)
{
    grid_action legal[GRID_MAX_LEGAL];
    int n = grid_legal(st, seat, legal);
    cr_assert_gt(n, 0);
    *out = legal[mix(rng) % (uint64_t)n];
    if (out->kind != GRID_DO_BID) return;
    uint8_t cells[GRID_MAX_CELLS];
    int k = out->n;
    memcpy(cells, out->cells, sizeof cells);
    for (int i = k - 1; i > 0; i--) {
        int j = (int)(mix(rng) % (uint64_t)(i + 1));
        uint8_t t = cells[i];
        cells[i] = cells[j];
        cells[j] = t;
    }
    out->n = out->choose;
    memcpy(out->cells, cells, out->n);
}

typedef struct {
    long hands, bids, bids_made, moves;
} tally;

/* Checks one computer move for legality and returns it. */
static void ai_move(const grid_state *st, int seat, uint64_t seed, grid_action *a)
{
    aigrid_input in;
    aigrid_input_of(st, seat, &in);
    cr_assert_eq(aigrid_choose(&in, seed, a), 0, "the player found no move (phase %d)", st->phase);
    if (a->kind == GRID_DO_BID) {
        cr_assert_eq(a->n, st->match.rules.bids, "a bid of %d cells, not %d", a->n, st->match.rules.bids);
        uint16_t seen = 0;
        for (int i = 0; i < a->n; i++) {
            cr_assert_lt(a->cells[i], grid_cells(&st->match.rules));
            cr_assert_eq(seen >> a->cells[i] & 1, 0, "cell %d bid twice", a->cells[i]);
            seen |= (uint16_t)(1u << a->cells[i]);
        }
    }
    grid_state copy = *st;
    grid_error e;
    cr_assert_eq(grid_apply(&copy, seat, a, NULL, &e), GRID_OK, "illegal move (kind %d): %s", a->kind, e.msg);
}

/* Plays one match (or max_hands hands of it). computer: bit s = seat s is the computer player
 * (else random); random_bids: bit s = seat s bids at random but plays with the computer. */
static void play_match(const grid_rules *r, uint64_t seed, int computer, int random_bids, int max_hands, tally *t)
{
    uint8_t grids[GRID_SEATS][GRID_MAX_CELLS], bytes[DEAL_SEED_BYTES];
    grid_match m;
    grid_error e;
    uint64_t rng = seed;
    for (int s = 0; s < GRID_SEATS; s++) {
        if (computer >> s & 1) {
            aigrid_arrange(r, mix(&rng), grids[s]);
        } else {
            seed_bytes(mix(&rng), bytes);
            grid_random_grid(bytes, r, grids[s]);
        }
        cr_assert_eq(grid_grid_check(r, grids[s], &e), 0, "%s", e.msg);
    }
    cr_assert_eq(grid_match_init(&m, r, (const uint8_t(*)[GRID_MAX_CELLS])grids, (int)(seed % 3), &e), 0, "%s", e.msg);
    grid_state st;
    st.match = m;
    for (int hand = 0; hand < max_hands && !st.match.over; hand++) {
        card_t deck[GRID_DECK_MAX];
        seed_bytes(seed * 1000 + (uint64_t)hand, bytes);
        grid_shuffle(bytes, r, deck);
        cr_assert_eq(grid_start(&st, &st.match, deck, NULL), GRID_OK);
        for (int guard = 0; st.phase != GRID_PHASE_DONE; guard++) {
            cr_assert_lt(guard, 200);
            int s = st.to_act;
            grid_action a;
            int is_bid = st.phase == GRID_PHASE_BID;
            if ((computer >> s & 1) && !(is_bid && (random_bids >> s & 1))) ai_move(&st, s, mix(&rng), &a);
            else random_move(&st, s, &rng, &a);
            grid_error err;
            cr_assert_eq(grid_apply(&st, s, &a, NULL, &err), GRID_OK, "%s", err.msg);
            t->moves++;
        }
        t->hands++;
        for (int s = 0; s < GRID_SEATS; s++) {
            if (!(computer >> s & 1)) continue;
            uint16_t bids = st.bids[s];
            for (int cell = 0; cell < grid_cells(r); cell++) {
                if (!(bids >> cell & 1)) continue;
                t->bids++;
                t->bids_made += st.result.values[s] >> st.match.grid[s][cell] & 1;
            }
        }
    }
}

static grid_rules rules_with(const char *const *sets)
{
    grid_rules r;
    grid_error e;
    grid_rules_default(&r);
    for (int i = 0; sets && sets[i]; i += 2) cr_assert_eq(grid_rules_set(&r, sets[i], sets[i + 1], &e), 0, "%s", e.msg);
    cr_assert_eq(grid_rules_check(&r, &e), 0, "%s", e.msg);
    return r;
}

Test(aigrid, always_legal_with_every_option_set)
{
    static const char *const sets[][9] = {
        {NULL},
        {"deck", "25", NULL},
        {"small", "true", NULL},
        {"small", "true", "deck", "25", NULL},
        {"bids", "1", "unmarked_point", "0", NULL},
        {"bids", "6", "cap", "200", NULL},
        {"small", "true", "bids", "5", "unmarked_point", "3", NULL},
        {"deck", "25", "bids", "2", "cap", "60", NULL},
    };
    tally t = {0};
    int nsets = (int)(sizeof sets / sizeof sets[0]);
    for (int i = 0; i < nsets; i++) {
        grid_rules r = rules_with(sets[i]);
        long before = t.hands;
        for (uint64_t k = 0; t.hands - before < 260; k++) {
            int computer = k % 4 == 0 ? 7 : (int)(1 + k % 7); /* all three, or a mix with random players */
            play_match(&r, 1000 * (uint64_t)i + k, computer, 0, 40, &t);
        }
    }
    cr_assert_geq(t.hands, 2000, "only %ld hands", t.hands);
    cr_log_info("aigrid: %ld hands, %ld moves, all legal", t.hands, t.moves);
}

/* Bid success: the computer's bids against random bids on the very same deals, with the
 * computer playing the cards in both runs (so the plays try to make whatever was bid). */
Test(aigrid, bids_succeed_more_often_than_random_bids)
{
    grid_rules r = rules_with(NULL);
    tally ai = {0}, random = {0};
    for (uint64_t k = 0; ai.hands < 2000; k++) play_match(&r, 77000 + k, 7, 0, 25, &ai);
    for (uint64_t k = 0; random.hands < 2000; k++) play_match(&r, 77000 + k, 7, 7, 25, &random);
    double a = (double)ai.bids_made / (double)ai.bids, b = (double)random.bids_made / (double)random.bids;
    cr_log_info("aigrid: bids made %.1f%% (%ld of %ld) against %.1f%% for random bids (%ld of %ld)", 100 * a,
                ai.bids_made, ai.bids, 100 * b, random.bids_made, random.bids);
    printf("aigrid: bids made %.1f%% (%ld of %ld) against %.1f%% for random bids (%ld of %ld), %ld hands each\n",
           100 * a, ai.bids_made, ai.bids, 100 * b, random.bids_made, random.bids, ai.hands);
    cr_assert_gt(a, b + 0.15, "the computer's bids (%.3f) are not clearly better than random ones (%.3f)", a, b);
}

/* A strong hand excludes its weakest suit; the joker is no suit. */
Test(aigrid, excludes_its_weakest_suit)
{
    grid_rules r = rules_with(NULL);
    uint8_t grids[GRID_SEATS][GRID_MAX_CELLS], bytes[DEAL_SEED_BYTES];
    grid_match m;
    grid_error e;
    for (int s = 0; s < GRID_SEATS; s++) {
        seed_bytes((uint64_t)s, bytes);
        grid_random_grid(bytes, &r, grids[s]);
    }
    cr_assert_eq(grid_match_init(&m, &r, (const uint8_t(*)[GRID_MAX_CELLS])grids, 2, &e), 0);
    /* seat 0 (the dealer's left) holds the joker, A K Q J 10 ♠, A K ♥, A ♦ and 7 ♣: ♣ is weakest */
    card_t hands[GRID_SEATS][GRID_HAND_MAX] = {
        {GRID_JOKER, CARD_MAKE(SUIT_S, RANK_A), CARD_MAKE(SUIT_S, RANK_K), CARD_MAKE(SUIT_S, RANK_Q),
         CARD_MAKE(SUIT_S, RANK_J), CARD_MAKE(SUIT_S, RANK_T), CARD_MAKE(SUIT_H, RANK_A), CARD_MAKE(SUIT_H, RANK_K),
         CARD_MAKE(SUIT_D, RANK_A), CARD_MAKE(SUIT_D, RANK_K), CARD_MAKE(SUIT_C, RANK_7)}};
    grid_set used = 0;
    for (int i = 0; i < GRID_HAND_MAX; i++) used |= GRID_BIT(hands[0][i]);
    int k = 0;
    for (card_t c = 0; c < CARD_COUNT; c++) {
        if (used & GRID_BIT(c)) continue;
        hands[1 + k / GRID_HAND_MAX][k % GRID_HAND_MAX] = c;
        k++;
    }
    card_t deck[GRID_DECK_MAX];
    cr_assert_eq(grid_deck_from_hands(&r, (const card_t(*)[GRID_HAND_MAX])hands, CARD_NONE, 2, deck), 0);
    grid_state st;
    cr_assert_eq(grid_start(&st, &m, deck, NULL), GRID_OK);
    cr_assert_eq(st.to_act, 0);
    aigrid_input in;
    grid_action a;
    aigrid_input_of(&st, 0, &in);
    cr_assert_eq(aigrid_choose(&in, 1, &a), 0);
    cr_assert_eq(a.kind, GRID_DO_EXCLUDE);
    cr_assert_eq(a.suit, SUIT_C, "excluded suit %d, not clubs", a.suit);
}

Test(aigrid, grids_are_valid_and_choices_repeat)
{
    static const char *const small[] = {"small", "true", NULL};
    grid_rules big = rules_with(NULL), little = rules_with(small);
    grid_error e;
    for (uint64_t k = 0; k < 200; k++) {
        uint8_t g[GRID_MAX_CELLS], h[GRID_MAX_CELLS];
        aigrid_arrange(&big, k, g);
        cr_assert_eq(grid_grid_check(&big, g, &e), 0, "%s", e.msg);
        aigrid_arrange(&big, k, h);
        cr_assert_eq(memcmp(g, h, sizeof g), 0, "the same seed gives the same grid");
        aigrid_arrange(&little, k, g);
        cr_assert_eq(grid_grid_check(&little, g, &e), 0, "%s", e.msg);
    }
    /* the same input and seed: the same move, in every phase */
    tally t = {0};
    uint8_t grids[GRID_SEATS][GRID_MAX_CELLS], bytes[DEAL_SEED_BYTES];
    grid_match m;
    for (int s = 0; s < GRID_SEATS; s++) aigrid_arrange(&big, (uint64_t)s, grids[s]);
    cr_assert_eq(grid_match_init(&m, &big, (const uint8_t(*)[GRID_MAX_CELLS])grids, 0, &e), 0);
    grid_state st;
    card_t deck[GRID_DECK_MAX];
    seed_bytes(5, bytes);
    grid_shuffle(bytes, &big, deck);
    cr_assert_eq(grid_start(&st, &m, deck, NULL), GRID_OK);
    while (st.phase != GRID_PHASE_DONE) {
        aigrid_input in;
        grid_action a, b;
        aigrid_input_of(&st, st.to_act, &in);
        cr_assert_eq(aigrid_choose(&in, 99, &a), 0);
        cr_assert_eq(aigrid_choose(&in, 99, &b), 0);
        cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "two answers to one question");
        cr_assert_eq(grid_apply(&st, st.to_act, &a, NULL, NULL), GRID_OK);
        t.moves++;
        /* nobody else may move */
        for (int s = 0; s < GRID_SEATS && st.phase != GRID_PHASE_DONE; s++) {
            if (s == st.to_act) continue;
            aigrid_input_of(&st, s, &in);
            cr_assert_eq(aigrid_choose(&in, 1, &a), -1);
        }
    }
    cr_assert_gt(t.moves, 30);
}
