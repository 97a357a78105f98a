/* table.h — the table core: one table in a room, whatever game it hosts — seats, people and
 * computer players, away and back, the journal and its rebuild, timers, messages and
 * standings. The game itself sits behind one interface (game.h) and keeps its state in the
 * table's game_state, which the core never reads.
 *
 * A table is a deterministic machine over its journal: every change (a seat taken, an option
 * set, a hand dealt, a move) is one text entry, and table_exec() applies one. Live, the core
 * asks table_command() to turn a player's command into entries (or a refusal), runs the
 * follow-ups table_auto() finds (deal the next hand, a computer player's Caps call), and
 * writes the entries and the messages to the store in one transaction. On restart the core
 * feeds the stored entries back through table_replay() without collecting messages, which
 * rebuilds the table exactly. Computer players think elsewhere (on a worker, from the
 * question table_computer_question() gives) and their answer comes back through
 * table_computer_move(). A long search a game needs to apply an entry (304's Caps judge) may
 * go elsewhere too (table_env.search): the entry then waits (TABLE_WAITS) and the caller does
 * its work again once the answer is in. */
#ifndef CARDROOM_TABLE_H
#define CARDROOM_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "caps.h"
#include "command.h"
#include "config.h"
#include "store.h"

#define TABLE_MAX_SEATS 6         /* the most seats any game has (304 for six) */
#define TABLE_NO_SEAT 0xFF
#define TABLE_USER_MAX 256
#define TABLE_ORIGIN_MAX 200      /* "user@host" (so "join SEAT USER ORIGIN" fits an entry) */
#define TABLE_ROOM_MAX 256
#define TABLE_TEXT_MAX 2048       /* the longest line a table says in one go */
#define TABLE_ENTRY_MAX 512       /* the longest journal entry */
#define TABLE_GAME_STATE_MAX 2048 /* room for the largest game's state (each game checks it fits) */
#define TABLE_QUESTION_MAX 2048   /* room for the largest computer player's question */

typedef struct table_game table_game; /* a game's operations (game.h) */

typedef struct {
    char user[TABLE_USER_MAX]; /* the player ("" for none) */
    /* Where the player sat down from when the network knows him by a name anybody may take
     * (IRC without an account: "user@host"); "" when his name is his own (an account, a
     * Matrix id, the console) or the seat was taken before origins were kept. The seat is his
     * only from that origin (table_seat_of). */
    char origin[TABLE_ORIGIN_MAX];
    uint8_t bot;               /* a computer player sits here */
    uint8_t away;              /* the player is away: a computer player takes his turns (`back`) */
} table_seat;

/* Whether a computer plays the seat: a computer player, an away player, or nobody. */
static inline int table_seat_computer(const table_seat *p) { return p->bot || p->away || !p->user[0]; }
/* Whether the seat is taken, by a person or a computer. */
static inline int table_seat_taken(const table_seat *p) { return p->user[0] || p->bot; }

typedef struct table table;
typedef union table_question table_question;

/* A long search a game hands off the event loop (the Caps judge): a pure function of the
 * question, which it turns into the answer in place, run on a worker thread with that thread's
 * solver. */
typedef void (*table_search)(table_question *q, caps_solver *solver);

/* table_exec() and a game's entry: the entry waits for a search (table_env.search). */
#define TABLE_WAITS 2

/* What a table needs from the process around it. */
typedef struct {
    caps_solver *judge;        /* the Caps judge's search (one per thread), for games that judge Caps */
    /* A search of table t's game, off the loop: returns 1 with the answer in q (run at once,
     * or answered before: asked again in the same order when the caller does its work again),
     * or 0 when it has gone to a worker. The entry that asked then waits (TABLE_WAITS) and the caller puts
     * the table back as it was before the call that led to it, holds what it was doing and
     * does it again once the answer is in. NULL: every search runs at once, on this thread
     * (a rebuild always searches at once). */
    int (*search)(void *ctx, const table *t, table_question *q, table_search fn);
    /* The seed of hand hand_no of table id: read from the store, or made and stored the first
     * time. Returns 0, or -1 (the table cannot deal). */
    int (*seed)(void *ctx, int64_t table, int hand_no, uint8_t seed[STORE_SEED_BYTES]);
    /* A user's name for people; writes into buf (may be NULL: the id is used). */
    const char *(*display_name)(void *ctx, const char *room, const char *user, char *buf, size_t len);
    /* A room's name for people, for the head of private messages; writes into buf (may be
     * NULL, or return NULL: the room id is used). */
    const char *(*room_name)(void *ctx, const char *room, char *buf, size_t len);
    /* Whether a user wants a private notice with his hand on each turn (`notify`; may be
     * NULL: everybody does). */
    int (*notify)(void *ctx, const char *user);
    void *ctx;
    const char *prefix;        /* the command prefix, for hints */
    const char *private_how;   /* "in your direct chat with me" */
} table_env;

