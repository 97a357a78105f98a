/* test_migration.c — journals written by an earlier release still rebuild, and their tables go
 * on exactly as that release went on.
 *
 * tests/data/journal-0.1.0/tables.sql is the database of cardroom 0.1.0 (made by make.py in
 * that directory, whose opening comment tells how): nine tables of 304 and ContractGrid before
 * the start, bidding, in play with a card face down, after some hands, and finished. From it:
 *  - core_restore() rebuilds every open table without logging an error, and every table of the
 *    store, open or closed, replays through table_replay() to what the store says of it;
 *  - for each open table, its ROOM.in run through the console on a fresh copy prints exactly
 *    ROOM.out: the next moves, computer moves and deals 0.1.0 made for the same lines, in the
 *    words of today's release (make.py --words rewrote them, checking the moves stayed). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "console.h"
#include "core.h"
#include "store.h"
#include "table.h"
#include "test_dirs.h"
#include "test_journal.h"

#ifndef SOURCE_DIR
#error "build with -DSOURCE_DIR=\"/path/to/the/source\""
#endif

#define DATA_DIR SOURCE_DIR "/tests/data/journal-0.1.0"
#define SEED 7 /* make.py's --seed */

TestSuite(migration, .timeout = 300);

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    cr_assert_not_null(m);
    char buf[1 << 16];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, k, m);
    fclose(f);
    fclose(m);
    return text;
}

/* A database made from tables.sql, as dir/name. */
static char *db_from_dump(const char *dir, const char *name)
{
    char *path = NULL, *sql = read_file(DATA_DIR "/tables.sql"), *err = NULL;
    sqlite3 *db = NULL;
    cr_assert_gt(asprintf(&path, "%s/%s", dir, name), 0);
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &err), SQLITE_OK, "tables.sql: %s", err ? err : "?");
    sqlite3_close(db);
    free(sql);
    return path;
}

/* The configuration of make.py's runs (room_config()): the room, and no timers. */
static void room_cfg(cfg *c, const char *room)
{
    cfg_defaults(c);
    snprintf(c->console_room, sizeof c->console_room, "%s", room);
    c->remind_after = 0;
    c->idle_takeover = 0;
    c->table_idle_close = 0;
}

/* ---- every table rebuilds ---- */

typedef struct {
    int errors;
    char first[512];
} log_seen;

static void log_line(void *ctx, core_log_level level, const char *line)
{
    log_seen *l = ctx;
    if (level > CORE_LOG_WARN) return;
    if (!l->errors++) snprintf(l->first, sizeof l->first, "%s", line);
}

static int stored_seed(void *ctx, int64_t table_id, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    return store_hand_seed(ctx, table_id, hand_no, seed) == 0 ? 0 : -1;
}

Test(migration, every_table_rebuilds)
{
    char *dir = temp_dir("migration"), *path = db_from_dump(dir, "tables.db"), err[512] = "";
    store *s = NULL;
    cfg conf;
    room_cfg(&conf, "room");
    cr_assert_eq(store_open(&s, path, err, sizeof err), 0, "%s", err);

    /* the rows as the store has them: id, game, closed */
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int64_t ids[16];
    char games[16][16];
    int closed[16], n = 0, open = 0;
    cr_assert_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT id, game, closed IS NOT NULL FROM tables ORDER BY id", -1, &st, NULL),
                 SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW && n < 16) {
        ids[n] = sqlite3_column_int64(st, 0);
        snprintf(games[n], sizeof games[n], "%s", (const char *)sqlite3_column_text(st, 1));
        closed[n] = sqlite3_column_int(st, 2);
        open += !closed[n];
        n++;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    cr_assert_eq(n, 9, "tables.sql has %d tables", n);

    /* the core restores every open one */
    log_seen seen = {0};
    core_options o = {.config = &conf, .db = s, .log = log_line, .log_ctx = &seen, .fixed_seed = 1, .seed = SEED};
    core *c = core_new(&o, err, sizeof err);
    cr_assert_not_null(c, "%s", err);
    cr_assert_eq(core_restore(c), open);
    cr_assert_eq(seen.errors, 0, "the restore logged: %s", seen.first);
    core_free(c);

    /* each journal, open or closed, replays to the table the store describes */
    caps_solver *judge = caps_solver_new(0);
    cr_assert_not_null(judge);
    table_env env = {.judge = judge, .seed = stored_seed, .ctx = s, .prefix = "!", .private_how = "with /msg"};
    for (int i = 0; i < n; i++) {
        journal_entries e = journal_read(s, ids[i]);
        table t;
        char why[256] = "";
        table_init(&t, ids[i], "console", "room", "");
        cr_assert_eq(table_set_game(&t, games[i], &conf), 0, "table %d: game %s", (int)ids[i], games[i]);
        cr_assert_eq(table_replay(&t, &env, e.v, e.n, why, sizeof why), 0, "table %d: %s", (int)ids[i], why);
        cr_assert_eq(t.seq, e.n);
        cr_assert_eq(t.over, closed[i], "table %d replays to over=%d", (int)ids[i], t.over);
        int start = 0;
        for (int k = 0; k < e.n; k++) start |= strcmp(e.v[k], "start") == 0;
        cr_assert_eq(t.started, start, "table %d: started=%d", (int)ids[i], t.started);
        journal_free(&e);
    }
    caps_solver_free(judge);
    store_close(s);
    free(path);
    temp_dir_remove(dir);
}

