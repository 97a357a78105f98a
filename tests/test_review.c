/* test_review.c — !review's computation (bot/review.h) and !hint's answer (bot/hint.h).
 *
 * Review: hands are dealt from fixed seeds, bid by the heuristic player up to the first lead,
 * then played card by card through the engine with the Caps judge, as a table plays them; the
 * table's record is noted move by move (review_note). The test works out each card's value on
 * its own, from the engine's state before the card (dd_pos_of on the real state, not the
 * record's replay), so a hand played perfectly must review with no cost, and a hand with one
 * card chosen to lose points must review with exactly that card, its cost and a card that
 * kept them. Hint: the answer is legal, the same for the same question, and two deals that
 * differ only in cards the seat cannot see give the same question and the same hint. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "ai304.h"
#include "aiworld.h"
#include "dd.h"
#include "deal.h"
#include "g304.h"
#include "hint.h"
#include "judge.h"
#include "review.h"

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A hand from seed s bid by the heuristic player up to the first card; 0 if it was thrown in. */
static int to_first_lead(uint64_t s, g304_state *st, aiworld_history *bidding)
{
    static const int16_t tokens[2] = {11, 11};
    g304_rules rules;
    uint8_t seed[DEAL_SEED_BYTES];
    card_t deck[CARD_COUNT];
    g304_rules_default(&rules);
    for (int i = 0; i < DEAL_SEED_BYTES; i += 8) {
        uint64_t x = mix(&s);
        memcpy(seed + i, &x, 8);
    }
    deal_shuffle(seed, deck, CARD_COUNT);
    g304_start(st, &rules, (int)(mix(&s) & 3), tokens, deck, NULL);
    if (bidding) bidding->n = 0;
    for (int guard = 0; guard < 64 && st->phase != G304_PHASE_DONE; guard++) {
        if (st->phase == G304_PHASE_PLAY) return 1;
        ai304_input in;
        g304_action a;
        g304_state before = *st;
        ai304_input_of(st, st->to_act, &in);
        if (ai304_choose(&in, mix(&s), &a) != 0 || g304_apply(st, st->to_act, &a, NULL, NULL) != G304_OK) return 0;
        if (bidding) aiworld_history_note(bidding, &before, before.to_act, &a);
    }
    return 0;
}

/* Each legal card's final points for the mover's team from the engine's state st: the best
 * card (into *best) and the value of card c (into *of_c). */
static void values(dd_solver *w, const g304_state *st, card_t c, card_t *best, int *top, int *of_c)
{
    dd_pos p;
    card_t legal[G304_TRICKS];
    cr_assert_eq(dd_pos_of(st, &p, NULL, 0), 0);
    int n = dd_legal(&p, legal), team = p.to_act & 1;
    *top = -1;
    *of_c = -1;
    for (int i = 0; i < n; i++) {
        dd_pos y = p;
        dd_play(&y, legal[i]);
        int v = y.trick_no < y.ntricks ? dd_value(w, &y) : 0;
        cr_assert_neq(v, DD_UNKNOWN);
        int mine = team == 0 ? y.points[0] + v : y.points[1] + dd_points_left(&y) - v;
        if (mine > *top) *top = mine, *best = legal[i];
        if (legal[i] == c) *of_c = mine;
    }
    cr_assert_geq(*of_c, 0, "card %s is not legal", card_str(c));
}

typedef struct {
    int seat, trick, cost;
    card_t played;
} costly;

/* Plays the hand out through the judge, each card the double-dummy best except the card at
 * position bad (-1: none), which is the legal card worth least to its team. Notes the record
 * as the table does. Returns 1 with the bad card's cost in *want (0 if all cards were worth
 * the same there). */
static int play_out(caps_solver *judge, dd_solver *w, g304_state *st, int bad, review_record *rec, costly *want)
{
    review_clear(rec);
    memset(want, 0, sizeof *want);
    judge_update(judge, st);
    for (int k = 0; st->phase == G304_PHASE_PLAY; k++) {
        g304_action legal[G304_MAX_LEGAL], a;
        int seat = st->to_act, n = g304_legal(st, seat, legal), pick = -1, worst = 1 << 20, top, v;
        card_t best = CARD_NONE;
        for (int i = 0; i < n; i++) {
            if (legal[i].kind != G304_DO_PLAY) continue;
            values(w, st, legal[i].card, &best, &top, &v);
            if (k == bad ? v < worst : v == top && pick < 0) pick = i, worst = v;
        }
        cr_assert_geq(pick, 0);
        a = legal[pick];
        if (k == bad) {
            values(w, st, a.card, &best, &top, &v);
            *want = (costly){.seat = seat, .trick = st->trick_no, .cost = top - v, .played = a.card};
        }
        g304_state before = *st;
        g304_events ev;
        ev.n = 0;
        cr_assert_eq(judge_apply(judge, st, seat, &a, &ev, NULL), G304_OK);
        review_note(rec, &before, st, 0);
    }
    return 1;
}