/* One message a table wants sent. user "" = to the room; else privately to that user (the text
 * then starts by naming the room and table, once: the lines a batch has for one user are one
 * message). mention: a user to notify ("" none). */
typedef struct {
    char user[TABLE_USER_MAX];
    char mention[TABLE_USER_MAX];
    char *text;
} table_msg;

/* A player's standings change (store_standing deltas) for the room's leaderboard. */
typedef struct {
    store_standing delta;
} table_score;

/* What one call produced: journal entries (with their sequence numbers), messages, standings
 * changes, and whether the table closed. The caller frees it with table_out_clear(). */
typedef struct {
    int nentries, centries;
    char **entries;
    int64_t *seqs;
    int nmsgs, cmsgs;
    table_msg *msgs;
    int nscores, cscores;
    table_score *scores;
    const char *closed;        /* "finished", "aborted", "idle" once the table is over */
} table_out;

void table_out_clear(table_out *o);

/* A computer player's question: what one seat may know, in the game's own layout, and room
 * for the answer; or a search's question (table_search). Plain bytes, so it travels to a worker
 * thread by copy. */
union table_question {
    max_align_t align;
    unsigned char bytes[TABLE_QUESTION_MAX];
};

/* Thinks about a question (on a worker thread: a pure function of the question and seed).
 * Returns 1 when a move was chosen (kept in the question), 0 when there is none. */
typedef int (*table_think)(table_question *q, uint64_t seed);

struct table {
    int64_t id;
    char net[16];
    char room[TABLE_ROOM_MAX];
    char creator[TABLE_USER_MAX];
    uint8_t started;
    uint8_t over;               /* closed: no more commands */
    uint8_t finished;           /* closed because the match was played to its end (over too): the
                                   game still takes entries of its own that only speak of the
                                   match (304's review of its last hand); no seat changes, no moves */
    const table_game *game;     /* NULL until table_set_game() */
    union {                     /* the game's own state: only the game reads or writes it */
        max_align_t align;
        unsigned char bytes[TABLE_GAME_STATE_MAX];
    } game_state;
    table_seat seat[TABLE_MAX_SEATS]; /* the game says how many are in use */
    int64_t seq;                /* journal entries applied */
    /* runtime only (timers), never journaled */
    int64_t gone_at[TABLE_MAX_SEATS]; /* ms: when the seat's player, who left the room, is gone
                                         (0: he has not left); a restart forgets it */
    uint8_t absent[TABLE_MAX_SEATS];  /* the seat's player left the room and has not been seen
                                         since: nothing private goes to his name, which anybody
                                         may have taken meanwhile */
    uint8_t pause_told;         /* the room was told that the table pauses */
    int64_t turn_since;         /* ms: when the seat to act got the turn */
    int64_t touched;            /* ms: last accepted action */
    int64_t prompted;           /* journal position the last turn prompt was made for */
    int64_t turn_seq;           /* journal position when the turn clock started */
    uint8_t reminded;
    uint8_t turn_seat;
};

/* A new, empty table without a game (its creation is not a journal entry: the store's table
 * row is). */
void table_init(table *t, int64_t id, const char *net, const char *room, const char *creator);

/* Gives a fresh table (before any entry) its game, by the name !new and the store use ("304",
 * "grid"), with the configuration's defaults for its options. Returns 0, or -1 for an unknown
 * game. */
int table_set_game(table *t, const char *game, const cfg *config);

/* Applies one journal entry. out may be NULL (replay: nothing is said). With out, the entry is
 * also recorded in out->entries. Returns 0, -1 with a message in err if the entry does not
 * apply (a damaged journal), or TABLE_WAITS when it waits for a search (env->search), having
 * changed nothing. */
int table_exec(table *t, const table_env *env, const char *entry, table_out *out, char *err, size_t errlen);

/* Rebuilds a table from all its journal entries. Entries whose effect a later entry states
 * again are skipped where the game allows it (304 skips the moves of hands that are over), so
 * a rebuild costs the current hand, not the whole match. Returns 0, or the number (from 1) of
 * the entry that does not apply, with a message in err. */
int table_replay(table *t, const table_env *env, char *const *entries, int n, char *err, size_t errlen);

