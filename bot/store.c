/* store.c — the bot's durable state in one SQLite file (see store.h for what is kept).
 *
 * Why it is shaped this way:
 * - Durability first, off the loop. The file is in WAL mode, so a crash (or SIGKILL) at any
 *   moment leaves either the whole batch or none of it. A transaction of store_begin() commits
 *   with synchronous=FULL: it is on the disk when store_commit() returns (the adapters' own
 *   writes, acted upon at once). One of store_begin_lazy() (the core's) is recorded and
 *   written by the store's writer behind the loop ("Writes" below), without that fsync, and a
 *   thread of the store's own syncs the WAL behind it and says how far commits are durable
 *   ("Durability" below): the core shows nothing of a commit before that, so a crash (of the
 *   process, of the OS, of the power) can only undo commits nobody has seen anything of.
 *   Foreign keys are on so that journal entries and hand seeds cannot name a table that does
 *   not exist. A busy timeout lets a second process (a backup, the sqlite3 shell) hold the file
 *   briefly without failing our writes.
 * - The bot writes one transaction per batch of incoming events (store_begin_lazy() ...
 *   commit), so the cost of a write is a B-tree insert, not an fsync. To keep that cheap every
 *   statement is prepared once, at open, and reused (reset + clear_bindings after each use);
 *   nothing is compiled on the hot path.
 * - The schema has a version (PRAGMA user_version). Migration i (store_migrations[i - 1])
 *   brings version i - 1 to i in its own IMMEDIATE transaction, re-reading the version inside
 *   it, so two processes opening an old file at once cannot both migrate it. A file from a
 *   newer cardroom is refused rather than guessed at.
 * - Errors are values: every function returns -1 with a one-line message in store_error().
 *   Messages come from SQLite's own text and our context (ids, sequence numbers) and never
 *   echo a bound parameter, so secrets handed to the store do not leak into logs.
 * - The journal's primary key (table_id, seq) makes applying a move twice an error, not a
 *   silent duplicate.
 * - Private text is kept only while it is needed: a delivered private message loses its text,
 *   and secure_delete makes SQLite overwrite what it deletes, so old hands do not linger in
 *   the file's free pages.
 *
 * Iteration (store_tables_open, store_journal_each, store_outbox_pending, store_outbox_all,
 * store_standings_top) runs the callback while the statement is stepping. A callback must not
 * call back into the store (store_error() aside): the statements are shared, and a write under
 * an open read cursor would change what the cursor sees. Such calls are refused with an error
 * rather than left to corrupt the iteration; collect what you need and act after it returns.
 * Text handed to a callback lives only until the callback returns. */
#include "store.h"

#include "threads.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <unistd.h>

#define STORE_ERR_MAX 512
#define STORE_BUSY_MS 5000 /* how long a write waits for another process's lock */
#define STORE_CHECKPOINT_PAGES 1000 /* WAL pages that ask for a checkpoint (SQLite's own default) */

/* ---- Schema ---- */

/* Migration i brings the schema from version i to i + 1. Append; never edit a shipped one. */
static const char *const store_migrations[STORE_SCHEMA_VERSION] = {
    /* 0 -> 1: the first schema. */
    "CREATE TABLE tables ("
    "  id           INTEGER PRIMARY KEY,"
    "  net          TEXT NOT NULL,"
    "  room         TEXT NOT NULL,"
    "  game         TEXT NOT NULL,"
    "  creator      TEXT NOT NULL,"
    "  created      INTEGER NOT NULL,"
    "  touched      INTEGER NOT NULL,"
    "  closed       INTEGER,"
    "  close_reason TEXT"
    ");"
    "CREATE INDEX tables_open ON tables(created, id) WHERE closed IS NULL;"
    "CREATE TABLE journal ("
    "  table_id INTEGER NOT NULL REFERENCES tables(id),"
    "  seq      INTEGER NOT NULL CHECK (seq >= 1),"
    "  entry    TEXT NOT NULL,"
    "  PRIMARY KEY (table_id, seq)"
    ") WITHOUT ROWID;"
    "CREATE TABLE hands ("
    "  table_id INTEGER NOT NULL REFERENCES tables(id),"
    "  hand_no  INTEGER NOT NULL,"
    "  seed     BLOB NOT NULL CHECK (length(seed) = 32),"
    "  PRIMARY KEY (table_id, hand_no)"
    ") WITHOUT ROWID;"
    "CREATE TABLE outbox ("
    "  id      INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  net     TEXT NOT NULL,"
    "  room    TEXT NOT NULL,"
    "  user    TEXT NOT NULL DEFAULT '',"
    "  mention TEXT NOT NULL DEFAULT '',"
    "  text    TEXT NOT NULL,"
    "  sent    INTEGER NOT NULL DEFAULT 0 CHECK (sent IN (0, 1)),"
    "  queued  INTEGER DEFAULT (CAST(strftime('%s', 'now') AS INTEGER))"
    ");"
    "CREATE INDEX outbox_pending ON outbox(net, sent, id);"
    "CREATE TABLE standings ("
    "  net         TEXT NOT NULL,"
    "  room        TEXT NOT NULL,"
    "  user        TEXT NOT NULL,"
    "  matches     INTEGER NOT NULL DEFAULT 0,"
    "  matches_won INTEGER NOT NULL DEFAULT 0,"
    "  made        INTEGER NOT NULL DEFAULT 0,"
    "  failed      INTEGER NOT NULL DEFAULT 0,"
    "  tokens      INTEGER NOT NULL DEFAULT 0,"
    "  hands       INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (net, room, user)"
    ") WITHOUT ROWID;"
    "CREATE TABLE positions ("
    "  adapter  TEXT PRIMARY KEY,"
    "  position TEXT NOT NULL"
    ") WITHOUT ROWID;",
    /* 1 -> 2: keyed values of the adapters (the Matrix adapter's encryption state). */
    "CREATE TABLE kv ("
    "  ns    TEXT NOT NULL,"
    "  key   TEXT NOT NULL,"
    "  value TEXT NOT NULL,"
    "  PRIMARY KEY (ns, key)"
    ") WITHOUT ROWID;",
    /* 2 -> 3: a private message only for reading (sent as an IRC NOTICE). */
    "ALTER TABLE outbox ADD COLUMN notice INTEGER NOT NULL DEFAULT 0 CHECK (notice IN (0, 1));",
    /* 3 -> 4: what waits at a table for the Caps judge; users the bot ignores. */
    "CREATE TABLE inbox ("
    "  id         INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  table_id   INTEGER NOT NULL REFERENCES tables(id),"
    "  net        TEXT NOT NULL,"
    "  what       TEXT NOT NULL,"
    "  room       TEXT NOT NULL DEFAULT '',"
    "  user       TEXT NOT NULL DEFAULT '',"
    "  text       TEXT NOT NULL DEFAULT '',"
    "  is_private INTEGER NOT NULL DEFAULT 0,"
    "  moderator  INTEGER NOT NULL DEFAULT 0,"
    "  origin     TEXT NOT NULL DEFAULT '',"
    "  renamed_to TEXT NOT NULL DEFAULT ''"
    ");"
    "CREATE TABLE ignored ("
    "  net   TEXT NOT NULL,"
    "  user  TEXT NOT NULL,"
    "  by    TEXT NOT NULL,"
    "  since INTEGER NOT NULL,"
    "  PRIMARY KEY (net, user)"
    ") WITHOUT ROWID;",
    /* 4 -> 5: what an adapter put on the wire for a message (stored before its first attempt,
     * so a retry sends the same), and the message a throttled one was merged into. */
    "ALTER TABLE outbox ADD COLUMN wire TEXT; ALTER TABLE outbox ADD COLUMN merged_into INTEGER;",
};

/* ---- Statements, prepared once at open ---- */

enum store_stmt_id {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SYNC_NORMAL,
    ST_SYNC_FULL,
    ST_VERSION,
    ST_POSITION_GET,
    ST_POSITION_SET,
    ST_POSITION_EACH,
    ST_KV_GET,
    ST_KV_PUT,
    ST_KV_DEL,
    ST_KV_EACH,
    ST_TABLE_CREATE,
    ST_TABLE_CLOSE,
    ST_TABLE_TOUCH,
    ST_TABLES_OPEN,
    ST_JOURNAL_ADD,
    ST_JOURNAL_EACH,
    ST_HAND_ADD,
    ST_HAND_SEED,
    ST_OUTBOX_ADD,
    ST_OUTBOX_PENDING,
    ST_OUTBOX_DONE,
    ST_OUTBOX_WIRE,
    ST_OUTBOX_MERGE_INTO,
    ST_OUTBOX_MERGED,
    ST_OUTBOX_ALL,
    ST_STANDING_ADD,
    ST_STANDING_GET,
    ST_STANDINGS_TOP,
    ST_INBOX_ADD,
    ST_INBOX_MOVE,
    ST_INBOX_DONE,
    ST_INBOX_EACH,
    ST_IGNORE_ADD,
    ST_IGNORE_DEL,
    ST_IGNORED_EACH,
    ST_PRUNE_PICK,
    ST_PRUNE_JOURNAL,
    ST_PRUNE_HANDS,
    ST_PRUNE_OUTBOX,
    ST_LAST_IDS,
    ST_COUNT
};

#define STORE_MSG_COLUMNS "id, net, room, user, mention, text, notice, wire"
#define STORE_STANDING_COLUMNS "user, matches, matches_won, made, failed, tokens, hands"

