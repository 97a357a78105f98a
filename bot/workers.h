/* workers.h — computer players think, and the Caps judge searches, on worker threads, off the
 * event loop.
 *
 * The loop submits a job (a computer player's question from its table, the game's function
 * that thinks about it, and where the table stood; or a search a game handed off the loop); a
 * worker runs the function and queues the job with its answer; the loop's wake-up descriptor
 * turns readable and the loop collects results with work_take(). Workers know no game: the
 * question is plain bytes the game laid out. Each thread keeps one Caps solver (a few MiB of
 * work space), made at its first search. With zero threads a job is answered at once on the
 * caller's thread (tests, small tools). */
#ifndef CARDROOM_WORKERS_H
#define CARDROOM_WORKERS_H

#include <stdint.h>

#include "table.h"

typedef struct workers workers;

typedef struct {
    int64_t table;        /* table id */
    int64_t seq;          /* the table's journal position when asked */
    int seat;
    uint64_t seed;
    int64_t not_before;   /* ms: the answer is not used before this time (a thinking pause) */
    table_think think;    /* the game's thinking (table_computer_question) */
    table_search search;  /* or, when set instead of think: a search (seat, seed, not_before unused) */
    table_question q;     /* the seat's knowledge or the search's question; with the answer once done */
    int ok;               /* result of think: a move was chosen */
} work_job;

workers *work_new(int threads);
/* The same, gathering up to count answers for at most ns (tests). */
workers *work_new_gathering(int threads, int count, int64_t ns);
void work_free(workers *w);
/* Queues a copy of job. Returns 0, or -1 (out of memory). */
int work_submit(workers *w, const work_job *job);
/* Moves up to max finished jobs into out; returns the count. */
int work_take(workers *w, work_job *out, int max);
/* Jobs submitted and not yet taken. */
int work_pending(workers *w);
/* Turns readable when the loop is to take finished jobs (for poll): at once with zero threads;
 * with threads, answers are gathered (workers.c): when 32 wait, when no job waits for a thread,
 * or 2 ms after the first. Readable until work_take() has taken them all. */
int work_wake_fd(workers *w);

#endif
