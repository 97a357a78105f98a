/* seed.h — fair dealing you can check (R-SHUFFLE).
 *
 * Every hand is shuffled from a 32-byte seed (engine/deal.h). When the hand is dealt the room
 * sees the seed's commitment, BLAKE2b-256 of the seed (libsodium's crypto_generichash, no key);
 * when the hand ends the seed itself is shown. Anyone can then check that the seed matches the
 * commitment and recompute the deal: `cardroom verify SEED COMMITMENT [DEALER] [--players 6]`. */
#ifndef CARDROOM_SEED_H
#define CARDROOM_SEED_H

#include <stddef.h>
#include <stdint.h>

#include "cards.h"

#define SEED_BYTES 32
#define SEED_HEX (2 * SEED_BYTES + 1)

/* BLAKE2b-256 of the seed. */
void seed_commitment(const uint8_t seed[SEED_BYTES], uint8_t out[SEED_BYTES]);

/* A fresh seed from the operating system's cryptographic source. */
void seed_random(uint8_t seed[SEED_BYTES]);

/* A reproducible seed for `--seed N`: BLAKE2b-256 keyed by N of (table, hand). */
void seed_fixed(uint64_t n, int64_t table, int hand_no, uint8_t seed[SEED_BYTES]);

/* Lower-case hex of 32 bytes into buf (SEED_HEX bytes). */
const char *seed_hex(const uint8_t bytes[SEED_BYTES], char buf[SEED_HEX]);
/* Reads 64 hex digits. Returns 0, or -1. */
int seed_parse_hex(const char *text, uint8_t out[SEED_BYTES]);

/* `cardroom verify`: checks seed against commitment and writes the deal — the shuffled deck
 * and each seat's hand for the given dealer — as text into buf. players: 4 (the 32-card pack,
 * four hands of eight) or 6 (R-SIX-DEAL: the 36-card pack, six hands of six). Returns 0 if the
 * commitment matches, 1 if it does not (buf says so), -1 if the arguments are malformed (buf
 * says why). */
int seed_verify(const char *seed_hex_text, const char *commitment_hex, int dealer, int players, char *buf,
                size_t len);

#endif
