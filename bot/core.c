/* core.c — the bot between adapters, tables and the store (see core.h).
 *
 * Tables live in memory as a flat array of slots; the journal in the store is their truth.
 * Everything that changes a table happens inside a store transaction opened by core_batch()
 * or core_tick(), and what a table says (table_out) is written in that same transaction. If
 * the store fails, the core suspends itself (see "when the store fails" below): memory may then
 * be ahead of the store, so it does nothing until the store takes a write again, and then
 * rebuilds every table from the journal as a restart would. Those transactions do not wait for
 * the disk: what one queued (messages, rooms to leave) goes out only once the store's syncer has
 * made it durable (see "the outbox"), and a failed sync is a failed write. The room
 * search is linear: a bot hosts hundreds of tables, not millions, and a strcmp per table per
 * event costs little beside the transaction around it.
 *
 * No call holds the loop long: a move the Caps judge must search for is judged on a worker
 * while its table holds what comes after it (section "tables that wait for a search"), and a
 * tick applies answers for a bounded time. Before anything else a message is screened: the
 * people the admins ignore and those over their rate limit start nothing (section "people"). */
#include "core.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "game.h"
#include "ratelimit.h"
#include "render.h"
#include "seed.h"
#include "table.h"
#include "workers.h"

#define CORE_MAX_NETS 4
#define FLUSH_CHUNK 256
#define MESSAGE_MAX 8192 /* text bytes one outbox message gathers at most (one Matrix event) */
#define DELIVERED_DELAY_MS 100 /* core_delivered() marks wait at most this long for a transaction */
#define TAKE_CHUNK 64
#define TICK_BUDGET_NS 2000000 /* a tick applies answers for this long (ms 2), then commits: what is
                                  left goes in the next tick, so the loop is never held long */
#define LEADERBOARD_ROWS 10
#define RETRY_FIRST_MS 1000      /* the first pause before a failing store is tried again */
#define RETRY_MAX_MS 60000       /* each failed try doubles the pause, up to this */
#define PRUNE_EVERY_MAX_MS 3600000 /* pruning runs a quarter of keep_finished apart, at most this */
#define PRUNE_TABLES 64          /* finished tables pruned per transaction */
#define BACKLOG_ROOM_MS 3000   /* a room's unsent messages that make its computer players wait */
#define BACKLOG_ROOM_MSGS 3    /* as many: a network may send a room one message at a time */
#define BACKLOG_NET_MS 5000    /* what all the rooms of one network have unsent together */
#define ADMIN_LIST_ROWS 40      /* tables an admin's list shows */
#define TIMER_UNKNOWN INT64_MIN /* slot.timer_at of a table whose timers were never asked */

typedef enum { TASK_EVENT, TASK_SETTLE, TASK_ANSWER } task_kind;

/* Work held at a table that waits for a search (see "Tables that wait for a search"). */
typedef struct {
    task_kind kind;
    int64_t inbox;        /* its row in the store's inbox (EVENT, SETTLE; 0: not stored yet) */
    adapter_event ev;     /* EVENT (its strings are owned while it is held) */
    work_job *job;        /* ANSWER: a computer player's answer */
} task;

typedef struct {
    table t;              /* first: a table's search finds its slot from the table */
    int job_pending;
    int64_t job_seq;
    int dirty;
    int ended;            /* the room's finished table, which answers !review there until a new
                             table opens (see "finished tables") */
    task *tasks;          /* held while the first waits for a search; none: the table is free */
    int ntasks, ctasks;
    table_question *answers; /* searches answered for the first task, in the order it asks */
    int64_t *answer_seq;  /* the table's position when each was asked */
    int nanswers, canswers, cseqs;
    int held_now;         /* events were held in this batch: follow-ups come after them */
    int restoring;        /* the inbox holds work of it from before a restart, not done yet */
    int held;             /* a computer player waits for the backlog (schedule) */
    int64_t timer_at;     /* when its timers are due (ms), TIMER_UNKNOWN for a new table: set after
                             a transaction that changed it, never later than the truth (what changes
                             a table without an entry only delays its timers), so the timer pass
                             skips the tables not yet due */
} slot;

/* What a transaction says to one destination (a room, or one person about one room's table),
 * gathered into one outbox message: its lines in the order they were said. A message only for
 * reading (notice) is not gathered with one that is not. */
typedef struct {
    char net[16], room[TABLE_ROOM_MAX], user[TABLE_USER_MAX], mention[TABLE_USER_MAX];
    int notice;
    char *text;
    size_t len, cap;
} said;

typedef struct {
    char net[16];
    char user[TABLE_USER_MAX];
} ignored_user;

typedef struct {
    char net[16];
    char room[TABLE_ROOM_MAX];
} leaving_room;

/* The undelivered messages of one room and what they take at its network's pace (see the
 * backlog). */
typedef struct {
    int net;                   /* index in core.nets */
    char room[TABLE_ROOM_MAX];
    int n;
    int64_t ms;
} room_backlog;

typedef struct {
    int64_t id;                /* outbox id */
    int64_t ms;
    int room;                  /* index in core.rooms */
} unsent_msg;

/* A commit of the core's whose effects wait until the disk has it (see "the outbox"). */
typedef struct {
    int64_t commit;            /* the store's number for it */
    int64_t first_id;          /* the lowest outbox id it queued or changed (INT64_MAX: none) */
    int msgs;                  /* messages it queued */
    int leaves;                /* rooms it closed tables of, to leave: the next ones of core.unleft */
} undurable;

struct core {
    core_options o;
    adapter nets[CORE_MAX_NETS];
    int nnets;
    uint8_t offered_all[CORE_MAX_NETS]; /* the net's last read of the outbox offered every message it
                                           could and the network took them all: until something new
                                           becomes durable or a delivery is reported, a read would
                                           find nothing to offer, so core_flush() makes none */
    slot **slots;
    int nslots, cslots;
    workers *w;
    caps_solver *judge;
    table_env env;
    const char *env_net;      /* the net whose names the table_env callbacks resolve */
    work_job *held;           /* answers waiting for their thinking pause to pass */
    int nheld, cheld;
    work_job *answered;       /* searches answered, not yet taken by their tables (a tick's budget) */
    int nanswered, canswered;
    store_inbox *restored;    /* the inbox as a restart found it (text malloc'd): done with the first
                                 batch of each row's network */
    int nrestored, crestored;
    int64_t *delivered;       /* reported by core_delivered(), not yet marked in the store */
    int ndelivered, cdelivered;
    int64_t delivered_since;  /* when the oldest of them was reported (ms) */
    int64_t *inflight;        /* outbox ids an adapter took with ADAPTER_QUEUED */
    int ninflight, cinflight;
    int64_t durable_through;   /* the last commit release() learnt is durable */
    said *said;               /* the open transaction's messages, one per destination */
    int nsaid, csaid;
    int64_t next_deadline;
    ratelimit *rl;            /* commands per person */
    ignored_user *ignored;    /* people the admins ignore (the store's list) */
    int nignored, cignored;
    leaving_room *leaving;    /* rooms to leave once the transaction that closed their table commits */
    int nleaving, cleaving;
    leaving_room *unleft;     /* those of commits not yet durable, in commit order */
    int nunleft, cunleft;
    undurable *undurable;     /* the core's commits not yet durable that queued messages or leave rooms */
    int nundurable, cundurable;
    int64_t txn_first_id;     /* the open transaction's lowest outbox id queued or changed (INT64_MAX: none) */
    int txn_msgs;             /* and the messages it queued */
    int64_t shown_below;      /* outbox ids from this one on wait for the disk */
    int wake_fd;              /* epoll: the workers' answers and the store's syncs */
    slot *unit;               /* the slot whose task is being done: its searches may wait */
    int asked;                /* searches that task asked so far */
    int missed;               /* one went to a worker: the task is undone */
    int up[CORE_MAX_NETS];    /* the network has handed the core a batch (see do_restored) */
    int64_t next_prune;       /* when pruning runs next (ms) */
    /* The store failed: nothing is taken until it takes a write again (see fail_store). */
    int suspended;
    int64_t suspended_at, retry_at, retry_pause; /* ms */
    char **told;              /* "net\nroom" of each room told of it, to tell again when it works */
    int ntold, ctold;
    core_stats stats;
    room_backlog *rooms;       /* the backlog: rooms with messages that cost time to send */
    int nrooms, crooms;
    unsent_msg *unsent;        /* those messages, by id */
    int nunsent, cunsent;
    int64_t net_ms[CORE_MAX_NETS];
    int resume_next;           /* the slot backlog_done() looks at first */
};

static void slot_free(slot *s);
static int waits(const slot *s);
static int commit(core *c);
static int release(core *c);
static int asks_review(const core *c, const adapter_event *e);
static slot *slot_ended(core *c, const char *net, const char *room);
static int ended_note(core *c, slot *s);
static int ended_forget(core *c, const char *net, const char *room);
static int revive_for(core *c, const char *net, const adapter_event *e);

/* ---- small helpers ---- */

