/* bench_dd.c — how fast the double-dummy solver is (engine/dd.h).
 *
 * A program, not a test (`make bench`). Deals come from fixed seeds; the bidding, the indicator and
 * the open-or-closed choice are made by the heuristic computer player (bot/ai304.h), so contracts,
 * trumps and closed games are those of real tables; all-pass hands and redeals are skipped. For
 * each deal the whole hand is solved from the first lead twice, each time by a solver whose table
 * starts empty (made before the clock starts): the exact points of both teams under best play
 * (dd_value), and the question a player asks most, whether the maker's team makes its bid
 * (dd_reach). Prints p50, p90, p99 and max per solve in thread CPU time and in search nodes (which
 * do not depend on the machine's load), the mean, and nodes per second. Targets: p50 <= 5 ms,
 * p99 <= 50 ms on one core. With "open", every maker declares an open game (R-OPEN) where the rules
 * let him: the heuristic player keeps the trump closed, and open hands are the harder ones to solve.
 *
 * Usage: bench_dd [deals [open]]   (default 1000) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ai304.h"
#include "dd.h"
#include "deal.h"
#include "bench_stats.h"
#include "g304.h"

#define BENCH_DEALS 1000

static uint64_t bench_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Deals and bids a hand with the heuristic player up to the first lead. Returns 1 if it got there. */
static int bench_first_lead(uint64_t *s, g304_state *st, int open)
{
    static const int16_t tokens[2] = {11, 11};
    g304_rules rules;
    g304_rules_default(&rules);
    uint8_t seed[DEAL_SEED_BYTES];
    for (int i = 0; i < DEAL_SEED_BYTES; i += 8) {
        uint64_t x = bench_mix(s);
        memcpy(seed + i, &x, 8);
    }
    card_t deck[CARD_COUNT];
    deal_shuffle(seed, deck, CARD_COUNT);
    g304_start(st, &rules, (int)(bench_mix(s) & 3), tokens, deck, NULL);
    for (int guard = 0; guard < 64; guard++) {
        if (st->phase == G304_PHASE_DONE) return 0;
        if (st->phase == G304_PHASE_PLAY) {
            g304_action a = {.kind = G304_DO_OPEN};
            if (!open) { /* the heuristic maker may declare an open game first */
                ai304_input in;
                ai304_input_of(st, st->maker, &in);
                if (ai304_choose(&in, bench_mix(s), &a) != 0) a.kind = G304_DO_COUNT;
            }
            if (a.kind == G304_DO_OPEN) g304_apply(st, st->maker, &a, NULL, NULL);
            return st->phase == G304_PHASE_PLAY;
        }
        ai304_input in;
        g304_action a;
        ai304_input_of(st, st->to_act, &in);
        if (ai304_choose(&in, bench_mix(s), &a) != 0 || g304_apply(st, st->to_act, &a, NULL, NULL) != G304_OK)
            return 0;
    }
    return 0;
}

typedef struct {
    double *ms;
    long *nodes;
    double total;
    long total_nodes;
} bench_series;

/* Times one search by a solver whose table starts empty (made before the clock starts). */
static void bench_time(bench_series *b, int d, const dd_pos *p, int bid)
{
    dd_solver *w = dd_solver_new(0);
    if (!w) exit(1);
    double t0 = bench_now();
    int r = bid ? dd_reach(w, p, p->maker & 1, bid - p->points[p->maker & 1]) : dd_value(w, p);
    double t1 = bench_now();
    if (r < 0 || r > dd_points_left(p)) exit(1);
    b->ms[d] = (t1 - t0) * 1e3;
    b->nodes[d] = dd_nodes(w);
    b->total += t1 - t0;
    b->total_nodes += b->nodes[d];
    dd_solver_free(w);
}

static void bench_print(bench_series *b, int deals, const char *what)
{
    bench_sort(b->ms, b->nodes, deals);
    int p50 = deals / 2, p90 = deals * 9 / 10, p99 = deals * 99 / 100;
    printf("%s\n", what);
    printf("  time ms: mean %.3f p50 %.3f p90 %.3f p99 %.3f max %.3f\n", b->total * 1e3 / deals, b->ms[p50], b->ms[p90],
           b->ms[p99], b->ms[deals - 1]);
    printf("  nodes: mean %ld p50 %ld p90 %ld p99 %ld max %ld\n", b->total_nodes / deals, b->nodes[p50], b->nodes[p90],
           b->nodes[p99], b->nodes[deals - 1]);
    printf("  nodes per second: %.0f\n", b->total > 0 ? (double)b->total_nodes / b->total : 0.0);
}

int main(int argc, char **argv)
{
    int deals = argc > 1 ? atoi(argv[1]) : BENCH_DEALS, open = argc > 2 && strcmp(argv[2], "open") == 0;
    if (deals <= 0) deals = BENCH_DEALS;
    bench_series exact = {calloc((size_t)deals, sizeof(double)), calloc((size_t)deals, sizeof(long)), 0, 0};
    bench_series reach = {calloc((size_t)deals, sizeof(double)), calloc((size_t)deals, sizeof(long)), 0, 0};
    if (!exact.ms || !exact.nodes || !reach.ms || !reach.nodes) return 1;
    uint64_t s = 304;
    int closed = 0, pcc = 0;
    for (int d = 0; d < deals; d++) {
        g304_state st;
        while (!bench_first_lead(&s, &st, open)) {}
        dd_pos p;
        if (dd_pos_of(&st, &p, NULL, 0) != 0) return 1;
        closed += !p.trump_open;
        pcc += p.pcc;
        bench_time(&exact, d, &p, 0);
        bench_time(&reach, d, &p, st.bid == G304_PCC ? 0 : st.bid);
    }
    printf("dd: whole hands from the first lead, %d deals (%d closed, %d Partner Close Caps); thread CPU time\n", deals,
           closed, pcc);
    bench_print(&exact, deals, "exact points of both teams (dd_value)");
    bench_print(&reach, deals, "is the bid made? (dd_reach at the bid)");
    free(exact.ms);
    free(exact.nodes);
    free(reach.ms);
    free(reach.nodes);
    return 0;
}
