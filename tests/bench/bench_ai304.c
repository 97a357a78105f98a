/* bench_ai304.c — how fast the heuristic computer player decides (bot/ai304.h).
 *
 * A program, not a test. Hands are dealt from fixed seeds and played to the end by four AIs;
 * every decision of the seat to act is timed: ai304_input_of() (gathering the seat's knowledge
 * from the full state) plus ai304_choose() (the pure choice). The deck shuffles happen outside
 * the clock. Prints µs per decision (mean, p50, p90, p99, max), the share of the gathering step,
 * and decisions per second on one core. The target is under 20 µs per decision.
 *
 * Usage: bench_ai304 [decisions]   (default 200000) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ai304.h"
#include "deal.h"
#include "g304.h"

#define BENCH_DEFAULT 200000

static uint64_t bench_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t bench_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int bench_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void bench_deck(uint64_t *s, card_t deck[CARD_COUNT])
{
    uint8_t seed[DEAL_SEED_BYTES];
    for (int i = 0; i < DEAL_SEED_BYTES; i += 8) {
        uint64_t x = bench_mix(s);
        memcpy(seed + i, &x, 8);
    }
    deal_shuffle(seed, deck, CARD_COUNT);
}

/* Plays one hand, timing each decision into ns[] (up to max); returns the decisions timed. */
static long bench_hand(uint64_t *s, int dealer, uint32_t *ns, uint64_t *gather_ns, long max)
{
    static const int16_t tokens[2] = {11, 11};
    g304_rules rules;
    g304_rules_default(&rules);
    card_t deck[CARD_COUNT];
    bench_deck(s, deck);
    g304_state st;
    g304_start(&st, &rules, dealer, tokens, deck, NULL);
    long n = 0;
    while (st.phase != G304_PHASE_DONE && n < max) {
        int seat = st.to_act;
        uint64_t seed = bench_mix(s);
        ai304_input in;
        g304_action a;
        uint64_t t0 = bench_ns();
        ai304_input_of(&st, seat, &in);
        uint64_t t1 = bench_ns();
        int r = ai304_choose(&in, seed, &a);
        uint64_t t2 = bench_ns();
        ns[n++] = (uint32_t)(t2 - t0);
        *gather_ns += t1 - t0;
        if (r != 0 || g304_apply(&st, seat, &a, NULL, NULL) != G304_OK) {
            fprintf(stderr, "bench_ai304: seat %d made no legal move\n", seat);
            exit(1);
        }
    }
    return n;
}

int main(int argc, char **argv)
{
    long want = argc > 1 ? strtol(argv[1], NULL, 10) : BENCH_DEFAULT;
    if (want <= 0) want = BENCH_DEFAULT;
    uint32_t *ns = malloc((size_t)want * sizeof *ns);
    if (!ns) return 1;
    uint64_t s = 0x304A1ull, gather = 0;
    long n = 0, hands = 0;
    while (n < want) n += bench_hand(&s, (int)(hands++ & 3), ns + n, &gather, want - n);
    uint64_t total = 0;
    for (long i = 0; i < n; i++) total += ns[i];
    qsort(ns, (size_t)n, sizeof *ns, bench_cmp);
    double us = 1e-3;
    printf("ai304: %ld decisions in %ld hands\n", n, hands);
    printf("ai304: mean %.2f us per decision (input_of %.2f, choose %.2f)\n", (double)total / (double)n * us,
           (double)gather / (double)n * us, (double)(total - gather) / (double)n * us);
    printf("ai304: p50 %.2f us, p90 %.2f us, p99 %.2f us, max %.2f us\n", ns[n / 2] * us, ns[n * 9 / 10] * us,
           ns[n * 99 / 100] * us, ns[n - 1] * us);
    printf("ai304: %.0f decisions/s on one core\n", (double)n / ((double)total * 1e-9));
    free(ns);
    return 0;
}
