/* aigrid.h — the computer player for ContractGrid.
 *
 * Shaped like ai304.h: aigrid_input_of() gathers what one seat may know (its view, its legal
 * moves, and which suits each seat has shown out of: all public) on the event loop's thread;
 * aigrid_choose() is a pure function of that input and a seed, safe on a worker thread, and
 * always answers one of input.legal[] (for a bid: `choose` distinct cells of the listed ones).
 *
 * How it plays (details in aigrid.c):
 *  - exclude: names the free suit it is weakest in, so that trump tends to be a suit it holds;
 *  - bid: samples deals of the unseen cards, plays each out with a simple policy aiming at a
 *    number of tricks (0 … hand size), and estimates for each aim how likely each contract is
 *    made; it takes the aim and the cells that give the most: 5 per bid made, more for a cell
 *    that completes or extends a line of marked cells (a completed line scores every hand);
 *  - play: tries each legal card against sampled deals, plays the rest of the hand out with the
 *    same policy aiming at the trick counts its bids ask for, and keeps the card that makes the
 *    most of its bids (and values).
 * aigrid_arrange() chooses a grid for a computer player: the contracts made most often on the
 * cells that lie on the most lines. */
#ifndef CARDROOM_AIGRID_H
#define CARDROOM_AIGRID_H

#include <stdint.h>

#include "grid.h"

typedef struct {
    grid_view view;                      /* grid_view_of(st, seat) */
    int nlegal;
    grid_action legal[GRID_MAX_LEGAL];   /* grid_legal(st, seat) */
    uint8_t void_in[GRID_SEATS];         /* bit suit: the seat did not follow that suit (the
                                            joker counting as a trump), so holds none of it */
} aigrid_input;

/* Gathers what seat may know now. */
void aigrid_input_of(const grid_state *st, int seat, aigrid_input *in);

/* Chooses seat's move. Returns 0 and sets *out, or -1 when it is not this seat's turn. */
int aigrid_choose(const aigrid_input *in, uint64_t seed, grid_action *out);

/* A grid for a computer player (contract on each cell, 0xFF past the grid), from a seed. */
void aigrid_arrange(const grid_rules *r, uint64_t seed, uint8_t grid[GRID_MAX_CELLS]);

#endif
