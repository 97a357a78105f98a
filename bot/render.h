/* render.h — 304 in words: game events, hands, the table and results as chat text.
 *
 * Everything the room and the players read about a hand of 304 is written here, in plain
 * UTF-8 text with suit symbols (J♠ 10♥); adapters add colour or markup. Seats are named by
 * the caller (names[seat], e.g. "alice (South)"). A viewer of -1 is the room; 0..3 is that
 * seat's private copy. Nothing here decides what a viewer may see: the caller only passes
 * events visible to the viewer (g304_event_visible), and the state functions mask what the
 * viewer may not know. Each function writes a NUL-terminated text into buf (truncated to len)
 * and returns its length; 0 means there is nothing to say. */
#ifndef CARDROOM_RENDER_H
#define CARDROOM_RENDER_H

#include <stddef.h>

#include "g304.h"

#define RENDER_MAX 2048 /* enough for any one message */

/* One event, as seen by viewer; st is the state after the move that produced it. */
size_t render_event(const g304_state *st, const g304_event *e, int viewer,
                    const char *const names[G304_SEATS], char *buf, size_t len);

/* A seat's hand, by suit in rank order (J 9 A 10 K Q 8 7), trumps first once the seat knows
 * them, the indicator marked for the maker: "♥ J 9 A · ♠ 10 7 · … (indicator: 7♠, face down)". */
size_t render_hand(const g304_state *st, int seat, char *buf, size_t len);

/* Whose turn it is and what they may do: "alice (South): bid 160 or more, pass, partner or
 * redeal" — short, for the room after each batch. */
size_t render_turn(const g304_state *st, const char *const names[G304_SEATS], char *buf, size_t len);

/* The table now for viewer: dealer, bidding, maker, trump if known to the viewer, tricks
 * won, the trick in progress (hidden cards shown as 🂠), points if known, tokens. */
size_t render_table(const g304_state *st, int viewer, const char *const names[G304_SEATS],
                    char *buf, size_t len);

/* The previous trick (R-LAST) for viewer, face-down cards that stayed down hidden. */
size_t render_last(const g304_state *st, int viewer, const char *const names[G304_SEATS],
                   char *buf, size_t len);

/* The hand's result (once st->phase is DONE): made or failed, points, Caps, Wrong Caps,
 * spoilt trumps, token changes and tokens after, match over and winner. */
size_t render_result(const g304_state *st, const char *const names[G304_SEATS], char *buf, size_t len);

/* A short summary of the rules and this table's options for `rules`. */
size_t render_rules(const g304_rules *r, char *buf, size_t len);

#endif
