/* test_rng.h — a small seeded random stream for tests that make up hands (splitmix64).
 *
 * Static functions for Criterion tests: include this from the test file that uses them. */
#ifndef CARDROOM_TEST_RNG_H
#define CARDROOM_TEST_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s;
} xrng;

static inline uint64_t rng_u64(xrng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A number in 0..n-1. */
static inline uint32_t rng_below(xrng *r, uint32_t n) { return (uint32_t)(((rng_u64(r) >> 32) * (uint64_t)n) >> 32); }

static inline int rng_chance(xrng *r, uint32_t percent) { return rng_below(r, 100) < percent; }

#endif
