/* test_grid.c — the ContractGrid engine (engine/grid.h): text, options, grids, the match
 * ranking, a random simulation of many matches over every option, and the ContractGrid side
 * of `cardroom replay` (malformed input, output shape, mutated input). The rules of play are
 * tested by the scenario files in tests/scenarios/grid/ (run by test_scenarios.c).
 *
 * The simulation plays whole matches with random legal moves and checks, at every step:
 *   - grid_legal() and grid_apply() agree: every listed move is accepted (tried on a copy), and
 *     random moves that are not listed are refused with the state unchanged byte for byte;
 *   - the cards a seat may play are those the rules allow (G-PLAY, modelled here independently);
 *   - the leak check: every event delivered to a seat holds only cards that seat may know
 *     (its own deal, cards played so far, the left-out card once the hand is over), and the
 *     view of a seat does not change when the cards it cannot see are dealt differently
 *     among the other seats and the left-out place;
 *   - at the end of each hand: every dealt card was played once, the tricks add up to the hand
 *     size, each seat's points are the sum of its parts and its score grew by its total, marks
 *     only grow and only on made bids, and the match ends exactly when G-END says so.
 * Environment: CARDROOM_GRID_MATCHES (matches per option set, default 150), CARDROOM_GRID_SEED. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid.h"
#include "replay.h"

/* ---- PRNG: splitmix64 ---- */
typedef struct {
    uint64_t s;
} rng;

