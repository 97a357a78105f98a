/* mx_olm.h — Olm, the double ratchet Matrix uses for to-device messages
 * (m.olm.v1.curve25519-aes-sha2; the Olm spec, docs/olm.md of matrix-org/olm).
 *
 * Our own implementation on mx_crypto.h; it speaks the same wire format as libolm (which the
 * tests use as the oracle, never at run time):
 *   - messages: version byte 3, then protobuf-style fields (a varint tag whose low 3 bits are the
 *     type: 0 varint, 2 length-prefixed string), then the first 8 bytes of an HMAC-SHA-256 of
 *     everything before it. Normal message: 0x0A ratchet key, 0x10 chain index, 0x22 ciphertext.
 *     Pre-key message (no MAC of its own): 0x0A Bob's one-time key, 0x12 Alice's base key,
 *     0x1A Alice's identity key, 0x22 the embedded normal message. Unknown fields are skipped.
 *   - the ratchet: S = ECDH(I_A,E_B) || ECDH(E_A,I_B) || ECDH(E_A,E_B);
 *     R0 || C0,0 = HKDF(0, S, "OLM_ROOT", 64); Ri || Ci,0 = HKDF(Ri-1, ECDH(Ti-1,Ti), "OLM_RATCHET", 64);
 *     Ci,j+1 = HMAC(Ci,j, 0x02); Mi,j = HMAC(Ci,j, 0x01);
 *     AES key || HMAC key || IV = HKDF(0, Mi,j, "OLM_KEYS", 80); AES-256-CBC with PKCS#7.
 *   - like libolm: up to 40 skipped message keys (newest kept), 5 receiver chains (newest kept),
 *     a message may be at most 2000 steps ahead of its chain, 100 one-time keys, one current and
 *     one previous fallback key.
 *   - where we are stricter or differ from libolm (receiving side only; what we send is
 *     byte-identical): low-order Curve25519 points are refused; varints longer than 10 bytes,
 *     counters over 32 bits and fields of wire types other than 0 and 2 are refused (libolm
 *     truncates or stops reading); a pre-key message must carry its identity key; a pre-key
 *     message given to mx_olm_decrypt must belong to the session (libolm only decrypts the
 *     embedded message); a skipped message key is still used after its receiver chain was
 *     dropped (libolm looks skipped keys up only while the chain is kept).
 *
 * Wire texts (message bodies, keys, signatures, session ids) are unpadded base64.
 *
 * Robustness: every function that takes text from the network or from storage (mx_olm_inbound,
 * mx_olm_session_matches, mx_olm_decrypt, the two unpickle functions) is meant to be a fuzz
 * target: any input, of any length and content, fails cleanly (NULL / 0 / -1) and never reads
 * or writes out of bounds, leaks or crashes. Decrypting never changes the session unless it
 * succeeds. Secrets are wiped (mx_wipe) when freed or replaced; MACs are compared with mx_equal.
 *
 * mx_crypto_init() must have succeeded before any of this is used (the constructors and
 * unpicklers call it again, which is harmless). Objects are not thread-safe; use one per thread
 * or lock around them. */
#ifndef CARDROOM_MX_OLM_H
#define CARDROOM_MX_OLM_H

#include <stddef.h>
#include <stdint.h>

#include "mx_crypto.h"

#define MX_OLM_MAX_OTKS 100          /* one-time keys an account keeps */
#define MX_OLM_MAX_SKIPPED_KEYS 40   /* skipped message keys a session keeps */
#define MX_OLM_MAX_RECEIVER_CHAINS 5 /* receiver chains a session keeps */
#define MX_OLM_MAX_MESSAGE_GAP 2000  /* how far ahead of its chain a message may be */

/* ---------------------------------------------------------------------------------------------
 * Accounts: the identity keys, the one-time keys and the fallback keys of one device.
 * ------------------------------------------------------------------------------------------- */
typedef struct mx_olm_account mx_olm_account;

/* A new account with fresh random Ed25519 and Curve25519 identity keys; NULL if out of memory. */
mx_olm_account *mx_olm_account_new(void);
/* Wipes and frees (NULL is fine). */
void mx_olm_account_free(mx_olm_account *a);
/* The public identity keys, unpadded base64 (43 chars + NUL each). */
void mx_olm_account_identity(const mx_olm_account *a, char curve25519[44], char ed25519[44]);
/* The Ed25519 signature of msg by the account's key, unpadded base64 (86 chars + NUL). */
void mx_olm_account_sign(const mx_olm_account *a, const uint8_t *msg, size_t len, char sig[87]);
/* How many one-time keys the account keeps (MX_OLM_MAX_OTKS, 100). */
size_t mx_olm_account_max_otks(const mx_olm_account *a);
/* Makes n new unpublished one-time keys; beyond the maximum the oldest keys are dropped.
 * 0, or -1 if n > the maximum (nothing is made then) or the key ids ran out. */
int mx_olm_account_generate_otks(mx_olm_account *a, size_t n);
/* {"curve25519":{"AAAAAQ":"<key>",...}} of the unpublished one-time keys, oldest first, key ids as
 * libolm makes them (unpadded base64 of a 32-bit big-endian counter, shared with the fallback
 * keys, starting at 1); {"curve25519":{}} if there are none. Malloc'd; NULL if out of memory. */
char *mx_olm_account_otks_json(const mx_olm_account *a);
/* Marks all one-time keys and the current fallback key as published. */
void mx_olm_account_mark_published(mx_olm_account *a);
/* A new (unpublished) fallback key; the previous one is still accepted until the next call.
 * 0, or -1 if the key ids ran out. */
