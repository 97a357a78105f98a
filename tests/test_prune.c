/* test_prune.c — what finished tables leave behind is dropped by the core after [bot]
 * keep_finished, and nothing else is.
 *
 * A core on a file, with a fake clock that starts at the wall clock (the outbox's queued
 * times are SQLite's own clock) and no worker threads (computer players answer in
 * core_tick()): a table of four computer players plays a match to its end while a second
 * table waits for players. Just before keep_finished has passed since the first table closed
 * nothing is dropped; once it has, the finished table's journal and hand seeds and every
 * delivered message are gone, while its row, the standings, the open table's journal and a
 * message not yet delivered stay; a restart still rebuilds the open table. Meanwhile the
 * match's last hand is reviewed in its room (an entry in the finished table's journal); once the
 * journal is dropped, !review there finds no table and the room no longer names it. With
 * keep_finished = 0 nothing is ever dropped. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "core.h"
#include "store.h"
#include "test_dirs.h"
#include "test_durable.h"
#include "test_sql.h"

#define KEEP 3600 /* seconds */

TestSuite(prune, .timeout = 120);

typedef struct {
    int64_t now;
    int refuse_room2; /* messages to room 2 wait (ADAPTER_LATER) */
} net;

static int64_t clock_of(void *ctx) { return ((net *)ctx)->now; }

static int send_to(void *ctx, const store_msg *m)
{
    net *n = ctx;
    return n->refuse_room2 && strcmp(m->room, "r2") == 0 ? ADAPTER_LATER : ADAPTER_SENT;
}

static void say(core *c, const char *room, const char *user, const char *text)
{
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = room, .sender = user, .text = text};
    cr_assert_eq(core_batch(c, "test", &e, 1, NULL), 0);
}

/* Whether the last message queued for room (to the room itself) starts with text. */
static int last_said(const char *path, const char *room, const char *text)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT text FROM outbox WHERE room = ?1 AND user = '' ORDER BY id DESC "
                                        "LIMIT 1", -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, room, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    const char *got = (const char *)sqlite3_column_text(st, 0);
    int same = got && strncmp(got, text, strlen(text)) == 0;
    if (!same) cr_log_error("the last message to %s: %s", room, got ? got : "(none)");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return same;
}

typedef struct {
    char *dir, path[4200];
    cfg conf;
    net n;
    store *s;
    core *c;
} rig;

static void rig_core(rig *r)
{
    char err[512];
    core_options o = {.config = &r->conf, .db = r->s, .now_ms = clock_of, .clock_ctx = &r->n, .fixed_seed = 1,
                      .seed = 3};
    r->c = core_new(&o, err, sizeof err);
    cr_assert_not_null(r->c, "%s", err);
    adapter a = {.net = "test", .ctx = &r->n, .send = send_to};
    cr_assert_eq(core_add_adapter(r->c, &a), 0);
    cr_assert_geq(core_restore(r->c), 0);
}

/* Table 1 (room r1) plays a match of computers to its end; table 2 (room r2) waits. Returns
 * when table 1 closed (the fake clock's second). */
static int64_t rig_start(rig *r, int keep)
{
    char err[512];
    r->dir = temp_dir("prune");
    snprintf(r->path, sizeof r->path, "%s/prune.db", r->dir);
    cfg_defaults(&r->conf);
    r->conf.threads = 0;
    r->conf.remind_after = r->conf.idle_takeover = r->conf.table_idle_close = 0;
    r->conf.keep_finished = keep;
    r->n.now = (int64_t)time(NULL) * 1000;
    r->n.refuse_room2 = 1;
    cr_assert_eq(store_open(&r->s, r->path, err, sizeof err), 0, "%s", err);
    rig_core(r);
    static const char *const lines[] = {"!new 304", "!bot", "!bot", "!bot", "!bot", "!set start_tokens 1", "!start"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) say(r->c, "r1", "alice", lines[i]);
    say(r->c, "r2", "bob", "!new 304");
    say(r->c, "r2", "bob", "!join");
    for (int k = 0; core_table_of(r->c, "test", "r1") != 0; k++) {
        cr_assert_lt(k, 10000, "the match of table 1 does not end");
        r->n.now += 10;
        cr_assert_geq(core_tick(r->c), 0);
        cr_assert_geq(core_flush(r->c), 0);
    }
    flush_durable(r->c); /* the last words of table 1 go out once the disk has them */
    all_synced(r->s);    /* and the file has what the store's writer was given (their deliveries too) */
    cr_assert_eq(test_sql_count(r->path, "SELECT count(*) FROM tables WHERE id = 1 AND closed IS NOT NULL"), 1);
    return test_sql_count(r->path, "SELECT closed FROM tables WHERE id = 1");
}

