/* bench_advice.c — how long !hint and !review search (bot/hint.h, bot/review.h).
 *
 * A program, not a test (`make bench`). Deals come from fixed seeds and are bid and played by the
 * heuristic computer player (bot/ai304.h), as at a table of easy computer players; all-pass hands
 * and redeals are skipped. In each deal a hint is asked for the first bid of the four-card round
 * and for every card of one seat's hand (the seat that leads first), and the finished hand is
 * reviewed. Each search runs as on a worker: a hint is one hint_think() (the expert's decision
 * and, for a card, its figure), a review one review_costs() with a fresh solver. Prints p50, p90,
 * p99 and max per search in CPU time: the table waits for its answer that long (other
 * tables do not).
 *
 * Usage: bench_advice [deals]   (default 20) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ai304.h"
#include "aiworld.h"
#include "bench_stats.h"
#include "deal.h"
#include "g304.h"
#include "hint.h"
#include "judge.h"
#include "review.h"

#define BENCH_DEALS 20

/* CPU time of this (single-threaded) program, in seconds. */
static double bench_now(void) { return (double)clock() / CLOCKS_PER_SEC; }

typedef struct {
    double *ms;
    long n, cap;
} bench_series;

static void bench_add(bench_series *b, double ms)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->ms = realloc(b->ms, (size_t)b->cap * sizeof *b->ms);
        if (!b->ms) exit(1);
    }
    b->ms[b->n++] = ms;
}

static void bench_print(const char *what, bench_series *b)
{
    if (!b->n) return;
    bench_sort(b->ms, NULL, b->n);
    printf("%-22s %5ld searches: p50 %7.1f ms, p90 %7.1f ms, p99 %7.1f ms, max %7.1f ms\n", what, b->n,
           b->ms[b->n / 2], b->ms[b->n * 9 / 10], b->ms[b->n * 99 / 100], b->ms[b->n - 1]);
}

/* One hint for seat in st, timed. */
static void bench_hint(bench_series *b, const g304_state *st, const aiworld_history *h, int seat, uint64_t seed)
{
    hint_question q;
    hint_ask(st, h, seat, seed, &q);
    double t0 = bench_now();
    if (hint_think(&q) != 0) exit(1);
    bench_add(b, (bench_now() - t0) * 1000);
}

int main(int argc, char **argv)
{
    int deals = argc > 1 ? atoi(argv[1]) : BENCH_DEALS, done = 0;
    static const int16_t tokens[2] = {11, 11};
    bench_series bids = {0}, cards = {0}, reviews = {0};
    caps_solver *judge = caps_solver_new(0);
    if (!judge) return 1;
    uint64_t s = 304; /* the random stream (aiworld_random) of deals, choices and seeds */
    while (done < deals) {
        g304_rules rules;
        g304_state st;
        aiworld_history hist = {0};
        review_record rec;
        uint8_t seed[DEAL_SEED_BYTES];
        card_t deck[CARD_COUNT];
        g304_rules_default(&rules);
        memset(seed, 0, sizeof seed);
        memcpy(seed, &s, sizeof s); /* a deal per state of the stream */
        deal_shuffle(seed, deck, CARD_COUNT);
        g304_start(&st, &rules, (int)(aiworld_random(&s) & 3), tokens, deck, NULL);
        judge_update(judge, &st);
        review_clear(&rec);
        bench_hint(&bids, &st, &hist, st.to_act, aiworld_random(&s));
        int watched = -1;
        for (int guard = 0; guard < 200 && st.phase != G304_PHASE_DONE; guard++) {
            int seat = st.to_act;
            if (st.phase == G304_PHASE_PLAY && watched < 0) watched = seat;
            if (seat == watched) bench_hint(&cards, &st, &hist, seat, aiworld_random(&s));
            ai304_input in;
            g304_action a;
            g304_state before = st;
            ai304_input_of(&st, seat, &in);
            if (ai304_choose(&in, aiworld_random(&s), &a) != 0) break;
            if (judge_apply(judge, &st, seat, &a, NULL, NULL) != G304_OK) break;
            aiworld_history_note(&hist, &before, seat, &a);
            review_note(&rec, &before, &st, a.kind == G304_DO_CAPS);
        }
        if (st.result.end != G304_END_PLAYED || rec.n == 0) continue;
        review_cost out[REVIEW_CARDS];
        dd_solver *w = dd_solver_new(0);
        if (!w) return 1;
        double t0 = bench_now();
        if (review_costs(w, &rec, out) < 0) return 1;
        bench_add(&reviews, (bench_now() - t0) * 1000);
        dd_solver_free(w);
        done++;
    }
    printf("advice over %d played deals (CPU time per search)\n", done);
    bench_print("hint, first bid", &bids);
    bench_print("hint, a card", &cards);
    bench_print("review, a whole hand", &reviews);
    free(bids.ms);
    free(cards.ms);
    free(reviews.ms);
    caps_solver_free(judge);
    return 0;
}
