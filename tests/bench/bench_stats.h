/* bench_stats.h — what the benchmarks here share: sorting samples for their percentiles.
 *
 * Static functions for benchmark programs: include this from the one file of each. */
#ifndef CARDROOM_BENCH_STATS_H
#define CARDROOM_BENCH_STATS_H

#include <stdlib.h>

static int bench_by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench_by_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* Sorts n samples of each kind (either may be NULL) so that [n / 2], [n * 99 / 100] are percentiles. */
static void bench_sort(double *ms, long *nodes, long n)
{
    if (ms) qsort(ms, (size_t)n, sizeof *ms, bench_by_double);
    if (nodes) qsort(nodes, (size_t)n, sizeof *nodes, bench_by_long);
}

#endif
