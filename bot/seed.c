/* seed.c — seed commitments, reproducible seeds and `cardroom verify` (see seed.h). The deal is
 * printed as the engine deals it (g304_shuffle, the batches of R-DEAL or R-SIX-DEAL), with the
 * seats named as the table names them. */
#include "seed.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "command.h"
#include "g304.h"

void seed_commitment(const uint8_t seed[SEED_BYTES], uint8_t out[SEED_BYTES])
{
    crypto_generichash(out, SEED_BYTES, seed, SEED_BYTES, NULL, 0);
}

void seed_random(uint8_t seed[SEED_BYTES])
{
    randombytes_buf(seed, SEED_BYTES);
}

void seed_fixed(uint64_t n, int64_t table, int hand_no, uint8_t seed[SEED_BYTES])
{
    uint8_t key[8], msg[12];
    for (int i = 0; i < 8; i++) key[i] = (uint8_t)(n >> (8 * i));
    for (int i = 0; i < 8; i++) msg[i] = (uint8_t)((uint64_t)table >> (8 * i));
    for (int i = 0; i < 4; i++) msg[8 + i] = (uint8_t)((uint32_t)hand_no >> (8 * i));
    crypto_generichash(seed, SEED_BYTES, msg, sizeof msg, key, sizeof key);
}

const char *seed_hex(const uint8_t bytes[SEED_BYTES], char buf[SEED_HEX])
{
    return sodium_bin2hex(buf, SEED_HEX, bytes, SEED_BYTES);
}

int seed_parse_hex(const char *text, uint8_t out[SEED_BYTES])
{
    size_t got = 0;
    const char *end = NULL;
    if (!text || strlen(text) != 2 * SEED_BYTES) return -1;
    if (sodium_hex2bin(out, SEED_BYTES, text, strlen(text), NULL, &got, &end) != 0) return -1;
    return got == SEED_BYTES && *end == 0 ? 0 : -1;
}

static size_t put(char *buf, size_t len, size_t used, const char *text)
{
    if (used >= len) return used;
    int k = snprintf(buf + used, len - used, "%s", text);
    return k < 0 ? used : used + (size_t)k;
}

int seed_verify(const char *seed_text, const char *commitment_text, int dealer, int players, char *buf, size_t len)
{
    uint8_t seed[SEED_BYTES], claimed[SEED_BYTES], actual[SEED_BYTES];
    char hex[SEED_HEX], line[256], one[CARD_TEXT_MAX];
    g304_rules rules;
    g304_rules_default(&rules);
    if (seed_parse_hex(seed_text, seed) != 0) {
        snprintf(buf, len, "the seed must be 64 hexadecimal digits");
        return -1;
    }
    if (seed_parse_hex(commitment_text, claimed) != 0) {
        snprintf(buf, len, "the commitment must be 64 hexadecimal digits");
        return -1;
    }
    if (g304_rules_set_players(&rules, players, NULL) != 0) {
        snprintf(buf, len, "the players are 4 or 6");
        return -1;
    }
    int seats = g304_seats(&rules), pack = g304_deck_size(&rules), hand = g304_tricks(&rules);
    if (dealer < 0 || dealer >= seats) {
        snprintf(buf, len, "the dealer is a seat from 0 to %d", seats - 1);
        return -1;
    }
    seed_commitment(seed, actual);
    int match = sodium_memcmp(actual, claimed, SEED_BYTES) == 0;
    snprintf(line, sizeof line, "%s: BLAKE2b-256 of the seed is %s\n",
             match ? "commitment matches" : "COMMITMENT DOES NOT MATCH", seed_hex(actual, hex));
    size_t used = put(buf, len, 0, line);
    card_t deck[CARD_IDS];
    g304_shuffle(seed, &rules, deck);
    used = put(buf, len, used, "deck order (ChaCha20 keyed by the seed, Fisher-Yates):");
    for (int i = 0; i < pack; i++) {
        used = put(buf, len, used, " ");
        used = put(buf, len, used, card_str(deck[i]));
    }
    used = put(buf, len, used, "\n");
    /* Dealt from the dealer's right without a cut: a batch of four to each seat, then the rest of
     * the hands, four each (R-DEAL) or two each with six players (R-SIX-DEAL). */
    for (int k = 0; k < seats; k++) {
        int s = (dealer + 1 + k) % seats;
        snprintf(line, sizeof line, "seat %d (%s):", s, cmd_seat_name(s, seats));
        used = put(buf, len, used, line);
        for (int batch = 0; batch < 2; batch++) {
            int per = batch ? hand - 4 : 4;
            for (int i = 0; i < per; i++) {
                used = put(buf, len, used, " ");
                used = put(buf, len, used, card_pretty(deck[batch * 4 * seats + k * per + i], one));
            }
        }
        used = put(buf, len, used, "\n");
    }
    put(buf, len, used, "(a table with the cut option cuts this deck first; the room shows the cut point)\n");
    sodium_memzero(seed, sizeof seed);
    return match ? 0 : 1;
}