static void logf_(core *c, core_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(core *c, core_log_level level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    if (!c->o.log) return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    c->o.log(c->o.log_ctx, level, line);
}

static int64_t now_ms(core *c)
{
    if (c->o.now_ms) return c->o.now_ms(c->o.clock_ctx);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A clock for timing the core's own calls (ns): CLOCK_MONOTONIC, or the calling thread's CPU
 * time (CLOCK_THREAD_CPUTIME_ID). */
static int64_t clock_ns(clockid_t which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

typedef struct {
    int64_t wall, cpu;
} call_start;

static call_start call_begin(void) { return (call_start){mono_ns(), clock_ns(CLOCK_THREAD_CPUTIME_ID)}; }

/* Ends the timing of one core_batch() or core_tick() call; passes rc through. */
static int timed(core *c, call_start t0, int rc)
{
    int64_t wall = mono_ns() - t0.wall, cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0.cpu;
    if (wall > c->stats.slowest_ns) c->stats.slowest_ns = wall;
    if (cpu > c->stats.slowest_cpu_ns) c->stats.slowest_cpu_ns = cpu;
    return rc;
}

static void *grow(void *p, int *cap, int need, size_t size)
{
    if (need <= *cap) return p;
    int n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = realloc(p, (size_t)n * size);
    if (!q) abort(); /* out of memory */
    *cap = n;
    return q;
}

static const adapter *net_of(core *c, const char *net)
{
    for (int i = 0; i < c->nnets; i++)
        if (strcmp(c->nets[i].net, net) == 0) return &c->nets[i];
    return NULL;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* ---- the table_env callbacks ---- */

static int env_seed(void *ctx, int64_t table_id, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    core *c = ctx;
    int rc = store_hand_seed(c->o.db, table_id, hand_no, seed);
    if (rc == 0) return 0;
    if (rc < 0) return -1;
    if (c->o.fixed_seed) seed_fixed(c->o.seed, table_id, hand_no, seed);
    else seed_random(seed);
    return store_hand_add(c->o.db, table_id, hand_no, seed);
}

static const char *env_name(void *ctx, const char *room, const char *user, char *buf, size_t len)
{
    core *c = ctx;
    const adapter *a = c->env_net ? net_of(c, c->env_net) : NULL;
    if (a && a->display_name && a->display_name(a->ctx, room, user, buf, len)) return buf;
    snprintf(buf, len, "%s", user);
    return buf;
}

static const char *env_room(void *ctx, const char *room, char *buf, size_t len)
{
    core *c = ctx;
    const adapter *a = c->env_net ? net_of(c, c->env_net) : NULL;
    return a && a->room_name ? a->room_name(a->ctx, room, buf, len) : NULL;
}

/* A table's search: at once with no worker threads, or for a table whose task is not being
 * done (a rebuild, a restore); answered already when the task asked it before (the same
 * question in the same order at the same journal position: the task runs again from the same
 * table); else it goes to a worker and the task is undone (see "Tables that wait"). */
static int env_search(void *ctx, const table *t, table_question *q, table_search fn)
{
    core *c = ctx;
    slot *s = (slot *)t; /* the table is the slot's first member */
    if (c->o.config->threads <= 0 || s != c->unit) {
        fn(q, c->judge);
        return 1;
    }
    int k = c->asked++;
    if (k < s->nanswers && s->answer_seq[k] == t->seq) {
        *q = s->answers[k];
        return 1;
    }
    if (c->missed) return 0;
    c->missed = 1;
    s->nanswers = k; /* answers after this one were to other questions */
    work_job *j = calloc(1, sizeof *j);
    if (!j) abort();
    j->table = t->id;
    j->seq = t->seq;
    j->search = fn;
    j->q = *q;
    if (work_submit(c->w, j) != 0) abort(); /* out of memory: the table could never go on */
    free(j);
    return 0;
}

/* The store's namespace for a network's !notify choices (key: the user). */
static void notify_ns(const char *net, char *buf, size_t len) { snprintf(buf, len, "notify.%s", net); }

/* Whether user on net wants his hand privately on each turn: his !notify choice, else the
 * network's default. Returns 1, 0, or -1 if the store failed. */
static int wants_notice(core *c, const char *net, const char *user)
{
    char ns[32], *v = NULL;
    const adapter *a = net_of(c, net);
    notify_ns(net, ns, sizeof ns);
    int rc = store_kv_get(c->o.db, ns, user, &v);
    if (rc < 0) return -1;
    int on = rc == 0 ? strcmp(v, "on") == 0 : !(a && a->notify_off);
    free(v);
    return on;
}

static int env_notify(void *ctx, const char *user)
{
    core *c = ctx;
    return c->env_net && wants_notice(c, c->env_net, user) != 0; /* a failed read: no notice, never a crash */
}

static const table_env *env_for(core *c, const char *net)
{
    const adapter *a = net_of(c, net);
    c->env_net = net;
    c->env.private_how = a && a->private_how ? a->private_how : "in a private message";
    return &c->env;
}

/* ---- life ---- */

static int collect_ignored(void *ctx, const char *net, const char *user)
{
    core *c = ctx;
    c->ignored = grow(c->ignored, &c->cignored, c->nignored + 1, sizeof *c->ignored);
    ignored_user *u = &c->ignored[c->nignored++];
    snprintf(u->net, sizeof u->net, "%s", net);
    snprintf(u->user, sizeof u->user, "%s", user);
    return 0;
}

/* Adds fd (none if < 0) to the epoll set ep. */
static int watch(int ep, int fd)
{
    struct epoll_event e = {.events = EPOLLIN, .data.fd = fd};
    return fd < 0 ? 0 : epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

/* [bot] loop_priority = realtime: the thread that makes the core (the event loop's) runs at
 * real-time priority (SCHED_FIFO 2), so that no thread of normal priority delays it: not the
 * workers (which may fill every CPU), not other programs. The store's threads run just below it
 * (SCHED_FIFO 1): the loop reads the file while the store's writer writes it, and SQLite's
 * readers wait (sleeping and trying again) for a writer caught in the middle of changing the log;
 * a writer of normal priority could be kept there by the workers for a time slice. The workers
 * stay at normal priority (threads.h). The system may refuse it (a service needs
 * LimitRTPRIO=2): the loop and the store then run at normal priority, and the log says why. */
static void loop_priority(core *c)
{
    if (strcmp(c->o.config->loop_priority, "realtime") != 0) return;
    int low = sched_get_priority_min(SCHED_FIFO);
    struct sched_param p = {.sched_priority = low + 1};
    int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
    if (rc != 0) {
        logf_(c, CORE_LOG_WARN,
              "loop_priority = realtime: the system refused real-time priority (%s); the loop runs at normal "
              "priority (a systemd service needs LimitRTPRIO=2)", strerror(rc));
        return;
    }
    store_set_priority(c->o.db, low);
    logf_(c, CORE_LOG_INFO, "the event loop runs at real-time priority (SCHED_FIFO %d), the store's threads at %d",
          p.sched_priority, low);
}

core *core_new(const core_options *o, char *err, size_t errlen)
{
    core *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->o = *o;
    c->judge = caps_solver_new(0);
    c->w = work_new(o->config->threads);
    c->rl = rl_new();
    c->wake_fd = epoll_create1(EPOLL_CLOEXEC);
    if (!c->judge || !c->w || !c->rl || c->wake_fd < 0 || watch(c->wake_fd, work_wake_fd(c->w)) != 0 ||
        watch(c->wake_fd, store_wake_fd(o->db)) != 0) {
        snprintf(err, errlen, "cannot start the worker threads");
        core_free(c);
        return NULL;
    }
    int64_t through;
    if ((store_durable(o->db, &through) != 0 || through < store_commits(o->db)) && store_sync(o->db) != 0) {
        snprintf(err, errlen, "cannot make the database durable: %s", store_error(o->db));
        core_free(c);
        return NULL;
    }
    if (store_ignored_each(o->db, collect_ignored, c) != 0) {
        snprintf(err, errlen, "cannot read the ignored users: %s", store_error(o->db));
        core_free(c);
        return NULL;
    }
    c->env.judge = c->judge;
    c->env.search = env_search;
    c->env.seed = env_seed;
    c->env.display_name = env_name;
    c->env.room_name = env_room;
    c->env.notify = env_notify;
    c->env.ctx = c;
    c->env.prefix = o->config->prefix;
    c->next_deadline = INT64_MAX;
    c->txn_first_id = c->shown_below = INT64_MAX;
    c->durable_through = store_commits(o->db); /* every one, since the sync above */
    loop_priority(c);
    return c;
}

void core_free(core *c)
{
    if (!c) return;
    if (c->stats.slowest_ns)
        logf_(c, CORE_LOG_INFO,
              "the longest core_batch or core_tick call took %.1f ms (the most CPU time one took: %.1f ms)",
              (double)c->stats.slowest_ns / 1e6, (double)c->stats.slowest_cpu_ns / 1e6);
    work_free(c->w);
    caps_solver_free(c->judge);
    for (int i = 0; i < c->nslots; i++) slot_free(c->slots[i]);
    free(c->slots);
    free(c->held);
    free(c->answered);
    for (int i = 0; i < c->nrestored; i++) free((char *)c->restored[i].text);
    free(c->restored);
    for (int i = 0; i < c->ntold; i++) free(c->told[i]);
    free(c->told);
    if (c->ndelivered && store_begin(c->o.db) == 0) { /* tried even while the store fails: it may work now */
        int rc = 0;
        for (int i = 0; i < c->ndelivered && rc == 0; i++) rc = store_outbox_done(c->o.db, c->delivered[i]);
        if (rc == 0) store_commit(c->o.db);
        else store_rollback(c->o.db);
    }
    free(c->delivered);
    free(c->inflight);
    for (int i = 0; i < c->nsaid; i++) free(c->said[i].text);
    free(c->said);
    rl_free(c->rl);
    free(c->ignored);
    free(c->leaving);
    free(c->unleft);
    free(c->undurable);
    if (c->wake_fd >= 0) close(c->wake_fd);
    free(c->rooms);
    free(c->unsent);
    free(c);
}

/* Marks the messages core_delivered() reported, inside the caller's transaction; the list is
 * emptied once that transaction commits (a failed one leaves them for the next). */
static int write_delivered(core *c)
{
    for (int i = 0; i < c->ndelivered; i++)
        if (store_outbox_done(c->o.db, c->delivered[i]) != 0) return -1;
    return 0;
}

/* Messages that are delivered, for the store to learn with the next transaction. */
static void remember_delivered(core *c, const int64_t *ids, int n)
{
    if (n <= 0) return;
    if (c->ndelivered == 0) c->delivered_since = now_ms(c);
    c->delivered = grow(c->delivered, &c->cdelivered, c->ndelivered + n, sizeof *c->delivered);
    memcpy(c->delivered + c->ndelivered, ids, (size_t)n * sizeof *ids);
    c->ndelivered += n;
}

static int is_delivered(const core *c, int64_t id)
{
    for (int i = 0; i < c->ndelivered; i++)
        if (c->delivered[i] == id) return 1;
    return 0;
}

int core_add_adapter(core *c, const adapter *a)
{
    if (c->nnets == CORE_MAX_NETS || net_of(c, a->net)) return -1;
    c->nets[c->nnets++] = *a;
    return 0;
}

/* ---- slots ---- */

static slot *slot_of_room(core *c, const char *net, const char *room)
{
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (!s->t.over && strcmp(s->t.room, room) == 0 && strcmp(s->t.net, net) == 0) return s;
    }
    return NULL;
}

static slot *slot_of_id(core *c, int64_t id)
{
    for (int i = 0; i < c->nslots; i++)
        if (c->slots[i]->t.id == id) return c->slots[i];
    return NULL;
}

/* The room's finished table, while it is in memory (see "finished tables"), or NULL. */
static slot *slot_ended(core *c, const char *net, const char *room)
{
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (s->ended && strcmp(s->t.room, room) == 0 && strcmp(s->t.net, net) == 0) return s;
    }
    return NULL;
}

/* The table a private message is about: where the sender sits, preferring one where it is his
 * turn, else the most recently created. */
static slot *slot_of_player(core *c, const char *net, const char *user, const char *origin)
{
    slot *best = NULL;
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        int seat = table_seat_of(&s->t, user, origin);
        if (s->t.over || seat < 0 || strcmp(s->t.net, net) != 0) continue;
        if (table_to_act(&s->t) == seat && s->t.started) return s;
        best = s;
    }
    return best;
}

static void task_free(task *w)
{
    free((char *)w->ev.room);
    free((char *)w->ev.sender);
    free((char *)w->ev.text);
    free((char *)w->ev.origin);
    free((char *)w->ev.renamed_to);
    free(w->job);
}

static void slot_free(slot *s)
{
    for (int i = 0; i < s->ntasks; i++) task_free(&s->tasks[i]);
    free(s->tasks);
    free(s->answers);
    free(s->answer_seq);
    free(s);
}

/* The table an event acts on (NULL: none): the room's, or for a private message the one
 * where the sender sits. */
static slot *slot_for_event(core *c, const char *net, const adapter_event *e)
{
    if (e->kind == ADAPTER_MESSAGE && (e->is_private || !e->room)) return slot_of_player(c, net, e->sender, e->origin);
    slot *s = e->room ? slot_of_room(c, net, e->room) : NULL;
    return s || !asks_review(c, e) ? s : slot_ended(c, net, e->room);
}

/* Open tables user opened on net. */
static int tables_opened_by(core *c, const char *net, const char *user)
{
    int n = 0;
    for (int i = 0; i < c->nslots; i++) {
        const table *t = &c->slots[i]->t;
        n += !t->over && strcmp(t->net, net) == 0 && strcmp(t->creator, user) == 0;
    }
    return n;
}

static slot *slot_add(core *c)
{
    slot *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->timer_at = TIMER_UNKNOWN;
    c->slots = grow(c->slots, &c->cslots, c->nslots + 1, sizeof *c->slots);
    c->slots[c->nslots++] = s;
    return s;
}

static void slots_sweep(core *c)
{
    int k = 0;
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (s->t.over && !s->job_pending && !s->ntasks) slot_free(s);
        else c->slots[k++] = s;
    }
    c->nslots = k;
}

/* ---- the backlog: messages written but not yet delivered, at their network's pace ----
 * A message costs what the adapter's pace_ms says when it is written; the cost counts for its
 * room and network until the adapter reports it delivered. Computer players wait while either
 * sum is over its limit, or their room has a few messages waiting (schedule); each delivery
 * lets one waiting table go on, and since every move says something, its move is delivered in
 * turn and wakes the next. Messages that cost nothing (the console) are not kept, so a network
 * without a pace plays exactly as fast as before. */

static int schedule(core *c, slot *s);

static void backlog_add(core *c, const char *net, const store_msg *m)
{
    const adapter *a = net_of(c, net);
    int64_t ms = a && a->pace_ms ? a->pace_ms(a->ctx, m) : 0;
    if (ms <= 0) return;
    int n = (int)(a - c->nets), k = 0;
    while (k < c->nrooms && (c->rooms[k].net != n || strcmp(c->rooms[k].room, m->room) != 0)) k++;
    if (k == c->nrooms) {
        c->rooms = grow(c->rooms, &c->crooms, c->nrooms + 1, sizeof *c->rooms);
        c->rooms[k] = (room_backlog){.net = n};
        snprintf(c->rooms[k].room, sizeof c->rooms[k].room, "%s", m->room);
        c->nrooms++;
    }
    c->rooms[k].n++;
    c->rooms[k].ms += ms;
    c->net_ms[n] += ms;
    c->unsent = grow(c->unsent, &c->cunsent, c->nunsent + 1, sizeof *c->unsent);
    c->unsent[c->nunsent++] = (unsent_msg){m->id, ms, k};
}

/* Message id is delivered: its cost leaves the backlog, and one waiting table goes on (a
 * message out, a move in; the tables in turn). Waking them all at once would let every one of
 * them add its move before the first of those is counted. */
static void backlog_done(core *c, int64_t id)
{
    int lo = 0, hi = c->nunsent; /* ids only grow, so the list is in order */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (c->unsent[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    if (lo == c->nunsent || c->unsent[lo].id != id) return;
    room_backlog *r = &c->rooms[c->unsent[lo].room];
    r->n--;
    r->ms -= c->unsent[lo].ms;
    c->net_ms[r->net] -= c->unsent[lo].ms;
    memmove(&c->unsent[lo], &c->unsent[lo + 1], (size_t)(c->nunsent - lo - 1) * sizeof *c->unsent);
    c->nunsent--;
    for (int k = 0; k < c->nslots; k++) {
        int i = (c->resume_next + k) % c->nslots;
        if (c->slots[i]->held && !waits(c->slots[i]) && schedule(c, c->slots[i])) {
            c->resume_next = i + 1;
            break;
        }
    }
}

/* Whether the room's computer players wait: its backlog, or its network's, is too long. */
static int backlog_full(core *c, const char *net, const char *room)
{
    const adapter *a = net_of(c, net);
    int n = a ? (int)(a - c->nets) : -1;
    if (n < 0 || c->net_ms[n] == 0) return 0;
    if (c->net_ms[n] >= BACKLOG_NET_MS) return 1;
    for (int k = 0; k < c->nrooms; k++)
        if (c->rooms[k].net == n && strcmp(c->rooms[k].room, room) == 0)
            return c->rooms[k].ms >= BACKLOG_ROOM_MS || c->rooms[k].n >= BACKLOG_ROOM_MSGS;
    return 0;
}

/* A message say() or write_said() just wrote. */
static void backlog_written(core *c, const char *net, int64_t id, const char *room, const char *user,
                            const char *mention, const char *text)
{
    c->txn_msgs++;
    if (id < c->txn_first_id) c->txn_first_id = id;
    const adapter *a = net_of(c, net);
    if (!a || !a->pace_ms) return;
    store_msg m = {.id = id, .text = (char *)text}; /* the adapter only reads it */
    snprintf(m.net, sizeof m.net, "%s", net);
    snprintf(m.room, sizeof m.room, "%s", room ? room : "");
    snprintf(m.user, sizeof m.user, "%s", user ? user : "");
    snprintf(m.mention, sizeof m.mention, "%s", mention ? mention : "");
    backlog_add(c, net, &m);
}

static int backlog_restore_one(void *ctx, const store_msg *m)
{
    backlog_add(ctx, m->net, m);
    return 0;
}

/* At the start: the messages a restart left undelivered. */
static int backlog_restore(core *c)
{
    for (int i = 0; i < c->nnets; i++)
        if (c->nets[i].pace_ms && store_outbox_pending(c->o.db, c->nets[i].net, 0, backlog_restore_one, c) != 0)
            return -1;
    return 0;
}

/* ---- writing what happened ----
 * On a network that gains from fewer, longer messages (one that can throttle the bot: on
 * Matrix a homeserver's rate limit counts events), everything a transaction says to one
 * destination goes out as one message: say() gathers the text per destination, in the order it
 * was said, and write_said() queues the messages just before the commit, rooms first. A
 * reader's lines keep their order, but a batch of several commands no longer orders one
 * reader's private lines between the room's (the room hears the second command before the
 * first one's private answer). Elsewhere (IRC, the console) each thing said is queued at once,
 * in the order said. The player a message mentions is the last one mentioned (the one whose
 * turn it is now). A message never grows past MESSAGE_MAX: the text after that starts another
 * one. */

/* notice: a private message only for reading (store_msg). */
static int say(core *c, const char *net, const char *room, const char *user, const char *mention, int notice,
               const char *text)
{
    room = room ? room : "";
    user = user ? user : "";
    const adapter *a = net_of(c, net);
    if (!a || !a->throttled) {
        int64_t id;
        if (store_outbox_add(c->o.db, net, room, user, mention ? mention : "", notice, text, &id) != 0) return -1;
        c->stats.messages++;
        backlog_written(c, net, id, room, user, mention, text);
        return 0;
    }
    size_t n = strlen(text);
    said *m = NULL;
    for (int i = c->nsaid - 1; i >= 0; i--) { /* the destination's latest message, if it has room */
        said *x = &c->said[i];
        if (strcmp(x->net, net) != 0 || strcmp(x->room, room) != 0 || strcmp(x->user, user) != 0) continue;
        if (x->notice == notice && x->len + 1 + n <= MESSAGE_MAX) m = x;
        break;
    }
    if (!m) {
        c->said = grow(c->said, &c->csaid, c->nsaid + 1, sizeof *c->said);
        m = &c->said[c->nsaid++];
        memset(m, 0, sizeof *m);
        snprintf(m->net, sizeof m->net, "%s", net);
        snprintf(m->room, sizeof m->room, "%s", room);
        snprintf(m->user, sizeof m->user, "%s", user);
        m->notice = notice;
    }
    size_t need = m->len + (m->len ? 1 : 0) + n + 1;
    if (need > m->cap) {
        m->cap = need > 2 * m->cap ? need : 2 * m->cap;
        m->text = realloc(m->text, m->cap);
        if (!m->text) abort();
    }
    if (m->len) m->text[m->len++] = '\n';
    memcpy(m->text + m->len, text, n + 1);
    m->len += n;
    if (mention && *mention) snprintf(m->mention, sizeof m->mention, "%s", mention);
    return 0;
}

static void said_clear(core *c)
{
    for (int i = 0; i < c->nsaid; i++) free(c->said[i].text);
    c->nsaid = 0;
}

/* Queues what the transaction said (inside it): what the rooms are told first, then the
 * private messages, which follow from it (a player's cards after the room's new hand). */
static int write_said(core *c)
{
    int rc = 0;
    for (int private = 0; private < 2; private++)
        for (int i = 0; i < c->nsaid && rc == 0; i++) {
            said *m = &c->said[i];
            if ((m->user[0] != 0) != private) continue;
            int64_t id;
            rc = store_outbox_add(c->o.db, m->net, m->room, m->user, m->mention, m->notice, m->text, &id);
            if (rc != 0) break;
            c->stats.messages++;
            backlog_written(c, m->net, id, m->room, m->user, m->mention, m->text);
        }
    said_clear(c);
    return rc;
}

static int write_out(core *c, slot *s, table_out *o)
{
    table *t = &s->t;
    int64_t now = now_ms(c);
    for (int i = 0; i < o->nentries; i++) {
        if (store_journal_add(c->o.db, t->id, o->seqs[i], o->entries[i]) != 0) return -1;
        c->stats.moves++;
    }
    for (int i = 0; i < o->nmsgs; i++)
        if (say(c, t->net, t->room, o->msgs[i].user, o->msgs[i].mention, 0, o->msgs[i].text) != 0) return -1;
    for (int i = 0; i < o->nscores; i++)
        if (store_standing_add(c->o.db, t->net, t->room, &o->scores[i].delta) != 0) return -1;
    if (o->nentries) {
        t->touched = now;
        if (store_table_touch(c->o.db, t->id, now / 1000) != 0) return -1;
    }
    if (o->closed && store_table_close(c->o.db, t->id, o->closed, now / 1000) != 0) return -1;
    if (o->closed && strcmp(o->closed, "finished") == 0 && ended_note(c, s) != 0) return -1;
    if (o->nentries || o->nmsgs) s->dirty = 1;
    return 0;
}

static int write_and_clear(core *c, slot *s, table_out *o)
{
    if (c->missed) { /* undone: it waits for a search */
        table_out_clear(o);
        return 0;
    }
    int rc = write_out(c, s, o);
    table_out_clear(o);
    return rc;
}

/* Follow-ups after a table moved: deals and computer Caps calls, then the turn prompt. */
static int settle(core *c, slot *s)
{
    table_out o = {0};
    const table_env *env = env_for(c, s->t.net);
    table_auto(&s->t, env, &o);
    table_prompt(&s->t, env, &o);
    return write_and_clear(c, s, &o);
}

/* Asks a computer player to move when one is to act, unless the room's messages are still
 * queued too long (then it waits for backlog_done). Returns 1 if it asked. */
static int schedule(core *c, slot *s)
{
    table *t = &s->t;
    int seat = table_computer_to_act(t), asked = 0;
    s->held = 0;
    if (seat < 0 || (s->job_pending && s->job_seq == t->seq)) return 0;
    if (backlog_full(c, t->net, t->room)) {
        s->held = 1;
        return 0;
    }
    work_job *j = calloc(1, sizeof *j);
    if (!j) abort();
    j->table = t->id;
    j->seq = t->seq;
    j->seat = seat;
    j->seed = mix64((uint64_t)t->id * 0x100000001B3ull ^ (uint64_t)t->seq);
    j->not_before = now_ms(c) + c->o.config->bot_delay_ms;
    j->think = table_computer_question(t, seat, &j->q);
    if (work_submit(c->w, j) == 0) {
        s->job_pending++;
        s->job_seq = t->seq;
        asked = 1;
    }
    free(j);
    return asked;
}

/* ---- commands the core answers itself ---- */

typedef struct {
    core *c;
    const char *net, *room, *user;
    int is_private;
} asker;

/* Text for the asker as it is: to the room he asked in, or privately. */
static int tell(const asker *q, const char *text)
{
    if (q->is_private || !q->room) return say(q->c, q->net, "", q->user, NULL, 0, text);
    return say(q->c, q->net, q->room, "", NULL, 0, text);
}

static int answer(const asker *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int answer(const asker *q, const char *fmt, ...)
{
    char text[RENDER_MAX * 2], who[TABLE_USER_MAX], line[RENDER_MAX * 2 + TABLE_USER_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (q->is_private || !q->room) return tell(q, text);
    env_for(q->c, q->net);
    snprintf(line, sizeof line, "%s: %s", env_name(q->c, q->room, q->user, who, sizeof who), text);
    return say(q->c, q->net, q->room, "", NULL, 0, line);
}

static int do_new(core *c, const asker *q, const cmd *m)
{
    if (q->is_private || !q->room) return answer(q, "open a table in a room: send %snew 304 there.", c->o.config->prefix);
    int grid = strcmp(m->arg, "grid") == 0;
    if (strcmp(m->arg, "304") != 0 && !grid)
        return answer(q, "the games are 304 and grid (ContractGrid): %snew 304 or %snew grid.", c->o.config->prefix,
                      c->o.config->prefix);
    slot *s = slot_of_room(c, q->net, q->room);
    if (s) return answer(q, "table %" PRId64 " is already open here: %sjoin it, or %sabort it first.", s->t.id,
                         c->o.config->prefix, c->o.config->prefix);
    int mine = tables_opened_by(c, q->net, q->user), cap = c->o.config->tables_per_user;
    if (cap && mine >= cap && !cfg_is_admin(c->o.config, q->user))
        return answer(q, "you have %d open table%s, the most one person may open: finish or %sabort one first.", mine,
                      mine == 1 ? "" : "s", c->o.config->prefix);
    int64_t id;
    if (store_table_create(c->o.db, q->net, q->room, m->arg, q->user, now_ms(c) / 1000, &id) != 0 ||
        ended_forget(c, q->net, q->room) != 0)
        return -1;
    s = slot_add(c);
    table_init(&s->t, id, q->net, q->room, q->user);
    table_set_game(&s->t, m->arg, c->o.config);
    s->t.touched = now_ms(c);
    const char *p = c->o.config->prefix;
    char line[768], err[256];
    table_out o = {0};
    int six = m->amount == 6; /* !new 304 6: the table's first entry sets the players */
    if (six && table_exec(&s->t, env_for(c, q->net), "set players 6", &o, err, sizeof err) != 0) {
        table_out_clear(&o);
        return answer(q, "%s", err);
    }
    if (grid)
        snprintf(line, sizeof line, "Table %" PRId64 " is open for ContractGrid, three players. %sjoin [1-3] to sit "
                 "down, %sbot [1-3] to add a computer player, %sgrid CONTRACTS...|random to arrange your grid, %sset "
                 "OPTION VALUE to change the rules (%srules), %sstart when three are seated and every grid is set.",
                 id, p, p, p, p, p, p);
    else
        snprintf(line, sizeof line, "Table %" PRId64 " is open for 304. %sjoin [seat] to sit down, %sbot [seat] to "
                 "add a computer player, %sset OPTION VALUE to change the rules (%srules), %sstart when %s are seated.",
                 id, p, p, p, p, p, six ? "six" : "four");
    if (say(c, q->net, q->room, "", NULL, 0, line) != 0) {
        table_out_clear(&o);
        return -1;
    }
    return write_and_clear(c, s, &o);
}

/* help: about one command, where asked; the list, privately (for reading only: an IRC NOTICE),
 * with one line in the room when asked there. */
static int do_help(core *c, const asker *q, const cmd *m)
{
    char text[4096];
    const char *p = c->o.config->prefix;
    if (m->arg[0]) {
        if (!cmd_help(m->arg, p, text, sizeof text))
            return answer(q, "there is no command \"%s\": %shelp lists them all.", m->arg, p);
        return tell(q, text);
    }
    if (!q->is_private && q->room && tell(q, cmd_help_line(p, text, sizeof text)) != 0) return -1;
    return say(c, q->net, "", q->user, NULL, 1, cmd_help(NULL, p, text, sizeof text));
}

/* rules: the table's options (the default 304 table's without one) and where to read more,
 * then how to check a deal. */
static int do_rules(core *c, const asker *q, slot *s)
{
    char text[RENDER_MAX], level[48];
    const char *p = c->o.config->prefix, *url = c->o.config->rules_url;
    snprintf(level, sizeof level, "level=%s, hints=off", c->o.config->level); /* a new table's own options */
    size_t n = s ? table_rules_text(&s->t, p, url, text, sizeof text)
                 : render_rules(&c->o.config->rules, level, p, url, text, sizeof text);
    snprintf(text + n, sizeof text - n, ". Fair dealing: each hand's seed is committed when it is dealt and shown "
             "when it ends; cardroom verify SEED COMMITMENT checks it.");
    return tell(q, text);
}

/* notify [on|off]: whether the player gets his hand privately on each turn, kept per network. */
static int do_notify(core *c, const asker *q, const cmd *m)
{
    char ns[32];
    const char *p = c->o.config->prefix;
    notify_ns(q->net, ns, sizeof ns);
    if (m->arg[0] && store_kv_put(c->o.db, ns, q->user, m->arg) != 0) return -1;
    int on = wants_notice(c, q->net, q->user);
    if (on < 0) return -1;
    if (on)
        return answer(q, "your turn notices are on: I send you your hand privately when it is your turn (%snotify "
                      "off stops them).", p);
    return answer(q, "your turn notices are off: the room's line names you when it is your turn, and I write to "
                  "you privately only when a card must be sent privately (%snotify on for your hand each turn).", p);
}

typedef struct {
    core *c;
    char *buf;
    size_t len, used;
    int rank;
    const char *room;
} board;

static void board_row(board *b, const store_standing *r, int rank)
{
    char who[TABLE_USER_MAX], num[16] = "";
    if (b->used + 1 >= b->len) return;
    env_name(b->c, b->room, r->user, who, sizeof who);
    if (rank) snprintf(num, sizeof num, "%d. ", rank);
    int k = snprintf(b->buf + b->used, b->len - b->used,
                     "\n%s%s — %d match%s, %d won; as trump maker %d made, %d failed; %d hand%s, tokens %+d", num,
                     who, r->matches, r->matches == 1 ? "" : "es", r->matches_won, r->made, r->failed, r->hands,
                     r->hands == 1 ? "" : "s", r->tokens);
    if (k > 0) b->used += (size_t)k;
    if (b->used >= b->len) b->used = b->len - 1;
}

static int board_fn(void *ctx, const store_standing *row)
{
    board *b = ctx;
    board_row(b, row, ++b->rank);
    return 0;
}

static int do_standings(core *c, const asker *q, slot *s, const cmd *m)
{
    char text[RENDER_MAX * 2];
    const char *room = s ? s->t.room : q->room;
    board b = {c, text, sizeof text, 0, 0, room};
    if (!room) return answer(q, "standings belong to a room: ask there, or while you sit at a table.");
    const table_env *env = env_for(c, q->net); /* also the names board_row() reads */
    if (s) b.used = table_match_text(&s->t, env, text, sizeof text);
    else b.used = (size_t)snprintf(text, sizeof text, "No match is running here.");
    if (m->arg[0]) {
        store_standing row;
        const adapter *a = net_of(c, q->net);
        char who[TABLE_USER_MAX];
        const char *u = a && a->resolve_user ? a->resolve_user(a->ctx, room, m->arg, who, sizeof who) : NULL;
        int rc = store_standing_get(c->o.db, q->net, room, u ? u : m->arg, &row);
        if (rc == 1 && !u && m->arg[0] == '@') rc = store_standing_get(c->o.db, q->net, room, m->arg + 1, &row);
        if (rc < 0) return -1;
        if (rc == 1)
            b.used += (size_t)snprintf(text + b.used, sizeof text - b.used, "\n%s has not played here yet.", m->arg);
        else board_row(&b, &row, 0);
    } else {
        b.used += (size_t)snprintf(text + b.used, sizeof text - b.used, "\nLeaderboard:");
        if (store_standings_top(c->o.db, q->net, room, LEADERBOARD_ROWS, board_fn, &b) < 0) return -1;
        if (b.rank == 0 && b.used < sizeof text)
            snprintf(text + b.used, sizeof text - b.used, " nobody has finished a hand here yet.");
    }
    if (!q->is_private) return say(c, q->net, room, "", NULL, 0, text);
    char named[sizeof text + TABLE_ROOM_MAX + 8], name[TABLE_ROOM_MAX];
    const char *shown = env_room(c, room, name, sizeof name); /* a private answer names its room */
    snprintf(named, sizeof named, "[%s] %s", shown ? shown : room, text);
    return say(c, q->net, "", q->user, NULL, 0, named);
}

/* ---- people: the rate limit, the ignored, the admins ----
 *
 * Before anything else a message is screened: one from someone the admins ignore is dropped,
 * and so is a command over its sender's rate limit ([bot] rate_commands per rate_seconds, one
 * person across all rooms of a network), the first one with a polite word. A move counts only
 * when its table refuses it: the game paces the moves it takes. Admins are not limited. */

static void limit_key(const char *net, const char *user, char *key, size_t len)
{
    snprintf(key, len, "%s\x1f%s", net, user);
}

static rl_settings limits(const core *c)
{
    const cfg *k = c->o.config;
    return (rl_settings){k->rate_commands, (int64_t)k->rate_seconds * 1000, (int64_t)k->rate_pause * 1000};
}

static int is_ignored(const core *c, const char *net, const char *user)
{
    for (int i = 0; i < c->nignored; i++)
        if (strcmp(c->ignored[i].user, user) == 0 && strcmp(c->ignored[i].net, net) == 0) return 1;
    return 0;
}

/* "2 minutes", "45 seconds". */
static const char *span_words(int seconds, char *buf, size_t len)
{
    if (seconds % 60 == 0) snprintf(buf, len, "%d minute%s", seconds / 60, seconds == 60 ? "" : "s");
    else snprintf(buf, len, "%d second%s", seconds, seconds == 1 ? "" : "s");
    return buf;
}

/* Counts one command of q's asker. Returns 1 when it is over the limit (dropped: the first time
 * with one word), 0 when it goes on, -1 when the store failed. */
static int charge(core *c, const asker *q)
{
    const cfg *k = c->o.config;
    rl_settings rs = limits(c);
    if (!rs.limit || cfg_is_admin(k, q->user)) return 0;
    char key[16 + TABLE_USER_MAX + 2], span[32];
    limit_key(q->net, q->user, key, sizeof key);
    switch (rl_take(c->rl, key, now_ms(c), &rs)) {
    case RL_OK: return 0;
    case RL_QUIET: return 1;
    case RL_WARN: break;
    }
    span_words(k->rate_pause, span, sizeof span);
    logf_(c, CORE_LOG_INFO, "%s on %s gave more than %d commands in %d s: ignored for %s", q->user, q->net,
          k->rate_commands, k->rate_seconds, span);
    return answer(q, "you are sending me commands faster than I take them, so I will not answer you for the "
                     "next %s.", span) == 0 ? 1 : -1;
}

/* Message e's command, its cards read from the pack of s, the table it goes to (or none). */
static void parse_for(core *c, const slot *s, const adapter_event *e, int is_private, cmd *m)
{
    cmd_parse_pack(e->text, strlen(e->text), c->o.config->prefix, is_private, s ? table_card_pack(&s->t) : CARD_COUNT, m);
}

/* Returns 1 when the message is dropped, 0 when it goes on, -1 when the store failed. Moves are
 * counted later, and only when their table refuses them (handle_message). */
static int screen(core *c, const char *net, const adapter_event *e)
{
    if (is_ignored(c, net, e->sender)) return 1;
    cmd m;
    asker q = {c, net, e->room, e->sender, e->is_private || !e->room};
    parse_for(c, slot_for_event(c, net, e), e, q.is_private, &m);
    if (m.kind == CMD_NONE || cmd_is_move(m.kind)) return 0; /* talk; a move, paced by its game */
    return charge(c, &q);
}

/* Closes table s at once, as an admin asks or when the bot is no longer in its room. The
 * journal gets "abort"; results so far stay in the standings. quiet: the room hears nothing
 * (the bot is not there) and the people seated are told privately, with why. */
static int close_table(core *c, slot *s, int quiet, const char *why)
{
    table_out o = {0};
    char err[256];
    table *t = &s->t;
    if (table_exec(t, env_for(c, t->net), "abort", &o, err, sizeof err) != 0) {
        logf_(c, CORE_LOG_ERROR, "table %" PRId64 " could not be closed: %s", t->id, err);
        table_out_clear(&o);
        return 0;
    }
    int k = 0;
    for (int i = 0; i < o.nmsgs; i++) {
        if (quiet && !o.msgs[i].user[0]) free(o.msgs[i].text);
        else o.msgs[k++] = o.msgs[i];
    }
    o.nmsgs = k;
    if (!quiet && say(c, t->net, t->room, "", NULL, 0, why) != 0) {
        table_out_clear(&o);
        return -1;
    }
    if (write_and_clear(c, s, &o) != 0) return -1;
    for (int i = 0; quiet && i < TABLE_MAX_SEATS; i++) {
        char room[TABLE_ROOM_MAX], text[2 * TABLE_ROOM_MAX + 160];
        if (!t->seat[i].user[0]) continue;
        const char *name = env_room(c, t->room, room, sizeof room);
        snprintf(text, sizeof text, "[%s · table %" PRId64 "] The table is closed: %s Its results stay in the standings.",
                 name ? name : t->room, t->id, why);
        if (say(c, t->net, "", t->seat[i].user, NULL, 1, text) != 0) return -1;
    }
    return 0;
}

/* The bot left a room or was removed from it: its table closes now, not when the idle timer
 * would. */
static int handle_gone(core *c, const char *net, const adapter_event *e)
{
    slot *s = e->room ? slot_of_room(c, net, e->room) : NULL;
    if (!s) return 0;
    logf_(c, CORE_LOG_INFO, "no longer in %s on %s: table %" PRId64 " closes", e->room, net, s->t.id);
    return close_table(c, s, 1, "I am no longer in that room.");
}

/* One open table for an admin's list. */
static void admin_row(core *c, const table *t, char *buf, size_t len, size_t *used, int64_t now)
{
    char room[TABLE_ROOM_MAX], who[1024] = "";
    env_for(c, t->net);
    const char *name = env_room(c, t->room, room, sizeof room);
    size_t w = 0;
    int computers = 0;
    for (int i = 0; i < TABLE_MAX_SEATS; i++) {
        if (t->seat[i].user[0] && w < sizeof who)
            w += (size_t)snprintf(who + w, sizeof who - w, "%s%s", w ? ", " : "", t->seat[i].user);
        computers += t->seat[i].bot && !t->seat[i].user[0];
    }
    if (computers && w < sizeof who)
        snprintf(who + w, sizeof who - w, "%s%d computer%s", w ? ", " : "", computers, computers == 1 ? "" : "s");
    int64_t idle_min = (now - t->touched) / 60000;
    int k = snprintf(buf + *used, len - *used, "\ntable %" PRId64 " · %s %s%s%s%s · %s, %s · %s · last move %" PRId64
                     " min ago", t->id, t->net, t->room, name ? " (" : "", name ? name : "", name ? ")" : "",
                     t->game->title, t->started ? "under way" : "not started", who[0] ? who : "nobody seated",
                     idle_min);
    if (k > 0) *used += (size_t)k;
    if (*used >= len) *used = len - 1;
}

static int admin_list(core *c, const asker *q)
{
    char text[RENDER_MAX * 4];
    size_t used = 0;
    int open = 0, shown = 0;
    int64_t now = now_ms(c);
    for (int i = 0; i < c->nslots; i++) open += !c->slots[i]->t.over;
    used = (size_t)snprintf(text, sizeof text, open ? "Open tables: %d" : "No table is open.", open);
    for (int i = 0; i < c->nslots && shown < ADMIN_LIST_ROWS; i++) {
        if (c->slots[i]->t.over) continue;
        admin_row(c, &c->slots[i]->t, text, sizeof text, &used, now);
        shown++;
    }
    if (shown < open) snprintf(text + used, sizeof text - used, "\n… and %d more.", open - shown);
    return tell(q, text);
}

static slot *open_slot_of_id(core *c, int64_t id)
{
    slot *s = slot_of_id(c, id);
    return s && !s->t.over ? s : NULL;
}

static int admin_close(core *c, const asker *q, const char *arg)
{
    int64_t id = strtoll(arg, NULL, 10);
    slot *s = open_slot_of_id(c, id);
    if (!s) return answer(q, "there is no open table %s: %sadmin list shows them.", arg, c->o.config->prefix);
    char why[128];
    snprintf(why, sizeof why, "A bot admin closes table %" PRId64 "; its results stay in the standings.", id);
    logf_(c, CORE_LOG_INFO, "admin %s on %s closed table %" PRId64 " (%s %s)", q->user, q->net, id, s->t.net, s->t.room);
    if (close_table(c, s, 0, why) != 0) return -1;
    return answer(q, "table %" PRId64 " in %s is closed; its results stay in the standings.", id, s->t.room);
}

static int admin_leave(core *c, const asker *q, const char *room)
{
    const adapter *a = net_of(c, q->net);
    if (!a || !a->leave) return answer(q, "I cannot leave rooms on %s.", q->net);
    if (strlen(room) >= TABLE_ROOM_MAX) return answer(q, "that room name is too long.");
    slot *s = slot_of_room(c, q->net, room);
    char closed[64] = "";
    if (s) {
        if (close_table(c, s, 1, "a bot admin made me leave that room.") != 0) return -1;
        snprintf(closed, sizeof closed, " and closed table %" PRId64, s->t.id);
    }
    c->leaving = grow(c->leaving, &c->cleaving, c->nleaving + 1, sizeof *c->leaving);
    leaving_room *l = &c->leaving[c->nleaving++];
    snprintf(l->net, sizeof l->net, "%s", q->net);
    snprintf(l->room, sizeof l->room, "%s", room);
    logf_(c, CORE_LOG_INFO, "admin %s on %s made the bot leave %s%s", q->user, q->net, room, closed);
    return answer(q, "I leave %s%s.", room, closed);
}

static int admin_ignore(core *c, const asker *q, const char *user, int on)
{
    const cfg *k = c->o.config;
    int rc;
    if (on && cfg_is_admin(k, user)) return answer(q, "%s is one of my admins: I do not ignore admins.", user);
    if (strlen(user) >= TABLE_USER_MAX) return answer(q, "that name is too long.");
    if (on) rc = store_ignore_add(c->o.db, q->net, user, q->user, now_ms(c) / 1000);
    else rc = store_ignore_del(c->o.db, q->net, user);
    if (rc < 0) return -1;
    if (rc == 1) return answer(q, on ? "I already ignore %s." : "I do not ignore %s.", user);
    if (on) {
        collect_ignored(c, q->net, user);
    } else {
        for (int i = 0; i < c->nignored; i++)
            if (strcmp(c->ignored[i].user, user) == 0 && strcmp(c->ignored[i].net, q->net) == 0)
                c->ignored[i--] = c->ignored[--c->nignored];
    }
    logf_(c, CORE_LOG_INFO, "admin %s on %s %s %s", q->user, q->net, on ? "ignores" : "no longer ignores", user);
    return answer(q, on ? "I ignore %s from now on (%sadmin unignore %s undoes it)." : "I listen to %s again.", user,
                  k->prefix, user);
}

/* !admin: privately, by an admin. */
static int do_admin(core *c, const asker *q, const cmd *m)
{
    const cfg *k = c->o.config;
    if (!q->is_private) return answer(q, "%sadmin works only in a private message to me.", k->prefix);
    if (!cfg_is_admin(k, q->user)) {
        logf_(c, CORE_LOG_INFO, "%s on %s is not an admin and was refused %sadmin %s", q->user, q->net, k->prefix,
              m->arg);
        return answer(q, "only the bot's admins may use %sadmin.", k->prefix);
    }
    if (strcmp(m->arg, "list") == 0) return admin_list(c, q);
    if (strcmp(m->arg, "close") == 0) return admin_close(c, q, m->arg2);
    if (strcmp(m->arg, "leave") == 0) return admin_leave(c, q, m->arg2);
    return admin_ignore(c, q, m->arg2, strcmp(m->arg, "ignore") == 0);
}

static int handle_message(core *c, const char *net, const adapter_event *e)
{
    cmd m;
    asker q = {c, net, e->room, e->sender, e->is_private || !e->room};
    slot *s = slot_for_event(c, net, e);
    parse_for(c, s, e, q.is_private, &m);
    if (m.kind == CMD_NONE) return 0;
    switch (m.kind) {
    case CMD_BAD: return answer(&q, "%s", m.err);
    case CMD_NEW: return do_new(c, &q, &m);
    case CMD_HELP: return do_help(c, &q, &m);
    case CMD_RULES: return do_rules(c, &q, s);
    case CMD_NOTIFY: return do_notify(c, &q, &m);
    case CMD_STANDINGS: return do_standings(c, &q, s, &m);
    case CMD_ADMIN: return do_admin(c, &q, &m);
    default: break;
    }
    if (!s) {
        if (m.kind == CMD_PLAY && m.bare) return 0;
        if (!q.is_private && (m.kind == CMD_GRID || m.kind == CMD_EXCLUDE || m.kind == CMD_MARK))
            return answer(&q, "there is no table here: %snew grid opens a ContractGrid table.", c->o.config->prefix);
        if (q.is_private && m.kind == CMD_REVIEW) /* a finished match's review is its room's */
            return answer(&q, "you are not sitting at a table; a finished match's last hand is reviewed in its "
                              "room: say %sreview there.", c->o.config->prefix);
        if (q.is_private) return answer(&q, "you are not sitting at a table: join one in its room first.");
        return answer(&q, "there is no table here: %snew 304 opens one.", c->o.config->prefix);
    }
    table_out o = {0};
    int taken = table_command(&s->t, env_for(c, net), e->sender, e->origin, e->moderator, q.is_private, &m, &o);
    if (!taken && !c->missed && cmd_is_move(m.kind) && !(m.kind == CMD_PLAY && m.bare)) {
        int rc = charge(c, &q); /* a refused move counts, and over the limit its refusal is not said */
        if (rc != 0) {
            table_out_clear(&o);
            return rc < 0 ? -1 : 0;
        }
    }
    return write_and_clear(c, s, &o);
}

/* A player who leaves the room keeps his seat for [timers] leave_grace: coming back or speaking
 * ends the wait (handle_seen), else he then leaves an unstarted table and is away from a
 * running one. The slot is marked so that after_commit() counts the new timer. */
static int handle_leave(core *c, const char *net, const adapter_event *e)
{
    slot *s = e->room ? slot_of_room(c, net, e->room) : NULL;
    if (!s) return 0;
    table_out o = {0};
    int64_t grace = (int64_t)c->o.config->leave_grace * 1000;
    if (table_player_left(&s->t, env_for(c, net), e->sender, e->origin, now_ms(c), grace, &o) >= 0) s->dirty = 1;
    return write_and_clear(c, s, &o);
}

/* Somebody joined a room or spoke (in a room, or privately: then at all his tables): he has not
 * left, whatever left event came before — at table t, if the event concerns it. */
static void seen_at(table *t, const char *net, const adapter_event *e)
{
    if ((e->kind == ADAPTER_MESSAGE || e->kind == ADAPTER_JOIN) && strcmp(t->net, net) == 0 &&
        (e->is_private || !e->room || strcmp(t->room, e->room) == 0))
        table_player_seen(t, e->sender, e->origin);
}

static slot *holder(core *c, const char *net, const adapter_event *e, const slot *except);

/* The event at every table it concerns, except the waiting one that will hold it: there it
 * counts in its turn, after the events held before it (a leave among them), when the table
 * does it (attempt()). */
static void handle_seen(core *c, const char *net, const adapter_event *e)
{
    const slot *h = holder(c, net, e, NULL);
    for (int i = 0; i < c->nslots; i++)
        if (c->slots[i] != h) seen_at(&c->slots[i]->t, net, e);
}

/* A player seen changing his nick (one event per room the bot shares with him): his seats on
 * that network follow him, wherever he sits; the later events of the same change find nothing
 * left to rename. */
static int hold(core *c, slot *s, const char *net, const task *w, int first);

/* A nick change at table s: the sender's seat follows him there (an entry). */
static int rename_at(core *c, slot *s, const char *net, const adapter_event *e)
{
    table_out o = {0};
    table_player_renamed(&s->t, env_for(c, net), e->sender, e->origin, e->renamed_to, &o);
    return write_and_clear(c, s, &o);
}

/* A nick change: at every table of the network; a table that waits for the Caps judge gets it
 * in its turn, after what came before it. */
static int handle_rename(core *c, const char *net, const adapter_event *e)
{
    if (!e->renamed_to || strlen(e->renamed_to) >= TABLE_USER_MAX) return 0;
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (strcmp(s->t.net, net) != 0) continue;
        task w = {.kind = TASK_EVENT, .ev = *e};
        if ((waits(s) ? hold(c, s, net, &w, 0) : rename_at(c, s, net, e)) != 0) return -1;
    }
    return 0;
}

/* ---- when the store fails ----
 * A transaction that fails is rolled back, and the core suspends itself: memory may be ahead
 * of the store (a move applied whose batch did not commit), so until the store takes a write
 * again it takes no batch (the adapter keeps it and offers it again), applies no answer, fires
 * no timer and sends nothing. core_tick() tries the store after a pause that doubles with each
 * failed try; once a probe commits, every table is rebuilt from the store, as a restart would
 * rebuild it. The outbox cannot be written meanwhile, so the rooms of the open tables (and any
 * room a command comes from) are told by the adapter's notice, best effort and once, and told
 * again when the store works; the log says it once too (each failed try only at debug). */

static void notice(core *c, const char *net, const char *room, const char *text)
{
    const adapter *a = net_of(c, net);
    if (a && a->notice && room && *room) a->notice(a->ctx, room, text);
}

/* Tells room of the failure once. */
static void tell_failure(core *c, const char *net, const char *room)
{
    char key[sizeof ((store_msg *)0)->net + TABLE_ROOM_MAX + 2], text[512];
    if (!room || !*room) return;
    snprintf(key, sizeof key, "%s\n%s", net, room);
    for (int i = 0; i < c->ntold; i++)
        if (strcmp(c->told[i], key) == 0) return;
    c->told = grow(c->told, &c->ctold, c->ntold + 1, sizeof *c->told);
    if (!(c->told[c->ntold] = strdup(key))) abort();
    c->ntold++;
    snprintf(text, sizeof text,
             "I cannot write to my database (%s), so I take no commands for now. Nothing played so far is "
             "lost; I keep trying, and say so here when I can go on.",
             store_fault_text(store_fault_of(c->o.db)));
    notice(c, net, room, text);
}

static void tell_recovery(core *c)
{
    for (int i = 0; i < c->ntold; i++) {
        char *room = strchr(c->told[i], '\n');
        *room++ = 0;
        notice(c, c->told[i], room, "My database works again: I take commands again, and answer those sent meanwhile.");
        free(c->told[i]);
    }
    c->ntold = 0;
}

static int do_restored(core *c, const char *net);

static int fail_store(core *c, const char *what)
{
    int64_t now = now_ms(c);
    if (!c->suspended) {
        c->suspended = 1;
        c->suspended_at = now;
        c->retry_pause = c->o.retry_ms > 0 ? c->o.retry_ms : RETRY_FIRST_MS;
        logf_(c, CORE_LOG_ERROR, "store failed during %s: %s; no commands are taken until it works again", what,
              store_error(c->o.db));
        for (int i = 0; i < c->nslots; i++)
            if (!c->slots[i]->t.over) tell_failure(c, c->slots[i]->t.net, c->slots[i]->t.room);
    } else {
        c->retry_pause = c->retry_pause * 2 < RETRY_MAX_MS ? c->retry_pause * 2 : RETRY_MAX_MS;
        logf_(c, CORE_LOG_DEBUG, "store still fails (%s): %s; trying again in %.1f s", what, store_error(c->o.db),
              (double)c->retry_pause / 1000);
    }
    store_rollback(c->o.db);
    said_clear(c);
    c->nleaving = 0; /* the closing of their tables did not commit */
    c->txn_first_id = INT64_MAX;
    c->txn_msgs = 0;
    c->retry_at = now + c->retry_pause;
    return -1;
}

static int restore_tables(core *c);

static int batch(core *c, const char *net, const adapter_event *ev, int n, const char *position);

/* A retry: a probe write, then everything rebuilt from the store as at a start: the tables,
 * what they held for the judge (the inbox), the backlog and the ignored list. Memory of before
 * is dropped: tables that waited, the answers waiting to be applied, and the workers' answers
 * to what the old tables asked (the retry waits until the workers have none left, so no answer
 * to an old question reaches a rebuilt table). What tables held on a network that is up is
 * done at once, in an empty batch; on one that is not, with its first batch as after a start. */
static int recover(core *c)
{
    int64_t now = now_ms(c);
    store_rollback(c->o.db);
    if (store_probe(c->o.db, now / 1000) != 0) return fail_store(c, "a retry");
    release(c); /* the probe's commit made every one before it durable */
    for (int i = 0; i < c->nslots; i++) slot_free(c->slots[i]);
    c->nslots = c->resume_next = 0;
    c->nheld = c->nanswered = 0;
    for (int i = 0; i < c->nrestored; i++) free((char *)c->restored[i].text);
    c->nrestored = c->nignored = 0;
    c->nrooms = c->nunsent = 0; /* the backlog too: it counted messages that did not commit */
    memset(c->offered_all, 0, sizeof c->offered_all);
    memset(c->net_ms, 0, sizeof c->net_ms);
    int n = store_ignored_each(c->o.db, collect_ignored, c) == 0 ? restore_tables(c) : -1;
    if (n < 0) return fail_store(c, "rebuilding the tables");
    for (int i = 0; i < c->ndelivered; i++) backlog_done(c, c->delivered[i]); /* delivered, not yet marked */
    logf_(c, CORE_LOG_WARN, "the store works again after %.1f s; %d open table%s rebuilt from it",
          (double)(now - c->suspended_at) / 1000, n, n == 1 ? "" : "s");
    c->suspended = 0;
    for (int i = 0; i < c->nnets; i++)
        if (c->up[i] && batch(c, c->nets[i].net, NULL, 0, NULL) != 0) return -1;
    tell_recovery(c);
    return 0;
}

/* While suspended: the rooms commands come from are told, and the batch is refused. */
static int refuse_batch(core *c, const char *net, const adapter_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        cmd m;
        const adapter_event *e = &ev[i];
        if (e->kind != ADAPTER_MESSAGE || !e->text || e->is_private || !e->room) continue;
        cmd_parse(e->text, strlen(e->text), c->o.config->prefix, 0, &m);
        if (m.kind != CMD_NONE) tell_failure(c, net, e->room);
    }
    return -1;
}

int core_suspended(core *c) { return c->suspended; }

/* ---- pruning ---- */

/* Drops what finished tables and delivered messages leave behind once keep_finished has
 * passed (store_prune), in a transaction of its own, a quarter of keep_finished apart (at
 * most an hour); at once again while there is more than one transaction's worth. It is no
 * deadline of its own: the adapters' loops call core_tick() at least every second. */
static int prune(core *c, int64_t now)
{
    int64_t keep = (int64_t)c->o.config->keep_finished * 1000;
    if (keep <= 0 || now < c->next_prune) return 0;
    int tables = 0, messages = 0;
    if (store_begin_lazy(c->o.db) != 0 ||
        store_prune(c->o.db, (now - keep) / 1000, (now - keep) / 1000, PRUNE_TABLES, &tables, &messages) != 0 ||
        commit(c) != 0)
        return fail_store(c, "pruning");
    int more = tables == PRUNE_TABLES || messages == PRUNE_TABLES * 64;
    int64_t every = keep / 4 < PRUNE_EVERY_MAX_MS ? keep / 4 : PRUNE_EVERY_MAX_MS;
    c->next_prune = more ? now : now + (every > 1000 ? every : 1000);
    if (tables || messages)
        logf_(c, CORE_LOG_DEBUG, "pruned the journals of %d finished table%s and %d delivered message%s", tables,
              tables == 1 ? "" : "s", messages, messages == 1 ? "" : "s");
    return 0;
}

/* ---- tables that wait for a search ----
 *
 * A move that needs the Caps judge's search (most moves do not) is judged on a worker thread,
 * and the loop goes on with the other tables meanwhile. The task that led to the move — an
 * event, the follow-ups after a batch, a computer player's answer — is undone (the table is a
 * plain struct, put back as it was before the task) and held first in the table's queue; what
 * comes for that table later waits behind it, in order. When the answer comes, the queue is
 * done in order, each task again from the start with the search now answered at once: the
 * same entries, words, scores and verdicts as with the judge on the loop, and the move with
 * its words in one transaction. Held events and follow-ups are rows of the store's inbox too,
 * written in the transaction that holds them and removed in the one that does them, so a crash
 * neither loses nor repeats them: core_restore() does what the inbox holds (searching at
 * once). A computer player's held answer is not stored: after a restart the computer thinks
 * again from the same seed. With no worker threads every search runs at once. */

static const char *const event_words[] = {[ADAPTER_MESSAGE] = "message", [ADAPTER_LEAVE] = "leave",
                                          [ADAPTER_RENAME] = "rename", [ADAPTER_GONE] = "gone"};

/* What an event does; those without a word in event_words do nothing. A nick change held at a
 * table (s) is for that table alone. */
static int handle_event(core *c, slot *s, const char *net, const adapter_event *e)
{
    if (e->kind == ADAPTER_RENAME) return s ? rename_at(c, s, net, e) : 0;
    if (e->kind == ADAPTER_MESSAGE && e->text) return handle_message(c, net, e);
    if (e->kind == ADAPTER_LEAVE) return handle_leave(c, net, e);
    if (e->kind == ADAPTER_GONE) return handle_gone(c, net, e);
    return 0;
}

/* The table an admin's private "!admin close" or "!admin leave" acts on, or NULL. */
static slot *admin_target(core *c, const char *net, const adapter_event *e)
{
    cmd m;
    if (!cfg_is_admin(c->o.config, e->sender)) return NULL;
    cmd_parse(e->text, strlen(e->text), c->o.config->prefix, 1, &m);
    if (m.kind != CMD_ADMIN) return NULL;
    if (strcmp(m.arg, "close") == 0) return open_slot_of_id(c, strtoll(m.arg2, NULL, 10));
    return strcmp(m.arg, "leave") == 0 ? slot_of_room(c, net, m.arg2) : NULL;
}

/* Whether s waits: for a search, or for its held work from before a restart. Nothing else of it
 * moves meanwhile: no timers, no follow-ups, no computer players. */
static int waits(const slot *s) { return s->ntasks || s->restoring; }

/* Whether a nick change to user waits at s: user will sit there once it is done. */
static int renaming_to(const slot *s, const char *user)
{
    for (int i = 0; i < s->ntasks; i++) {
        const adapter_event *e = &s->tasks[i].ev;
        if (s->tasks[i].kind == TASK_EVENT && e->kind == ADAPTER_RENAME && strcmp(e->renamed_to, user) == 0) return 1;
    }
    return 0;
}

/* The table waiting for a search (other than except) that event e must queue behind: the
 * one in its room; for a private message, one where the sender sits (or will, once a nick
 * change it holds is done), or the one an admin's command closes. */
static slot *holder(core *c, const char *net, const adapter_event *e, const slot *except)
{
    int private = e->kind == ADAPTER_MESSAGE && (e->is_private || !e->room), waiting = 0;
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (!s->ntasks || s == except || strcmp(s->t.net, net) != 0) continue;
        waiting = 1;
        if (private ? table_seat_of(&s->t, e->sender, e->origin) >= 0 || renaming_to(s, e->sender)
                    : e->room && strcmp(s->t.room, e->room) == 0)
            return s;
    }
    slot *s = waiting && private ? admin_target(c, net, e) : NULL;
    return s && s->ntasks && s != except ? s : NULL;
}

/* A computer player's answer, as the table takes it (a stale one is dropped; !ok: a legal
 * move). */
static int computer_move(core *c, slot *s, const work_job *j)
{
    table_out o = {0};
    table_computer_move(&s->t, env_for(c, s->t.net), j->seat, j->seq, &j->q, j->ok, &o);
    return write_and_clear(c, s, &o);
}

/* Does task w at s, undoing it when a search it needs goes to a worker. Returns 0 when done,
 * 1 when it waits (the table is as it was before), -1 when the store failed. */
static int attempt(core *c, slot *s, const char *net, const task *w)
{
    table before = s->t;
    c->unit = s;
    c->asked = 0;
    c->missed = 0;
    if (w->kind == TASK_EVENT) seen_at(&s->t, net, &w->ev);
    int rc = w->kind == TASK_EVENT ? handle_event(c, s, net, &w->ev)
             : w->kind == TASK_SETTLE ? settle(c, s)
                                      : computer_move(c, s, w->job);
    c->unit = NULL;
    if (rc != 0 || !c->missed) return rc;
    c->missed = 0;
    s->t = before;
    return 1;
}

static char *dup_or_null(const char *text)
{
    if (!text) return NULL;
    char *d = strdup(text);
    if (!d) abort();
    return d;
}

/* Holds a copy of w at the end of s's queue (first: at its head), storing it in the inbox. */
static int hold(core *c, slot *s, const char *net, const task *w, int first)
{
    task h = *w;
    if (w->kind == TASK_EVENT) { /* what the core reads of an event, kept (the batch's memory goes) */
        h.ev = (adapter_event){.kind = w->ev.kind, .room = dup_or_null(w->ev.room), .sender = dup_or_null(w->ev.sender),
                               .text = dup_or_null(w->ev.text), .is_private = w->ev.is_private,
                               .moderator = w->ev.moderator, .origin = dup_or_null(w->ev.origin),
                               .renamed_to = dup_or_null(w->ev.renamed_to)};
        s->held_now = 1;
    } else if (w->kind == TASK_ANSWER) {
        h.job = malloc(sizeof *h.job);
        if (!h.job) abort();
        *h.job = *w->job;
    }
    if (w->kind != TASK_ANSWER) {
        int rc;
        if (h.inbox) {
            rc = store_inbox_move(c->o.db, h.inbox, s->t.id);
        } else {
            store_inbox row = {.table = s->t.id, .text = h.ev.text, .is_private = h.ev.is_private,
                               .moderator = h.ev.moderator};
            snprintf(row.net, sizeof row.net, "%s", net);
            snprintf(row.what, sizeof row.what, "%s", w->kind == TASK_SETTLE ? "settle" : event_words[h.ev.kind]);
            snprintf(row.room, sizeof row.room, "%s", h.ev.room ? h.ev.room : "");
            snprintf(row.user, sizeof row.user, "%s", h.ev.sender ? h.ev.sender : "");
            snprintf(row.origin, sizeof row.origin, "%s", h.ev.origin ? h.ev.origin : "");
            snprintf(row.renamed_to, sizeof row.renamed_to, "%s", h.ev.renamed_to ? h.ev.renamed_to : "");
            rc = store_inbox_add(c->o.db, &row, &h.inbox);
        }
        if (rc != 0) {
            task_free(&h);
            return -1;
        }
    }
    s->tasks = grow(s->tasks, &s->ctasks, s->ntasks + 1, sizeof *s->tasks);
    int at = first ? 0 : s->ntasks;
    memmove(&s->tasks[at + 1], &s->tasks[at], (size_t)(s->ntasks - at) * sizeof *s->tasks);
    s->tasks[at] = h;
    s->ntasks++;
    return 0;
}

/* Task w for table s: held behind the queue s has, else done now (and held first if it
 * waits). A task from an inbox row keeps the row, which goes when the task is done. */
static int take_task(core *c, slot *s, const char *net, const task *w)
{
    if (s->ntasks) return hold(c, s, net, w, 0);
    int rc = attempt(c, s, net, w);
    if (rc > 0) return hold(c, s, net, w, 1);
    if (rc == 0 && w->inbox) rc = store_inbox_done(c->o.db, w->inbox);
    return rc;
}

/* An event from an adapter: behind a table that waits, or done now. */
static int take_event(core *c, const char *net, const adapter_event *e)
{
    if (e->kind >= (int)(sizeof event_words / sizeof *event_words) || !event_words[e->kind]) return 0;
    if (e->kind == ADAPTER_MESSAGE) {
        int rc = e->text ? screen(c, net, e) : 1;
        if (rc != 0) return rc < 0 ? -1 : 0;
    }
    if (e->kind == ADAPTER_RENAME) return handle_rename(c, net, e);
    slot *s = holder(c, net, e, NULL);
    if (!s && revive_for(c, net, e) != 0) return -1;
    if (!s) s = slot_for_event(c, net, e);
    if (!s) return handle_event(c, NULL, net, e);
    task w = {.kind = TASK_EVENT, .ev = *e};
    return take_task(c, s, net, &w);
}

/* A search answered for s's first task: the queue is done in order until a task waits again. */
static int run_queue(core *c, slot *s)
{
    while (s->ntasks > 0) {
        task w = s->tasks[0];
        memmove(&s->tasks[0], &s->tasks[1], (size_t)(s->ntasks - 1) * sizeof *s->tasks);
        s->ntasks--;
        slot *to = s;
        if (w.kind == TASK_EVENT && w.ev.kind != ADAPTER_RENAME) { /* it may now belong to another table */
            slot *h = holder(c, s->t.net, &w.ev, s);
            to = h ? h : slot_for_event(c, s->t.net, &w.ev);
            if (!to) to = s;
        }
        int rc;
        if (to != s) {
            rc = take_task(c, to, s->t.net, &w);
            task_free(&w);
        } else if ((rc = attempt(c, s, s->t.net, &w)) > 0) {
            s->ntasks++; /* it waits again, still first */
            memmove(&s->tasks[1], &s->tasks[0], (size_t)(s->ntasks - 1) * sizeof *s->tasks);
            s->tasks[0] = w;
            return 0;
        } else {
            if (rc == 0 && w.inbox) rc = store_inbox_done(c->o.db, w.inbox);
            task_free(&w);
            s->nanswers = 0;
        }
        if (rc < 0) return -1;
    }
    free(s->tasks); /* the table is free: nothing of its waiting is kept around */
    free(s->answers);
    free(s->answer_seq);
    s->tasks = NULL;
    s->answers = NULL;
    s->answer_seq = NULL;
    s->ctasks = s->canswers = s->cseqs = 0;
    return 0;
}

/* A search's answer from a worker. */
static int take_search(core *c, const work_job *j)
{
    slot *s = slot_of_id(c, j->table);
    if (!s || !s->ntasks) return 0;
    int k = s->nanswers;
    s->answers = grow(s->answers, &s->canswers, k + 1, sizeof *s->answers);
    s->answer_seq = grow(s->answer_seq, &s->cseqs, k + 1, sizeof *s->answer_seq);
    s->answers[k] = j->q;
    s->answer_seq[k] = j->seq;
    s->nanswers++;
    return run_queue(c, s);
}

/* ---- batches ---- */

/* The follow-ups after a batch or tick, for every table that moved or held events in it. */
static int settle_dirty(core *c)
{
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        int due = s->dirty || s->held_now;
        s->held_now = 0;
        if (!due || s->restoring || s->t.over || (s->ntasks && s->tasks[s->ntasks - 1].kind == TASK_SETTLE))
            continue; /* a closed table has no follow-ups */
        task w = {.kind = TASK_SETTLE};
        if (take_task(c, s, s->t.net, &w) != 0) return -1;
    }
    return 0;
}

/* After a commit: computer players asked to move, turn clocks started, timers rescheduled (a
 * table that waits for a search stays dirty until it is free). The rooms to leave wait for the
 * disk (commit()). */
static void after_commit(core *c)
{
    const cfg *k = c->o.config;
    int64_t now = now_ms(c);
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (waits(s)) continue;
        if (s->dirty || s->timer_at == TIMER_UNKNOWN) {
            if (s->dirty) schedule(c, s);
            s->dirty = 0;
            table_note_turn(&s->t, now);
            s->timer_at = table_next_timer(&s->t, (int64_t)k->remind_after * 1000, (int64_t)k->idle_takeover * 1000,
                                           (int64_t)k->table_idle_close * 1000);
        }
        if (s->timer_at < c->next_deadline) c->next_deadline = s->timer_at; /* a table just free too */
    }
    slots_sweep(c);
}

