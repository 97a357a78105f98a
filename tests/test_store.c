/* test_store.c — the SQLite store: opening, schema versions and refusals, every table's
 * round trip, transactions (a rollback leaves nothing of a batch), callbacks that stop early
 * or try to re-enter, commit atomicity under SIGKILL at random moments, and lazy commits: made
 * durable by the store's syncer, many by one sync, a failed sync reported once and mended by
 * a commit that waits for the disk (the syncs held and failed through the VFS shim). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "test_vfs.h"

/* ---- Helpers ---- */

static store *open_ok(const char *path)
{
    store *s = NULL;
    char err[256] = "";
    int rc = store_open(&s, path, err, sizeof err);
    cr_assert_eq(rc, 0, "store_open(%s) refused: %s", path, err);
    cr_assert_not_null(s);
    return s;
}

#define OK(call) cr_assert_eq((call), 0, "%s failed: %s", #call, store_error(s))

/* The temporary directory of the store_file tests (made by .init, removed by .fini). */
static char tmp_dir[64];

static void tmp_make(void)
{
    strcpy(tmp_dir, "/tmp/cardroom-store-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_dir), "mkdtemp failed");
}

static void tmp_remove(void)
{
    DIR *d = opendir(tmp_dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", tmp_dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(tmp_dir);
}

static void tmp_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmp_dir, name);
}

/* Runs one SQL text on the file directly, as another program would. */
static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* The first column of the first row of sql, read directly from the file, as text. */
static void raw_text(const char *path, const char *sql, char *buf, size_t len)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Collects journal entries. */
typedef struct {
    int n;
    int64_t seq[64];
    char entry[64][32];
} journal_seen;

static int collect_journal(void *ctx, int64_t seq, const char *entry)
{
    journal_seen *j = ctx;
    cr_assert_lt(j->n, 64);
    j->seq[j->n] = seq;
    snprintf(j->entry[j->n], sizeof j->entry[j->n], "%s", entry);
    j->n++;
    return 0;
}

/* Collects outbox messages (text cut to 64 bytes, length kept). */
typedef struct {
    int n;
    store_msg msg[16];
    char text[16][64];
    size_t text_len[16];
} msgs_seen;

static int collect_msg(void *ctx, const store_msg *m)
{
    msgs_seen *c = ctx;
    cr_assert_lt(c->n, 16);
    c->msg[c->n] = *m;
    snprintf(c->text[c->n], sizeof c->text[c->n], "%s", m->text);
    c->text_len[c->n] = strlen(m->text);
    c->msg[c->n].text = NULL; /* the store's buffer is gone after the callback */
    c->msg[c->n].wire = m->wire ? (char *)"(a wire form)" : NULL;
    c->n++;
    return 0;
}

typedef struct {
    int n;
    store_table t[8];
} tables_seen;

static int collect_table(void *ctx, const store_table *t)
{
    tables_seen *c = ctx;
    cr_assert_lt(c->n, 8);
    c->t[c->n++] = *t;
    return 0;
}

typedef struct {
    int n;
    store_standing row[8];
} standings_seen;

static int collect_standing(void *ctx, const store_standing *row)
{
    standings_seen *c = ctx;
    cr_assert_lt(c->n, 8);
    c->row[c->n++] = *row;
    return 0;
}

/* Counts calls and stops at the first with 7. */
static int stop_journal(void *ctx, int64_t seq, const char *entry)
{
    (void)seq, (void)entry;
    ++*(int *)ctx;
    return 7;
}
static int stop_msg(void *ctx, const store_msg *m)
{
    (void)m;
    ++*(int *)ctx;
    return 7;
}
static int stop_table(void *ctx, const store_table *t)
{
    (void)t;
    ++*(int *)ctx;
    return 7;
}
static int stop_standing(void *ctx, const store_standing *row)
{
    (void)row;
    ++*(int *)ctx;
    return 7;
}

static int64_t new_table(store *s, int64_t now)
{
    int64_t id = 0;
    OK(store_table_create(s, "console", "#room", "304", "alice", now, &id));
    cr_assert_gt(id, 0);
    return id;
}

/* ---- Opening ---- */

Test(store, memory_opens_at_current_schema)
{
    store *s = open_ok(":memory:");
    cr_expect_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
    cr_expect_eq(store_schema_version(s), 5);
    cr_expect_str_eq(store_error(s), "");
    store_close(s);
}

Test(store, error_text_never_null)
{
    cr_expect_not_null(store_error(NULL));
    store_close(NULL);
    store *s = (store *)1;
    char err[128];
    cr_expect_eq(store_open(&s, NULL, err, sizeof err), -1);
    cr_expect_null(s);
    cr_expect_neq(err[0], '\0');
}

TestSuite(store_file, .init = tmp_make, .fini = tmp_remove, .timeout = 60); /* one timeout per file: see test_ai304.c */

Test(store_file, file_is_wal_and_versioned)
{
    char path[PATH_MAX], buf[64];
    tmp_path(path, sizeof path, "state.db");
    store *s = open_ok(path);
    cr_expect_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
    store_close(s);
    raw_text(path, "PRAGMA journal_mode", buf, sizeof buf);
    cr_expect_str_eq(buf, "wal");
    raw_text(path, "PRAGMA user_version", buf, sizeof buf);
    cr_expect_str_eq(buf, "5");
}

Test(store_file, reopen_keeps_data)
{
    char path[PATH_MAX], pos[64];
    tmp_path(path, sizeof path, "state.db");
    store *s = open_ok(path);
    int64_t t = new_table(s, 100);
    OK(store_begin(s));
    OK(store_journal_add(s, t, 1, "seat alice 0"));
    OK(store_journal_add(s, t, 2, "seat bob 1"));
    OK(store_outbox_add(s, "console", "#room", "", "", 0, "bob sits down", NULL));
    OK(store_position_set(s, "console", "17"));
    OK(store_commit(s));
    uint8_t seed[STORE_SEED_BYTES], back[STORE_SEED_BYTES];
    for (int i = 0; i < STORE_SEED_BYTES; i++) seed[i] = (uint8_t)(i * 7 + 1);
    OK(store_hand_add(s, t, 1, seed));
    store_standing d = {.user = "alice", .matches = 1, .matches_won = 1, .tokens = 3};
    OK(store_standing_add(s, "console", "#room", &d));
    store_close(s);

    s = open_ok(path);
    cr_expect_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
    journal_seen j = {0};
    OK(store_journal_each(s, t, collect_journal, &j));
    cr_assert_eq(j.n, 2);
    cr_expect_str_eq(j.entry[1], "seat bob 1");
    msgs_seen m = {0};
    OK(store_outbox_pending(s, "console", 0, collect_msg, &m));
    cr_assert_eq(m.n, 1);
    cr_expect_str_eq(m.text[0], "bob sits down");
    cr_expect_eq(store_position_get(s, "console", pos, sizeof pos), 0);
    cr_expect_str_eq(pos, "17");
    cr_expect_eq(store_hand_seed(s, t, 1, back), 0);
    cr_expect_arr_eq(back, seed, STORE_SEED_BYTES);
    store_standing got;
    cr_expect_eq(store_standing_get(s, "console", "#room", "alice", &got), 0);
    cr_expect_eq(got.tokens, 3);
    tables_seen ts = {0};
    OK(store_tables_open(s, collect_table, &ts));
    cr_expect_eq(ts.n, 1);
    store_close(s);
}

Test(store_file, newer_schema_refused)
{
    char path[PATH_MAX], err[256] = "", want[PATH_MAX + 128];
    tmp_path(path, sizeof path, "future.db");
    raw_exec(path, "PRAGMA user_version = 99");
    store *s = (store *)1;
    cr_assert_eq(store_open(&s, path, err, sizeof err), -1);
    cr_expect_null(s);
    snprintf(want, sizeof want,
             "%s was written by a newer cardroom (schema 99; this one knows up to 5)", path);
    cr_expect_str_eq(err, want);
    char buf[16];
    raw_text(path, "PRAGMA user_version", buf, sizeof buf);
    cr_expect_str_eq(buf, "99", "a refused file is left as it was");
}

Test(store_file, garbage_file_refused)
{
    char path[PATH_MAX], err[256] = "";
    tmp_path(path, sizeof path, "notes.txt");
    char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)('a' + i % 26);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(junk, 1, sizeof junk, f), sizeof junk);
    fclose(f);

    store *s = (store *)1;
    cr_assert_eq(store_open(&s, path, err, sizeof err), -1);
    cr_expect_null(s);
    cr_expect(strstr(err, "not a database") != NULL, "message: %s", err);
    cr_expect(strstr(err, path) != NULL, "message names the file: %s", err);

    char back[sizeof junk];
    f = fopen(path, "rb");
    cr_assert_not_null(f);
    cr_expect_eq(fread(back, 1, sizeof back, f), sizeof back);
    cr_expect_eq(fgetc(f), EOF);
    fclose(f);
    cr_expect_arr_eq(back, junk, sizeof junk, "the file is left untouched");
}

