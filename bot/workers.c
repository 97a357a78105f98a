/* workers.c — a small thread pool for computer players and searches (see workers.h).
 *
 * Two queues under one mutex: jobs waiting for a thread, and answers waiting for the loop.
 * A pipe wakes the loop when an answer arrives (with zero threads too: the answer is there at
 * once); the loop drains it in work_take(). The workers run at normal priority whatever the
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
#include <unistd.h>

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
    int pipe_fd[2];
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

/* A finished job was queued: the first one since the loop took them all makes the wake-up
 * descriptor readable. */
static void wake(workers *w, int was_empty)
{
    char one = 1;
    if (was_empty)
        while (write(w->pipe_fd[1], &one, 1) < 0 && errno == EINTR) {}
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
        int was_empty = w->done.count == 0;
        if (ring_push(&w->done, &job) != 0) abort(); /* out of memory */
        if (was_empty) { /* the write outside the lock, which the loop may wait for */
            pthread_mutex_unlock(&w->lock);
            wake(w, 1);
            pthread_mutex_lock(&w->lock);
        }
    }
    pthread_mutex_unlock(&w->lock);
    caps_solver_free(solver);
    return NULL;
}

workers *work_new(int threads)
{
    workers *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    thread_mutex_init(&w->lock, 0);
    pthread_cond_init(&w->more, NULL);
    w->pipe_fd[0] = w->pipe_fd[1] = -1;
    if (pipe(w->pipe_fd) != 0) goto fail;
    fcntl(w->pipe_fd[0], F_SETFL, O_NONBLOCK);
    fcntl(w->pipe_fd[0], F_SETFD, FD_CLOEXEC);
    fcntl(w->pipe_fd[1], F_SETFD, FD_CLOEXEC);
    if (threads <= 0) return w;
    w->threads = calloc((size_t)threads, sizeof *w->threads);
    if (!w->threads) goto fail;
    for (int i = 0; i < threads; i++) {
        if (thread_start_normal(&w->threads[i], worker_main, w) != 0) goto fail;
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
        if (rc == 0) wake(w, was_empty);
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
    if (w->done.count == 0 && w->pipe_fd[0] >= 0)
        while (read(w->pipe_fd[0], sink, sizeof sink) > 0) {}
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
    return w->pipe_fd[0];
}
