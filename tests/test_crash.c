/* test_crash.c — crash safety of the whole bot: the `cardroom console --script` process is
 * killed with SIGKILL at random moments and restarted on the same SQLite file until it finishes
 * by itself; the file must then hold exactly what an uninterrupted run writes.
 *
 * The script (written by the test) has a person in it: alice sits at South with three
 * computer players and plays her part from the script — "!pass" and then every card of the
 * pack as a private bare card, over and over (a bare card is taken when it is a legal play and
 * quietly ignored otherwise), mixed with informational commands and chat from bob — then leaves
 * so a computer player finishes her match; carol then opens a second table of four computer
 * players in the same room (about 1,200 script lines, 550-1,300 journal entries and 850-1,600
 * messages per seed). So crashes land in input batches (the console's position), in
 * computer moves applied by core_tick(), in deals, in the outbox sender, at start-up (schema
 * creation, restore) and between two tables.
 *
 * Seeded runs (--seed N; CARDROOM_CRASH_RUNS seeds, default 3, plus up to four more if fewer
 * than 20 kills landed mid-run): after every kill the file is a prefix of the reference
 * (journal in (table, seq) order, outbox in id order: nothing written is ever lost, nothing is
 * written twice or differently; a private message's text is compared only through the store
 * API at the end, since a delivered one keeps none), no delivered private message keeps its
 * text, the console position never goes back; at the end tables,
 * journal, hand seeds, outbox (ids, destinations, texts), standings and the console position
 * are identical to the reference, read through the store API; every message is marked sent;
 * both tables are closed "finished"; no journal has a gap; every journal (closed tables too)
 * replays through table_exec() to a table that is over; alice has a standings row; no move or
 * trick line is said twice in a row in the room; one more run with no input changes nothing.
 * Random-seed runs (no --seed) check the same invariants without a reference, plus one stored
 * hand seed per deal. The same script for six-seat tables ("!new 304 6": alice with five
 * computer players, every card of the 36-card pack; CARDROOM_CRASH_RUNS6 seeds, default 1)
 * checks that their journals rebuild as well.
 *
 * Kill times come from a fixed PRNG: one in eight within 1 ms (start-up, schema creation,
 * restore), six in eight within a short window (30 ms, widened while kills land before a
 * restarted process has written anything: a restore replays the journal with the Caps judge,
 * which takes tens of ms), one in eight uniformly within what is left of the reference run's
 * duration. The test asserts that kills landed in at least three quarters of the run (by
 * messages). CARDROOM_CRASH_DEBUG=1 prints every kill. The temporary directory is removed on
 * success and kept (with cardroom's stderr) on failure. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "config.h"
#include "store.h"
#include "table.h"
#include "test_journal.h"

#ifndef CARDROOM_BIN
#error "build with -DCARDROOM_BIN=\"/path/to/build/cardroom\""
#endif

#define MAX_RESTARTS 500
#define MIN_KILLS_PER_3_RUNS 20
#define RANDOM_MIN_KILLS 10
#define SCRIPT_TOKENS 4     /* alice's match: tokens per team */
#define SCRIPT_CYCLES 30    /* "!pass", 32 private cards and 4 "!hand", this many times */
#define SHORT_KILL_US 30000
#define SEP "|"

extern char **environ;

/* ---- small helpers ---- */

typedef struct {
    char **v;
    size_t n, cap;
} lines;

static void lines_add(lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lines_add(lines *l, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int k = vasprintf(&s, fmt, ap);
    va_end(ap);
    cr_assert_geq(k, 0, "out of memory");
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        cr_assert_not_null(l->v, "out of memory");
    }
    l->v[l->n++] = s;
}

