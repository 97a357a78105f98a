/* test_faults.c — the bot survives storage faults, and one bot owns one database.
 *
 * Injected faults: a SQLite VFS shim (test_vfs.h) sits between SQLite and the real file system
 * of this process and counts every write, sync and truncate of every file (the database, its
 * WAL, a journal), on every thread: the syncs of the store's syncer, which make the core's
 * commits durable in the background, are fault points like the loop's own writes (one that
 * fails suspends the core as a failed commit does, and nothing of the commits it was to make
 * durable may have gone out). A scripted game (alice with three computer players, a whole match, with
 * chat, private commands and standings) runs through the console adapter in this process,
 * once without a fault as the reference, and then once per write: the run with fault point N
 * makes the Nth write fail, and the one after it too (so the first retry fails and the pause
 * grows), with SQLITE_FULL, SQLITE_IOERR or SQLITE_READONLY in turn. After each run the file
 * must hold exactly what the reference holds (tables, journal, hand seeds, outbox, standings,
 * the console's position, an empty inbox), everything must be marked sent, and what the
 * console printed must be the reference's output with nothing but the bot's two notices added
 * (once it cannot write, once it can again): no message went out whose batch did not commit,
 * and none twice. A fault while the store is being opened ends the run with status 1; the run
 * is then started again on the same file, as a supervisor would. The bot has its two worker
 * threads, so moves wait for the Caps judge in the inbox: the writes of the transactions that
 * hold events and follow-ups there, and of those that do them once a worker has answered, fail
 * in turn too (a search may be out on a worker then), and the rebuild must take what waited
 * from the inbox. CARDROOM_FAULT_STEP=K tries every Kth fault point only (default 1: all of
 * them).
 *
 * A lock held by another process: `cardroom console` runs as a child; this process takes the
 * database's write lock (BEGIN IMMEDIATE) between two script lines; the child's next write
 * waits out SQLite's busy timeout and fails with SQLITE_BUSY; the child tells the room, keeps
 * the line, and once the lock is let go (when its notice is read) it goes on, and the file
 * ends as the reference's.
 *
 * One bot per database: a second `cardroom console` on a database another one holds exits
 * with status 3 and names the holder's process; once the first has stopped, it starts. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "console.h"
#include "core.h"
#include "store.h"
#include "test_dirs.h"
#include "test_durable.h"
#include "test_vfs.h"

#ifndef CARDROOM_BIN
#error "build with -DCARDROOM_BIN=\"/path/to/build/cardroom\""
#endif

#define SEED 7
#define FAIL_IN_A_ROW 2   /* the failing write and the first retry's, in the game */
#define NOTICE_DOWN "I cannot write to my database ("
#define NOTICE_UP "My database works again"

TestSuite(faults, .timeout = 1800);

extern char **environ;

/* ---- the faults, through the VFS shim (test_vfs.h) ---- */

static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER; /* the store's threads sync too */
static struct {
    int ops;              /* writes, syncs and truncates so far */
    int fail_at;          /* the first of them to fail; 0: none */
    int failed;           /* how many have failed */
    int in_a_row;         /* how many fail, from fail_at on */
    int code;             /* SQLITE_FULL, SQLITE_IOERR or SQLITE_READONLY */
    int in_background;    /* the first to fail was a sync of one of the store's threads */
} fault;
static pthread_t fault_loop; /* the thread the bot's loop runs on: the test's */

/* One more write-like call: SQLITE_OK, or the injected failure (write: the plain code, or
 * SQLITE_IOERR_WRITE; sync: SQLITE_IOERR_FSYNC for an I/O error). */
static int fault_next(vfs_op op, const char *name, int io_code)
{
    (void)name;
    pthread_mutex_lock(&fault_mu);
    int rc = SQLITE_OK;
    fault.ops++;
    if (fault.fail_at && fault.ops >= fault.fail_at && fault.failed < fault.in_a_row) {
        if (!fault.failed++) fault.in_background = op == VFS_SYNC && !pthread_equal(pthread_self(), fault_loop);
        rc = fault.code == SQLITE_IOERR ? io_code : fault.code;
    }
    pthread_mutex_unlock(&fault_mu);
    return rc;
}

