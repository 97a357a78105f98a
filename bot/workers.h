/* workers.h — computer players think on worker threads, off the event loop.
 *
 * The loop submits a job (a seat's knowledge, ai304_input or aigrid_input, and where the
 * table stood); a worker runs ai304_choose() or aigrid_choose() and queues the result; the loop's wake-up descriptor turns
 * readable and the loop collects results with work_take(). With zero threads a job is
 * answered at once on the caller's thread (tests, small tools). */
#ifndef CARDROOM_WORKERS_H
#define CARDROOM_WORKERS_H

#include <stdint.h>

#include "ai304.h"
#include "aigrid.h"

typedef struct workers workers;

typedef struct {
    int64_t table;        /* table id */
    int64_t seq;          /* the table's journal position when asked */
    int seat;
    uint64_t seed;
    int64_t not_before;   /* ms: the answer is not used before this time (a thinking pause) */
    int grid;             /* 1: a ContractGrid seat (gin, gaction); 0: 304 (in, action) */
    union {
        ai304_input in;
        aigrid_input gin;
    };
    int ok;               /* result: an action was chosen */
    union {
        g304_action action;   /* result */
        grid_action gaction;  /* result (ContractGrid) */
    };
} work_job;

workers *work_new(int threads);
void work_free(workers *w);
/* Queues a copy of job. Returns 0, or -1 (out of memory). */
int work_submit(workers *w, const work_job *job);
/* Moves up to max finished jobs into out; returns the count. */
int work_take(workers *w, work_job *out, int max);
/* Jobs submitted and not yet taken. */
int work_pending(workers *w);
/* Readable while finished jobs wait (for poll); -1 with zero threads. */
int work_wake_fd(workers *w);

#endif