static void lines_free(lines *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Asserts that a equals b (prefix: a is a prefix of b), naming the first difference. */
static void lines_expect(const lines *a, const lines *b, int prefix, const char *what)
{
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++)
        cr_assert_str_eq(a->v[i], b->v[i], "%s: row %zu differs:\n  got      %s\n  expected %s", what, i + 1,
                         a->v[i], b->v[i]);
    if (prefix) cr_assert_leq(a->n, b->n, "%s: %zu rows, more than the reference's %zu", what, a->n, b->n);
    else cr_assert_eq(a->n, b->n, "%s: %zu rows, the reference has %zu", what, a->n, b->n);
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(int64_t us)
{
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static int env_int(const char *name, int def, int lo, int hi)
{
    const char *v = getenv(name);
    if (!v || !*v) return def;
    long n = strtol(v, NULL, 10);
    return n < lo ? lo : n > hi ? hi : (int)n;
}

/* ---- the working directory ---- */

typedef struct {
    char dir[PATH_MAX];
    char script[PATH_MAX + 16];
    char log[PATH_MAX + 16];
} workdir;

static void work_make(workdir *w)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(w->dir, sizeof w->dir, "%s/cardroom-crash-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(w->dir), "mkdtemp(%s): %s", w->dir, strerror(errno));
    snprintf(w->script, sizeof w->script, "%s/script.txt", w->dir);
    snprintf(w->log, sizeof w->log, "%s/stderr.txt", w->dir);
}

static void path_in(const workdir *w, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", w->dir, name);
}

static void unlink_db(const char *db)
{
    char p[PATH_MAX + 16];
    unlink(db);
    snprintf(p, sizeof p, "%s-wal", db);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", db);
    unlink(p);
    snprintf(p, sizeof p, "%s-journal", db);
    unlink(p);
}

static void work_remove(workdir *w)
{
    static const char *const names[] = {"script.txt", "stderr.txt", "ref.db", "crash.db", "snap.db", "random.db"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[PATH_MAX + 16];
        path_in(w, names[i], p, sizeof p);
        unlink_db(p);
    }
    rmdir(w->dir);
}

/* The script for tables of `players` seats (4, or 6: "!new 304 6", every card of the 36-card
 * pack, five computer players with alice). advice: the table's option hints is on, alice asks
 * for a hint privately before each round of her cards (answered off the loop, or refused when
 * it is not her turn) and bob asks for the review of the last hand after it (posted once per
 * hand, refused as posted above after that), and once more after her match has ended. */
static void write_script(const workdir *w, int players, int advice)
{
    static const char *const ranks[] = {"7", "8", "9", "10", "J", "Q", "K", "A", "6"};
    static const char *const suits[] = {"S", "H", "D", "C"};
    const char *game = players == 6 ? "304 6" : "304";
    FILE *f = fopen(w->script, "w");
    cr_assert_not_null(f, "%s: %s", w->script, strerror(errno));
    fprintf(f, "# crash test: alice plays from the script, then computers finish; then a second table\n"
               "alice> !new %s\nalice> !join 1\n", game);
    for (int k = 1; k < players; k++) fprintf(f, "alice> !bot\n");
    if (advice) fprintf(f, "alice> !set hints on\n");
    fprintf(f, "alice> !set start_tokens %d\nbob> hello everyone\nalice> !rules\nalice> !start\n"
               "alice> !table\nalice>> !hand\nbob> !standings\nalice> !help bid\n\n",
            SCRIPT_TOKENS);
    for (int c = 0; c < SCRIPT_CYCLES; c++) {
        fprintf(f, "alice> !pass\n");
        if (c % 10 == 5) fprintf(f, "bob> how is it going?\nalice> !last\n");
        for (int s = 0; s < 4; s++) {
            if (advice && s % 2 == 0) fprintf(f, "alice>> !hint\n");
            if (advice && s == 3) fprintf(f, "bob> !review\n");
            for (int r = 0; r < (players == 6 ? 9 : 8); r++) fprintf(f, "alice>> %s%s\n", ranks[r], suits[s]);
            fprintf(f, "alice>> !hand\n"); /* says something without moving: no new turn prompt due */
        }
    }
    fprintf(f, "alice> !last\nalice> !standings\nalice> !leave\nalice> !standings alice\nbob> bye\n%s"
               "carol> !new %s\n", advice ? "bob> !review\n" : "", game);
    for (int k = 0; k < players; k++) fprintf(f, "carol> !bot\n");
    fprintf(f, "carol> !set start_tokens 2\ncarol> !start\ncarol> !standings\ncarol> !table\n");
    cr_assert_eq(fclose(f), 0);
}

/* ---- running cardroom ---- */

typedef enum { RUN_DONE, RUN_KILLED } run_end;

/* Runs `cardroom console --script [--seed N] --db db` with stdin from input (NULL: /dev/null),
 * stdout to /dev/null and stderr appended to the log; kills it after kill_us (< 0: never).
 * Returns RUN_DONE if it exited 0 by itself, RUN_KILLED if the kill ended it; any other end
 * fails the test. *took_us: the wall time until it ended. */
static run_end run_cardroom(const workdir *w, const char *db, const char *input, int seeded, uint64_t seed,
                            int64_t kill_us, int64_t *took_us)
{
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%" PRIu64, seed);
    char *argv[] = {"cardroom", "console", "--script", "--db", (char *)db, "--seed", seed_text, NULL};
    if (!seeded) argv[5] = NULL;
    /* The child's environment: ours without CARDROOM_* (no config file, no overrides). */
    size_t n = 0;
    while (environ[n]) n++;
    char **envp = calloc(n + 1, sizeof *envp);
    cr_assert_not_null(envp);
    for (size_t i = 0, k = 0; i < n; i++)
        if (strncmp(environ[i], "CARDROOM_", 9) != 0) envp[k++] = environ[i];

    int64_t t0 = now_us();
    pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        int in = open(input ? input : "/dev/null", O_RDONLY);
        int out = open("/dev/null", O_WRONLY);
        int err = open(w->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
        execve(CARDROOM_BIN, argv, envp);
        _exit(127);
    }
    free(envp);
    if (kill_us >= 0) {
        sleep_us(kill_us);
        kill(pid, SIGKILL); /* a process that already ended is a zombie until reaped: harmless */
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
    if (took_us) *took_us = now_us() - t0;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && kill_us >= 0) return RUN_KILLED;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "cardroom (db %s) ended with %s %d instead of exit 0; its stderr is in %s", db,
              WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
              w->log);
    return RUN_DONE;
}

/* ---- reading a file directly (snapshots after a kill) ---- */

static void copy_file(const char *from, const char *to)
{
    unlink(to);
    int in = open(from, O_RDONLY);
    if (in < 0) return; /* not there (yet) */
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(out, 0, "%s: %s", to, strerror(errno));
    char buf[1 << 16];
    ssize_t k;
    while ((k = read(in, buf, sizeof buf)) > 0) cr_assert_eq(write(out, buf, (size_t)k), k);
    close(in);
    close(out);
}

/* Appends every row of sql, its columns joined by SEP. Returns -1 if the query fails (e.g.
 * the schema is not there yet), else 0. */
static int sql_rows(sqlite3 *db, const char *sql, lines *out)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char *row = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&row, &len);
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const unsigned char *t = sqlite3_column_text(st, i);
            fprintf(m, "%s%s", i ? SEP : "", t ? (const char *)t : "NULL");
        }
        fclose(m);
        lines_add(out, "%s", row);
        free(row);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int64_t sql_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