/* Makes the shim the default VFS of this process, counting with fault_next. */
static void shim_install(void)
{
    vfs_install();
    vfs_hook = fault_next;
    fault_loop = pthread_self();
}

/* ---- the scripted game ---- */

/* alice plays a match of one token each with three computer players (seed 7 makes it one
 * hand): she passes three times (the bidding asks her that often) and plays every card of the
 * pack privately, three times over (a bare card is taken when it is legal), among chat, table
 * views, help and standings; then a second table of computers alone opens and plays out in the
 * same room. */
static char *game_script(void)
{
    static const char *const ranks[] = {"7", "8", "9", "10", "J", "Q", "K", "A"};
    static const char *const suits[] = {"S", "H", "D", "C"};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    fputs("alice> !new 304\nalice> !join 1\nbob> hello\nalice> !bot\nalice> !bot\nalice> !bot\n"
          "alice> !set start_tokens 1\nalice> !start\nalice>> !hand\nbob> !table\nalice> !pass\nalice> !pass\n"
          "alice> !pass\n",
          f);
    for (int round = 0; round < 3; round++) {
        for (int s = 0; s < 4; s++)
            for (int r = 0; r < 8; r++) fprintf(f, "alice>> %s%s\n", ranks[r], suits[s]);
        fputs("carol>> !help bid\n", f);
    }
    fputs("alice> !standings\nalice> !standings alice\ncarol> !abort\ncarol> !new 304\ncarol> !bot\ncarol> !bot\ncarol> !bot\n"
          "carol> !bot\ncarol> !set start_tokens 1\ncarol> !start\nbob> bye\n",
          f);
    fclose(f);
    return text;
}

/* A run of the console adapter in this process: its exit status, and what it printed. */
typedef struct {
    int rc;
    char *out, *err;
} run;

static void run_free(run *r)
{
    free(r->out);
    free(r->err);
}

/* The script (not empty) on db, the timers off, the first retry of a failing store at once. */
static run run_console(const char *db, const char *script)
{
    cfg c;
    cfg_defaults(&c);
    c.remind_after = c.idle_takeover = c.table_idle_close = 0;
    size_t olen = 0, elen = 0;
    run r = {0};
    FILE *in = fmemopen((void *)script, strlen(script), "r"), *out = open_memstream(&r.out, &olen),
         *err = open_memstream(&r.err, &elen);
    cr_assert(in && out && err);
    console_options o = {.script = 1, .fixed_seed = 1, .seed = SEED, .db = db, .in = in, .out = out, .err = err,
                         .retry_ms = 1};
    r.rc = console_run(&c, &o);
    fclose(in);
    fclose(out);
    fclose(err);
    return r;
}

/* run_console(), started again (as a supervisor would) while it could not open the store (exit
 * status 1, with a word of why), at most FAIL_IN_A_ROW times: the open writes and syncs too.
 * *restarts counts the runs that needed it. */
static run run_supervised(const char *db, const char *script, int n, int *restarts)
{
    run r = run_console(db, script);
    if (r.rc == 1) ++*restarts;
    for (int tries = 0; r.rc == 1 && tries < FAIL_IN_A_ROW; tries++) {
        cr_assert(strstr(r.err, "cardroom: "), "fault %d: exit 1 without a word: %s", n, r.err);
        run_free(&r);
        r = run_console(db, script);
    }
    return r;
}

/* ---- what a file holds ---- */

/* Appends every row of sql, its columns joined by '|', one row a line. */
static void sql_rows(sqlite3 *db, const char *sql, FILE *out)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const unsigned char *t = sqlite3_column_text(st, i);
            fprintf(out, "%s%s", i ? "|" : "", t ? (const char *)t : "NULL");
        }
        fputc('\n', out);
    }
    sqlite3_finalize(st);
}

/* Tables (without times), journal, hand seeds, outbox, standings, the console's position, the
 * count of unsent messages and of what tables still hold for the judge (the inbox), as text. */
