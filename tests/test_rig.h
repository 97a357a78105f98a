/* test_rig.h — the bot core on an in-memory adapter and a fake clock, for the tests that drive
 * it through its own API with worker threads or without (test_waits.c, test_abuse.c).
 *
 * The adapter takes every message at once and keeps its text (the store forgets a delivered
 * private message's text: rig_outbox_each gives the outbox with the texts as sent) and records
 * the rooms the core asks it to leave; the log keeps the first problem (warnings and
 * errors, which a test must not see unless it asks for them) and the last info line. Static
 * functions for Criterion tests: include this from the test file that uses them. */
#ifndef CARDROOM_TEST_RIG_H
#define CARDROOM_TEST_RIG_H

#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "config.h"
#include "core.h"
#include "store.h"

#define RIG_NET "mem"
#define RIG_SEED 11
#define RIG_IDLE_GUARD 200000
#define RIG_LEAVES 8

typedef struct {
    cfg conf;
    store *db;
    core *core;
    int64_t now;
    int problems;
    char first_problem[512];
    char last_info[512];
    int nleft;
    char left[RIG_LEAVES][64]; /* rooms the core asked the adapter to leave */
    char **sent;               /* by outbox id: the text the adapter took */
    int64_t csent;
} rig;

static inline int64_t rig_clock(void *ctx) { return *(const int64_t *)ctx; }

static inline void rig_log(void *ctx, core_log_level level, const char *line)
{
    rig *r = ctx;
    if (level == CORE_LOG_INFO) snprintf(r->last_info, sizeof r->last_info, "%s", line);
    if (level > CORE_LOG_WARN) return;
    if (!r->problems++) snprintf(r->first_problem, sizeof r->first_problem, "%s", line);
}

static inline int rig_send(void *ctx, const store_msg *m)
{
    rig *r = ctx;
    if (m->id >= r->csent) {
        int64_t cap = m->id * 2 + 64;
        r->sent = realloc(r->sent, (size_t)cap * sizeof *r->sent);
        cr_assert_not_null(r->sent);
        memset(r->sent + r->csent, 0, (size_t)(cap - r->csent) * sizeof *r->sent);
        r->csent = cap;
    }
    free(r->sent[m->id]);
    r->sent[m->id] = strdup(m->text);
    cr_assert_not_null(r->sent[m->id]);
    return ADAPTER_SENT;
}

typedef struct {
    rig *r;
    int (*fn)(void *ctx, const store_msg *m);
    void *ctx;
} rig_each;

static inline int rig_each_one(void *ctx, const store_msg *m)
{
    rig_each *e = ctx;
    store_msg copy = *m;
    if (m->id < e->r->csent && e->r->sent[m->id]) copy.text = e->r->sent[m->id];
    return e->fn(e->ctx, &copy);
}

/* Every message the core queued, in id order, with the text the adapter took when it was sent. */
static inline void rig_outbox_each(rig *r, int (*fn)(void *ctx, const store_msg *m), void *ctx)
{
    rig_each e = {r, fn, ctx};
    cr_assert_eq(store_outbox_all(r->db, rig_each_one, &e), 0);
}

static inline int rig_leave(void *ctx, const char *room)
{
    rig *r = ctx;
    cr_assert_lt(r->nleft, RIG_LEAVES);
    snprintf(r->left[r->nleft++], sizeof r->left[0], "%s", room);
    return 0;
}

/* A core on the rig's settings and store, its tables restored and the network up. */
static inline void rig_core(rig *r)
{
    char err[256];
    core_options o = {.config = &r->conf, .db = r->db, .now_ms = rig_clock, .clock_ctx = &r->now,
                      .log = rig_log, .log_ctx = r, .fixed_seed = 1, .seed = RIG_SEED};
    r->core = core_new(&o, err, sizeof err);
    cr_assert_not_null(r->core, "%s", err);
    adapter a = {.net = RIG_NET, .ctx = r, .send = rig_send, .private_how = "in a private message",
                 .leave = rig_leave};
    cr_assert_eq(core_add_adapter(r->core, &a), 0);
    cr_assert_geq(core_restore(r->core), 0);
    cr_assert_eq(core_batch(r->core, RIG_NET, NULL, 0, NULL), 0); /* the network is up */
}

/* Defaults with the timers off and threads worker threads, on the store at db; the test may
 * change r->conf before rig_core(). */
static inline void rig_init(rig *r, int threads, const char *db)
{
    char err[256];
    memset(r, 0, sizeof *r);
    cfg_defaults(&r->conf);
    r->conf.threads = threads;
    r->conf.remind_after = r->conf.idle_takeover = r->conf.table_idle_close = 0;
    r->now = 1700000000000;
    cr_assert_eq(store_open(&r->db, db, err, sizeof err), 0, "%s", err);
}

static inline void rig_stop(rig *r)
{
    cr_expect_eq(r->problems, 0, "the core logged %d problem(s), first: %s", r->problems, r->first_problem);
    core_free(r->core);
    store_close(r->db);
    for (int64_t i = 0; i < r->csent; i++) free(r->sent[i]);
    free(r->sent);
}

static inline void rig_batch(rig *r, const adapter_event *e, int n)
{
    cr_assert_eq(core_batch(r->core, RIG_NET, e, n, NULL), 0);
    cr_assert_geq(core_flush(r->core), 0);
}

/* Runs the core until nobody thinks and no table waits. */
static inline void rig_idle(rig *r)
{
    for (int guard = 0; guard < RIG_IDLE_GUARD; guard++) {
        cr_assert_geq(core_tick(r->core), 0);
        cr_assert_geq(core_flush(r->core), 0);
        if (core_busy(r->core) == 0) return;
        struct pollfd p = {.fd = core_wake_fd(r->core), .events = POLLIN};
        if (p.fd >= 0) poll(&p, 1, 1000);
    }
    cr_assert_fail("the core stayed busy");
}

/* What the bot said to room (user "") or privately to user (room ""): how many messages so
 * far, and the last. */
typedef struct {
    const char *room, *user;
    int n;
    char last[4096];
} rig_said;

static inline int rig_hear(void *ctx, const store_msg *m)
{
    rig_said *h = ctx;
    if (strcmp(m->room, h->room) != 0 || strcmp(m->user, h->user) != 0) return 0;
    h->n++;
    snprintf(h->last, sizeof h->last, "%s", m->text);
    return 0;
}

static inline rig_said rig_heard(rig *r, const char *room, const char *user)
{
    rig_said h = {room, user, 0, ""};
    rig_outbox_each(r, rig_hear, &h);
    return h;
}

#endif
