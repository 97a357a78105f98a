/* threads.h — the bot's threads and locks beside a loop of real-time priority.
 *
 * With [bot] loop_priority = realtime the event loop's thread runs at real-time priority (core.c),
 * and a thread inherits its creator's priority: the worker threads and the store's threads,
 * which the loop may start, are started at normal priority instead, whoever starts them. The
 * locks they share with the loop inherit priority: a loop that waits for one lends its priority
 * to the holder, so it never waits for a thread that is not running. */
#ifndef CARDROOM_THREADS_H
#define CARDROOM_THREADS_H

#include <pthread.h>
#include <sched.h>

/* pthread_create() with the normal policy (SCHED_OTHER) rather than the caller's. */
static inline int thread_start_normal(pthread_t *t, void *(*fn)(void *), void *arg)
{
    pthread_attr_t a;
    struct sched_param p = {0};
    pthread_attr_init(&a);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_OTHER);
    pthread_attr_setschedparam(&a, &p);
    int rc = pthread_create(t, &a, fn, arg);
    pthread_attr_destroy(&a);
    return rc;
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
