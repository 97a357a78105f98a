/* threads.h — starting the bot's threads at normal priority.
 *
 * With [bot] loop_priority = realtime the event loop's thread runs at real-time priority (core.c),
 * and a thread inherits its creator's priority: the worker threads and the store's threads,
 * which the loop may start, are started at normal priority instead, whoever starts them. */
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

#endif
