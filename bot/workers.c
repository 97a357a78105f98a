/* workers.c — a small thread pool for computer players and searches (see workers.h).
 *
 * Two queues under one mutex: jobs waiting for a thread, and answers waiting for the loop.
 * The loop is woken to take answers (work_wake_fd), but not for each one: a loop woken at every
 * answer commits a transaction per answer or two, and the store's writer and syncer then cost
 * more than the workers save. Answers are gathered: a pipe wakes the loop when GATHER_COUNT
 * answers wait, or when no job waits for a thread any more (nothing would come to gather: a bot
 * with a few tables never waits), and a timer GATHER_NS after the first answer bounds the
 * wait. With zero threads the pipe is written at once (the answer is there at once). The loop
 * drains both in work_take(). The workers run at normal priority whatever the
 * loop's (core.c, loop_priority), hold the lock only to move a job, and write the pipe after
 * letting it go; the lock lends a waiting loop's priority to the worker that holds it (priority
 * inheritance), so a loop of real-time priority never waits for a worker that is not running. The queues
 * are plain arrays used as rings: jobs are small and few (one per table whose computer player
 * is to move or whose move waits for the judge), so one lock is enough. A solver belongs to
 * its thread (it is work space, not shared state) and lives as long as the thread. */
#include "workers.h"

#include "threads.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define GATHER_COUNT 32
#define GATHER_NS 2000000 /* 2 ms: what an answer may wait for others to be committed with it */

typedef struct {
    work_job *items;
    int head, count, cap;
} ring;

struct workers {
    pthread_mutex_t lock;
    pthread_cond_t more;
    ring todo, done;
    int pending;
    int stop;
    int nthreads;
    pthread_t *threads;
    int gather_count;     /* GATHER_COUNT, GATHER_NS (tests set others) */
    int64_t gather_ns;
    int signaled;         /* the pipe was written since the loop last took every answer */
    int pipe_fd[2];
    int timer_fd;         /* fires GATHER_NS after the first answer the loop has not taken */
    int wake_fd;          /* epoll: the pipe and the timer */
    caps_solver *caller;  /* zero threads: the caller's solver */
};

static int ring_push(ring *r, const work_job *j)
{
    if (r->count == r->cap) {
        int cap = r->cap ? r->cap * 2 : 64;
        work_job *items = malloc((size_t)cap * sizeof *items);
        if (!items) return -1;
        for (int i = 0; i < r->count; i++) items[i] = r->items[(r->head + i) % r->cap];
        free(r->items);
        r->items = items;
        r->head = 0;
        r->cap = cap;
    }
    r->items[(r->head + r->count) % r->cap] = *j;
    r->count++;
    return 0;
}

static void ring_pop(ring *r, work_job *j)
{
    *j = r->items[r->head];
    r->head = (r->head + 1) % r->cap;
    r->count--;
}

/* Runs a job; a search gets the thread's solver, made the first time (*solver). */
static void think(work_job *j, caps_solver **solver)
{
    if (!j->search) {
        j->ok = j->think(&j->q, j->seed);
        return;
    }
    if (!*solver && !(*solver = caps_solver_new(0))) abort(); /* out of memory */
    j->search(&j->q, *solver);
}

/* Writes the pipe: the loop is to take the answers. */
static void wake(workers *w)
{
    char one = 1;
    while (write(w->pipe_fd[1], &one, 1) < 0 && errno == EINTR) {}
}

/* Queues a finished job (the lock held). Returns whether the loop is to be woken now: the first
 * answer since the loop took them all starts the timer; the pipe is written (once) when
 * GATHER_COUNT wait or no job waits for a thread. */
static int finished(workers *w, const work_job *job)
{
    if (ring_push(&w->done, job) != 0) abort(); /* out of memory */
    if (w->done.count == 1) {
        struct itimerspec t = {.it_value = {w->gather_ns / 1000000000, w->gather_ns % 1000000000}};
        timerfd_settime(w->timer_fd, 0, &t, NULL);
    }
    if (w->signaled || (w->done.count < w->gather_count && w->todo.count > 0)) return 0;
    w->signaled = 1;
    return 1;
}

