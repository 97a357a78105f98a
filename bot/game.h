/* game.h — the one interface every game at a table supplies (table_game), and what the table
 * core lends a game while one of its operations runs (game_host).
 *
 * The table core (table.c) keeps seats, people and computer players, the journal, timers,
 * messages and standings, and knows no game. A game is a table_game: a constant struct of the
 * operations below, and a state of its own that lives in the table's game_state (at most
 * TABLE_GAME_STATE_MAX bytes; the core never looks inside). The games a table can host are
 * listed in games.c, so adding a game adds its files and one line there (and the greeting
 * core.c gives for !new before a table exists); a variant of a game (304 for six players is
 * 304 with players = 6) is the same game with other options, giving its own seat count, seat
 * names and deals through the same operations.
 *
 * Operations (gs is the game's state at the table; h the host, valid for the call only):
 *   name, title, match    "304"/"grid" for !new and the store; "304"/"ContractGrid" in
 *                         sentences; what !start begins, "match"/"game"
 *   seat_entries          the game's journal words followed by a seat ("move", "grid")
 *   init                  a new table's state, its options from the configuration
 *   seats, seat_name      how many seats the table has now (from its options), and their names
 *   card_pack             the pack a player's cards are read from (cmd_parse_pack): CARD_COUNT,
 *                         or CARD_IDS with the sixes of 304 for six (NULL: CARD_COUNT)
 *   option                a `set NAME VALUE`: the value as the journal writes it, or a refusal
 *   rules_text            the options in force and where the rules are in full, for !rules
 *   entry                 applies one journal entry of the game's own (set, start, deal, move,
 *                         grid …), saying what happened through h; 1 if the word is not its own;
 *                         TABLE_WAITS, having changed nothing, when a long search it needs (the
 *                         Caps judge) went off the loop through h->search; after the match's end
 *                         (h->t->finished) it still gets its own words and takes only those that
 *                         speak of the finished match (304's review), refusing the rest
 *   seat_changed          someone else sits at a seat before the start (join, bot or leave)
 *   rebuild_skips         which entries a rebuild may skip because a later one restates their
 *                         effect (NULL: none)
 *   start                 the checks of !start beyond full seats, and the entries due first
 *                         (NULL: none)
 *   command               a player's game command turned into one journal entry, or a refusal
 *                         said through h (moves, and what belongs to another game)
 *   follow_up             entries nobody asks for, applied through h (deals, Caps calls)
 *   in_hand, to_act       whether a hand is being played; whose move it is (-1: nobody's)
 *   cards                 a seat's cards in words, for a player who takes over a seat
 *   view                  `hand`, `table` and `last` as one seat (or the room, -1) may see them
 *   prompt, turn_text     the turn: to the room unless the line of the move before said it, and
 *                         privately the hand (h->notify) and what must be sent privately; the
 *                         turn in words
 *   match_text            the match so far, for !standings
 *   ask, think, answer    a computer player: what the seat may know, the thinking (on a worker
 *                         thread, pure), and its answer as a journal entry (a legal move even
 *                         when the thinking failed)
 * End-of-hand and match results reach the standings through h->add_score and h->finish from
 * within entry.
 *
 * A game reads its table through h->t — id, seq, started, over, finished and seat[] — and
 * changes the table only through the host's calls: words for the room or a player, replies and
 * private refusals, seat labels, seeds, entries applied live, standings changes, and the start
 * and end of the match. It never calls the table core otherwise. */
#ifndef CARDROOM_GAME_H
#define CARDROOM_GAME_H

#include <stddef.h>
#include <stdint.h>

#include "caps.h"
#include "command.h"
#include "config.h"
#include "store.h"
#include "table.h"

typedef struct game_host game_host;

