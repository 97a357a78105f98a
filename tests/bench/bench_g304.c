/* bench_g304.c — how fast the 304 engine plays: random legal playouts on one core.
 *
 * A program, not a test (`make bench` runs it through meson's benchmark()). Hands are played
 * with moves drawn at random from g304_legal() and applied with an events buffer, as a bot or
 * a search would; the deck orders are shuffled before the clock starts so that the ChaCha20
 * shuffle is not what gets measured. Then g304_legal() and g304_apply() are timed alone on
 * states sampled from those playouts. Figures print one per line. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "deal.h"
#include "g304.h"

#define BENCH_SECONDS 3.0
#define BENCH_DECKS 1024
#define BENCH_SAMPLES 4096

static uint64_t bench_rng = 0x304304304304ull;

/* xorshift64*: a fixed seed, so runs are comparable. */
static uint32_t bench_below(uint32_t n)
{
    bench_rng ^= bench_rng >> 12;
    bench_rng ^= bench_rng << 25;
    bench_rng ^= bench_rng >> 27;
    return (uint32_t)((((bench_rng * 0x2545F4914F6CDD1Dull) >> 32) * n) >> 32);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static card_t decks[BENCH_DECKS][CARD_COUNT];
static g304_state samples[BENCH_SAMPLES];     /* states met in the playouts, before a move */
static g304_action sample_moves[BENCH_SAMPLES]; /* the move made there */

/* One move of a playout: random among the legal ones, passing half the time when a pass is
 * allowed so that bidding looks like bidding rather than a climb to 300. */
static void choose(const g304_state *st, g304_action *out)
{
    g304_action legal[G304_MAX_LEGAL];
    int n = g304_legal(st, st->to_act, legal);
    for (int i = 0; i < n; i++)
        if (legal[i].kind == G304_DO_PASS && bench_below(2)) {
            *out = legal[i];
            return;
        }
    *out = legal[bench_below((uint32_t)n)];
}

int main(void)
{
    for (int d = 0; d < BENCH_DECKS; d++) {
        uint8_t seed[DEAL_SEED_BYTES] = {0};
        memcpy(seed, &d, sizeof d);
        deal_shuffle(seed, decks[d], CARD_COUNT);
    }
    g304_rules rules;
    g304_rules_default(&rules);
    const int16_t tokens[2] = {11, 11};

    g304_state st;
    g304_events ev;
    long applied = 0, hands = 0, nsamples = 0;
    double t0 = now(), t1 = t0;
    while (t1 - t0 < BENCH_SECONDS) {
        for (int k = 0; k < 64; k++, hands++) {
            ev.n = 0;
            g304_start(&st, &rules, (int)(hands & 3), tokens, decks[hands % BENCH_DECKS], &ev);
            while (st.phase != G304_PHASE_DONE) {
                g304_action a;
                choose(&st, &a);
                if (nsamples < BENCH_SAMPLES && bench_below(16) == 0) {
                    samples[nsamples] = st;
                    sample_moves[nsamples++] = a;
                }
                ev.n = 0;
                if (g304_apply(&st, st.to_act, &a, &ev, NULL) != G304_OK) {
                    fprintf(stderr, "bench: a legal move was refused\n");
                    return 1;
                }
                applied++;
            }
        }
        t1 = now();
    }
    double play_secs = t1 - t0;

    /* g304_legal() alone, on states from the playouts. */
    long legal_calls = 0, listed = 0;
    g304_action out[G304_MAX_LEGAL];
    t0 = now();
    t1 = t0;
    while (t1 - t0 < 1.0 && nsamples > 0) {
        for (long i = 0; i < nsamples; i++) listed += g304_legal(&samples[i], samples[i].to_act, out);
        legal_calls += nsamples;
        t1 = now();
    }
    double legal_secs = t1 - t0;

    /* g304_apply() alone: the sampled moves again, each on a fresh copy of its state (the copy
     * is part of the cost, as it is for a search that keeps the parent). */
    long apply_calls = 0;
    t0 = now();
    t1 = t0;
    while (t1 - t0 < 1.0 && nsamples > 0) {
        for (long i = 0; i < nsamples; i++) {
            st = samples[i];
            ev.n = 0;
            g304_apply(&st, st.to_act, &sample_moves[i], &ev, NULL);
        }
        apply_calls += nsamples;
        t1 = now();
    }
    double apply_secs = t1 - t0;

    printf("applied actions per second: %.0f\n", (double)applied / play_secs);
    printf("hands per second: %.0f\n", (double)hands / play_secs);
    printf("actions per hand: %.1f\n", (double)applied / (double)hands);
    printf("apply() calls per second (copy + apply, no legal()): %.0f\n",
           apply_secs > 0 ? (double)apply_calls / apply_secs : 0.0);
    printf("legal() calls per second: %.0f\n", legal_secs > 0 ? (double)legal_calls / legal_secs : 0.0);
    printf("moves listed per legal() call: %.1f\n", legal_calls ? (double)listed / (double)legal_calls : 0.0);
    printf("state size: %zu bytes\n", sizeof(g304_state));
    printf("view size: %zu bytes\n", sizeof(g304_view));
    printf("events buffer size: %zu bytes\n", sizeof(g304_events));
    return 0;
}