Test(store_file, missing_directory_refused)
{
    char path[PATH_MAX], err[256] = "";
    tmp_path(path, sizeof path, "no/such/dir/state.db");
    store *s = NULL;
    cr_expect_eq(store_open(&s, path, err, sizeof err), -1);
    cr_expect_null(s);
    cr_expect(strstr(err, "unable to open") != NULL, "message: %s", err);
}

Test(store_file, text_stored_in_full_read_back_cut)
{
    char path[PATH_MAX], buf[64];
    tmp_path(path, sizeof path, "long.db");
    /* 254 ASCII bytes then "é" (2 bytes) then more: the 255-byte field cannot hold the é. */
    char room[400];
    memset(room, 'r', 254);
    strcpy(room + 254, "\xC3\xA9" "after");
    store *s = open_ok(path);
    int64_t id = 0;
    OK(store_table_create(s, "matrix-with-a-long-name", room, "304", "alice", 5, &id));
    tables_seen ts = {0};
    OK(store_tables_open(s, collect_table, &ts));
    cr_assert_eq(ts.n, 1);
    cr_expect_eq(strlen(ts.t[0].room), 254u, "cut before the two-byte character");
    cr_expect_eq(strncmp(ts.t[0].room, room, 254), 0);
    cr_expect_str_eq(ts.t[0].net, "matrix-with-a-l");
    store_close(s);
    raw_text(path, "SELECT length(CAST(room AS BLOB)) || ' ' || length(net) FROM tables", buf,
             sizeof buf);
    cr_expect_str_eq(buf, "261 23");
}

/* ---- Positions ---- */