static uint64_t rng_u64(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(rng *r, uint32_t n) { return (uint32_t)(((rng_u64(r) >> 32) * (uint64_t)n) >> 32); }

static void init_sodium(void) { cr_assert_geq(sodium_init(), 0); }

TestSuite(grid, .init = init_sodium);

/* ---- text ---- */

Test(grid, joker_text)
{
    const char *forms[] = {"JK", "jk", "Jk", " joker ", "JOKER", "\xF0\x9F\x83\x8F", "\xF0\x9F\x83\x8F\xEF\xB8\x8F"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        card_t c = 0;
        cr_assert_eq(grid_card_parse(forms[i], strlen(forms[i]), &c, NULL, 0), 0, "%s", forms[i]);
        cr_assert_eq(c, GRID_JOKER, "%s", forms[i]);
    }
    card_t c;
    char err[128];
    cr_assert_eq(grid_card_parse("10h", 3, &c, NULL, 0), 0);
    cr_assert_eq(c, CARD_MAKE(SUIT_H, RANK_T));
    cr_assert_eq(grid_card_parse("jh", 2, &c, NULL, 0), 0);
    cr_assert_eq(c, CARD_MAKE(SUIT_H, RANK_J));
    cr_assert_lt(grid_card_parse("jx", 2, &c, err, sizeof err), 0);
    cr_assert(strstr(err, "JK"), "%s", err);
    cr_assert_str_eq(grid_card_str(GRID_JOKER), "JK");
    cr_assert_str_eq(grid_card_str(CARD_MAKE(SUIT_C, RANK_A)), "AC");
    char buf[GRID_CARD_TEXT_MAX];
    cr_assert_str_eq(grid_card_pretty(GRID_JOKER, buf), "\xF0\x9F\x83\x8F");
}

Test(grid, cells_and_contracts)
{
    grid_rules big, small;
    grid_rules_default(&big);
    grid_rules_default(&small);
    cr_assert_eq(grid_rules_set(&small, "small", "true", NULL), 0);
    char name[GRID_CELL_TEXT_MAX], err[128];
    int cell;
    /* row by row from a1 */
    cr_assert_str_eq(grid_cell_name(&big, 0, name), "a1");
    cr_assert_str_eq(grid_cell_name(&big, 3, name), "d1");
    cr_assert_str_eq(grid_cell_name(&big, 4, name), "a2");
    cr_assert_str_eq(grid_cell_name(&big, 15, name), "d4");
    cr_assert_str_eq(grid_cell_name(&small, 3, name), "a2");
    cr_assert_str_eq(grid_cell_name(&small, 8, name), "c3");
    cr_assert_str_eq(grid_cell_name(&small, 9, name), "??");
    for (int c = 0; c < 16; c++) {
        cr_assert_eq(grid_cell_parse(&big, grid_cell_name(&big, c, name), 2, &cell, NULL, 0), 0);
        cr_assert_eq(cell, c);
    }
    cr_assert_eq(grid_cell_parse(&big, " B3 ", 4, &cell, NULL, 0), 0);
    cr_assert_eq(cell, 9);
    cr_assert_eq(grid_cell_parse(&big, "d5", 2, &cell, err, sizeof err), -2);
    cr_assert_str_eq(err, "d5 is not a cell: cells are a1 to d4");
    cr_assert_eq(grid_cell_parse(&small, "d1", 2, &cell, err, sizeof err), -2);
    cr_assert_str_eq(err, "d1 is not a cell: cells are a1 to c3");
    cr_assert_eq(grid_cell_parse(&big, "a0", 2, &cell, NULL, 0), -2);
    cr_assert_eq(grid_cell_parse(&big, "zz", 2, &cell, err, sizeof err), -1);
    cr_assert_eq(grid_cell_parse(&big, "", 0, &cell, NULL, 0), -1);
    for (int k = 0; k < GRID_CONTRACTS; k++) {
        const char *n = grid_contract_name(k);
        cr_assert_eq(grid_contract_parse(n, strlen(n)), k);
    }
    cr_assert_eq(grid_contract_parse("AllTrump", 8), GRID_C_ALLTRUMP);
    cr_assert_eq(grid_contract_parse("nothing", 7), -1);
}

Test(grid, lines)
{
    grid_rules r;
    grid_rules_default(&r);
    uint16_t l[GRID_MAX_LINES];
    cr_assert_eq(grid_lines(&r, l), 14);
    int three = 0, four = 0;
    for (int i = 0; i < 14; i++) {
        int n = __builtin_popcount(l[i]);
        three += n == 3;
        four += n == 4;
    }
    cr_assert_eq(four, 10);
    cr_assert_eq(three, 4);
    /* the short diagonals, by name */
    const char *shorts[4][3] = {{"b1", "c2", "d3"}, {"a2", "b3", "c4"}, {"c1", "b2", "a3"}, {"d2", "c3", "b4"}};
    for (int d = 0; d < 4; d++) {
        uint16_t m = 0;
        for (int k = 0; k < 3; k++) {
            int c;
            cr_assert_eq(grid_cell_parse(&r, shorts[d][k], 2, &c, NULL, 0), 0);
            m |= (uint16_t)(1u << c);
        }
        int found = 0;
        for (int i = 0; i < 14; i++) found |= l[i] == m;
        cr_assert(found, "short diagonal %d", d);
    }
    grid_rules_set(&r, "small", "on", NULL);
    cr_assert_eq(grid_lines(&r, l), 8);
    for (int i = 0; i < 8; i++) cr_assert_eq(__builtin_popcount(l[i]), 3);
    cr_assert_eq(grid_all_cells(&r), 0x1FF);
}

Test(grid, options)
{
    grid_rules r;
    grid_error e;
    grid_rules_default(&r);
    cr_assert_eq(r.cap, 1000);
    cr_assert_eq(r.bids, 4);
    cr_assert_eq(r.deck, 33);
    cr_assert_eq(r.unmarked_point, 1);
    cr_assert_eq(r.small, 0);
    cr_assert_eq(grid_rules_set(&r, "small", "yes", &e), 0);
    cr_assert_eq(r.bids, 3);
    cr_assert_eq(r.cap, 100);
    cr_assert_eq(grid_rules_set(&r, "bids", "12", &e), 0);
    cr_assert_eq(grid_rules_check(&r, &e), -1);
    cr_assert_eq(e.code, GRID_E_OPTION);
    cr_assert_eq(grid_rules_set(&r, "deck", "24", &e), -1);
    cr_assert(strstr(e.msg, "33 or 25"), "%s", e.msg);
    cr_assert_eq(grid_rules_set(&r, "color", "red", &e), -1);
    cr_assert_eq(grid_rules_set(&r, "cap", "0", &e), -1);
    cr_assert_eq(grid_rules_set(&r, "unmarked_point", "0", &e), 0);
    char buf[16];
    for (int i = 0; grid_option_names[i]; i++) cr_assert_not_null(grid_rules_get(&r, grid_option_names[i], buf, sizeof buf));
    cr_assert_str_eq(grid_rules_get(&r, "small", buf, sizeof buf), "true");
    cr_assert_null(grid_rules_get(&r, "color", buf, sizeof buf));
}

Test(grid, grid_check_and_random)
{
    grid_rules r;
    grid_error e;
    grid_rules_default(&r);
    uint8_t g[GRID_MAX_CELLS];
    for (int i = 0; i < 16; i++) g[i] = (uint8_t)i;
    cr_assert_eq(grid_grid_check(&r, g, &e), 0);
    g[5] = GRID_C_HEARTS;
    cr_assert_eq(grid_grid_check(&r, g, &e), -1);
    cr_assert_str_eq(e.msg, "hearts appears twice (b2 and a4): each contract goes on the grid once");
    g[5] = 20;
    cr_assert_eq(grid_grid_check(&r, g, &e), -1);
    cr_assert_eq(e.code, GRID_E_GRID);

    uint8_t seed[DEAL_SEED_BYTES] = {1, 2, 3};
    uint8_t a[GRID_MAX_CELLS], b[GRID_MAX_CELLS];
    grid_random_grid(seed, &r, a);
    grid_random_grid(seed, &r, b);
    cr_assert_arr_eq(a, b, sizeof a);
    cr_assert_eq(grid_grid_check(&r, a, &e), 0, "%s", e.msg);
    seed[0] = 9;
    grid_random_grid(seed, &r, b);
    cr_assert(memcmp(a, b, sizeof a) != 0);
    grid_rules_set(&r, "small", "true", NULL);
    grid_random_grid(seed, &r, a);
    cr_assert_eq(grid_grid_check(&r, a, &e), 0, "%s", e.msg);
    cr_assert_eq(a[9], 0xFF);
    for (int i = 0; i < 9; i++) g[i] = (uint8_t)i;
    g[8] = GRID_C_PLAY; /* not a contract of the small game */
    cr_assert_eq(grid_grid_check(&r, g, &e), -1);
    cr_assert(strstr(e.msg, "play (on c3) is not a contract of the small game"), "%s", e.msg);
}

Test(grid, shuffle_and_deal)
{
    for (int deck = 25; deck <= 33; deck += 8) {
        grid_rules r;
        grid_rules_default(&r);
        r.deck = (uint8_t)deck;
        uint8_t seed[DEAL_SEED_BYTES] = {7};
        card_t d[GRID_DECK_MAX], d2[GRID_DECK_MAX];
        grid_shuffle(seed, &r, d);
        grid_shuffle(seed, &r, d2);
        cr_assert_arr_eq(d, d2, sizeof d);
        grid_set s = 0;
        for (int i = 0; i < deck; i++) s |= GRID_BIT(d[i]);
        cr_assert_eq(s, grid_deck_cards(&r));
        cr_assert_eq(__builtin_popcountll(s), deck);
        /* deck order -> hands -> deck order */
        int k = grid_hand_size(&r), dealer = 2;
        card_t hands[GRID_SEATS][GRID_HAND_MAX];
        for (int i = 0; i < GRID_SEATS; i++)
            for (int j = 0; j < k; j++) hands[(dealer + 1 + i) % 3][j] = d[i * k + j];
        card_t back[GRID_DECK_MAX];
        cr_assert_eq(grid_deck_from_hands(&r, (const card_t(*)[GRID_HAND_MAX])hands, deck == 25 ? d[24] : CARD_NONE,
                                          dealer, back),
                     0);
        cr_assert_arr_eq(back, d, (size_t)deck);
        hands[0][0] = hands[1][0];
        cr_assert_eq(grid_deck_from_hands(&r, (const card_t(*)[GRID_HAND_MAX])hands, d[24], dealer, back), -1);
    }
}

/* ---- trick winner and following (G-PLAY) ---- */

Test(grid, trick_winner_and_follow)
{
    int trump = SUIT_H;
    card_t t1[3] = {CARD_MAKE(SUIT_S, RANK_9), CARD_MAKE(SUIT_S, RANK_A), CARD_MAKE(SUIT_H, RANK_7)};
    cr_assert_eq(grid_trick_winner(t1, 3, trump), 2);
    card_t t2[3] = {CARD_MAKE(SUIT_S, RANK_9), CARD_MAKE(SUIT_S, RANK_A), CARD_MAKE(SUIT_D, RANK_A)};
    cr_assert_eq(grid_trick_winner(t2, 3, trump), 1);
    card_t t3[3] = {CARD_MAKE(SUIT_H, RANK_A), GRID_JOKER, CARD_MAKE(SUIT_H, RANK_K)};
    cr_assert_eq(grid_trick_winner(t3, 3, trump), 1);
    card_t t4[3] = {GRID_JOKER, CARD_MAKE(SUIT_H, RANK_A), CARD_MAKE(SUIT_S, RANK_A)};
    cr_assert_eq(grid_trick_winner(t4, 3, trump), 0);

    grid_error e;
    grid_set hand = GRID_BIT(GRID_JOKER) | GRID_BIT(CARD_MAKE(SUIT_S, RANK_7));
    /* trump led, the joker is the only trump: it must be played */
    cr_assert_eq(grid_check_card(hand, CARD_MAKE(SUIT_H, RANK_9), trump, CARD_MAKE(SUIT_S, RANK_7), &e),
                 GRID_E_FOLLOW);
    cr_assert_eq(grid_check_card(hand, CARD_MAKE(SUIT_H, RANK_9), trump, GRID_JOKER, &e), GRID_OK);
    /* spades led: the joker is not a spade */
    cr_assert_eq(grid_check_card(hand, CARD_MAKE(SUIT_S, RANK_9), trump, GRID_JOKER, &e), GRID_E_FOLLOW);
    cr_assert_str_eq(e.msg, "you must follow \xE2\x99\xA0: you hold 7\xE2\x99\xA0");
    /* joker led: trumps are asked for */
    grid_set h2 = GRID_BIT(CARD_MAKE(SUIT_H, RANK_8)) | GRID_BIT(CARD_MAKE(SUIT_S, RANK_7));
    cr_assert_eq(grid_check_card(h2, GRID_JOKER, trump, CARD_MAKE(SUIT_S, RANK_7), &e), GRID_E_FOLLOW);
    cr_assert_eq(grid_check_card(h2, GRID_JOKER, trump, CARD_MAKE(SUIT_H, RANK_8), &e), GRID_OK);
    cr_assert_eq(grid_check_card(h2, GRID_JOKER, trump, CARD_MAKE(SUIT_C, RANK_8), &e), GRID_E_NOT_HELD);
}

/* ---- values and score (G-VALUES, G-SCORE) ---- */

Test(grid, values_by_trick_counts)
{
    grid_set won[3] = {0, 0, 0};
    uint16_t v[3];
    uint8_t t[3] = {5, 3, 3};
    grid_values(16, t, won, SUIT_S, ~(grid_set)0, v);
    cr_assert(v[0] >> GRID_C_TWO & 1);
    cr_assert(v[0] >> GRID_C_FIRST & 1);
    cr_assert(v[0] >> GRID_C_SOLOIST & 1);
    cr_assert(!(v[0] >> GRID_C_PARTNER & 1));
    cr_assert(v[1] >> GRID_C_ZERO & 1);
    cr_assert(v[1] >> GRID_C_THIRD & 1);
    cr_assert(v[1] >> GRID_C_PARTNER & 1);
    cr_assert(!(v[1] >> GRID_C_SECOND & 1));
    uint8_t t2[3] = {4, 4, 3}; /* two first, nobody second */
    grid_values(16, t2, won, SUIT_S, ~(grid_set)0, v);
    cr_assert(v[0] >> GRID_C_FIRST & 1 && v[1] >> GRID_C_FIRST & 1);
    for (int s = 0; s < 3; s++) cr_assert(!(v[s] >> GRID_C_SECOND & 1));
    uint8_t t3[3] = {6, 4, 1};
    grid_values(9, t3, won, SUIT_S, ~(grid_set)0, v);
    for (int s = 0; s < 3; s++) {
        cr_assert(v[s] >> GRID_C_DIFFERENT & 1);
        cr_assert_eq(v[s] >> 9, 0, "small game: only nine contracts");
    }
    cr_assert(v[1] >> GRID_C_SECOND & 1);
}

Test(grid, score_of_94)
{
    grid_rules r;
    grid_rules_default(&r);
    uint8_t g[GRID_MAX_CELLS];
    for (int i = 0; i < 16; i++) g[i] = (uint8_t)i;
    int16_t part[GRID_PARTS];
    uint16_t newly;
    /* every cell but the four of the a1-d4 diagonal marked; those four bid and made */
    uint16_t diag = 1u << 0 | 1u << 5 | 1u << 10 | 1u << 15;
    uint16_t values = 1u << g[0] | 1u << g[5] | 1u << g[10] | 1u << g[15];
    int total = grid_score(&r, g, (uint16_t)~diag, diag, values, part, &newly);
    cr_assert_eq(part[GRID_PART_UNMARKED], 4);
    cr_assert_eq(part[GRID_PART_BIDS], 20);
    cr_assert_eq(part[GRID_PART_LINES], 70);
    cr_assert_eq(total, 94);
    cr_assert_eq(newly, diag);
}

/* ---- the match (G-END, G-WINNER) ---- */

static void plain_match(grid_match *m, const grid_rules *r)
{
    uint8_t g[GRID_SEATS][GRID_MAX_CELLS];
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 16; i++) g[s][i] = (uint8_t)(i < grid_cells(r) ? i : 0xFF);
    grid_error e;
    cr_assert_eq(grid_match_init(m, r, (const uint8_t(*)[GRID_MAX_CELLS])g, 0, &e), 0, "%s", e.msg);
}

