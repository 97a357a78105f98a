/* mx_megolm.h — Megolm, the group ratchet of Matrix encrypted rooms (m.megolm.v1.aes-sha2).
 *
 * Our own implementation of the Megolm specification (matrix-org/olm docs/megolm.md, and the
 * Matrix client-server spec, "m.megolm.v1.aes-sha2"), on the primitives of mx_crypto.h only.
 * libolm is not used at run time; the tests check every format against it byte for byte.
 *
 * The ratchet R(i) is four 32-byte parts R0..R3 and a 32-bit counter i. Part j is rehashed with
 * H_j(A) = HMAC-SHA-256(key A, one byte j): every message R3 moves on; every 2^8 messages R3 is
 * reseeded from R2, every 2^16 R2 and R3 from R1, every 2^24 R1..R3 from R0. Going forwards any
 * distance costs at most 1020 hashes; going backwards is impossible.
 *
 * Message i: AES key (32) | HMAC key (32) | AES IV (16) = HKDF-SHA-256(salt none, R(i),
 * "MEGOLM_KEYS", 80); the plaintext is AES-256-CBC/PKCS#7 encrypted, and the message is
 *   0x03 | 0x08 varint(i) | 0x12 varint(len) ciphertext | MAC (first 8 bytes of HMAC-SHA-256 of
 *   everything before it) | Ed25519 signature (64 bytes, of everything before it)
 * in unpadded base64. The session id is the Ed25519 public key in unpadded base64.
 *
 * Shared and exported keys (unpadded base64; decoding also takes '=' padding):
 *   session_key (m.room_key): 0x02 | i (4 bytes, big-endian) | R0..R3 | public key | signature
 *                             of the previous 165 bytes                            (229 bytes)
 *   export (m.forwarded_room_key, key backup, key export files): 0x01 | i | R0..R3 | public key
 *                             (165 bytes, no signature: the importer cannot check it)
 *
 * Replays: a Megolm message decrypts as often as it is presented. The caller must keep, per
 * session, the message index -> event id of what it has decrypted and reject a known index that
 * arrives with another event id (the Matrix spec's replay check); this module does not.
 *
 * Indexes wrap around modulo 2^32 as in libolm: index k is "at or after" index f when
 * (k - f) mod 2^32 < 2^31.
 *
 * mx_crypto_init() must have been called. Secrets are wiped (mx_wipe) when a session is freed and
 * when working copies go out of use. Strings returned are malloc'd and NUL-terminated; the
 * caller frees them (pickles and keys are secrets: wipe them before freeing). Every function that
 * takes text from outside (in_new, import, decrypt, unpickle) checks every length and returns
 * NULL / -1 on anything malformed; none of them reads past the NUL of its input.
 *
 * Threads: a session may be used by one thread at a time; mx_megolm_decrypt and the other
 * readers of an inbound session take it const but update a private cache inside it (see
 * mx_megolm_decrypt), so concurrent decryptions on one inbound session need a lock. Different
 * sessions are independent. */
#ifndef CARDROOM_MX_MEGOLM_H
#define CARDROOM_MX_MEGOLM_H

#include <stddef.h>
#include <stdint.h>

#include "mx_crypto.h"

#define MX_MEGOLM_PART_BYTES 32
#define MX_MEGOLM_RATCHET_BYTES (4 * MX_MEGOLM_PART_BYTES)   /* R0..R3 */
#define MX_MEGOLM_SESSION_KEY_BYTES 229                         /* before base64 */
#define MX_MEGOLM_EXPORT_BYTES 165                              /* before base64 */
#define MX_MEGOLM_ID_LEN 43                                     /* base64 of 32 bytes */

/* ---- outbound sessions (ours, for encrypting what we send) ---- */

typedef struct mx_megolm_out mx_megolm_out;

/* A new session: random ratchet R0..R3, counter 0, a new Ed25519 key. NULL if out of memory. */
mx_megolm_out *mx_megolm_out_new(void);
/* Wipes and frees; NULL is fine. */
void mx_megolm_out_free(mx_megolm_out *o);
/* The session id: the unpadded base64 Ed25519 public key, 43 characters and a NUL. */
void mx_megolm_out_id(const mx_megolm_out *o, char id[44]);
/* The index of the next message encrypted. */
uint32_t mx_megolm_out_index(const mx_megolm_out *o);
/* The session_key for m.room_key at the current index: version 2 | index | R0..R3 | public
 * key | signature, unpadded base64 (306 characters); malloc'd, NULL if out of memory. Share it
 * before encrypting: a receiver can decrypt messages from this index on. */
