/* test_core.c — the bot core through its own API (bot/core.h), with a small in-memory adapter
 * that records what it is asked to send, a fake clock the tests advance, an in-memory store
 * and no worker threads (computer players answer on core_tick()).
 *
 * Covers: the timers (reminder once after remind_after, a computer taking an idle player's
 * seat, `!back`, closing an untouched table, timers switched off), one batch being one store
 * transaction (all or nothing), core_restore() rebuilding a table mid-hand that then goes on,
 * delivery order with ADAPTER_LATER and ADAPTER_QUEUED + core_sent(), players leaving the
 * room (a free seat before the start, an away seat during a match), what the core says
 * itself: help in a room (one line there, the list privately as a notice), and `notify` (the
 * network's default, a player's choice kept in the store across restarts, the face-down warning
 * sent whatever the choice); the grace a player who left keeps (ended by coming back or
 * speaking, the turn timer running meanwhile, forgotten by a restart), a table whose players
 * are all away pausing until one is back, and back-pressure: over a slow network (a pace of one
 * line a second, delivering one line a second of the fake clock) computer players hold while
 * their room's queue, or the network's, is long, also after a restart, go on as it drains, and
 * a person's command is answered within seconds; and seats bound to the address their player
 * sat down from (an impostor under his nick gets nothing private and changes nothing, his nick
 * change moves the seat, nothing private goes to the nick of a player who left); and durable
 * before visible, on a database file with the store's syncs held or failed through the VFS
 * shim: a message is offered, and a room left, only once the commit behind it is on the disk
 * (the wake-up descriptor says when), and a failed sync suspends the core like a failed commit,
 * with nothing lost or sent twice once the store works again. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter.h"
#include "config.h"
#include "core.h"
#include "g304.h"
#include "game304.h"
#include "judge.h"
#include "store.h"
#include "table.h"
#include "test_dirs.h"
#include "test_durable.h"
#include "test_sql.h"
#include "test_vfs.h"

#define NET "mem"
#define ROOM "!lobby"
#define SEED 7

/* ---------------------------------------------------------------------------------------- */
/* The in-memory adapter                                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int64_t id;
    char room[256], user[256], mention[256];
    char *text;
    int notice;
    int code; /* what send() answered */
} offer;

typedef struct mem_net mem_net;
struct mem_net {
    offer *o;             /* every offer, in order */
    int n, cap;
    int (*decide)(mem_net *m, const store_msg *msg); /* NULL: ADAPTER_SENT */
    int block_room;       /* for decide functions */
    char block_user[64];
    int64_t line_ms;      /* the network's pace: each line of a message takes this long (0: none) */
    int sent;             /* the slow network: offers before this one are delivered */
    int64_t credit;       /* ms of sending time not used yet */
};

static int64_t lines_of(const char *text)
{
    int64_t lines = 1;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    return lines;
}

static int64_t mem_pace(void *ctx, const store_msg *m)
{
    const mem_net *net = ctx;
    return lines_of(m->text) * net->line_ms;
}

static int mem_send(void *ctx, const store_msg *m)
{
    mem_net *net = ctx;
    int code = net->decide ? net->decide(net, m) : ADAPTER_SENT;
    if (net->n == net->cap) {
        net->cap = net->cap ? net->cap * 2 : 256;
        net->o = realloc(net->o, (size_t)net->cap * sizeof *net->o);
        cr_assert_not_null(net->o);
    }
    offer *o = &net->o[net->n++];
    o->id = m->id;
    snprintf(o->room, sizeof o->room, "%s", m->room);
    snprintf(o->user, sizeof o->user, "%s", m->user);
    snprintf(o->mention, sizeof o->mention, "%s", m->mention);
    o->notice = m->notice;
    o->text = strdup(m->text);
    cr_assert_not_null(o->text);
    o->code = code;
    return code;
}

static void mem_free(mem_net *m)
{
    for (int i = 0; i < m->n; i++) free(m->o[i].text);
    free(m->o);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------------------------------- */
/* The rig: config, store, core, adapter, clock                                             */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    cfg conf;
    store *db;
    core *core;
    mem_net net;
    int64_t now;
    caps_solver *judge;
    int notify_off;        /* the adapter's default: no private turn notices (as Matrix) */
    int problems;          /* warnings and errors the core logged */
    char first_problem[512];
} rig;

static int64_t fake_clock(void *ctx) { return *(const int64_t *)ctx; }

static void rig_log(void *ctx, core_log_level level, const char *line)
{
    rig *r = ctx;
    if (level > CORE_LOG_WARN) return;
    if (!r->problems++) snprintf(r->first_problem, sizeof r->first_problem, "%s", line);
}

/* A new core over the rig's store, with the memory network: a gives its optional operations. */
static void rig_core_with(rig *r, adapter a)
{
    char err[256];
    core_options o = {.config = &r->conf, .db = r->db, .now_ms = fake_clock, .clock_ctx = &r->now,
                      .log = rig_log, .log_ctx = r, .fixed_seed = 1, .seed = SEED};
    r->core = core_new(&o, err, sizeof err);
    cr_assert_not_null(r->core, "%s", err);
    a.net = NET;
    a.ctx = &r->net;
    a.send = mem_send;
    a.private_how = "in a private message";
    a.notify_off = r->notify_off;
    a.pace_ms = mem_pace;
    cr_assert_eq(core_add_adapter(r->core, &a), 0);
}

static void rig_core(rig *r) { rig_core_with(r, (adapter){0}); }

/* Timers in seconds (0 = off; no grace for players who leave the room: the tests of the
 * grace set it); db NULL: in memory. */
static void rig_start(rig *r, int remind, int idle, int close, const char *db)
{
    char err[256];
    memset(r, 0, sizeof *r);
    cfg_defaults(&r->conf);
    r->conf.threads = 0;
    r->conf.remind_after = remind;
    r->conf.idle_takeover = idle;
    r->conf.table_idle_close = close;
    r->conf.leave_grace = 0;
    cr_assert_eq(store_open(&r->db, db ? db : ":memory:", err, sizeof err), 0, "%s", err);
    r->now = 1700000000000;
    r->judge = caps_solver_new(0);
    cr_assert_not_null(r->judge);
    rig_core(r);
}

/* Every test but the one that breaks the store on purpose ends with nothing logged. */
static void rig_stop(rig *r)
{
    cr_expect_eq(r->problems, 0, "the core logged %d problem(s), first: %s", r->problems, r->first_problem);
    core_free(r->core);
    store_close(r->db);
    caps_solver_free(r->judge);
    mem_free(&r->net);
}

static void batch(rig *r, adapter_event *e, int n)
{
    cr_assert_eq(core_batch(r->core, NET, e, n, NULL), 0);
    flush_durable(r->core);
}

static void say(rig *r, const char *user, const char *text)
{
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = user, .text = text};
    batch(r, &e, 1);
}

static void whisper(rig *r, const char *user, const char *text)
{
    adapter_event e = {.kind = ADAPTER_MESSAGE, .sender = user, .text = text, .is_private = 1};
    batch(r, &e, 1);
}

/* Lets the computer players answer until nobody is thinking (at most max moves). */
static int settle(rig *r, int max)
{
    int moves = 0;
    for (int guard = 0; guard < 100000 && core_busy(r->core) > 0 && moves < max; guard++) {
        int k = core_tick(r->core);
        cr_assert_geq(k, 0);
        moves += k;
        flush_durable(r->core);
    }
    return moves;
}

static void tick(rig *r)
{
    cr_assert_geq(core_tick(r->core), 0);
    flush_durable(r->core);
}

/* Offers since index from that contain needle (and were delivered or not). */
static int offers_with(const rig *r, int from, const char *needle)
{
    int k = 0;
    for (int i = from; i < r->net.n; i++) k += strstr(r->net.o[i].text, needle) != NULL;
    return k;
}

static const offer *last_offer_with(const rig *r, int from, const char *needle)
{
    const offer *found = NULL;
    for (int i = from; i < r->net.n; i++)
        if (strstr(r->net.o[i].text, needle)) found = &r->net.o[i];
    return found;
}

/* ---------------------------------------------------------------------------------------- */
/* The table as stored: its journal, replayed with the bot's own table code                 */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    char **e;
    int n, cap;
} entries;

static int collect(void *ctx, int64_t seq, const char *entry)
{
    entries *l = ctx;
    (void)seq;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->e = realloc(l->e, (size_t)l->cap * sizeof *l->e);
        cr_assert_not_null(l->e);
    }
    l->e[l->n++] = strdup(entry);
    return 0;
}

static void journal_of(rig *r, int64_t id, entries *l)
{
    memset(l, 0, sizeof *l);
    cr_assert_eq(store_journal_each(r->db, id, collect, l), 0);
}

static void entries_free(entries *l)
{
    for (int i = 0; i < l->n; i++) free(l->e[i]);
    free(l->e);
    memset(l, 0, sizeof *l);
}

static int journal_count(rig *r, int64_t id)
{
    entries l;
    journal_of(r, id, &l);
    int n = l.n;
    entries_free(&l);
    return n;
}

/* Index of the first entry at or after from starting with prefix, or -1. */
static int entry_find(const entries *l, int from, const char *prefix)
{
    for (int i = from; i < l->n; i++)
        if (strncmp(l->e[i], prefix, strlen(prefix)) == 0) return i;
    return -1;
}

static int env_seed(void *ctx, int64_t table_id, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    rig *r = ctx;
    return store_hand_seed(r->db, table_id, hand_no, seed) == 0 ? 0 : -1;
}

static void table_of(rig *r, int64_t id, table *t)
{
    entries l;
    char err[256];
    table_env env = {.judge = r->judge, .seed = env_seed, .ctx = r, .prefix = "!", .private_how = ""};
    journal_of(r, id, &l);
    table_init(t, id, NET, ROOM, "");
    cr_assert_eq(table_set_game(t, "304", &r->conf), 0);
    for (int i = 0; i < l.n; i++)
        cr_assert_eq(table_exec(t, &env, l.e[i], NULL, err, sizeof err), 0, "entry %d '%s': %s", i + 1, l.e[i], err);
    entries_free(&l);
}

/* The hand being played at a 304 table. */
static const g304_state *st_of(const table *t) { return &game304_of(t)->st; }

static int is_facedown(const g304_state *st, int seat, const g304_action *a)
{
    g304_state copy = *st;
    g304_events ev;
    ev.n = 0;
    if (a->kind != G304_DO_PLAY || g304_apply(&copy, seat, a, &ev, NULL) != G304_OK) return 0;
    for (int i = 0; i < ev.n; i++)
        if (ev.ev[i].kind == G304_EV_FACEDOWN && ev.ev[i].seat == seat) return 1;
    return 0;
}

/* The player at seat makes a legal move: passes when bidding (or bids 160 if pass is not
 * open), the first legal card otherwise; secrets privately. */
static void play_one(rig *r, const char *user, int seat)
{
    table t;
    g304_action legal[G304_MAX_LEGAL], a;
    char text[64];
    table_of(r, 1, &t);
    cr_assert_eq(st_of(&t)->to_act, seat, "seat %d is not to act (phase %d, to act %d)", seat, st_of(&t)->phase,
                 st_of(&t)->to_act);
    int n = g304_legal(st_of(&t), seat, legal);
    cr_assert_gt(n, 0);
    a = legal[0];
    for (int i = 0; i < n; i++)
        if (legal[i].kind == G304_DO_PASS || (legal[i].kind == G304_DO_PLAY && a.kind != G304_DO_PLAY)) a = legal[i];
    switch (a.kind) {
    case G304_DO_BID: snprintf(text, sizeof text, "!bid %d", a.amount); break;
    case G304_DO_PASS: snprintf(text, sizeof text, "!pass"); break;
    case G304_DO_TRUMP: snprintf(text, sizeof text, "!trump %s", card_str(a.card)); break;
    case G304_DO_PLAY: snprintf(text, sizeof text, "!play %s", card_str(a.card)); break;
    case G304_DO_CUT: snprintf(text, sizeof text, "!cut 0"); break;
    default: snprintf(text, sizeof text, "!%s", g304_do_name(a.kind)); break;
    }
    int before = journal_count(r, 1);
    if (a.kind == G304_DO_TRUMP || is_facedown(st_of(&t), seat, &a))
        whisper(r, user, text);
    else
        say(r, user, text);
    cr_assert_gt(journal_count(r, 1), before, "%s's '%s' was not taken", user, text);
}

