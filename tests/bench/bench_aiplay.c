/* bench_aiplay.c — how long the computer players think (bot/aiplay.h).
 *
 * A program, not a test (`make bench`). Deals from a fixed seed are played in `cardroom arena`'s
 * duplicate matches of the level under study against the heuristic player; every decision of the
 * studied level is timed in thread CPU time (gathering the seat's knowledge plus the choice) and its
 * search nodes counted. Prints p50, p90, p99 and max per decision in milliseconds, for all decisions
 * and for those of the bidding (bids, indicator) and of the play apart, and the arena's deals per
 * second. Targets at expert: p50 <= 50 ms and p99 <= 300 ms on one core, at four seats and at six.
 *
 * Usage: bench_aiplay [deals [level [players]]]   (default 40 expert 4; players 6: six-player 304) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aiplay.h"
#include "arena.h"
#include "bench_stats.h"

typedef struct {
    int level;
    long n, cap;
    double *ms;
    long *nodes;
    uint8_t *playing;
} bench_log;

static void bench_observe(void *ctx, int level, int phase, double seconds, long nodes)
{
    bench_log *b = ctx;
    if (level != b->level) return;
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4096;
        b->ms = realloc(b->ms, sizeof *b->ms * (size_t)b->cap);
        b->nodes = realloc(b->nodes, sizeof *b->nodes * (size_t)b->cap);
        b->playing = realloc(b->playing, (size_t)b->cap);
        if (!b->ms || !b->nodes || !b->playing) exit(1);
    }
    b->ms[b->n] = seconds * 1e3;
    b->nodes[b->n] = nodes;
    b->playing[b->n++] = phase == G304_PHASE_PLAY;
}

/* Prints the percentiles of the decisions with playing == which (-1: all). */
static void bench_report(const bench_log *b, int which, const char *what)
{
    double *ms = malloc(sizeof *ms * (size_t)(b->n + 1));
    long *nodes = malloc(sizeof *nodes * (size_t)(b->n + 1)), n = 0;
    if (!ms || !nodes) exit(1);
    for (long i = 0; i < b->n; i++)
        if (which < 0 || b->playing[i] == which) ms[n] = b->ms[i], nodes[n++] = b->nodes[i];
    if (n) {
        bench_sort(ms, nodes, n);
        printf("%-9s %6ld decisions, ms: p50 %.2f p90 %.2f p99 %.2f max %.2f; nodes: p50 %ld p99 %ld\n", what, n,
               ms[n / 2], ms[n * 9 / 10], ms[n * 99 / 100], ms[n - 1], nodes[n / 2], nodes[n * 99 / 100]);
    }
    free(ms);
    free(nodes);
}

int main(int argc, char **argv)
{
    long deals = argc > 1 ? atol(argv[1]) : 40;
    int level = argc > 2 ? aiplay_level_parse(argv[2]) : AIPLAY_EXPERT, players = argc > 3 ? atoi(argv[3]) : 4;
    bench_log log = {.level = level};
    arena_options o;
    memset(&o, 0, sizeof o);
    g304_rules_default(&o.rules);
    if (deals <= 0 || level < 0 || g304_rules_set_players(&o.rules, players, NULL) != 0) {
        fputs("usage: bench_aiplay [deals [easy|normal|expert [4|6]]]\n", stderr);
        return 2;
    }
    o.seed = 304;
    o.limit_ms = 1000;
    o.a.kind = o.a_partner.kind = o.b.kind = ARENA_BUILTIN;
    o.a.level = o.a_partner.level = level;
    o.b.level = AIPLAY_EASY;
    o.observe = bench_observe;
    o.observe_ctx = &log;
    char why[256];
    arena *ar = arena_new(&o, why, sizeof why);
    if (!ar) {
        fprintf(stderr, "bench_aiplay: %s\n", why);
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < deals; i++) {
        arena_deal d;
        if (arena_play_deal(ar, i, &d) < 0) return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%s against easy, %d players, %ld deals played both ways\n", aiplay_level_name(level), players, deals);
    bench_report(&log, -1, "all");
    bench_report(&log, 0, "bidding");
    bench_report(&log, 1, "play");
    printf("arena: %.2f deals per second (wall clock, one process)\n", deals / s);
    arena_free(ar);
    free(log.ms);
    free(log.nodes);
    free(log.playing);
    return 0;
}