Test(store, positions)
{
    store *s = open_ok(":memory:");
    char buf[32] = "junk";
    cr_expect_eq(store_position_get(s, "matrix", buf, sizeof buf), 1, "none yet");
    cr_expect_str_eq(buf, "");
    OK(store_position_set(s, "matrix", "s72594_4483_1934"));
    OK(store_position_set(s, "console", "3"));
    cr_expect_eq(store_position_get(s, "matrix", buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "s72594_4483_1934");
    OK(store_position_set(s, "matrix", "s72600_4490_1940"));
    cr_expect_eq(store_position_get(s, "matrix", buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "s72600_4490_1940");
    cr_expect_eq(store_position_get(s, "console", buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "3");
    cr_expect_eq(store_position_get(s, "irc", buf, sizeof buf), 1);

    /* A position that does not fit is an error, never a silently cut token. */
    char small[8];
    cr_expect_eq(store_position_get(s, "matrix", small, sizeof small), -1);
    cr_expect(strstr(store_error(s), "buffer") != NULL, "%s", store_error(s));
    store_close(s);
}

/* ---- Tables ---- */

Test(store, tables_create_close_touch)
{
    store *s = open_ok(":memory:");
    int64_t a, b, c, d;
    OK(store_table_create(s, "matrix", "!a:x.org", "304", "@alice:x.org", 300, &a));
    OK(store_table_create(s, "irc", "#cards", "grid", "bob", 100, &b));
    OK(store_table_create(s, "console", "#room", "304", "you", 200, &c));
    OK(store_table_create(s, "console", "#other", "304", "you", 200, &d));
    cr_expect(a < b && b < c && c < d);

    tables_seen ts = {0};
    OK(store_tables_open(s, collect_table, &ts));
    cr_assert_eq(ts.n, 4);
    cr_expect_eq(ts.t[0].id, b, "oldest first");
    cr_expect_eq(ts.t[1].id, c, "same time: in creation order");
    cr_expect_eq(ts.t[2].id, d);
    cr_expect_eq(ts.t[3].id, a);
    cr_expect_str_eq(ts.t[3].net, "matrix");
    cr_expect_str_eq(ts.t[3].room, "!a:x.org");
    cr_expect_str_eq(ts.t[3].game, "304");
    cr_expect_str_eq(ts.t[3].creator, "@alice:x.org");
    cr_expect_eq(ts.t[3].created, 300);
    cr_expect_eq(ts.t[3].touched, 300);

    OK(store_table_touch(s, a, 450));
    OK(store_table_close(s, c, "finished", 500));
    OK(store_table_close(s, b, "idle", 510));
    ts.n = 0;
    OK(store_tables_open(s, collect_table, &ts));
    cr_assert_eq(ts.n, 2);
    cr_expect_eq(ts.t[0].id, d);
    cr_expect_eq(ts.t[1].id, a);
    cr_expect_eq(ts.t[1].created, 300);
    cr_expect_eq(ts.t[1].touched, 450);

    cr_expect_eq(store_table_close(s, c, "aborted", 600), -1, "already closed");
    cr_expect(strstr(store_error(s), "already closed") != NULL, "%s", store_error(s));
    cr_expect_eq(store_table_close(s, 999, "aborted", 600), -1);
    cr_expect_eq(store_table_touch(s, 999, 600), -1);
    cr_expect(strstr(store_error(s), "999") != NULL, "%s", store_error(s));
    store_close(s);
}

/* ---- Journal ---- */

Test(store, journal_in_order_and_no_duplicates)
{
    store *s = open_ok(":memory:");
    int64_t t = new_table(s, 1), u = new_table(s, 2);
    OK(store_journal_add(s, t, 3, "play JS"));
    OK(store_journal_add(s, t, 1, "bid 160"));
    OK(store_journal_add(s, u, 1, "pass"));
    OK(store_journal_add(s, t, 2, "pass"));

    journal_seen j = {0};
    OK(store_journal_each(s, t, collect_journal, &j));
    cr_assert_eq(j.n, 3);
    for (int i = 0; i < 3; i++) cr_expect_eq(j.seq[i], i + 1);
    cr_expect_str_eq(j.entry[0], "bid 160");
    cr_expect_str_eq(j.entry[2], "play JS");

    /* Applying a move twice fails, whatever the entry says, and does not echo it. */
    cr_expect_eq(store_journal_add(s, t, 2, "SECRET-trump-7S"), -1);
    cr_expect(strstr(store_error(s), "UNIQUE") != NULL, "%s", store_error(s));
    cr_expect(strstr(store_error(s), "SECRET") == NULL, "%s", store_error(s));
    cr_expect_eq(store_journal_add(s, 999, 1, "x"), -1, "no such table (foreign key)");
    cr_expect(strstr(store_error(s), "FOREIGN KEY") != NULL, "%s", store_error(s));
    cr_expect_eq(store_journal_add(s, t, 0, "x"), -1, "numbered from 1");

    /* A batch that hits the duplicate is rolled back whole. */
    OK(store_begin(s));
    OK(store_journal_add(s, t, 4, "play 9S"));
    OK(store_journal_add(s, t, 5, "play AS"));
    cr_expect_eq(store_journal_add(s, t, 3, "play JS"), -1);
    OK(store_rollback(s));
    j.n = 0;
    OK(store_journal_each(s, t, collect_journal, &j));
    cr_expect_eq(j.n, 3);
    cr_expect_eq(j.seq[j.n - 1], 3);

    j.n = 0;
    OK(store_journal_each(s, 12345, collect_journal, &j));
    cr_expect_eq(j.n, 0);
    store_close(s);
}

/* ---- Hands ---- */

Test(store, hand_seeds)
{
    store *s = open_ok(":memory:");
    int64_t t = new_table(s, 1);
    uint8_t a[STORE_SEED_BYTES], b[STORE_SEED_BYTES], back[STORE_SEED_BYTES];
    for (int i = 0; i < STORE_SEED_BYTES; i++) {
        a[i] = (uint8_t)(255 - i);
        b[i] = (uint8_t)(i == 5 ? 0 : i * 3); /* a zero byte inside is kept */
    }
    OK(store_hand_add(s, t, 1, a));
    OK(store_hand_add(s, t, 2, b));
    cr_expect_eq(store_hand_seed(s, t, 2, back), 0);
    cr_expect_arr_eq(back, b, STORE_SEED_BYTES);
    cr_expect_eq(store_hand_seed(s, t, 1, back), 0);
    cr_expect_arr_eq(back, a, STORE_SEED_BYTES);
    cr_expect_eq(store_hand_seed(s, t, 3, back), 1);
    cr_expect_eq(store_hand_seed(s, t + 1, 1, back), 1);
    cr_expect_eq(store_hand_add(s, t, 1, b), -1, "a hand's seed is fixed");
    cr_expect_eq(store_hand_seed(s, t, 1, back), 0);
    cr_expect_arr_eq(back, a, STORE_SEED_BYTES);
    cr_expect_eq(store_hand_add(s, 777, 1, a), -1, "no such table");
    store_close(s);
}

/* ---- Outbox ---- */

Test(store, outbox_pending_done_all)
{
    store *s = open_ok(":memory:");
    int64_t id[6];
    OK(store_outbox_add(s, "matrix", "!r:x", "", "@bob:x", 0, "your turn, Bob", &id[0]));
    OK(store_outbox_add(s, "irc", "#cards", "", "", 0, "irc one", &id[1]));
    OK(store_outbox_add(s, "matrix", "!r:x", "@bob:x", "", 0, "your cards: JS 9S", &id[2]));
    OK(store_outbox_add(s, "matrix", "!r:x", NULL, NULL, 0, "third", &id[3]));
    OK(store_outbox_add(s, "irc", "#cards", "carol", "", 0, "irc two", &id[4]));
    OK(store_outbox_add(s, "matrix", "!r:x", "", "", 0, "fourth", &id[5]));
    for (int i = 1; i < 6; i++) cr_expect_gt(id[i], id[i - 1]);

    msgs_seen m = {0};
    OK(store_outbox_pending(s, "matrix", 0, collect_msg, &m));
    cr_assert_eq(m.n, 4);
    cr_expect_eq(m.msg[0].id, id[0]);
    cr_expect_str_eq(m.msg[0].mention, "@bob:x");
    cr_expect_str_eq(m.msg[0].user, "");
    cr_expect_str_eq(m.msg[1].user, "@bob:x");
    cr_expect_str_eq(m.msg[1].room, "!r:x");
    cr_expect_str_eq(m.msg[1].net, "matrix");
    cr_expect_str_eq(m.text[1], "your cards: JS 9S");
    cr_expect_str_eq(m.msg[2].user, "", "NULL user is the room");
    cr_expect_eq(m.msg[3].id, id[5]);

    m.n = 0;
    OK(store_outbox_pending(s, "matrix", 2, collect_msg, &m));
    cr_assert_eq(m.n, 2, "limit");
    cr_expect_eq(m.msg[1].id, id[2]);

    OK(store_outbox_done(s, id[0]));
    OK(store_outbox_done(s, id[2]));
    OK(store_outbox_done(s, id[2]));
    m.n = 0;
    OK(store_outbox_pending(s, "matrix", 0, collect_msg, &m));
    cr_assert_eq(m.n, 2);
    cr_expect_eq(m.msg[0].id, id[3]);
    cr_expect_eq(m.msg[1].id, id[5]);
    m.n = 0;
    OK(store_outbox_pending(s, "irc", 0, collect_msg, &m));
    cr_assert_eq(m.n, 2);
    cr_expect_str_eq(m.msg[1].user, "carol");
    m.n = 0;
    OK(store_outbox_pending(s, "console", 0, collect_msg, &m));
    cr_expect_eq(m.n, 0);

    m.n = 0;
    OK(store_outbox_all(s, collect_msg, &m));
    cr_assert_eq(m.n, 6, "sent or not");
    for (int i = 0; i < 6; i++) cr_expect_eq(m.msg[i].id, id[i]);

    cr_expect_eq(store_outbox_done(s, 4242), -1);
    store_close(s);
}

Test(store, outbox_long_text_whole)
{
    store *s = open_ok(":memory:");
    size_t n = 100000;
    char *text = malloc(n + 1);
    cr_assert_not_null(text);
    for (size_t i = 0; i < n; i++) text[i] = (char)('A' + i % 23);
    text[n] = '\0';
    char user[300];
    memset(user, 'u', sizeof user - 1);
    user[sizeof user - 1] = '\0';
    OK(store_outbox_add(s, "irc", "#cards", user, "", 0, text, NULL));
    msgs_seen m = {0};
    OK(store_outbox_all(s, collect_msg, &m));
    cr_assert_eq(m.n, 1);
    cr_expect_eq(m.text_len[0], n, "text is never cut");
    cr_expect_eq(strlen(m.msg[0].user), sizeof m.msg[0].user - 1, "user cut to the field");
    free(text);
    store_close(s);
}

/* ---- Transactions ---- */

Test(store, rollback_leaves_nothing_of_the_batch)
{
    store *s = open_ok(":memory:");
    int64_t t = new_table(s, 1);
    char pos[16];
    OK(store_begin(s));
    OK(store_journal_add(s, t, 1, "bid 160"));
    OK(store_outbox_add(s, "console", "#room", "", "", 0, "alice bids 160", NULL));
    OK(store_position_set(s, "console", "1"));
    OK(store_rollback(s));

    journal_seen j = {0};
    OK(store_journal_each(s, t, collect_journal, &j));
    cr_expect_eq(j.n, 0);
    msgs_seen m = {0};
    OK(store_outbox_all(s, collect_msg, &m));
    cr_expect_eq(m.n, 0);
    cr_expect_eq(store_position_get(s, "console", pos, sizeof pos), 1);

    OK(store_begin(s));
    OK(store_journal_add(s, t, 1, "bid 160"));
    OK(store_outbox_add(s, "console", "#room", "", "", 0, "alice bids 160", NULL));
    OK(store_position_set(s, "console", "1"));
    OK(store_commit(s));
    OK(store_journal_each(s, t, collect_journal, &j));
    cr_expect_eq(j.n, 1);
    OK(store_outbox_all(s, collect_msg, &m));
    cr_expect_eq(m.n, 1);
    cr_expect_eq(store_position_get(s, "console", pos, sizeof pos), 0);
    store_close(s);
}

Test(store, transactions_do_not_nest)
{
    store *s = open_ok(":memory:");
    OK(store_begin(s));
    cr_expect_eq(store_begin(s), -1);
    cr_expect(strstr(store_error(s), "already open") != NULL, "%s", store_error(s));
    OK(store_commit(s));
    cr_expect_eq(store_commit(s), -1, "nothing to commit");
    cr_expect(strstr(store_error(s), "no transaction") != NULL, "%s", store_error(s));
    OK(store_rollback(s)); /* nothing open: nothing to undo */
    OK(store_begin(s));
    OK(store_rollback(s));
    store_close(s);
}

Test(store, close_with_open_transaction_rolls_back, .init = tmp_make, .fini = tmp_remove)
{
    char path[PATH_MAX];
    tmp_path(path, sizeof path, "state.db");
    store *s = open_ok(path);
    int64_t t = new_table(s, 1);
    OK(store_begin(s));
    OK(store_journal_add(s, t, 1, "bid 160"));
    store_close(s);
    s = open_ok(path);
    journal_seen j = {0};
    OK(store_journal_each(s, t, collect_journal, &j));
    cr_expect_eq(j.n, 0);
    store_close(s);
}

/* ---- Standings ---- */

Test(store, standings)
{
    store *s = open_ok(":memory:");
    store_standing got;
    cr_expect_eq(store_standing_get(s, "irc", "#cards", "alice", &got), 1);

    store_standing d1 = {.user = "alice", .matches = 1, .matches_won = 1, .made = 2, .failed = 1,
                         .tokens = 5, .hands = 9};
    store_standing d2 = {.user = "alice", .matches = 1, .failed = 2, .tokens = -7, .hands = 6};
    OK(store_standing_add(s, "irc", "#cards", &d1));
    OK(store_standing_add(s, "irc", "#cards", &d2));
    cr_assert_eq(store_standing_get(s, "irc", "#cards", "alice", &got), 0);
    cr_expect_str_eq(got.user, "alice");
    cr_expect_eq(got.matches, 2);
    cr_expect_eq(got.matches_won, 1);
    cr_expect_eq(got.made, 2);
    cr_expect_eq(got.failed, 3);
    cr_expect_eq(got.tokens, -2);
    cr_expect_eq(got.hands, 15);
    cr_expect_eq(store_standing_get(s, "irc", "#other", "alice", &got), 1, "per room");
    cr_expect_eq(store_standing_get(s, "matrix", "#cards", "alice", &got), 1, "per network");

    /* alice 1 won, -2 tokens; bob 2 won, 1; carol 1 won, 4; dave 1 won, 4; erin 0 won, 9. */
    store_standing rows[] = {
        {.user = "bob", .matches_won = 2, .tokens = 1},
        {.user = "dave", .matches_won = 1, .tokens = 4},
        {.user = "carol", .matches_won = 1, .tokens = 4},
        {.user = "erin", .tokens = 9},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        OK(store_standing_add(s, "irc", "#cards", &rows[i]));
    OK(store_standing_add(s, "irc", "#other", &rows[3]));

    standings_seen top = {0};
    OK(store_standings_top(s, "irc", "#cards", 0, collect_standing, &top));
    const char *want[] = {"bob", "carol", "dave", "alice", "erin"};
    cr_assert_eq(top.n, 5);
    for (int i = 0; i < 5; i++) cr_expect_str_eq(top.row[i].user, want[i], "place %d", i + 1);
    cr_expect_eq(top.row[3].tokens, -2);
    cr_expect_eq(top.row[4].tokens, 9);

    top.n = 0;
    OK(store_standings_top(s, "irc", "#cards", 2, collect_standing, &top));
    cr_assert_eq(top.n, 2, "limit");
    cr_expect_str_eq(top.row[1].user, "carol");
    top.n = 0;
    OK(store_standings_top(s, "irc", "#other", 0, collect_standing, &top));
    cr_expect_eq(top.n, 1);
    store_close(s);
}

/* ---- Callbacks ---- */

Test(store, callbacks_stop_early_with_their_value)
{
    store *s = open_ok(":memory:");
    int64_t t = new_table(s, 1);
    new_table(s, 2);
    OK(store_journal_add(s, t, 1, "a"));
    OK(store_journal_add(s, t, 2, "b"));
    OK(store_outbox_add(s, "console", "#room", "", "", 0, "one", NULL));
    OK(store_outbox_add(s, "console", "#room", "", "", 0, "two", NULL));
    store_standing a = {.user = "a"}, b = {.user = "b"};
    OK(store_standing_add(s, "console", "#room", &a));
    OK(store_standing_add(s, "console", "#room", &b));

    int calls = 0;
    cr_expect_eq(store_journal_each(s, t, stop_journal, &calls), 7);
    cr_expect_eq(calls, 1);
    calls = 0;
    cr_expect_eq(store_tables_open(s, stop_table, &calls), 7);
    cr_expect_eq(calls, 1);
    calls = 0;
    cr_expect_eq(store_outbox_pending(s, "console", 0, stop_msg, &calls), 7);
    cr_expect_eq(calls, 1);
    calls = 0;
    cr_expect_eq(store_outbox_all(s, stop_msg, &calls), 7);
    cr_expect_eq(calls, 1);
    calls = 0;
    cr_expect_eq(store_standings_top(s, "console", "#room", 0, stop_standing, &calls), 7);
    cr_expect_eq(calls, 1);

    /* Stopping early leaves the statements ready: a full pass still sees everything. */
    journal_seen j = {0};
    OK(store_journal_each(s, t, collect_journal, &j));
    cr_expect_eq(j.n, 2);
    store_close(s);
}

typedef struct {
    store *s;
    int inner_rc;
    char inner_err[256];
} reentry;

static int try_reenter(void *ctx, const store_msg *m)
{
    reentry *r = ctx;
    r->inner_rc = store_outbox_done(r->s, m->id);
    snprintf(r->inner_err, sizeof r->inner_err, "%s", store_error(r->s));
    return 0;
}

Test(store, callbacks_may_not_reenter)
{
    store *s = open_ok(":memory:");
    OK(store_outbox_add(s, "console", "#room", "", "", 0, "one", NULL));
    reentry r = {.s = s};
    OK(store_outbox_pending(s, "console", 0, try_reenter, &r));
    cr_expect_eq(r.inner_rc, -1);
    cr_expect(strstr(r.inner_err, "callback") != NULL, "%s", r.inner_err);
    /* After the iteration the store works as before. */
    msgs_seen m = {0};
    OK(store_outbox_pending(s, "console", 0, collect_msg, &m));
    cr_expect_eq(m.n, 1, "the refused call changed nothing");
    OK(store_outbox_done(s, m.msg[0].id));
    store_close(s);
}

/* ---- Crash safety ----
 * A child appends committed batches (k journal entries, k outbox messages and the position,
 * one transaction) as fast as it can until it is SIGKILLed at an arbitrary moment. After each
 * kill the parent reopens the file and checks that what is there is exactly whole batches:
 * journal seqs 1..n with no gap, n outbox messages in the same order, and position n. The
 * same file carries on through all the runs, so recovery is tested repeatedly too. */

#define CRASH_RUNS 20
#define CRASH_NET "console"

static void crash_child(const char *path, int64_t table, int ready_fd)
{
    store *s = NULL;
    char err[256], pos[32], entry[48];
    if (store_open(&s, path, err, sizeof err)) _exit(2);
    int64_t n = 0;
    int r = store_position_get(s, CRASH_NET, pos, sizeof pos);
    if (r < 0) _exit(3);
    if (r == 0) n = strtoll(pos, NULL, 10);
    unsigned rng = (unsigned)getpid();
    for (int batch = 0;; batch++) {
        int k = 1 + rand_r(&rng) % 40;
        if (store_begin(s)) _exit(4);
        for (int i = 0; i < k; i++) {
            n++;
            snprintf(entry, sizeof entry, "play %lld", (long long)n);
            if (store_journal_add(s, table, n, entry) ||
                store_outbox_add(s, CRASH_NET, "#room", "", "", 0, entry, NULL))
                _exit(5);
        }
        snprintf(pos, sizeof pos, "%lld", (long long)n);
        if (store_position_set(s, CRASH_NET, pos) || store_commit(s)) _exit(6);
        if (batch == 0) {
            if (write(ready_fd, "x", 1) != 1) _exit(7);
            close(ready_fd);
        }
    }
}

typedef struct {
    int64_t n;
    int bad;
} crash_check;

static int check_journal_seq(void *ctx, int64_t seq, const char *entry)
{
    crash_check *c = ctx;
    char want[48];
    snprintf(want, sizeof want, "play %lld", (long long)(c->n + 1));
    if (seq != c->n + 1 || strcmp(entry, want) != 0) c->bad++;
    c->n = seq;
    return 0;
}

static int check_outbox_seq(void *ctx, const store_msg *m)
{
    crash_check *c = ctx;
    char want[48];
    c->n++;
    snprintf(want, sizeof want, "play %lld", (long long)c->n);
    if (strcmp(m->text, want) != 0) c->bad++;
    return 0;
}

Test(store_file, commits_are_atomic_under_sigkill)
{
    char path[PATH_MAX], pos[32];
    tmp_path(path, sizeof path, "crash.db");
    store *s = open_ok(path);
    int64_t table = new_table(s, 1);
    store_close(s);

    int64_t before = 0;
    for (int run = 0; run < CRASH_RUNS; run++) {
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            close(fds[0]);
            crash_child(path, table, fds[1]);
        }
        close(fds[1]);
        char c;
        ssize_t got = read(fds[0], &c, 1);
        close(fds[0]);
        /* Kill 0..~100 ms after the first commit, spread over the runs plus some jitter. */
        struct timespec delay = {0, ((run * 37) % 20) * 5000000L + (rand() % 1000) * 1000L};
        nanosleep(&delay, NULL);
        kill(pid, SIGKILL);
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "run %d: the writer stopped by itself (exit %d)", run,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        cr_assert_eq(got, 1, "run %d: the writer never committed", run);

        s = open_ok(path);
        int64_t n = 0;
        cr_assert_eq(store_position_get(s, CRASH_NET, pos, sizeof pos), 0, "run %d", run);
        n = strtoll(pos, NULL, 10);
        cr_expect_gt(n, before, "run %d: at least the first batch is there", run);
        crash_check j = {0}, m = {0};
        OK(store_journal_each(s, table, check_journal_seq, &j));
        OK(store_outbox_all(s, check_outbox_seq, &m));
        cr_assert_eq(j.bad, 0, "run %d: journal has a gap or a wrong entry", run);
        cr_assert_eq(j.n, n, "run %d: journal ends at %lld, position says %lld", run,
                     (long long)j.n, (long long)n);
        cr_assert_eq(m.bad, 0, "run %d: outbox out of order", run);
        cr_assert_eq(m.n, n, "run %d: %lld outbox messages for %lld journal entries", run,
                     (long long)m.n, (long long)n);
        store_close(s);
        before = n;
    }
}

/* ---- Keyed values and the migration that brought them ---- */

static int collect_kv(void *ctx, const char *key, const char *value)
{
    char *out = ctx;
    strcat(out, key);
    strcat(out, "=");
    strcat(out, value);
    strcat(out, ";");
    return 0;
}

Test(store, kv_put_get_del_each)
{
    store *s = open_ok(":memory:");
    char *v = (char *)1, seen[256] = "";
    cr_expect_eq(store_kv_get(s, "olm", "account", &v), 1);
    cr_expect_null(v);
    OK(store_kv_put(s, "olm", "account", "pickle-1"));
    OK(store_kv_put(s, "olm", "account", "pickle-2"));
    OK(store_kv_put(s, "olm.session", "b", "2"));
    OK(store_kv_put(s, "olm.session", "a", "1"));
    OK(store_kv_put(s, "olm.sessionx", "c", "3"));
    cr_expect_eq(store_kv_get(s, "olm", "account", &v), 0);
    cr_expect_str_eq(v, "pickle-2");
    free(v);
    OK(store_kv_each(s, "olm.session", collect_kv, seen));
    cr_expect_str_eq(seen, "a=1;b=2;", "one namespace, in key order");
    OK(store_kv_del(s, "olm.session", "a"));
    OK(store_kv_del(s, "olm.session", "nothing"));
    seen[0] = 0;
    OK(store_kv_each(s, "olm.session", collect_kv, seen));
    cr_expect_str_eq(seen, "b=2;");
    /* inside a transaction, rolled back */
    OK(store_begin(s));
    OK(store_kv_put(s, "olm", "account", "lost"));
    OK(store_rollback(s));
    cr_expect_eq(store_kv_get(s, "olm", "account", &v), 0);
    cr_expect_str_eq(v, "pickle-2");
    free(v);
    /* a refused write names its namespace, never its value */
    cr_expect_eq(store_kv_put(s, "olm.session", "c", NULL), -1);
    cr_expect(strstr(store_error(s), "kv put (olm.session): NOT NULL"), "%s", store_error(s));
    store_close(s);
}

/* What schema 4 had: the outbox without wire forms and merges. */
#define SCHEMA_4_OUTBOX "ALTER TABLE outbox DROP COLUMN wire; ALTER TABLE outbox DROP COLUMN merged_into;"

Test(store_file, schema_1_migrates)
{
    char path[PATH_MAX], pos[64];
    tmp_path(path, sizeof path, "old.db");
    store *s = open_ok(path);
    OK(store_position_set(s, "matrix", "s42_1"));
    store_close(s);
    raw_exec(path, SCHEMA_4_OUTBOX "DROP TABLE kv; DROP TABLE inbox; DROP TABLE ignored; ALTER TABLE outbox DROP COLUMN notice; "
             "PRAGMA user_version = 1"); /* schema 1 */
    s = open_ok(path);
    cr_expect_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
    cr_expect_eq(store_position_get(s, "matrix", pos, sizeof pos), 0);
    cr_expect_str_eq(pos, "s42_1", "the data of schema 1 is kept");
    OK(store_kv_put(s, "olm", "account", "x"));
    store_close(s);
}

/* ---- The inbox and the ignored users (schema 4) ---- */

typedef struct {
    int n;
    store_inbox rows[8];
    char text[8][64];
} inbox_rows;

static int collect_inbox(void *ctx, const store_inbox *row)
{
    inbox_rows *l = ctx;
    cr_assert_lt(l->n, 8);
    l->rows[l->n] = *row;
    snprintf(l->text[l->n], sizeof l->text[0], "%s", row->text);
    l->rows[l->n].text = l->text[l->n];
    l->n++;
    return 0;
}

Test(store, inbox_in_order_moved_and_done)
{
    store *s = open_ok(":memory:");
    int64_t t1 = new_table(s, 100), t2 = new_table(s, 100), a, b, c;
    store_inbox m = {.table = t1, .net = "irc", .what = "message", .room = "#r", .user = "alice", .origin = "a@h",
                     .text = "!play JH", .moderator = 1};
    store_inbox n = {.table = t1, .net = "irc", .what = "rename", .room = "#r", .user = "alice", .origin = "a@h",
                     .renamed_to = "alice2"};
    store_inbox p = {.table = t1, .net = "matrix", .what = "message", .user = "@b:x", .text = "hand", .is_private = 1};
    store_inbox f = {.table = t1, .net = "matrix", .what = "settle"};
    OK(store_begin(s));
    OK(store_inbox_add(s, &m, &a));
    OK(store_inbox_add(s, &n, NULL));
    OK(store_inbox_add(s, &p, &b));
    OK(store_inbox_add(s, &f, &c));
    OK(store_commit(s));
    cr_expect(a < b && b < c);
    OK(store_inbox_move(s, b, t2));
    inbox_rows l = {0};
    OK(store_inbox_each(s, collect_inbox, &l));
    cr_assert_eq(l.n, 4);
    cr_expect_eq(l.rows[0].id, a);
    cr_expect_eq(l.rows[0].table, t1);
    cr_expect_str_eq(l.rows[0].net, "irc");
    cr_expect_str_eq(l.rows[0].what, "message");
    cr_expect_str_eq(l.rows[0].room, "#r");
    cr_expect_str_eq(l.rows[0].user, "alice");
    cr_expect_str_eq(l.rows[0].origin, "a@h");
    cr_expect_str_eq(l.rows[0].renamed_to, "");
    cr_expect_str_eq(l.rows[0].text, "!play JH");
    cr_expect_eq(l.rows[0].moderator, 1);
    cr_expect_eq(l.rows[0].is_private, 0);
    cr_expect_str_eq(l.rows[1].what, "rename");
    cr_expect_str_eq(l.rows[1].renamed_to, "alice2");
    cr_expect_eq(l.rows[2].table, t2, "moved to the other table");
    cr_expect_str_eq(l.rows[2].room, "");
    cr_expect_str_eq(l.rows[2].origin, "");
    cr_expect_eq(l.rows[2].is_private, 1);
    cr_expect_str_eq(l.rows[3].what, "settle");
    cr_expect_str_eq(l.rows[3].text, "");
    OK(store_inbox_done(s, a));
    cr_expect_eq(store_inbox_done(s, a), -1, "a row is done once");
    cr_expect_eq(store_inbox_move(s, a, t2), -1, "a row that is done cannot move");
    store_inbox bad = {.table = 999, .net = "matrix", .what = "settle"};
    cr_expect_eq(store_inbox_add(s, &bad, NULL), -1, "a row names a table that exists");
    memset(&l, 0, sizeof l);
    OK(store_inbox_each(s, collect_inbox, &l));
    cr_expect_eq(l.n, 3);
    store_close(s);
}

typedef struct {
    int n;
    char who[4][64];
} ignored_rows;

static int collect_ignored(void *ctx, const char *net, const char *user)
{
    ignored_rows *l = ctx;
    cr_assert_lt(l->n, 4);
    snprintf(l->who[l->n++], sizeof l->who[0], "%s/%s", net, user);
    return 0;
}

Test(store, ignored_users_per_network)
{
    store *s = open_ok(":memory:");
    cr_expect_eq(store_ignore_add(s, "matrix", "@spam:x", "@admin:x", 100), 0);
    cr_expect_eq(store_ignore_add(s, "matrix", "@spam:x", "@admin:x", 200), 1, "already ignored");
    cr_expect_eq(store_ignore_add(s, "irc", "spam", "$a:admin", 100), 0);
    ignored_rows l = {0};
    OK(store_ignored_each(s, collect_ignored, &l));
    cr_assert_eq(l.n, 2);
    cr_expect_str_eq(l.who[0], "irc/spam");
    cr_expect_str_eq(l.who[1], "matrix/@spam:x");
    cr_expect_eq(store_ignore_del(s, "matrix", "@spam:x"), 0);
    cr_expect_eq(store_ignore_del(s, "matrix", "@spam:x"), 1, "no longer ignored");
    memset(&l, 0, sizeof l);
    OK(store_ignored_each(s, collect_ignored, &l));
    cr_assert_eq(l.n, 1);
    cr_expect_str_eq(l.who[0], "irc/spam");
    store_close(s);
}

Test(store_file, schema_3_migrates)
{
    char path[PATH_MAX], pos[64];
    tmp_path(path, sizeof path, "two.db");
    store *s = open_ok(path);
    OK(store_position_set(s, "matrix", "s42_1"));
    int64_t t = new_table(s, 100);
    OK(store_journal_add(s, t, 1, "join 0 alice"));
    store_close(s);
    raw_exec(path, SCHEMA_4_OUTBOX "DROP TABLE inbox; DROP TABLE ignored; PRAGMA user_version = 3"); /* before the inbox */
    s = open_ok(path);
    cr_expect_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
    cr_expect_eq(store_position_get(s, "matrix", pos, sizeof pos), 0);
    cr_expect_str_eq(pos, "s42_1", "the data of schema 3 is kept");
    journal_seen j = {0};
    OK(store_journal_each(s, t, collect_journal, &j));
    cr_expect_eq(j.n, 1);
    store_inbox f = {.table = t, .net = "matrix", .what = "settle"};
    OK(store_inbox_add(s, &f, NULL));
    cr_expect_eq(store_ignore_add(s, "matrix", "@spam:x", "@admin:x", 100), 0);
    store_close(s);
}

/* A database of schema 2, written by cardroom 0.1.0 (the migration fixture), gains the outbox's
 * notice column: its messages stay, sent or not, as plain messages, and a notice round-trips. */
Test(store_file, schema_2_migrates_to_3)
{
    char path[PATH_MAX], buf[16];
    tmp_path(path, sizeof path, "v2.db");
    FILE *f = fopen(SOURCE_DIR "/tests/data/journal-0.1.0/tables.sql", "r");
    cr_assert_not_null(f);
    char *sql = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&sql, &len);
    for (int ch; (ch = fgetc(f)) != EOF;) fputc(ch, m);
    fclose(f);
    fclose(m);
    raw_exec(path, sql);
    free(sql);
    raw_text(path, "PRAGMA user_version", buf, sizeof buf);
    cr_assert_str_eq(buf, "2");
    raw_text(path, "SELECT count(*) FROM outbox WHERE sent = 0", buf, sizeof buf);
    int pending = atoi(buf);
    raw_text(path, "SELECT count(*) FROM outbox", buf, sizeof buf);
    int all = atoi(buf);
    cr_assert_gt(all, 16, "the fixture has an outbox");

    store *s = open_ok(path);
    cr_expect_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
    raw_text(path, "SELECT count(*) FROM outbox WHERE notice = 0", buf, sizeof buf);
    cr_expect_eq(atoi(buf), all, "every old message is a plain one");
    raw_text(path, "SELECT count(*) FROM outbox WHERE sent = 0", buf, sizeof buf);
    cr_expect_eq(atoi(buf), pending, "unsent messages stay unsent");
    int64_t id;
    OK(store_outbox_add(s, "irc", "#cards", "carol", "", 1, "Commands: …", &id));
    OK(store_outbox_add(s, "irc", "#cards", "carol", "", 0, "Your hand: …", NULL));
    msgs_seen seen = {0};
    OK(store_outbox_pending(s, "irc", 0, collect_msg, &seen));
    cr_assert_eq(seen.n, 2);
    cr_expect_eq(seen.msg[0].id, id);
    cr_expect_eq(seen.msg[0].notice, 1);
    cr_expect_eq(seen.msg[1].notice, 0);
    store_close(s);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_expect_eq(sqlite3_exec(db, "INSERT INTO outbox(net, room, text, notice) VALUES ('irc', '#x', 'x', 2)", NULL, NULL,
                              NULL), SQLITE_CONSTRAINT, "a notice is 0 or 1");
    sqlite3_close(db);
}

/* ---- Faults: which kind a failure is ---- */

Test(store, faults_are_classified)
{
    store *s = open_ok(":memory:");
    int64_t t = new_table(s, 100);
    OK(store_journal_add(s, t, 1, "join 0"));
    cr_expect_eq(store_journal_add(s, t, 1, "join 0"), -1);
    cr_expect_eq(store_fault_of(s), STORE_FAULT_NONE, "a broken rule is no fault of the disk");
    OK(store_begin(s));
    cr_expect_eq(store_begin(s), -1);
    cr_expect_eq(store_fault_of(s), STORE_FAULT_NONE, "a wrong call neither");
    OK(store_rollback(s));
    cr_expect_eq(store_fault_of(NULL), STORE_FAULT_OTHER);
    cr_expect_str_eq(store_fault_text(STORE_FAULT_FULL), "the disk is full");
    cr_expect_str_eq(store_fault_text(STORE_FAULT_READONLY), "the database file is read-only");
    cr_expect_str_eq(store_fault_text(STORE_FAULT_BUSY), "another program holds the database");
    cr_expect_str_eq(store_fault_text(STORE_FAULT_IO), "the disk fails to read or write");
    cr_expect_str_eq(store_fault_text(STORE_FAULT_CORRUPT), "the database file is damaged");
    store_close(s);
}

Test(store_file, a_write_lock_elsewhere_is_a_busy_fault)
{
    char path[PATH_MAX];
    tmp_path(path, sizeof path, "busy.db");
    store *s = open_ok(path);
    sqlite3 *other = NULL;
    cr_assert_eq(sqlite3_open(path, &other), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    cr_expect_eq(store_probe(s, 1), -1, "written while another connection holds the write lock");
    cr_expect_eq(store_fault_of(s), STORE_FAULT_BUSY, "%s", store_error(s));
    cr_expect(strstr(store_error(s), "locked"), "%s", store_error(s));
    cr_assert_eq(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    OK(store_probe(s, 2));
    char *v = NULL;
    cr_expect_eq(store_kv_get(s, "store", "probe", &v), 0);
    cr_expect_str_eq(v, "2", "the probe commits a row");
    free(v);
    store_close(s);
}

/* ---- One bot per database ---- */

Test(store_file, exclusive_open_holds_the_file_until_closed)
{
    char path[PATH_MAX], lock[PATH_MAX + 8], err[512] = "", pid[32];
    tmp_path(path, sizeof path, "owned.db");
    snprintf(lock, sizeof lock, "%s.lock", path);
    store *a = NULL, *b = (store *)1;
    cr_assert_eq(store_open_exclusive(&a, path, err, sizeof err), 0, "%s", err);
    FILE *f = fopen(lock, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(pid, sizeof pid, f));
    fclose(f);
    cr_expect_eq(strtol(pid, NULL, 10), (long)getpid(), "the lock file names its holder: %s", pid);

    cr_expect_eq(store_open_exclusive(&b, path, err, sizeof err), 1);
    cr_expect_null(b);
    char want[PATH_MAX + 200];
    snprintf(want, sizeof want, "%s is in use by another cardroom (process %ld): one bot per database (stop that "
             "one, or give this one another database)", path, (long)getpid());
    cr_expect_str_eq(err, want);
    store *reader = open_ok(path); /* a plain open (a test, a tool) is not refused */
    store_close(reader);

    store_close(a);
    cr_assert_eq(store_open_exclusive(&b, path, err, sizeof err), 0, "after the holder closed: %s", err);
    store_close(b);
    store *m1 = NULL, *m2 = NULL;
    cr_expect_eq(store_open_exclusive(&m1, ":memory:", err, sizeof err), 0, "a database in memory is nobody else's");
    cr_expect_eq(store_open_exclusive(&m2, ":memory:", err, sizeof err), 0);
    store_close(m1);
    store_close(m2);
}

/* ---- Pruning ---- */

static int count_rows(const char *path, const char *sql)
{
    char buf[32];
    raw_text(path, sql, buf, sizeof buf);
    return atoi(buf);
}

Test(store_file, prune_drops_old_finished_journals_and_delivered_messages)
{
    char path[PATH_MAX];
    uint8_t seed[STORE_SEED_BYTES] = {1};
    tmp_path(path, sizeof path, "prune.db");
    store *s = open_ok(path);
    int64_t old1 = new_table(s, 100), old2 = new_table(s, 200), recent = new_table(s, 300), open = new_table(s, 400);
    int64_t ids[4] = {old1, old2, recent, open};
    for (int i = 0; i < 4; i++) {
        OK(store_journal_add(s, ids[i], 1, "join 0"));
        OK(store_journal_add(s, ids[i], 2, "start"));
        OK(store_hand_add(s, ids[i], 1, seed));
    }
    OK(store_table_close(s, old1, "finished", 1000));
    OK(store_table_close(s, old2, "aborted", 1500));
    OK(store_table_close(s, recent, "finished", 5000));
    store_standing row = {.user = "alice", .hands = 3, .matches = 1};
    OK(store_standing_add(s, "console", "#room", &row));
    int64_t msg[5];
    for (int i = 0; i < 5; i++) OK(store_outbox_add(s, "console", "#room", "", "", 0, "text", &msg[i]));
    OK(store_outbox_done(s, msg[0]));
    OK(store_outbox_done(s, msg[2]));
    OK(store_outbox_done(s, msg[3]));
    store_close(s);
    /* queued: 1000, 1000, 1000, 9000, 9000; msg[1] is not delivered */
    raw_exec(path, "UPDATE outbox SET queued = 1000; UPDATE outbox SET queued = 9000 WHERE id >= (SELECT max(id) - 1 "
                   "FROM outbox)");

    s = open_ok(path);
    int tables = -1, messages = -1;
    OK(store_begin(s));
    OK(store_prune(s, 2000, 2000, 1, &tables, &messages));
    OK(store_commit(s));
    cr_expect_eq(tables, 1, "a limit of 1 prunes one table");
    cr_expect_eq(messages, 2, "the delivered messages queued before 2000, not the undelivered one: %d", messages);
    OK(store_begin(s));
    OK(store_prune(s, 2000, 2000, 64, &tables, &messages));
    OK(store_commit(s));
    cr_expect_eq(tables, 1, "the second old table, not the first again");
    cr_expect_eq(messages, 0);
    OK(store_begin(s));
    OK(store_prune(s, 2000, 2000, 64, &tables, &messages));
    OK(store_commit(s));
    cr_expect_eq(tables + messages, 0, "nothing left to prune");
    int64_t next = 0;
    OK(store_outbox_add(s, "console", "#room", "", "", 0, "after", &next));
    cr_expect_gt(next, msg[4], "message ids are never used again");
    store_standing got;
    cr_expect_eq(store_standing_get(s, "console", "#room", "alice", &got), 0, "standings stay");
    cr_expect_eq(got.hands, 3);
    store_close(s);

    char sql[128];
    for (int i = 0; i < 4; i++) {
        int pruned = i < 2;
        snprintf(sql, sizeof sql, "SELECT count(*) FROM journal WHERE table_id = %lld", (long long)ids[i]);
        cr_expect_eq(count_rows(path, sql), pruned ? 0 : 2, "table %d's journal", i);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM hands WHERE table_id = %lld", (long long)ids[i]);
        cr_expect_eq(count_rows(path, sql), pruned ? 0 : 1, "table %d's hand seeds", i);
    }
    cr_expect_eq(count_rows(path, "SELECT count(*) FROM tables"), 4, "every table's row stays");
    snprintf(sql, sizeof sql, "SELECT group_concat(x) FROM (SELECT id - %lld AS x FROM outbox ORDER BY id)",
             (long long)msg[0]);
    char left[64];
    raw_text(path, sql, left, sizeof left);
    cr_expect_str_eq(left, "1,3,4,5", "kept: the undelivered one, the delivered one queued later, the rest: %s", left);
}

Test(store_file, schema_4_migrates_to_5)
{
    char path[PATH_MAX];
    int64_t id = 0;
    tmp_path(path, sizeof path, "four.db");
    store *s = open_ok(path);
    OK(store_outbox_add(s, "matrix", "!r:x", "@bob:x", "", 0, "your cards: JS 9S", &id));
    store_close(s);
    raw_exec(path, SCHEMA_4_OUTBOX "PRAGMA user_version = 4");
    s = open_ok(path);
    cr_expect_eq(store_schema_version(s), 5);
    msgs_seen m = {0};
    OK(store_outbox_pending(s, "matrix", 0, collect_msg, &m));
    cr_assert_eq(m.n, 1, "a queued message of schema 4 is still queued");
    cr_expect_str_eq(m.text[0], "your cards: JS 9S");
    cr_expect_null(m.msg[0].wire, "no wire form yet");
    OK(store_outbox_wire(s, id, "{\"type\":\"m.room.encrypted\"}"));
    store_close(s);
}

/* ---- What the outbox keeps of a message once it is delivered ---- */

static int wire_seen(void *ctx, const store_msg *m)
{
    snprintf(ctx, 64, "%s", m->wire ? m->wire : "(none)");
    return 0;
}

Test(store, outbox_wire_kept_until_done)
{
    store *s = open_ok(":memory:");
    int64_t room = 0, priv = 0;
    char wire[64];
    OK(store_outbox_add(s, "matrix", "!r:x", "", "", 0, "alice plays J♠", &room));
    OK(store_outbox_add(s, "matrix", "!r:x", "@bob:x", "", 0, "Your hand: J♠ 9♠", &priv));
    OK(store_outbox_wire(s, priv, "plain:Your hand: J♠ 9♠"));
    OK(store_outbox_wire(s, priv, "plain:again"));
    OK(store_outbox_all(s, wire_seen, wire));
    cr_expect_str_eq(wire, "plain:again", "the last wire form stored");
    msgs_seen m = {0};
    OK(store_outbox_done(s, room));
    OK(store_outbox_done(s, priv));
    OK(store_outbox_all(s, collect_msg, &m));
    cr_assert_eq(m.n, 2);
    cr_expect_str_eq(m.text[0], "alice plays J♠", "a room message keeps its text");
    cr_expect_str_eq(m.text[1], "", "a delivered private message keeps no text");
    cr_expect_null(m.msg[1].wire, "nor its wire form");
    cr_expect_eq(store_outbox_wire(s, priv, "plain:late"), -1, "a delivered message takes no wire form");
    cr_expect(strstr(store_error(s), "not waiting") != NULL, "%s", store_error(s));
    cr_expect_eq(store_outbox_wire(s, 4242, "x"), -1);
    store_close(s);
}

/* The size of a file, or -1 when it does not exist. */
static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Commits rows messages of about 2 KB each in one transaction. */
static void write_round(store *s, int rows)
{
    char text[2048];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = 0;
    OK(store_begin(s));
    for (int i = 0; i < rows; i++) OK(store_outbox_add(s, "console", "#room", "", "", 0, text, NULL));
    OK(store_commit(s));
}

static int count_msg(void *ctx, const store_msg *m)
{
    (void)m;
    ++*(int *)ctx;
    return 0;
}

/* A commit that leaves 1,000 pages in the WAL does not copy them into the database itself (the
 * event loop would wait for it): the store's checkpointer does, and the WAL then starts over
 * instead of growing with every round. */
Test(store_file, the_wal_is_checkpointed_apart_and_starts_over)
{
    char path[PATH_MAX], wal[PATH_MAX + 8];
    tmp_path(path, sizeof path, "state.db");
    snprintf(wal, sizeof wal, "%s-wal", path);
    store *s = open_ok(path);
    cr_expect_eq(store_checkpoint_wait(s, 1), 0, "no checkpoint before the WAL holds 1,000 pages");
    long long db_before = file_size(path);
    write_round(s, 2500); /* about 5 MB: more than 1,000 pages of 4 KiB */
    cr_assert_geq(store_checkpoint_wait(s, 1), 1);
    long long db_after = file_size(path), wal_first = file_size(wal);
    cr_expect_gt(db_after, db_before + 4 * 1024 * 1024, "the checkpoint copied the pages into the database (%lld -> %lld)",
                 db_before, db_after);
    long passes = 1;
    for (int round = 0; round < 8; round++) { /* 40 MB more, each round waiting for its checkpoint */
        write_round(s, 2500);
        passes = store_checkpoint_wait(s, passes + 1);
    }
    cr_expect_geq(passes, 9);
    cr_expect_leq(file_size(wal), wal_first + 1024 * 1024, "the WAL grew from %lld to %lld bytes: it did not start over",
                  wal_first, file_size(wal));
    store_close(s);
    s = open_ok(path);
    int n = 0;
    OK(store_outbox_pending(s, "console", 0, count_msg, &n));
    cr_expect_eq(n, 9 * 2500);
    store_close(s);
}

/* ---- Lazy commits and the syncer ---- */

/* One lazy transaction that queues one message. */
static void lazy_commit(store *s, int k)
{
    char text[32];
    snprintf(text, sizeof text, "lazy %d", k);
    OK(store_begin_lazy(s));
    OK(store_outbox_add(s, "console", "room", "", "", 0, text, NULL));
    OK(store_commit(s));
}

/* Whether the store's wake-up descriptor is readable, waiting at most ms. */
static int woken(store *s, int ms)
{
    struct pollfd p = {.fd = store_wake_fd(s), .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

/* Waits on the wake-up descriptor until commit k is durable; returns how far commits are. */
static int64_t durable_through(store *s, int64_t k)
{
    int64_t through = 0;
    for (;;) {
        OK(store_durable(s, &through));
        if (through >= k) return through;
        cr_assert(woken(s, VFS_HUNG_S * 1000), "commit %lld never became durable", (long long)k);
    }
}

/* Commits made while one sync runs wait for the next, which makes them all durable: twenty
 * commits, two syncs. Nothing is durable before its sync is over, and a commit that waits for
 * the disk (store_begin) makes every lazy one before it durable by itself. */
Test(store_file, lazy_commits_are_made_durable_by_the_syncer_many_at_once)
{
    vfs_syncer_install();
    char path[PATH_MAX];
    tmp_path(path, sizeof path, "lazy.db");
    store *s = open_ok(path);
    int64_t through = -1;
    OK(store_durable(s, &through));
    cr_assert_eq(through, 0);
    cr_assert_eq(store_commits(s), 0);

    vfs_syncer_hold(1);
    lazy_commit(s, 1);
    cr_assert_eq(store_commits(s), 1);
    vfs_syncer_wait_held(); /* the syncer is on commit 1 */
    for (int k = 2; k <= 20; k++) lazy_commit(s, k);
    OK(store_writer_wait(s)); /* all in the WAL (the writer syncs nothing), however busy the machine */
    cr_assert_not(woken(s, 0), "a wake-up while the sync is held");
    OK(store_durable(s, &through));
    cr_assert_eq(through, 0, "durable before its sync was over");
    vfs_syncer_hold(0);
    cr_assert_eq(durable_through(s, 20), 20);
    cr_assert_eq(vfs_syncer_syncs(), 2, "%d syncs for 20 commits: one for the first, one for the 19 made meanwhile",
                 vfs_syncer_syncs());
    cr_assert_eq(store_syncs(s), 2);

    vfs_syncer_hold(1);
    lazy_commit(s, 21);
    vfs_syncer_wait_held();
    lazy_commit(s, 22);
    OK(store_probe(s, 1)); /* a commit that waits for the disk, the loop's own sync */
    OK(store_durable(s, &through));
    cr_assert_eq(through, 23, "the lazy commits before a durable one are durable with it");
    vfs_syncer_hold(0);
    store_close(s);
    s = open_ok(path);
    int n = 0;
    OK(store_outbox_pending(s, "console", 0, count_msg, &n));
    cr_assert_eq(n, 22);
    store_close(s);
}

/* A sync that fails is reported once, as a failure of the disk, and no commit after it counts
 * as durable until a commit that waits for the disk succeeds; then the syncer goes on. */
Test(store_file, a_failed_sync_is_reported_once_and_mended_by_a_durable_commit)
{
    vfs_syncer_install();
    char path[PATH_MAX];
    tmp_path(path, sizeof path, "failing.db");
    store *s = open_ok(path);
    lazy_commit(s, 1);
    cr_assert_eq(durable_through(s, 1), 1);

    vfs_syncer_fail_next(SQLITE_IOERR_FSYNC);
    lazy_commit(s, 2);
    cr_assert(woken(s, VFS_HUNG_S * 1000), "no word of the failed sync");
    int64_t through = -1;
    cr_assert_eq(store_durable(s, &through), -1);
    cr_assert_eq(through, 1);
    cr_assert_eq(store_fault_of(s), STORE_FAULT_IO);
    cr_assert(strstr(store_error(s), "syncing the database's log to the disk"), "%s", store_error(s));
    OK(store_durable(s, &through));
    cr_assert_eq(through, 1, "commit 2 counted as durable after its sync failed");

    OK(store_probe(s, 1));
    OK(store_durable(s, &through));
    cr_assert_eq(through, 3);
    lazy_commit(s, 4);
    cr_assert_eq(durable_through(s, 4), 4, "the syncer did not go on");
    store_close(s);
}

/* ---- The store's writer: the core's transactions written behind it ---- */

/* A new store on a file of the test's directory; path gets the file's path. */
static store *open_new(char path[PATH_MAX], const char *name)
{
    tmp_path(path, PATH_MAX, name);
    return open_ok(path);
}

typedef struct {
    int64_t *ids;
    int n;
} got_ids;

static int collect_ids(void *ctx, const store_msg *m)
{
    got_ids *g = ctx;
    g->ids[g->n++] = m->id;
    return 0;
}

static int64_t lazy_add(store *s, const char *text)
{
    int64_t id = 0;
    OK(store_begin_lazy(s));
    OK(store_outbox_add(s, "console", "room", "", "", 0, text, &id));
    OK(store_commit(s));
    return id;
}

/* A transaction of store_begin_lazy() is recorded and written by the store's writer: its new ids
 * are known at once, nothing of it is durable before the writer has written and the syncer
 * synced it, and what the loop reads meanwhile is what it wrote, without waiting: a keyed value
 * and a hand seed from what the writer holds, the outbox without the messages whose delivery it
 * holds. A read inside such a transaction sees the transaction's own writes (it goes on at once
 * after the writer); a rollback gives its ids back; a closed store has written everything. */
Test(store_file, the_core_s_transactions_are_written_behind_it_in_order)
{
    vfs_writer_install();
    char path[PATH_MAX];
    store *s = open_new(path, "behind.db");
    uint8_t seed[STORE_SEED_BYTES], got[STORE_SEED_BYTES];
    memset(seed, 7, sizeof seed);

    vfs_syncer_hold(1);
    int64_t table = 0, msg = 0;
    OK(store_begin_lazy(s));
    OK(store_table_create(s, "console", "room", "304", "alice", 100, &table));
    OK(store_outbox_add(s, "console", "room", "", "", 0, "hello", &msg));
    OK(store_journal_add(s, table, 1, "join alice"));
    OK(store_hand_add(s, table, 1, seed));
    OK(store_kv_put(s, "test", "k", "v1"));
    OK(store_commit(s));
    cr_assert_eq(table, 1);
    cr_assert_eq(msg, 1);
    vfs_syncer_wait_held(); /* the writer is writing it, and waits */
    char *v = NULL;
    OK(store_kv_get(s, "test", "k", &v));
    cr_assert_str_eq(v, "v1");
    free(v);
    OK(store_hand_seed(s, table, 1, got));
    cr_assert_eq(memcmp(got, seed, sizeof seed), 0);
    int n = 0;
    OK(store_outbox_pending(s, "console", 0, count_msg, &n));
    cr_assert_eq(n, 0, "a message of a commit the writer has not written");
    int64_t through = -1;
    OK(store_durable(s, &through));
    cr_assert_eq(through, 0, "durable before it was written");
    cr_assert_eq(store_writer_waits(s, NULL), 0, "the loop waited for the writer");
    vfs_syncer_hold(0);
    cr_assert_eq(durable_through(s, 1), 1);
    OK(store_outbox_pending(s, "console", 0, count_msg, &n));
    cr_assert_eq(n, 1);

    vfs_syncer_hold(1);
    OK(store_begin_lazy(s));
    OK(store_outbox_done(s, msg));
    OK(store_kv_del(s, "test", "k"));
    OK(store_commit(s));
    vfs_syncer_wait_held();
    n = 0;
    OK(store_outbox_pending(s, "console", 0, count_msg, &n));
    cr_assert_eq(n, 0, "a message offered again while the writer holds its delivery");
    cr_assert_eq(store_kv_get(s, "test", "k", &v), 1, "a deleted value read back");
    cr_assert_eq(store_writer_waits(s, NULL), 0, "the loop waited for the writer");
    vfs_syncer_hold(0);

    store_standing row = {.matches = 1, .hands = 2};
    snprintf(row.user, sizeof row.user, "alice");
    OK(store_begin_lazy(s));
    OK(store_standing_add(s, "console", "room", &row));
    store_standing back;
    OK(store_standing_get(s, "console", "room", "alice", &back));
    cr_assert_eq(back.hands, 2, "a read inside a transaction missed its own write");
    OK(store_commit(s));
    int64_t rolled = 0;
    OK(store_begin_lazy(s));
    OK(store_outbox_add(s, "console", "room", "", "", 0, "rolled back", &rolled));
    cr_assert_eq(rolled, 2);
    OK(store_rollback(s));
    cr_assert_eq(lazy_add(s, "kept"), 2, "the id of a rolled back message was not taken again");
    store_close(s); /* the writer writes what it holds first */

    s = open_ok(path);
    n = 0;
    OK(store_outbox_pending(s, "console", 0, count_msg, &n));
    cr_assert_eq(n, 1, "only the last message waits");
    OK(store_standing_get(s, "console", "room", "alice", &back));
    cr_assert_eq(back.hands, 2);
    cr_assert_eq(store_kv_get(s, "test", "k", &v), 1);
    cr_assert_eq(lazy_add(s, "after a restart"), 3);
    store_close(s);
}

/* Deliveries the writer holds do not hide the messages behind them from a read with a limit:
 * with three of five messages marked sent and unwritten, the first two still waiting come. */
Test(store_file, deliveries_the_writer_holds_leave_the_limit_to_the_messages_behind)
{
    vfs_writer_install();
    char path[PATH_MAX];
    store *s = open_new(path, "limit.db");
    for (int i = 1; i <= 5; i++) cr_assert_eq(lazy_add(s, "waits"), i);
    cr_assert_eq(durable_through(s, 5), 5);
    vfs_syncer_hold(1);
    OK(store_begin_lazy(s));
    for (int64_t id = 1; id <= 3; id++) OK(store_outbox_done(s, id));
    OK(store_commit(s));
    vfs_syncer_wait_held();
    int64_t got[8];
    got_ids g = {got, 0};
    OK(store_outbox_pending(s, "console", 2, collect_ids, &g));
    cr_assert_eq(g.n, 2, "%d messages: the held deliveries took the limit", g.n);
    cr_assert_eq(got[0], 4);
    cr_assert_eq(got[1], 5);
    vfs_syncer_hold(0);
    store_close(s);
}

/* A write of the writer's that fails stops it: the failure is reported once, as the fault it
 * is, nothing after it counts as durable, a read (which would wait for it) fails the same way,
 * and the probe that ends the core's pause writes it and what waited behind it, then its own. */
Test(store_file, a_failed_write_of_the_writer_waits_for_a_probe_and_nothing_is_lost)
{
    vfs_writer_install();
    char path[PATH_MAX];
    store *s = open_new(path, "writer-fails.db");
    vfs_syncer_fail_next(SQLITE_FULL);
    cr_assert_eq(lazy_add(s, "one"), 1);
    cr_assert_eq(lazy_add(s, "two"), 2);
    cr_assert(woken(s, VFS_HUNG_S * 1000), "no word of the failure");
    int64_t through = -1;
    cr_assert_eq(store_durable(s, &through), -1);
    cr_assert_eq(store_fault_of(s), STORE_FAULT_FULL, "%s", store_error(s));
    cr_assert_eq(through, 0);
    OK(store_durable(s, &through));
    cr_assert_eq(through, 0, "counted as durable after it failed");
    int n = 0;
    cr_assert_eq(store_outbox_all(s, count_msg, &n), -1, "a read did not wait for the writer's queue");
    cr_assert_eq(store_fault_of(s), STORE_FAULT_FULL, "%s", store_error(s));
    OK(store_probe(s, 1));
    OK(store_durable(s, &through));
    cr_assert_eq(through, 3, "the probe's commit makes everything before it durable");
    n = 0;
    OK(store_outbox_all(s, count_msg, &n));
    cr_assert_eq(n, 2, "a message the writer held was lost");
    cr_assert_eq(lazy_add(s, "three"), 3);
    store_close(s);
}

/* A transaction the database refuses by itself (a broken rule: no retry would do) is reported
 * as such, and the probe drops it with what was recorded after it: the store goes on. */
Test(store_file, a_transaction_the_database_refuses_is_dropped_with_those_after_it)
{
    char path[PATH_MAX];
    store *s = open_new(path, "refused.db");
    lazy_add(s, "kept");
    OK(store_begin_lazy(s));
    OK(store_table_close(s, 42, "aborted", 100)); /* no such table: only the writer finds out */
    OK(store_commit(s));
    lazy_add(s, "after it");
    int64_t through;
    while (store_durable(s, &through) == 0)
        cr_assert(woken(s, VFS_HUNG_S * 1000), "no word of the refusal");
    cr_assert_eq(store_fault_of(s), STORE_FAULT_NONE, "%s", store_error(s));
    cr_assert(strstr(store_error(s), "table 42 does not exist"), "%s", store_error(s));
    OK(store_probe(s, 1));
    int n = 0;
    OK(store_outbox_all(s, count_msg, &n));
    cr_assert_eq(n, 1, "%d messages: the refused transaction and the one after it are dropped", n);
    store_close(s);
}

/* In memory there is nothing to sync: a lazy commit is as durable as it will ever be. */
Test(store, a_lazy_commit_in_memory_is_durable_at_once)
{
    store *s = open_ok(":memory:");
    lazy_commit(s, 1);
    int64_t through = 0;
    OK(store_durable(s, &through));
    cr_assert_eq(through, 1);
    cr_assert_eq(store_syncs(s), 0);
    store_close(s);
}
