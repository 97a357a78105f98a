/* threads.h — the bot's threads and locks beside a loop of real-time priority.
 *
 * With [bot] loop_priority = realtime the event loop's thread runs at real-time priority (core.c),
 * and a thread inherits its creator's priority: the threads the bot starts get the priority
 * chosen for them instead, whoever starts them — the worker threads normal priority, the store's
 * threads (writer, syncer, checkpointer) the lowest real-time priority, one below the loop's, so
 * that busy workers never hold up a write the loop's reads of the file wait for (SQLite's
 * readers retry, sleeping, while another connection is in the middle of changing the log). The
 * locks they share with the loop inherit priority: a loop that waits for one lends its priority
 * to the holder, so it never waits for a thread that is not running. Each thread has a name
 * (top -H, /proc/PID/task/TID/comm). */
#ifndef CARDROOM_THREADS_H
#define CARDROOM_THREADS_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>

/* pthread_create() with this policy and priority rather than the caller's. */
static inline int thread_create_as(pthread_t *t, void *(*fn)(void *), void *arg, int policy, int priority)
{
    pthread_attr_t a;
    struct sched_param p = {.sched_priority = priority};
    pthread_attr_init(&a);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, policy);
    pthread_attr_setschedparam(&a, &p);
    int rc = pthread_create(t, &a, fn, arg);
    pthread_attr_destroy(&a);
    return rc;
}

/* pthread_create() with the given priority rather than the caller's: 0 the normal policy
 * (SCHED_OTHER), else SCHED_FIFO at that priority, or the normal policy where the system refuses
 * it. The thread is named (at most 15 characters). */
static inline int thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name, int realtime)
{
    int rc = realtime ? thread_create_as(t, fn, arg, SCHED_FIFO, realtime) : EPERM;
    if (rc == EPERM) rc = thread_create_as(t, fn, arg, SCHED_OTHER, 0);
    if (rc == 0) pthread_setname_np(*t, name);
    return rc;
}

/* Sets a running thread's priority as thread_start() would have (the normal policy if the system
 * refuses real-time priority). */
static inline void thread_set_priority(pthread_t t, int realtime)
{
    struct sched_param p = {.sched_priority = realtime}, normal = {0};
    if (!realtime || pthread_setschedparam(t, SCHED_FIFO, &p) != 0) pthread_setschedparam(t, SCHED_OTHER, &normal);
}

/* pthread_mutex_init() of a lock with priority inheritance, recursive if asked. */
static inline int thread_mutex_init(pthread_mutex_t *mu, int recursive)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    if (recursive) pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    int rc = pthread_mutex_init(mu, &a);
    pthread_mutexattr_destroy(&a);
    return rc;
}

#endif
