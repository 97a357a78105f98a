/* render.h — 304 in words: game events, hands, the table and results as chat text.
 *
 * Everything the room and the players read about a hand of 304 is written here, in plain
 * UTF-8 text with suit symbols (J♠ 10♥); adapters add colour or markup. Seats are named by
 * the caller (names[seat], e.g. "alice (South)", "alice (seat 1)": one for each seat of the
 * game, g304_seats()). A viewer of -1 is the room; 0..5 is that seat's
 * private copy. Four or six players: the counts in the words come from the state's rules. Nothing here decides what a viewer may see: the caller only passes
 * events visible to the viewer (g304_event_visible), and the state functions mask what the
 * viewer may not know. Each function writes a NUL-terminated text into buf (truncated to len)
 * and returns its length; 0 means there is nothing to say. */
#ifndef CARDROOM_RENDER_H
#define CARDROOM_RENDER_H

#include <stddef.h>

#include "g304.h"
#include "review.h"

#define RENDER_MAX 2048 /* enough for any one message */

/* One event, as seen by viewer; st is the state after the move that produced it. A public
 * event is a piece of a line ("bob (East) bids 160", "trick 1 to carol (North), +14"), a
 * private one a sentence ("You play 7♦ face down."). */
size_t render_event(const g304_state *st, const g304_event *e, int viewer,
                    const char *const names[], char *buf, size_t len);

/* What the room hears of one move (or deal): its public events' pieces on one line joined by
 * " — " ("dave (West) plays Q♦ — trick 5 to alice (South), +52"); when the move ends the
 * hand, the Caps judge's verdict and a played hand's result on lines of their own, and the
 * cards each seat held on one last line. 0 when nothing is public. The caller adds whose
 * turn it is (render_turn) to the end when the hand goes on. */
size_t render_move(const g304_state *st, const g304_events *ev, const char *const names[], char *buf,
                   size_t len);

/* A seat's hand, by suit in rank order (J 9 A 10 K Q 8 7), trumps first once the seat knows
 * them, the indicator marked for the maker: "♥ J 9 A · ♠ 10 7 · … (indicator: 7♠, face down)". */
size_t render_hand(const g304_state *st, int seat, char *buf, size_t len);

/* Whose turn it is and what they may do, in the words a player types: "bob (East) to bid:
 * 170 or more, pass or partner", "alice (South) to play, ♠ led" — short, for the end of the
 * room's line about the move before. */
size_t render_turn(const g304_state *st, const char *const names[], char *buf, size_t len);

/* The table now for viewer: dealer, the teams with their players (six seats, where the seat
 * numbers do not tell them), bidding, maker, trump if known to the viewer, tricks won, the
 * trick in progress (hidden cards shown as 🂠), points if known, tokens. */
size_t render_table(const g304_state *st, int viewer, const char *const names[],
                    char *buf, size_t len);

/* The previous trick (R-LAST) for viewer, face-down cards that stayed down hidden. */
size_t render_last(const g304_state *st, int viewer, const char *const names[],
                   char *buf, size_t len);

/* The hand's result (once st->phase is DONE) on one line: made or failed and the points,
 * Caps and Wrong Caps, and the tokens after with their changes; "Match over: …" on a second
 * line when the match ends. A hand without a score (a redeal, no bid, spoilt trumps) gives
 * only a piece of a line: "no score". */
size_t render_result(const g304_state *st, const char *const names[], char *buf, size_t len);

/* `rules` in two lines: this table's options — the rules' (players=6 first at a six-player
 * table), then table_options (the table's own, "level=expert"; NULL: none) — (prefix: the command
 * prefix, for how to change them), and where the rules are in full (rules_url followed by
 * "304.md"). */
size_t render_rules(const g304_rules *r, const char *table_options, const char *prefix, const char *rules_url,
                    char *buf, size_t len);

/* A team's players: "alice (South) & carol (North)", "alice (seat 1), carol (seat 3) & erin
 * (seat 5)". Team 0 is seats 0, 2, 4 (South and North; the odd seats 1, 3, 5 as people count
 * them), team 1 the others. */
size_t render_team_names(const g304_rules *r, const char *const names[], int team, char *buf,
                         size_t len);

/* Who plays against whom: "alice (South) & carol (North) play against bob (East) & dave (West)";
 * without names (NULL) the seats: "South and North play against East and West", "odd seats 1,
 * 3, 5 play against even seats 2, 4, 6". */
size_t render_teams(const g304_rules *r, const char *const names[], char *buf, size_t len);

/* !hint in one line, for the player alone: the expert's move (NULL: it sees none) in words with
 * the command that makes it (prefix: the command prefix), and for a card the card points it
 * expects for the player's team (points < 0: no figure); may_open: the player may declare an
 * open game now (a card then means keeping the game closed). "hint: play J♠ — about 182 of the
 * 304 card points for your team". */
size_t render_hint(const g304_action *move, int points, int may_open, const char *prefix, char *buf, size_t len);

/* !review's head: the hand, what was measured, and who lost nothing (seats with no card among
 * the n costs; names: every seat's, seats of them). */
size_t render_review_head(int hand_no, const review_cost *costs, int n, const char *const names[], int seats,
                          char *buf, size_t len);

/* !review's line for one seat: its costly cards with the card that would have kept the points,
 * and the sum; 0 when it has none. */
size_t render_review_seat(int seat, const review_cost *costs, int n, const char *const names[], char *buf,
                          size_t len);

#endif
