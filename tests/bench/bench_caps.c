/* bench_caps.c — how fast the Caps judge is: certainty checks on positions from random games.
 *
 * A program, not a test (`make bench`). Hands are dealt from fixed seeds and played with random
 * legal moves (half of the hands with one team playing its strongest card, so that positions where
 * a team has won every trick — the only ones the judge checks — come up often). Every move goes
 * through judge_apply(); each certainty check it makes is timed on its own, and the judging of a
 * whole hand is summed. Prints p50, p99 and max per check (in time, and in search nodes, which do
 * not depend on the machine's load), per-hand totals, and how often the search budget answered
 * "unknown". Figures print one per line: four-player 304, then six-player 304 (fewer hands, its
 * lines prefixed "six players:"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "caps.h"
#include "deal.h"
#include "judge.h"

#define BENCH_HANDS 2000 /* four players */
#define BENCH_HANDS6 300 /* six players */

static uint64_t rng = 0xC0FFEE304ull;

static uint32_t below(uint32_t n)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((((rng * 0x2545F4914F6CDD1Dull) >> 32) * n) >> 32);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double at(const double *sorted, size_t n, double q) { return n ? sorted[(size_t)(q * (double)(n - 1))] : 0; }

/* A move for the seat to act: random, or (for the strong team of a biased hand) the strongest card. */
static g304_action pick(const g304_state *st, int strong_team)
{
    g304_action legal[G304_MAX_LEGAL];
    int n = g304_legal(st, st->to_act, legal);
    g304_action a = legal[below((uint32_t)n)];
    if (st->phase == G304_PHASE_BID4 && below(10) < 7) a = (g304_action){.kind = G304_DO_PASS};
    if (st->phase == G304_PHASE_BID8 && below(10) < 9) a = (g304_action){.kind = G304_DO_PASS};
    if (st->phase == G304_PHASE_PLAY && strong_team >= 0) {
        int best = -1, best_power = -1;
        for (int i = 0; i < n; i++) {
            if (legal[i].kind != G304_DO_PLAY) continue;
            int p = card_power(legal[i].card) + (st->trump_open && CARD_SUIT(legal[i].card) == st->trump ? 8 : 0);
            if ((st->to_act & 1) != strong_team) p = -p;
            if (p > best_power) best_power = p, best = i;
        }
        if (best >= 0) a = legal[best];
    }
    return a;
}

/* Judges nhands hands of `players`-player 304 and prints the figures, each line after prefix. */
static int run(int players, int nhands, const char *prefix)
{
    caps_solver *w = caps_solver_new(0);
    size_t cap = 1u << 20, nchecks = 0, unknown = 0, certain = 0;
    double *checks = malloc(cap * sizeof *checks), *nodes = malloc(cap * sizeof *nodes);
    double *hands = malloc((size_t)nhands * sizeof *hands);
    if (!w || !checks || !nodes || !hands) return 1;
    for (int h = 0; h < nhands; h++) {
        g304_rules rules;
        g304_rules_default(&rules);
        if (g304_rules_set_players(&rules, players, NULL) < 0) return 1;
        uint8_t seed[DEAL_SEED_BYTES];
        for (int i = 0; i < DEAL_SEED_BYTES; i++) seed[i] = (uint8_t)below(256);
        card_t deck[CARD_IDS];
        g304_shuffle(seed, &rules, deck);
        int16_t tokens[2] = {11, 11};
        g304_state st;
        g304_start(&st, &rules, h % players, tokens, deck, NULL);
        int strong = (h & 1) ? (int)below(2) : -1;
        double hand_time = 0;
        while (st.phase != G304_PHASE_DONE) {
            g304_action a = pick(&st, strong);
            if (g304_apply(&st, st.to_act, &a, NULL, NULL) != G304_OK) return 1;
            /* the judge's work after this move, one check at a time */
            for (int s = 0; s < players; s++) {
                if (st.certain_at[s] != G304_NEVER || !g304_caps_open_for(&st, s)) continue;
                card_t order[G304_TRICKS];
                int n;
                double t0 = now();
                caps_verdict v = caps_check(w, &st, s, NULL, 0, order, &n);
                double dt = now() - t0;
                hand_time += dt;
                if (nchecks < cap) nodes[nchecks] = (double)caps_solver_nodes(w), checks[nchecks++] = dt;
                if (v == CAPS_UNKNOWN) unknown++;
                if (v == CAPS_CERTAIN) {
                    certain++;
                    st.certain_at[s] = (uint8_t)g304_cards_played(&st);
                }
            }
        }
        hands[h] = hand_time;
    }
    qsort(checks, nchecks, sizeof *checks, by_value);
    qsort(nodes, nchecks, sizeof *nodes, by_value);
    qsort(hands, (size_t)nhands, sizeof *hands, by_value);
    printf("%shands judged: %d\n", prefix, nhands);
    printf("%scertainty checks: %zu\n", prefix, nchecks);
    printf("%scheck time p50: %.1f us\n", prefix, at(checks, nchecks, 0.50) * 1e6);
    printf("%scheck time p99: %.1f us\n", prefix, at(checks, nchecks, 0.99) * 1e6);
    printf("%scheck time max: %.1f us\n", prefix, at(checks, nchecks, 1.0) * 1e6);
    printf("%ssearch nodes per check p50: %.0f\n", prefix, at(nodes, nchecks, 0.50));
    printf("%ssearch nodes per check p99: %.0f\n", prefix, at(nodes, nchecks, 0.99));
    printf("%ssearch nodes per check max: %.0f\n", prefix, at(nodes, nchecks, 1.0));
    printf("%sjudging per hand p50: %.3f ms\n", prefix, at(hands, (size_t)nhands, 0.50) * 1e3);
    printf("%sjudging per hand p99: %.3f ms\n", prefix, at(hands, (size_t)nhands, 0.99) * 1e3);
    printf("%sjudging per hand max: %.3f ms\n", prefix, at(hands, (size_t)nhands, 1.0) * 1e3);
    printf("%scertain found: %zu\n", prefix, certain);
    printf("%sunknown (budget reached): %zu of %zu = %.3f%%\n", prefix, unknown, nchecks,
           nchecks ? 100.0 * (double)unknown / (double)nchecks : 0.0);
    free(checks);
    free(nodes);
    free(hands);
    caps_solver_free(w);
    return 0;
}

int main(void)
{
    if (run(4, BENCH_HANDS, "") != 0) return 1;
    return run(6, BENCH_HANDS6, "six players: ");
}
