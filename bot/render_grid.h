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

/* The marks of all three grids side by side (x marked, . not), one row per grid row, under a
 * title naming each seat's player. */
size_t render_grid_marks(const grid_match *m, const char *const names[GRID_SEATS], char *buf, size_t len);

/* A seat's cards by suit, strongest first, the joker first; the trump suit first once known:
 * "♣ 🃏 A 9 (trump) · ♠ K Q 7 · ♥ 10 · ♦ J 8". */
size_t render_grid_hand(const grid_state *st, int seat, char *buf, size_t len);

/* One event as seen by viewer; st is the state after the move that produced it. A public
 * event is a piece of a line ("bob (seat 2) excludes ♠ spades"), a private one a sentence. */
size_t render_grid_event(const grid_state *st, const grid_event *e, int viewer, const char *const names[GRID_SEATS],
                         char *buf, size_t len);

/* What the room hears of one move: its public events' pieces on one line joined by " — "
 * ("carol (seat 3) plays 8♠ — trick 10 to bob (seat 2), tricks by seat: 5, 3, 2"); when the
 * move ends the hand, each seat's tricks, contracts and score on a line of its own and the
 * marks of the three grids. The end of the game (GRID_EV_GAME_OVER) is left to the caller, and
 * whose turn it is too (render_grid_turn). 0 when nothing is public. */
size_t render_grid_move(const grid_state *st, const grid_events *ev, const char *const names[GRID_SEATS], char *buf,
                        size_t len);

/* Whose turn it is and what they may do, with the commands (prefix "!"): "alice (seat 1) to
 * exclude a suit: !exclude ♠, ♥, ♦ or ♣", "bob (seat 2) to play, ♥ led". */
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

/* `rules` in two lines: this table's options (prefix: the command prefix, for how to change
 * them), and where the rules are in full (rules_url followed by "contractgrid.md"). */
size_t render_grid_rules(const grid_rules *r, const char *prefix, const char *rules_url, char *buf, size_t len);

#endif
