/* gamegrid.h — ContractGrid at a table: the game behind the table interface (game.h).
 *
 * Journal entries of a ContractGrid table, besides the core's seat entries (table.c):
 *   set OPTION VALUE            an option (grid_rules_set names), before the start
 *   grid SEAT C1 … Cn           the seat's grid: contract names cell by cell from a1 (16, or 9 with
 *                               small); `grid random` and computer players' grids are written out
 *                               in full, so a rebuild needs no seed for them
 *   start                       the game begins (three seats taken, three grids)
 *   deal DEALER S0 S1 S2        the next hand, with the dealer and scores it starts from (they
 *                               follow from the hands before: a check against a damaged journal);
 *                               its deck comes from the hand's seed, as in 304
 *   move SEAT ACTION            exclude S | bid a1 b2 c3 d4 | play JK
 * The moves of every hand are replayed on a rebuild (they are cheap), so the match — marks,
 * scores, history and tie-break — comes back exactly as it was. The state below lives in the
 * table's game_state; tests read it through gamegrid_of(). */
#ifndef CARDROOM_GAMEGRID_H
#define CARDROOM_GAMEGRID_H

#include <stdint.h>

#include "game.h"
#include "grid.h"

typedef struct {
    grid_rules rules;                          /* the options; fixed once the game starts */
    uint8_t grid[GRID_SEATS][GRID_MAX_CELLS];  /* each seat's grid: the contract on each cell */
    uint8_t has_grid;                          /* bit s: seat s has arranged its grid */
    grid_state st;                             /* the hand (phase DONE between hands), with the
                                                  match: grids, marks, scores, dealer */
    int hand_no;                               /* hands dealt so far */
    uint8_t seed[STORE_SEED_BYTES];            /* the current hand's seed */
    int64_t turn_said;                         /* the journal position whose turn the room heard
                                                  at the end of a move's line (live only) */
} gamegrid_state;

extern const table_game gamegrid;

/* The ContractGrid state of a ContractGrid table. */
static inline const gamegrid_state *gamegrid_of(const table *t) { return (const gamegrid_state *)t->game_state.bytes; }

#endif
