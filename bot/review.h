/* review.h — what each card of a finished 304 hand cost its team against best play with every
 * card known (double dummy), for !review.
 *
 * While a hand is played the table notes it (review_note): the position before its first card
 * and every card in order, with the position right after a Caps call (the call changes what
 * the caller may play, and plays some of his cards itself). That is all a review needs, and it
 * is small enough to keep in the table's state for the hand before the current one. After the
 * hand, review_costs() plays the cards again from the noted position: before each card every
 * legal card of that position is solved double-dummy (dd_value), and a card costs its team
 * the points the best of them would have kept over it. The search is exact and may take a
 * while (tens of solves of whole hands), so tables run it off the event loop. */
#ifndef CARDROOM_REVIEW_H
#define CARDROOM_REVIEW_H

#include <stdint.h>

#include "dd.h"
#include "g304.h"

#define REVIEW_CARDS CARD_IDS /* the most cards a hand plays (six players: 36) */
#define REVIEW_NONE 0xFF

/* One hand's play as the table noted it. */
typedef struct {
    uint8_t n;                   /* cards played */
    uint8_t solvable;            /* start holds the position before the first card (the solver
                                    plays this game) */
    uint8_t call_from, call_to;  /* a Caps call: cards [call_from, call_to) were played by the
                                    call itself, and caps is the position after them;
                                    REVIEW_NONE: no call */
    uint8_t caps_ok;             /* caps holds that position (the hand went on after the call) */
    card_t card[REVIEW_CARDS];
    uint8_t seat[REVIEW_CARDS];
    dd_pos start, caps;
} review_record;

/* A card that cost its team points: the seat, the trick (from 0), the card played, the card
 * that would have kept them, and how many card points it cost. */
typedef struct {
    uint8_t seat, trick;
    card_t played, best;
    uint16_t cost;
} review_cost;

/* An empty record, for a hand about to be dealt. */
void review_clear(review_record *r);

/* Notes one move of the hand: the state before it and after it; caps_call: the move was a Caps
 * call. Cards the move played (one, or several with a Caps call's own plays) are added. */
void review_note(review_record *r, const g304_state *before, const g304_state *after, int caps_call);

/* The costly cards of the noted hand, in the order played, into out (room for REVIEW_CARDS).
 * Returns their count, or -1 when the hand cannot be reviewed (the solver does not play it,
 * or the noted cards do not follow from the position). w: a solver (a few MiB). */
int review_costs(dd_solver *w, const review_record *r, review_cost *out);

#endif