static int batch(core *c, const char *net, const adapter_event *ev, int n, const char *position)
{
    const adapter *a = net_of(c, net);
    if (a) c->up[a - c->nets] = 1;
    if (c->suspended) return refuse_batch(c, net, ev, n);
    if (store_begin_lazy(c->o.db) != 0) return fail_store(c, "begin");
    if (write_delivered(c) != 0) return fail_store(c, "marking messages sent");
    if (c->nrestored && do_restored(c, net) != 0) return fail_store(c, "held work from before the restart");
    for (int i = 0; i < n; i++) {
        int rc = 0;
        if (!ev[i].sender || strlen(ev[i].sender) >= TABLE_USER_MAX || (ev[i].room && strlen(ev[i].room) >= TABLE_ROOM_MAX) ||
            (ev[i].origin && strlen(ev[i].origin) >= TABLE_ORIGIN_MAX)) {
            logf_(c, CORE_LOG_WARN, "an event with a user, room or origin too long for a table was ignored");
            continue;
        }
        if (ev[i].kind == ADAPTER_MESSAGE || ev[i].kind == ADAPTER_JOIN) handle_seen(c, net, &ev[i]);
        rc = take_event(c, net, &ev[i]);
        if (rc != 0) return fail_store(c, "a batch");
    }
    if (settle_dirty(c) != 0) return fail_store(c, "follow-ups");
    if (write_said(c) != 0) return fail_store(c, "queueing messages");
    if (position && store_position_set(c->o.db, net, position) != 0) return fail_store(c, "position");
    if (commit(c) != 0) return fail_store(c, "commit");
    c->ndelivered = 0; /* write_delivered() put them in this transaction */
    c->stats.batches++;
    after_commit(c);
    return 0;
}