static const char *const store_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SYNC_NORMAL] = "PRAGMA synchronous = NORMAL",
    [ST_SYNC_FULL] = "PRAGMA synchronous = FULL",
    [ST_VERSION] = "PRAGMA user_version",
    [ST_POSITION_GET] = "SELECT position FROM positions WHERE adapter = ?1",
    [ST_KV_GET] = "SELECT value FROM kv WHERE ns = ?1 AND key = ?2",
    [ST_KV_PUT] = "INSERT INTO kv(ns, key, value) VALUES (?1, ?2, ?3) "
                  "ON CONFLICT(ns, key) DO UPDATE SET value = excluded.value",
    [ST_KV_DEL] = "DELETE FROM kv WHERE ns = ?1 AND key = ?2",
    [ST_KV_EACH] = "SELECT key, value FROM kv WHERE ns = ?1 ORDER BY key",
    [ST_POSITION_EACH] = "SELECT adapter, position FROM positions WHERE substr(adapter, 1, length(?1)) = ?1 "
                         "ORDER BY adapter",
    [ST_POSITION_SET] = "INSERT INTO positions(adapter, position) VALUES (?1, ?2) "
                        "ON CONFLICT(adapter) DO UPDATE SET position = excluded.position",
    /* ?6, the id: NULL takes the next rowid (a write made at once), a number one the store chose (a write
     * recorded for the writer, which must insert what the loop was told) */
    [ST_TABLE_CREATE] = "INSERT INTO tables(net, room, game, creator, created, touched, id) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
    [ST_TABLE_CLOSE] = "UPDATE tables SET closed = ?2, close_reason = ?3 "
                       "WHERE id = ?1 AND closed IS NULL",
    [ST_TABLE_TOUCH] = "UPDATE tables SET touched = ?2 WHERE id = ?1",
    [ST_TABLES_OPEN] = "SELECT id, net, room, game, creator, created, touched FROM tables "
                       "WHERE closed IS NULL ORDER BY created, id",
    [ST_JOURNAL_ADD] = "INSERT INTO journal(table_id, seq, entry) VALUES (?1, ?2, ?3)",
    [ST_JOURNAL_EACH] = "SELECT seq, entry FROM journal WHERE table_id = ?1 ORDER BY seq",
    [ST_HAND_ADD] = "INSERT INTO hands(table_id, hand_no, seed) VALUES (?1, ?2, ?3)",
    [ST_HAND_SEED] = "SELECT seed FROM hands WHERE table_id = ?1 AND hand_no = ?2",
    [ST_OUTBOX_ADD] = "INSERT INTO outbox(net, room, user, mention, text, notice, id) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_OUTBOX_PENDING] = "SELECT " STORE_MSG_COLUMNS " FROM outbox "
                          "WHERE net = ?1 AND sent = 0 ORDER BY id LIMIT ?2",
    /* a delivered private message keeps no text (and no wire form, which may hold it) */
    [ST_OUTBOX_DONE] = "UPDATE outbox SET sent = 1, wire = NULL, "
                       "text = CASE WHEN user = '' THEN text ELSE '' END WHERE id = ?1",
    [ST_OUTBOX_WIRE] = "UPDATE outbox SET wire = ?2 WHERE id = ?1 AND sent = 0",
    [ST_OUTBOX_MERGE_INTO] = "UPDATE outbox SET text = ?2, mention = ?3 WHERE id = ?1 AND sent = 0 AND wire IS NULL",
    [ST_OUTBOX_MERGED] = "UPDATE outbox SET sent = 1, text = '', merged_into = ?2 "
                         "WHERE id = ?1 AND sent = 0 AND wire IS NULL",
    [ST_OUTBOX_ALL] = "SELECT " STORE_MSG_COLUMNS " FROM outbox ORDER BY id",
    [ST_STANDING_ADD] = "INSERT INTO standings(" STORE_STANDING_COLUMNS ", net, room) "
                        "VALUES (?3, ?4, ?5, ?6, ?7, ?8, ?9, ?1, ?2) "
                        "ON CONFLICT(net, room, user) DO UPDATE SET "
                        "matches = matches + excluded.matches, "
                        "matches_won = matches_won + excluded.matches_won, "
                        "made = made + excluded.made, "
                        "failed = failed + excluded.failed, "
                        "tokens = tokens + excluded.tokens, "
                        "hands = hands + excluded.hands",
    [ST_STANDING_GET] = "SELECT " STORE_STANDING_COLUMNS " FROM standings "
                        "WHERE net = ?1 AND room = ?2 AND user = ?3",
    [ST_STANDINGS_TOP] = "SELECT " STORE_STANDING_COLUMNS " FROM standings "
                         "WHERE net = ?1 AND room = ?2 "
                         "ORDER BY matches_won DESC, tokens DESC, user ASC LIMIT ?3",
    [ST_INBOX_ADD] = "INSERT INTO inbox(table_id, net, what, room, user, text, is_private, moderator, origin, "
                     "renamed_to, id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [ST_INBOX_MOVE] = "UPDATE inbox SET table_id = ?2 WHERE id = ?1",
    [ST_INBOX_DONE] = "DELETE FROM inbox WHERE id = ?1",
    [ST_INBOX_EACH] = "SELECT id, table_id, net, what, room, user, text, is_private, moderator, origin, renamed_to "
                      "FROM inbox ORDER BY id",
    [ST_IGNORE_ADD] = "INSERT INTO ignored(net, user, by, since) VALUES (?1, ?2, ?3, ?4) "
                      "ON CONFLICT(net, user) DO NOTHING",
    [ST_IGNORE_DEL] = "DELETE FROM ignored WHERE net = ?1 AND user = ?2",
    [ST_IGNORED_EACH] = "SELECT net, user FROM ignored ORDER BY net, user",
    /* closed long enough ago and not pruned yet (its journal or seeds are still there) */
    [ST_PRUNE_PICK] = "SELECT id FROM tables t WHERE closed IS NOT NULL AND closed < ?1 AND "
                      "(EXISTS (SELECT 1 FROM journal WHERE table_id = t.id) OR "
                      "EXISTS (SELECT 1 FROM hands WHERE table_id = t.id)) ORDER BY id LIMIT ?2",
    [ST_PRUNE_JOURNAL] = "DELETE FROM journal WHERE table_id = ?1",
    [ST_PRUNE_HANDS] = "DELETE FROM hands WHERE table_id = ?1",
    /* ids grow with time: the messages queued before sent_before are those below the first one
     * queued later, so the search stops there instead of reading the whole outbox */
    [ST_PRUNE_OUTBOX] = "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE sent = 1 AND id < "
                        "coalesce((SELECT id FROM outbox WHERE queued >= ?1 ORDER BY id LIMIT 1), "
                        "(SELECT max(id) + 1 FROM outbox)) ORDER BY id LIMIT ?2)",
    /* the highest ids ever taken (AUTOINCREMENT's counter too, which outlives a pruned row) */
    [ST_LAST_IDS] = "SELECT (SELECT coalesce(max(id), 0) FROM tables), "
                    "max((SELECT coalesce(max(id), 0) FROM outbox), "
                    "(SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'outbox')), "
                    "max((SELECT coalesce(max(id), 0) FROM inbox), "
                    "(SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'inbox'))",
};

/* A thread of the store's with a connection of its own, started at the first need (see "Checkpoints"
 * and "Durability"). */
typedef struct store_bg store_bg;
struct store_bg {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *path;  /* the store's */
    void (*pass)(store_bg *k, sqlite3 *db); /* one pass, run without the lock; db NULL if it cannot open */
    store *owner;
    int ready, started, want, stop;
    int realtime;      /* its priority (threads.h), set by store_set_priority */
    const char *name;  /* the thread's */
    long passes;       /* passes made */
};

/* What the syncer knows, under sync.mu: how far the WAL is on disk. */
typedef struct {
    int64_t committed; /* commits in the WAL, the writer's or the loop's (numbered as store_commits) */
    int64_t durable;   /* commits known to be on disk: all of the first durable */
    int failed;        /* SQLite's code for a sync that failed, not yet reported; 0: none */
    long syncs;        /* syncs the syncer made */
    int wake_fd;       /* an eventfd, written when durable moves or a sync fails */
} store_dur;

/* One write: a statement and the values bound to it (see "Writes" below). Text and blobs are
 * the caller's while the write is done at once, and copies of the store's once recorded. */
#define STORE_OP_VALUES 11
typedef struct {
    int kind; /* SQLITE_NULL, SQLITE_INTEGER, SQLITE_TEXT or SQLITE_BLOB */
    int64_t i;
    const char *p;
    int n; /* a blob's bytes */
} store_val;

typedef struct {
    enum store_stmt_id st;
    int nvals;
    int must_change;  /* a write that changes no row is an error (none) */
    const char *fail; /* the error's context, a format taking a and b (long long) */
    int fail_val;     /* or, if >= 0, the value whose text follows it in brackets ("kv put (olm)") */
    const char *none; /* the error when must_change and no row changed, the same way */
    long long a, b;
    store_val v[STORE_OP_VALUES];
} store_op;

/* A transaction recorded for the writer: its ops, and its number among the store's commits. */
typedef struct store_txn store_txn;
struct store_txn {
    store_txn *next;
    int64_t commit;
    int dead; /* a call in it failed (store_direct): it only waits for store_rollback() */
    int nkv, nseeds, ndone, nmerges; /* its keyed-value writes, hand seeds, deliveries and merges: the
                                        reads that look into the writer's queue skip the rest */
    int nops, cap;
    store_op *ops;
};

/* The writer: a thread of the store's own that does the recorded transactions in order, with
 * a connection of its own. Under mu. */
typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t more, done; /* more: for the writer; done: for a loop that waits (store_drain) */
    store_txn *head, *tail;    /* recorded and not yet written, in order */
    store_txn *written;        /* written, for the loop to free: memory goes back to the allocator's
                                  arena of the thread that took it, whose lock the loop may then wait
                                  for, so the writer frees none */
    int ready, started, stop;
    int failed;                /* SQLite's code (or SQLITE_OK for our own refusal) of the head's failure */
    int halted;                /* the head failed: nothing is written before a retry (store_probe) */
    int reported;              /* store_durable() has reported the failure */
    char err[STORE_ERR_MAX];
    long waits;                /* times the loop waited for the writer */
    int queued, most_queued;   /* transactions waiting for it now, and at most so far */
    int pruned_tables, pruned_messages; /* what its prunes dropped since store_prune() last said */
} store_writer;

struct store {
    sqlite3 *db;
    char *path;
    int in_memory; /* no file: every commit is as durable as it will ever be */
    int lazy;      /* the open transaction commits without waiting for the disk (store_begin_lazy) */
    int behind;    /* lazy transactions are recorded and written by the writer (a file, not memory) */
    store_txn *rec; /* the transaction being recorded, NULL if none */
    int64_t last_id[3], rec_ids[3]; /* the last table, outbox and inbox ids taken; at the open transaction's begin */
    int txn_open;  /* begun and neither committed nor rolled back: a rollback frees the ids it took */
    store_writer w;
    char dead_err[STORE_ERR_MAX]; /* why the recorded transaction died (store_direct), and its code */
    int dead_code;
    int64_t commits; /* commits made through this store (the loop's count; dur.committed is the syncer's copy) */
    store_bg ckpt, sync;
    store_dur dur; /* under sync.mu */
    sqlite3_stmt *stmt[ST_COUNT];
    int iterating; /* a callback is running: calls back into the store are refused */
    int code;      /* SQLite's extended result code of the last failure; SQLITE_OK: our own refusal */
    int lock_fd;   /* PATH.lock while store_open_exclusive() holds it, else -1 */
    char err[STORE_ERR_MAX];
};

/* ---- Errors ---- */

static int store_vsay(store *s, const char *fmt, va_list ap)
{
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    s->code = SQLITE_OK;
    return -1;
}

/* Sets the error to our own message; returns -1. */
__attribute__((format(printf, 2, 3))) static int store_say(store *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    store_vsay(s, fmt, ap);
    va_end(ap);
    return -1;
}

/* Sets the error to our context followed by SQLite's message, and readies st (if any) for
 * its next use; returns -1. SQLite's message is taken before the reset can replace it. */
__attribute__((format(printf, 3, 4))) static int store_fail(store *s, sqlite3_stmt *st,
                                                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    store_vsay(s, fmt, ap);
    va_end(ap);
    size_t used = strlen(s->err);
    snprintf(s->err + used, sizeof s->err - used, ": %s", sqlite3_errmsg(s->db));
    s->code = sqlite3_extended_errcode(s->db);
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    return -1;
}

const char *store_error(const store *s)
{
    return s ? s->err : "no store (it failed to open or was never opened)";
}

store_fault store_fault_of(const store *s)
{
    if (!s) return STORE_FAULT_OTHER;
    switch (s->code & 0xff) { /* the primary code of an extended one */
    case SQLITE_OK:
    case SQLITE_CONSTRAINT:
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
    case SQLITE_ERROR: return STORE_FAULT_NONE;
    case SQLITE_FULL: return STORE_FAULT_FULL;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: return STORE_FAULT_READONLY;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return STORE_FAULT_BUSY;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL: return STORE_FAULT_IO;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return STORE_FAULT_CORRUPT;
    default: return STORE_FAULT_OTHER;
    }
}

const char *store_fault_text(store_fault f)
{
    switch (f) {
    case STORE_FAULT_NONE: return "the database refused a write";
    case STORE_FAULT_FULL: return "the disk is full";
    case STORE_FAULT_READONLY: return "the database file is read-only";
    case STORE_FAULT_BUSY: return "another program holds the database";
    case STORE_FAULT_IO: return "the disk fails to read or write";
    case STORE_FAULT_CORRUPT: return "the database file is damaged";
    case STORE_FAULT_OTHER: break;
    }
    return "the database fails";
}

/* ---- Statement helpers ---- */

/* The statement for one call, ready to bind; NULL (error set) while a callback runs. */
static sqlite3_stmt *store_stmt(store *s, enum store_stmt_id id, const char *what)
{
    if (!s) return NULL;
    if (s->iterating) {
        store_say(s, "%s: called from inside a store callback (collect first, act after it "
                     "returns)", what);
        return NULL;
    }
    return s->stmt[id];
}

/* Readies a statement for its next use. The text bound with SQLITE_STATIC is dropped here,
 * so the caller's strings need only live for the call. */