#define JOURNAL_SQL "SELECT table_id, seq, entry FROM journal ORDER BY table_id, seq"
#define OUTBOX_SQL                                                                                    \
    "SELECT id, net, room, user, mention, CASE WHEN user = '' THEN text ELSE '(private)' END FROM outbox " \
    "ORDER BY id"

typedef struct {
    lines journal, outbox;
    int64_t sent, position;
} snapshot;

static void snapshot_free(snapshot *s)
{
    lines_free(&s->journal);
    lines_free(&s->outbox);
}

/* Reads db as it is on disk right now — from a copy of the file and its WAL, so that our
 * reading neither checkpoints nor recovers the original: the next cardroom run meets the
 * file exactly as the killed one left it. */
static void snapshot_of(const workdir *w, const char *db, snapshot *s)
{
    char snap[PATH_MAX + 16], from[PATH_MAX + 16], to[PATH_MAX + 32];
    memset(s, 0, sizeof *s);
    path_in(w, "snap.db", snap, sizeof snap);
    unlink_db(snap);
    copy_file(db, snap);
    snprintf(from, sizeof from, "%s-wal", db);
    snprintf(to, sizeof to, "%s-wal", snap);
    copy_file(from, to);
    struct stat sb;
    if (stat(snap, &sb) != 0) return; /* killed before the file was made */
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(snap, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    if (sql_rows(h, JOURNAL_SQL, &s->journal) != 0 || sql_rows(h, OUTBOX_SQL, &s->outbox) != 0) {
        /* killed while the schema was being made: nothing may be there yet */
        cr_assert_eq(s->journal.n + s->outbox.n, 0, "a half-made schema with rows in it");
    } else {
        s->sent = sql_int(h, "SELECT count(*) FROM outbox WHERE sent = 1");
        cr_assert_eq(sql_int(h, "SELECT count(*) FROM outbox WHERE sent = 1 AND user != '' AND text != ''"), 0,
                     "a delivered private message kept its text");
        s->position = sql_int(h, "SELECT coalesce(max(CAST(position AS INTEGER)), 0) FROM positions "
                                 "WHERE adapter = 'console'");
    }
    sqlite3_close(h);
    unlink_db(snap);
}

/* ---- the full comparison through the store API ---- */

typedef struct {
    lines tables, journal, hands, outbox, standings, misc;
    lines room_texts;     /* the texts of the outbox's room messages, in order */
    int64_t table_ids[64];
    int ntables;
    int closed[64];
    char game[64][16];    /* each table's game, as the store names it */
} dump;

static void dump_free(dump *d)
{
    lines_free(&d->tables);
    lines_free(&d->journal);
    lines_free(&d->hands);
    lines_free(&d->outbox);
    lines_free(&d->standings);
    lines_free(&d->misc);
    lines_free(&d->room_texts);
}

typedef struct {
    lines *out;
    int64_t table, expect;
} journal_walk;

static int journal_row(void *ctx, int64_t seq, const char *entry)
{
    journal_walk *j = ctx;
    lines_add(j->out, "%" PRId64 SEP "%" PRId64 SEP "%s", j->table, seq, entry);
    if (seq != j->expect) lines_add(j->out, "GAP: table %" PRId64 " seq %" PRId64 " after %" PRId64, j->table, seq,
                                    j->expect - 1);
    j->expect = seq + 1;
    return 0;
}

static int outbox_row(void *ctx, const store_msg *m)
{
    dump *d = ctx;
    if (!m->user[0]) lines_add(&d->room_texts, "%s", m->text);
    lines_add(&d->outbox, "%" PRId64 SEP "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%s", m->id, m->net, m->room, m->user, m->mention,
              m->text);
    return 0;
}

typedef struct {
    lines *out;
    const char *net, *room;
} standing_walk;

static int standing_row(void *ctx, const store_standing *r)
{
    standing_walk *s = ctx;
    lines_add(s->out, "%s" SEP "%s" SEP "%s" SEP "%d" SEP "%d" SEP "%d" SEP "%d" SEP "%d" SEP "%d", s->net, s->room,
              r->user, r->matches, r->matches_won, r->made, r->failed, r->tokens, r->hands);
    return 0;
}

static void dump_of(const char *path, dump *d)
{
    memset(d, 0, sizeof *d);
    store *s = NULL;
    char err[512] = "";
    cr_assert_eq(store_open(&s, path, err, sizeof err), 0, "store_open(%s): %s", path, err);
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);

    /* Tables, open and closed (store_tables_open lists only open ones). */
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT id, net, room, game, creator, closed IS NOT NULL, "
                                       "coalesce(close_reason, '') FROM tables ORDER BY id", -1, &st, NULL),
                 SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        cr_assert_lt(d->ntables, 64);
        d->table_ids[d->ntables] = sqlite3_column_int64(st, 0);
        d->closed[d->ntables] = sqlite3_column_int(st, 5);
        snprintf(d->game[d->ntables], sizeof d->game[d->ntables], "%s", (const char *)sqlite3_column_text(st, 3));
        d->ntables++;
        lines_add(&d->tables, "%lld" SEP "%s" SEP "%s" SEP "%s" SEP "%s" SEP "%d" SEP "%s",
                  (long long)sqlite3_column_int64(st, 0), sqlite3_column_text(st, 1), sqlite3_column_text(st, 2),
                  sqlite3_column_text(st, 3), sqlite3_column_text(st, 4), sqlite3_column_int(st, 5),
                  sqlite3_column_text(st, 6));
    }
    sqlite3_finalize(st);

    /* Journal and hand seeds, per table, through the store. */
    for (int i = 0; i < d->ntables; i++) {
        journal_walk j = {&d->journal, d->table_ids[i], 1};
        cr_assert_eq(store_journal_each(s, d->table_ids[i], journal_row, &j), 0, "%s", store_error(s));
        for (int hand = 1;; hand++) {
            uint8_t seed[STORE_SEED_BYTES];
            int rc = store_hand_seed(s, d->table_ids[i], hand, seed);
            cr_assert_geq(rc, 0, "%s", store_error(s));
            if (rc == 1) break;
            char hex[2 * STORE_SEED_BYTES + 1];
            for (int k = 0; k < STORE_SEED_BYTES; k++) sprintf(hex + 2 * k, "%02x", seed[k]);
            lines_add(&d->hands, "%" PRId64 SEP "%d" SEP "%s", d->table_ids[i], hand, hex);
        }
    }
    cr_assert_eq((int64_t)d->hands.n, sql_int(h, "SELECT count(*) FROM hands"),
                 "%s: hand numbers are not 1, 2, 3… in every table", path);
    cr_assert_eq((int64_t)d->journal.n, sql_int(h, "SELECT count(*) FROM journal"),
                 "%s: journal rows of tables that do not exist, or a gap", path);

    /* Outbox, sent or not, in id order. */
    cr_assert_eq(store_outbox_all(s, outbox_row, d), 0, "%s", store_error(s));

    /* Standings of every room that has any. */
    lines rooms = {0};
    cr_assert_eq(sql_rows(h, "SELECT DISTINCT net, room FROM standings ORDER BY net, room", &rooms), 0);
    for (size_t i = 0; i < rooms.n; i++) {
        char net[64], room[256];
        cr_assert_eq(sscanf(rooms.v[i], "%63[^|]|%255[^\n]", net, room), 2);
        standing_walk w = {&d->standings, net, room};
        cr_assert_eq(store_standings_top(s, net, room, 0, standing_row, &w), 0, "%s", store_error(s));
    }
    lines_free(&rooms);
    cr_assert_eq((int64_t)d->standings.n, sql_int(h, "SELECT count(*) FROM standings"));

    /* The console's position, and what is still unsent. */
    char pos[64] = "";
    cr_assert_eq(store_position_get(s, "console", pos, sizeof pos), 0, "%s: no console position", path);
    lines_add(&d->misc, "position %s", pos);
    lines_add(&d->misc, "unsent %lld", (long long)sql_int(h, "SELECT count(*) FROM outbox WHERE sent = 0"));
    sqlite3_close(h);
    store_close(s);
}

