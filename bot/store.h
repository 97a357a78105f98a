/* store.h — the bot's durable state in SQLite: tables, hand seeds, the journal of accepted
 * actions, the outbox of messages to send, standings, each adapter's position, what waits at a
 * table for the Caps judge (the inbox) and the users the bot ignores.
 *
 * One file (WAL, synchronous=FULL, foreign keys on) with a schema version and migrations.
 * Every write the bot makes for one batch of incoming events goes between store_begin() (or
 * store_begin_lazy()) and store_commit(), so journal entries, outbox messages and the adapter's
 * new position land together or not at all. Functions return 0 on success and -1 on failure
 * with a message (store_error()). Nothing here prints. Checkpoints of the WAL, and the syncs
 * that make lazy commits durable, run on threads of the store's own (see store.c), never
 * inside store_commit(). */
#ifndef CARDROOM_STORE_H
#define CARDROOM_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_SCHEMA_VERSION 5
#define STORE_SEED_BYTES 32

typedef struct store store;

/* Opens (creating and migrating as needed) the database at path; ":memory:" works for tests.
 * A database from a newer schema version is refused with a clear message. */
int store_open(store **out, const char *path, char *err, size_t errlen);
/* The same for a bot: first claims the file for this process with an advisory lock on
 * PATH.lock (which holds the owner's process id), so two bots never share one database.
 * Returns 0, 1 when another process holds it (err names that process), or -1. The claim ends
 * with store_close() or the process. */
int store_open_exclusive(store **out, const char *path, char *err, size_t errlen);
void store_close(store *s);
const char *store_error(const store *s);
/* Waits until the store's checkpointer has made at least passes checkpoints since the open, or
 * at once when it has not started (no commit has yet left 1,000 pages in the WAL). Returns the
 * checkpoints made so far. For tests and benchmarks. */
long store_checkpoint_wait(store *s, long passes);

/* What kind of failure the last error was: the words a person reads about it, and whether
 * waiting may mend it (every fault but STORE_FAULT_NONE comes from the file or the disk). */
typedef enum {
    STORE_FAULT_NONE = 0, /* the store refused the call itself (a wrong call, a broken rule) */
    STORE_FAULT_FULL,     /* the disk or the file's quota is full */
    STORE_FAULT_READONLY, /* the file cannot be written (permissions, a read-only disk) */
    STORE_FAULT_BUSY,     /* another process holds the database's write lock */
    STORE_FAULT_IO,       /* the disk failed to read or write */
    STORE_FAULT_CORRUPT,  /* the file is damaged */
    STORE_FAULT_OTHER,    /* any other failure of SQLite (out of memory, ...) */
} store_fault;
store_fault store_fault_of(const store *s);
/* "the disk is full", "the database file is read-only", ... */
const char *store_fault_text(store_fault f);

/* Writes and commits one small row (kv "store"/"probe"): whether the file takes writes again
 * after a fault. Opens its own transaction; none may be open. */
int store_probe(store *s, int64_t now);
/* The schema version the open database is at. */
int store_schema_version(store *s);

int store_begin(store *s);    /* BEGIN IMMEDIATE; its commit is on the disk when it returns */
int store_commit(store *s);
int store_rollback(store *s);

/* ---- Durability: commits that do not wait for the disk ----
 * A transaction begun with store_begin_lazy() commits without waiting for the disk, or even for
 * the file: on a database file it is recorded, and the store's writer (a thread of its own)
 * writes it behind the caller, in commit order; then a sync of another thread of the store's
 * puts it on the disk. Until it is written a crash of the process may undo it, and until it is
 * synced an OS crash or a power loss (see store.c, "Writes"). Commits are numbered in the order
 * made through this store (1, 2, ...); a commit of store_begin() is durable when it returns, and
 * so is every commit before it. Calls inside such a transaction may not fail at once where the
 * file refuses them (a broken rule, a full disk): the writer finds out, store_durable() reports
 * it and store_probe() tries again. On a database in memory it is an ordinary transaction. */
int store_begin_lazy(store *s);
/* The number of the last commit made (0: none since the open). */
int64_t store_commits(store *s);
/* Sets *through to the number of the last durable commit (every earlier one is durable too)
 * and empties the wake-up descriptor. Returns -1 (an error of the kind a failed commit has)
 * when a sync failed since the last call: the commits after *through are then not known to
 * be on the disk, and none is synced again before a commit of store_begin() succeeds. */