static void store_reset(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static int store_bind_text(sqlite3_stmt *st, int col, const char *text)
{
    return sqlite3_bind_text(st, col, text, -1, SQLITE_STATIC);
}

/* Runs st (bound) to completion; 0 on success, else nonzero and SQLite's error is pending. */
static int store_step_done(sqlite3_stmt *st)
{
    return sqlite3_step(st) != SQLITE_DONE;
}

/* Copies text column col into dst (size n, n >= 1), cut on a UTF-8 boundary if it is too
 * long, always NUL-terminated. NULL reads as "". */
static void store_copy_text(char *dst, size_t n, sqlite3_stmt *st, int col)
{
    const unsigned char *src = sqlite3_column_text(st, col);
    size_t len = src ? (size_t)sqlite3_column_bytes(st, col) : 0;
    if (len >= n) {
        len = n - 1;
        while (len > 0 && (src[len] & 0xC0) == 0x80) len--; /* not inside a character */
    }
    if (len) memcpy(dst, src, len);
    dst[len] = '\0';
}

/* Runs a prepared SELECT, handing each row to row(st, call) until it returns nonzero.
 * Returns that value, 0 at the end, or -1 on a SQLite error. */
static int store_each(store *s, sqlite3_stmt *st, int (*row)(sqlite3_stmt *st, void *call),
                      void *call, const char *what)
{
    int rc, ret = 0;
    s->iterating = 1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if ((ret = row(st, call)) != 0) break;
    s->iterating = 0;
    if (ret == 0 && rc != SQLITE_DONE) return store_fail(s, st, "%s", what);
    store_reset(st);
    return ret;
}

/* ---- Writes: done at once, or recorded and done behind the loop ----
 *
 * The bot's loop must not wait for the disk: a write() into the WAL can stall for milliseconds
 * (the file system's journal, the page cache), and every table and network waits with it. So
 * the core's transactions (store_begin_lazy) are recorded, not run: every write of one is a
 * store_op (a prepared statement's id and copies of its values), store_commit() numbers the
 * transaction and hands it to the writer, a thread of the store's own with a connection of
 * its own, which runs the recorded transactions in order, each in one SQLite transaction, and
 * then tells the syncer, as a commit of the loop's own did before. So the durability gate
 * (store_durable) is unchanged: nothing of a commit is shown before it is on the disk. A crash
 * of the process may now lose a commit the writer had not yet written, which only an OS crash
 * could before: nothing of it was shown either.
 *
 * Everything else the loop does on its own connection, after the writer has written what it
 * holds (store_drain), so the file sees the writes in the order they were made and a read sees
 * every write made before it: a FULL transaction (store_begin), a write or read outside any
 * transaction, a read inside a recorded transaction (the transaction then goes on at once on
 * the loop's connection, its recorded writes first: store_direct), and a write whose caller
 * needs to know what it changed. The core's hot path does none of these. The reads it does
 * there do not wait: a keyed value and a hand seed are looked up among the writes the writer
 * holds first, and the outbox leaves out the messages whose delivery the writer still holds (a
 * message queued by a commit still unwritten is not durable and so not offered anyway). New rows that the caller learns the id of (tables, outbox, inbox) take their ids
 * from counters the store keeps, so a recorded insert's id is known at once.
 *
 * A recorded transaction that fails (a full disk, say) stops the writer: the ones after it
 * wait, store_durable() reports the failure once, and store_probe() (the core's retry) runs the
 * queue again, then its own probe write; one the database refuses by itself (a broken rule:
 * no retry would do it) is dropped with those after it. */

static int store_wal_hook(void *arg, sqlite3 *db, const char *name, int pages);
static void store_wake(store *s);

/* SQLite's own mutexes (its allocator's, the WAL index's shared by every connection of the
 * process, ...) are taken by the loop and the store's threads alike: here they inherit priority
 * too, so a loop of real-time priority never waits for a thread that holds one and is not
 * running. Installed before SQLite's first use in the process (store_open); where SQLite was
 * already in use, its own stay. */
struct sqlite3_mutex {
    pthread_mutex_t mu;
    int dynamic;
};

#define STORE_STATIC_MUTEXES 16 /* SQLITE_MUTEX_STATIC_MAIN (2) ... SQLITE_MUTEX_STATIC_VFS3 (13) */
_Static_assert(SQLITE_MUTEX_STATIC_VFS3 < STORE_STATIC_MUTEXES, "room for SQLite's static mutexes");
static sqlite3_mutex store_static_mutex[STORE_STATIC_MUTEXES];

static int store_mx_failed;

static void store_mx_statics(void)
{
    for (int i = 0; i < STORE_STATIC_MUTEXES; i++)
        if (thread_mutex_init(&store_static_mutex[i].mu, 0) != 0) store_mx_failed = 1;
}

/* SQLite may call it more than once, from more than one thread: the statics are made once. */
static int store_mx_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, store_mx_statics);
    return store_mx_failed ? SQLITE_NOMEM : SQLITE_OK;
}

static int store_mx_end(void) { return SQLITE_OK; }

static sqlite3_mutex *store_mx_alloc(int type)
{
    if (type != SQLITE_MUTEX_FAST && type != SQLITE_MUTEX_RECURSIVE)
        return type >= 0 && type < STORE_STATIC_MUTEXES ? &store_static_mutex[type] : NULL;
    sqlite3_mutex *m = malloc(sizeof *m);
    if (m && thread_mutex_init(&m->mu, type == SQLITE_MUTEX_RECURSIVE) != 0) {
        free(m);
        m = NULL;
    }
    if (m) m->dynamic = 1;
    return m;
}