/* ---- replaying every journal, closed tables too ---- */

typedef struct {
    store *s;
} replay_ctx;

static int replay_seed(void *ctx, int64_t table_id, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    replay_ctx *r = ctx;
    return store_hand_seed(r->s, table_id, hand_no, seed) == 0 ? 0 : -1;
}

/* Every table's journal rebuilds the table with table_exec(), the way core_restore() does,
 * and a closed table's journal ends with the table over (nothing after the end). */
static void replay_all(const char *path, const dump *d)
{
    store *s = NULL;
    char err[512] = "";
    cr_assert_eq(store_open(&s, path, err, sizeof err), 0, "%s", err);
    cfg config;
    cfg_defaults(&config);
    replay_ctx rc = {s};
    caps_solver *judge = caps_solver_new(0);
    cr_assert_not_null(judge);
    table_env env = {.judge = judge, .seed = replay_seed, .ctx = &rc, .prefix = "!", .private_how = "with /msg"};
    table *t = malloc(sizeof *t);
    cr_assert_not_null(t);
    for (int i = 0; i < d->ntables; i++) {
        journal_entries e = journal_read(s, d->table_ids[i]);
        table_init(t, d->table_ids[i], "console", config.console_room, "");
        cr_assert_eq(table_set_game(t, d->game[i], &config), 0, "%s: table %" PRId64 " has the unknown game \"%s\"",
                     path, d->table_ids[i], d->game[i]);
        for (int k = 0; k < e.n; k++) {
            char why[256] = "";
            cr_assert_eq(table_exec(t, &env, e.v[k], NULL, why, sizeof why), 0,
                         "%s: table %" PRId64 " entry %d \"%s\" does not replay: %s", path, d->table_ids[i], k + 1,
                         e.v[k], why);
        }
        cr_assert_eq(t->seq, e.n);
        cr_assert_eq(t->over, d->closed[i], "%s: table %" PRId64 " replays to over=%d but is %s in the store", path,
                     d->table_ids[i], t->over, d->closed[i] ? "closed" : "open");
        journal_free(&e);
    }
    free(t);
    caps_solver_free(judge);
    store_close(s);
}