Test(grid, ranking_and_tie_break)
{
    grid_rules r;
    grid_rules_default(&r);
    grid_match m;
    plain_match(&m, &r);
    grid_error e;
    uint16_t marks[3] = {0, 0, 0};
    int32_t scores[3] = {30, 30, 20};
    int16_t hist[3][3] = {{10, 5, 10}, {10, 20, 5}, {10, 5, 5}}; /* totals 10/5/10, 20/25/15, 30/30/20 */
    cr_assert_eq(grid_match_restore(&m, marks, scores, (const int16_t(*)[3])hist, 3, &e), 0, "%s", e.msg);
    uint8_t place[3];
    /* seats 0 and 1 tied; after hand 2 seat 1 was ahead */
    cr_assert_eq(grid_match_rank(&m, place), 1 << 1);
    cr_assert_eq(place[0], 2);
    cr_assert_eq(place[2], 3);
    int16_t same[2][3] = {{10, 10, 0}, {20, 20, 20}};
    cr_assert_eq(grid_match_restore(&m, marks, scores, (const int16_t(*)[3])same, 2, &e), 0, "%s", e.msg);
    cr_assert_eq(grid_match_rank(&m, place), 3, "tied throughout: shared win");
    cr_assert_eq(place[0], 1);
    cr_assert_eq(place[1], 1);
    /* history adding up to more than the score */
    int16_t big[1][3] = {{40, 0, 0}};
    cr_assert_eq(grid_match_restore(&m, marks, scores, (const int16_t(*)[3])big, 1, &e), -1);
    cr_assert_eq(e.code, GRID_E_PROGRESS);
    scores[0] = 1000;
    cr_assert_eq(grid_match_restore(&m, marks, scores, NULL, 0, &e), -1);
}