static void store_mx_free(sqlite3_mutex *m)
{
    if (!m || !m->dynamic) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static void store_mx_enter(sqlite3_mutex *m) { pthread_mutex_lock(&m->mu); }
static int store_mx_try(sqlite3_mutex *m) { return pthread_mutex_trylock(&m->mu) == 0 ? SQLITE_OK : SQLITE_BUSY; }
static void store_mx_leave(sqlite3_mutex *m) { pthread_mutex_unlock(&m->mu); }
static int store_mx_held(sqlite3_mutex *m) { (void)m; return 1; } /* only asserts of a debug SQLite ask */

static void store_sqlite_setup(void)
{
    static const sqlite3_mutex_methods pi = {store_mx_init, store_mx_end,  store_mx_alloc, store_mx_free,
                                             store_mx_enter, store_mx_try, store_mx_leave, store_mx_held,
                                             store_mx_held};
    sqlite3_config(SQLITE_CONFIG_MUTEX, &pi); /* SQLITE_MISUSE once SQLite is in use: its own stay */
}

/* A call in a recorded transaction that died: it fails as the call that killed it did, so the
 * caller reports the first failure, not a later one of ours. */
static int store_dead(store *s)
{
    snprintf(s->err, sizeof s->err, "%s", s->dead_err);
    s->code = s->dead_code;
    return -1;
}

static store_op store_op_of(enum store_stmt_id st, const char *fail, long long a, long long b)
{
    store_op op;
    op.st = st;
    op.nvals = op.must_change = 0;
    op.fail = fail;
    op.fail_val = -1;
    op.none = NULL;
    op.a = a;
    op.b = b;
    return op;
}

/* The op is an error if it changes no row: none is the message (a format taking a and b). */
static void store_must_change(store_op *op, const char *none)
{
    op->must_change = 1;
    op->none = none;
}

static void store_int(store_op *op, int64_t i) { op->v[op->nvals++] = (store_val){SQLITE_INTEGER, i, NULL, 0}; }

/* NULL binds SQL NULL. */
static void store_text(store_op *op, const char *t) { op->v[op->nvals++] = (store_val){t ? SQLITE_TEXT : SQLITE_NULL, 0, t, 0}; }

static void store_blob(store_op *op, const void *p, int n)
{
    op->v[op->nvals++] = (store_val){p ? SQLITE_BLOB : SQLITE_NULL, 0, p, n};
}

static void store_null(store_op *op) { op->v[op->nvals++] = (store_val){SQLITE_NULL, 0, NULL, 0}; }

/* Binds and runs op on connection db, whose statements are stmt. Returns 0, or -1 with the
 * error in err and SQLite's extended code in *code (SQLITE_OK for our own refusal). */
static int store_op_run(sqlite3 *db, sqlite3_stmt *const *stmt, const store_op *op, char *err, size_t errlen, int *code)
{
    sqlite3_stmt *st = stmt[op->st];
    int rc = SQLITE_OK;
    for (int i = 0; i < op->nvals && rc == SQLITE_OK; i++) {
        const store_val *v = &op->v[i];
        switch (v->kind) {
        case SQLITE_INTEGER: rc = sqlite3_bind_int64(st, i + 1, v->i); break;
        case SQLITE_TEXT: rc = sqlite3_bind_text(st, i + 1, v->p, -1, SQLITE_STATIC); break;
        case SQLITE_BLOB: rc = sqlite3_bind_blob(st, i + 1, v->p, v->n, SQLITE_STATIC); break;
        default: rc = sqlite3_bind_null(st, i + 1); break;
        }
    }
    if (rc == SQLITE_OK && sqlite3_step(st) != SQLITE_DONE) rc = SQLITE_ERROR;
    if (rc != SQLITE_OK) { /* SQLite's message is taken before the reset can replace it */
        const store_val *named = op->fail_val >= 0 ? &op->v[op->fail_val] : NULL;
        int used = named && named->kind == SQLITE_TEXT ? snprintf(err, errlen, "%s (%s)", op->fail, named->p)
                                                       : snprintf(err, errlen, op->fail, op->a, op->b);
        size_t at = used < 0 ? 0 : (size_t)used < errlen ? (size_t)used : errlen - 1;
        snprintf(err + at, errlen - at, ": %s", sqlite3_errmsg(db));
        *code = sqlite3_extended_errcode(db);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_OK) return -1;
    if (op->must_change && sqlite3_changes(db) == 0) {
        snprintf(err, errlen, op->none, op->a, op->b);
        *code = SQLITE_OK;
        return -1;
    }
    return 0;
}

static int store_prune_on(sqlite3 *db, sqlite3_stmt *const *stmt, int64_t closed_before, int64_t sent_before, int limit,
                          int *tables, int *messages, char *err, size_t errlen, int *code);

/* Runs a recorded op: a write, or a prune (ST_PRUNE_PICK: what it dropped is added to *pruned). */
static int store_rec_run(sqlite3 *db, sqlite3_stmt *const *stmt, const store_op *op, char *err, size_t errlen, int *code,
                         int pruned[2])
{
    if (op->st != ST_PRUNE_PICK) return store_op_run(db, stmt, op, err, errlen, code);
    int tables, messages;
    if (store_prune_on(db, stmt, op->v[0].i, op->v[1].i, (int)op->v[2].i, &tables, &messages, err, errlen, code) != 0)
        return -1;
    pruned[0] += tables;
    pruned[1] += messages;
    return 0;
}

/* Drops the transaction's ops (the copies of their values): it records nothing any more. */
static void store_txn_clear(store_txn *t)
{
    for (int i = 0; i < t->nops; i++)
        for (int k = 0; k < t->ops[i].nvals; k++) free((void *)t->ops[i].v[k].p);
    t->nops = 0;
}

static void store_txn_free(store_txn *t)
{
    if (!t) return;
    store_txn_clear(t);
    free(t->ops);
    free(t);
}

/* Appends a copy of op to the transaction being recorded. */
static int store_record(store *s, const store_op *op)
{
    store_txn *t = s->rec;
    if (t->dead) return store_dead(s);
    if (t->nops == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        store_op *ops = realloc(t->ops, (size_t)cap * sizeof *ops);
        if (!ops) return store_say(s, "out of memory recording a write");
        t->ops = ops;
        t->cap = cap;
    }
    store_op *o = &t->ops[t->nops];
    *o = *op;
    for (int k = 0; k < o->nvals; k++) {
        store_val *v = &o->v[k];
        if (v->kind != SQLITE_TEXT && v->kind != SQLITE_BLOB) continue;
        size_t n = v->kind == SQLITE_TEXT ? strlen(v->p) + 1 : (size_t)v->n;
        char *copy = malloc(n ? n : 1);
        if (!copy) {
            for (int j = 0; j < k; j++) free((void *)o->v[j].p);
            return store_say(s, "out of memory recording a write");
        }
        memcpy(copy, v->p, n);
        v->p = copy;
    }
    for (int k = 0; k < o->nvals; k++) /* the copies are the op's own; the rest borrow nothing */
        if (o->v[k].kind != SQLITE_TEXT && o->v[k].kind != SQLITE_BLOB) o->v[k].p = NULL;
    t->nops++;
    t->nkv += o->st == ST_KV_PUT || o->st == ST_KV_DEL;
    t->nseeds += o->st == ST_HAND_ADD;
    t->ndone += o->st == ST_OUTBOX_DONE;
    t->nmerges += o->st == ST_OUTBOX_MERGE_INTO;
    return 0;
}

/* Waits until the writer has written every recorded transaction. -1 (with its error) when it
 * stopped at one that failed. */
static int store_drain(store *s)
{
    store_writer *w = &s->w;
    if (!s->behind) return 0;
    pthread_mutex_lock(&w->mu);
    if (w->head && !w->halted) w->waits++;
    while (w->head && !w->halted) pthread_cond_wait(&w->done, &w->mu);
    int rc = 0;
    if (w->halted) {
        snprintf(s->err, sizeof s->err, "%s", w->err);
        s->code = w->failed;
        rc = -1;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static int store_begin_now(store *s, int lazy);
static void store_lazy_end(store *s);

/* The transaction being recorded goes on at once on the loop's connection, after what the
 * writer holds, with its recorded writes first. On failure it is dead: every later call in it
 * fails until store_rollback(). */
static int store_direct(store *s)
{
    store_txn *t = s->rec;
    if (!t) return 0;
    if (t->dead) return store_dead(s);
    s->rec = NULL;
    int rc = store_drain(s);
    if (rc == 0) rc = store_begin_now(s, 1);
    int pruned[2] = {0, 0}; /* a prune done at once reports nothing: the next one counts again */
    for (int i = 0; rc == 0 && i < t->nops; i++)
        rc = store_rec_run(s->db, s->stmt, &t->ops[i], s->err, sizeof s->err, &s->code, pruned);
    if (rc == 0) {
        store_txn_free(t);
        return 0;
    }
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    store_lazy_end(s);
    store_txn_clear(t);
    t->dead = 1;
    s->rec = t;
    snprintf(s->dead_err, sizeof s->dead_err, "%s", s->err);
    s->dead_code = s->code;
    return -1;
}

/* What the store was given and has not written yet, for a read that does not wait for the
 * writer: look(t, ctx) is asked of each recorded transaction, the writer's oldest first and the
 * one being recorded last, and says what it found there (0: nothing); the last thing found is
 * returned, as the last write wins. The writer's queue is read before the caller reads the file,
 * and the writer takes a transaction off it only once it is in the file, so none slips between. */
static int store_recorded_last(store *s, int (*look)(const store_txn *t, void *ctx), void *ctx)
{
    int found = 0, f;
    if (s->behind) {
        pthread_mutex_lock(&s->w.mu);
        for (const store_txn *t = s->w.head; t; t = t->next)
            if ((f = look(t, ctx)) != 0) found = f;
        pthread_mutex_unlock(&s->w.mu);
    }
    if (s->rec && (f = look(s->rec, ctx)) != 0) found = f;
    return found;
}

/* Before a read: a recorded transaction goes on at once (it must see its own writes); outside a
 * transaction, the read waits for what the writer holds. */
static int store_reading(store *s)
{
    if (s->rec) return store_direct(s);
    return sqlite3_get_autocommit(s->db) ? store_drain(s) : 0;
}

/* Does op: records it in a recorded transaction, else runs it at once (outside a transaction,
 * after what the writer holds). what names the call for a refusal. */
static int store_write(store *s, const store_op *op, const char *what)
{
    if (!store_stmt(s, op->st, what)) return -1;
    if (s->rec) return store_record(s, op);
    if (sqlite3_get_autocommit(s->db) && store_drain(s) != 0) return -1;
    return store_op_run(s->db, s->stmt, op, s->err, sizeof s->err, &s->code);
}

/* The same, at once in any case; *changed: whether it changed a row. */
static int store_write_now(store *s, const store_op *op, const char *what, int *changed)
{
    if (!store_stmt(s, op->st, what) || store_reading(s) != 0) return -1;
    if (store_op_run(s->db, s->stmt, op, s->err, sizeof s->err, &s->code) != 0) return -1;
    *changed = sqlite3_changes(s->db) > 0;
    return 0;
}

enum { STORE_ID_TABLE, STORE_ID_OUTBOX, STORE_ID_INBOX };

/* Binds an insert's id: the store's next one when recorded (the writer must insert what the
 * caller was told), else NULL (SQLite's next, learnt by store_took_id). */
static void store_id_bind(store *s, store_op *op, int which)
{
    if (s->rec && !s->rec->dead) store_int(op, ++s->last_id[which]);
    else store_null(op);
}

/* The id the insert took. */
static int64_t store_took_id(store *s, const store_op *op, int which)
{
    const store_val *v = &op->v[op->nvals - 1];
    if (v->kind == SQLITE_INTEGER) return v->i;
    int64_t id = sqlite3_last_insert_rowid(s->db);
    if (id > s->last_id[which]) s->last_id[which] = id;
    return id;
}

/* ---- The writer's thread ---- */

/* The writer's connection: as the loop's, but its commits never wait for the disk. */
static int store_writer_open(store *s, sqlite3 **db, sqlite3_stmt **stmt, char *err, size_t errlen, int *code)
{
    if (*db) return 0;
    int rc = sqlite3_open_v2(s->path, db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) sqlite3_busy_timeout(*db, STORE_BUSY_MS);
    for (int i = 0; rc == SQLITE_OK && i < ST_COUNT; i++)
        rc = sqlite3_prepare_v3(*db, store_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &stmt[i], NULL);
    /* after the statements: preparing "PRAGMA synchronous = ..." already sets it */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(*db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON",
                          NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_wal_hook(*db, store_wal_hook, &s->ckpt);
        return 0;
    }
    snprintf(err, errlen, "%s: opening the writer's connection: %s", s->path, *db ? sqlite3_errmsg(*db) : "out of memory");
    *code = *db ? sqlite3_extended_errcode(*db) : SQLITE_NOMEM;
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(stmt[i]);
        stmt[i] = NULL;
    }
    sqlite3_close(*db);
    *db = NULL;
    return -1;
}

/* Runs a recorded transaction, all or nothing. */
static int store_txn_run(sqlite3 *db, sqlite3_stmt *const *stmt, const store_txn *t, char *err, size_t errlen, int *code,
                         int pruned[2])
{
    store_op begin = store_op_of(ST_BEGIN, "begin", 0, 0), commit = store_op_of(ST_COMMIT, "commit", 0, 0);
    int rc = store_op_run(db, stmt, &begin, err, errlen, code);
    for (int i = 0; rc == 0 && i < t->nops; i++) rc = store_rec_run(db, stmt, &t->ops[i], err, errlen, code, pruned);
    if (rc == 0) rc = store_op_run(db, stmt, &commit, err, errlen, code);
    if (rc != 0 && !sqlite3_get_autocommit(db)) {
        sqlite3_step(stmt[ST_ROLLBACK]);
        sqlite3_reset(stmt[ST_ROLLBACK]);
    }
    return rc;
}

static void store_applied(store *s, int64_t commit);

static void *store_writer_run(void *arg)
{
    store *s = arg;
    store_writer *w = &s->w;
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt[ST_COUNT] = {0};
    char err[STORE_ERR_MAX];
    int code = SQLITE_OK;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && (!w->head || w->halted)) pthread_cond_wait(&w->more, &w->mu);
        if (!w->head || w->halted) break; /* stopped, with nothing left it can write */
        store_txn *t = w->head;
        pthread_mutex_unlock(&w->mu);
        int pruned[2] = {0, 0};
        int rc = store_writer_open(s, &db, stmt, err, sizeof err, &code);
        if (rc == 0) rc = store_txn_run(db, stmt, t, err, sizeof err, &code, pruned);
        if (rc == 0) store_applied(s, t->commit);
        pthread_mutex_lock(&w->mu);
        if (rc == 0) {
            w->pruned_tables += pruned[0];
            w->pruned_messages += pruned[1];
            if (!(w->head = t->next)) w->tail = NULL;
            w->queued--;
            t->next = w->written;
            w->written = t;
        } else {
            w->halted = 1;
            w->reported = 0;
            w->failed = code;
            snprintf(w->err, sizeof w->err, "%s", err);
            store_wake(s);
        }
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(stmt[i]);
    sqlite3_close(db);
    return NULL;
}

static void store_free_list(store_txn *t)
{
    while (t) {
        store_txn *next = t->next;
        store_txn_free(t);
        t = next;
    }
}

/* Hands a recorded transaction to the writer, and frees what it has written. */
static void store_enqueue(store *s, store_txn *t)
{
    store_writer *w = &s->w;
    pthread_mutex_lock(&w->mu);
    store_txn *written = w->written;
    w->written = NULL;
    if (w->tail) w->tail->next = t;
    else w->head = t;
    w->tail = t;
    if (++w->queued > w->most_queued) w->most_queued = w->queued;
    pthread_cond_signal(&w->more);
    pthread_mutex_unlock(&w->mu);
    store_free_list(written);
}

/* The writer stopped at a failure: it tries again from that transaction. One the database
 * refuses by itself is dropped, with those after it. */
static int store_retry(store *s)
{
    store_writer *w = &s->w;
    if (!s->behind) return 0;
    pthread_mutex_lock(&w->mu);
    if (w->halted) {
        w->halted = 0;
        pthread_cond_signal(&w->more);
    }
    pthread_mutex_unlock(&w->mu);
    if (store_drain(s) == 0) return 0;
    if (store_fault_of(s) != STORE_FAULT_NONE) return -1;
    pthread_mutex_lock(&w->mu);
    store_txn *t = w->head;
    w->head = w->tail = NULL;
    w->queued = 0;
    w->halted = 0;
    pthread_mutex_unlock(&w->mu);
    store_free_list(t);
    return 0;
}

/* Starts the writer (a store on a file). */
static int store_writer_init(store *s)
{
    store_writer *w = &s->w;
    int rc = thread_mutex_init(&w->mu, 0);
    if (rc != 0) return store_say(s, "cannot start the store's writer: %s", strerror(rc));
    pthread_cond_init(&w->more, NULL);
    pthread_cond_init(&w->done, NULL);
    w->ready = 1;
    if ((rc = thread_start(&w->thread, store_writer_run, s, "cardroom-writer", 0)) != 0)
        return store_say(s, "cannot start the store's writer: %s", strerror(rc));
    w->started = 1;
    s->behind = 1;
    return 0;
}

/* Stops the writer once it has written what it can. */
static void store_writer_end(store *s)
{
    store_writer *w = &s->w;
    if (!w->ready) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->more);
    pthread_mutex_unlock(&w->mu);
    if (w->started) pthread_join(w->thread, NULL);
    store_free_list(w->head); /* what a failure left: lost with the process */
    store_free_list(w->written);
    w->head = w->tail = w->written = NULL;
    pthread_cond_destroy(&w->more);
    pthread_cond_destroy(&w->done);
    pthread_mutex_destroy(&w->mu);
    w->ready = 0;
    s->behind = 0;
}

int store_writer_wait(store *s) { return store_drain(s); }

static void store_bg_priority(store_bg *k, int realtime)
{
    if (!k->ready) return;
    pthread_mutex_lock(&k->mu);
    k->realtime = realtime;
    if (k->started) thread_set_priority(k->thread, realtime);
    pthread_mutex_unlock(&k->mu);
}

void store_set_priority(store *s, int realtime)
{
    if (s->w.ready) {
        pthread_mutex_lock(&s->w.mu);
        if (s->w.started) thread_set_priority(s->w.thread, realtime);
        pthread_mutex_unlock(&s->w.mu);
    }
    store_bg_priority(&s->ckpt, realtime);
    store_bg_priority(&s->sync, realtime);
}

long store_writer_waits(store *s, int *most_queued)
{
    if (most_queued) *most_queued = 0;
    if (!s->behind) return 0;
    pthread_mutex_lock(&s->w.mu);
    long n = s->w.waits;
    if (most_queued) *most_queued = s->w.most_queued;
    pthread_mutex_unlock(&s->w.mu);
    return n;
}

/* ---- Open, migrate, close ---- */

static int store_exec(store *s, const char *sql, const char *what)
{
    if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return store_fail(s, NULL, "%s", what);
    return 0;
}

/* Reads PRAGMA user_version without the prepared statements (they need the schema). */
static int store_read_version(store *s, int *version, const char *path)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        store_fail(s, NULL, "%s: reading the schema version", path);
        sqlite3_finalize(st);
        return -1;
    }
    *version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return 0;
}

