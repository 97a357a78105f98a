/* review.c — the cost of each card of a finished hand against double-dummy play (review.h).
 *
 * The record keeps positions only where the engine did something the cards alone do not
 * show (the start of play, a Caps call); between them dd_play() moves the position on card by
 * card exactly as the engine does (tests/test_dd_cross.c checks that). A card is judged on the
 * position before it: each legal card is played and the rest solved, from the side of the
 * team of the player to act, and the card played is compared with the best. Cards a Caps call
 * played by itself are not judged: the caller chose them with the call. Nor are the caller's
 * cards on his later turns, which the game plays from his order: the record has them with the
 * card that led to them, and dd_play() has played them by then, as the game did. */
#include "review.h"

#include <string.h>

static int review_team(int seat) { return seat & 1; }

void review_clear(review_record *r)
{
    memset(r, 0, sizeof *r);
    r->call_from = r->call_to = REVIEW_NONE;
}

/* Card i of the hand in playing order, and its player, from the state's tricks. */
static void review_card_at(const g304_state *st, int i, card_t *card, uint8_t *seat)
{
    int t = 0;
    while (t < G304_TRICKS && i >= st->tricks[t].n) i -= st->tricks[t++].n;
    *card = t < G304_TRICKS ? st->tricks[t].card[i] : CARD_NONE;
    *seat = t < G304_TRICKS ? st->tricks[t].seat[i] : G304_NO_SEAT;
}

void review_note(review_record *r, const g304_state *before, const g304_state *after, int caps_call)
{
    int from = g304_cards_played(before), to = g304_cards_played(after);
    if (from == to && !caps_call) return;
    if (from == 0 && r->n == 0) r->solvable = dd_pos_of(before, &r->start, NULL, 0) == 0;
    if (from != r->n) { /* not noted from the first card: nothing to review */
        r->solvable = 0;
        return;
    }
    for (int i = from; i < to && r->n < REVIEW_CARDS; i++) {
        review_card_at(after, i, &r->card[r->n], &r->seat[r->n]);
        r->n++;
    }
    if (caps_call) {
        r->call_from = (uint8_t)from;
        r->call_to = r->n;
        r->caps_ok = dd_pos_of(after, &r->caps, NULL, 0) == 0;
    }
}

/* The points team wins in the end after card c is played from p, both teams then playing
 * perfectly; DD_UNKNOWN if the search stopped. */
static int review_after(dd_solver *w, const dd_pos *p, card_t c, int team)
{
    dd_pos y = *p;
    dd_play(&y, c);
    int v = y.trick_no < y.ntricks ? dd_value(w, &y) : 0;
    if (v == DD_UNKNOWN) return DD_UNKNOWN;
    return team == 0 ? y.points[0] + v : y.points[1] + dd_points_left(&y) - v;
}

int review_costs(dd_solver *w, const review_record *r, review_cost *out)
{
    if (!r->solvable) return -1;
    dd_solver_budget(w, 0);
    dd_pos p = r->start;
    int k = 0, call = r->call_from != REVIEW_NONE;
    for (int i = 0; i < r->n; i++) {
        if (call && i >= r->call_from && i < r->call_to) continue; /* played by the call */
        if (call && i == r->call_to) {
            if (!r->caps_ok) return -1;
            p = r->caps;
        }
        if (call && r->seat[i] == p.caps_seat && !(p.hand[r->seat[i]] & CARDSET_BIT(r->card[i])) &&
            !(p.ind_down && r->card[i] == p.indicator))
            continue; /* played already: dd_play() plays the caller's turns as the game does */
        card_t legal[G304_TRICKS];
        int nl = dd_legal(&p, legal), at = -1;
        for (int j = 0; j < nl; j++)
            if (legal[j] == r->card[i]) at = j;
        if (at < 0 || p.to_act != r->seat[i]) return -1;
        int team = review_team(p.to_act), best = at, played = 0, top = 0;
        for (int j = 0; j < nl && nl > 1; j++) {
            int v = review_after(w, &p, legal[j], team);
            if (v == DD_UNKNOWN) return -1;
            if (j == at) played = v;
            if (j == 0 || v > top) top = v, best = j;
        }
        if (nl > 1 && top > played)
            out[k++] = (review_cost){.seat = r->seat[i], .trick = p.trick_no, .played = r->card[i],
                                     .best = legal[best], .cost = (uint16_t)(top - played)};
        dd_play(&p, r->card[i]);
    }
    return k;
}