/* The invariants every finished file meets, reference or not. */
static void check_invariants(const char *path, const dump *d)
{
    for (size_t i = 0; i < d->journal.n; i++)
        cr_assert(strncmp(d->journal.v[i], "GAP:", 4) != 0, "%s: %s", path, d->journal.v[i]);
    cr_assert_eq(d->ntables, 2, "%s: %d tables, expected alice's and carol's", path, d->ntables);
    for (size_t i = 0; i < d->tables.n; i++) {
        size_t len = strlen(d->tables.v[i]);
        cr_assert(len > 11 && strcmp(d->tables.v[i] + len - 11, SEP "1" SEP "finished") == 0,
                  "%s: table not closed as finished: %s", path, d->tables.v[i]);
    }
    cr_assert_str_eq(d->misc.v[1], "unsent 0", "%s: messages left unsent", path);
    cr_assert_gt(d->hands.n, 2);
    /* alice played whole hands, so she has a standings row with hands in it */
    int alice = 0;
    for (size_t i = 0; i < d->standings.n; i++) alice |= strstr(d->standings.v[i], SEP "alice" SEP) != NULL;
    cr_assert(alice, "%s: alice has no standings row", path);
    /* A move or a trick said twice in a row in the room would be a batch handled twice. */
    for (size_t i = 1; i < d->room_texts.n; i++) {
        const char *text = d->room_texts.v[i];
        if (strncmp(text, "Trick ", 6) == 0 || strstr(text, " plays "))
            cr_assert_str_neq(text, d->room_texts.v[i - 1], "%s: room message %zu repeats the previous one", path, i + 1);
    }
    replay_all(path, d);
}