static char *contents(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, vfs_real ? vfs_real->zName : NULL), SQLITE_OK);
    static const char *const queries[] = {
        "SELECT id, net, room, game, creator, closed IS NOT NULL, close_reason FROM tables ORDER BY id",
        "SELECT table_id, seq, entry FROM journal ORDER BY table_id, seq",
        "SELECT table_id, hand_no, hex(seed) FROM hands ORDER BY table_id, hand_no",
        "SELECT id, net, room, user, mention, text FROM outbox ORDER BY id",
        "SELECT net, room, user, matches, matches_won, made, failed, tokens, hands FROM standings ORDER BY 1, 2, 3",
        "SELECT adapter, position FROM positions ORDER BY adapter",
        "SELECT 'unsent', count(*) FROM outbox WHERE sent = 0",
        "SELECT 'held', count(*) FROM inbox",
    };
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
        fprintf(f, "-- %s\n", queries[i]);
        sql_rows(db, queries[i], f);
    }
    sqlite3_close(db);
    fclose(f);
    return text;
}

/* How many events and follow-ups tables ever held for the Caps judge in the file at path (the
 * inbox's ids are never used twice). */
static int held_ever(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, vfs_real ? vfs_real->zName : NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT seq FROM sqlite_sequence WHERE name = 'inbox'", -1, &st, NULL), SQLITE_OK);
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* out without the lines that hold one of the bot's notices; *down and *up count them. */
static char *without_notices(const char *out, int *down, int *up)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    *down = *up = 0;
    for (const char *p = out; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        int is_down = memmem(p, n, NOTICE_DOWN, strlen(NOTICE_DOWN)) != NULL;
        int is_up = memmem(p, n, NOTICE_UP, strlen(NOTICE_UP)) != NULL;
        *down += is_down;
        *up += is_up;
        if (!is_down && !is_up) fwrite(p, 1, n, f);
        p += n;
    }
    fclose(f);
    return text;
}

/* The first line where a and b differ, for a failure message. */
static const char *first_difference(const char *a, const char *b)
{
    static char line[600];
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') la = a + 1, lb = b + 1;
        a++, b++;
    }
    snprintf(line, sizeof line, "got \"%.250s\", expected \"%.250s\"", la, lb);
    for (char *p = line; *p; p++)
        if (*p == '\n') *p = '/';
    return line;
}

static void remove_db(const char *db)
{
    static const char *const tails[] = {"", "-wal", "-shm", "-journal", ".lock"};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s%s", db, tails[i]);
        unlink(p);
    }
}

/* ---- a fault at every write ---- */