static void *worker_main(void *arg)
{
    workers *w = arg;
    work_job job;
    caps_solver *solver = NULL;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->stop && w->todo.count == 0) pthread_cond_wait(&w->more, &w->lock);
        if (w->stop) break;
        ring_pop(&w->todo, &job);
        pthread_mutex_unlock(&w->lock);
        think(&job, &solver);
        pthread_mutex_lock(&w->lock);
        if (finished(w, &job)) { /* the write outside the lock, which the loop may wait for */
            pthread_mutex_unlock(&w->lock);
            wake(w);
            pthread_mutex_lock(&w->lock);
        }
    }
    pthread_mutex_unlock(&w->lock);
    caps_solver_free(solver);
    return NULL;
}

workers *work_new(int threads) { return work_new_gathering(threads, GATHER_COUNT, GATHER_NS); }

workers *work_new_gathering(int threads, int count, int64_t ns)
{
    workers *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->gather_count = count > 0 ? count : 1;
    w->gather_ns = ns > 0 ? ns : 1;
    thread_mutex_init(&w->lock, 0);
    pthread_cond_init(&w->more, NULL);
    w->pipe_fd[0] = w->pipe_fd[1] = -1;
    w->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    w->wake_fd = epoll_create1(EPOLL_CLOEXEC);
    if (w->timer_fd < 0 || w->wake_fd < 0 || pipe(w->pipe_fd) != 0) goto fail;
    fcntl(w->pipe_fd[0], F_SETFL, O_NONBLOCK);
    fcntl(w->pipe_fd[0], F_SETFD, FD_CLOEXEC);
    fcntl(w->pipe_fd[1], F_SETFD, FD_CLOEXEC);
    struct epoll_event pe = {.events = EPOLLIN, .data.fd = w->pipe_fd[0]}, te = {.events = EPOLLIN, .data.fd = w->timer_fd};
    if (epoll_ctl(w->wake_fd, EPOLL_CTL_ADD, w->pipe_fd[0], &pe) != 0 ||
        epoll_ctl(w->wake_fd, EPOLL_CTL_ADD, w->timer_fd, &te) != 0)
        goto fail;
    if (threads <= 0) return w;
    w->threads = calloc((size_t)threads, sizeof *w->threads);
    if (!w->threads) goto fail;
    for (int i = 0; i < threads; i++) {
        if (thread_start(&w->threads[i], worker_main, w, "cardroom-worker", 0) != 0) goto fail;
        w->nthreads++;
    }
    return w;
fail:
    work_free(w);
    return NULL;
}

void work_free(workers *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_broadcast(&w->more);
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < w->nthreads; i++) pthread_join(w->threads[i], NULL);
    free(w->threads);
    caps_solver_free(w->caller);
    free(w->todo.items);
    free(w->done.items);
    if (w->pipe_fd[0] >= 0) close(w->pipe_fd[0]);
    if (w->pipe_fd[1] >= 0) close(w->pipe_fd[1]);
    if (w->timer_fd >= 0) close(w->timer_fd);
    if (w->wake_fd >= 0) close(w->wake_fd);
    pthread_cond_destroy(&w->more);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

int work_submit(workers *w, const work_job *job)
{
    int rc;
    if (w->nthreads == 0) {
        work_job j = *job;
        think(&j, &w->caller);
        int was_empty = w->done.count == 0;
        rc = ring_push(&w->done, &j);
        if (rc == 0) w->pending++;
        if (rc == 0 && was_empty) wake(w);
        return rc;
    }
    pthread_mutex_lock(&w->lock);
    rc = ring_push(&w->todo, job);
    if (rc == 0) {
        w->pending++;
        pthread_cond_signal(&w->more);
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

int work_take(workers *w, work_job *out, int max)
{
    char sink[64];
    int n = 0;
    pthread_mutex_lock(&w->lock);
    while (n < max && w->done.count > 0) ring_pop(&w->done, &out[n++]);
    w->pending -= n;
    if (w->done.count == 0) { /* a timer that fires later wakes the loop for nothing, once */
        while (read(w->pipe_fd[0], sink, sizeof sink) > 0) {}
        uint64_t fired;
        if (read(w->timer_fd, &fired, sizeof fired) < 0) {} /* nothing to read: not fired yet */
        w->signaled = 0;
    }
    pthread_mutex_unlock(&w->lock);
    return n;
}

int work_pending(workers *w)
{
    pthread_mutex_lock(&w->lock);
    int n = w->pending;
    pthread_mutex_unlock(&w->lock);
    return n;
}

int work_wake_fd(workers *w)
{
    return w->wake_fd;
}