int core_batch(core *c, const char *net, const adapter_event *ev, int n, const char *position)
{
    call_start t0 = call_begin();
    return timed(c, t0, batch(c, net, ev, n, position));
}

/* ---- computer answers and timers ---- */

static int apply_answer(core *c, const work_job *j)
{
    slot *s = slot_of_id(c, j->table);
    if (!s) return 0;
    if (s->job_pending > 0) s->job_pending--;
    s->dirty = 1; /* re-ask if the answer came too late */
    if (s->t.over) return 0;
    task w = {.kind = TASK_ANSWER, .job = (work_job *)j};
    return take_task(c, s, s->t.net, &w);
}

/* The timers of the tables that are due (timer_at), and the next deadline of all. */
static int run_timers(core *c, int64_t now)
{
    const cfg *k = c->o.config;
    int64_t next = INT64_MAX;
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (waits(s)) continue; /* its timers run once it is free */
        if (s->timer_at <= now) {
            table_out o = {0};
            s->timer_at = table_timers(&s->t, env_for(c, s->t.net), now, (int64_t)k->remind_after * 1000,
                                       (int64_t)k->idle_takeover * 1000, (int64_t)k->table_idle_close * 1000, &o);
            if (write_and_clear(c, s, &o) != 0) return -1;
        }
        if (s->timer_at < next) next = s->timer_at;
    }
    c->next_deadline = next;
    return 0;
}