Test(faults, every_write_fails_in_turn_and_the_game_ends_as_without_faults)
{
    shim_install();
    char *dir = temp_dir("faults"), *script = game_script(), db[4200];
    snprintf(db, sizeof db, "%s/game.db", dir);

    memset(&fault, 0, sizeof fault);
    run ref = run_console(db, script);
    cr_assert_eq(ref.rc, 0, "the reference run failed: %s", ref.err);
    cr_assert_str_empty(ref.err, "the reference run logged: %s", ref.err);
    int total = fault.ops;
    char *want = contents(db);
    cr_assert(strstr(want, "|alice|1|"), "alice has no standings row:\n%s", want);
    cr_assert(strstr(want, "unsent|0"));
    cr_assert_geq(total, 200, "only %d writes: the game is too short to be interesting", total);
    int held = held_ever(db);
    cr_assert_gt(held, 0, "no move waited for the Caps judge on a worker: the inbox is not put to the test");

    static const int codes[] = {SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY};
    int agreed = 0, at_start = 0, recovered = 0, background = 0, by_code[3] = {0}, step = 1;
    const char *k = getenv("CARDROOM_FAULT_STEP");
    if (k && atoi(k) > 1) step = atoi(k);
    for (int n = 1; n <= total; n += step) {
        remove_db(db);
        memset(&fault, 0, sizeof fault);
        fault.fail_at = n;
        fault.in_a_row = FAIL_IN_A_ROW;
        fault.code = codes[n % 3];
        run r = run_supervised(db, script, n, &at_start);
        cr_assert_eq(r.rc, 0, "fault %d (code %d): exit status %d; it logged:\n%s", n, fault.code, r.rc, r.err);
        cr_assert_eq(fault.failed, fault.ops >= n ? (fault.ops > n ? FAIL_IN_A_ROW : 1) : 0,
                     "fault %d: %d of %d writes failed", n, fault.failed, fault.ops);
        char *printed = strdup(r.out);
        char *got = contents(db);
        char *unsent = strstr(got, "unsent|");
        if (unsent && strcmp(unsent, "unsent|0\n") != 0) {
            /* the final marks were lost with the failing write: a restart sends those again */
            int reopened = 0;
            run again = run_supervised(db, "# no new line\n", n, &reopened);
            cr_assert_eq(again.rc, 0, "fault %d: the restart failed:\n%s", n, again.err);
            free(got);
            got = contents(db);
            run_free(&again);
        }
        cr_assert_str_eq(got, want, "fault %d (code %d): the file differs from the reference: %s", n, fault.code,
                         first_difference(got, want));
        int down, up;
        char *plain = without_notices(printed, &down, &up);
        cr_assert_str_eq(plain, ref.out, "fault %d (code %d): the output differs: %s", n, fault.code,
                         first_difference(plain, ref.out));
        cr_assert_eq(down, up, "fault %d: %d notices of the failure, %d of the recovery", n, down, up);
        cr_assert_leq(down, 1, "fault %d: the room was told %d times", n, down); /* both tables share the room */
        static const store_fault kinds[] = {STORE_FAULT_FULL, STORE_FAULT_IO, STORE_FAULT_READONLY}; /* as codes */
        char cause[128];
        snprintf(cause, sizeof cause, NOTICE_DOWN "%s)", store_fault_text(kinds[n % 3]));
        cr_assert(!down || strstr(printed, cause), "fault %d (code %d): the room was not told \"%s\":\n%s", n,
                  fault.code, cause, printed);
        int logged = 0;
        for (const char *p = r.err; (p = strstr(p, "store failed during")); p++) logged++;
        if (logged) { /* a fault while the bot ran (not while it opened or closed the file) */
            cr_assert_eq(logged, 1, "fault %d: the failure was logged %d times:\n%s", n, logged, r.err);
            cr_assert(strstr(r.err, "the store works again"), "fault %d: no word of the recovery:\n%s", n, r.err);
            recovered++;
            background += fault.in_background;
        }
        by_code[n % 3]++;
        agreed++;
        free(plain);
        free(got);
        free(printed);
        run_free(&r);
    }
    cr_log_info("%d fault points (every write, sync and truncate of the game), all agreeing with the reference: "
                "%d recovered in the run, %d at start-up (store not opened, run again); SQLITE_FULL %d, "
                "SQLITE_IOERR %d, SQLITE_READONLY %d; the game held %d events and follow-ups for the judge; %d of "
                "the faults mended in the run were in the store's background syncs",
                agreed, recovered, at_start, by_code[0], by_code[1], by_code[2], held, background);
    cr_assert_eq(agreed, (total + step - 1) / step);
    cr_assert_gt(recovered, agreed / 2, "only %d of %d faults were met and mended within a run", recovered, agreed);
    cr_assert_gt(background, 0, "no background sync failed: the syncs that make commits durable were not put to the test");
    memset(&fault, 0, sizeof fault);
    free(want);
    run_free(&ref);
    free(script);
    remove_db(db);
    temp_dir_remove(dir);
}

/* ---- the core's retries, step by step (a fake clock, the shim failing until told) ---- */

typedef struct {
    int64_t now;
    char said[64][512];   /* "ROOM: TEXT" of every message sent and every notice, in order */
    int nsaid;
} net_rec;

static int64_t rec_clock(void *ctx) { return ((net_rec *)ctx)->now; }

static void rec_add(net_rec *r, const char *kind, const char *room, const char *text)
{
    cr_assert_lt(r->nsaid, 64);
    snprintf(r->said[r->nsaid++], sizeof r->said[0], "%s %s: %s", kind, room, text);
}