/* Applies the migrations the file lacks, one transaction each. The version is read inside
 * each transaction, so a concurrent opener that migrated first is simply seen as done. */
static int store_migrate(store *s, const char *path)
{
    for (;;) {
        int version;
        char sql[64];
        if (store_exec(s, "BEGIN IMMEDIATE", path)) return -1;
        if (store_read_version(s, &version, path)) goto fail;
        if (version > STORE_SCHEMA_VERSION) {
            store_say(s, "%s was written by a newer cardroom (schema %d; this one knows up to %d)",
                      path, version, STORE_SCHEMA_VERSION);
            goto fail;
        }
        if (version < 0) {
            store_say(s, "%s has schema version %d, which no cardroom writes", path, version);
            goto fail;
        }
        if (version == STORE_SCHEMA_VERSION) {
            if (store_exec(s, "COMMIT", path)) goto fail;
            return 0;
        }
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", version + 1);
        if (sqlite3_exec(s->db, store_migrations[version], NULL, NULL, NULL) != SQLITE_OK) {
            store_fail(s, NULL, "%s: migrating schema %d to %d", path, version, version + 1);
            goto fail;
        }
        if (store_exec(s, sql, path) || store_exec(s, "COMMIT", path)) goto fail;
    }
fail:
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

/* The ids the last table, outbox message and inbox row took: a recorded insert takes the next. */
static int store_last_ids(store *s)
{
    sqlite3_stmt *st = s->stmt[ST_LAST_IDS];
    if (sqlite3_step(st) != SQLITE_ROW) return store_fail(s, st, "reading the last ids");
    for (int i = 0; i < 3; i++) s->last_id[i] = sqlite3_column_int64(st, i);
    store_reset(st);
    return 0;
}

static int store_prepare(store *s)
{
    for (int i = 0; i < ST_COUNT; i++)
        if (sqlite3_prepare_v3(s->db, store_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[i],
                               NULL) != SQLITE_OK)
            return store_fail(s, NULL, "preparing statement %d", i);
    return 0;
}

/* ---- The store's threads ----
 *
 * Besides the writer ("Writes" above), two threads of the store's own, each with a connection
 * of its own, work off the bot's event loop: the checkpointer and the syncer (below). Each
 * sleeps until a commit (the writer's or the loop's) asks for a pass (store_bg_ask), starts with
 * the first such request, and opens its connection then; several requests made while a pass
 * runs are answered by the next pass. Closing the store stops the writer first, once it has
 * written what it holds, then them. */

static void *store_bg_run(void *arg)
{
    store_bg *k = arg;
    sqlite3 *db = NULL;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (!k->want && !k->stop) pthread_cond_wait(&k->cv, &k->mu);
        if (k->stop) break;
        k->want = 0;
        pthread_mutex_unlock(&k->mu);
        if (!db) {
            if (sqlite3_open_v2(k->path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
                sqlite3_busy_timeout(db, STORE_BUSY_MS);
                sqlite3_exec(db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
            } else {
                sqlite3_close(db);
                db = NULL;
            }
        }
        k->pass(k, db);
        pthread_mutex_lock(&k->mu);
        k->passes++;
        pthread_cond_broadcast(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
    sqlite3_close(db);
    return NULL;
}

static void store_bg_init(store *s, store_bg *k, void (*pass)(store_bg *k, sqlite3 *db), const char *name)
{
    k->name = name;
    k->path = s->path;
    k->pass = pass;
    k->owner = s;
    thread_mutex_init(&k->mu, 0);
    pthread_cond_init(&k->cv, NULL);
    k->ready = 1;
}

/* Asks for a pass; the caller holds k->mu. */
static void store_bg_ask_locked(store_bg *k)
{
    if (!k->started && thread_start(&k->thread, store_bg_run, k, k->name, k->realtime) == 0) k->started = 1;
    k->want = 1;
    pthread_cond_broadcast(&k->cv);
}

static void store_bg_end(store_bg *k)
{
    if (!k->ready) return;
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    if (k->started) pthread_join(k->thread, NULL);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    k->ready = 0;
}

/* ---- Checkpoints ----
 *
 * In WAL mode a commit appends pages to the WAL, and a checkpoint copies them back into the
 * database file. SQLite's own automatic checkpoint runs inside the commit that crosses 1,000
 * pages, on the bot's event loop: a few milliseconds in which no table and no network is
 * served. Here the commit only asks (a WAL hook, which replaces the automatic one), and the
 * checkpointer makes a PASSIVE checkpoint: it never waits for the loop's connection nor makes
 * it wait, and it copies only what is committed, syncing the WAL before and the database file
 * after, so what is durable stays durable. Once a checkpoint has copied everything, the next
 * write (the writer's, mostly) starts the WAL from its beginning again. A checkpoint that fails
 * (a full disk, say) leaves the pages in the WAL, where they are safe, and is tried again at the
 * next commit; the writes meet the same fault and report it. SQLite's close of the last
 * connection checkpoints what is left. */

static void store_ckpt_pass(store_bg *k, sqlite3 *db)
{
    (void)k;
    if (db) sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
}

static int store_wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    store_bg *k = arg;
    (void)db;
    (void)name;
    if (pages < STORE_CHECKPOINT_PAGES) return SQLITE_OK;
    pthread_mutex_lock(&k->mu);
    store_bg_ask_locked(k);
    pthread_mutex_unlock(&k->mu);
    return SQLITE_OK;
}

long store_checkpoint_wait(store *s, long passes)
{
    store_bg *k = &s->ckpt;
    if (!k->ready) return 0;
    pthread_mutex_lock(&k->mu);
    while (k->passes < passes && k->started && !k->stop) pthread_cond_wait(&k->cv, &k->mu);
    long n = k->passes;
    pthread_mutex_unlock(&k->mu);
    return n;
}

/* ---- Durability ----
 *
 * A transaction begun with store_begin_lazy() commits with synchronous=NORMAL (the writer's
 * connection always does; the loop's does for such a transaction it runs at once): its pages are
 * in the WAL (in the OS's cache) once the commit is written, which a crash of the process cannot
 * undo, but only a sync of the WAL puts them on the disk, out of reach of an OS crash or a power
 * loss. (SQLite refuses to change synchronous inside a transaction, so on the loop's connection
 * it is set before BEGIN and set back to FULL after COMMIT or ROLLBACK.) The commit asks the
 * syncer, which fsyncs the WAL through its own connection's WAL file (SQLite's VFS, so a VFS in
 * between sees that sync as it sees any other) and then publishes "durable through commit K", K being the last commit
 * made before the sync began, and writes the wake-up descriptor. Commits made while one sync
 * runs are made durable by the next (group commit). Every other commit is FULL and syncs the
 * WAL itself, so it makes every commit before it durable too. A sync that fails is kept until
 * store_durable() reports it, and no later sync is tried before: the caller treats it as a
 * failed write, and its next FULL commit (a probe) is what makes the commits durable again. A
 * database in memory has nothing to sync. At open, the WAL is synced once: what a crashed
 * process left in it is durable before anything is read from it. */

/* Syncs the WAL of connection db through its VFS: SQLite's code. */
static int store_wal_sync(sqlite3 *db)
{
    sqlite3_file *wal = NULL;
    int rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal);
    if (rc != SQLITE_OK) return rc;
    if (!wal || !wal->pMethods) { /* the WAL opens with the connection's first read */
        rc = sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
        if (rc != SQLITE_OK) return rc;
        if ((rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal)) != SQLITE_OK) return rc;
        if (!wal || !wal->pMethods) return SQLITE_CANTOPEN;
    }
    return wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
}

static void store_wake(store *s)
{
    uint64_t one = 1;
    while (write(s->dur.wake_fd, &one, sizeof one) < 0 && errno == EINTR) {}
}

static void store_sync_pass(store_bg *k, sqlite3 *db)
{
    store *s = k->owner;
    pthread_mutex_lock(&k->mu);
    int64_t target = s->dur.committed;
    int go = target > s->dur.durable && !s->dur.failed;
    pthread_mutex_unlock(&k->mu);
    if (!go) return;
    int rc = db ? store_wal_sync(db) : SQLITE_CANTOPEN;
    pthread_mutex_lock(&k->mu);
    s->dur.syncs++;
    if (rc != SQLITE_OK) s->dur.failed = rc;
    else if (target > s->dur.durable) s->dur.durable = target;
    pthread_mutex_unlock(&k->mu);
    store_wake(s);
}

/* After a commit of the loop's connection: a lazy one asks the syncer; a FULL one is durable
 * with everything before it. */
static void store_committed(store *s, int lazy)
{
    s->commits++;
    pthread_mutex_lock(&s->sync.mu);
    int64_t before = s->dur.durable;
    s->dur.committed = s->commits;
    if (!lazy || s->in_memory) s->dur.durable = s->commits;
    else store_bg_ask_locked(&s->sync);
    pthread_mutex_unlock(&s->sync.mu);
    if (!lazy && before < s->commits - 1) store_wake(s); /* lazy ones before it are durable now */
}

/* The writer wrote commit: the syncer makes it durable, as any lazy commit. */
static void store_applied(store *s, int64_t commit)
{
    pthread_mutex_lock(&s->sync.mu);
    if (commit > s->dur.committed) s->dur.committed = commit;
    store_bg_ask_locked(&s->sync);
    pthread_mutex_unlock(&s->sync.mu);
}

int64_t store_commits(store *s) { return s->commits; }

int store_sync(store *s)
{
    if (store_drain(s) != 0) return -1;
    int rc = s->in_memory ? SQLITE_OK : store_wal_sync(s->db);
    if (rc != SQLITE_OK) {
        s->code = rc;
        snprintf(s->err, sizeof s->err, "%s: syncing the database's log to the disk: %s", s->path, sqlite3_errstr(rc));
        return -1;
    }
    pthread_mutex_lock(&s->sync.mu);
    s->dur.durable = s->dur.committed = s->commits;
    pthread_mutex_unlock(&s->sync.mu);
    return 0;
}

int store_durable(store *s, int64_t *through)
{
    uint64_t sink;
    while (read(s->dur.wake_fd, &sink, sizeof sink) > 0) {}
    pthread_mutex_lock(&s->sync.mu);
    *through = s->dur.durable;
    int failed = s->dur.failed;
    s->dur.failed = 0;
    pthread_mutex_unlock(&s->sync.mu);
    if (s->behind) { /* a write of the writer's that failed, once */
        pthread_mutex_lock(&s->w.mu);
        int halted = s->w.halted && !s->w.reported;
        if (halted) {
            s->w.reported = 1;
            snprintf(s->err, sizeof s->err, "%s", s->w.err);
            s->code = s->w.failed;
        }
        pthread_mutex_unlock(&s->w.mu);
        if (halted) return -1;
    }
    if (!failed) return 0;
    snprintf(s->err, sizeof s->err, "syncing the database's log to the disk: %s", sqlite3_errstr(failed));
    s->code = failed;
    return -1;
}

int store_wake_fd(const store *s) { return s->dur.wake_fd; }

long store_syncs(store *s)
{
    pthread_mutex_lock(&s->sync.mu);
    long n = s->dur.syncs;
    pthread_mutex_unlock(&s->sync.mu);
    return n;
}

static int store_threads_init(store *s, const char *path)
{
    if (!(s->path = strdup(path))) return store_say(s, "out of memory opening the store");
    const char *file = sqlite3_db_filename(s->db, "main");
    s->in_memory = !file || !*file;
    if ((s->dur.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return store_say(s, "%s: cannot make a wake-up descriptor: %s", path, strerror(errno));
    store_bg_init(s, &s->ckpt, store_ckpt_pass, "cardroom-ckpt");
    store_bg_init(s, &s->sync, store_sync_pass, "cardroom-sync");
    sqlite3_wal_hook(s->db, store_wal_hook, &s->ckpt);
    if (store_sync(s) != 0) return -1;
    return s->in_memory ? 0 : store_writer_init(s);
}

/* Opens path into a new store that already holds lock_fd (-1: none). */
static int store_open_with(store **out, const char *path, int lock_fd, char *err, size_t errlen)
{
    *out = NULL;
    store *s = calloc(1, sizeof *s);
    if (!s) {
        if (lock_fd >= 0) close(lock_fd);
        if (err && errlen) snprintf(err, errlen, "out of memory opening the store");
        return -1;
    }
    s->lock_fd = lock_fd;
    s->dur.wake_fd = -1;
    static pthread_once_t setup = PTHREAD_ONCE_INIT;
    pthread_once(&setup, store_sqlite_setup);
    if (!path) {
        store_say(s, "no database path given");
        goto fail;
    }
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        store_fail(s, NULL, "%s", path);
        goto fail;
    }
    sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
    /* journal_mode is the first statement that reads the file, so a file that is not a
     * database is refused here ("file is not a database"). ":memory:" stays "memory". */
    if (store_exec(s, "PRAGMA journal_mode = WAL", path) ||
        store_exec(s, "PRAGMA synchronous = FULL", path) ||
        store_exec(s, "PRAGMA foreign_keys = ON", path) ||
        store_exec(s, "PRAGMA secure_delete = ON", path) || store_migrate(s, path) ||
        store_prepare(s) || store_last_ids(s))
        goto fail;
    if (store_threads_init(s, path) != 0) goto fail;
    *out = s;
    return 0;
fail:
    if (err && errlen) snprintf(err, errlen, "%s", s->err);
    store_close(s);
    return -1;
}

int store_open(store **out, const char *path, char *err, size_t errlen)
{
    return store_open_with(out, path, -1, err, errlen);
}

/* The claim is flock() on a file beside the database, not a lock on the database itself:
 * SQLite's own locks are POSIX record locks, which a process loses on the first close() of
 * any descriptor of that file, so a second descriptor of ours must not touch it. An flock
 * ends with the process, so a killed bot leaves no stale claim behind. */
int store_open_exclusive(store **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    if (!path || strcmp(path, ":memory:") == 0) return store_open(out, path, err, errlen);
    char lock[4096], pid[32] = "";
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock) {
        snprintf(err, errlen, "%s: the path is too long", path);
        return -1;
    }
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open %s: %s", path, lock, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        ssize_t n = e == EWOULDBLOCK ? pread(fd, pid, sizeof pid - 1, 0) : -1;
        close(fd);
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        if (e != EWOULDBLOCK) {
            snprintf(err, errlen, "%s: cannot lock %s: %s", path, lock, strerror(e));
            return -1;
        }
        snprintf(err, errlen, "%s is in use by another cardroom%s%s%s: one bot per database (stop that one, or give "
                 "this one another database)", path, pid[0] ? " (process " : "", pid, pid[0] ? ")" : "");
        return 1;
    }
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        snprintf(err, errlen, "%s: cannot write %s: %s", path, lock, strerror(errno));
        close(fd);
        return -1;
    }
    return store_open_with(out, path, fd, err, errlen);
}