/* ---- the random simulation ---- */

typedef struct {
    long hands, moves, refused, matches, over_cap, over_grid;
} sim_stats;

/* The cards seat s may know now (G-DEAL, G-PLAY: all cards are played face up). */
static grid_set allowed_for(const grid_state *st, int s)
{
    grid_set a = st->dealt[s];
    for (int o = 0; o < GRID_SEATS; o++) a |= st->dealt[o] & ~st->hand[o];
    if (st->phase == GRID_PHASE_DONE && st->left_out != CARD_NONE) a |= GRID_BIT(st->left_out);
    return a;
}

static void check_events(const grid_state *st, const grid_events *ev)
{
    for (int i = 0; i < ev->n; i++) {
        const grid_event *e = &ev->ev[i];
        cr_assert_leq(e->n, GRID_HAND_MAX);
        for (int s = 0; s < GRID_SEATS; s++) {
            if (!grid_event_visible(e, s)) continue;
            grid_set ok = allowed_for(st, s);
            for (int k = 0; k < e->n; k++)
                cr_assert(ok & GRID_BIT(e->cards[k]), "event %d tells seat %d card %s it may not see", e->kind, s,
                          grid_card_str(e->cards[k]));
        }
    }
}

/* Deals the cards seat s cannot see differently among the other seats (and the left-out
 * card); the view of s must not change. */