/* alice at South with three computer players, the match started and settled: alice to act. */
static void alice_and_computers(rig *r)
{
    say(r, "alice", "!new 304");
    say(r, "alice", "!join");
    for (int i = 0; i < 3; i++) say(r, "alice", "!bot");
    say(r, "alice", "!start");
    settle(r, 1000);
    cr_assert_eq(core_busy(r->core), 0);
    table t;
    table_of(r, 1, &t);
    cr_assert_eq(st_of(&t)->to_act, 0, "the computers stopped with seat %d to act", st_of(&t)->to_act);
}

/* ---------------------------------------------------------------------------------------- */
/* (a) Timers                                                                               */
/* ---------------------------------------------------------------------------------------- */

Test(core, reminder_once_then_takeover_then_back)
{
    rig r;
    rig_start(&r, 60, 300, 3600, NULL);
    alice_and_computers(&r);
    int64_t t0 = r.now;
    cr_assert_eq(core_next_deadline(r.core), t0 + 60000, "the first timer is the reminder");

    int mark = r.net.n;
    r.now = t0 + 59999;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "Reminder"), 0, "a reminder before 60 s");

    r.now = t0 + 60000;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "Reminder"), 1);
    const offer *rem = last_offer_with(&r, mark, "Reminder");
    cr_assert_str_eq(rem->mention, "alice", "the reminder must mention the player");
    cr_assert_str_eq(rem->user, "", "the reminder goes to the room");
    cr_assert(strstr(rem->text, "Reminder \xE2\x80\x94 alice (South)"), "%s", rem->text);

    r.now = t0 + 120000;
    tick(&r);
    r.now = t0 + 299999;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "Reminder"), 1, "a second reminder for the same turn");
    cr_assert_eq(offers_with(&r, mark, "is away"), 0, "taken over before 300 s");
    entries l;
    journal_of(&r, 1, &l);
    int before = l.n;
    entries_free(&l);

    r.now = t0 + 300000;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "is away: a computer player plays for them until they say !back."), 1);
    cr_assert(strncmp(last_offer_with(&r, mark, "is away")->text, "alice (South", 12) == 0);
    /* alice was the only person: the table pauses, says so once, and nothing moves */
    cr_assert_eq(offers_with(&r, mark, "Table 1 pauses: all its players are away. It goes on when one of them says !back."),
                 1);
    settle(&r, 12);
    for (int k = 1; k <= 3; k++) { /* within the hour after which an untouched table closes */
        r.now = t0 + 300000 + k * 600000LL;
        tick(&r);
    }
    cr_assert_eq(core_busy(r.core), 0, "a computer player thinks at a paused table");
    cr_assert_eq(offers_with(&r, mark, "pauses"), 1, "the pause was told more than once");
    journal_of(&r, 1, &l);
    int away = entry_find(&l, before, "away 0");
    cr_assert_geq(away, 0, "no away entry");
    cr_assert_eq(l.n, away + 1, "the table moved while paused: %s", l.e[l.n - 1]);
    entries_free(&l);
    table t;
    table_of(&r, 1, &t);
    cr_assert(t.seat[0].away);

    mark = r.net.n;
    say(&r, "alice", "!back");
    cr_assert_eq(offers_with(&r, mark, "alice (South) is back."), 1);
    settle(&r, 1000);
    table_of(&r, 1, &t);
    cr_assert(!t.seat[0].away);
    if (!t.over) {
        cr_assert_eq(st_of(&t)->to_act, 0, "after !back the computers stop at alice's turn");
        int prompts = 0;
        for (int i = mark; i < r.net.n; i++) prompts += strcmp(r.net.o[i].mention, "alice") == 0;
        cr_assert_gt(prompts, 0, "alice was not told it is her turn");
        cr_assert_eq(core_next_deadline(r.core), r.now + 60000);
    }
    rig_stop(&r);
}

/* A reminder is not repeated when the turn clock restarts for the same seat, but comes again
 * for a new turn. */
Test(core, reminder_again_for_a_new_turn)
{
    rig r;
    rig_start(&r, 60, 0, 0, NULL);
    alice_and_computers(&r);
    int mark = r.net.n;
    r.now += 60000;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "Reminder"), 1);
    play_one(&r, "alice", 0);
    settle(&r, 1000);
    table t;
    table_of(&r, 1, &t);
    cr_assert_eq(st_of(&t)->to_act, 0);
    int64_t turn = r.now;
    r.now = turn + 59999;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "Reminder"), 1);
    r.now = turn + 60000;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "Reminder"), 2, "no reminder for the next turn");
    rig_stop(&r);
}

Test(core, untouched_table_closes_after_an_hour)
{
    rig r;
    rig_start(&r, 0, 0, 3600, NULL);
    int64_t t0 = r.now;
    say(&r, "alice", "!new 304");
    say(&r, "alice", "!join");
    int64_t id = core_table_of(r.core, NET, ROOM);
    cr_assert_gt(id, 0);

    r.now = t0 + 3000 * 1000;
    say(&r, "bob", "!join"); /* touches the table */
    r.now = t0 + 3600 * 1000;
    tick(&r);
    cr_assert_eq(core_table_of(r.core, NET, ROOM), id, "closed although touched 600 s ago");

    int mark = r.net.n;
    r.now = t0 + 6600 * 1000 - 1;
    tick(&r);
    cr_assert_eq(core_table_of(r.core, NET, ROOM), id);
    r.now = t0 + 6600 * 1000;
    tick(&r);
    cr_assert_eq(core_table_of(r.core, NET, ROOM), 0, "still open after an hour untouched");
    cr_assert_eq(offers_with(&r, mark, "closes: nobody played for a long time."), 1);
    say(&r, "alice", "!join");
    cr_assert_gt(offers_with(&r, mark, "there is no table here"), 0);
    core_stats s;
    core_stats_of(r.core, &s);
    cr_assert_eq(s.tables, 0);
    rig_stop(&r);
}

Test(core, timers_off_do_nothing)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    alice_and_computers(&r);
    cr_assert_eq(core_next_deadline(r.core), INT64_MAX);
    int mark = r.net.n, before = journal_count(&r, 1);
    for (int d = 1; d <= 30; d++) {
        r.now += 86400LL * 1000;
        tick(&r);
    }
    cr_assert_eq(r.net.n, mark, "something was said with every timer off");
    cr_assert_eq(journal_count(&r, 1), before);
    cr_assert_gt(core_table_of(r.core, NET, ROOM), 0);
    rig_stop(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* (b) One batch, one transaction                                                           */
/* ---------------------------------------------------------------------------------------- */


static int count_msg(void *ctx, const store_msg *m)
{
    (void)m;
    ++*(int *)ctx;
    return 0;
}

static int count_table(void *ctx, const store_table *t)
{
    (void)t;
    ++*(int *)ctx;
    return 0;
}

static int outbox_count(rig *r)
{
    int n = 0;
    cr_assert_eq(store_outbox_all(r->db, count_msg, &n), 0);
    return n;
}

static int open_tables(rig *r)
{
    int n = 0;
    cr_assert_eq(store_tables_open(r->db, count_table, &n), 0);
    return n;
}

static void sql(const char *db, const char *text)
{
    sqlite3 *h;
    char *err = NULL;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_busy_timeout(h, 5000);
    cr_assert_eq(sqlite3_exec(h, text, NULL, NULL, &err), SQLITE_OK, "%s", err ? err : "");
    sqlite3_close(h);
}

Test(core, one_batch_is_one_transaction)
{
    char *dir = temp_dir("core"), *db = NULL, pos[64];
    cr_assert_gt(asprintf(&db, "%s/core.db", dir), 0);
    rig r;
    rig_start(&r, 0, 0, 0, db);

    /* a batch of many events lands together, with its position */
    adapter_event many[] = {
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "alice", .text = "!new 304"},
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "alice", .text = "!join"},
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "bob", .text = "!join"},
        {.kind = ADAPTER_JOIN, .room = ROOM, .sender = "zed"},
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "carol", .text = "!join"},
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "dave", .text = "!join"},
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "alice", .text = "!set caps strict"},
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "bob", .text = "!start"},
    };
    core_stats s0, s1;
    core_stats_of(r.core, &s0);
    cr_assert_eq(core_batch(r.core, NET, many, 8, "p1"), 0);
    core_stats_of(r.core, &s1);
    cr_assert_eq(s1.batches - s0.batches, 1, "one batch, one commit");
    cr_assert_eq(journal_count(&r, 1), 7, "join x4, set, start, deal");
    cr_assert_eq(s1.moves - s0.moves, 7);
    cr_assert_eq(store_position_get(r.db, NET, pos, sizeof pos), 0);
    cr_assert_str_eq(pos, "p1");
    int msgs = outbox_count(&r);
    cr_assert_eq(msgs, (int)(s1.messages - s0.messages));
    cr_assert_gt(msgs, 0);

    /* a batch whose store write fails half-way leaves no trace at all */
    sql(db, "CREATE TRIGGER boom BEFORE INSERT ON journal WHEN NEW.entry LIKE '%boom%' "
            "BEGIN SELECT RAISE(ABORT, 'boom'); END;");
    adapter_event bad[] = {
        {.kind = ADAPTER_MESSAGE, .room = "!other", .sender = "xavier", .text = "!new 304"},
        {.kind = ADAPTER_MESSAGE, .room = "!other", .sender = "xavier", .text = "!join"},
        {.kind = ADAPTER_MESSAGE, .room = "!other", .sender = "yvonne", .text = "!join"},
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "alice", .text = "!table"},
        {.kind = ADAPTER_MESSAGE, .room = "!other", .sender = "boom", .text = "!join"},
    };
    /* The batch is recorded; the store's writer meets the failure behind the loop, and the
     * core learns it when it next asks how far commits are durable (core_flush), woken by it. */
    cr_assert_eq(core_batch(r.core, NET, bad, 5, "p2"), 0);
    until_suspended(r.core);
    /* the file, read beside the store (whose reads wait for its writer, which waits for a retry) */
    cr_assert_eq(test_sql_count(db, "SELECT count(*) FROM tables WHERE closed IS NULL"), 1,
                 "the new table of the failed batch is stored");
    cr_assert_eq(test_sql_count(db, "SELECT count(*) FROM journal WHERE table_id = 2"), 0);
    cr_assert_eq(test_sql_count(db, "SELECT count(*) FROM outbox"), msgs, "messages of the failed batch are queued");
    cr_assert_eq(test_sql_count(db, "SELECT count(*) FROM positions WHERE position = 'p1'"), 1,
                 "the failed batch moved the position");
    /* the core refuses to go on with memory ahead of the store */
    cr_assert_eq(core_batch(r.core, NET, many, 1, "p3"), -1);

    /* a restart rebuilds what was committed, and the same batch then goes through */
    sql(db, "DROP TRIGGER boom;");
    core_free(r.core);
    store_close(r.db); /* what its writer held is lost, as in a crash */
    char err[256];
    cr_assert_eq(store_open(&r.db, db, err, sizeof err), 0, "%s", err);
    rig_core(&r);
    cr_assert_eq(core_restore(r.core), 1);
    bad[4].sender = "zoe";
    cr_assert_eq(core_batch(r.core, NET, bad, 5, "p2"), 0);
    cr_assert_eq(journal_count(&r, 2), 3);
    cr_assert_eq(open_tables(&r), 2);
    cr_assert_geq(r.problems, 1, "the store failure was not logged");
    r.problems = 0;
    rig_stop(&r);
    free(db);
    temp_dir_remove(dir);
}

