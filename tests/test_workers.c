/* test_workers.c — the thread pool (bot/workers.c): answers come back whole and in order, and
 * the loop is woken to take them gathered, not at each one: when enough wait, when no job waits
 * for a thread any more, or when the first has waited long enough; with zero threads at once.
 *
 * Each job blocks until the test lets it go, and says when it starts: a worker starts the next
 * job only after it has queued the one before (and written the pipe if it was to), so the test
 * knows what the pool has done without waiting on a clock. */
#include <criterion/criterion.h>
#include <poll.h>
#include <semaphore.h>

#include "workers.h"

#define JOBS 40

static sem_t go[JOBS], started[JOBS];

static int think(table_question *q, uint64_t seed)
{
    (void)q;
    sem_post(&started[seed]);
    while (sem_wait(&go[seed]) != 0) {}
    return 1;
}

static void init(void)
{
    for (int i = 0; i < JOBS; i++) {
        sem_init(&go[i], 0, 0);
        sem_init(&started[i], 0, 0);
    }
}

TestSuite(workers, .init = init);

static void submit(workers *w, int first, int n)
{
    for (int i = first; i < first + n; i++) {
        work_job j = {.table = 100 + i, .seq = i, .seed = (uint64_t)i, .think = think};
        cr_assert_eq(work_submit(w, &j), 0);
    }
}

/* Whether the wake-up descriptor is readable, waiting up to ms for it. */
static int readable(workers *w, int ms)
{
    struct pollfd p = {.fd = work_wake_fd(w), .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

/* Lets job k go and waits until the worker has queued it (it has started job k + 1). */
static void finish(int k)
{
    sem_post(&go[k]);
    while (sem_wait(&started[k + 1]) != 0) {}
}

static void expect_taken(workers *w, int first, int n)
{
    work_job got[64];
    cr_assert_eq(work_take(w, got, 64), n, "the loop takes every answer waiting");
    for (int i = 0; i < n; i++) {
        cr_expect_eq(got[i].table, 100 + first + i, "answers in the order they came");
        cr_expect_eq(got[i].ok, 1, "with the thinking's result");
    }
}

Test(workers, the_loop_is_woken_when_enough_answers_wait_not_at_each)
{
    workers *w = work_new_gathering(1, 32, 3600 * 1000000000LL); /* the timer never fires here */
    cr_assert_not_null(w);
    submit(w, 0, JOBS);
    while (sem_wait(&started[0]) != 0) {}
    for (int k = 0; k < 32; k++) {
        finish(k);
        cr_expect_eq(readable(w, 0), k == 31, "after %d answers, woken: %d", k + 1, k == 31);
    }
    cr_expect_eq(work_pending(w), JOBS);
    expect_taken(w, 0, 32);
    cr_expect_eq(work_pending(w), JOBS - 32);
    cr_expect_not(readable(w, 0), "nothing waits once the loop took them");
    for (int k = 32; k < JOBS - 1; k++) finish(k);
    cr_expect_not(readable(w, 0), "7 answers while the last job still waits for its thread: gathered");
    sem_post(&go[JOBS - 1]);
    cr_assert(readable(w, 30000), "the last job queued, none waits for a thread: the loop is woken");
    expect_taken(w, 32, JOBS - 32);
    cr_expect_eq(work_pending(w), 0);
    cr_expect_not(readable(w, 0));
    work_free(w);
}

Test(workers, the_first_answer_waits_no_longer_than_the_gathering_time)
{
    workers *w = work_new_gathering(1, 32, 1000000); /* 1 ms */
    cr_assert_not_null(w);
    submit(w, 0, 3);
    while (sem_wait(&started[0]) != 0) {}
    finish(0); /* one answer; job 1 thinks, job 2 waits for the thread: nothing wakes the loop but the timer */
    cr_assert(readable(w, 30000), "woken by the timer");
    expect_taken(w, 0, 1);
    cr_expect_not(readable(w, 0), "the timer read with the answers");
    sem_post(&go[1]);
    sem_post(&go[2]);
    cr_assert(readable(w, 30000));
    work_job got[4];
    int n = work_take(w, got, 4);
    if (n == 1) { /* job 1 queued and the loop woken by the timer before job 2 was */
        cr_assert(readable(w, 30000));
        n += work_take(w, got + 1, 3);
    }
    cr_expect_eq(n, 2);
    cr_expect_eq(got[0].table, 101);
    cr_expect_eq(got[1].table, 102);
    work_free(w);
}

Test(workers, with_zero_threads_the_answer_is_there_at_once)
{
    workers *w = work_new(0);
    cr_assert_not_null(w);
    sem_post(&go[0]);
    submit(w, 0, 1);
    cr_expect(readable(w, 0), "answered on the caller's thread: readable at once");
    expect_taken(w, 0, 1);
    cr_expect_not(readable(w, 0));
    work_free(w);
}
