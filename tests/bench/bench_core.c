/* bench_core.c — the whole core under load: many tables of computer players at once, on a
 * durable SQLite file, through an in-memory adapter.
 *
 * A program, not a test. For each worker-thread setting (2, then 0) it opens a store FILE in a
 * temporary directory (WAL, as store_open sets it: the core's commits do not wait for the disk,
 * the store's syncer makes them durable behind them, several with one sync), starts a core with an
 * adapter whose send() only counts, opens TABLES tables (rooms r0..r999: `!new 304`, four
 * `!bot`, `!start`, ten rooms per core_batch), then runs the loop an adapter would run —
 * core_tick() + core_flush(), waiting on core_wake_fd() when idle — until TARGET accepted
 * moves (core_stats.moves, i.e. journal entries), every match over, or the time limit.
 * While it runs, single-event batches (`!table` from a passer-by to a random room) are timed
 * one by one: that is the time from an event in to its messages queued, under load.
 *
 * Prints: moves (journal entries) per second and transactions per second; the syncs the
 * store's syncer made for them; the cost of one durable commit on this disk (a calibration: an
 * empty-ish transaction, fsync included);
 * memory per table (VmRSS growth from before the tables to after every table has played a
 * hand or so, over TABLES) next to sizeof(table); p50/p99 of core_batch for one event;
 * core_tick time per answer applied (mean, and p50/p99 over ticks); how the loop's wall time
 * splits between core_tick, core_flush and waiting. Targets are printed next to the figures.
 *
 * Also: the share of the loop thread's wall time it spent on a CPU (the rest is fsync and
 * waiting), and, after the 2-thread run, how long a restart takes: a new core's core_restore()
 * rebuilding every open table from its journal. Each setting runs in a process of its own.
 *
 * The longest stall: the longest single core_batch() or core_tick() call of the run (wall
 * clock, and the loop thread's CPU time in it, which leaves out fsync), since while one runs
 * the adapter reads and sends nothing for any table. For the longest by wall clock it also
 * prints the loop thread's context switches in it (getrusage RUSAGE_THREAD): voluntary ones are
 * waits (a lock, a write the kernel held), involuntary ones are the scheduler giving the CPU to
 * another thread (a worker, the store's syncer) while the loop could have run. It counts the
 * calls over the target as well, of all it timed. The opening batches are timed apart (setup:
 * ten tables, sixty events in each).
 *
 * Usage: bench_core [tables] [moves] [seconds per run] [threads]   (default 1000 200000 20, and
 * both settings, 2 threads then 0; a last argument runs only that number of threads)
 * With BENCH_STORE=memory in the environment the store is a database in memory: the same work
 * without the disk, to tell the disk's share of the loop's stalls from the rest. With
 * BENCH_LOOP_PRIORITY=realtime the loop runs as with [bot] loop_priority = realtime (where the
 * system allows it: the header says which). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core.h"
#include "table.h"

#define ROOMS_PER_BATCH 10
#define PROBES 2000
#define TARGET_MOVES_PER_S 5000.0
#define TARGET_BYTES_PER_TABLE (16.0 * 1024)
#define MOVES_BEFORE_RSS 100 /* per table: about three hands each */
#define TARGET_STALL_MS 5.0

typedef struct {
    int64_t sent;
} sink;

static int sink_send(void *ctx, const store_msg *m)
{
    sink *k = ctx;
    (void)m;
    k->sent++;
    return ADAPTER_SENT;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CPU time of the calling thread (the event loop's), ns. */
static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* VmRSS of this process in bytes (0 if unknown). */
static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n), sorting v. */
static int64_t quantile(int64_t *v, int n, double q)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i];
}

/* The longest call so far: wall clock and the loop thread's CPU time (ns). */
typedef struct {
    int64_t wall, cpu;
    long vol, invol; /* the longest call's context switches: waits it made, preemptions it met */
    long calls, over; /* calls timed, and those over the target by wall clock */
} stall;