/* ---------------------------------------------------------------------------------------- */
/* (c) Restoring tables from the store                                                      */
/* ---------------------------------------------------------------------------------------- */

/* The text of the last message offered to dest ("" = the room) after mark. */
static const char *last_to(const rig *r, int mark, const char *user)
{
    const char *t = NULL;
    for (int i = mark; i < r->net.n; i++)
        if (strcmp(r->net.o[i].user, user) == 0) t = r->net.o[i].text;
    cr_assert_not_null(t, "nothing was sent to '%s'", user);
    return t;
}

typedef struct {
    char room_table[4096], alice_table[4096], alice_hand[1024], alice_last[1024];
} views;

static void views_of(rig *r, views *v)
{
    int mark = r->net.n;
    say(r, "alice", "!table");
    snprintf(v->room_table, sizeof v->room_table, "%s", last_to(r, mark, ""));
    mark = r->net.n;
    whisper(r, "alice", "table");
    snprintf(v->alice_table, sizeof v->alice_table, "%s", last_to(r, mark, "alice"));
    mark = r->net.n;
    whisper(r, "alice", "!hand");
    snprintf(v->alice_hand, sizeof v->alice_hand, "%s", last_to(r, mark, "alice"));
    mark = r->net.n;
    whisper(r, "alice", "!last");
    snprintf(v->alice_last, sizeof v->alice_last, "%s", last_to(r, mark, "alice"));
}

Test(core, restore_rebuilds_a_table_mid_hand)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    alice_and_computers(&r);
    table t;
    for (int guard = 0; guard < 400; guard++) {
        table_of(&r, 1, &t);
        cr_assert(!t.over, "the match ended before a hand reached its third trick");
        if (st_of(&t)->phase == G304_PHASE_PLAY && st_of(&t)->trick_no >= 2 && st_of(&t)->to_act == 0) break;
        play_one(&r, "alice", 0);
        settle(&r, 1000);
    }
    cr_assert(st_of(&t)->phase == G304_PHASE_PLAY && st_of(&t)->trick_no >= 2);
    g304_state before = *st_of(&t);
    views v1, v2;
    views_of(&r, &v1);
    cr_assert(strstr(v1.alice_hand, "\xE2\x99"), "no cards in: %s", v1.alice_hand);

    /* a new core on the same store: the table comes back exactly */
    core_free(r.core);
    rig_core(&r);
    cr_assert_eq(core_restore(r.core), 1);
    cr_assert_eq(core_table_of(r.core, NET, ROOM), 1);
    settle(&r, 1000);
    views_of(&r, &v2);
    cr_assert_str_eq(v2.room_table, v1.room_table);
    cr_assert_str_eq(v2.alice_table, v1.alice_table);
    cr_assert_str_eq(v2.alice_hand, v1.alice_hand);
    cr_assert_str_eq(v2.alice_last, v1.alice_last);
    table_of(&r, 1, &t);
    cr_assert_eq(memcmp(st_of(&t), &before, sizeof before), 0, "the rebuilt state differs");

    /* play goes on: alice moves, the computers answer */
    int n0 = journal_count(&r, 1);
    play_one(&r, "alice", 0);
    settle(&r, 1000);
    entries l;
    journal_of(&r, 1, &l);
    int computers = 0;
    for (int i = n0 + 1; i < l.n; i++) computers += strncmp(l.e[i], "move 0", 6) != 0;
    cr_assert_gt(computers, 0, "the computer players did not go on after the restore");
    entries_free(&l);

    /* a restart while a computer is to move: its move is asked for again */
    for (int guard = 0; guard < 20; guard++) { /* no settle: the computers' answer stays pending */
        table_of(&r, 1, &t);
        if (t.over || st_of(&t)->to_act != 0) break;
        play_one(&r, "alice", 0);
    }
    cr_assert(!t.over);
    int n1 = journal_count(&r, 1);
    core_free(r.core);
    rig_core(&r);
    cr_assert_eq(core_restore(r.core), 1);
    cr_assert_gt(core_busy(r.core), 0, "nobody thinks for the computer to move");
    settle(&r, 1000);
    cr_assert_gt(journal_count(&r, 1), n1, "the computers did not move after the restore");
    table_of(&r, 1, &t);
    cr_assert(t.over || st_of(&t)->to_act == 0);
    rig_stop(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* (d) Delivery: ADAPTER_LATER and ADAPTER_QUEUED                                           */
/* ---------------------------------------------------------------------------------------- */

static int later_for_room(mem_net *m, const store_msg *msg)
{
    if (m->block_room && !msg->user[0]) return ADAPTER_LATER;
    if (m->block_user[0] && strcmp(msg->user, m->block_user) == 0) return ADAPTER_LATER;
    return ADAPTER_SENT;
}

/* Per destination, the delivered ids are increasing and each is delivered once. */
static void check_delivery_order(const rig *r)
{
    for (int i = 0; i < r->net.n; i++) {
        const offer *a = &r->net.o[i];
        if (a->code != ADAPTER_SENT) continue;
        for (int j = i + 1; j < r->net.n; j++) {
            const offer *b = &r->net.o[j];
            if (b->code != ADAPTER_SENT || strcmp(a->user, b->user) || strcmp(a->room, b->room)) continue;
            cr_assert_lt(a->id, b->id, "message %lld delivered after %lld to the same place", (long long)b->id,
                         (long long)a->id);
        }
    }
}

static int pending(rig *r)
{
    int n = 0;
    cr_assert_eq(store_outbox_pending(r->db, NET, 0, count_msg, &n), 0);
    return n;
}

Test(core, later_keeps_a_message_and_the_order)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.net.decide = later_for_room;
    r.net.block_room = 1;
    say(&r, "alice", "!new 304");
    cr_assert_eq(r.net.n, 1);
    cr_assert_eq(r.net.o[0].code, ADAPTER_LATER);
    int64_t first = r.net.o[0].id;
    say(&r, "alice", "!join");
    say(&r, "bob", "!join");
    /* the held message is offered again; the ones behind it wait */
    int again = 0;
    for (int i = 1; i < r.net.n; i++) {
        cr_assert_eq(r.net.o[i].id, first, "a later room message was offered before the held one");
        again++;
    }
    cr_assert_geq(again, 2);
    cr_assert_str_eq(r.net.o[r.net.n - 1].text, r.net.o[0].text);
    /* another destination is not held up */
    int mark = r.net.n;
    whisper(&r, "carol", "!help bid");
    int priv = 0;
    for (int i = mark; i < r.net.n; i++) priv += strcmp(r.net.o[i].user, "carol") == 0 && r.net.o[i].code == ADAPTER_SENT;
    cr_assert_eq(priv, 1, "a private message waited behind the room");
    cr_assert_eq(pending(&r), 3);

    /* the room comes back: everything, once, in order */
    r.net.block_room = 0;
    mark = r.net.n;
    cr_assert_eq(core_flush(r.core), 3);
    cr_assert_eq(r.net.n - mark, 3);
    cr_assert_eq(r.net.o[mark].id, first);
    cr_assert(strstr(r.net.o[mark].text, "Table 1 is open"));
    cr_assert_str_eq(r.net.o[mark + 1].text, "alice (South) sits down.");
    cr_assert_str_eq(r.net.o[mark + 2].text, "bob (East) sits down.");
    cr_assert_eq(pending(&r), 0);
    cr_assert_eq(core_flush(r.core), 0);
    check_delivery_order(&r);

    /* the same for one player's private messages */
    r.net.block_user[0] = 0;
    snprintf(r.net.block_user, sizeof r.net.block_user, "dave");
    mark = r.net.n;
    whisper(&r, "dave", "!help bid");
    whisper(&r, "dave", "!help pass");
    say(&r, "carol", "!join");
    cr_assert_eq(pending(&r), 2);
    r.net.block_user[0] = 0;
    cr_assert_eq(core_flush(r.core), 2);
    const offer *a = &r.net.o[r.net.n - 2], *b = &r.net.o[r.net.n - 1];
    cr_assert(strstr(a->text, "!bid") && strstr(b->text, "!pass"), "dave's help came out of order");
    check_delivery_order(&r);
    rig_stop(&r);
}

static int queue_all(mem_net *m, const store_msg *msg)
{
    (void)m;
    (void)msg;
    return ADAPTER_QUEUED;
}

Test(core, queued_waits_for_core_sent)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.net.decide = queue_all;
    say(&r, "alice", "!new 304");
    cr_assert_eq(r.net.n, 1);
    int64_t id1 = r.net.o[0].id;
    cr_assert_eq(pending(&r), 1, "a queued message is not done yet");
    say(&r, "alice", "!join");
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(r.net.n, 1, "offered again while queued, or a later room message went first");
    /* another destination goes ahead */
    whisper(&r, "bob", "!help");
    cr_assert_eq(r.net.n, 2);
    cr_assert_str_eq(r.net.o[1].user, "bob");
    int64_t idb = r.net.o[1].id;

    cr_assert_eq(core_sent(r.core, id1), 0);
    cr_assert_eq(pending(&r), 2);
    cr_assert_eq(core_flush(r.core), 0); /* queued again, not yet delivered */
    cr_assert_eq(r.net.n, 3);
    cr_assert_str_eq(r.net.o[2].text, "alice (South) sits down.");
    cr_assert_gt(r.net.o[2].id, id1);
    cr_assert_eq(core_sent(r.core, r.net.o[2].id), 0);
    cr_assert_eq(core_sent(r.core, idb), 0);
    cr_assert_eq(pending(&r), 0);
    r.net.decide = NULL;
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(r.net.n, 3, "a message was offered after it was done");
    rig_stop(&r);
}

/* core_delivered(): never offered again; the store learns it with the next transaction, or
 * from core_tick() 100 ms later, or when the core is freed. */
Test(core, delivered_marks_share_a_transaction)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.net.decide = queue_all;
    say(&r, "alice", "!new 304");
    whisper(&r, "bob", "!help");
    cr_assert_eq(r.net.n, 2);
    cr_assert_eq(core_delivered(r.core, r.net.o[0].id), 0);
    cr_assert_eq(core_delivered(r.core, r.net.o[1].id), 0);
    cr_assert_eq(pending(&r), 2, "not yet in the store");
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(r.net.n, 2, "a delivered message was offered again");
    cr_assert_eq(core_next_deadline(r.core), r.now + 100);
    r.now += 99;
    cr_assert_eq(core_tick(r.core), 0);
    cr_assert_eq(pending(&r), 2, "marked before the 100 ms");
    r.now += 1;
    cr_assert_eq(core_tick(r.core), 0);
    cr_assert_eq(pending(&r), 0, "core_tick marks them once 100 ms have passed");
    cr_assert_eq(core_next_deadline(r.core), INT64_MAX);

    /* a batch takes the marks into its own transaction */
    say(&r, "alice", "!join");
    cr_assert_eq(r.net.n, 3);
    cr_assert_eq(core_delivered(r.core, r.net.o[2].id), 0);
    cr_assert_eq(pending(&r), 1);
    say(&r, "alice", "!table");
    cr_assert_eq(r.net.n, 4, "the next message of the room goes once the first is delivered");
    cr_assert_eq(pending(&r), 1, "only the new message is pending");
    cr_assert_eq(core_delivered(r.core, r.net.o[3].id), 0);
    r.net.decide = NULL;
    core_free(r.core); /* marks what is left */
    r.core = NULL;
    cr_assert_eq(pending(&r), 0);
    rig_core(&r);
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(r.net.n, 4, "nothing is sent again after a clean stop");
    rig_stop(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* (d2) One message per destination per transaction; merging while throttled                */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int64_t id;
    char room[256], user[256], mention[256], text[9000];
    int sent, merged_into;
} row;

typedef struct {
    row r[256];
    int n;
} rows;