int mx_olm_account_generate_fallback(mx_olm_account *a);
/* {"curve25519":{"AAAAAQ":"<key>"}} of the current fallback key if it is unpublished, otherwise
 * {} (note: libolm writes {"curve25519":{}} there). Malloc'd; NULL if out of memory. */
char *mx_olm_account_fallback_json(const mx_olm_account *a);

/* Pickles: our own versioned format (see mx_olm.c, "Pickles"): unpadded base64 of
 *   version (1 byte, 1) || kind (1 byte, 'A' account / 'S' session) || nonce (16 random bytes)
 *   || AES-256-CBC(state) || HMAC-SHA-256 (32 bytes) of everything before it,
 * with AES key || HMAC key || IV = HKDF-SHA-256(salt = nonce, key, "cardroom-olm-pickle-v1-<kind>", 80).
 * Unpickle returns NULL on a wrong key, any tampering, truncation, a bad version or kind, or a
 * state that does not make sense. NULL from pickle means out of memory. */
char *mx_olm_account_pickle(const mx_olm_account *a, const uint8_t key[32]);
mx_olm_account *mx_olm_account_unpickle(const char *pickle, const uint8_t key[32]);

/* ---------------------------------------------------------------------------------------------
 * Sessions: one double ratchet between two devices.
 * ------------------------------------------------------------------------------------------- */
typedef struct mx_olm_session mx_olm_session;

/* An outbound session to the device with Curve25519 identity key their_identity, using one of its
 * one-time (or fallback) keys their_otk; both raw 32 bytes. NULL if out of memory or a key is a
 * low-order point. Its messages are pre-key messages (type 0) until it has decrypted a reply. */
mx_olm_session *mx_olm_outbound(const mx_olm_account *a, const uint8_t their_identity[32], const uint8_t their_otk[32]);
/* An inbound session from a pre-key message (type 0; body = unpadded base64 as in m.room.encrypted
 * "ciphertext"[key]["body"]). their_identity may be NULL (not checked) or must match the
 * message's identity key. On success the used one-time key is removed from the account (a
 * fallback key is kept) and the plaintext is returned (malloc'd, *plain_len; the caller wipes and
 * frees it). NULL on any failure (the account is then unchanged). */
mx_olm_session *mx_olm_inbound(mx_olm_account *a, const uint8_t *their_identity, const char *body,
                               uint8_t **plain, size_t *plain_len);
/* 1 if the pre-key message body belongs to this session (same one-time key, base key and
 * identity key), 0 otherwise (including garbage). */
int mx_olm_session_matches(const mx_olm_session *s, const char *body);
/* Encrypts: *type is 0 (pre-key) until the session has decrypted a message, then 1; *body is the
 * malloc'd unpadded base64. 0, or -1 (out of memory, plaintext over 1 GiB; session unchanged). */
int mx_olm_encrypt(mx_olm_session *s, const uint8_t *plain, size_t len, int *type, char **body);
/* Decrypts a message of the given type (0 pre-key, which must belong to this session, or 1).
 * 0 and the plaintext (malloc'd, *plain_len; caller wipes and frees), or -1 (bad MAC, bad format,
 * too far ahead, replay, unknown chain); the session is unchanged on failure. */
int mx_olm_decrypt(mx_olm_session *s, int type, const char *body, uint8_t **plain, size_t *plain_len);
/* The session id as libolm's olm_session_id: unpadded base64 of
 * SHA-256(Alice's identity key || Alice's base key || Bob's one-time key); same at both ends. */
void mx_olm_session_id(const mx_olm_session *s, char id[44]);
char *mx_olm_session_pickle(const mx_olm_session *s, const uint8_t key[32]);
mx_olm_session *mx_olm_session_unpickle(const char *pickle, const uint8_t key[32]);
/* Wipes and frees (NULL is fine). */
void mx_olm_session_free(mx_olm_session *s);

/* ---------------------------------------------------------------------------------------------
 * For tests only. Not for production code.
 * ------------------------------------------------------------------------------------------- */
/* Replaces the randomness used for keys (identity keys, one-time and fallback keys, base and
 * ratchet keys) by fill(ctx, buf, len); NULL restores the OS's. Keys are drawn exactly as libolm
 * draws its "random" buffers (account: 32 bytes Ed25519 seed then 32 bytes Curve25519; one 32-byte
 * block per one-time or fallback key; outbound: base key then ratchet key; a new ratchet key when
 * a reply starts a new chain), so the same bytes give byte-identical keys and messages. Pickle
 * nonces always come from the OS. Process-wide, not thread-safe. */
typedef void (*mx_olm_random_fn)(void *ctx, uint8_t *buf, size_t len);
void mx_olm_test_set_random(mx_olm_random_fn fill, void *ctx);

/* The fields of a normal Olm message (decoder exposed for known-value tests). */
typedef struct {
    uint8_t version;
    const uint8_t *ratchet_key; /* NULL if absent */
    size_t ratchet_key_len;
    int has_counter;
    uint32_t counter;
    const uint8_t *ciphertext; /* NULL if absent */
    size_t ciphertext_len;
} mx_olm_message_fields;
/* Decodes a normal message whose last mac_len bytes are the MAC. 0, or -1 if malformed. */
int mx_olm_test_decode_message(const uint8_t *in, size_t len, size_t mac_len, mx_olm_message_fields *f);
/* Encodes the fields of a normal message (no MAC) into out; returns the length, 0 if cap is too small. */
size_t mx_olm_test_encode_message(uint8_t *out, size_t cap, const uint8_t *ratchet_key, size_t rk_len,
                                  uint32_t counter, const uint8_t *ciphertext, size_t ct_len);
/* The session's whole state serialised (the plaintext of a pickle), to compare states: its length,
 * written into out if cap allows. */
size_t mx_olm_test_session_state(const mx_olm_session *s, uint8_t *out, size_t cap);

#endif