/* With advice: the last hand of alice's match is reviewed once after the match's end (bob asks
 * before carol opens the next table), and the review is the last entry of its journal. */
static void check_review_after_the_end(const char *path, const dump *d)
{
    size_t over = 0, opened = 0;
    while (over < d->room_texts.n && !strstr(d->room_texts.v[over], "Match over: ")) over++;
    while (opened < d->room_texts.n && !strstr(d->room_texts.v[opened], "Table 2 is open")) opened++;
    cr_assert_lt(over, opened, "%s: alice's match did not end before carol's table opened", path);
    int reviews = 0;
    for (size_t i = over; i < opened; i++) {
        const char *text = d->room_texts.v[i];
        reviews += strncmp(text, "Review of hand ", 15) == 0 || strstr(text, "\nReview of hand ") != NULL;
    }
    cr_assert_eq(reviews, 1, "%s: %d reviews between the end of alice's match and carol's table", path, reviews);
    const char *last = NULL;
    for (size_t i = 0; i < d->journal.n; i++)
        if (strncmp(d->journal.v[i], "1" SEP, 2) == 0) last = d->journal.v[i];
    cr_assert(last && strcmp(strrchr(last, SEP[0]) + 1, "review") == 0, "%s: alice's table ends with %s", path,
              last ? last : "nothing");
}

/* One more run on a finished file, with no input: exits 0 and writes nothing. */
static void check_rerun_adds_nothing(const workdir *w, const char *db, int seeded, uint64_t seed)
{
    snapshot before, after;
    snapshot_of(w, db, &before);
    cr_assert_eq(run_cardroom(w, db, NULL, seeded, seed, -1, NULL), RUN_DONE);
    snapshot_of(w, db, &after);
    lines_expect(&after.journal, &before.journal, 0, "journal after one more run");
    lines_expect(&after.outbox, &before.outbox, 0, "outbox after one more run");
    cr_assert_eq(after.sent, (int64_t)after.outbox.n, "one more run left messages unsent");
    cr_assert_eq(after.position, before.position);
    snapshot_free(&before);
    snapshot_free(&after);
}

/* ---- the crash loop ---- */

typedef struct {
    int kills;            /* runs ended by our SIGKILL */
    int kills_progress;   /* ... that had written something to the file */
    int quarter[4];       /* kills by how far the run had got (outbox rows / reference's) */
    int restarts;
} crash_stats;

/* Runs the script on db, killing and restarting, until a run ends by itself. ref_us and
 * ref_outbox: how long an uninterrupted run took and how many messages it queued. With a
 * reference (ref != NULL) every intermediate file must be a prefix of it. */