char *mx_megolm_out_session_key(const mx_megolm_out *o);
/* Encrypts len bytes (at most 2^30) as a version 3 message at the current index (index varint
 * field, ciphertext field, 8-byte MAC, 64-byte signature), unpadded base64, malloc'd; then
 * advances the ratchet. NULL (and no advance) if len is too large or out of memory. */
char *mx_megolm_encrypt(mx_megolm_out *o, const uint8_t *plain, size_t len);
/* The session encrypted under a 32-byte pickle key (format in mx_megolm.c), base64, malloc'd. */
char *mx_megolm_out_pickle(const mx_megolm_out *o, const uint8_t key[32]);
/* Back from mx_megolm_out_pickle; NULL if the key is wrong, the text was changed, or it is not
 * an outbound Megolm pickle. */
mx_megolm_out *mx_megolm_out_unpickle(const char *pickle, const uint8_t key[32]);

/* ---- inbound sessions (others', for decrypting what they send) ---- */

typedef struct mx_megolm_in mx_megolm_in;

/* From the session_key of an m.room_key event: checks the version byte, the length and the
 * Ed25519 signature (by the key it carries). NULL if anything is wrong. */
mx_megolm_in *mx_megolm_in_new(const char *session_key);
/* From a version 1 export (m.forwarded_room_key, backups): no signature, so not verified. */
mx_megolm_in *mx_megolm_in_import(const char *exported);
/* The version 1 export of the ratchet at index (at or after the first known index), unpadded
 * base64, malloc'd; NULL if index is before the first known index or out of memory. */
char *mx_megolm_in_export(const mx_megolm_in *s, uint32_t index);
/* The session id (the sender's Ed25519 public key), 43 characters and a NUL. */
void mx_megolm_in_id(const mx_megolm_in *s, char id[44]);
/* The earliest index this session can decrypt. */
uint32_t mx_megolm_in_first_index(const mx_megolm_in *s);
/* 1 if the session came from a signed session_key (mx_megolm_in_new), 0 if imported. */
int mx_megolm_in_verified(const mx_megolm_in *s);
/* Decrypts a message (unpadded or padded base64). Checks, in this order: base64, version 3,
 * both fields present once, the Ed25519 signature by the session's key, the index at or after
 * the first known index, the MAC, the padding. 0 and *plain (malloc'd, with a NUL after the
 * *plain_len bytes), *plain_len and the message's *index (index may be NULL); or -1, outputs
 * untouched. The session keeps its earliest ratchet: decryption advances copies. It also keeps a
 * private copy of the latest ratchet it reached, so that decrypting messages in order costs one
 * step each instead of a walk from the first index; that copy is never pickled or exported and
 * changes no result. */
int mx_megolm_decrypt(const mx_megolm_in *s, const char *msg, uint8_t **plain, size_t *plain_len, uint32_t *index);
/* As for outbound sessions (different formats: one never unpickles as the other). */
char *mx_megolm_in_pickle(const mx_megolm_in *s, const uint8_t key[32]);
mx_megolm_in *mx_megolm_in_unpickle(const char *pickle, const uint8_t key[32]);
/* Wipes and frees; NULL is fine. */
void mx_megolm_in_free(mx_megolm_in *s);

/* ---- for tests (known values, byte-for-byte comparisons with libolm) ---- */

/* The bare ratchet: data[j] is R_j. */
typedef struct {
    uint8_t data[4][MX_MEGOLM_PART_BYTES];
    uint32_t counter;
} mx_megolm_ratchet;

void mx_megolm_ratchet_init(mx_megolm_ratchet *r, const uint8_t data[MX_MEGOLM_RATCHET_BYTES], uint32_t counter);
/* One step: counter + 1. */
void mx_megolm_ratchet_advance(mx_megolm_ratchet *r);
/* To counter == index, forwards modulo 2^32 (an index below the counter with the same top byte
 * goes all the way round, as libolm's does): each part moves at most 256 times. */
void mx_megolm_ratchet_advance_to(mx_megolm_ratchet *r, uint32_t index);
/* An outbound session from given values: the ratchet bytes at counter, and the Ed25519 key from
 * its 32-byte seed (the same key libolm makes from the same 32 random bytes). */
mx_megolm_out *mx_megolm_out_from(const uint8_t ratchet[MX_MEGOLM_RATCHET_BYTES], uint32_t counter,
                                  const uint8_t ed25519_seed[32]);

#endif