Test(review, a_hand_played_perfectly_costs_nothing)
{
    caps_solver *judge = caps_solver_new(0);
    dd_solver *w = dd_solver_new(0);
    review_record rec;
    review_cost out[REVIEW_CARDS];
    costly none;
    int hands = 0;
    for (uint64_t s = 1; hands < 3; s++) {
        g304_state st;
        if (!to_first_lead(s, &st, NULL)) continue;
        play_out(judge, w, &st, -1, &rec, &none);
        cr_assert(rec.solvable);
        cr_assert_eq(rec.n, 32, "every card is noted");
        cr_assert_eq(review_costs(w, &rec, out), 0, "seed %llu: a perfect hand has no costly card",
                     (unsigned long long)s);
        hands++;
    }
    dd_solver_free(w);
    caps_solver_free(judge);
}

Test(review, a_costly_card_is_found_with_its_cost_and_a_better_card)
{
    caps_solver *judge = caps_solver_new(0);
    dd_solver *w = dd_solver_new(0);
    review_record rec;
    review_cost out[REVIEW_CARDS];
    int found = 0;
    for (uint64_t s = 1; found < 3 && s < 60; s++) {
        g304_state st, start;
        costly want;
        if (!to_first_lead(s, &start, NULL)) continue;
        int bad = (int)(s * 7 % 24); /* somewhere in the first six tricks */
        st = start;
        play_out(judge, w, &st, bad, &rec, &want);
        if (want.cost == 0) continue; /* every card was worth the same there */
        int n = review_costs(w, &rec, out);
        cr_assert_eq(n, 1, "seed %llu: one costly card, not %d", (unsigned long long)s, n);
        cr_assert_eq(out[0].seat, want.seat);
        cr_assert_eq(out[0].trick, want.trick);
        cr_assert_eq(out[0].played, want.played);
        cr_assert_eq(out[0].cost, want.cost);
        cr_assert_neq(out[0].best, want.played);
        /* the better card, played there instead, keeps the points: it is worth the best */
        g304_state again = start;
        judge_update(judge, &again);
        for (int k = 0; k < bad; k++) { /* the same perfect cards up to the costly one */
            card_t best;
            int top, v;
            g304_action legal[G304_MAX_LEGAL];
            int nl = g304_legal(&again, again.to_act, legal), pick = -1;
            for (int i = 0; i < nl && pick < 0; i++) {
                values(w, &again, legal[i].card, &best, &top, &v);
                if (v == top) pick = i;
            }
            cr_assert_eq(judge_apply(judge, &again, again.to_act, &legal[pick], NULL, NULL), G304_OK);
        }
        card_t best;
        int top, v;
        values(w, &again, out[0].best, &best, &top, &v);
        cr_assert_eq(v, top, "the card the review names keeps every point");
        found++;
    }
    cr_assert_eq(found, 3, "too few hands with a costly card");
    dd_solver_free(w);
    caps_solver_free(judge);
}

/* Plays the hand out with every card the double-dummy best, but the first seat for which Caps
 * is certain while it still holds three cards or more calls it (the engine then plays its called
 * cards on its turns, as a table does); the call is noted as the table notes it. Returns whether
 * somebody called. */
static int play_out_calling(caps_solver *judge, dd_solver *w, g304_state *st, review_record *rec)
{
    review_clear(rec);
    judge_update(judge, st);
    int called = 0;
    while (st->phase == G304_PHASE_PLAY) {
        g304_state before = *st;
        for (int s = 0; !called && s < 4 && G304_TRICKS - st->trick_no >= 3; s++) {
            card_t order[G304_TRICKS];
            int n;
            if (caps_check(judge, st, s, NULL, 0, order, &n) != CAPS_CERTAIN || n < 3) continue;
            g304_action a = {.kind = G304_DO_CAPS, .card = CARD_NONE, .n = (uint8_t)n};
            memcpy(a.order, order, (size_t)n);
            cr_assert_eq(judge_apply(judge, st, s, &a, NULL, NULL), G304_OK);
            review_note(rec, &before, st, 1);
            called = 1;
        }
        if (st->phase != G304_PHASE_PLAY) break;
        if (g304_cards_played(st) != g304_cards_played(&before)) continue;
        g304_action legal[G304_MAX_LEGAL];
        int seat = st->to_act, n = g304_legal(st, seat, legal), pick = -1, top, v;
        card_t best;
        for (int i = 0; i < n && pick < 0; i++) {
            if (legal[i].kind != G304_DO_PLAY) continue;
            values(w, st, legal[i].card, &best, &top, &v);
            if (v == top) pick = i;
        }
        cr_assert_geq(pick, 0);
        before = *st;
        cr_assert_eq(judge_apply(judge, st, seat, &legal[pick], NULL, NULL), G304_OK);
        review_note(rec, &before, st, 0);
    }
    return called;
}