static int rec_send(void *ctx, const store_msg *m)
{
    rec_add(ctx, "message", m->user[0] ? m->user : m->room, m->text);
    return ADAPTER_SENT;
}

static void rec_notice(void *ctx, const char *room, const char *text) { rec_add(ctx, "notice", room, text); }

/* Write-like calls so far (the store's threads may be making one). */
static int fault_ops(void)
{
    pthread_mutex_lock(&fault_mu);
    int n = fault.ops;
    pthread_mutex_unlock(&fault_mu);
    return n;
}

/* Waits until the store's syncer has synced every commit made so far: no write-like call of
 * the store's threads is under way or due after it. */
static int batch_of(core *c, const char *room, const char *user, const char *text)
{
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = room, .sender = user, .text = text};
    return core_batch(c, "test", &e, 1, NULL);
}

Test(faults, a_failing_store_is_tried_again_ever_later_and_then_rebuilt)
{
    shim_install();
    char *dir = temp_dir("faults"), db[4200], err[512];
    snprintf(db, sizeof db, "%s/retry.db", dir);
    memset(&fault, 0, sizeof fault);
    store *s = NULL;
    cr_assert_eq(store_open(&s, db, err, sizeof err), 0, "%s", err);
    cfg conf;
    cfg_defaults(&conf);
    conf.remind_after = conf.idle_takeover = conf.table_idle_close = 0;
    conf.threads = 1;
    net_rec net = {.now = 1000000};
    core_options o = {.config = &conf, .db = s, .now_ms = rec_clock, .clock_ctx = &net};
    core *c = core_new(&o, err, sizeof err);
    cr_assert_not_null(c, "%s", err);
    adapter a = {.net = "test", .ctx = &net, .send = rec_send, .notice = rec_notice};
    cr_assert_eq(core_add_adapter(c, &a), 0);
    cr_assert_eq(batch_of(c, "r1", "alice", "!new 304"), 0);
    cr_assert_eq(flush_durable(c), 1);
    all_synced(s);

    /* the disk fills: the batch is taken, and the store's writer fails to write it behind the
     * loop; the core learns it once woken (its next flush) and stops; the room is told once */
    fault.fail_at = fault_ops() + 1;
    fault.code = SQLITE_FULL;
    fault.in_a_row = 1 << 30;
    cr_assert_eq(batch_of(c, "r1", "alice", "!join"), 0);
    until_suspended(c);
    cr_assert_eq(net.nsaid, 2, "something of the batch that failed went out");
    cr_assert_str_eq(net.said[1], "notice r1: I cannot write to my database (the disk is full), so I take no commands "
                                  "for now. Nothing played so far is lost; I keep trying, and say so here when I can go on.");
    cr_assert_eq(batch_of(c, "r1", "bob", "!join"), -1);
    cr_assert_eq(batch_of(c, "r2", "carol", "hello"), -1, "refused, though not a command");
    cr_assert_eq(batch_of(c, "r2", "carol", "!new 304"), -1);
    cr_assert_eq(net.nsaid, 3, "each room is told once, of a command");
    cr_assert_str_eq(net.said[2] + strlen("notice r2:"), net.said[1] + strlen("notice r1:"));
    cr_assert_eq(core_flush(c), 0, "nothing is sent while the store fails");

    /* the pause doubles from one second to a minute; no try before it is over */
    int64_t pause = 1000;
    for (int k = 0; k < 9; k++) {
        cr_assert_eq(core_next_deadline(c), net.now + pause, "try %d", k);
        int ops = fault_ops();
        net.now += pause - 1;
        cr_assert_eq(core_tick(c), 0);
        cr_assert_eq(fault_ops(), ops, "the store was tried before the pause was over");
        net.now += 1;
        cr_assert_eq(core_tick(c), -1);
        cr_assert_gt(fault_ops(), ops, "the store was not tried");
        cr_assert(core_suspended(c));
        pause = pause * 2 < 60000 ? pause * 2 : 60000;
    }
    cr_assert_eq(pause, 60000);
    cr_assert_eq(core_next_deadline(c), net.now + 60000);
    cr_assert_eq(net.nsaid, 3, "a failed try tells nobody");

    /* the disk has room again: the next try writes the kept batch, rebuilds the table from
     * the file and says so where it told */
    fault.fail_at = 0;
    net.now += 60000;
    cr_assert_eq(core_tick(c), 0);
    cr_assert(!core_suspended(c));
    cr_assert_eq(net.nsaid, 5);
    cr_assert_str_eq(net.said[3], "notice r1: My database works again: I take commands again, and answer those sent "
                                  "meanwhile.");
    cr_assert_str_eq(net.said[4] + strlen("notice r2:"), net.said[3] + strlen("notice r1:"));
    cr_assert_eq(core_table_of(c, "test", "r1"), 1, "table 1 was not rebuilt");
    cr_assert_eq(flush_durable(c), 1);
    cr_assert_str_eq(net.said[5], "message r1: alice (South) sits down.", "the kept batch was lost");
    cr_assert_eq(batch_of(c, "r1", "bob", "!join"), 0);
    cr_assert_eq(flush_durable(c), 1);
    cr_assert_str_eq(net.said[6], "message r1: bob (East) sits down.");
    core_free(c);
    store_close(s);
    memset(&fault, 0, sizeof fault);
    remove_db(db);
    temp_dir_remove(dir);
}