static void check_view_blind(const grid_state *st, int s, rng *r)
{
    grid_state alt = *st;
    card_t pool[GRID_DECK_MAX];
    int n = 0;
    int hidden_left = st->phase != GRID_PHASE_DONE && st->left_out != CARD_NONE;
    for (int o = 0; o < GRID_SEATS; o++)
        if (o != s)
            for (grid_set h = st->hand[o]; h; h &= h - 1) pool[n++] = (card_t)__builtin_ctzll(h);
    if (hidden_left) pool[n++] = st->left_out;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(r, (uint32_t)i + 1);
        card_t t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    int k = 0;
    for (int o = 0; o < GRID_SEATS; o++) {
        if (o == s) continue;
        int cnt = __builtin_popcountll(st->hand[o]);
        grid_set nh = 0;
        for (int i = 0; i < cnt; i++) nh |= GRID_BIT(pool[k++]);
        alt.dealt[o] = (st->dealt[o] & ~st->hand[o]) | nh;
        alt.hand[o] = nh;
    }
    if (hidden_left) alt.left_out = pool[k++];
    grid_view a, b;
    grid_view_of(st, s, &a);
    grid_view_of(&alt, s, &b);
    cr_assert(memcmp(&a, &b, sizeof a) == 0, "the view of seat %d depends on cards it cannot see", s);
    if (st->to_act == s) {
        grid_action la[GRID_MAX_LEGAL], lb[GRID_MAX_LEGAL];
        int na = grid_legal(st, s, la), nb = grid_legal(&alt, s, lb);
        cr_assert_eq(na, nb);
        cr_assert(memcmp(la, lb, sizeof la[0] * (size_t)na) == 0);
    }
    /* nothing in the view outside what it may know */
    grid_set ok = allowed_for(st, s);
    cr_assert_eq(a.hand & ~ok, 0);
    cr_assert_eq(a.played & ~ok, 0);
    for (int i = 0; i < a.current.n; i++) cr_assert(ok & GRID_BIT(a.current.card[i]));
    for (int i = 0; i < a.last.n; i++) cr_assert(ok & GRID_BIT(a.last.card[i]));
    if (a.left_out != CARD_NONE) cr_assert_eq(st->phase, GRID_PHASE_DONE);
}

/* The playable cards by the rules (G-PLAY), independent of the engine's follow check. */
static grid_set playable_model(const grid_state *st, int s)
{
    const grid_trick *t = &st->tricks[st->trick_no];
    grid_set h = st->hand[s];
    if (t->n == 0) return h;
    card_t led = t->card[0];
    int ls = led == GRID_JOKER ? st->trump : CARD_SUIT(led);
    grid_set follow = h & GRID_SUIT_SET(ls);
    if (ls == st->trump) follow |= h & GRID_BIT(GRID_JOKER);
    return follow ? follow : h;
}

static int is_listed(const grid_state *st, int seat, const grid_action *a)
{
    grid_action l[GRID_MAX_LEGAL];
    int n = grid_legal(st, seat, l);
    for (int i = 0; i < n; i++) {
        if (l[i].kind != a->kind) continue;
        if (a->kind == GRID_DO_EXCLUDE && l[i].suit == a->suit) return 1;
        if (a->kind == GRID_DO_PLAY && l[i].card == a->card) return 1;
        if (a->kind == GRID_DO_BID) {
            if (a->n != l[i].choose || a->n > GRID_MAX_CELLS) return 0;
            uint32_t listed = 0, seen = 0;
            for (int k = 0; k < l[i].n; k++) listed |= 1u << l[i].cells[k];
            for (int k = 0; k < a->n; k++) {
                uint32_t b = 1u << a->cells[k];
                if (a->cells[k] >= 32 || !(listed & b) || (seen & b)) return 0;
                seen |= b;
            }
            return 1;
        }
    }
    return 0;
}

static void random_move(rng *r, grid_action *a)
{
    memset(a, 0, sizeof *a);
    a->kind = (uint8_t)rng_below(r, GRID_DO_COUNT + 1); /* sometimes not a move */
    a->suit = (uint8_t)rng_below(r, 6);
    a->card = rng_below(r, 10) ? (card_t)rng_below(r, 35) : CARD_NONE;
    a->n = (uint8_t)rng_below(r, 18);
    for (int k = 0; k < a->n && k < GRID_MAX_CELLS; k++) a->cells[k] = (uint8_t)rng_below(r, 18);
    if (a->n > GRID_MAX_CELLS) a->n = GRID_MAX_CELLS + 1; /* beyond the array: must be refused */
}