int store_durable(store *s, int64_t *through);
/* Makes every commit so far durable, waiting for the disk (at a start, never on the loop). */
int store_sync(store *s);
/* Readable when durability moved on or a sync failed (for poll; store_durable() empties it). */
int store_wake_fd(const store *s);
/* Syncs the store's thread made so far (tests and benchmarks). */
long store_syncs(store *s);
/* Times the caller waited for the store's writer to write what it held (a read, a transaction
 * that waits for the disk, a call that must be done at once: see store.c, "Writes"), and in
 * *most_queued (if not NULL) the most transactions that waited for the writer at once. For tests
 * and benchmarks. */
long store_writer_waits(store *s, int *most_queued);
/* Waits until the writer has written every transaction committed so far: 0, or -1 if it stopped
 * at one that failed (tests and benchmarks; the bot's loop never waits so). */
int store_writer_wait(store *s);
/* The priority of the store's threads (writer, syncer, checkpointer), running or still to start:
 * 0 normal, else that real-time priority (SCHED_FIFO; normal where the system refuses it). The
 * core sets it below a loop of real-time priority (threads.h). */
void store_set_priority(store *s, int realtime);

/* ---- Keyed values: an adapter's own durable state (namespaces like "olm.session") ----
 * Values are text; the caller encodes. Iteration is in key order; fn must not call the store
 * and returns non-zero to stop. */
int store_kv_get(store *s, const char *ns, const char *key, char **value); /* 0 (malloc'd), 1 none, -1 */
int store_kv_put(store *s, const char *ns, const char *key, const char *value);
int store_kv_del(store *s, const char *ns, const char *key);
int store_kv_each(store *s, const char *ns, int (*fn)(void *ctx, const char *key, const char *value), void *ctx);

/* ---- Adapter positions (e.g. Matrix next_batch, console line number) ---- */
/* Copies the position into buf; returns 1 if there is none yet, 0 if found, -1 on error. */
int store_position_get(store *s, const char *adapter, char *buf, size_t len);
int store_position_set(store *s, const char *adapter, const char *position);
/* Calls fn for every position whose name starts with prefix, in name order (an adapter keeps
 * more than its place this way: "matrix:dm:@alice:example.org"); fn returns non-zero to stop.
 * fn must not call the store. */
int store_position_each(store *s, const char *prefix, int (*fn)(void *ctx, const char *name, const char *position),
                        void *ctx);

/* ---- Tables ----
 * A table lives in a room of one network (net = adapter name, "console", "matrix", "irc").
 * It is open until closed; its whole life (seats, options, moves, deals) is its journal. */
typedef struct {
    int64_t id;
    char net[16];
    char room[256];
    char game[16];      /* "304", "grid" */
    char creator[256];
    int64_t created;    /* seconds since the epoch */
    int64_t touched;    /* last accepted action */
} store_table;

int store_table_create(store *s, const char *net, const char *room, const char *game,
                       const char *creator, int64_t now, int64_t *id);
/* Marks the table closed (reason: "finished", "aborted", "idle"). */
int store_table_close(store *s, int64_t id, const char *reason, int64_t now);
int store_table_touch(store *s, int64_t id, int64_t now);
/* Calls fn for each open table, oldest first. fn returns 0 to go on, nonzero to stop (that
 * value is returned). */
int store_tables_open(store *s, int (*fn)(void *ctx, const store_table *t), void *ctx);

/* ---- Journal: the table's accepted actions, as text lines, numbered from 1 ---- */
int store_journal_add(store *s, int64_t table, int64_t seq, const char *entry);
/* Calls fn for each entry of the table in seq order. */
int store_journal_each(store *s, int64_t table,
                       int (*fn)(void *ctx, int64_t seq, const char *entry), void *ctx);

/* ---- Hand seeds (R-SHUFFLE): kept so a hand can be replayed and its seed revealed ---- */
int store_hand_add(store *s, int64_t table, int hand_no, const uint8_t seed[STORE_SEED_BYTES]);
/* Returns 1 if there is no such hand, 0 if found. */
int store_hand_seed(store *s, int64_t table, int hand_no, uint8_t seed[STORE_SEED_BYTES]);

/* ---- Outbox: messages to send, in id order; a message is queued once and sent until done ----
 * dest_user empty = to the room; else privately to that user (the room names the table the
 * message belongs to). mention: a user the message mentions ("" none), for networks that
 * notify. notice: a private message that is only for reading, which a network with a kind
 * of message for that sends so (IRC: NOTICE, never answered automatically). The txn id is
 * fixed when queued ("cr<id>"), so a retry cannot post twice. The wire form is the adapter's
 * own: what it decided to send for the message (Matrix: the room, the event type and the
 * content, encrypted or not), stored before its first attempt so that every retry, after a
 * crash too, sends exactly that. A delivered private message keeps neither its text nor its
 * wire form: the store holds private text only while it is needed. */