/* Context switches of the calling thread so far: voluntary in *vol, involuntary returned. */
static long switches(long *vol)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    *vol = ru.ru_nvcsw;
    return ru.ru_nivcsw;
}

static long call_vol, call_invol; /* at the start of the call being timed */

/* Marks the start of a call stall_note() will judge. */
static void stall_start(void) { call_invol = switches(&call_vol); }

static void stall_note(stall *s, int64_t wall, int64_t cpu)
{
    long vol, invol = switches(&vol);
    s->calls++;
    s->over += wall > TARGET_STALL_MS * 1e6;
    if (wall > s->wall) {
        s->wall = wall;
        s->vol = vol - call_vol;
        s->invol = invol - call_invol;
    }
    if (cpu > s->cpu) s->cpu = cpu;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_core: %s: %s\n", what, why);
    exit(1);
}

/* Removes the store file and its companions. */
static void unlink_db(const char *path)
{
    char p[700];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

/* What one durable commit costs here: 200 transactions of one outbox row each. */
static double commit_ms(const char *dir)
{
    char path[600], err[256];
    snprintf(path, sizeof path, "%s/calibrate.db", dir);
    store *s;
    if (store_open(&s, path, err, sizeof err) != 0) die(path, err);
    int64_t t0 = now_ns(), id;
    for (int i = 0; i < 200; i++) {
        if (store_begin(s) != 0 || store_outbox_add(s, "bench", "r0", "", "", 0, "calibration", &id) != 0 ||
            store_commit(s) != 0)
            die("calibration", store_error(s));
    }
    double ms = (now_ns() - t0) / 1e6 / 200;
    store_close(s);
    unlink_db(path);
    return ms;
}

typedef struct {
    int tables;
    int64_t target;
    double seconds;
} plan;

static void run(const char *dir, const plan *p, int threads, int restore)
{
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/bench-%d.db", dir, threads);
    unlink_db(path);
    cfg config;
    cfg_defaults(&config);
    config.threads = threads;
    config.rate_commands = config.tables_per_user = 0; /* one host opens every table, as fast as it can */
    const char *prio = getenv("BENCH_LOOP_PRIORITY");
    if (prio && strcmp(prio, "realtime") == 0) strcpy(config.loop_priority, "realtime");
    store *db;
    const char *kind = getenv("BENCH_STORE");
    int in_memory = kind && strcmp(kind, "memory") == 0;
    if (store_open(&db, in_memory ? ":memory:" : path, err, sizeof err) != 0) die(path, err);
    core_options o = {.config = &config, .db = db, .fixed_seed = 1, .seed = 304};
    core *c = core_new(&o, err, sizeof err);
    if (!c) die("core_new", err);
    sink k = {0};
    adapter a = {.net = "bench", .ctx = &k, .send = sink_send, .private_how = "privately"};
    if (core_add_adapter(c, &a) != 0) die("core_add_adapter", "refused");

    int policy;
    struct sched_param sp;
    pthread_getschedparam(pthread_self(), &policy, &sp);
    printf("\n== %d worker thread%s, %d tables, store %s, loop at %s priority ==\n", threads, threads == 1 ? "" : "s",
           p->tables, in_memory ? "in memory (BENCH_STORE=memory)" : path,
           policy == SCHED_FIFO ? "real-time (BENCH_LOOP_PRIORITY=realtime)" : "normal");
    long rss0 = rss_bytes();
    int64_t sql0 = sqlite3_memory_used(), sql1 = 0;

    /* Open the tables, ROOMS_PER_BATCH rooms per batch. */
    static const char *const words[6] = {"!new 304", "!bot", "!bot", "!bot", "!bot", "!start"};
    adapter_event ev[ROOMS_PER_BATCH * 6];
    char rooms[ROOMS_PER_BATCH][16];
    int64_t t_open = now_ns();
    stall opening = {0}, loop = {0};
    for (int r0 = 0; r0 < p->tables; r0 += ROOMS_PER_BATCH) {
        int n = 0;
        for (int r = r0; r < r0 + ROOMS_PER_BATCH && r < p->tables; r++) {
            snprintf(rooms[r - r0], sizeof rooms[0], "r%d", r);
            for (int w = 0; w < 6; w++)
                ev[n++] = (adapter_event){.kind = ADAPTER_MESSAGE, .room = rooms[r - r0], .sender = "host",
                                          .text = words[w]};
        }
        stall_start();
        int64_t b0 = now_ns(), c0 = thread_cpu_ns();
        if (core_batch(c, "bench", ev, n, NULL) != 0) die("core_batch", "store failed");
        stall_note(&opening, now_ns() - b0, thread_cpu_ns() - c0);
    }
    double open_s = (now_ns() - t_open) / 1e9;
    core_stats st0;
    core_stats_of(c, &st0);
    printf("opened %d tables in %.2f s (%d batches of %d events): %" PRId64 " journal entries, %" PRId64
           " messages queued\n", st0.tables, open_s, (p->tables + ROOMS_PER_BATCH - 1) / ROOMS_PER_BATCH,
           ROOMS_PER_BATCH * 6, st0.moves, st0.messages);

    /* The loop. */
    int64_t *probe = malloc(PROBES * sizeof *probe), *tick_per = malloc(sizeof *tick_per * 1000000);
    if (!probe || !tick_per) die("malloc", "out of memory");
    int nprobe = 0, nticks = 0;
    int64_t tick_ns = 0, flush_ns = 0, wait_ns = 0, probe_ns = 0, answers = 0, flush_calls = 0, delivered = 0;
    long rss1 = 0;
    core_stats at_rss = {0};
    uint64_t rng = 42;
    int64_t t0 = now_ns(), deadline = t0 + (int64_t)(p->seconds * 1e9), cpu0 = thread_cpu_ns();
    core_stats s;
    for (;;) {
        core_stats_of(c, &s);
        int64_t now = now_ns();
        if (s.moves - st0.moves >= p->target || now >= deadline) break;
        if (!rss1 && s.moves - st0.moves >= (int64_t)MOVES_BEFORE_RSS * p->tables) {
            rss1 = rss_bytes();
            sql1 = sqlite3_memory_used();
            at_rss = s;
        }
        /* Keep the probes in step with the run: by now, PROBES times the share of the run
         * that is done (by moves or by time, whichever is further). */
        double share = (double)(s.moves - st0.moves) / (double)p->target;
        if ((double)(now - t0) / 1e9 / p->seconds > share) share = (double)(now - t0) / 1e9 / p->seconds;
        while (nprobe < PROBES && nprobe < (int)(share * PROBES) + 1 && s.tables > 0) {
            char room[16];
            snprintf(room, sizeof room, "r%d", (int)(mix(&rng) % (uint64_t)p->tables));
            adapter_event e = {.kind = ADAPTER_MESSAGE, .room = room, .sender = "passerby", .text = "!table"};
            stall_start();
            int64_t b0 = now_ns(), c0 = thread_cpu_ns();
            if (core_batch(c, "bench", &e, 1, NULL) != 0) die("core_batch", "store failed");
            probe[nprobe++] = now_ns() - b0;
            probe_ns += probe[nprobe - 1];
            stall_note(&loop, probe[nprobe - 1], thread_cpu_ns() - c0);
        }
        stall_start();
        int64_t a0 = now_ns(), c0 = thread_cpu_ns();
        int n = core_tick(c);
        int64_t a1 = now_ns();
        stall_note(&loop, a1 - a0, thread_cpu_ns() - c0);
        int f = core_flush(c);
        int64_t a2 = now_ns();
        if (n < 0 || f < 0) die("core_tick/core_flush", "store failed");
        tick_ns += a1 - a0;
        flush_ns += a2 - a1;
        flush_calls += f > 0;
        delivered += f;
        if (n > 0) {
            answers += n;
            if (nticks < 1000000) tick_per[nticks++] = (a1 - a0) / n;
        }
        if (n == 0 && f == 0) {
            if (s.tables == 0 && core_busy(c) == 0) break; /* every match is over */
            struct pollfd pf = {.fd = core_wake_fd(c), .events = POLLIN};
            int64_t w0 = now_ns();
            if (pf.fd >= 0) poll(&pf, 1, 10);
            wait_ns += now_ns() - w0;
        }
    }
    double secs = (now_ns() - t0) / 1e9, cpu = (thread_cpu_ns() - cpu0) / 1e9;
    core_stats_of(c, &s);
    if (!rss1) {
        rss1 = rss_bytes();
        sql1 = sqlite3_memory_used();
        at_rss = s;
    }
    int64_t moves = s.moves - st0.moves, batches = s.batches - st0.batches;
    double mps = moves / secs;

    printf("played %.1f s: %" PRId64 " moves (journal entries), %" PRId64 " messages queued, %" PRId64
           " delivered, %d tables still open\n", secs, moves, s.messages - st0.messages, k.sent, s.tables);
    printf("  moves/s (journal entries/s)      %10.0f   target >= %.0f  %s\n", mps, TARGET_MOVES_PER_S,
           mps >= TARGET_MOVES_PER_S ? "MET" : "NOT MET");
    printf("  transactions/s (core_stats)      %10.0f   (core_batch + core_tick commits; %.1f moves each)\n",
           batches / secs, batches ? (double)moves / batches : 0.0);
    printf("  + outbox-sent commits/s (approx) %10.0f   (core_flush calls that delivered: %" PRId64 ")\n",
           flush_calls / secs, flush_calls);
    printf("  messages queued/s                %10.0f\n", (s.messages - st0.messages) / secs);
    printf("  syncs of the store's syncer      %10ld   (%" PRId64 " commits in all, %.1f per sync)\n", store_syncs(db),
           store_commits(db), store_syncs(db) ? (double)store_commits(db) / (double)store_syncs(db) : 0.0);
    int most_queued;
    long waits = store_writer_waits(db, &most_queued);
    printf("  loop waits for the store's writer %9ld   (reads and writes done at once, which wait for it); at most %d "
           "transactions waited for the writer\n", waits, most_queued);
    long grow = rss1 - rss0;
    double per = (double)grow / p->tables;
    printf("  memory per table                 %10.0f B  (VmRSS %+ld KiB after %" PRId64 " moves, %d tables open)"
           "   target <= %.0f B  %s\n", per, grow / 1024, at_rss.moves, at_rss.tables, TARGET_BYTES_PER_TABLE,
           per <= TARGET_BYTES_PER_TABLE ? "MET" : "NOT MET");
    printf("  sizeof(table)                    %10zu B  (the core keeps one per open table, plus 3 ints); of the "
           "growth, SQLite's own heap (page cache) is %+" PRId64 " KiB%s\n", sizeof(table), (sql1 - sql0) / 1024,
           threads ? ", and each worker thread's Caps solver (its work space as far as its searches touched it: a "
           "fixed cost of some MiB per thread, not per table; the 0-thread run shows the tables alone)" : "");
    int64_t p50 = quantile(probe, nprobe, 0.50), p99 = quantile(probe, nprobe, 0.99);
    printf("  event in -> messages queued      p50 %.3f ms, p99 %.3f ms, mean %.3f ms  (core_batch of one "
           "`!table`, %d samples under load)\n", p50 / 1e6, p99 / 1e6, nprobe ? probe_ns / 1e6 / nprobe : 0.0,
           nprobe);
    int64_t t50 = quantile(tick_per, nticks, 0.50), t99 = quantile(tick_per, nticks, 0.99);
    printf("  core_tick per answer applied     mean %.3f ms, p50 %.3f ms, p99 %.3f ms  (%" PRId64
           " answers in %d ticks, %.1f per tick)\n", answers ? tick_ns / 1e6 / answers : 0.0, t50 / 1e6, t99 / 1e6,
           answers, nticks, nticks ? (double)answers / nticks : 0.0);
    printf("  loop wall time: core_tick %.1f%%, core_flush %.1f%%, probes %.1f%%, waiting for workers %.1f%%; "
           "the loop thread was on a CPU %.0f%% of it (the rest: fsync and other waits)\n",
           100 * tick_ns / 1e9 / secs, 100 * flush_ns / 1e9 / secs, 100 * probe_ns / 1e9 / secs,
           100 * wait_ns / 1e9 / secs, 100 * cpu / secs);
    printf("  longest stall (one core_batch or core_tick call) %.1f ms wall, %.1f ms on the CPU   target <= %.0f ms  "
           "%s  (the opening batches of %d events: %.1f ms wall, %.1f ms CPU)\n", loop.wall / 1e6, loop.cpu / 1e6,
           TARGET_STALL_MS, loop.wall <= TARGET_STALL_MS * 1e6 ? "MET" : "NOT MET", ROOMS_PER_BATCH * 6,
           opening.wall / 1e6, opening.cpu / 1e6);
    printf("  in the longest call the loop thread waited %ld times (locks, I/O) and was preempted %ld times; "
           "%ld of %ld calls took over %.0f ms\n", loop.vol, loop.invol, loop.over, loop.calls, TARGET_STALL_MS);
    free(probe);
    free(tick_per);
    core_free(c);

    /* A restart: a new core rebuilds every open table from its journal. */
    if (restore) {
        c = core_new(&o, err, sizeof err);
        if (!c || core_add_adapter(c, &a) != 0) die("core_new", err);
        int64_t r0 = now_ns();
        int n = core_restore(c);
        double rs = (now_ns() - r0) / 1e9;
        if (n < 0) die("core_restore", "failed");
        printf("  restart: core_restore rebuilt %d open tables (%" PRId64 " journal entries) in %.2f s, "
               "%.1f ms per table\n", n, s.moves, rs, n ? rs * 1e3 / n : 0.0);
        core_free(c);
    }
    store_close(db);
    unlink_db(path);
}

int main(int argc, char **argv)
{
    plan p = {1000, 200000, 20.0};
    if (argc > 1) p.tables = atoi(argv[1]);
    if (argc > 2) p.target = atoll(argv[2]);
    if (argc > 3) p.seconds = atof(argv[3]);
    int only = argc > 4 ? atoi(argv[4]) : -1;
    if (p.tables < 1 || p.target < 1 || p.seconds <= 0 || argc > 5 || (argc > 4 && (only < 0 || only > 64))) {
        fprintf(stderr, "usage: bench_core [tables] [moves] [seconds per run] [threads: that setting only, 0 to 64]\n");
        return 2;
    }
    if (sodium_init() < 0) die("sodium_init", "failed");
    const char *tmp = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof dir, "%s/cardroom-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) die("mkdtemp", strerror(errno));
    printf("bench_core: %d tables of four computer players, up to %" PRId64 " moves or %.0f s per run\n", p.tables,
           p.target, p.seconds);
    printf("one durable commit (BEGIN IMMEDIATE; one row; COMMIT with fsync) costs %.3f ms on this disk\n",
           commit_ms(dir));
    /* Each setting in a process of its own, so that the second does not reuse the memory the
     * first freed (the RSS growth would then say nothing). */
    int settings[2][2] = {{2, 1}, {0, 0}};
    if (only >= 0) settings[0][0] = only, settings[0][1] = only > 0; /* a restart is timed with workers */
    for (int i = 0; i < (only >= 0 ? 1 : 2); i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) die("fork", strerror(errno));
        if (pid == 0) {
            run(dir, &p, settings[i][0], settings[i][1]);
            fflush(stdout);
            _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) die("run", "failed");
    }
    rmdir(dir);
    return 0;
}