void store_close(store *s)
{
    if (!s) return;
    if (s->rec) {
        store_txn_free(s->rec);
        s->rec = NULL;
    }
    store_writer_end(s); /* writes what it holds first */
    store_bg_end(&s->ckpt);
    store_bg_end(&s->sync);
    for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(s->stmt[i]);
    sqlite3_close_v2(s->db); /* an open transaction is rolled back */
    if (s->dur.wake_fd >= 0) close(s->dur.wake_fd);
    free(s->path);
    if (s->lock_fd >= 0) close(s->lock_fd); /* the claim ends with it */
    free(s);
}

int store_schema_version(store *s)
{
    sqlite3_stmt *st = store_stmt(s, ST_VERSION, "schema version");
    if (!st || store_reading(s) != 0) return -1;
    if (sqlite3_step(st) != SQLITE_ROW) return store_fail(s, st, "reading the schema version");
    int version = sqlite3_column_int(st, 0);
    store_reset(st);
    return version;
}

/* ---- Transactions ---- */

/* Once no transaction is open, a lazy one's synchronous=NORMAL is set back to FULL. */
static void store_lazy_end(store *s)
{
    if (!s->lazy || !sqlite3_get_autocommit(s->db)) return;
    sqlite3_stmt *st = s->stmt[ST_SYNC_FULL];
    if (store_step_done(st) == 0) s->lazy = 0; /* else the next begin or commit tries again */
    sqlite3_reset(st);
}

/* BEGIN on the loop's connection (the writer holds nothing). */
static int store_begin_now(store *s, int lazy)
{
    sqlite3_stmt *st = s->stmt[ST_BEGIN];
    store_lazy_end(s);
    if (s->lazy != lazy) {
        sqlite3_stmt *sync = s->stmt[lazy ? ST_SYNC_NORMAL : ST_SYNC_FULL];
        if (store_step_done(sync)) return store_fail(s, sync, "begin: setting synchronous");
        store_reset(sync);
        s->lazy = lazy;
    }
    if (store_step_done(st)) return store_fail(s, st, "begin");
    store_reset(st);
    return 0;
}

static int store_begin_as(store *s, int lazy)
{
    if (!store_stmt(s, ST_BEGIN, "begin")) return -1;
    if (s->rec || !sqlite3_get_autocommit(s->db))
        return store_say(s, "begin: a transaction is already open (transactions do not nest)");
    memcpy(s->rec_ids, s->last_id, sizeof s->rec_ids);
    if (lazy && s->behind) { /* recorded, for the writer */
        if (!(s->rec = calloc(1, sizeof *s->rec))) return store_say(s, "begin: out of memory");
        s->txn_open = 1;
        return 0;
    }
    if (store_drain(s) != 0 || store_begin_now(s, lazy) != 0) return -1;
    s->txn_open = 1;
    return 0;
}

int store_begin(store *s) { return store_begin_as(s, 0); }

int store_begin_lazy(store *s) { return store_begin_as(s, 1); }

/* If the commit fails the transaction may still be open: call store_rollback(). */
int store_commit(store *s)
{
    sqlite3_stmt *st = store_stmt(s, ST_COMMIT, "commit");
    if (!st) return -1;
    if (s->rec) {
        store_txn *t = s->rec;
        if (t->dead) return store_dead(s);
        s->rec = NULL;
        s->txn_open = 0;
        t->commit = ++s->commits;
        store_enqueue(s, t);
        return 0;
    }
    if (sqlite3_get_autocommit(s->db)) return store_say(s, "commit: no transaction is open");
    int lazy = s->lazy;
    if (store_step_done(st)) {
        store_fail(s, st, "commit");
        store_lazy_end(s);
        return -1;
    }
    store_reset(st);
    store_lazy_end(s);
    s->txn_open = 0;
    store_committed(s, lazy);
    return 0;
}

/* Succeeds when no transaction is open: SQLite rolls back by itself after some errors (disk
 * full, I/O), and a cleanup path should not have to know which. */
int store_rollback(store *s)
{
    sqlite3_stmt *st = store_stmt(s, ST_ROLLBACK, "rollback");
    if (!st) return -1;
    if (s->txn_open) memcpy(s->last_id, s->rec_ids, sizeof s->last_id); /* the ids it took are free again */
    s->txn_open = 0;
    if (s->rec) {
        store_txn_free(s->rec);
        s->rec = NULL;
        return 0;
    }
    if (!sqlite3_get_autocommit(s->db) && store_step_done(st)) return store_fail(s, st, "rollback");
    store_reset(st);
    store_lazy_end(s);
    return 0;
}

int store_probe(store *s, int64_t now)
{
    char value[32];
    snprintf(value, sizeof value, "%lld", (long long)now);
    if (store_retry(s) != 0 || store_begin(s) != 0) return -1;
    if (store_kv_put(s, "store", "probe", value) != 0 || store_commit(s) != 0) {
        char why[STORE_ERR_MAX];
        int code = s->code;
        snprintf(why, sizeof why, "%s", s->err);
        store_rollback(s);
        snprintf(s->err, sizeof s->err, "%s", why); /* the failure, not the rollback's word on it */
        s->code = code;
        return -1;
    }
    return 0;
}

/* ---- Adapter positions ---- */

int store_position_get(store *s, const char *adapter, char *buf, size_t len)
{
    sqlite3_stmt *st = store_stmt(s, ST_POSITION_GET, "position get");
    if (!st || store_reading(s) != 0) return -1;
    if (!buf || len == 0) return store_say(s, "position get: no buffer");
    if (store_bind_text(st, 1, adapter)) return store_fail(s, st, "position get");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        store_reset(st);
        buf[0] = '\0';
        return 1;
    }
    if (rc != SQLITE_ROW) return store_fail(s, st, "position get");
    /* A cut position would resume from the wrong place, so it is an error, not a cut. */
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    if (n >= len) {
        store_reset(st);
        return store_say(s, "position get: the position is %zu bytes, the buffer holds %zu", n,
                         len - 1);
    }
    store_copy_text(buf, len, st, 0);
    store_reset(st);
    return 0;
}

int store_position_each(store *s, const char *prefix, int (*fn)(void *ctx, const char *name, const char *position),
                        void *ctx)
{
    sqlite3_stmt *st = store_stmt(s, ST_POSITION_EACH, "position each");
    if (!st || store_reading(s) != 0) return -1;
    if (store_bind_text(st, 1, prefix)) return store_fail(s, st, "position each");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0), *pos = (const char *)sqlite3_column_text(st, 1);
        if (fn(ctx, name ? name : "", pos ? pos : "") != 0) break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return store_fail(s, st, "position each");
    store_reset(st);
    return 0;
}

/* ---- Keyed values ---- */

typedef struct {
    const char *ns, *key;
    char **value;
} store_kv_ask;

/* store_recorded_last(): the last of t's writes of the key, 1 a put (its value in *value, which
 * it replaces; NULL if out of memory), 2 a delete, 0 none. */
static int store_kv_recorded(const store_txn *t, void *ctx)
{
    const store_kv_ask *a = ctx;
    const char *v = NULL;
    int found = 0;
    for (int i = 0; t->nkv && i < t->nops; i++) {
        const store_op *op = &t->ops[i];
        if ((op->st != ST_KV_PUT && op->st != ST_KV_DEL) || !op->v[0].p || !op->v[1].p ||
            strcmp(op->v[0].p, a->ns) != 0 || strcmp(op->v[1].p, a->key) != 0)
            continue;
        found = op->st == ST_KV_PUT ? 1 : 2;
        v = found == 1 && op->v[2].p ? op->v[2].p : "";
    }
    if (found) {
        free(*a->value);
        *a->value = found == 1 ? strdup(v) : NULL;
    }
    return found;
}

int store_kv_get(store *s, const char *ns, const char *key, char **value)
{
    sqlite3_stmt *st = store_stmt(s, ST_KV_GET, "kv get");
    *value = NULL;
    if (!st) return -1;
    if (s->rec && s->rec->dead) return store_dead(s);
    /* The core reads keyed values in the middle of its transactions (a player's settings): as
     * for hand seeds, a value the store was given and has not written yet is found among the
     * recorded writes (the last one wins), so the read does not wait for the writer. */
    store_kv_ask ask = {ns, key, value};
    int found = ns && key ? store_recorded_last(s, store_kv_recorded, &ask) : 0;
    if (found == 1) return *value ? 0 : store_say(s, "kv get: out of memory");
    if (found == 2) return 1;
    if (store_bind_text(st, 1, ns) || store_bind_text(st, 2, key)) return store_fail(s, st, "kv get");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        store_reset(st);
        return 1;
    }
    if (rc != SQLITE_ROW) return store_fail(s, st, "kv get");
    const char *v = (const char *)sqlite3_column_text(st, 0);
    *value = strdup(v ? v : "");
    store_reset(st);
    return *value ? 0 : store_say(s, "kv get: out of memory");
}

int store_kv_put(store *s, const char *ns, const char *key, const char *value)
{
    store_op op = store_op_of(ST_KV_PUT, "kv put", 0, 0);
    op.fail_val = 0; /* the namespace */
    store_text(&op, ns);
    store_text(&op, key);
    store_text(&op, value);
    return store_write(s, &op, "kv put");
}

int store_kv_del(store *s, const char *ns, const char *key)
{
    store_op op = store_op_of(ST_KV_DEL, "kv del", 0, 0);
    op.fail_val = 0;
    store_text(&op, ns);
    store_text(&op, key);
    return store_write(s, &op, "kv del");
}