static int collect_row(void *ctx, const store_msg *m)
{
    rows *o = ctx;
    cr_assert_lt(o->n, 256);
    row *x = &o->r[o->n++];
    x->id = m->id;
    snprintf(x->room, sizeof x->room, "%s", m->room);
    snprintf(x->user, sizeof x->user, "%s", m->user);
    snprintf(x->mention, sizeof x->mention, "%s", m->mention);
    snprintf(x->text, sizeof x->text, "%s", m->text);
    return 0;
}

static void rows_of(rig *r, rows *out, int pending_only)
{
    out->n = 0;
    if (pending_only) cr_assert_eq(store_outbox_pending(r->db, NET, 0, collect_row, out), 0);
    else cr_assert_eq(store_outbox_all(r->db, collect_row, out), 0);
}

/* The lines told to one destination, in outbox order. */
static void lines_to(const rows *o, const char *room, const char *user, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->r[i].room, room) == 0 && strcmp(o->r[i].user, user) == 0 && o->r[i].text[0])
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "\n" : "", o->r[i].text);
}

/* A network that can throttle the bot (its callback, off until block_room) gathers what a
 * transaction says to one destination; callback 0: a network without one, like IRC. */
static int throttled_flag(void *ctx) { return ((mem_net *)ctx)->block_room; }

static void rig_throttled(rig *r, int callback)
{
    core_free(r->core);
    rig_core_with(r, (adapter){.throttled = callback ? throttled_flag : NULL});
}

Test(core, one_message_per_destination_per_transaction)
{
    adapter_event ev[] = {
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "alice", .text = "!new 304"}, {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "alice", .text = "!join"},
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "bob", .text = "!join"},      {.kind = ADAPTER_MESSAGE, .sender = "bob", .text = "!help pass", .is_private = 1},
        {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "carol", .text = "!join"},    {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "dave", .text = "!join"},
        {.kind = ADAPTER_MESSAGE, .sender = "bob", .text = "!help bid", .is_private = 1},  {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "bob", .text = "!start"},
    };
    int n = (int)(sizeof ev / sizeof ev[0]);
    rig one, many;
    rig_start(&one, 0, 0, 0, NULL);
    rig_start(&many, 0, 0, 0, NULL);
    rig_throttled(&one, 1);
    rig_throttled(&many, 1);
    cr_assert_eq(core_batch(one.core, NET, ev, n, NULL), 0);
    for (int i = 0; i < n; i++) cr_assert_eq(core_batch(many.core, NET, &ev[i], 1, NULL), 0);
    static rows a, b;
    rows_of(&one, &a, 0);
    rows_of(&many, &b, 0);
    cr_assert_gt(b.n, a.n, "one batch per event says it in more messages");
    /* one message per destination, the room's first, then the private ones */
    for (int i = 0; i < a.n; i++)
        for (int j = i + 1; j < a.n; j++) {
            cr_assert(strcmp(a.r[i].room, a.r[j].room) || strcmp(a.r[i].user, a.r[j].user),
                      "two messages to %s %s in one transaction", a.r[i].room, a.r[i].user);
            cr_assert(a.r[i].user[0] == 0 || a.r[j].user[0] != 0, "a private message before the room's");
        }
    /* every reader reads the same lines in the same order, and is mentioned as last told */
    static char la[65536], lb[65536];
    int readers = 0;
    for (int i = 0; i < a.n; i++) {
        lines_to(&a, a.r[i].room, a.r[i].user, la, sizeof la);
        lines_to(&b, a.r[i].room, a.r[i].user, lb, sizeof lb);
        cr_assert_str_eq(la, lb, "to %s %s", a.r[i].room, a.r[i].user);
        const char *last = "";
        for (int k = 0; k < b.n; k++)
            if (!strcmp(b.r[k].room, a.r[i].room) && !strcmp(b.r[k].user, a.r[i].user) && b.r[k].mention[0])
                last = b.r[k].mention;
        cr_assert_str_eq(a.r[i].mention, last);
        readers++;
    }
    cr_assert_geq(readers, 5, "the room and the four players' cards");
    int told = 0;
    for (int i = 0; i < b.n; i++) {
        int found = 0;
        for (int k = 0; k < a.n && !found; k++) found = !strcmp(a.r[k].room, b.r[i].room) && !strcmp(a.r[k].user, b.r[i].user);
        told += found;
    }
    cr_assert_eq(told, b.n, "a destination of the one-by-one run got nothing in one batch");
    core_stats st;
    core_stats_of(one.core, &st);
    cr_assert_eq(st.messages, a.n);
    rig_stop(&one);
    rig_stop(&many);
}

Test(core, a_long_transaction_is_cut_into_messages_of_8_kib)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.conf.rate_commands = 0; /* forty questions at once from one person */
    rig_throttled(&r, 1);
    adapter_event ev[40];
    for (int i = 0; i < 40; i++) ev[i] = (adapter_event){.kind = ADAPTER_MESSAGE, .sender = "alice", .text = "!help", .is_private = 1};
    cr_assert_eq(core_batch(r.core, NET, ev, 40, NULL), 0);
    static rows o;
    rows_of(&r, &o, 0);
    cr_assert_gt(o.n, 1, "40 help texts in one message");
    size_t total = 0, one = 0;
    for (int i = 0; i < o.n; i++) {
        size_t len = strlen(o.r[i].text);
        cr_assert_leq(len, 8192);
        cr_assert_gt(len, 4096, "a message cut short: %zu bytes", len);
        total += len + 1;
    }
    rig_stop(&r);
    rig_start(&r, 0, 0, 0, NULL);
    rig_throttled(&r, 1);
    cr_assert_eq(core_batch(r.core, NET, ev, 1, NULL), 0);
    rows_of(&r, &o, 0);
    one = strlen(o.r[0].text) + 1;
    cr_assert_eq(total, 40 * one, "lines lost or added");
    rig_stop(&r);
}


/* The room's merged rows: every row merged into another is sent, without text, and names it. */
/* Waits until every commit of the store is on the disk (woken by it), then lets the core flush:
 * what the core does once the store's writer has written what it was given. */
static void settle_store(rig *r)
{
    all_synced(r->db);
    cr_assert_geq(core_flush(r->core), 0);
}

static int merged_rows(const char *db, int64_t into)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT count(*) FROM outbox WHERE merged_into = ?1 AND sent = 1 AND text = ''",
                                    -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, into);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

Test(core, throttled_waiting_messages_are_merged_once_and_durably)
{
    char *dir = temp_dir("core"), *db = NULL;
    cr_assert_gt(asprintf(&db, "%s/merge.db", dir), 0);
    rig r;
    rig_start(&r, 0, 0, 0, db);
    rig_throttled(&r, 1);
    r.net.decide = queue_all;
    say(&r, "alice", "!new 304");                 /* under way: the room's first message */
    cr_assert_eq(r.net.n, 1);
    int64_t head = r.net.o[0].id;
    static const char *const more[] = {"!join", "!table", "!rules", "!help pass"};
    for (int i = 0; i < 4; i++) say(&r, "alice", more[i]);
    static rows before;
    rows_of(&r, &before, 1);
    cr_assert_eq(before.n, 5, "not throttled: nothing merged");
    static char want[65536];
    lines_to(&before, ROOM, "", want, sizeof want);

    r.net.block_room = 1;                         /* the network says it is throttled */
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(r.net.n, 1, "a waiting message was offered before the first was delivered");
    static rows after;
    rows_of(&r, &after, 1);
    cr_assert_eq(after.n, 2, "the first message, and one for all that waited behind it");
    cr_assert_eq(after.r[0].id, head);
    cr_assert_eq(after.r[1].id, before.r[1].id, "merged into the first of them");
    static char got[65536];
    lines_to(&after, ROOM, "", got, sizeof got);
    cr_assert_str_eq(got, want, "lines lost, added or reordered");
    cr_assert_eq(merged_rows(db, before.r[1].id), 3);
    cr_assert_eq(core_flush(r.core), 0);
    rows_of(&r, &after, 1);
    cr_assert_eq(after.n, 2, "merged twice");

    /* a restart: the merge is in the store; what was under way is offered again as it was */
    core_free(r.core);
    r.core = NULL;
    rig_throttled(&r, 1);
    cr_assert_eq(core_restore(r.core), 1);
    int mark = r.net.n;
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(r.net.n, mark + 1);
    cr_assert_eq(r.net.o[mark].id, head);
    /* the first is tried (its wire form stored), then more waits: the tried one is not merged */
    cr_assert_eq(core_sent(r.core, head), 0);
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(r.net.o[r.net.n - 1].id, before.r[1].id, "the merged message goes next, as merged");
    cr_assert(strstr(r.net.o[r.net.n - 1].text, "Table 1 (not started)"));
    int64_t merged = before.r[1].id;
    cr_assert_eq(store_outbox_wire(r.db, merged, "{\"tried\":1}"), 0);
    core_free(r.core);                            /* a crash: the merged message was tried */
    r.core = NULL;
    rig_throttled(&r, 1);
    cr_assert_eq(core_restore(r.core), 1);
    say(&r, "bob", "!join");
    say(&r, "carol", "!join");
    say(&r, "dave", "!join");
    settle_store(&r); /* a flush once the store's writer has written them all */
    rows_of(&r, &after, 1);
    cr_assert_eq(after.n, 2, "the tried message stays as it is, the three behind it become one");
    cr_assert_eq(after.r[0].id, merged);
    cr_assert_str_eq(after.r[1].text, "bob (East) sits down.\ncarol (North) sits down.\ndave (West) sits down.");
    rig_stop(&r);
    free(db);
    temp_dir_remove(dir);
}

Test(core, no_merging_without_a_throttle_or_a_network_that_merges)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    rig_throttled(&r, 0);                         /* no callback: a network like IRC */
    r.net.decide = queue_all;
    r.net.block_room = 1;
    say(&r, "alice", "!new 304");
    for (int i = 0; i < 3; i++) say(&r, "alice", "!table");
    static rows o;
    rows_of(&r, &o, 1);
    cr_assert_eq(o.n, 4);
    rig_stop(&r);
}

/* Without gathering (IRC, the console) what a batch of commands says is queued in the order
 * said: the first command's private answer before the second one's words in the room. A
 * network that gathers queues the room's message first. */