/* ---- other processes ---- */

typedef struct {
    pid_t pid;
    int in;               /* its standard input (-1: /dev/null) */
    FILE *out;            /* its standard output */
    FILE *err;            /* its standard error */
} child;

/* `cardroom console --script --seed SEED --db db` (no CARDROOM_* from our environment), its
 * input a pipe when piped, else /dev/null. */
static child spawn_console(const char *db, int piped)
{
    int in[2] = {-1, -1}, out[2], err[2];
    cr_assert(pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0 && (!piped || pipe2(in, O_CLOEXEC) == 0));
    child k = {.in = -1};
    k.pid = fork();
    cr_assert_neq(k.pid, -1);
    if (k.pid == 0) {
        int i = piped ? in[0] : open("/dev/null", O_RDONLY);
        if (i < 0 || dup2(i, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) _exit(126);
        size_t n = 0, k = 0;
        while (environ[n]) n++;
        char **envp = calloc(n + 1, sizeof *envp);
        if (!envp) _exit(126);
        for (size_t j = 0; j < n; j++)
            if (strncmp(environ[j], "CARDROOM_", 9) != 0) envp[k++] = environ[j];
        char *argv[] = {"cardroom", "console", "--script", "--seed", "7", "--db", (char *)db, NULL};
        execve(CARDROOM_BIN, argv, envp);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    if (piped) {
        close(in[0]);
        k.in = in[1];
    }
    k.out = fdopen(out[0], "r");
    k.err = fdopen(err[0], "r");
    cr_assert(k.out && k.err);
    return k;
}

/* Reads k's output until a line holding text; returns everything read so far (malloc'd). */
static char *read_until(child *k, const char *text, char *so_far)
{
    size_t len = so_far ? strlen(so_far) : 0;
    char line[8192];
    while (fgets(line, sizeof line, k->out)) {
        so_far = realloc(so_far, len + strlen(line) + 1);
        cr_assert_not_null(so_far);
        strcpy(so_far + len, line);
        len += strlen(line);
        if (text && strstr(line, text)) return so_far;
    }
    cr_assert_null(text, "the output ended without \"%s\":\n%s", text, so_far ? so_far : "");
    return so_far ? so_far : strdup("");
}

static char *read_all_of(FILE *f)
{
    char *text = NULL, buf[4096];
    size_t len = 0, k;
    FILE *m = open_memstream(&text, &len);
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, k, m);
    fclose(m);
    return text;
}

/* Waits for k's end; returns its exit status (-1 for a signal) and its stderr. */
static int finish(child *k, char **err)
{
    if (k->in >= 0) close(k->in);
    char *rest = read_all_of(k->out);
    free(rest);
    *err = read_all_of(k->err);
    fclose(k->out);
    fclose(k->err);
    int status;
    while (waitpid(k->pid, &status, 0) < 0) cr_assert_eq(errno, EINTR);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void write_text(int fd, const char *text)
{
    for (size_t n = strlen(text); n > 0;) {
        ssize_t k = write(fd, text, n);
        cr_assert_gt(k, 0, "write: %s", strerror(errno));
        text += k;
        n -= (size_t)k;
    }
}

Test(faults, a_write_lock_held_by_another_process_is_waited_out)
{
    char *dir = temp_dir("faults"), *script = game_script(), ref_db[4200], db[4200], *err = NULL;
    snprintf(ref_db, sizeof ref_db, "%s/ref.db", dir);
    snprintf(db, sizeof db, "%s/busy.db", dir);

    /* the reference: the whole script at once */
    child ref = spawn_console(ref_db, 1);
    write_text(ref.in, script);
    close(ref.in);
    ref.in = -1;
    char *ref_out = read_until(&ref, NULL, NULL);
    cr_assert_eq(finish(&ref, &err), 0, "%s", err);
    free(err);
    char *want = contents(ref_db);

    /* the script up to carol's first question, then the lock, then the rest */
    const char *cut = strstr(script, "carol>> !help bid\n");
    cr_assert_not_null(cut);
    cut += strlen("carol>> !help bid\n");
    child k = spawn_console(db, 1);
    char *head = strndup(script, (size_t)(cut - script));
    write_text(k.in, head);
    char *out = read_until(&k, "[@carol] !bid", NULL); /* carol's answer: the bot has read that far */
    sqlite3 *other = NULL;
    cr_assert_eq(sqlite3_open(db, &other), SQLITE_OK);
    sqlite3_busy_timeout(other, 30000);
    cr_assert_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(other));
    write_text(k.in, cut);
    close(k.in);
    k.in = -1;
    out = read_until(&k, "[#room] " NOTICE_DOWN "another program holds the database)", out);
    cr_assert_eq(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    out = read_until(&k, NULL, out);
    cr_assert_eq(finish(&k, &err), 0, "%s", err);

    int down, up;
    char *plain = without_notices(out, &down, &up);
    cr_assert_eq(down, 1);
    cr_assert_eq(up, 1, "no word that it works again:\n%s", out);
    cr_assert_str_eq(plain, ref_out, "the output differs: %s", first_difference(plain, ref_out));
    char *got = contents(db);
    cr_assert_str_eq(got, want, "the file differs: %s", first_difference(got, want));
    cr_assert(strstr(err, "store failed during") && strstr(err, "database is locked"), "%s", err);
    cr_assert(strstr(err, "the store works again"), "%s", err);
    free(got);
    free(plain);
    free(out);
    free(head);
    free(err);
    free(want);
    free(ref_out);
    free(script);
    remove_db(ref_db);
    remove_db(db);
    temp_dir_remove(dir);
}

Test(faults, a_second_bot_on_a_held_database_is_refused)
{
    char *dir = temp_dir("faults"), db[4200], *err = NULL, expect[4400];
    snprintf(db, sizeof db, "%s/held.db", dir);
    child first = spawn_console(db, 1);
    write_text(first.in, "alice> !new 304\n");
    free(read_until(&first, "Table 1 is open", NULL)); /* it runs, so it holds the file */

    child second = spawn_console(db, 0);
    cr_assert_eq(finish(&second, &err), 3, "a second bot on a held database: %s", err);
    snprintf(expect, sizeof expect, "cardroom: %s is in use by another cardroom (process %d): one bot per database",
             db, (int)first.pid);
    cr_assert(strstr(err, expect), "it said:\n%s\nnot:\n%s", err, expect);
    free(err);

    cr_assert_eq(finish(&first, &err), 0, "%s", err);
    free(err);
    child third = spawn_console(db, 0);
    cr_assert_eq(finish(&third, &err), 0, "once the first has stopped: %s", err);
    cr_assert_str_empty(err);
    free(err);
    remove_db(db);
    temp_dir_remove(dir);
}