static int tick(core *c)
{
    int64_t now = now_ms(c);
    work_job got[TAKE_CHUNK];
    int durable = release(c);
    if (c->suspended) { /* the answers to what tables about to be rebuilt asked are dropped */
        while (work_take(c->w, got, TAKE_CHUNK) > 0) {}
        return now < c->retry_at || work_pending(c->w) ? 0 : recover(c);
    }
    if (durable != 0) return fail_store(c, "making commits durable");
    if (prune(c, now) != 0) return -1;
    int due = 0;
    for (int i = 0; i < c->nheld; i++) due += c->held[i].not_before <= now;
    int n = due || c->nanswered ? 0 : work_take(c->w, got, TAKE_CHUNK); /* what the last tick left comes first */
    for (int i = 0; i < n; i++) {
        work_job **list = got[i].search ? &c->answered : &c->held;
        int *nlist = got[i].search ? &c->nanswered : &c->nheld, *cap = got[i].search ? &c->canswered : &c->cheld;
        *list = grow(*list, cap, *nlist + 1, sizeof **list);
        (*list)[(*nlist)++] = got[i];
        due += !got[i].search && got[i].not_before <= now;
    }
    int marks = c->ndelivered && now - c->delivered_since >= DELIVERED_DELAY_MS;
    if (!c->nanswered && !due && now < c->next_deadline && !marks) return 0;
    int64_t stop = mono_ns() + TICK_BUDGET_NS;
    if (store_begin_lazy(c->o.db) != 0) return fail_store(c, "begin");
    if (write_delivered(c) != 0) return fail_store(c, "marking messages sent");
    int done = 0, k = 0;
    for (; done < c->nanswered && (done == 0 || mono_ns() < stop); done++)
        if (take_search(c, &c->answered[done]) != 0) return fail_store(c, "a judged move");
    if (done) memmove(c->answered, c->answered + done, (size_t)(c->nanswered - done) * sizeof *c->answered);
    c->nanswered -= done;
    for (int i = 0; i < c->nheld; i++) {
        if (c->held[i].not_before > now || (done > 0 && mono_ns() >= stop)) {
            c->held[k++] = c->held[i];
            continue;
        }
        if (apply_answer(c, &c->held[i]) != 0) return fail_store(c, "a computer move");
        done++;
    }
    c->nheld = k;
    if (run_timers(c, now) != 0) return fail_store(c, "timers");
    for (int i = 0; i < c->nheld; i++)
        if (c->held[i].not_before < c->next_deadline) c->next_deadline = c->held[i].not_before;
    if (settle_dirty(c) != 0) return fail_store(c, "follow-ups");
    if (write_said(c) != 0) return fail_store(c, "queueing messages");
    if (commit(c) != 0) return fail_store(c, "commit");
    c->ndelivered = 0; /* write_delivered() put them in this transaction */
    c->stats.batches++;
    after_commit(c);
    return done;
}

