/* dd.h — the double-dummy solver for 304: exact best play when every hand and the trump are known.
 *
 * A position (dd_pos) is the play phase of one hand with nothing hidden: every seat's cards, the
 * trump, the face-down indicator, the trick in progress, the card points and tricks won so far.
 * dd_pos_of() takes it from an engine state; a computer player fills one itself for each world
 * it imagines. Legality is the engine's own (g304_check_card: closed trump, face-down plays,
 * R-MAKER-VOID, R-LEAD1-TRUMP, R-IND-PLAY, R-EXHAUST), the trick goes to g304_trick_winner(), and
 * what happens between tricks (R-REVEAL, R-250, R-EXHAUST binding, Partner Close Caps skipping
 * the partner) follows g304.c step by step; tests/test_dd_cross.c checks the solver against a
 * brute-force search made of g304_apply() alone. Four or six players alike (R-SIX-…): nseats and
 * ntricks tell the game, teams are by parity as in g304.c, the pack of six players has the sixes,
 * and in Partner Close Caps both of the maker's teammates sit out (tricks of four cards).
 *
 * The values are card points: dd_value() is what team 0 wins of the points still in play when
 * both teams play perfectly (team 1 wins the rest). dd_reach() asks the cheaper yes/no question
 * "can this team secure at least that many?", dd_sweep() whether a team can win every remaining
 * trick (Caps with all cards known). The search is alpha-beta with null windows (for dd_value from
 * a heuristic line's value outwards), bounds from the sure trumps and a transposition table at trick
 * starts keyed by the ranks of the cards in play (a bound found for one position serves every
 * position with the same holders by rank, shifted by the points of the cards that differ), the last
 * two tricks played out whole, the table's best move and a playing heuristic that knows which cards
 * surely take a trick for move order, and exact merging of interchangeable cards (dd.c tells how).
 * The table is allocated once by dd_solver_new(); a search allocates nothing. Entries stay valid
 * between searches (their key holds everything that decides the rest of the hand but the points,
 * and each keeps the cards it was written for), so solving many related positions (every move of a
 * position, many sampled worlds) reuses work. Nothing here prints, keeps globals or reads a clock. */
#ifndef CARDROOM_DD_H
#define CARDROOM_DD_H

#include <stddef.h>
#include <stdint.h>

#include "g304.h"

typedef struct {
    uint8_t nseats;               /* seats at the table */
    uint8_t ntricks;              /* tricks in a hand */
    uint8_t maker, trump;         /* the trump maker and the trump suit */
    uint8_t pcc;                  /* Partner Close Caps: the maker's partner (both teammates with six
                                     players) sits out (R-PCC, R-SIX-PCC) */
    uint8_t bid250;               /* the final bid is 250 or more */
    uint8_t trump_open;           /* the trump is known to everybody */
    uint8_t ind_down;             /* the indicator lies face down (it is not in hand[maker]) */
    uint8_t exhaust;              /* R-EXHAUST binds the maker */
    card_t indicator;
    uint8_t trick_no;             /* index of the trick in progress; ntricks when the hand is over */
    uint8_t n;                    /* cards in the trick in progress */
    uint8_t facedown;             /* bit i: card i of the trick went face down */
    card_t card[G304_MAX_SEATS];  /* the trick in progress, in playing order */
    uint8_t seat[G304_MAX_SEATS];
    uint8_t to_act;
    cardset_t hand[G304_MAX_SEATS]; /* cards in hand, without a face-down indicator (nseats used) */
    uint16_t points[2];           /* card points won by each team so far */
    uint8_t tricks[2];            /* tricks won by each team so far */
    uint8_t caps_seat;            /* after a Caps call: the caller (G304_NO_SEAT if none) ... */
    uint8_t caps_n;               /* ... and his cards still to play, in the stated order */
    card_t caps_order[G304_TRICKS];
} dd_pos;

/* The position of a hand in play, four or six players. Returns 0, or -1 with a sentence in err (a
 * hand not in play). */
int dd_pos_of(const g304_state *st, dd_pos *p, char *err, size_t errlen);

/* The cards the seat to act may play now, by the engine's rules (after a Caps call, the caller's
 * next card of his order). Returns the count (0 when the hand is over). */
int dd_legal(const dd_pos *p, card_t out[G304_TRICKS]);

/* Plays a card dd_legal() listed, as the engine would. */
void dd_play(dd_pos *p, card_t card);

/* Card points not yet won: the cards in hand, a face-down indicator and the trick in progress. */
int dd_points_left(const dd_pos *p);

typedef struct dd_solver dd_solver;

/* A solver with a transposition table of 2^table_bits entries of 32 bytes (0 = the default, 2^17:
 * 4 MiB), at any number of seats. Returns NULL when out of memory. */
dd_solver *dd_solver_new(int table_bits);
void dd_solver_free(dd_solver *w);

/* Empties the table (in constant time), so that what follows depends on nothing searched before:
 * with a node budget, whether a search ends in time depends on what the table holds. */
void dd_solver_clear(dd_solver *w);

#define DD_UNKNOWN (-1) /* a search stopped at its node budget */

/* Limits each later search (dd_value, dd_reach, dd_sweep) to about that many nodes; 0 (the default)
 * means none. A search that reaches the limit answers DD_UNKNOWN and leaves nothing uncertain in the
 * table, so the answers given stay exact. */
void dd_solver_budget(dd_solver *w, long nodes);

/* Points team 0 wins of dd_points_left() under best play by both teams, or DD_UNKNOWN. */
int dd_value(dd_solver *w, const dd_pos *p);

/* Whether team can secure at least target more points (target <= 0: always): 1, 0 or DD_UNKNOWN. */
int dd_reach(dd_solver *w, const dd_pos *p, int team, int target);

/* Whether team can win every remaining trick, the one in progress included: 1, 0 or DD_UNKNOWN. */
int dd_sweep(dd_solver *w, const dd_pos *p, int team);

/* Search nodes visited since the solver was made. */
long dd_nodes(const dd_solver *w);

#endif
