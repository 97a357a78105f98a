/* deal.c — seed to deck order: ChaCha20 keystream, rejection sampling, Fisher–Yates.
 *
 * The keystream is produced in blocks of 64 bytes with an explicit block counter, so the
 * draw sequence does not depend on buffer sizes; rejection keeps every index equally likely
 * (a plain modulo would favour small indices). */
#include "deal.h"

#include <sodium.h>
#include <string.h>

typedef struct {
    const uint8_t *key;
    uint8_t block[64];
    uint32_t counter; /* next ChaCha20 block to produce */
    int used;         /* bytes of block already read */
} keystream;

static uint32_t next_word(keystream *ks)
{
    if (ks->used + 4 > (int)sizeof ks->block) {
        static const uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES];
        memset(ks->block, 0, sizeof ks->block);
        crypto_stream_chacha20_ietf_xor_ic(ks->block, ks->block, sizeof ks->block, nonce, ks->counter++,
                                           ks->key);
        ks->used = 0;
    }
    const uint8_t *p = ks->block + ks->used;
    ks->used += 4;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Uniform integer in [0, bound): reject the top sliver of the 32-bit range that a modulo
 * would map unevenly. */
static uint32_t uniform(keystream *ks, uint32_t bound)
{
    uint32_t limit = (uint32_t)(0u - bound) % bound; /* 2^32 mod bound */
    for (;;) {
        uint32_t x = next_word(ks);
        if (x >= limit) return x % bound;
    }
}

void deal_shuffle(const uint8_t seed[DEAL_SEED_BYTES], card_t *deck, int n)
{
    keystream ks = {.key = seed, .counter = 0, .used = (int)sizeof ks.block};
    for (int i = 0; i < n; i++) deck[i] = (card_t)i;
    for (int i = n - 1; i > 0; i--) {
        uint32_t j = uniform(&ks, (uint32_t)i + 1);
        card_t t = deck[i];
        deck[i] = deck[j];
        deck[j] = t;
    }
    sodium_memzero(ks.block, sizeof ks.block);
}