int store_kv_each(store *s, const char *ns, int (*fn)(void *ctx, const char *key, const char *value), void *ctx)
{
    sqlite3_stmt *st = store_stmt(s, ST_KV_EACH, "kv each");
    if (!st || store_reading(s) != 0) return -1;
    if (store_bind_text(st, 1, ns)) return store_fail(s, st, "kv each");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0), *v = (const char *)sqlite3_column_text(st, 1);
        if (fn(ctx, k ? k : "", v ? v : "") != 0) break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return store_fail(s, st, "kv each");
    store_reset(st);
    return 0;
}

int store_position_set(store *s, const char *adapter, const char *position)
{
    store_op op = store_op_of(ST_POSITION_SET, "position set", 0, 0);
    store_text(&op, adapter);
    store_text(&op, position);
    return store_write(s, &op, "position set");
}

/* ---- Tables ---- */

int store_table_create(store *s, const char *net, const char *room, const char *game,
                       const char *creator, int64_t now, int64_t *id)
{
    store_op op = store_op_of(ST_TABLE_CREATE, "table create", 0, 0);
    store_text(&op, net);
    store_text(&op, room);
    store_text(&op, game);
    store_text(&op, creator);
    store_int(&op, now);
    store_id_bind(s, &op, STORE_ID_TABLE);
    if (store_write(s, &op, "table create") != 0) return -1;
    int64_t took = store_took_id(s, &op, STORE_ID_TABLE);
    if (id) *id = took;
    return 0;
}

int store_table_close(store *s, int64_t id, const char *reason, int64_t now)
{
    store_op op = store_op_of(ST_TABLE_CLOSE, "table close (table %lld)", id, 0);
    store_must_change(&op, "table close: table %lld does not exist or is already closed");
    store_int(&op, id);
    store_int(&op, now);
    store_text(&op, reason);
    return store_write(s, &op, "table close");
}

int store_table_touch(store *s, int64_t id, int64_t now)
{
    store_op op = store_op_of(ST_TABLE_TOUCH, "table touch (table %lld)", id, 0);
    store_must_change(&op, "table touch: table %lld does not exist");
    store_int(&op, id);
    store_int(&op, now);
    return store_write(s, &op, "table touch");
}

typedef struct {
    int (*fn)(void *ctx, const store_table *t);
    void *ctx;
} store_table_call;

static int store_table_row(sqlite3_stmt *st, void *call)
{
    const store_table_call *c = call;
    store_table t;
    t.id = sqlite3_column_int64(st, 0);
    store_copy_text(t.net, sizeof t.net, st, 1);
    store_copy_text(t.room, sizeof t.room, st, 2);
    store_copy_text(t.game, sizeof t.game, st, 3);
    store_copy_text(t.creator, sizeof t.creator, st, 4);
    t.created = sqlite3_column_int64(st, 5);
    t.touched = sqlite3_column_int64(st, 6);
    return c->fn(c->ctx, &t);
}

int store_tables_open(store *s, int (*fn)(void *ctx, const store_table *t), void *ctx)
{
    sqlite3_stmt *st = store_stmt(s, ST_TABLES_OPEN, "tables open");
    if (!st || store_reading(s) != 0) return -1;
    store_table_call call = {fn, ctx};
    return store_each(s, st, store_table_row, &call, "tables open");
}

/* ---- Journal ---- */

int store_journal_add(store *s, int64_t table, int64_t seq, const char *entry)
{
    store_op op = store_op_of(ST_JOURNAL_ADD, "journal add (table %lld, seq %lld)", table, seq);
    store_int(&op, table);
    store_int(&op, seq);
    store_text(&op, entry);
    return store_write(s, &op, "journal add");
}

typedef struct {
    int (*fn)(void *ctx, int64_t seq, const char *entry);
    void *ctx;
} store_journal_call;

static int store_journal_row(sqlite3_stmt *st, void *call)
{
    const store_journal_call *c = call;
    const char *entry = (const char *)sqlite3_column_text(st, 1);
    return c->fn(c->ctx, sqlite3_column_int64(st, 0), entry ? entry : "");
}

int store_journal_each(store *s, int64_t table,
                       int (*fn)(void *ctx, int64_t seq, const char *entry), void *ctx)
{
    sqlite3_stmt *st = store_stmt(s, ST_JOURNAL_EACH, "journal each");
    if (!st || store_reading(s) != 0) return -1;
    if (sqlite3_bind_int64(st, 1, table))
        return store_fail(s, st, "journal each (table %lld)", (long long)table);
    store_journal_call call = {fn, ctx};
    return store_each(s, st, store_journal_row, &call, "journal each");
}

/* ---- Hand seeds ---- */

int store_hand_add(store *s, int64_t table, int hand_no, const uint8_t seed[STORE_SEED_BYTES])
{
    store_op op = store_op_of(ST_HAND_ADD, "hand add (table %lld, hand %lld)", table, hand_no);
    store_int(&op, table);
    store_int(&op, hand_no);
    store_blob(&op, seed, STORE_SEED_BYTES);
    return store_write(s, &op, "hand add");
}

typedef struct {
    int64_t table;
    int hand_no;
    uint8_t *seed;
} store_seed_ask;

/* store_recorded_last(): 1 if t adds the seed of the hand (copied), else 0. */
static int store_seed_recorded(const store_txn *t, void *ctx)
{
    const store_seed_ask *a = ctx;
    for (int i = 0; t->nseeds && i < t->nops; i++) {
        const store_op *op = &t->ops[i];
        if (op->st == ST_HAND_ADD && op->v[0].i == a->table && op->v[1].i == a->hand_no &&
            op->v[2].kind == SQLITE_BLOB && op->v[2].n == STORE_SEED_BYTES) {
            memcpy(a->seed, op->v[2].p, STORE_SEED_BYTES);
            return 1;
        }
    }
    return 0;
}

int store_hand_seed(store *s, int64_t table, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    sqlite3_stmt *st = store_stmt(s, ST_HAND_SEED, "hand seed");
    if (!st) return -1;
    /* A deal reads its seed back (a table that does a task again deals again), often in the
     * transaction that wrote it: a seed the store was given and has not written yet is found
     * among the recorded writes, which is all a read would wait for (hand seeds are only ever
     * added), without waiting. */
    if (s->rec && s->rec->dead) return store_dead(s);
    store_seed_ask ask = {table, hand_no, seed};
    if (store_recorded_last(s, store_seed_recorded, &ask)) return 0;
    if (sqlite3_bind_int64(st, 1, table) || sqlite3_bind_int(st, 2, hand_no))
        return store_fail(s, st, "hand seed");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        store_reset(st);
        return 1;
    }
    if (rc != SQLITE_ROW)
        return store_fail(s, st, "hand seed (table %lld, hand %d)", (long long)table, hand_no);
    const void *blob = sqlite3_column_blob(st, 0);
    int n = sqlite3_column_bytes(st, 0);
    if (!blob || n != STORE_SEED_BYTES) {
        store_reset(st);
        return store_say(s, "hand seed (table %lld, hand %d): the stored seed is %d bytes, "
                            "not %d", (long long)table, hand_no, n, STORE_SEED_BYTES);
    }
    memcpy(seed, blob, STORE_SEED_BYTES);
    store_reset(st);
    return 0;
}

/* ---- Outbox ---- */

int store_outbox_add(store *s, const char *net, const char *room, const char *user,
                     const char *mention, int notice, const char *text, int64_t *id)
{
    store_op op = store_op_of(ST_OUTBOX_ADD, "outbox add", 0, 0);
    store_text(&op, net);
    store_text(&op, room);
    store_text(&op, user ? user : "");
    store_text(&op, mention ? mention : "");
    store_text(&op, text);
    store_int(&op, notice != 0);
    store_id_bind(s, &op, STORE_ID_OUTBOX);
    if (store_write(s, &op, "outbox add") != 0) return -1;
    int64_t took = store_took_id(s, &op, STORE_ID_OUTBOX);
    if (id) *id = took;
    return 0;
}

#define STORE_MSG_ENOUGH (-1000) /* store_msg_row: the limit is reached (no callback returns it) */

static int store_id_order(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int (*fn)(void *ctx, const store_msg *m);
    void *ctx;
    const int64_t *skip; /* messages left out (store_outbox_pending), in order */
    int nskip;
    int left;            /* messages still to hand to fn (-1: no limit); 0 stops the reading */
} store_msg_call;

static int store_msg_row(sqlite3_stmt *st, void *call)
{
    store_msg_call *c = call;
    store_msg m;
    m.id = sqlite3_column_int64(st, 0);
    if (c->nskip && bsearch(&m.id, c->skip, (size_t)c->nskip, sizeof *c->skip, store_id_order)) return 0;
    if (c->left == 0) return STORE_MSG_ENOUGH;
    store_copy_text(m.net, sizeof m.net, st, 1);
    store_copy_text(m.room, sizeof m.room, st, 2);
    store_copy_text(m.user, sizeof m.user, st, 3);
    store_copy_text(m.mention, sizeof m.mention, st, 4);
    const unsigned char *text = sqlite3_column_text(st, 5), *wire = sqlite3_column_text(st, 7);
    /* The struct's text is not const; SQLite's buffer is only lent for the callback. */
    m.text = text ? (char *)text : (char *)"";
    m.notice = sqlite3_column_int(st, 6);
    m.wire = wire ? (char *)wire : NULL;
    if (c->left > 0) c->left--;
    return c->fn(c->ctx, &m);
}

int store_outbox_pending(store *s, const char *net, int limit,
                         int (*fn)(void *ctx, const store_msg *m), void *ctx)
{
    sqlite3_stmt *st = store_stmt(s, ST_OUTBOX_PENDING, "outbox pending");
    if (!st || (s->rec && store_direct(s) != 0)) return -1;
    /* It does not wait for the writer: the messages marked sent by a recorded transaction are
     * left out, read before the file is, so none the writer writes meanwhile slips through. A
     * message queued by a transaction still recorded is not read yet, and would not be offered
     * anyway: it waits for the disk (store_durable). A merge changes the text of the message it
     * keeps, so with one recorded the read waits for the writer (merges are rare: they happen
     * only while a network throttles the bot). */
    int64_t *skip = NULL;
    int nskip = 0, done = 0, merges = 0;
    if (s->behind && sqlite3_get_autocommit(s->db)) {
        pthread_mutex_lock(&s->w.mu);
        for (const store_txn *t = s->w.head; t; t = t->next) {
            done += t->ndone;
            merges += t->nmerges;
        }
        if (done && !merges && (skip = malloc((size_t)done * sizeof *skip)))
            for (const store_txn *t = s->w.head; t; t = t->next)
                for (int i = 0; t->ndone && i < t->nops; i++)
                    if (t->ops[i].st == ST_OUTBOX_DONE) skip[nskip++] = t->ops[i].v[0].i;
        pthread_mutex_unlock(&s->w.mu);
        if (merges && store_drain(s) != 0) return -1;
        if (done && !merges && !skip) return store_say(s, "outbox pending: out of memory");
        if (nskip) qsort(skip, (size_t)nskip, sizeof *skip, store_id_order);
    }
    /* LIMIT -1 is SQLite's "no limit". The messages left out count in SQLite's limit, so it reads
     * as many more, and the callback counts the limit itself: a backlog of deliveries the writer
     * holds must not hide the messages behind it. */
    if (store_bind_text(st, 1, net) || sqlite3_bind_int(st, 2, limit > 0 ? limit + nskip : -1)) {
        free(skip);
        return store_fail(s, st, "outbox pending");
    }
    store_msg_call call = {fn, ctx, skip, nskip, limit > 0 ? limit : -1};
    int rc = store_each(s, st, store_msg_row, &call, "outbox pending");
    free(skip);
    return rc == STORE_MSG_ENOUGH ? 0 : rc;
}

int store_outbox_done(store *s, int64_t id)
{
    store_op op = store_op_of(ST_OUTBOX_DONE, "outbox done (message %lld)", id, 0);
    store_must_change(&op, "outbox done: message %lld does not exist");
    store_int(&op, id);
    return store_write(s, &op, "outbox done");
}