static void rig_stop(rig *r)
{
    core_free(r->c);
    store_close(r->s);
    temp_dir_remove(r->dir);
}

Test(prune, a_finished_table_leaves_its_row_and_standings_after_keep_finished)
{
    rig r;
    int64_t closed = rig_start(&r, KEEP);
    say(r.c, "r1", "carol", "!review");
    cr_assert(last_said(r.path, "r1", "Review of hand "), "the last hand is not reviewed after the match's end");
    cr_assert_eq(flush_durable(r.c), 1);
    all_synced(r.s); /* the review's delivery is in the file */
    int64_t journal1 = test_sql_count(r.path, "SELECT count(*) FROM journal WHERE table_id = 1");
    int64_t journal2 = test_sql_count(r.path, "SELECT count(*) FROM journal WHERE table_id = 2");
    int64_t waiting = test_sql_count(r.path, "SELECT count(*) FROM outbox WHERE sent = 0");
    cr_assert_gt(journal1, 30);
    cr_assert_gt(test_sql_count(r.path, "SELECT count(*) FROM hands WHERE table_id = 1"), 0);
    cr_assert_gt(test_sql_count(r.path, "SELECT count(*) FROM outbox WHERE sent = 1"), 30);
    cr_assert_eq(waiting, 2, "room 2's messages wait");

    r.n.now = (closed + KEEP - 1) * 1000 + 999;
    cr_assert_geq(core_tick(r.c), 0);
    all_synced(r.s); /* the store's writer prunes: what it was given is in the file */
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM journal WHERE table_id = 1"), journal1, "dropped too early");

    r.n.now = (closed + KEEP + 1) * 1000 + KEEP * 1000 / 4; /* past keep_finished, and past the next pruning time */
    cr_assert_geq(core_tick(r.c), 0);
    all_synced(r.s);
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM journal WHERE table_id = 1"), 0);
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM hands WHERE table_id = 1"), 0);
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM outbox WHERE sent = 1"), 0, "delivered messages stay");
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM outbox WHERE sent = 0"), waiting, "undelivered messages went");
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM journal WHERE table_id = 2"), journal2, "the open table lost");
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM tables WHERE id = 1 AND close_reason = 'finished'"), 1);

    /* the finished table's journal is gone: nothing is left to review */
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM kv WHERE ns = 'ended.test' AND key = 'r1'"), 1);
    say(r.c, "r1", "carol", "!review");
    cr_assert(last_said(r.path, "r1", "carol: there is no table here: !new 304 opens one."));
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM kv WHERE ns = 'ended.test'"), 0, "the room still names it");
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM journal WHERE table_id = 1"), 0);
    cr_assert_eq(flush_durable(r.c), 1);

    /* a restart rebuilds the open table; its messages go out with their ids */
    core_free(r.c);
    r.n.refuse_room2 = 0;
    rig_core(&r);
    cr_assert_eq(core_table_of(r.c, "test", "r2"), 2);
    cr_assert_eq(flush_durable(r.c), (int)waiting);
    rig_stop(&r);
}

Test(prune, keep_finished_0_keeps_everything)
{
    rig r;
    int64_t closed = rig_start(&r, 0);
    int64_t journal = test_sql_count(r.path, "SELECT count(*) FROM journal");
    int64_t outbox = test_sql_count(r.path, "SELECT count(*) FROM outbox");
    r.n.now = (closed + 10 * 365 * 86400LL) * 1000;
    cr_assert_geq(core_tick(r.c), 0);
    all_synced(r.s);
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM journal"), journal);
    cr_assert_eq(test_sql_count(r.path, "SELECT count(*) FROM outbox"), outbox);
    rig_stop(&r);
}