Test(core, without_gathering_lines_go_in_the_order_said)
{
    adapter_event ev[] = {{.kind = ADAPTER_MESSAGE, .sender = "bob", .text = "!help pass", .is_private = 1},
                          {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "carol", .text = "!new 304"}};
    for (int gathers = 0; gathers < 2; gathers++) {
        rig r;
        rig_start(&r, 0, 0, 0, NULL);
        rig_throttled(&r, gathers);
        cr_assert_eq(core_batch(r.core, NET, ev, 2, NULL), 0);
        static rows o;
        rows_of(&r, &o, 0);
        cr_assert_geq(o.n, 2);
        cr_expect_str_eq(o.r[0].user, gathers ? "" : "bob", "gathering %d: the first message", gathers);
        cr_expect_str_eq(o.r[o.n - 1].user, gathers ? "bob" : "", "gathering %d: the last message", gathers);
        rig_stop(&r);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* (d3) Standings: whom a player means, and which room a private answer is about            */
/* ---------------------------------------------------------------------------------------- */

static const char *mem_resolve(void *ctx, const char *room, const char *text, char *buf, size_t len)
{
    (void)ctx;
    cr_assert_str_eq(room, ROOM);
    if (strcmp(text, "Alice Liddell") != 0 && strcmp(text, "@alice:mem") != 0) return NULL;
    snprintf(buf, len, "alice");
    return buf;
}

static const char *mem_room_name(void *ctx, const char *room, char *buf, size_t len)
{
    (void)ctx;
    (void)room;
    snprintf(buf, len, "Card night");
    return buf;
}

static void rig_named(rig *r, int named)
{
    core_free(r->core);
    rig_core_with(r, (adapter){.resolve_user = named ? mem_resolve : NULL, .room_name = named ? mem_room_name : NULL});
}

Test(core, standings_find_the_player_meant_and_name_the_room)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    rig_named(&r, 1);
    store_standing alice = {.user = "alice", .matches = 2, .matches_won = 1, .hands = 9, .tokens = 4};
    cr_assert_eq(store_standing_add(r.db, NET, ROOM, &alice), 0);
    static const struct {
        const char *text, *want;
    } rows[] = {
        {"!standings Alice Liddell", "\nalice — 2 matches, 1 won"}, /* the adapter's name for her */
        {"!standings @alice:mem", "\nalice — 2 matches, 1 won"},    /* her id */
        {"!standings @alice", "\nalice — 2 matches, 1 won"},        /* not known to the adapter: as before */
        {"!standings alice", "\nalice — 2 matches, 1 won"},
        {"!standings nobody", "\nnobody has not played here yet."},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int mark = r.net.n;
        say(&r, "bob", rows[i].text);
        cr_assert_eq(r.net.n, mark + 1);
        cr_expect(strstr(r.net.o[mark].text, rows[i].want) != NULL, "%s: %s", rows[i].text, r.net.o[mark].text);
    }
    /* a private answer is headed by the room's name, or its id when the network has none */
    say(&r, "alice", "!new 304");
    say(&r, "alice", "!join");
    int mark = r.net.n;
    whisper(&r, "alice", "!standings");
    cr_assert_eq(r.net.n, mark + 1);
    cr_expect_str_eq(r.net.o[mark].user, "alice");
    cr_expect(strncmp(r.net.o[mark].text, "[Card night] ", 13) == 0, "%s", r.net.o[mark].text);
    rig_named(&r, 0);
    cr_assert_eq(core_restore(r.core), 1);
    mark = r.net.n;
    whisper(&r, "alice", "!standings");
    cr_expect(strncmp(r.net.o[mark].text, "[" ROOM "] ", strlen(ROOM) + 3) == 0, "%s", r.net.o[mark].text);
    rig_stop(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* (e) Players leaving the room                                                             */
/* ---------------------------------------------------------------------------------------- */

static void leave(rig *r, const char *user)
{
    adapter_event e = {.kind = ADAPTER_LEAVE, .room = ROOM, .sender = user};
    batch(r, &e, 1);
}

Test(core, leaving_an_unstarted_table_frees_the_seat)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    say(&r, "alice", "!new 304");
    say(&r, "alice", "!join");
    say(&r, "bob", "!join");
    int mark = r.net.n;
    leave(&r, "bob");
    cr_assert_eq(offers_with(&r, mark, "bob (East) leaves."), 1);
    table t;
    table_of(&r, 1, &t);
    cr_assert_str_eq(t.seat[1].user, "");
    cr_assert(!t.seat[1].bot);
    say(&r, "carol", "!join");
    cr_assert_eq(offers_with(&r, mark, "carol (East) sits down."), 1);
    /* someone who is not seated leaving changes nothing and says nothing */
    mark = r.net.n;
    int n = journal_count(&r, 1);
    leave(&r, "zed");
    adapter_event j = {.kind = ADAPTER_JOIN, .room = ROOM, .sender = "yan"};
    batch(&r, &j, 1);
    cr_assert_eq(r.net.n, mark);
    cr_assert_eq(journal_count(&r, 1), n);
    rig_stop(&r);
}

Test(core, leaving_a_running_table_makes_the_seat_away)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    say(&r, "alice", "!new 304");
    say(&r, "alice", "!join");
    say(&r, "alice", "!bot");
    say(&r, "carol", "!join");
    say(&r, "alice", "!bot");
    say(&r, "alice", "!start");
    settle(&r, 1000);
    int mark = r.net.n, n0 = journal_count(&r, 1);
    leave(&r, "carol");
    cr_assert_eq(offers_with(&r, mark, "is away: a computer player plays for them until they say !back."), 1);
    cr_assert(strncmp(last_offer_with(&r, mark, "is away")->text, "carol (North", 12) == 0);
    table t;
    table_of(&r, 1, &t);
    cr_assert(t.seat[2].away);
    cr_assert_str_eq(t.seat[2].user, "carol");
    leave(&r, "carol"); /* again: nothing more */
    cr_assert_eq(offers_with(&r, mark, "is away"), 1);
    /* play on until a computer has moved for carol */
    entries l;
    for (int guard = 0; guard < 200; guard++) {
        settle(&r, 1000);
        journal_of(&r, 1, &l);
        int done = entry_find(&l, n0, "move 2 ") >= 0;
        entries_free(&l);
        table_of(&r, 1, &t);
        if (done || t.over) break;
        play_one(&r, "alice", 0);
    }
    journal_of(&r, 1, &l);
    cr_assert_geq(entry_find(&l, n0, "move 2 "), 0, "nobody played carol's seat");
    entries_free(&l);
    /* carol comes back by playing */
    mark = r.net.n;
    say(&r, "carol", "!back");
    cr_assert_eq(offers_with(&r, mark, "carol (North) is back."), 1);
    rig_stop(&r);
}

/* Found as a bug: the away notice names the seat after marking it away, so it reads "carol (North, away)
 * is away: …". Input: a seated player of a running match leaves the room (or the idle timer
 * fires). Expected "carol (North) is away: a computer player plays for them until they say
 * !back."; actual "carol (North, away) is away: …" (table_exec, entry "away"). */
Test(core, away_notice_names_the_seat_once)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    say(&r, "alice", "!new 304");
    say(&r, "alice", "!join");
    say(&r, "alice", "!bot");
    say(&r, "carol", "!join");
    say(&r, "alice", "!bot");
    say(&r, "alice", "!start");
    settle(&r, 1000);
    int mark = r.net.n;
    leave(&r, "carol");
    cr_expect_eq(offers_with(&r, mark, "carol (North) is away: a computer player plays for them until they say !back."),
                 1, "got: %s", r.net.n > mark ? r.net.o[r.net.n - 1].text : "nothing");
    rig_stop(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* (f) A player who drops off: the grace, and a table whose players are all away pausing   */
/* ---------------------------------------------------------------------------------------- */

static void join_room(rig *r, const char *user)
{
    adapter_event e = {.kind = ADAPTER_JOIN, .room = ROOM, .sender = user};
    batch(r, &e, 1);
}

/* alice at South and carol at North with two computer players, the match started and the
 * computers settled. */
static void alice_carol_and_computers(rig *r)
{
    say(r, "alice", "!new 304");
    say(r, "alice", "!join");
    say(r, "alice", "!bot");
    say(r, "carol", "!join");
    say(r, "alice", "!bot");
    say(r, "alice", "!start");
    settle(r, 1000);
}

static int is_away(rig *r, int seat)
{
    table t;
    table_of(r, 1, &t);
    return t.seat[seat].away;
}

Test(core, leaving_the_room_keeps_the_seat_for_the_grace)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.conf.leave_grace = 120;
    alice_carol_and_computers(&r);
    int64_t t0 = r.now;
    int mark = r.net.n, n0 = journal_count(&r, 1);
    leave(&r, "carol");
    cr_assert_eq(r.net.n, mark, "something was said when carol left");
    cr_assert_eq(journal_count(&r, 1), n0);
    cr_assert_eq(core_next_deadline(r.core), t0 + 120000, "no timer for the end of the grace");
    r.now = t0 + 30000;
    leave(&r, "carol"); /* a QUIT after her PART: the wait does not start again */
    r.now = t0 + 119999;
    tick(&r);
    cr_assert(!is_away(&r, 2), "carol is away before the grace is over");
    cr_assert_eq(offers_with(&r, mark, "is away"), 0);
    r.now = t0 + 120000;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "carol (North) is away: a computer player plays for them until they say !back."), 1);
    cr_assert(is_away(&r, 2));
    cr_assert_eq(offers_with(&r, mark, "pauses"), 0, "alice still plays: no pause");
    r.now += 600000;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "is away"), 1, "the grace ended twice");
    rig_stop(&r);
}

Test(core, coming_back_or_speaking_ends_the_grace)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.conf.leave_grace = 120;
    alice_carol_and_computers(&r);
    int mark = r.net.n;
    /* she joins the room again */
    leave(&r, "carol");
    r.now += 60000;
    join_room(&r, "carol");
    r.now += 600000;
    tick(&r);
    cr_assert(!is_away(&r, 2), "carol came back, yet she is away");
    /* she says something in the room (not a command) */
    leave(&r, "carol");
    r.now += 60000;
    say(&r, "carol", "sorry, my connection dropped");
    r.now += 600000;
    tick(&r);
    cr_assert(!is_away(&r, 2));
    /* she writes to the bot privately */
    leave(&r, "carol");
    r.now += 60000;
    whisper(&r, "carol", "!hand");
    r.now += 600000;
    tick(&r);
    cr_assert(!is_away(&r, 2));
    cr_assert_eq(offers_with(&r, mark, "is away"), 0);
    /* somebody else joining or speaking does not end her wait */
    leave(&r, "carol");
    int64_t left = r.now;
    say(&r, "alice", "where is carol?");
    join_room(&r, "zed");
    whisper(&r, "zed", "!help");
    r.now = left + 120000;
    tick(&r);
    cr_assert(is_away(&r, 2), "carol is not away after the grace");
    cr_assert_eq(offers_with(&r, mark, "carol (North) is away"), 1);
    rig_stop(&r);
}

Test(core, leaving_an_unstarted_table_frees_the_seat_after_the_grace)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.conf.leave_grace = 120;
    say(&r, "alice", "!new 304");
    say(&r, "alice", "!join");
    say(&r, "bob", "!join");
    int mark = r.net.n;
    int64_t t0 = r.now;
    leave(&r, "bob");
    r.now = t0 + 119999;
    tick(&r);
    table t;
    table_of(&r, 1, &t);
    cr_assert_str_eq(t.seat[1].user, "bob", "bob lost his seat before the grace was over");
    r.now = t0 + 120000;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "bob (East) leaves."), 1);
    table_of(&r, 1, &t);
    cr_assert_str_eq(t.seat[1].user, "");
    rig_stop(&r);
}

/* During the grace the turn timer still runs: a player who left on his turn is away after
 * idle_takeover, and the end of the grace then changes nothing. */
Test(core, the_turn_timer_runs_during_the_grace)
{
    rig r;
    rig_start(&r, 0, 60, 0, NULL);
    r.conf.leave_grace = 120;
    alice_and_computers(&r);
    int64_t t0 = r.now;
    int mark = r.net.n;
    leave(&r, "alice");
    cr_assert_eq(core_next_deadline(r.core), t0 + 60000, "the turn timer comes first");
    r.now = t0 + 60000;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "alice (South) is away"), 1);
    int n = journal_count(&r, 1);
    r.now = t0 + 120000;
    tick(&r);
    cr_assert_eq(offers_with(&r, mark, "is away"), 1);
    cr_assert_eq(journal_count(&r, 1), n, "the end of the grace made an entry");
    rig_stop(&r);
}

/* A restart forgets a grace that was running: the seat stays its player's (the safe way:
 * nobody is made away who may be back already), and the turn timer covers a player who is not. */
Test(core, a_restart_forgets_the_grace)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.conf.leave_grace = 120;
    alice_carol_and_computers(&r);
    leave(&r, "carol");
    core_free(r.core);
    rig_core(&r);
    cr_assert_eq(core_restore(r.core), 1);
    r.now += 600000;
    tick(&r);
    cr_assert(!is_away(&r, 2), "a grace from before the restart made carol away");
    rig_stop(&r);
}

/* Every person away: the table pauses, says so once (also across a restart), nothing moves;
 * the player to act comes back by playing and the table goes on. */