typedef struct {
    int64_t id;
    char net[16];
    char room[256];
    char user[256];
    char mention[256];
    int notice;
    char *text;          /* owned by the store until the callback returns */
    char *wire;          /* NULL until the adapter stored one; owned like text */
} store_msg;

int store_outbox_add(store *s, const char *net, const char *room, const char *user,
                     const char *mention, int notice, const char *text, int64_t *id);
/* Calls fn for each unsent message of net in id order (at most limit; 0 = all). */
int store_outbox_pending(store *s, const char *net, int limit,
                         int (*fn)(void *ctx, const store_msg *m), void *ctx);
int store_outbox_done(store *s, int64_t id);
/* Stores the wire form of a message not yet delivered (-1 if it is delivered or unknown). */
int store_outbox_wire(store *s, int64_t id, const char *wire);
/* Merges messages that were never tried (no wire form) into the first of them, in the
 * caller's transaction: into gets text and mention, each of ids[0..n) is marked sent, with no
 * text, merged into it. -1 if any of them is sent or has a wire form. */
int store_outbox_merge(store *s, int64_t into, const char *text, const char *mention, const int64_t *ids, int n);
/* Every message ever queued, sent or not, in id order (tests and audits). */
int store_outbox_all(store *s, int (*fn)(void *ctx, const store_msg *m), void *ctx);

/* ---- Pruning: what finished tables and delivered messages leave behind ----
 * Drops the journal and hand seeds of at most limit tables closed before closed_before
 * (seconds since the epoch), and at most limit * 64 delivered messages queued before
 * sent_before; a table's row and the standings stay. Runs in the caller's transaction.
 * Returns how many tables and messages it dropped (in *tables and *messages), -1 on error;
 * a call that reached a limit leaves the rest for the next one. In a transaction of
 * store_begin_lazy() the store's writer prunes when it writes the transaction, and the counts
 * are what its earlier prunes dropped since the last call said (0 and 0 before any). */
int store_prune(store *s, int64_t closed_before, int64_t sent_before, int limit, int *tables, int *messages);

/* ---- Standings per room (net + room) and player ---- */
typedef struct {
    char user[256];
    int matches, matches_won;
    int made, failed;     /* hands as trump maker */
    int tokens;           /* net tokens won (+) or paid (-) by the player's team over hands */
    int hands;            /* hands played */
} store_standing;

/* Adds the deltas to the player's row (creating it). */
int store_standing_add(store *s, const char *net, const char *room, const store_standing *delta);
/* Returns 1 if the player has no row, 0 if found. */
int store_standing_get(store *s, const char *net, const char *room, const char *user,
                       store_standing *out);
/* Calls fn for the room's players, best first (matches won, then net tokens, then name),
 * at most limit (0 = all). */
int store_standings_top(store *s, const char *net, const char *room, int limit,
                        int (*fn)(void *ctx, const store_standing *row), void *ctx);

/* ---- Inbox: what waits at a table while its move is with the Caps judge ----
 * Events held for a table (what came after the move, in order) and follow-ups the table still
 * owes. A row is written in the transaction that holds it and removed in the one that finally
 * does it, so a crash neither loses nor repeats it: a restarted bot does what the inbox holds,
 * in id order. */
typedef struct {
    int64_t id;
    int64_t table;
    char net[16];
    char what[16];       /* the core's word for it: "message", "leave", "rename", "gone", "settle" */
    char room[256];      /* "" for none */
    char user[256];
    char origin[256];    /* where the user connects from, as the network shows it ("" unknown) */
    char renamed_to[256]; /* a nick change: the new name */
    const char *text;    /* "" for none; owned by the store until the callback returns */
    int is_private, moderator;
} store_inbox;

int store_inbox_add(store *s, const store_inbox *row, int64_t *id);
/* The row now waits at another table. */
int store_inbox_move(store *s, int64_t id, int64_t table);
int store_inbox_done(store *s, int64_t id);
/* Calls fn for every row in id order. */
int store_inbox_each(store *s, int (*fn)(void *ctx, const store_inbox *row), void *ctx);

/* ---- Users the bot ignores (set by its admins), per network ---- */
/* Returns 0 when added, 1 when already ignored. */
int store_ignore_add(store *s, const char *net, const char *user, const char *by, int64_t now);
/* Returns 0 when removed, 1 when the user was not ignored. */
int store_ignore_del(store *s, const char *net, const char *user);
int store_ignored_each(store *s, int (*fn)(void *ctx, const char *net, const char *user), void *ctx);

#endif