struct game_host {
    const table *t;            /* the table, to read: id, seq, started, over, finished, seat[] */
    const char *prefix;        /* the command prefix, for hints ("!") */
    const char *private_how;   /* how to reach the bot privately, for hints */
    caps_solver *judge;        /* the Caps judge's search (one per thread), for searches made here */
    int talk;                  /* words are collected (live); 0 on a rebuild, where a game may
                                  skip composing them */
    /* A line for the room (mention: a user to notify, or NULL). */
    void (*say)(const game_host *h, const char *mention, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
    /* One line for the room of n pieces joined by " — " (NULL and "" skipped; nothing when all
     * are), mentioning the person who plays seat to_act (-1, or a computer: nobody). */
    void (*say_line)(const game_host *h, int to_act, const char *const *pieces, int n);
    /* A private message to user, headed by the room and table. */
    void (*tell)(const game_host *h, const char *user, const char *text);
    /* An answer to user where he asked: privately, or in the room addressed to him. */
    void (*reply)(const game_host *h, const char *user, int is_private, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
    /* A refusal whose reason is private; the room only hears that it was refused. */
    void (*refuse)(const game_host *h, const char *user, int is_private, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
    /* "alice (South)", "computer East", "computer seat 2", "alice (East, away)". */
    const char *(*seat_label)(const game_host *h, int seat, char *buf, size_t len);
    /* Whether user wants a private notice with his hand on each turn (!notify). */
    int (*notify)(const game_host *h, const char *user);
    /* A long search off the loop (table_env.search): 1 with the answer in q, or 0 when the
     * entry must return TABLE_WAITS. A rebuild always answers at once. */
    int (*search)(const game_host *h, table_question *q, table_search fn);
    /* The seed of hand hand_no of this table. Returns 0, or -1 (no deal is possible). */
    int (*seed)(const game_host *h, int hand_no, uint8_t seed[STORE_SEED_BYTES]);
    /* Applies an entry made live (a refusal is reported to the room as an internal error).
     * Returns 1 if applied. */
    int (*exec)(const game_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    /* A standings change for the room. */
    void (*add_score)(const game_host *h, const store_standing *d);
    /* The match begins: from now on seats are kept (a leaving player leaves a computer). */
    void (*begin)(const game_host *h);
    /* The match is over: the table closes as finished. */
    void (*finish)(const game_host *h);
};

typedef enum { GAME_VIEW_HAND, GAME_VIEW_TABLE, GAME_VIEW_LAST } game_view;

struct table_game {
    const char *name;
    const char *title;
    const char *match;
    const char *const *seat_entries; /* NULL-terminated */

    void (*init)(void *gs, const cfg *config);
    int (*seats)(const void *gs);
    const char *(*seat_name)(const void *gs, int seat); /* "?" for no seat */
    int (*card_pack)(const void *gs);
    /* Returns 0 with the value in canon, or -1 with a sentence for the player in msg. */
    int (*option)(const void *gs, const char *name, const char *value, char *canon, size_t canon_len, char *msg,
                  size_t msg_len);
    /* prefix: the command prefix; rules_url: where the rules are published (the game adds its
     * file name, "304.md"). */
    size_t (*rules_text)(const void *gs, const char *prefix, const char *rules_url, char *buf, size_t len);

    /* word and seat (-1 unless a seat entry) read, rest is what follows; rebuilding: applied
     * by table_replay(), where skipped entries leave it to this one to state where the match
     * stands. Returns 0, -1 with a message in err, 1 (not an entry of this game, or not now:
     * the core reports it), or TABLE_WAITS (h->search sent its search off the loop). */
    int (*entry)(void *gs, const game_host *h, const char *word, int seat, const char *rest, int rebuilding, char *err,
                 size_t errlen);
    void (*seat_changed)(void *gs, int seat);
    void (*rebuild_skips)(char *const *entries, int n, uint8_t *skip);

    /* Returns -1 after telling user why not, else the number of entries applied. */
    int (*start)(const void *gs, const game_host *h, const char *user, int is_private);
    /* seat: the user's (-1: not seated). Returns 1 with the entry to apply, or 0 after a
     * refusal or an answer. */
    int (*command)(const void *gs, const game_host *h, const char *user, int seat, int is_private, const cmd *c,
                   char *entry, size_t len);
    /* Returns the number of entries applied. */
    int (*follow_up)(const void *gs, const game_host *h);

    int (*in_hand)(const void *gs);
    int (*to_act)(const void *gs);
    size_t (*cards)(const void *gs, int seat, char *buf, size_t len);
    /* GAME_VIEW_HAND: seat's own cards, 0 when it holds none to show; TABLE, LAST: seat is
     * the viewer, -1 for the room. */
    size_t (*view)(const void *gs, const game_host *h, game_view what, int seat, char *buf, size_t len);
    void (*prompt)(const void *gs, const game_host *h, int seat);
    size_t (*turn_text)(const void *gs, const game_host *h, char *buf, size_t len);
    size_t (*match_text)(const void *gs, const game_host *h, char *buf, size_t len);

    void (*ask)(const void *gs, int seat, table_question *q);
    table_think think;
    /* ok: think() chose a move. Returns 1 with the entry, or 0 when the seat has no move. */
    int (*answer)(const void *gs, int seat, const table_question *q, int ok, char *entry, size_t len);
};

/* The game of that name ("304", "grid"), or NULL (games.c). */
const table_game *game_find(const char *name);

#endif
