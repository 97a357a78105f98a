/* deal.h — deterministic shuffles: a 32-byte seed always gives the same deck order.
 *
 * The seed keys ChaCha20 (libsodium's IETF variant, zero nonce); its keystream is read as
 * little-endian 32-bit words and turned into an unbiased Fisher–Yates shuffle by rejection
 * sampling. Same seed, same deck, on every machine (R-SHUFFLE). A pack of n cards is the
 * permutation of the ids 0..n-1: four-player 304 shuffles n = 32 (CARD_COUNT), six-player 304
 * n = 36 (CARD_IDS, the sixes 32..35) — the same keystream and the same algorithm over the
 * larger pack, so a seed deals a different, equally unbiased order there (g304_shuffle()). */
#ifndef CARDROOM_DEAL_H
#define CARDROOM_DEAL_H

#include <stdint.h>

#include "cards.h"

#define DEAL_SEED_BYTES 32

/* Fills deck[0..n-1] with a permutation of the cards 0..n-1 (n <= 64) drawn from the seed. */
void deal_shuffle(const uint8_t seed[DEAL_SEED_BYTES], card_t *deck, int n);

#endif