/* A player's table command (anything but new/help/rules/standings, which the core answers).
 * origin: where user connects from (see table_seat; NULL or "" when his name is his own);
 * moderator: the user may moderate the room; is_private: sent to the bot alone. Accepted
 * commands become entries; refusals become a reply to the user. Somebody who bears a seated
 * player's name from another origin is refused everything but the room's view of the table.
 * A table whose match was played to its end (finished) takes only its game's commands about
 * the match (the core hands it nothing but !review), and an away player stays away.
 * Returns 1 if something was accepted, 0 if refused or purely informative. */
int table_command(table *t, const table_env *env, const char *user, const char *origin, int moderator,
                  int is_private, const cmd *c, table_out *out);

/* Follow-ups nobody has to ask for: deal the next hand after one ends (or the first after
 * start), and Caps calls for seats a computer plays once the judge finds Caps certain for
 * them. Returns the number of entries added. */
int table_auto(table *t, const table_env *env, table_out *out);

/* After a batch: if a person is to act and has not been told since the table last moved, the
 * room hears whose turn it is (mentioning them) and, in play, the player gets the hand; a
 * table that has just paused (table_paused) says so, once. */
void table_prompt(table *t, const table_env *env, table_out *out);

/* Whether the table pauses: its match is under way, no person is playing (every seat is a
 * computer player or away) and somebody away is still seated, so there is someone to wait
 * for. Nothing moves by itself meanwhile; a player's !back (or his move), or a newcomer taking
 * a computer player's seat, ends it. Computer players alone (only !bot seats, or after every
 * person handed his seat over with !leave) have nobody to wait for and play on. */
int table_paused(const table *t);

/* A seated player left the room (PART, QUIT, a lost connection): after grace_ms (0: at once),
 * unless table_player_seen() comes first, he leaves the seat of an unstarted table and is away
 * from a running one (table_timers); meanwhile nothing private goes to his name. Returns his
 * seat, or -1 when user has none (from that origin: somebody else leaving changes nothing). */
int table_player_left(table *t, const table_env *env, const char *user, const char *origin, int64_t now,
                      int64_t grace_ms, table_out *out);
/* The player came back to the room or spoke: the wait table_player_left() began ends. */
void table_player_seen(table *t, const char *user, const char *origin);
/* The player was seen changing his name to renamed_to (an IRC nick change in a channel the bot
 * shares with him): his seat follows him (an entry). Returns 1 if a seat was renamed. */
int table_player_renamed(table *t, const table_env *env, const char *user, const char *origin,
                         const char *renamed_to, table_out *out);

/* The seat a computer must move for now (bot or away), or -1 (none, or the table pauses). */
int table_computer_to_act(const table *t);

/* The seat whose move it is in the hand being played (person or computer), or -1. */
int table_to_act(const table *t);

/* Fills q with what the computer seat may know now, and returns the function that thinks
 * about it (to run on a worker). */
table_think table_computer_question(const table *t, int seat, table_question *q);

/* A computer player's answer for seat to the question asked at journal position seq (ok: the
 * thinking chose a move): applied only if the table has not moved on since (seq == t->seq);
 * a move the rules refuse gives way to a legal one. Returns 1 if applied. */
int table_computer_move(table *t, const table_env *env, int seat, int64_t seq, const table_question *q, int ok,
                        table_out *out);

/* Timers (ms): remind the player to act after remind_ms, let a computer take the seat after
 * idle_ms, close the table when untouched for close_ms (0 = that timer is off), and end the
 * waits of players who left the room (table_player_left). Returns the earliest time a timer
 * of this table could fire next (INT64_MAX for none). */
int64_t table_timers(table *t, const table_env *env, int64_t now, int64_t remind_ms, int64_t idle_ms,
                     int64_t close_ms, table_out *out);

/* Starts the turn clock when the seat to act changed (ms). */
void table_note_turn(table *t, int64_t now);
/* When a timer of this table could fire next (INT64_MAX: none), for the same settings. */
int64_t table_next_timer(const table *t, int64_t remind_ms, int64_t idle_ms, int64_t close_ms);

/* The seat of user from origin (NULL or "": from anywhere), or -1. A seat taken from an origin
 * is not the seat of the same name from another one. */
int table_seat_of(const table *t, const char *user, const char *origin);

/* The pack a command to this table reads its cards from (cmd_parse_pack): CARD_COUNT, or
 * CARD_IDS at a table whose game has the sixes (304 for six). */
int table_card_pack(const table *t);

/* The running match in words for `standings` (304: tokens per team and hand number;
 * ContractGrid: the scores, marks and who risks the cap). */
size_t table_match_text(const table *t, const table_env *env, char *buf, size_t len);

/* The table's options and where its game's rules are in full (rules_url and the game's file
 * name), for `rules`. */
size_t table_rules_text(const table *t, const char *prefix, const char *rules_url, char *buf, size_t len);

#endif