int core_tick(core *c)
{
    call_start t0 = call_begin();
    return timed(c, t0, tick(c));
}

/* ---- the outbox ----
 * Durable before visible. The core's transactions commit without waiting for the disk
 * (store_begin_lazy): a crash of the process cannot undo them, but an OS crash or a power loss
 * can, until the store's syncer has made them durable. So nothing that follows from a commit is
 * seen outside before it is durable: commit() notes, for each commit that queued messages (or
 * merged them, or closed a table whose room the bot leaves), the lowest outbox id it queued or
 * changed; release() learns from the store how far commits are durable (the store's wake-up
 * descriptor, part of core_wake_fd(), turns readable when that moves) and lets them out: their
 * rooms are left, and core_flush() offers messages below the lowest id a commit still waiting
 * holds (shown_below). Syncs are shared: the commits made while one runs wait for the next. A
 * sync that fails is a failed write: the core suspends itself (fail_store), and the probe that
 * ends the pause is a commit that waits for the disk, which makes every commit before it
 * durable. Meanwhile core_busy() counts the messages and rooms that wait. */

/* Commits the open transaction; what it queued waits for the disk. */
static int commit(core *c)
{
    if (store_commit(c->o.db) != 0) return -1;
    int leaves = c->nleaving;
    if (c->txn_msgs || c->txn_first_id != INT64_MAX || leaves) {
        c->undurable = grow(c->undurable, &c->cundurable, c->nundurable + 1, sizeof *c->undurable);
        c->undurable[c->nundurable++] = (undurable){store_commits(c->o.db), c->txn_first_id, c->txn_msgs, leaves};
        if (c->txn_first_id < c->shown_below) c->shown_below = c->txn_first_id;
    }
    if (leaves) {
        c->unleft = grow(c->unleft, &c->cunleft, c->nunleft + leaves, sizeof *c->unleft);
        memcpy(c->unleft + c->nunleft, c->leaving, (size_t)leaves * sizeof *c->leaving);
        c->nunleft += leaves;
    }
    c->nleaving = c->txn_msgs = 0;
    c->txn_first_id = INT64_MAX;
    return 0;
}

