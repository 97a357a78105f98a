/* render_grid.h — ContractGrid in words: grids, hands, game events, turns, the table, the
 * scores and the rules, as chat text (the ContractGrid half of render.h).
 *
 * Plain UTF-8 with suit symbols (J♠ 10♥, 🃏 for the joker); grids are monospace-friendly
 * tables of contract names with marked cells in [brackets]. Seats are named by the caller
 * (names[seat], e.g. "alice (seat 1)"). A viewer of -1 is the room; 0..2 is that seat's
 * private copy. As in render.h, nothing here decides what a viewer may see: the caller passes
 * only events visible to the viewer (grid_event_visible), and the state functions show the
 * viewer's own hand only to that viewer. Each function writes a NUL-terminated text into buf
 * (truncated to len, never inside a character) and returns its length; 0 = nothing to say. */
#ifndef CARDROOM_RENDER_GRID_H
#define CARDROOM_RENDER_GRID_H

#include <stddef.h>

#include "grid.h"

/* A grid as a table, with a title line (who NULL: "Your grid"):
 *   "Grid of alice (seat 1) — 2 of 16 cells marked, shown [like this]:"
 *   "     a           b           c           d"
 *   "1    zero        one         [two]       first"   … */
size_t render_grid_grid(const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], uint16_t marked, const char *who,
                        char *buf, size_t len);

/* Cells with their contracts: "a1 (zero), b2 (first)"; "none" for no cells. */
size_t render_grid_cells(const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], uint16_t cells, char *buf,
                         size_t len);

/* The marks of all three grids side by side (x marked, . not), one row per grid row. */
size_t render_grid_marks(const grid_match *m, const char *const names[GRID_SEATS], char *buf, size_t len);

/* A seat's cards by suit, strongest first, the joker first; the trump suit first once known:
 * "♣ 🃏 A 9 (trump) · ♠ K Q 7 · ♥ 10 · ♦ J 8". */
size_t render_grid_hand(const grid_state *st, int seat, char *buf, size_t len);

/* One event as seen by viewer; st is the state after the move that produced it. */
size_t render_grid_event(const grid_state *st, const grid_event *e, int viewer, const char *const names[GRID_SEATS],
                         char *buf, size_t len);

/* Whose turn it is and what they may do, with the commands (prefix "!"):
 * "alice (seat 1): exclude a suit you do not want as trump — !exclude ♠, ♥, ♦ or ♣". */
size_t render_grid_turn(const grid_state *st, const char *const names[GRID_SEATS], const char *prefix, char *buf,
                        size_t len);

/* The hand now: dealer, exclusions and trump, bids, tricks taken, the trick on the table,
 * scores; for a seat's own copy (viewer 0..2) its hand too. */
size_t render_grid_table(const grid_state *st, int viewer, const char *const names[GRID_SEATS], char *buf,
                         size_t len);

/* The previous trick: "Last trick (3) to bob (seat 2): 10♥ alice (seat 1), J♥ bob …". */
size_t render_grid_last(const grid_state *st, const char *const names[GRID_SEATS], char *buf, size_t len);

/* The scores of the match, e.g. "alice (seat 1) 118 (5/16 marked) · …". */
size_t render_grid_scores(const grid_match *m, const char *const names[GRID_SEATS], char *buf, size_t len);

/* Who risks the cap (G-WINNER): players at or within one hand's most points of the cap without
 * a complete grid, in a sentence; 0 when nobody does. */
size_t render_grid_cap_risk(const grid_match *m, const char *const names[GRID_SEATS], char *buf, size_t len);

/* The most one hand can score with these options (unmarked values, bids, lines). */
int render_grid_hand_max(const grid_rules *r);

/* A short summary of ContractGrid and this table's options for `rules`. */
size_t render_grid_rules(const grid_rules *r, char *buf, size_t len);

#endif