Test(core, a_table_whose_players_are_all_away_pauses)
{
    rig r;
    rig_start(&r, 0, 0, 3600, NULL);
    alice_carol_and_computers(&r);
    leave(&r, "alice"); /* no grace in this rig: away at once */
    settle(&r, 1000);   /* the computers play for alice up to carol's turn */
    table t;
    table_of(&r, 1, &t);
    cr_assert(t.seat[0].away);
    cr_assert_eq(st_of(&t)->to_act, 2, "the computers stopped with seat %d to act", st_of(&t)->to_act);
    int mark = r.net.n;
    leave(&r, "carol");
    cr_assert_eq(offers_with(&r, mark, "Table 1 pauses: all its players are away. It goes on when one of them says !back."),
                 1);
    int n = journal_count(&r, 1);
    settle(&r, 1000);
    for (int k = 1; k <= 5; k++) {
        r.now += 600000;
        tick(&r);
    }
    cr_assert_eq(core_busy(r.core), 0, "a computer player thinks at a paused table");
    cr_assert_eq(journal_count(&r, 1), n, "the table moved while paused");
    cr_assert_eq(core_table_of(r.core, NET, ROOM), 1, "closed before the hour untouched");

    /* a restart: still paused, and not told again */
    core_free(r.core);
    rig_core(&r);
    cr_assert_eq(core_restore(r.core), 1);
    tick(&r);
    say(&r, "alice", "!table");
    cr_assert_eq(core_busy(r.core), 0);
    cr_assert_eq(journal_count(&r, 1), n);
    cr_assert_eq(offers_with(&r, mark, "pauses"), 1, "the pause was told again");

    /* carol plays her turn: she is back and the computers go on for alice */
    mark = r.net.n;
    play_one(&r, "carol", 2);
    cr_assert_eq(offers_with(&r, mark, "carol (North) is back."), 1);
    settle(&r, 1000);
    entries l;
    journal_of(&r, 1, &l);
    cr_assert_geq(entry_find(&l, n + 2, "move 0 "), 0, "the computer did not play alice's seat after the pause");
    entries_free(&l);

    /* the untouched table still closes */
    table_of(&r, 1, &t);
    cr_assert(!t.over);
    cr_assert_eq(st_of(&t)->to_act, 2);
    leave(&r, "carol");
    cr_assert_eq(offers_with(&r, mark, "pauses"), 1, "the new pause was not told");
    r.now += 3600000;
    tick(&r);
    cr_assert_eq(core_table_of(r.core, NET, ROOM), 0, "a paused table did not close after the hour untouched");
    rig_stop(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* (g) Back-pressure: computer players keep to the network's pace                           */
/* ---------------------------------------------------------------------------------------- */

#define SLOW_LINE_MS 1000 /* the slow network sends one line a second */
/* The most lines a table may have waiting: what that network sends in the core's limit of 3 s
 * (or 3 messages), and what one more move may add (a trick, the end of a hand and the next
 * deal). */
#define SLOW_MOST_LINES 16

static int add_lines(void *ctx, const store_msg *m)
{
    *(int64_t *)ctx += lines_of(m->text);
    return 0;
}

/* Lines of the messages not yet delivered (queued or in flight). */
static int64_t backlog_lines(rig *r)
{
    int64_t n = 0;
    cr_assert_eq(store_outbox_pending(r->db, NET, 0, add_lines, &n), 0);
    return n;
}

/* The slow network runs for ms of the fake clock, in steps of 100 ms: it takes every message
 * (queue_all) and delivers them one after the other in the order they were offered, each line
 * taking line_ms; the core does what falls due meanwhile. Returns the most lines that were
 * waiting at any step. */
static int64_t network_runs(rig *r, int64_t ms)
{
    int64_t most = 0, end = r->now + ms;
    while (r->now < end) {
        r->now += 100;
        r->net.credit += 100;
        while (r->net.sent < r->net.n) {
            int64_t id = r->net.o[r->net.sent].id, cost = lines_of(r->net.o[r->net.sent].text) * r->net.line_ms;
            if (r->net.credit < cost) break;
            r->net.credit -= cost;
            r->net.sent++;
            cr_assert_eq(core_sent(r->core, id), 0);
        }
        if (r->net.sent == r->net.n) r->net.credit = 0; /* an idle network saves no time for later */
        tick(r);
        int64_t waiting = backlog_lines(r);
        if (waiting > most) most = waiting;
    }
    return most;
}

/* A person's command in the room while the computers play: the ms until its answer (the
 * first message naming him) is delivered. */
static int64_t answer_delay(rig *r, const char *user, const char *text)
{
    int mark = r->net.n;
    int64_t asked = r->now;
    say(r, user, text);
    int64_t id = 0;
    for (int64_t waited = 0; waited < 600000; waited += 100) {
        for (int i = mark; i < r->net.n && !id; i++)
            if (strstr(r->net.o[i].text, user)) id = r->net.o[i].id;
        int delivered = 0;
        for (int i = 0; i < r->net.sent; i++) delivered |= id && r->net.o[i].id == id;
        if (delivered) return r->now - asked;
        network_runs(r, 100);
    }
    cr_assert_fail("the answer to '%s' was never delivered", text);
    return -1;
}

static void four_computers(rig *r)
{
    say(r, "carol", "!new 304");
    for (int i = 0; i < 4; i++) say(r, "carol", "!bot");
    say(r, "carol", "!start");
    settle(r, 100000);
}

Test(core, computer_players_wait_for_a_slow_network)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.net.decide = queue_all;
    r.net.line_ms = SLOW_LINE_MS;
    four_computers(&r);
    /* nothing delivered yet: the room has more than 3 s of lines waiting, nobody moves */
    int n = journal_count(&r, 1);
    cr_assert_eq(n, 6, "4 computer players, start and deal: the computers moved with the room's lines waiting");
    cr_assert_eq(core_busy(r.core), 0);
    for (int k = 0; k < 5; k++) {
        r.now += 60000;
        tick(&r);
    }
    cr_assert_eq(journal_count(&r, 1), n);

    /* a restart finds the same lines waiting and still holds the computers */
    core_free(r.core);
    rig_core(&r);
    r.net.sent = r.net.n; /* a new connection: the core offers its waiting messages again */
    cr_assert_eq(core_restore(r.core), 1);
    tick(&r);
    cr_assert_eq(core_busy(r.core), 0);
    cr_assert_eq(journal_count(&r, 1), n);

    /* the network sends: the table goes on at its pace, and its queue stays short */
    int64_t most = network_runs(&r, 120000);
    int moved = journal_count(&r, 1) - n;
    cr_assert_gt(moved, 20, "the table did not go on as the lines left (%d moves in 120 s)", moved);
    cr_assert_lt(moved, 200, "the table played faster than the network sends (%d moves in 120 s)", moved);
    cr_assert_leq(most, SLOW_MOST_LINES, "%lld lines waited", (long long)most);

    /* a person's command is answered within the short queue, not behind the whole match */
    int64_t delay = answer_delay(&r, "dave", "!leave");
    cr_assert_leq(delay, (SLOW_MOST_LINES + 1) * SLOW_LINE_MS, "the answer to dave waited %lld ms", (long long)delay);
    most = network_runs(&r, 60000);
    cr_assert_leq(most, SLOW_MOST_LINES, "%lld lines waited", (long long)most);
    rig_stop(&r);
}

/* A network may send a room one message at a time (IRC confirms each before the next goes):
 * however few lines they are, a few messages waiting hold the room's computer players too. */
Test(core, a_few_messages_waiting_hold_computer_players)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.net.decide = queue_all;
    r.net.line_ms = 10; /* the table's opening is 70 ms of lines: far under the 3 s */
    four_computers(&r);
    cr_assert_lt(backlog_lines(&r) * r.net.line_ms, 3000);
    cr_assert_eq(journal_count(&r, 1), 6, "the computers moved with seven messages waiting");
    cr_assert_eq(core_busy(r.core), 0);
    network_runs(&r, 2000);
    cr_assert_gt(journal_count(&r, 1), 6, "the computers did not go on once the messages were sent");
    rig_stop(&r);
}

/* The network's whole backlog counts too: another room's long output holds this room's
 * computer players although their own room has little waiting. */
Test(core, a_long_backlog_elsewhere_holds_computer_players)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.net.decide = queue_all;
    say(&r, "carol", "!new 304"); /* set up on a network without a pace: nothing waits for it */
    for (int i = 0; i < 4; i++) say(&r, "carol", "!bot");
    r.net.line_ms = SLOW_LINE_MS;
    for (int i = 0; i < 2; i++) {
        adapter_event e = {.kind = ADAPTER_MESSAGE, .room = "!other", .sender = "erin", .text = "!help"};
        batch(&r, &e, 1);
    }
    int64_t elsewhere = backlog_lines(&r);
    cr_assert_gt(elsewhere, 10, "erin's help is %lld lines", (long long)elsewhere);
    say(&r, "carol", "!start");
    settle(&r, 100000);
    cr_assert_eq(backlog_lines(&r) - elsewhere, 2, "the start and the deal are 2 lines: under the room's 3 s");
    int n = journal_count(&r, 1);
    cr_assert_eq(n, 6, "the computers moved while the network had more than 5 s to send");
    cr_assert_eq(core_busy(r.core), 0);
    /* once erin's help is out, they go on */
    network_runs(&r, (elsewhere + 2) * SLOW_LINE_MS + 2000);
    cr_assert_gt(journal_count(&r, 1), n, "the computers did not go on once the network's backlog was sent");
    rig_stop(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* (h) Seats bound to where their player sat down (IRC without accounts)                    */
/* ---------------------------------------------------------------------------------------- */

#define HOME "~alice@home.example"
#define ELSEWHERE "~eve@elsewhere.example"
#define TABLE_HEAD "[" ROOM " \xC2\xB7 table 1] " /* the head of the table's private messages */

static void event_from(rig *r, adapter_event e, const char *origin)
{
    e.origin = origin;
    batch(r, &e, 1);
}

static void say_from(rig *r, const char *user, const char *origin, const char *text)
{
    event_from(r, (adapter_event){.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = user, .text = text}, origin);
}

static void whisper_from(rig *r, const char *user, const char *origin, const char *text)
{
    event_from(r, (adapter_event){.kind = ADAPTER_MESSAGE, .sender = user, .text = text, .is_private = 1}, origin);
}

static void rename_from(rig *r, const char *user, const char *origin, const char *to)
{
    event_from(r, (adapter_event){.kind = ADAPTER_RENAME, .room = ROOM, .sender = user, .renamed_to = to}, origin);
}

/* Messages to user after mark that come from the table privately (cards, turns). */
static int private_from_table(const rig *r, int mark, const char *user)
{
    int k = 0;
    for (int i = mark; i < r->net.n; i++)
        k += !strcmp(r->net.o[i].user, user) && !strncmp(r->net.o[i].text, TABLE_HEAD, strlen(TABLE_HEAD));
    return k;
}

/* alice from HOME at South, carol from her own address at North, two computer players; started. */
static void alice_from_home(rig *r)
{
    say_from(r, "alice", HOME, "!new 304");
    say_from(r, "alice", HOME, "!join");
    say_from(r, "alice", HOME, "!bot");
    say_from(r, "carol", "~carol@far.example", "!join");
    say_from(r, "alice", HOME, "!bot");
    say_from(r, "alice", HOME, "!start");
    settle(r, 1000);
}

Test(core, a_seat_is_bound_to_where_its_player_sat_down)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.conf.leave_grace = 120;
    alice_from_home(&r);
    entries l;
    journal_of(&r, 1, &l);
    cr_assert_geq(entry_find(&l, 0, "join 0 alice " HOME), 0, "the seat's origin is not in the journal");
    entries_free(&l);
    int n = journal_count(&r, 1), mark = r.net.n;

    /* eve, under alice's nick from elsewhere: nothing private, nothing changed */
    whisper_from(&r, "alice", ELSEWHERE, "!hand");
    cr_assert_eq(offers_with(&r, mark, "you are not sitting at a table"), 1);
    say_from(&r, "alice", ELSEWHERE, "!hand");
    cr_assert_eq(offers_with(&r, mark, "alice: you are not the alice who sits at South: that player sat down from another "
                                       "address. Use another nick to play."), 1);
    static const char *const tries[] = {"!pass", "!bid 160", "!leave", "!back", "!join 1", "!start", "!set caps off"};
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) say_from(&r, "alice", ELSEWHERE, tries[i]);
    cr_assert_eq(offers_with(&r, mark, "you are not the alice who sits at South"), 8);
    cr_assert_eq(private_from_table(&r, mark, "alice"), 0, "the impostor got something private from the table");
    int before = r.net.n;
    say_from(&r, "alice", ELSEWHERE, "!table"); /* what the whole room may see */
    cr_assert_eq(r.net.n - before, 1);
    cr_assert_str_eq(r.net.o[before].user, "");
    cr_assert_null(strstr(r.net.o[before].text, "you are not"));
    event_from(&r, (adapter_event){.kind = ADAPTER_LEAVE, .room = ROOM, .sender = "alice"}, ELSEWHERE);
    r.now += 600000;
    tick(&r);
    cr_assert(!is_away(&r, 0), "the impostor's leave made alice away");
    cr_assert_eq(journal_count(&r, 1), n);

    /* alice herself leaves; the impostor joining or speaking does not end her wait */
    event_from(&r, (adapter_event){.kind = ADAPTER_LEAVE, .room = ROOM, .sender = "alice"}, HOME);
    int64_t left = r.now;
    event_from(&r, (adapter_event){.kind = ADAPTER_JOIN, .room = ROOM, .sender = "alice"}, ELSEWHERE);
    say_from(&r, "alice", ELSEWHERE, "hello?");
    r.now = left + 120000;
    tick(&r);
    cr_assert(is_away(&r, 0), "the impostor ended alice's wait");

    /* alice from home comes back and has her hand; after a restart too, the impostor has not */
    mark = r.net.n;
    say_from(&r, "alice", HOME, "!back");
    whisper_from(&r, "alice", HOME, "!hand");
    cr_assert_eq(offers_with(&r, mark, "alice (South) is back."), 1);
    cr_assert_eq(private_from_table(&r, mark, "alice"), 1, "alice did not get her hand");
    core_free(r.core);
    rig_core(&r);
    cr_assert_eq(core_restore(r.core), 1);
    settle(&r, 1000);
    mark = r.net.n;
    whisper_from(&r, "alice", ELSEWHERE, "!hand");
    say_from(&r, "alice", ELSEWHERE, "!hand");
    whisper_from(&r, "alice", HOME, "!hand");
    cr_assert_eq(offers_with(&r, mark, "you are not the alice who sits at South"), 1);
    cr_assert_eq(private_from_table(&r, mark, "alice"), 1, "after a restart: alice's hand once, to her only");
    rig_stop(&r);
}