/* Lets out what durable commits held back: their rooms are left, their messages may be offered.
 * Returns -1 when a sync failed (what was durable before it is let out). */
static int release(core *c)
{
    int64_t through;
    int rc = store_durable(c->o.db, &through), k = 0, left = 0;
    c->durable_through = through;
    for (; k < c->nundurable && c->undurable[k].commit <= through; k++)
        for (int i = 0; i < c->undurable[k].leaves; i++, left++) {
            const leaving_room *l = &c->unleft[left];
            const adapter *a = net_of(c, l->net);
            if (a && a->leave && a->leave(a->ctx, l->room) != 0)
                logf_(c, CORE_LOG_WARN, "cannot leave %s on %s", l->room, l->net);
        }
    if (k == 0) return rc;
    memset(c->offered_all, 0, sizeof c->offered_all); /* messages may have been let out */
    memmove(c->undurable, c->undurable + k, (size_t)(c->nundurable - k) * sizeof *c->undurable);
    c->nundurable -= k;
    if (left) memmove(c->unleft, c->unleft + left, (size_t)(c->nunleft - left) * sizeof *c->unleft);
    c->nunleft -= left;
    c->shown_below = INT64_MAX;
    for (int i = 0; i < c->nundurable; i++)
        if (c->undurable[i].first_id < c->shown_below) c->shown_below = c->undurable[i].first_id;
    return rc;
}

typedef struct {
    int n, cap;
    store_msg *m;
} msg_list;

static int collect_msg(void *ctx, const store_msg *m)
{
    msg_list *l = ctx;
    l->m = grow(l->m, &l->cap, l->n + 1, sizeof *l->m);
    l->m[l->n] = *m;
    l->m[l->n].text = strdup(m->text);
    l->m[l->n].wire = m->wire ? strdup(m->wire) : NULL;
    if (!l->m[l->n].text || (m->wire && !l->m[l->n].wire)) abort();
    l->n++;
    return 0;
}

static int same_dest(const store_msg *a, const store_msg *b)
{
    return strcmp(a->room, b->room) == 0 && strcmp(a->user, b->user) == 0;
}

static int is_inflight(core *c, int64_t id)
{
    for (int i = 0; i < c->ninflight; i++)
        if (c->inflight[i] == id) return 1;
    return 0;
}

static void msg_list_free(msg_list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->m[i].text);
        free(l->m[i].wire);
    }
    free(l->m);
    memset(l, 0, sizeof *l);
}

/* Merges the run of messages first..last (same destination, never offered) into the first, in
 * the caller's transaction: their lines in order, the last mention. The ids merged away are
 * added to gone. */
static int merge_run(core *c, const msg_list *l, const int *run, int n, int64_t *gone, int *ngone)
{
    size_t len = 0;
    for (int k = 0; k < n; k++) len += strlen(l->m[run[k]].text) + 1;
    char *text = malloc(len), *p = text;
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    if (!text || !ids) abort();
    const char *mention = "";
    for (int k = 0; k < n; k++) {
        const store_msg *m = &l->m[run[k]];
        size_t t = strlen(m->text);
        if (k) *p++ = '\n';
        memcpy(p, m->text, t);
        p += t;
        if (m->mention[0]) mention = m->mention;
        ids[k] = m->id;
    }
    *p = 0;
    int rc = store_outbox_merge(c->o.db, ids[0], text, mention, ids + 1, n - 1);
    if (ids[0] < c->txn_first_id) c->txn_first_id = ids[0]; /* offered once the merge is durable */
    for (int k = 1; rc == 0 && k < n; k++) gone[(*ngone)++] = ids[k];
    free(text);
    free(ids);
    return rc;
}

/* While the network throttles the bot: per destination, the messages waiting behind its first
 * one have never been offered (only a destination's first message is, and one tried has a wire
 * form or is in flight), so runs of them are merged into one message of at most MESSAGE_MAX
 * bytes, in one transaction before the merged message is first offered. A throttled table then
 * falls behind by one message at most, however much it says. The messages merged away leave the
 * backlog (one event goes instead of them). Returns the merges made, or -1. */
static int merge_waiting(core *c, const msg_list *l)
{
    int merges = 0, rc = 0, nrun = 0, ngone = 0;
    char *seen = calloc((size_t)l->n + 1, 1);
    int *run = malloc(((size_t)l->n + 1) * sizeof *run);
    int64_t *gone = malloc(((size_t)l->n + 1) * sizeof *gone);
    if (!seen || !run || !gone) abort();
    for (int i = 0; rc == 0 && i < l->n; i++) {
        if (seen[i] || is_delivered(c, l->m[i].id)) continue;
        size_t len = 0;
        nrun = 0;
        for (int j = i + 1; rc == 0 && j <= l->n; j++) { /* i is its destination's first message */
            const store_msg *m = j < l->n ? &l->m[j] : NULL;  /* NULL: the end */
            if (m && (!same_dest(m, &l->m[i]) || is_delivered(c, m->id))) continue;
            if (m) seen[j] = 1;
            int mergeable = m && !m->wire && !is_inflight(c, m->id);
            size_t t = m ? strlen(m->text) : 0;
            if (nrun > 0 && (!mergeable || len + 1 + t > MESSAGE_MAX)) { /* the run ends */
                if (nrun > 1 && merges++ == 0) rc = store_begin_lazy(c->o.db);
                if (nrun > 1 && rc == 0) rc = merge_run(c, l, run, nrun, gone, &ngone);
                nrun = 0;
            }
            if (mergeable) {
                len = nrun ? len + 1 + t : t;
                run[nrun++] = j;
            }
        }
    }
    if (merges) rc = rc == 0 ? commit(c) : (store_rollback(c->o.db), -1);
    for (int k = 0; rc == 0 && k < ngone; k++) backlog_done(c, gone[k]);
    free(seen);
    free(run);
    free(gone);
    return rc != 0 ? -1 : merges;
}

