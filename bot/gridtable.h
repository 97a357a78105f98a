/* gridtable.h — ContractGrid at a table: the game half of a grid table (bot/table.c keeps the
 * seats, the journal, the timers and the messages for both games).
 *
 * Journal entries of a grid table, besides the shared join/bot/leave/away/back/abort:
 *   set OPTION VALUE            an option (grid_rules_set names), before the start
 *   grid SEAT C1 … Cn           the seat's grid: contract names cell by cell from a1 (16, or 9 with
 *                               small); `grid random` and computer players' grids are written out
 *                               in full, so a rebuild needs no seed for them
 *   start                       the game begins (three seats taken, three grids)
 *   deal DEALER S0 S1 S2        the next hand, with the dealer and scores it starts from (they
 *                               follow from the hands before: a check against a damaged journal);
 *                               its deck comes from the hand's seed, as in 304
 *   move SEAT ACTION            exclude S | bid a1 b2 c3 d4 | play JK (gridtable_action_text)
 * The moves of every hand are replayed on a rebuild (they are cheap), so the match — marks,
 * scores, history and tie-break — comes back exactly as it was. */
#ifndef CARDROOM_GRIDTABLE_H
#define CARDROOM_GRIDTABLE_H

#include <stddef.h>

#include "table.h"

/* The canonical journal text of a move: "exclude H", "bid a1 b2 c3 d4", "play JK". */
size_t gridtable_action_text(const grid_rules *r, const grid_action *a, char *buf, size_t len);
/* Reads it back. Returns 0, or -1. */
int gridtable_action_parse(const grid_rules *r, const char *text, grid_action *a);

/* ---- called by table.c for a grid table ---- */

/* Applies a game entry (set, grid, start, deal, move; word and the seat already read, rest is
 * what follows). Returns 0 when applied, -1 with a message in err when it does not apply, 1
 * when the word is not a ContractGrid entry (table.c applies the shared ones). */
int gridtable_entry(table *t, const table_env *env, const char *word, int seat, const char *rest, table_out *out,
                    char *err, size_t errlen);
/* A player's command other than join, bot, leave, back and abort (table_command). */
int gridtable_command(table *t, const table_env *env, const char *user, int moderator, int is_private, const cmd *c,
                      table_out *out);
/* Deals the first and every next hand (table_auto). */
int gridtable_auto(table *t, const table_env *env, table_out *out);
/* Whose turn it is, to the room, and the hand to that player (table_prompt). */
void gridtable_prompt(table *t, const table_env *env, table_out *out);
/* The turn in words, for the reminder; 0 when nobody is to act. */
size_t gridtable_turn_text(const table *t, const table_env *env, char *buf, size_t len);
/* A seat's cards in words. */
size_t gridtable_hand_text(const table *t, int seat, char *buf, size_t len);
/* The game so far for `standings`: hand, scores, marks, and who risks the cap. */
size_t gridtable_match_text(const table *t, const table_env *env, char *buf, size_t len);
/* ContractGrid's rules and the table's options for `rules`. */
size_t gridtable_rules_text(const grid_rules *r, char *buf, size_t len);

/* ---- lent by table.c to gridtable.c ---- */

/* A line for the room (mention: a user to notify, or NULL). */
void table_say(table_out *o, const char *mention, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A private message to user, headed by the room and table. */
void table_say_private(table_out *o, const table_env *env, const table *t, const char *user, const char *text);
/* An answer to user where he asked: privately, or in the room addressed to him. */
void table_reply(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* A refusal whose reason is private; the room only hears that it was refused. */
void table_refuse_privately(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                            const char *text);
/* Applies an entry made live (a refusal is reported to the room as an internal error). Returns
 * 1 if applied. */
int table_exec_live(table *t, const table_env *env, table_out *out, const char *entry);
/* "alice (seat 1)", "computer (seat 2)". */
const char *table_seat_label(const table *t, const table_env *env, int s, char *buf, size_t len);
/* "seat 1". */
const char *table_seat_word(const table *t, int s);
/* A standings change for the room. */
void table_add_score(table_out *o, const store_standing *d);
/* Whether user may start the table or set its options. */
int table_may_manage(const table *t, const char *user, int moderator);
/* The checks `set` and `start` share: before the start, by someone who may manage the table.
 * Returns 1 to go on, or 0 after telling user why not (game: "game" or "match"; doing: "set
 * options", "start it"). */
int table_may_change(table *t, const table_env *env, const char *user, int moderator, int is_private,
                     const char *game, const char *doing, table_out *out);
/* The value of a `set` command as typed, lower-cased (option values are lower case). */
void table_option_value(const cmd *c, char *buf, size_t len);
/* Whether a computer plays seat s (a bot, an away player, or nobody). */
int table_computer_plays(const table *t, int s);
/* Whether seat s is taken (a person or a computer). */
int table_seated(const table *t, int s);

#endif