Test(core, a_seat_follows_its_player_to_a_new_nick)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    alice_from_home(&r);
    int n = journal_count(&r, 1), mark = r.net.n;
    rename_from(&r, "alice", HOME, "alicia");
    rename_from(&r, "alice", HOME, "alicia"); /* the same change seen in another shared channel */
    entries l;
    journal_of(&r, 1, &l);
    cr_assert_eq(l.n, n + 1);
    cr_assert_str_eq(l.e[n], "rename 0 alicia");
    entries_free(&l);
    cr_assert_eq(r.net.n, mark, "a nick change is announced by the network, not by the bot");
    whisper_from(&r, "alicia", HOME, "!hand");
    cr_assert_eq(private_from_table(&r, mark, "alicia"), 1);
    whisper_from(&r, "alice", HOME, "!hand");
    cr_assert_eq(offers_with(&r, mark, "you are not sitting at a table"), 1, "the old nick still has the seat");

    /* what does not rename a seat: another client's change, and a name another seat has */
    rename_from(&r, "alicia", ELSEWHERE, "mallory");
    rename_from(&r, "carol", HOME, "carla");
    rename_from(&r, "alicia", HOME, "carol");
    cr_assert_eq(journal_count(&r, 1), n + 1);

    /* the rename is journaled: after a restart alicia from home still plays South */
    core_free(r.core);
    rig_core(&r);
    cr_assert_eq(core_restore(r.core), 1);
    settle(&r, 1000);
    table t;
    table_of(&r, 1, &t);
    cr_assert_str_eq(t.seat[0].user, "alicia");
    cr_assert_str_eq(t.seat[0].origin, HOME);
    mark = r.net.n;
    say_from(&r, "alicia", ELSEWHERE, "!leave");
    cr_assert_eq(offers_with(&r, mark, "you are not the alicia who sits at South"), 1);
    rig_stop(&r);
}

/* Once a player has left the room anybody may take his nick: the table sends that nick nothing
 * private (his turn, his cards) until he is back. */
Test(core, nothing_private_goes_to_a_player_who_left)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.conf.leave_grace = 600;
    alice_from_home(&r);
    table t;
    for (int guard = 0; guard < 400; guard++) { /* up to carol's turn in the play of a trick */
        table_of(&r, 1, &t);
        cr_assert(!t.over);
        const g304_state *st = st_of(&t);
        if (st->phase == G304_PHASE_PLAY && st->to_act == 2 && st->trick_no < 7) break;
        if (st->to_act == 0) {
            whisper_from(&r, "alice", HOME, "!hand"); /* play_one speaks without an origin */
            play_one(&r, "alice", 0);
        } else {
            play_one(&r, "carol", 2);
        }
        settle(&r, 1000);
    }
    table_of(&r, 1, &t);
    cr_assert(st_of(&t)->phase == G304_PHASE_PLAY && st_of(&t)->to_act == 2);
    event_from(&r, (adapter_event){.kind = ADAPTER_LEAVE, .room = ROOM, .sender = "alice"}, HOME);
    int mark = r.net.n;
    play_one(&r, "carol", 2);
    settle(&r, 1000);
    table_of(&r, 1, &t);
    cr_assert_eq(st_of(&t)->to_act, 0, "alice's turn did not come");
    int told = 0;
    for (int i = mark; i < r.net.n; i++) told += !r.net.o[i].user[0] && !strcmp(r.net.o[i].mention, "alice");
    cr_assert_gt(told, 0, "the room was not told it is alice's turn");
    cr_assert_eq(private_from_table(&r, mark, "alice"), 0, "her turn and hand went to her nick while she was gone");
    event_from(&r, (adapter_event){.kind = ADAPTER_JOIN, .room = ROOM, .sender = "alice"}, HOME);
    whisper_from(&r, "alice", HOME, "!hand");
    cr_assert_eq(private_from_table(&r, mark, "alice"), 1, "back in the room, alice does not get her hand");
    rig_stop(&r);
}

Test(core, moderators_may_abort_any_table)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    say(&r, "alice", "!new 304");
    int mark = r.net.n;
    say(&r, "bob", "!abort");
    cr_assert_eq(offers_with(&r, mark, "bob: only the table's creator or a room moderator may abort it."), 1);
    cr_assert_gt(core_table_of(r.core, NET, ROOM), 0);
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "mod", .text = "!abort", .moderator = 1};
    batch(&r, &e, 1);
    cr_assert_eq(offers_with(&r, mark, "The table is closed."), 1);
    cr_assert_eq(core_table_of(r.core, NET, ROOM), 0);
    rig_stop(&r);
}

/* A user or room name longer than a table can hold is ignored with a warning, not cut short
 * (a cut name would no longer match its seat); the rest of the batch goes through. */