/* A Caps call with three cards or more: the engine plays the caller's later cards itself when
 * his turn comes (they reach the record with the card before them), and the review's replay
 * does the same; a hand so played, every other card the best, reviews with no costly card. */
Test(review, a_hand_with_a_caps_call_is_reviewed_with_the_cards_the_call_played, .timeout = 300)
{
    caps_solver *judge = caps_solver_new(0);
    dd_solver *w = dd_solver_new(0);
    review_record rec;
    review_cost out[REVIEW_CARDS];
    int found = 0;
    for (uint64_t s = 1; found < 3 && s < 400; s++) {
        g304_state st;
        if (!to_first_lead(s, &st, NULL) || !play_out_calling(judge, w, &st, &rec)) continue;
        cr_assert(rec.solvable);
        cr_assert_neq(rec.call_from, REVIEW_NONE);
        cr_assert_eq(rec.n, 32, "seed %llu: every card is noted", (unsigned long long)s);
        cr_assert_eq(review_costs(w, &rec, out), 0, "seed %llu: the hand with a Caps call is not reviewed as played",
                     (unsigned long long)s);
        found++;
    }
    cr_assert_eq(found, 3, "too few hands with a Caps call of three cards or more");
    dd_solver_free(w);
    caps_solver_free(judge);
}

/* A six-player hand from a fixed deal up to its first card: the first who may bids, the others
 * pass, the maker's first card is his indicator. */
static void six_to_first_lead(g304_state *st)
{
    g304_rules r;
    g304_error e;
    g304_rules_default(&r);
    cr_assert_eq(g304_rules_set_players(&r, 6, &e), 0);
    card_t deck[CARD_IDS];
    uint8_t seed[DEAL_SEED_BYTES] = {3};
    g304_shuffle(seed, &r, deck);
    static const int16_t tokens[2] = {11, 11};
    g304_start(st, &r, 0, tokens, deck, NULL);
    for (int guard = 0; guard < 64 && st->phase != G304_PHASE_PLAY && st->phase != G304_PHASE_DONE; guard++) {
        g304_action legal[G304_MAX_LEGAL];
        int n = g304_legal(st, st->to_act, legal);
        cr_assert_gt(n, 0);
        g304_action a = legal[0];
        for (int i = 0; i < n; i++)
            if (legal[i].kind == G304_DO_BID && st->bid == 0) a = legal[i]; /* someone bids, so the hand is played */
            else if (legal[i].kind == G304_DO_PASS && st->bid != 0) a = legal[i];
        cr_assert_eq(g304_apply(st, st->to_act, &a, NULL, NULL), G304_OK);
    }
    cr_assert_eq(st->phase, G304_PHASE_PLAY);
}

Test(review, a_six_player_hand_is_noted_and_reviewed, .timeout = 300)
{
    g304_state st;
    six_to_first_lead(&st);
    review_record rec;
    review_cost out[REVIEW_CARDS];
    review_clear(&rec);
    uint64_t rng = 6;
    while (st.phase == G304_PHASE_PLAY) {
        ai304_input in;
        g304_action a;
        g304_state before = st;
        ai304_input_of(&st, st.to_act, &in);
        cr_assert_eq(ai304_choose(&in, mix(&rng), &a), 0);
        cr_assert_eq(g304_apply(&st, st.to_act, &a, NULL, NULL), G304_OK);
        review_note(&rec, &before, &st, a.kind == G304_DO_CAPS);
    }
    cr_assert(rec.solvable, "the solver plays six-player 304");
    cr_assert_eq(rec.n, g304_cards_played(&st), "every card is noted");
    dd_solver *w = dd_solver_new(0);
    int n = review_costs(w, &rec, out);
    cr_assert_geq(n, 0, "the hand is reviewed");
    for (int i = 0; i < n; i++) {
        cr_assert_lt(out[i].seat, 6);
        cr_assert_neq(out[i].played, out[i].best);
        cr_assert_gt(out[i].cost, 0);
    }
    dd_solver_free(w);
}

/* ---- hint ---- */