int store_outbox_wire(store *s, int64_t id, const char *wire)
{
    store_op op = store_op_of(ST_OUTBOX_WIRE, "outbox wire (message %lld)", id, 0);
    store_must_change(&op, "outbox wire: message %lld is not waiting to be sent");
    store_int(&op, id);
    store_text(&op, wire);
    return store_write(s, &op, "outbox wire");
}

int store_outbox_merge(store *s, int64_t into, const char *text, const char *mention, const int64_t *ids, int n)
{
    store_op op = store_op_of(ST_OUTBOX_MERGE_INTO, "outbox merge (into message %lld)", into, 0);
    store_must_change(&op, "outbox merge: message %lld was sent or tried already");
    store_int(&op, into);
    store_text(&op, text);
    store_text(&op, mention);
    if (store_write(s, &op, "outbox merge") != 0) return -1;
    for (int i = 0; i < n; i++) {
        op = store_op_of(ST_OUTBOX_MERGED, "outbox merge (message %lld)", ids[i], 0);
        store_must_change(&op, "outbox merge: message %lld was sent or tried already");
        store_int(&op, ids[i]);
        store_int(&op, into);
        if (store_write(s, &op, "outbox merge") != 0) return -1;
    }
    return 0;
}

int store_outbox_all(store *s, int (*fn)(void *ctx, const store_msg *m), void *ctx)
{
    sqlite3_stmt *st = store_stmt(s, ST_OUTBOX_ALL, "outbox all");
    if (!st || store_reading(s) != 0) return -1;
    store_msg_call call = {fn, ctx, NULL, 0, -1};
    return store_each(s, st, store_msg_row, &call, "outbox all");
}

/* ---- Pruning ---- */

#define PRUNE_PICK_MAX 256

/* Prunes on connection db (statements stmt), in its open transaction: the work of store_prune(),
 * for the loop's connection and the writer's alike. */
static int store_prune_on(sqlite3 *db, sqlite3_stmt *const *stmt, int64_t closed_before, int64_t sent_before, int limit,
                          int *tables, int *messages, char *err, size_t errlen, int *code)
{
    int64_t ids[PRUNE_PICK_MAX];
    int n = 0, rc;
    if (limit < 1) limit = 1;
    if (limit > PRUNE_PICK_MAX) limit = PRUNE_PICK_MAX;
    *tables = *messages = 0;
    sqlite3_stmt *pick = stmt[ST_PRUNE_PICK];
    if ((rc = sqlite3_bind_int64(pick, 1, closed_before)) == SQLITE_OK && (rc = sqlite3_bind_int(pick, 2, limit)) == SQLITE_OK)
        while ((rc = sqlite3_step(pick)) == SQLITE_ROW && n < limit) ids[n++] = sqlite3_column_int64(pick, 0);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        snprintf(err, errlen, "prune: finding finished tables: %s", sqlite3_errmsg(db));
        *code = sqlite3_extended_errcode(db);
    }
    sqlite3_reset(pick);
    sqlite3_clear_bindings(pick);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return -1;
    for (int i = 0; i < n; i++) {
        store_op j = store_op_of(ST_PRUNE_JOURNAL, "prune: the journal of table %lld", ids[i], 0);
        store_op h = store_op_of(ST_PRUNE_HANDS, "prune: the hand seeds of table %lld", ids[i], 0);
        store_int(&j, ids[i]);
        store_int(&h, ids[i]);
        if (store_op_run(db, stmt, &j, err, errlen, code) != 0 || store_op_run(db, stmt, &h, err, errlen, code) != 0)
            return -1;
    }
    *tables = n;
    store_op o = store_op_of(ST_PRUNE_OUTBOX, "prune: delivered messages", 0, 0);
    store_int(&o, sent_before);
    store_int(&o, (int64_t)limit * 64);
    if (store_op_run(db, stmt, &o, err, errlen, code) != 0) return -1;
    *messages = sqlite3_changes(db);
    return 0;
}

int store_prune(store *s, int64_t closed_before, int64_t sent_before, int limit, int *tables, int *messages)
{
    *tables = *messages = 0;
    if (!store_stmt(s, ST_PRUNE_PICK, "prune")) return -1;
    if (s->rec && !s->rec->dead) { /* the writer prunes; what the last prune it made dropped */
        store_op op = store_op_of(ST_PRUNE_PICK, "prune", 0, 0);
        store_int(&op, closed_before);
        store_int(&op, sent_before);
        store_int(&op, limit);
        if (store_record(s, &op) != 0) return -1;
        pthread_mutex_lock(&s->w.mu);
        *tables = s->w.pruned_tables;
        *messages = s->w.pruned_messages;
        s->w.pruned_tables = s->w.pruned_messages = 0;
        pthread_mutex_unlock(&s->w.mu);
        return 0;
    }
    if (store_reading(s) != 0) return -1;
    return store_prune_on(s->db, s->stmt, closed_before, sent_before, limit, tables, messages, s->err, sizeof s->err,
                          &s->code);
}

/* ---- Standings ---- */

int store_standing_add(store *s, const char *net, const char *room, const store_standing *delta)
{
    if (!delta) return store_say(s, "standing add: no row given");
    store_op op = store_op_of(ST_STANDING_ADD, "standing add", 0, 0);
    store_text(&op, net);
    store_text(&op, room);
    store_text(&op, delta->user);
    store_int(&op, delta->matches);
    store_int(&op, delta->matches_won);
    store_int(&op, delta->made);
    store_int(&op, delta->failed);
    store_int(&op, delta->tokens);
    store_int(&op, delta->hands);
    return store_write(s, &op, "standing add");
}

static void store_standing_read(sqlite3_stmt *st, store_standing *row)
{
    store_copy_text(row->user, sizeof row->user, st, 0);
    row->matches = sqlite3_column_int(st, 1);
    row->matches_won = sqlite3_column_int(st, 2);
    row->made = sqlite3_column_int(st, 3);
    row->failed = sqlite3_column_int(st, 4);
    row->tokens = sqlite3_column_int(st, 5);
    row->hands = sqlite3_column_int(st, 6);
}

int store_standing_get(store *s, const char *net, const char *room, const char *user,
                       store_standing *out)
{
    sqlite3_stmt *st = store_stmt(s, ST_STANDING_GET, "standing get");
    if (!st || store_reading(s) != 0) return -1;
    if (store_bind_text(st, 1, net) || store_bind_text(st, 2, room) ||
        store_bind_text(st, 3, user))
        return store_fail(s, st, "standing get");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        store_reset(st);
        return 1;
    }
    if (rc != SQLITE_ROW) return store_fail(s, st, "standing get");
    store_standing_read(st, out);
    store_reset(st);
    return 0;
}

typedef struct {
    int (*fn)(void *ctx, const store_standing *row);
    void *ctx;
} store_standing_call;

static int store_standing_row(sqlite3_stmt *st, void *call)
{
    const store_standing_call *c = call;
    store_standing row;
    store_standing_read(st, &row);
    return c->fn(c->ctx, &row);
}

int store_standings_top(store *s, const char *net, const char *room, int limit,
                        int (*fn)(void *ctx, const store_standing *row), void *ctx)
{
    sqlite3_stmt *st = store_stmt(s, ST_STANDINGS_TOP, "standings top");
    if (!st || store_reading(s) != 0) return -1;
    if (store_bind_text(st, 1, net) || store_bind_text(st, 2, room) ||
        sqlite3_bind_int(st, 3, limit > 0 ? limit : -1))
        return store_fail(s, st, "standings top");
    store_standing_call call = {fn, ctx};
    return store_each(s, st, store_standing_row, &call, "standings top");
}

/* ---- Inbox ---- */

int store_inbox_add(store *s, const store_inbox *row, int64_t *id)
{
    store_op op = store_op_of(ST_INBOX_ADD, "inbox add (table %lld)", row->table, 0);
    store_int(&op, row->table);
    store_text(&op, row->net);
    store_text(&op, row->what);
    store_text(&op, row->room);
    store_text(&op, row->user);
    store_text(&op, row->text ? row->text : "");
    store_int(&op, row->is_private);
    store_int(&op, row->moderator);
    store_text(&op, row->origin);
    store_text(&op, row->renamed_to);
    store_id_bind(s, &op, STORE_ID_INBOX);
    if (store_write(s, &op, "inbox add") != 0) return -1;
    int64_t took = store_took_id(s, &op, STORE_ID_INBOX);
    if (id) *id = took;
    return 0;
}

/* Runs a statement bound to (id, value) or (id) that must change one row. */
static int store_inbox_change(store *s, enum store_stmt_id which, int64_t id, int64_t value, const char *what)
{
    int move = which == ST_INBOX_MOVE;
    store_op op = store_op_of(which, move ? "inbox move (row %lld)" : "inbox done (row %lld)", id, 0);
    store_must_change(&op, move ? "inbox move: row %lld is not in the inbox" : "inbox done: row %lld is not in the inbox");
    store_int(&op, id);
    if (move) store_int(&op, value);
    return store_write(s, &op, what);
}

int store_inbox_move(store *s, int64_t id, int64_t table)
{
    return store_inbox_change(s, ST_INBOX_MOVE, id, table, "inbox move");
}

int store_inbox_done(store *s, int64_t id) { return store_inbox_change(s, ST_INBOX_DONE, id, 0, "inbox done"); }

typedef struct {
    int (*fn)(void *ctx, const store_inbox *row);
    void *ctx;
} store_inbox_call;

static int store_inbox_row(sqlite3_stmt *st, void *call)
{
    const store_inbox_call *c = call;
    store_inbox row;
    row.id = sqlite3_column_int64(st, 0);
    row.table = sqlite3_column_int64(st, 1);
    store_copy_text(row.net, sizeof row.net, st, 2);
    store_copy_text(row.what, sizeof row.what, st, 3);
    store_copy_text(row.room, sizeof row.room, st, 4);
    store_copy_text(row.user, sizeof row.user, st, 5);
    const char *text = (const char *)sqlite3_column_text(st, 6);
    row.text = text ? text : "";
    row.is_private = sqlite3_column_int(st, 7);
    row.moderator = sqlite3_column_int(st, 8);
    store_copy_text(row.origin, sizeof row.origin, st, 9);
    store_copy_text(row.renamed_to, sizeof row.renamed_to, st, 10);
    return c->fn(c->ctx, &row);
}

int store_inbox_each(store *s, int (*fn)(void *ctx, const store_inbox *row), void *ctx)
{
    sqlite3_stmt *st = store_stmt(s, ST_INBOX_EACH, "inbox each");
    if (!st || store_reading(s) != 0) return -1;
    store_inbox_call call = {fn, ctx};
    return store_each(s, st, store_inbox_row, &call, "inbox each");
}

/* ---- Ignored users ---- */

int store_ignore_add(store *s, const char *net, const char *user, const char *by, int64_t now)
{
    store_op op = store_op_of(ST_IGNORE_ADD, "ignore add", 0, 0);
    store_text(&op, net);
    store_text(&op, user);
    store_text(&op, by);
    store_int(&op, now);
    int changed;
    return store_write_now(s, &op, "ignore add", &changed) != 0 ? -1 : !changed;
}

int store_ignore_del(store *s, const char *net, const char *user)
{
    store_op op = store_op_of(ST_IGNORE_DEL, "ignore del", 0, 0);
    store_text(&op, net);
    store_text(&op, user);
    int changed;
    return store_write_now(s, &op, "ignore del", &changed) != 0 ? -1 : !changed;
}

typedef struct {
    int (*fn)(void *ctx, const char *net, const char *user);
    void *ctx;
} store_ignored_call;

static int store_ignored_row(sqlite3_stmt *st, void *call)
{
    const store_ignored_call *c = call;
    const char *net = (const char *)sqlite3_column_text(st, 0), *user = (const char *)sqlite3_column_text(st, 1);
    return c->fn(c->ctx, net ? net : "", user ? user : "");
}

int store_ignored_each(store *s, int (*fn)(void *ctx, const char *net, const char *user), void *ctx)
{
    sqlite3_stmt *st = store_stmt(s, ST_IGNORED_EACH, "ignored each");
    if (!st || store_reading(s) != 0) return -1;
    store_ignored_call call = {fn, ctx};
    return store_each(s, st, store_ignored_row, &call, "ignored each");
}