Test(core, names_too_long_for_a_table_are_ignored)
{
    rig r;
    char name[TABLE_USER_MAX + 8];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = 0;
    rig_start(&r, 0, 0, 0, NULL);
    adapter_event e[2] = {{.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = name, .text = "!new 304"},
                          {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "bob", .text = "!new 304"}};
    batch(&r, e, 2);
    cr_assert_eq(r.problems, 1, "one warning for the long name");
    cr_assert(strstr(r.first_problem, "too long"), "%s", r.first_problem);
    cr_assert_eq(core_table_of(r.core, NET, ROOM), 1, "bob's table is the first one");
    cr_assert_eq(offers_with(&r, 0, "is open for 304"), 1);
    r.problems = 0;
    rig_stop(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* (f) What the core says itself: help, notify                                              */
/* ---------------------------------------------------------------------------------------- */

/* Offers to user (NULL: the room) since from containing needle. */
static int offers_to(const rig *r, int from, const char *user, const char *needle)
{
    int k = 0;
    for (int i = from; i < r->net.n; i++)
        k += strcmp(r->net.o[i].user, user ? user : "") == 0 && strstr(r->net.o[i].text, needle) != NULL;
    return k;
}

Test(core, help_in_a_room_is_one_line_and_the_list_a_private_notice)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    int mark = r.net.n;
    say(&r, "alice", "!help");
    cr_assert_eq(r.net.n, mark + 2, "one message in the room, one to alice");
    const offer *room = &r.net.o[mark], *list = &r.net.o[mark + 1];
    cr_assert_str_eq(room->user, "");
    cr_assert_null(strchr(room->text, '\n'), "one line in the room: %s", room->text);
    cr_assert(strstr(room->text, "I sent you the list privately."), "%s", room->text);
    cr_assert_eq(room->notice, 0);
    cr_assert_str_eq(list->user, "alice");
    cr_assert(strstr(list->text, "\n!bid N|pcc \xE2\x80\x94 "), "%s", list->text);
    cr_assert_eq(list->notice, 1, "the list is only for reading (an IRC NOTICE)");
    mark = r.net.n;
    whisper(&r, "alice", "help");
    cr_assert_eq(r.net.n, mark + 1, "asked privately: only the list");
    cr_assert_eq(r.net.o[mark].notice, 1);
    mark = r.net.n;
    say(&r, "alice", "!help bid");
    cr_assert_eq(r.net.n, mark + 1);
    cr_assert_str_eq(r.net.o[mark].user, "", "help on one command answers where it was asked");
    cr_assert_eq(r.net.o[mark].notice, 0);
    rig_stop(&r);
}

/* Plays alice's turns (at least one; the computers' in between) until pred holds for her next
 * turn; returns the index of the first offer of the moves that gave her that turn. */
static int alice_until(rig *r, int (*pred)(const g304_state *st))
{
    for (int guard = 0; guard < 600; guard++) {
        int mark = r->net.n;
        play_one(r, "alice", 0);
        settle(r, 1000);
        table t;
        table_of(r, 1, &t);
        cr_assert(!t.over, "the match ended first");
        if (st_of(&t)->to_act == 0 && pred(st_of(&t))) return mark;
    }
    cr_assert_fail("alice never got that turn");
    return -1;
}

/* alice is to play and every card she may play goes face down (a closed game, a suit she lacks). */
static int must_play_face_down(const g304_state *st)
{
    g304_action legal[G304_MAX_LEGAL];
    if (st->phase != G304_PHASE_PLAY || st->tricks[st->trick_no].n == 0) return 0;
    int n = g304_legal(st, 0, legal);
    for (int i = 0; i < n; i++)
        if (legal[i].kind == G304_DO_PLAY && is_facedown(st, 0, &legal[i])) return 1;
    return 0;
}

static int plays_face_up(const g304_state *st) { return st->phase == G304_PHASE_PLAY && !must_play_face_down(st); }

Test(core, notify_is_the_networks_default_then_the_players_choice)
{
    char *dir = temp_dir("core"), path[512];
    snprintf(path, sizeof path, "%s/notify.db", dir);
    rig r;
    rig_start(&r, 0, 0, 0, path);
    alice_and_computers(&r);
    int mark = alice_until(&r, plays_face_up);
    cr_assert_eq(offers_to(&r, mark, "alice", "Your turn. Your hand: "), 1, "on by default here");
    mark = r.net.n;
    whisper(&r, "alice", "notify off");
    cr_assert_eq(offers_to(&r, mark, "alice", "your turn notices are off"), 1);
    mark = alice_until(&r, plays_face_up);
    cr_assert_eq(offers_to(&r, mark, "alice", "Your turn."), 0, "a turn notice after !notify off");
    cr_assert_gt(offers_to(&r, mark, NULL, "alice (South) to "), 0, "the room still names her");

    /* kept in the store: a restart, and the choice stands */
    core_free(r.core);
    store_close(r.db);
    char err[256];
    cr_assert_eq(store_open(&r.db, path, err, sizeof err), 0, "%s", err);
    rig_core(&r);
    cr_assert_eq(core_restore(r.core), 1);
    mark = r.net.n;
    say(&r, "alice", "!notify");
    cr_assert_eq(offers_to(&r, mark, NULL, "alice: your turn notices are off"), 1);
    say(&r, "alice", "!notify on");
    cr_assert_eq(offers_to(&r, mark, NULL, "alice: your turn notices are on"), 1);

    /* a network whose mention notifies (Matrix): off until the player asks */
    core_free(r.core);
    r.notify_off = 1;
    rig_core(&r);
    cr_assert_eq(core_restore(r.core), 1);
    mark = r.net.n;
    whisper(&r, "bob", "notify");
    cr_assert_eq(offers_to(&r, mark, "bob", "your turn notices are off"), 1, "the network's default");
    whisper(&r, "alice", "notify");
    cr_assert_eq(offers_to(&r, mark, "alice", "your turn notices are on"), 1, "alice's own choice stands");
    rig_stop(&r);
    temp_dir_remove(dir);
}

/* A player who cannot follow in a closed game is told privately to send the card privately
 * (saying it in the room would show it), whether turn notices are on or off. */
Test(core, the_face_down_warning_comes_with_notify_off)
{
    rig r;
    rig_start(&r, 0, 0, 0, NULL);
    r.notify_off = 1; /* as on Matrix */
    core_free(r.core);
    rig_core(&r);
    alice_and_computers(&r);
    int mark = alice_until(&r, must_play_face_down);
    table t;
    table_of(&r, 1, &t);
    const g304_trick *k = &st_of(&t)->tricks[st_of(&t)->trick_no];
    char want[256];
    snprintf(want, sizeof want, "Your turn. You cannot follow %s, so your card goes face down: send !play CARD "
             "privately (in a private message). Your hand: ", suit_symbol(CARD_SUIT(k->card[0])));
    cr_assert_eq(offers_to(&r, mark, "alice", want), 1, "no warning for a face-down card");
    const offer *o = last_offer_with(&r, mark, want);
    cr_assert(strncmp(o->text, "[" ROOM " \xC2\xB7 table 1] ", strlen("[" ROOM " \xC2\xB7 table 1] ")) == 0, "%s",
              o->text);
    rig_stop(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* Durable before visible                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* Whether the core's wake-up descriptor turns readable within ms. */
static int core_woken(rig *r, int ms)
{
    struct pollfd p = {.fd = core_wake_fd(r->core), .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

static int undurable_of(rig *r)
{
    core_stats st;
    core_stats_of(r->core, &st);
    return st.undurable;
}

/* A rig on a database file in a new directory (returned), with no worker threads (the store's
 * syncer is no worker) and the store's syncs under the test's control. */
static char *rig_on_file(rig *r, const char *name)
{
    vfs_syncer_install();
    char *dir = temp_dir("core"), path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    rig_start(r, 0, 0, 0, path);
    return dir;
}

/* A batch of one message (in the room, or private), nothing flushed. */
static void batch_only(rig *r, const char *user, const char *text, int is_private)
{
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = is_private ? NULL : ROOM, .sender = user, .text = text,
                       .is_private = is_private};
    cr_assert_eq(core_batch(r->core, NET, &e, 1, NULL), 0);
}

Test(core, a_message_is_offered_only_once_its_commit_is_durable)
{
    rig r;
    char *dir = rig_on_file(&r, "durable.db");
    vfs_syncer_hold(1);
    batch_only(&r, "alice", "!new 304", 0);
    vfs_syncer_wait_held();
    batch_only(&r, "alice", "!join", 0); /* committed while the first sync runs */
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(core_tick(r.core), 0);
    cr_assert_eq(r.net.n, 0, "a message was offered before its commit was durable");
    cr_assert_eq(undurable_of(&r), 2);
    cr_assert_eq(core_busy(r.core), 2, "the messages waiting for the disk are not counted as work");
    cr_assert_not(core_woken(&r, 0), "a wake-up before the sync is over");

    vfs_syncer_hold(0);
    cr_assert(core_woken(&r, VFS_HUNG_S * 1000), "no wake-up once the sync was over");
    cr_assert_eq(flush_durable(r.core), 2);
    cr_assert_eq(r.net.n, 2);
    cr_assert(strstr(r.net.o[0].text, "Table 1 is open"), "%s", r.net.o[0].text);
    cr_assert(strstr(r.net.o[1].text, "alice (South) sits down"), "%s", r.net.o[1].text);
    cr_assert_eq(core_busy(r.core), 0);
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(r.net.n, 2, "a message was offered twice");
    rig_stop(&r);
    temp_dir_remove(dir);
}

static int rooms_left;

static int count_leave(void *ctx, const char *room)
{
    (void)ctx;
    cr_assert_str_eq(room, ROOM);
    rooms_left++;
    return 0;
}

Test(core, a_room_is_left_only_once_the_closing_is_durable)
{
    rig r;
    char *dir = rig_on_file(&r, "leave.db");
    snprintf(r.conf.admins, sizeof r.conf.admins, "root");
    core_free(r.core);
    rig_core_with(&r, (adapter){.leave = count_leave});
    rooms_left = 0;
    say(&r, "alice", "!new 304");
    vfs_syncer_hold(1);
    batch_only(&r, "root", "admin leave " ROOM, 1);
    vfs_syncer_wait_held();
    cr_assert_eq(core_flush(r.core), 0);
    cr_assert_eq(core_tick(r.core), 0);
    cr_assert_eq(rooms_left, 0, "the room was left before the closing of its table was durable");
    cr_assert_gt(core_busy(r.core), 0);
    vfs_syncer_hold(0);
    cr_assert(core_woken(&r, VFS_HUNG_S * 1000));
    flush_durable(r.core);
    cr_assert_eq(rooms_left, 1);
    cr_assert_eq(core_table_of(r.core, NET, ROOM), 0);
    cr_assert_eq(core_busy(r.core), 0);
    rig_stop(&r);
    temp_dir_remove(dir);
}

Test(core, a_failed_sync_suspends_and_nothing_is_lost_or_sent_twice)
{
    rig r;
    char *dir = rig_on_file(&r, "failing.db");
    say(&r, "alice", "!new 304");
    cr_assert_eq(r.net.n, 1);

    vfs_syncer_fail_next(SQLITE_IOERR_FSYNC);
    batch_only(&r, "alice", "!join", 0);
    cr_assert(core_woken(&r, VFS_HUNG_S * 1000), "no word of the failed sync");
    cr_assert_eq(core_flush(r.core), -1, "a failed sync is a failed write");
    cr_assert(core_suspended(r.core));
    cr_assert_eq(r.net.n, 1, "a message of a commit that is not durable went out");
    cr_assert_eq(r.problems, 1, "the failure is logged once");
    cr_assert(strstr(r.first_problem, "syncing the database's log to the disk"), "%s", r.first_problem);
    r.problems = 0;
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = ROOM, .sender = "bob", .text = "!join"};
    cr_assert_eq(core_batch(r.core, NET, &e, 1, NULL), -1, "a batch taken while suspended");

    r.now += 1000; /* the first pause */
    cr_assert_eq(core_tick(r.core), 0);
    cr_assert_not(core_suspended(r.core));
    cr_assert_eq(r.problems, 1, "the recovery is logged once");
    cr_assert(strstr(r.first_problem, "the store works again"), "%s", r.first_problem);
    r.problems = 0;
    cr_assert_eq(flush_durable(r.core), 1);
    cr_assert_eq(r.net.n, 2);
    cr_assert(strstr(r.net.o[1].text, "alice (South) sits down"), "%s", r.net.o[1].text);
    say(&r, "bob", "!join");
    cr_assert_eq(offers_with(&r, 0, "sits down"), 2, "a seat message lost or sent twice");
    cr_assert(strstr(r.net.o[r.net.n - 1].text, "bob (East) sits down"), "%s", r.net.o[r.net.n - 1].text);
    rig_stop(&r);
    temp_dir_remove(dir);
}

/* The scheduling policy and real-time priority of one of this process's threads (fields 41 and 40
 * of /proc/self/task/TID/stat), and its name. */
static int policy_of(long tid, int *rt_priority, char *name, size_t namelen)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    cr_assert_not_null(fgets(line, sizeof line, f));
    fclose(f);
    const char *open = strchr(line, '('), *p = strrchr(line, ')'); /* the name may hold blanks */
    cr_assert(open && p && p > open);
    snprintf(name, namelen, "%.*s", (int)(p - open - 1), open + 1);
    int field = 2, policy = -1;
    for (p++; *p && field < 40; p++)
        if (*p == ' ') field++;
    cr_assert_eq(sscanf(p, "%d %d", rt_priority, &policy), 2);
    return policy;
}

/* [bot] loop_priority = realtime: the thread that makes the core (the event loop's) runs at
 * real-time priority 2 where the system allows it, or the log says why not; the store's threads
 * (its writer and syncer) at real-time priority 1, the workers at normal priority, even when a
 * thread of real-time priority starts them: here the test's thread takes real-time priority
 * first, where it may, and then opens the store and makes the core. */
Test(core, a_realtime_loop_runs_above_the_stores_threads_and_the_workers_at_normal_priority)
{
    char *dir = temp_dir("core"), *db = NULL;
    cr_assert_gt(asprintf(&db, "%s/priority.db", dir), 0);
    int low = sched_get_priority_min(SCHED_FIFO);
    struct sched_param rt = {.sched_priority = low};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt); /* may be refused: then the core is too */
    rig r;
    rig_start(&r, 0, 0, 0, db);
    core_free(r.core);
    r.conf.threads = 2;
    snprintf(r.conf.loop_priority, sizeof r.conf.loop_priority, "realtime");
    rig_core(&r);
    int policy;
    struct sched_param sp;
    cr_assert_eq(pthread_getschedparam(pthread_self(), &policy, &sp), 0);
    if (policy != SCHED_FIFO) { /* not allowed here: said once, as a warning */
        cr_assert_eq(r.problems, 1);
        cr_assert(strstr(r.first_problem, "refused real-time priority"), "%s", r.first_problem);
        r.problems = 0;
    } else {
        say(&r, "alice", "!new 304"); /* the writer writes it, and the syncer (started by the writer) syncs it */
        settle_store(&r);
        long self = (long)syscall(SYS_gettid);
        int workers = 0, store_threads = 0, prio;
        char name[64];
        DIR *d = opendir("/proc/self/task");
        cr_assert_not_null(d);
        for (struct dirent *e; (e = readdir(d));) {
            long tid = strtol(e->d_name, NULL, 10);
            if (tid <= 0 || tid == self) continue;
            int pol = policy_of(tid, &prio, name, sizeof name);
            if (strcmp(name, "cardroom-worker") == 0) {
                cr_expect_eq(pol, SCHED_OTHER, "a worker runs at real-time priority");
                workers++;
            } else if (strcmp(name, "cardroom-writer") == 0 || strcmp(name, "cardroom-sync") == 0 ||
                       strcmp(name, "cardroom-ckpt") == 0) {
                cr_expect_eq(pol, SCHED_FIFO, "%s at normal priority", name);
                cr_expect_eq(prio, low, "%s at real-time priority %d", name, prio);
                store_threads++;
            } else {
                cr_expect_eq(pol, SCHED_OTHER, "thread %ld (%s) runs at real-time priority too", tid, name);
            }
        }
        closedir(d);
        cr_assert_eq(workers, 2);
        cr_assert_geq(store_threads, 2, "the store's writer and its syncer: %d", store_threads);
        cr_assert_eq(policy_of(self, &prio, name, sizeof name), SCHED_FIFO);
        cr_assert_eq(sp.sched_priority, low + 1, "the loop above the store's threads");
    }
    struct sched_param normal = {0};
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
    rig_stop(&r);
    free(db);
    temp_dir_remove(dir);
}