static int flush_net(core *c, const adapter *a, int *delivered)
{
    uint8_t *all = &c->offered_all[a - c->nets];
    if (*all) return 0;
    msg_list l = {0};
    int rc = store_outbox_pending(c->o.db, a->net, FLUSH_CHUNK, collect_msg, &l);
    if (rc == 0 && a->throttled && a->throttled(a->ctx)) {
        int merges = merge_waiting(c, &l);
        if (merges > 0) {
            logf_(c, CORE_LOG_DEBUG, "%s: %d run(s) of waiting messages merged", a->net, merges);
            msg_list_free(&l);
            rc = store_outbox_pending(c->o.db, a->net, FLUSH_CHUNK, collect_msg, &l);
        }
        if (merges < 0) rc = -1;
    }
    int64_t *done = l.n ? malloc((size_t)l.n * sizeof *done) : NULL;
    int ndone = 0;
    char *blocked = l.n ? calloc((size_t)l.n, 1) : NULL;
    for (int i = 0; rc == 0 && i < l.n; i++) {
        int stop = 0;
        for (int j = 0; j < i && !stop; j++) stop = blocked[j] && same_dest(&l.m[i], &l.m[j]);
        if (l.m[i].id >= c->shown_below) break; /* it waits for the disk, and so do those after it */
        if (is_delivered(c, l.m[i].id)) continue; /* done; the store learns it with the next transaction */
        if (stop || is_inflight(c, l.m[i].id)) {
            blocked[i] = 1;
            continue;
        }
        int r = a->send(a->ctx, &l.m[i]);
        if (r == ADAPTER_SENT) done[ndone++] = l.m[i].id;
        else blocked[i] = 1;
        if (r == ADAPTER_QUEUED) {
            c->inflight = grow(c->inflight, &c->cinflight, c->ninflight + 1, sizeof *c->inflight);
            c->inflight[c->ninflight++] = l.m[i].id;
        }
    }
    if (rc == 0 && ndone) {
        remember_delivered(c, done, ndone); /* if this transaction fails, the next one marks them */
        rc = store_begin_lazy(c->o.db);
        if (rc == 0) rc = write_delivered(c);
        if (rc == 0) rc = commit(c);
        if (rc == 0) c->ndelivered = 0;
    }
    for (int i = 0; i < ndone; i++) backlog_done(c, done[i]);
    *delivered += ndone;
    int more = rc == 0 && l.n == FLUSH_CHUNK && ndone > 0, clear = rc == 0 && l.n < FLUSH_CHUNK;
    for (int i = 0; clear && i < l.n; i++) clear = !blocked[i];
    *all = (uint8_t)clear;
    msg_list_free(&l);
    free(done);
    free(blocked);
    return rc != 0 ? -1 : more;
}

int core_flush(core *c)
{
    int delivered = 0;
    if (c->suspended) return 0;
    if (release(c) != 0) return fail_store(c, "making commits durable");
    for (int i = 0; i < c->nnets; i++) {
        int more;
        do {
            more = flush_net(c, &c->nets[i], &delivered);
            if (more < 0) return fail_store(c, "sending");
        } while (more);
    }
    return delivered;
}

int core_sent_many(core *c, const int64_t *ids, int n)
{
    if (n <= 0) return 0;
    memset(c->offered_all, 0, sizeof c->offered_all);
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < c->ninflight; i++)
            if (c->inflight[i] == ids[k]) c->inflight[i] = c->inflight[--c->ninflight];
        backlog_done(c, ids[k]);
    }
    remember_delivered(c, ids, n);
    if (c->suspended) return 0; /* marked once the store works again */
    if (store_begin_lazy(c->o.db) != 0 || write_delivered(c) != 0 || commit(c) != 0)
        return fail_store(c, "marking messages sent");
    c->ndelivered = 0;
    return 0;
}

int core_sent(core *c, int64_t id) { return core_sent_many(c, &id, 1); }

int core_delivered(core *c, int64_t id)
{
    memset(c->offered_all, 0, sizeof c->offered_all);
    for (int i = 0; i < c->ninflight; i++)
        if (c->inflight[i] == id) c->inflight[i] = c->inflight[--c->ninflight];
    remember_delivered(c, &id, 1);
    backlog_done(c, id);
    return 0;
}

/* ---- finished tables ----
 * When a match is played to its end the table closes, but the room may still want the last
 * hand reviewed (!review): until a new table opens in that room, a !review there goes to the
 * finished table. The store's kv row "ended.NET" for the room names it ("ID GAME"), written
 * in the transaction that closes the table and removed in the one that opens the next, so a
 * restart changes nothing. The table is kept in memory only while it is needed: one that is
 * not there (swept after its last transaction, or from before a restart) is rebuilt from its
 * journal when a !review asks for it, and goes again once nothing of it is held. It is closed
 * all the same: it counts against no cap, has no timers, is listed nowhere and blocks no !new;
 * it takes no command but !review, and its game takes no entry but "review". Once pruning has
 * dropped its journal (keep_finished) there is nothing to review, and the row goes. */

static int restore_one(core *c, const store_table *row);

static void ended_ns(const char *net, char *buf, size_t len) { snprintf(buf, len, "ended.%s", net); }

/* Whether e is a !review in a room (which a room's finished table still answers). */
static int asks_review(const core *c, const adapter_event *e)
{
    cmd m;
    if (e->kind != ADAPTER_MESSAGE || !e->text || e->is_private || !e->room) return 0;
    cmd_parse(e->text, strlen(e->text), c->o.config->prefix, 0, &m);
    return m.kind == CMD_REVIEW;
}

/* Table s has just finished its match: it is its room's finished table. */
static int ended_note(core *c, slot *s)
{
    char ns[32], value[64];
    ended_ns(s->t.net, ns, sizeof ns);
    snprintf(value, sizeof value, "%" PRId64 " %s", s->t.id, s->t.game->name);
    s->ended = 1;
    return store_kv_put(c->o.db, ns, s->t.room, value);
}

/* A new table opens in the room: its finished table, if any, is no longer asked. */
static int ended_forget(core *c, const char *net, const char *room)
{
    char ns[32];
    slot *s = slot_ended(c, net, room);
    if (s) s->ended = 0; /* swept once nothing of it is held */
    ended_ns(net, ns, sizeof ns);
    return store_kv_del(c->o.db, ns, room);
}

/* Before e finds its table: for a !review in a room without an open table, the room's finished
 * table is brought back from its journal if it is not in memory. Returns 0 (with or without
 * one), or -1 if the store failed. */
static int revive_for(core *c, const char *net, const adapter_event *e)
{
    char ns[32], *value = NULL;
    if (!asks_review(c, e) || slot_of_room(c, net, e->room) || slot_ended(c, net, e->room)) return 0;
    ended_ns(net, ns, sizeof ns);
    int rc = store_kv_get(c->o.db, ns, e->room, &value);
    if (rc != 0) return rc < 0 ? -1 : 0;
    store_table row = {0};
    int named = sscanf(value, "%" SCNd64 " %15s", &row.id, row.game) == 2;
    free(value);
    snprintf(row.net, sizeof row.net, "%s", net);
    snprintf(row.room, sizeof row.room, "%s", e->room);
    if (named && restore_one(c, &row) != 0) return -1;
    slot *s = named ? c->slots[c->nslots - 1] : NULL;
    if (s && s->t.finished) {
        s->ended = 1;
        return 0;
    }
    if (s) s->t.over = 1; /* its journal is gone: nothing is left to review */
    return store_kv_del(c->o.db, ns, e->room);
}

/* ---- restoring ---- */

typedef struct {
    int n, cap;
    store_table *rows;
} table_list;

static int collect_table(void *ctx, const store_table *t)
{
    table_list *l = ctx;
    l->rows = grow(l->rows, &l->cap, l->n + 1, sizeof *l->rows);
    l->rows[l->n++] = *t;
    return 0;
}

typedef struct {
    int n, cap;
    char **entries;
} entry_list;

static int collect_entry(void *ctx, int64_t seq, const char *entry)
{
    entry_list *l = ctx;
    (void)seq;
    l->entries = grow(l->entries, &l->cap, l->n + 1, sizeof *l->entries);
    l->entries[l->n] = strdup(entry);
    if (!l->entries[l->n]) abort();
    l->n++;
    return 0;
}

static int restore_one(core *c, const store_table *row)
{
    entry_list l = {0};
    char err[256];
    int rc = store_journal_each(c->o.db, row->id, collect_entry, &l);
    slot *s = rc == 0 ? slot_add(c) : NULL;
    if (s) table_init(&s->t, row->id, row->net, row->room, row->creator);
    int bad = 0;
    if (s && table_set_game(&s->t, row->game, c->o.config) != 0) {
        snprintf(err, sizeof err, "the game \"%s\" is unknown", row->game);
        bad = 1;
    } else if (s) {
        bad = table_replay(&s->t, env_for(c, row->net), l.entries, l.n, err, sizeof err);
    }
    if (bad) {
        logf_(c, CORE_LOG_ERROR, "table %" PRId64 " cannot be rebuilt at journal entry %d: %s; it stays closed",
              row->id, bad, err);
        s->t.over = 1;
    }
    if (s) {
        s->t.touched = now_ms(c);
        s->t.prompted = s->t.seq;
        s->dirty = 1;
    }
    for (int i = 0; i < l.n; i++) free(l.entries[i]);
    free(l.entries);
    return rc;
}

static int collect_inbox(void *ctx, const store_inbox *row)
{
    core *c = ctx;
    c->restored = grow(c->restored, &c->crestored, c->nrestored + 1, sizeof *c->restored);
    c->restored[c->nrestored] = *row;
    c->restored[c->nrestored++].text = dup_or_null(row->text);
    slot *s = slot_of_id(c, row->table);
    if (s) s->restoring = 1; /* it waits as it did: nothing of it moves before its rows are done */
    return 0;
}

/* One held row done as it would have been done had the bot not stopped (a search runs at once). */
static int restore_task(core *c, const store_inbox *row)
{
    slot *s = slot_of_id(c, row->table);
    if (strcmp(row->what, "settle") == 0) return s ? settle(c, s) : 0;
    adapter_event e = {.room = row->room[0] ? row->room : NULL, .sender = row->user, .text = row->text,
                       .is_private = row->is_private, .moderator = row->moderator, .origin = row->origin,
                       .renamed_to = row->renamed_to};
    for (size_t k = 0; k < sizeof event_words / sizeof *event_words; k++)
        if (event_words[k] && strcmp(row->what, event_words[k]) == 0) {
            e.kind = (adapter_event_kind)k;
            return revive_for(c, row->net, &e) != 0 ? -1 : handle_event(c, s, row->net, &e);
        }
    logf_(c, CORE_LOG_WARN, "held work \"%s\" for table %" PRId64 " is unknown and was dropped", row->what, row->table);
    return 0;
}

/* The first batch from net after a restart or a store failure: what net's tables held for the
 * judge then is done first, in order, now that the network is up (its names are known again).
 * A row that fails is left in the inbox, for the rebuild that follows the failure. */
static int do_restored(core *c, const char *net)
{
    int k = 0, done = 0, rc = 0;
    for (int i = 0; i < c->nrestored; i++) {
        store_inbox *row = &c->restored[i];
        if (rc != 0 || strcmp(row->net, net) != 0) {
            c->restored[k++] = *row;
            continue;
        }
        rc = restore_task(c, row);
        if (rc == 0) rc = store_inbox_done(c->o.db, row->id);
        slot *s = slot_of_id(c, row->table);
        if (s && rc == 0) s->restoring = 0, s->dirty = 1;
        free((char *)row->text);
        done += rc == 0;
    }
    c->nrestored = k;
    if (done) logf_(c, CORE_LOG_INFO, "did the %d held event%s and follow-up%s the inbox kept on %s", done,
                    done == 1 ? "" : "s", done == 1 ? "" : "s", net);
    return rc;
}

/* Every open table rebuilt from its journal, and what they held for the judge read from the
 * inbox (the core has no table yet). Returns how many, or -1. */
static int restore_tables(core *c)
{
    table_list l = {0};
    int rc = backlog_restore(c);
    if (rc == 0) rc = store_tables_open(c->o.db, collect_table, &l);
    for (int i = 0; rc == 0 && i < l.n; i++) rc = restore_one(c, &l.rows[i]);
    free(l.rows);
    if (rc == 0) rc = store_inbox_each(c->o.db, collect_inbox, c);
    if (rc != 0) return -1;
    caps_solver *fresh = c->o.config->threads > 0 ? caps_solver_new(0) : NULL;
    if (fresh) { /* the rebuild's searches are done: the workers search from now on, so the work
                    space the rebuild touched goes back (a fresh one costs nothing until used) */
        caps_solver_free(c->judge);
        c->judge = c->env.judge = fresh;
    }
    after_commit(c);
    return c->nslots;
}

int core_restore(core *c)
{
    if (restore_tables(c) < 0) {
        logf_(c, CORE_LOG_ERROR, "cannot read the tables: %s", store_error(c->o.db));
        return -1;
    }
    logf_(c, CORE_LOG_INFO, "%d open table%s restored", c->nslots, c->nslots == 1 ? "" : "s");
    return c->nslots;
}

/* ---- small queries ---- */

/* Messages and rooms to leave that wait for the disk. */
static int undurable_count(const core *c)
{
    int n = c->nunleft;
    for (int i = 0; i < c->nundurable; i++) n += c->undurable[i].msgs;
    return n;
}

int core_busy(core *c) { return work_pending(c->w) + c->nheld + c->nanswered + undurable_count(c); }

int core_all_durable(core *c) { return c->durable_through >= store_commits(c->o.db); }

int core_wake_fd(core *c) { return c->wake_fd; }

int64_t core_next_deadline(core *c)
{
    int64_t next = c->nanswered ? now_ms(c) : c->next_deadline;
    for (int i = 0; i < c->nheld; i++)
        if (c->held[i].not_before < next) next = c->held[i].not_before;
    if (c->ndelivered && c->delivered_since + DELIVERED_DELAY_MS < next) next = c->delivered_since + DELIVERED_DELAY_MS;
    if (c->suspended) return work_pending(c->w) ? INT64_MAX : c->retry_at; /* the workers' answers wake it */
    return next;
}

void core_stats_of(core *c, core_stats *s)
{
    *s = c->stats;
    s->tables = c->nslots;
    s->undurable = undurable_count(c);
}

int64_t core_table_of(core *c, const char *net, const char *room)
{
    slot *s = slot_of_room(c, net, room);
    return s ? s->t.id : 0;
}