/* ---- and goes on as 0.1.0 did ---- */

/* ROOM.in run on a fresh database from tables.sql: the console's stdout. Its input starts with
 * as many comment lines as the store has handled, as make.py's did (the console skips them). */
static char *go_on(const char *dir, const char *room)
{
    char *path = db_from_dump(dir, "go-on.db"), *in_path = NULL, *lines, *script = NULL, *out = NULL, *errs = NULL;
    char pos[32] = "0", err[512] = "";
    size_t slen = 0, olen = 0, elen = 0;
    store *s = NULL;
    cr_assert_eq(store_open(&s, path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_position_get(s, "console", pos, sizeof pos), 0);
    store_close(s);
    cr_assert_gt(asprintf(&in_path, "%s/%s.in", DATA_DIR, room), 0);
    lines = read_file(in_path);
    FILE *f = open_memstream(&script, &slen);
    cr_assert_not_null(f);
    for (long i = strtol(pos, NULL, 10); i > 0; i--) fputs("#\n", f);
    fputs(lines, f);
    fclose(f);

    cfg conf;
    room_cfg(&conf, room);
    FILE *in = fmemopen(script, slen, "r"), *o = open_memstream(&out, &olen), *e = open_memstream(&errs, &elen);
    cr_assert(in && o && e);
    console_options opt = {.script = 1, .fixed_seed = 1, .seed = SEED, .db = path, .in = in, .out = o, .err = e};
    cr_assert_eq(console_run(&conf, &opt), 0, "%s", room);
    fclose(in);
    fclose(o);
    fclose(e);
    cr_assert_str_empty(errs, "%s: the console logged: %s", room, errs);
    unlink(path);
    free(errs);
    free(script);
    free(lines);
    free(in_path);
    free(path);
    return out;
}

Test(migration, open_tables_go_on_as_before)
{
    char *dir = temp_dir("migration");
    DIR *d = opendir(DATA_DIR);
    struct dirent *ent;
    int rooms = 0;
    cr_assert_not_null(d);
    while ((ent = readdir(d))) {
        size_t k = strlen(ent->d_name);
        if (k < 4 || strcmp(ent->d_name + k - 3, ".in") != 0) continue;
        char room[64], *want_path = NULL;
        snprintf(room, sizeof room, "%.*s", (int)(k - 3), ent->d_name);
        cr_assert_gt(asprintf(&want_path, "%s/%s.out", DATA_DIR, room), 0);
        char *want = read_file(want_path), *got = go_on(dir, room);
        cr_assert_str_eq(got, want, "%s: this build goes on otherwise than 0.1.0 did (%s)", room, want_path);
        free(got);
        free(want);
        free(want_path);
        rooms++;
    }
    closedir(d);
    cr_assert_eq(rooms, 7, "expected the seven open tables' inputs, found %d", rooms);
    temp_dir_remove(dir);
}