/* Swaps two cards between two seats' hands (both unplayed, both in the same batch). */
static void swap_cards(g304_state *st, int a, card_t ca, int b, card_t cb)
{
    cardset_t ba = CARDSET_BIT(ca), bb = CARDSET_BIT(cb);
    st->hand[a] = (st->hand[a] & ~ba) | bb;
    st->hand[b] = (st->hand[b] & ~bb) | ba;
    st->dealt[a] = (st->dealt[a] & ~ba) | bb;
    st->dealt[b] = (st->dealt[b] & ~bb) | ba;
    if (st->first4[a] & ba) st->first4[a] = (st->first4[a] & ~ba) | bb;
    if (st->first4[b] & bb) st->first4[b] = (st->first4[b] & ~bb) | ba;
}

/* The lowest card of a seat's second batch that is not a trump (a swap of two of them changes
 * nothing any rule reads from the bidding). */
static card_t plain_second(const g304_state *st, int seat)
{
    for (int c = 0; c < CARD_COUNT; c++) {
        cardset_t b = CARDSET_BIT((card_t)c);
        if ((st->hand[seat] & b) && !(st->first4[seat] & b) && CARD_SUIT((card_t)c) != st->trump) return (card_t)c;
    }
    return CARD_NONE;
}

Test(hint, the_expert_move_from_what_the_seat_knows, .timeout = 300)
{
    int checked = 0;
    for (uint64_t s = 1; checked < 2 && s < 40; s++) {
        g304_state st, other;
        aiworld_history bidding;
        if (!to_first_lead(s, &st, &bidding) || st.ind_down == 0) continue;
        int me = st.to_act, x = (me + 1) & 3, y = (me + 3) & 3; /* the two opponents */
        if (x == st.maker || y == st.maker) continue;         /* keep the indicator where it is */
        card_t cx = plain_second(&st, x), cy = plain_second(&st, y);
        if (cx == CARD_NONE || cy == CARD_NONE || CARD_SUIT(cx) != CARD_SUIT(cy)) continue;
        other = st;
        swap_cards(&other, x, cx, y, cy);
        hint_question a, b, a2;
        hint_ask(&st, &bidding, me, 42, &a);
        hint_ask(&other, &bidding, me, 42, &b);
        cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "seed %llu: the question names a card the seat cannot see",
                     (unsigned long long)s);
        a2 = a;
        cr_assert_eq(hint_think(&a), 0);
        cr_assert_eq(hint_think(&b), 0);
        cr_assert_eq(hint_think(&a2), 0);
        cr_assert(a.chosen);
        cr_assert_eq(memcmp(&a.move, &b.move, sizeof a.move), 0, "the hidden cards changed the hint");
        cr_assert_eq(a.points, b.points);
        cr_assert_eq(memcmp(&a.move, &a2.move, sizeof a.move), 0, "the same question, another hint");
        cr_assert_eq(a.points, a2.points);
        g304_state copy = st;
        cr_assert_eq(g304_apply(&copy, me, &a.move, NULL, NULL), G304_OK, "the hint is not a legal move");
        if (a.move.kind == G304_DO_PLAY) {
            cr_assert_geq(a.points, 0, "a card comes with its figure");
            cr_assert_leq(a.points, 304);
        } else {
            cr_assert_eq(a.points, HINT_NO_FIGURE);
        }
        checked++;
    }
    cr_assert_eq(checked, 2, "too few positions to compare");
}

Test(hint, a_bid_has_no_figure)
{
    g304_rules r;
    uint8_t seed[DEAL_SEED_BYTES] = {9};
    card_t deck[CARD_COUNT];
    static const int16_t tokens[2] = {11, 11};
    g304_rules_default(&r);
    deal_shuffle(seed, deck, CARD_COUNT);
    g304_state st;
    g304_start(&st, &r, 0, tokens, deck, NULL);
    hint_question q;
    hint_ask(&st, NULL, st.to_act, 7, &q);
    cr_assert_eq(hint_think(&q), 0);
    cr_assert(q.chosen);
    cr_assert(q.move.kind == G304_DO_BID || q.move.kind == G304_DO_PASS || q.move.kind == G304_DO_PARTNER ||
              q.move.kind == G304_DO_REDEAL);
    cr_assert_eq(q.points, HINT_NO_FIGURE);
    g304_state copy = st;
    cr_assert_eq(g304_apply(&copy, st.to_act, &q.move, NULL, NULL), G304_OK);
}

Test(hint, six_players_get_a_legal_card_with_its_figure, .timeout = 300)
{
    g304_state st;
    six_to_first_lead(&st);
    hint_question q;
    hint_ask(&st, NULL, st.to_act, 11, &q);
    cr_assert_eq(hint_think(&q), 0);
    cr_assert(q.chosen);
    g304_state copy = st;
    cr_assert_eq(g304_apply(&copy, st.to_act, &q.move, NULL, NULL), G304_OK, "the hint is not a legal move");
    if (q.move.kind == G304_DO_PLAY) {
        cr_assert_geq(q.points, 0, "a card comes with its figure");
        cr_assert_leq(q.points, 304);
    }
}