/* Builds a legal move from the list (a random bid for the bid entry). */
static void pick_legal(rng *r, const grid_action *l, grid_action *a)
{
    *a = *l;
    if (l->kind != GRID_DO_BID) return;
    uint8_t pool[GRID_MAX_CELLS];
    memcpy(pool, l->cells, l->n);
    for (int i = l->n - 1; i > 0; i--) {
        int j = (int)rng_below(r, (uint32_t)i + 1);
        uint8_t t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    memset(a->cells, 0, sizeof a->cells);
    a->choose = 0;
    a->n = l->choose;
    memcpy(a->cells, pool, l->choose);
}

static void play_hand(grid_state *st, rng *r, sim_stats *stats)
{
    const grid_rules *rules = &st->match.rules;
    grid_match before = st->match;
    int k = grid_hand_size(rules);
    grid_set in_play = st->dealt[0] | st->dealt[1] | st->dealt[2];
    cr_assert_eq(__builtin_popcountll(in_play), 3 * k);
    grid_set played = 0;
    int guard = 0;
    while (st->phase != GRID_PHASE_DONE) {
        cr_assert_lt(guard++, 200, "hand does not end");
        int s = st->to_act;
        cr_assert_lt(s, GRID_SEATS);
        for (int v = 0; v < GRID_SEATS; v++) check_view_blind(st, v, r);
        for (int v = 0; v < GRID_SEATS; v++)
            if (v != s) cr_assert_eq(grid_legal(st, v, (grid_action[GRID_MAX_LEGAL]){0}), 0);
        grid_action l[GRID_MAX_LEGAL];
        int n = grid_legal(st, s, l);
        cr_assert_gt(n, 0);
        if (st->phase == GRID_PHASE_PLAY) {
            grid_set listed = 0;
            for (int i = 0; i < n; i++) listed |= GRID_BIT(l[i].card);
            cr_assert_eq(listed, playable_model(st, s), "playable cards differ from G-PLAY");
        }
        /* every listed move is accepted */
        for (int i = 0; i < n; i++) {
            grid_state copy = *st;
            grid_action a;
            pick_legal(r, &l[i], &a);
            grid_error e;
            cr_assert_eq(grid_apply(&copy, s, &a, NULL, &e), GRID_OK, "legal move refused: %s", e.msg);
        }
        /* random moves that are not listed are refused and change nothing */
        for (int t = 0; t < 4; t++) {
            grid_action a;
            random_move(r, &a);
            int seat = (int)rng_below(r, 5) - 1;
            if (seat >= 0 && seat < GRID_SEATS && a.kind < GRID_DO_COUNT && is_listed(st, seat, &a))
                continue;
            grid_state copy = *st;
            grid_error e;
            grid_events ev = {0};
            grid_code c = grid_apply(&copy, seat, &a, &ev, &e);
            cr_assert_neq(c, GRID_OK, "an unlisted move was accepted (kind %d, seat %d)", a.kind, seat);
            cr_assert_eq(e.code, c);
            cr_assert_gt(strlen(e.msg), 0);
            cr_assert_eq(ev.n, 0);
            cr_assert(memcmp(&copy, st, sizeof copy) == 0, "a refused move changed the state");
            stats->refused++;
        }
        grid_action a;
        pick_legal(r, &l[rng_below(r, (uint32_t)n)], &a);
        grid_events ev = {0};
        grid_error e;
        cr_assert_eq(grid_apply(st, s, &a, &ev, &e), GRID_OK, "%s", e.msg);
        if (a.kind == GRID_DO_PLAY) {
            cr_assert(!(played & GRID_BIT(a.card)), "card played twice");
            played |= GRID_BIT(a.card);
        }
        check_events(st, &ev);
        stats->moves++;
    }
    for (int v = 0; v < GRID_SEATS; v++) check_view_blind(st, v, r);
    /* the hand's invariants */
    cr_assert_eq(played, in_play, "every dealt card is played once");
    cr_assert_eq(st->tricks_taken[0] + st->tricks_taken[1] + st->tricks_taken[2], k);
    grid_set won = st->won[0] | st->won[1] | st->won[2];
    cr_assert_eq(won, in_play);
    cr_assert_eq(st->left_out == CARD_NONE, rules->deck == 33);
    if (st->left_out != CARD_NONE) cr_assert(!(in_play & GRID_BIT(st->left_out)));
    const grid_match *m = &st->match;
    int ended = 0;
    for (int s = 0; s < GRID_SEATS; s++) {
        const int16_t *p = st->result.part[s];
        cr_assert_eq(p[0] + p[1] + p[2], p[3]);
        cr_assert_eq(m->scores[s], before.scores[s] + p[3]);
        cr_assert_eq(m->marked[s], before.marked[s] | st->result.newly[s]);
        cr_assert_eq(st->result.newly[s] & ~st->bids[s], 0);
        cr_assert_eq(st->result.newly[s] & before.marked[s], 0);
        cr_assert_eq(__builtin_popcount(st->bids[s]), rules->bids);
        cr_assert_eq(p[1] % 5, 0);
        cr_assert_eq(p[2] % 5, 0);
        cr_assert(st->result.values[s] >> GRID_C_PLAY & 1 || rules->small);
        if (m->scores[s] >= rules->cap || grid_match_complete(m, s)) ended = 1;
        if (m->scores[s] >= rules->cap) stats->over_cap++;
        if (grid_match_complete(m, s)) stats->over_grid++;
    }
    cr_assert_eq(m->over, ended, "G-END");
    if (!ended) cr_assert_eq(m->dealer, (st->dealer + 1) % 3);
    else cr_assert_neq(m->winners, 0);
    stats->hands++;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

Test(grid, random_matches, .timeout = 600)
{
    long matches = env_long("CARDROOM_GRID_MATCHES", 150);
    uint64_t seed = (uint64_t)env_long("CARDROOM_GRID_SEED", 2024);
    sim_stats stats = {0};
    /* every option: deck, small, bids, unmarked_point, and caps low enough to be reached */
    static const struct {
        int deck, small, bids, unmarked, cap;
    } sets[] = {
        {33, 0, 4, 1, 150}, {25, 0, 4, 1, 150}, {33, 1, 3, 1, 100}, {25, 1, 3, 1, 100}, {33, 0, 1, 0, 80},
        {33, 0, 16, 2, 400}, {25, 1, 9, 1, 200}, {33, 0, 7, 3, 1000}, {25, 0, 2, 0, 120}, {33, 1, 1, 5, 60},
    };
    for (size_t o = 0; o < sizeof sets / sizeof sets[0]; o++) {
        grid_rules r;
        grid_rules_default(&r);
        r.deck = (uint8_t)sets[o].deck;
        r.small = (uint8_t)sets[o].small;
        r.bids = (uint8_t)sets[o].bids;
        r.unmarked_point = (uint8_t)sets[o].unmarked;
        r.cap = (uint16_t)sets[o].cap;
        for (long mi = 0; mi < matches; mi++) {
            rng g = {seed ^ (o * 1000003u + (uint64_t)mi) * 0x9E3779B97F4A7C15ull};
            uint8_t grids[GRID_SEATS][GRID_MAX_CELLS], sd[DEAL_SEED_BYTES];
            for (int s = 0; s < GRID_SEATS; s++) {
                for (int b = 0; b < DEAL_SEED_BYTES; b++) sd[b] = (uint8_t)rng_u64(&g);
                grid_random_grid(sd, &r, grids[s]);
            }
            grid_state st;
            grid_match m;
            grid_error e;
            cr_assert_eq(grid_match_init(&m, &r, (const uint8_t(*)[GRID_MAX_CELLS])grids, (int)rng_below(&g, 3), &e),
                         0, "%s", e.msg);
            st.match = m;
            int hands = 0;
            while (!st.match.over) {
                cr_assert_lt(hands++, 400, "match does not end");
                card_t deck[GRID_DECK_MAX];
                for (int b = 0; b < DEAL_SEED_BYTES; b++) sd[b] = (uint8_t)rng_u64(&g);
                grid_shuffle(sd, &r, deck);
                grid_events ev = {0};
                cr_assert_eq(grid_start(&st, &st.match, deck, &ev), GRID_OK);
                cr_assert_eq(ev.n, GRID_SEATS);
                check_events(&st, &ev);
                play_hand(&st, &g, &stats);
            }
            cr_assert_eq(grid_start(&st, &st.match, (card_t[GRID_DECK_MAX]){0}, NULL), GRID_E_MATCH);
            /* the winners are the first places, and no one outside first place ties with them */
            uint8_t place[3];
            cr_assert_eq(grid_match_rank(&st.match, place), st.match.winners);
            stats.matches++;
        }
    }
    fprintf(stderr, "grid: %ld matches, %ld hands, %ld moves, %ld refusals checked; ended by cap %ld, by grid %ld\n",
            stats.matches, stats.hands, stats.moves, stats.refused, stats.over_cap, stats.over_grid);
    cr_assert_gt(stats.hands, 1000);
    cr_assert_gt(stats.over_grid, 0);
}

/* ---- `cardroom replay` for ContractGrid (bot/replay.c) ---- */

#define GRID16                                                                                                    \
    "[\"zero\",\"one\",\"two\",\"first\",\"second\",\"third\",\"different\",\"soloist\",\"partner\",\"alltrump\"," \
    "\"notrump\",\"spades\",\"hearts\",\"diamonds\",\"clubs\",\"play\"]"
#define CG_HANDS                                                                                                  \
    "\"hands\":[[\"7H\",\"8H\",\"9H\",\"7C\",\"8C\",\"9C\",\"TC\",\"JC\",\"QC\",\"KC\",\"AC\"],"                  \
    "[\"QS\",\"KS\",\"AS\",\"TH\",\"JH\",\"QH\",\"KH\",\"AH\",\"QD\",\"KD\",\"AD\"],"                             \
    "[\"7S\",\"8S\",\"9S\",\"TS\",\"JS\",\"7D\",\"8D\",\"9D\",\"TD\",\"JD\",\"JK\"]]"
#define CG_GAME "{\"game\":\"contractgrid\"," CG_HANDS ",\"grids\":[" GRID16 "," GRID16 "," GRID16 "]"

typedef struct {
    const char *name, *input, *want;
} cg_bad;

static const cg_bad cg_bad_cases[] = {
    {"unknown field", CG_GAME ",\"tokens\":[1,2]}", "unknown field \"tokens\""},
    {"unknown option", CG_GAME ",\"rules\":{\"caps\":\"off\"}}", "unknown option"},
    {"bids too many for small", CG_GAME ",\"rules\":{\"small\":true,\"bids\":10}}", "bids"},
    {"deck 24", CG_GAME ",\"rules\":{\"deck\":24}}", "33 or 25"},
    {"dealer 3", CG_GAME ",\"dealer\":3}", "dealer must be a seat 0..2"},
    {"hands not 3", "{\"game\":\"contractgrid\",\"hands\":[[],[]]}", "hands must be"},
    {"scores", CG_GAME ",\"scores\":[1,2]}", "scores must be"},
    {"history", CG_GAME ",\"history\":[[1,2,3,4]]}", "history[0]"},
    {"history above score", CG_GAME ",\"scores\":[5,0,0],\"history\":[[6,0,0]]}", "adds up"},
    {"marked twice", CG_GAME ",\"marked\":[[\"a1\",\"A1\"],[],[]]}", "twice"},
    {"action kind", CG_GAME ",\"actions\":[{\"seat\":1,\"do\":\"pass\"}]}", "unknown action \"pass\""},
    {"action seat", CG_GAME ",\"actions\":[{\"seat\":3,\"do\":\"exclude\",\"suit\":\"S\"}]}", "seat must be 0..2"},
    {"action suit", CG_GAME ",\"actions\":[{\"seat\":1,\"do\":\"exclude\",\"suit\":\"X\"}]}", "suit must be"},
    {"action field", CG_GAME ",\"actions\":[{\"seat\":1,\"do\":\"exclude\",\"card\":\"AS\"}]}", "takes no \"card\""},
    {"action cells", CG_GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"cells\":\"a1\"}]}", "cells must be"},
    {"action cell text", CG_GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"cells\":[\"zz\"]}]}", "not a cell"},
    {"action card", CG_GAME ",\"actions\":[{\"seat\":1,\"do\":\"play\",\"card\":\"JX\"}]}", "not a card"},
    {"grid number", "{\"game\":\"contractgrid\"," CG_HANDS ",\"grids\":[[1]," GRID16 "," GRID16 "]}", "grids[0]"},
};

Test(grid, replay_malformed)
{
    for (size_t i = 0; i < sizeof cg_bad_cases / sizeof cg_bad_cases[0]; i++) {
        const cg_bad *c = &cg_bad_cases[i];
        char err[256] = "", *out = NULL;
        int rc = replay_run(c->input, strlen(c->input), &out, err, sizeof err);
        cr_assert_eq(rc, 2, "%s: exit %d", c->name, rc);
        cr_assert_null(out, "%s", c->name);
        cr_assert(strstr(err, c->want), "%s: '%s' does not name '%s'", c->name, err, c->want);
        cr_assert_null(strchr(err, '\n'), "%s", c->name);
    }
}

Test(grid, replay_output_keys_in_order)
{
    const char *in = CG_GAME ",\"actions\":[{\"seat\":1,\"do\":\"exclude\",\"suit\":\"S\"}]}";
    char err[256], *out = NULL;
    cr_assert_eq(replay_run(in, strlen(in), &out, err, sizeof err), 0, "%s", err);
    json_error_t je;
    json_t *doc = json_loads(out, JSON_DECODE_ANY, &je);
    cr_assert(json_is_object(doc));
    static const char *const keys[] = {"results", "phase",   "rules",   "dealer",      "to_act",    "legal",
                                       "trump",   "left_out", "tricks", "players",     "scores",    "history",
                                       "next_dealer", "game_over", "winner", "places"};
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v) {
        cr_assert_lt(k, sizeof keys / sizeof keys[0]);
        cr_assert_str_eq(key, keys[k], "key %zu", k);
        k++;
    }
    cr_assert_eq(k, sizeof keys / sizeof keys[0]);
    static const char *const pkeys[] = {"seat",   "excluded", "bid",   "hand",   "tricks",
                                        "values", "points",   "score", "marked", "newly_marked"};
    k = 0;
    json_object_foreach(json_array_get(json_object_get(doc, "players"), 0), key, v) {
        cr_assert_str_eq(key, pkeys[k], "player key %zu", k);
        k++;
    }
    cr_assert_eq(k, sizeof pkeys / sizeof pkeys[0]);
    cr_assert_str_eq(json_string_value(json_object_get(doc, "phase")), "exclude");
    cr_assert_eq(json_integer_value(json_object_get(doc, "to_act")), 2);
    cr_assert_eq(json_array_size(json_object_get(doc, "legal")), 3);
    json_decref(doc);
    free(out);
}

/* Random byte and token changes to a valid input: replay answers 0 with JSON or 2 with one line. */
Test(grid, replay_mutations)
{
    const char *base = CG_GAME ",\"rules\":{\"deck\":33,\"small\":false,\"cap\":500},\"marked\":[[\"a1\"],[],[]],"
                               "\"scores\":[10,20,30],\"history\":[[5,10,15]],\"actions\":["
                               "{\"seat\":1,\"do\":\"exclude\",\"suit\":\"S\"},{\"seat\":2,\"do\":\"exclude\",\"suit\":\"D\"},"
                               "{\"seat\":0,\"do\":\"exclude\",\"suit\":\"C\"},"
                               "{\"seat\":1,\"do\":\"bid\",\"cells\":[\"a1\",\"b1\",\"c1\",\"d1\"]},"
                               "{\"seat\":2,\"do\":\"bid\",\"cells\":[\"a1\",\"b1\",\"c1\",\"d1\"]},"
                               "{\"seat\":0,\"do\":\"bid\",\"cells\":[\"a1\",\"b1\",\"c1\",\"d1\"]},"
                               "{\"seat\":1,\"do\":\"play\",\"card\":\"AH\"}]}";
    size_t n = strlen(base);
    char *buf = malloc(n + 1);
    rng r = {99};
    static const char alphabet[] = "0123456789{}[]\",:aAzZ -jkJK\xF0\x9F\x83\x8F";
    int ok = 0, bad = 0;
    for (int t = 0; t < 3000; t++) {
        memcpy(buf, base, n + 1);
        int edits = 1 + (int)rng_below(&r, 3);
        for (int e = 0; e < edits; e++) buf[rng_below(&r, (uint32_t)n)] = alphabet[rng_below(&r, sizeof alphabet - 1)];
        char err[256] = "", *out = NULL;
        int rc = replay_run(buf, n, &out, err, sizeof err);
        if (rc == 0) {
            json_error_t je;
            json_t *doc = json_loads(out, 0, &je);
            cr_assert_not_null(doc, "output is not JSON: %s", je.text);
            json_decref(doc);
            free(out);
            ok++;
        } else {
            cr_assert_eq(rc, 2);
            cr_assert_gt(strlen(err), 0);
            cr_assert_null(strchr(err, '\n'));
            bad++;
        }
    }
    free(buf);
    cr_assert_gt(ok, 0);
    cr_assert_gt(bad, 0);
}
