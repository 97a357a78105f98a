/* core.h — the bot: rooms and their tables, chat commands, computer players, timers, and the
 * durable store between the adapters and the games.
 *
 * Adapters hand the core batches of events (core_batch) with their new position; the core
 * handles each batch in ONE store transaction: journal entries, outgoing messages, standings
 * and the position land together or not at all, so a crash neither loses nor repeats a move or
 * a message. Computer players think on worker threads; their answers come back through
 * core_tick(), which also runs the timers. core_flush() offers queued messages to the adapters
 * in order, each once the store has made the transaction that queued it durable: the core's
 * transactions do not wait for the disk (the store syncs in the background), and nothing that
 * follows from one is seen outside before it is on the disk, so an OS crash or a power loss can
 * only undo what nobody saw. At start core_restore() rebuilds every open table from its journal.
 *
 * When the store fails (a full disk, a read-only file, another process's lock, an I/O error)
 * the core suspends itself: it takes no batch, applies no answer and sends nothing, tells the
 * rooms of its open tables through the adapters' notice() once, and tries the store again
 * after a pause that doubles (core_tick). When a write commits again it rebuilds every table
 * from the store, as a restart would, says so in those rooms, and takes batches again: the
 * adapters keep what was refused and offer it again. Nothing is lost that a batch's commit
 * acknowledged, and no message goes out whose batch did not commit. Every few minutes
 * core_tick() also prunes what finished tables leave behind ([bot] keep_finished). */
#ifndef CARDROOM_CORE_H
#define CARDROOM_CORE_H

#include <stdint.h>

#include "adapter.h"
#include "config.h"
#include "store.h"

typedef struct core core;

typedef enum { CORE_LOG_ERROR = 0, CORE_LOG_WARN, CORE_LOG_INFO, CORE_LOG_DEBUG } core_log_level;

typedef struct {
    const cfg *config;
    store *db;
    /* The clock in milliseconds (NULL: the real monotonic-enough wall clock). Tests pass a
     * fake one to drive the timers. */
    int64_t (*now_ms)(void *ctx);
    void *clock_ctx;
    /* Log lines (never secrets). NULL: nothing is logged. */
    void (*log)(void *ctx, core_log_level level, const char *line);
    void *log_ctx;
    /* Deals from `--seed N` (reproducible) when fixed_seed is set; else from the OS. */
    int fixed_seed;
    uint64_t seed;
    /* The first pause (ms) before a failing store is tried again; each failed try doubles it,
     * up to a minute. 0: one second. Tests make it short. */
    int64_t retry_ms;
} core_options;

/* Returns NULL with a message in err on failure. The options are copied; config and db must
 * outlive the core. */
core *core_new(const core_options *o, char *err, size_t errlen);
void core_free(core *c);

/* Registers an adapter (the struct is copied; its strings and ctx must outlive the core). */
int core_add_adapter(core *c, const adapter *a);

/* Rebuilds every open table from its journal and queues computer players' moves. What tables
 * held for the Caps judge when the bot stopped (the store's inbox) is done, in order and
 * searching at once, with the first core_batch() from their network: an adapter calls it with
 * no events as soon as its network is up and people's names are known, so those tables wait
 * until then. Returns the number of tables, or -1. */
int core_restore(core *c);

/* Handles a batch of events from adapter net in one transaction (n may be 0: see
 * core_restore()), storing position (may be NULL: unchanged) with it. Returns 0, or -1 when
 * the batch was not taken: the store failed now or earlier and the core is suspended. The
 * batch then left no trace; the adapter keeps it and offers it again, after the batches it
 * kept before it, once core_suspended() is 0. */
int core_batch(core *c, const char *net, const adapter_event *ev, int n, const char *position);

/* Applies the Caps judge's answers (the moves that waited for them, and what their tables held
 * meanwhile) and computer players' answers, for a bounded time (what is left waits for the
 * next call, due at once), and fires due timers (one transaction); while suspended, applies
 * nothing and tries the store again when the pause is over. Returns the number of answers
 * applied, or -1 if the store failed (the core is suspended; not a reason to stop). */
int core_tick(core *c);

/* Offers queued messages to the adapters, in order per destination (nothing while suspended).
 * Returns the number delivered, or -1 if the store failed (the core is suspended). */
int core_flush(core *c);

/* Nonzero while the store fails and the core takes no batch. */
int core_suspended(core *c);

/* An adapter reports that a message it took with ADAPTER_QUEUED is delivered. */
int core_sent(core *c, int64_t id);
/* The same for n messages in one transaction (one disk sync instead of n). */
int core_sent_many(core *c, const int64_t *ids, int n);
/* The same, but the store learns it with the next transaction the core makes anyway (a batch,
 * a tick, a flush), at the latest DELIVERED_DELAY_MS = 100 ms later from core_tick(), so many
 * deliveries share one disk sync. The message is never offered again; only a crash within that
 * time sends it once more with the same id, which a network deduplicating by transaction id
 * (Matrix) ignores. */
int core_delivered(core *c, int64_t id);

/* Computer moves and Caps judge searches still being thought about or applied (while tables
 * wait for the judge, this is never 0), and messages queued and rooms to leave that wait for
 * the disk. */
int core_busy(core *c);
/* Whether every commit is known to be durable (as of the last core_tick() or core_flush()).
 * The store writes commits behind the loop and may still fail on one that queued nothing: a
 * program that stops once its work is done waits for this too, so that a failure is met, and
 * mended, while it still runs. */
int core_all_durable(core *c);

/* A descriptor that turns readable when computer players or the judge have answered, or the
 * store has made commits durable (what they queued can go out: call core_tick() and
 * core_flush()), and the time (ms, the core's clock) at which core_tick() next has work to do: a
 * timer to fire, answers a tick left over, or the store to try again (INT64_MAX: none). */
int core_wake_fd(core *c);
int64_t core_next_deadline(core *c);

/* Counters for benchmarks and tests. */
typedef struct {
    int64_t moves;        /* journal entries written */
    int64_t messages;     /* messages queued */
    int64_t batches;      /* transactions committed */
    int64_t slowest_ns;   /* the longest core_batch() or core_tick() call (wall clock): the
                             longest the adapter's loop was kept from its network */
    int64_t slowest_cpu_ns; /* the most CPU time one such call took (the wall clock adds disk
                               syncs and time the thread was not running) */
    int tables;           /* open tables in memory */
    int undurable;        /* messages queued, and rooms to leave, that wait until the disk has their
                             commit (they count in core_busy() too) */
} core_stats;
void core_stats_of(core *c, core_stats *s);

/* The open table of a room (tests): its id, or 0. */
int64_t core_table_of(core *c, const char *net, const char *room);

#endif