static void crash_loop(const workdir *w, const char *db, int seeded, uint64_t seed, int64_t ref_us,
                       int64_t ref_outbox, const snapshot *ref, uint64_t *rng, crash_stats *cs)
{
    snapshot last = {0};
    /* The short kills fall within window µs of the start: 30 ms to begin with, wider while
     * kills land before a restarted process has done anything (restoring a table replays its
     * journal, Caps judge included, which takes a while on a slow or sanitized build), and
     * back towards 30 ms while they land mid-run. */
    int64_t window = SHORT_KILL_US;
    if (ref_outbox < 1) ref_outbox = 1;
    for (int run = 0;; run++) {
        cr_assert_lt(run, MAX_RESTARTS, "still not finished after %d restarts", MAX_RESTARTS);
        uint64_t r = rng_next(rng), r2 = r >> 8;
        /* What is left of the run, judged by the outbox against the reference's. */
        int64_t left = ref_us - ref_us * (int64_t)last.outbox.n / ref_outbox;
        int64_t kill_us;
        if (r % 8 == 0) kill_us = (int64_t)(r2 % 1000);                              /* at once: start-up */
        else if (r % 8 < 7) kill_us = (int64_t)(r2 % (uint64_t)window);              /* within a few ms */
        else kill_us = (int64_t)(r2 % (uint64_t)(left > 1000 ? left : 1000));      /* anywhere in what is left */
        int64_t took = 0;
        run_end end = run_cardroom(w, db, w->script, seeded, seed, kill_us, &took);
        if (getenv("CARDROOM_CRASH_DEBUG"))
            fprintf(stderr, "run %d: kill after %.1f ms, ended after %.1f ms (%s); before it: %zu messages, line %lld\n",
                    run, kill_us / 1000.0, took / 1000.0, end == RUN_DONE ? "finished" : "killed", last.outbox.n,
                    (long long)last.position);
        cs->restarts++;
        snapshot now;
        snapshot_of(w, db, &now);
        /* What was written stays written. */
        cr_assert_geq(now.journal.n, last.journal.n, "journal shrank after a kill");
        cr_assert_geq(now.outbox.n, last.outbox.n, "outbox shrank after a kill");
        cr_assert_geq(now.position, last.position, "console position went back");
        if (ref) {
            lines_expect(&now.journal, &ref->journal, 1, "journal after a kill");
            lines_expect(&now.outbox, &ref->outbox, 1, "outbox after a kill");
        }
        if (end == RUN_KILLED) {
            cs->kills++;
            int progressed = now.journal.n != last.journal.n || now.outbox.n != last.outbox.n ||
                             now.sent != last.sent || now.position != last.position;
            if (r % 8 != 0 && r % 8 < 7) {
                if (!progressed) window = window * 3 / 2 < ref_us ? window * 3 / 2 : ref_us;
                else window = window * 4 / 5 > SHORT_KILL_US ? window * 4 / 5 : SHORT_KILL_US;
            }
            if (progressed) {
                cs->kills_progress++;
                int q = (int)(4 * (int64_t)now.outbox.n / ref_outbox);
                cs->quarter[q > 3 ? 3 : q < 0 ? 0 : q]++;
            }
        }
        snapshot_free(&last);
        last = now;
        if (end == RUN_DONE) break;
    }
    snapshot_free(&last);
}

/* How many quarters of the run (by messages written) the kills that landed mid-run fell in. */
static int quarters_hit(const crash_stats *cs)
{
    int n = 0;
    for (int q = 0; q < 4; q++) n += cs->quarter[q] > 0;
    return n;
}

/* ---- the tests ---- */

TestSuite(crash, .timeout = 600);

/* Seeded runs of the script for tables of `players` seats, each killed and restarted until it
 * ends, against the reference run of the same seed. */
static void seeded_runs(int players, int runs, int advice)
{
    static const uint64_t seeds[] = {7, 1, 2, 3, 5, 11, 13, 17, 19, 23};
    uint64_t rng = 0x304304304ull;
    crash_stats cs = {0};
    workdir w;
    work_make(&w);
    write_script(&w, players, advice);
    char ref_db[PATH_MAX + 16], crash_db[PATH_MAX + 16];
    path_in(&w, "ref.db", ref_db, sizeof ref_db);
    path_in(&w, "crash.db", crash_db, sizeof crash_db);
    int64_t total_ref_us = 0, t0 = now_us();
    int need = (MIN_KILLS_PER_3_RUNS * runs + 2) / 3, done = 0;
    /* runs seeds, and a few more if the kills so far landed too often before anything happened or
     * bunched in part of the run (where they land follows the machine's speed, which a loaded
     * machine changes from one run to the next) */
    for (int i = 0; i < runs || ((cs.kills_progress < need || (runs >= 3 && quarters_hit(&cs) < 3)) && i < runs + 4);
         i++) {
        uint64_t seed = seeds[i % 10] + 1000 * (uint64_t)(i / 10);
        unlink_db(ref_db);
        unlink_db(crash_db);
        int64_t ref_us = 0;
        cr_assert_eq(run_cardroom(&w, ref_db, w.script, 1, seed, -1, &ref_us), RUN_DONE);
        total_ref_us += ref_us;
        snapshot ref;
        snapshot_of(&w, ref_db, &ref);
        cr_assert_gt(ref.journal.n, 100, "the reference run is too short to be interesting");

        crash_loop(&w, crash_db, 1, seed, ref_us, (int64_t)ref.outbox.n, &ref, &rng, &cs);

        dump a, b;
        dump_of(ref_db, &a);
        dump_of(crash_db, &b);
        lines_expect(&b.tables, &a.tables, 0, "tables");
        lines_expect(&b.journal, &a.journal, 0, "journal");
        lines_expect(&b.hands, &a.hands, 0, "hand seeds");
        lines_expect(&b.outbox, &a.outbox, 0, "outbox");
        lines_expect(&b.standings, &a.standings, 0, "standings");
        lines_expect(&b.misc, &a.misc, 0, "position and unsent messages");
        check_invariants(ref_db, &a);
        check_invariants(crash_db, &b);
        if (advice) {
            check_review_after_the_end(ref_db, &a);
            check_review_after_the_end(crash_db, &b);
        }
        dump_free(&a);
        dump_free(&b);
        check_rerun_adds_nothing(&w, crash_db, 1, seed);
        cr_log_info("seed %" PRIu64 ": reference %zu moves, %zu messages in %.0f ms", seed, ref.journal.n,
                    ref.outbox.n, ref_us / 1000.0);
        snapshot_free(&ref);
        done++;
    }
    cr_log_info("%d seeded runs: %d restarts, %d kills, %d of them after the run had written something; by "
                "progress: %d %d %d %d (quarters); references took %.1f s, everything %.1f s",
                done, cs.restarts, cs.kills, cs.kills_progress, cs.quarter[0], cs.quarter[1], cs.quarter[2],
                cs.quarter[3], total_ref_us / 1e6, (now_us() - t0) / 1e6);
    cr_assert_geq(cs.kills_progress, need, "only %d kills landed mid-run (want %d)", cs.kills_progress, need);
    if (runs >= 3)
        cr_assert_geq(quarters_hit(&cs), 3, "the kills landed in only %d quarters of the run", quarters_hit(&cs));
    work_remove(&w);
}

