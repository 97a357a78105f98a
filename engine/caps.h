/* caps.h — Caps judged by the game itself (R-CAPS-CALL, R-CAPS-EXTERNAL).
 *
 * caps_knowledge_of() collects what one seat knows at a moment of the hand: its information
 * set. caps_check() decides from that knowledge alone whether Caps is certain for the seat:
 * whether one fixed order of its remaining cards wins every remaining trick for its team for
 * every placement of the cards it cannot see and every legal play of the other three (its
 * partner included — no intelligence is assumed of anybody).
 *
 * The search is exact. It keeps the set of positions the seat could be in at each of its turns
 * (unseen cards are placed lazily, with a feasibility test on the counts and suits each hand and
 * each unseen face-down card may hold), tries the seat's cards in a good order, merges positions
 * that differ only by interchangeable cards, and stops at a node budget. A search that reaches
 * its budget answers CAPS_UNKNOWN, and an unknown answer never costs anybody a penalty.
 * Four or six players alike (R-SIX-PLAY): "the other three" are then the other five, the
 * partner the two teammates, and the pack has the sixes. */
#ifndef CARDROOM_CAPS_H
#define CARDROOM_CAPS_H

#include "g304.h"

#define CAPS_MAX_HIDDEN 30 /* face-down cards of finished tricks: 8 x 3, or 6 x 5 with six players */

/* What one seat knows (its information set). */
typedef struct {
    uint8_t seat, maker;
    uint8_t seats;          /* 4 or 6 (R-SIX-SEATS) */
    uint8_t trumps;         /* suits that may be trump as far as it knows (one bit once known) */
    uint8_t trump_open, ind_down;
    uint8_t ind_unknown;    /* the maker holds the face-down indicator and this seat has not seen it */
    uint8_t bid250;         /* R-250 applies (the bid is 250 or more) */
    uint8_t pcc;
    card_t indicator;       /* the indicator if this seat has seen it, else CARD_NONE */
    cardset_t own;          /* its cards, a face-down indicator included */
    cardset_t unseen;       /* cards it cannot place: in other hands, the unseen indicator, face-down cards
                               it has not seen */
    cardset_t held[G304_MAX_SEATS]; /* cards it knows another seat holds (a shown indicator) */
    uint8_t count[G304_MAX_SEATS];  /* cards of each seat's hand it cannot name (not counting an unseen indicator) */
    uint8_t voids[G304_MAX_SEATS];  /* suits each seat's hand has shown it lacks (failing to follow) */
    uint8_t exhaust_suits;  /* suits X such that, if X is trump, R-EXHAUST binds the maker now if he
                               still holds a trump in hand (exact when this seat is the maker) */
    uint8_t exhaust_sure;   /* of those, the ones known to bind (he held the shown indicator then) */
    uint8_t maker_void_if;  /* suits X such that, if X is trump, the maker's hand lacks X (he led another suit
                               while R-EXHAUST bound him) */
    uint8_t nhidden;        /* face-down cards of finished tricks it has not seen */
    uint8_t hidden_not[CAPS_MAX_HIDDEN];       /* suits each one cannot be: the suit led to its trick and
                                                  every suit its player had shown out of by then */
    uint8_t hidden_not_trump[CAPS_MAX_HIDDEN]; /* it is known not to be a trump */
    /* the trick in progress */
    uint8_t trick_no, n, to_act;
    card_t card[G304_MAX_SEATS];  /* CARD_HIDDEN where this seat has not seen the card */
    uint8_t seat_of[G304_MAX_SEATS];
    uint8_t facedown;         /* bit i: card i lies face down */
    uint8_t indicator_at;     /* bit i: card i is the maker's indicator (everybody sees that) */
} caps_knowledge;

void caps_knowledge_of(const g304_state *st, int seat, caps_knowledge *k);

typedef enum { CAPS_NOT_CERTAIN = 0, CAPS_CERTAIN = 1, CAPS_UNKNOWN = 2 } caps_verdict;

typedef struct caps_solver caps_solver;

/* A solver with its work space (a few MiB, allocated once); node_budget bounds one check
 * (0 = the default). Returns NULL when out of memory. */
caps_solver *caps_solver_new(long node_budget);
void caps_solver_free(caps_solver *w);

/* Is Caps certain for seat now? On CAPS_CERTAIN, order[0..*n-1] is an order that proves it.
 * If fixed is non-NULL (nfixed cards), only that order is tried: is it a certain Caps order? */
caps_verdict caps_check(caps_solver *w, const g304_state *st, int seat, const card_t *fixed, int nfixed,
                        card_t order[G304_TRICKS], int *n);

/* Turns the quick one-world refutation tried before the full search on or off (on by
 * default; tests compare both ways). */
void caps_solver_quick(caps_solver *w, int on);

/* Search nodes used by the last check. */
long caps_solver_nodes(const caps_solver *w);

#endif