Test(crash, seeded_runs_survive_kills_and_match_the_reference)
{
    seeded_runs(4, env_int("CARDROOM_CRASH_RUNS", 3, 1, 100), 0);
}

/* The same for six-seat tables ("!new 304 6", the 36-card pack): their journals ("set players
 * 6" first) rebuild after every kill to the table that was running. */
Test(crash, six_seat_tables_survive_kills_and_match_the_reference)
{
    seeded_runs(6, env_int("CARDROOM_CRASH_RUNS6", 1, 1, 100), 0);
}

/* The same with !hint and !review (CARDROOM_CRASH_RUNS_ADVICE seeds, default 1): a kill while
 * their search runs on a worker, or between the request and the answer, loses no answer and
 * repeats none (the request waits in the store's inbox; the answer leaves it in the same
 * transaction), and a review is posted once per hand across restarts, the last hand's after the
 * match's end too (its table is rebuilt from its journal for it). */
Test(crash, hints_and_reviews_survive_kills_and_match_the_reference)
{
    seeded_runs(4, env_int("CARDROOM_CRASH_RUNS_ADVICE", 1, 1, 100), 1);
}

Test(crash, random_seeds_keep_the_invariants)
{
    uint64_t rng = 0xC0FFEEull;
    crash_stats cs = {0};
    workdir w;
    work_make(&w);
    write_script(&w, 4, 0);
    char db[PATH_MAX + 16];
    path_in(&w, "random.db", db, sizeof db);
    /* A first run only for its duration and size (its deals differ: seeds come from the OS). */
    int64_t ref_us = 0;
    cr_assert_eq(run_cardroom(&w, db, w.script, 0, 0, -1, &ref_us), RUN_DONE);
    snapshot ref;
    snapshot_of(&w, db, &ref);
    int64_t ref_outbox = (int64_t)ref.outbox.n;
    snapshot_free(&ref);
    /* Whole crash loops on fresh files until enough kills landed mid-run. */
    int loops = 0;
    while (cs.kills_progress < RANDOM_MIN_KILLS && loops < 6) {
        unlink_db(db);
        crash_loop(&w, db, 0, 0, ref_us, ref_outbox, NULL, &rng, &cs);
        loops++;
        dump d;
        dump_of(db, &d);
        check_invariants(db, &d);
        /* Every dealt hand has its seed stored, and only those. */
        size_t deals = 0;
        for (size_t i = 0; i < d.journal.n; i++) {
            const char *e = strchr(strchr(d.journal.v[i], '|') + 1, '|') + 1;
            deals += strncmp(e, "deal ", 5) == 0;
        }
        cr_assert_eq(deals, d.hands.n, "%zu deals but %zu hand seeds", deals, d.hands.n);
        dump_free(&d);
        check_rerun_adds_nothing(&w, db, 0, 0);
    }
    cr_log_info("random seeds: %d crash loops, %d restarts, %d kills, %d mid-run", loops, cs.restarts, cs.kills,
                cs.kills_progress);
    cr_assert_geq(cs.kills_progress, RANDOM_MIN_KILLS, "only %d kills landed mid-run", cs.kills_progress);
    work_remove(&w);
}
