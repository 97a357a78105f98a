/* mx_crypto.h — the primitives under Olm and Megolm (design.md, Matrix: end-to-end encryption).
 *
 * libsodium gives X25519, Ed25519, HMAC-SHA-256 and SHA-256; HKDF-SHA-256 (RFC 5869) is built
 * here on its HMAC (Debian 12's libsodium 1.0.18 has no HKDF); OpenSSL's libcrypto gives
 * AES-256-CBC and nothing else. Keys are plain byte arrays the caller owns and wipes
 * (mx_wipe). Base64 is the Matrix "unpadded base64" (standard alphabet, no '='); decoding also
 * takes padded input, as the spec asks of receivers. */
#ifndef CARDROOM_MX_CRYPTO_H
#define CARDROOM_MX_CRYPTO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define MX_KEY_BYTES 32        /* Curve25519 and Ed25519 public keys, HMAC/SHA-256 output */
#define MX_ED_SECRET_BYTES 64  /* an Ed25519 secret key: seed || public key (libsodium's form) */
#define MX_SIG_BYTES 64
#define MX_AES_IV_BYTES 16

/* Must be called once before anything else (sodium_init). Returns 0 or -1. */
int mx_crypto_init(void);

/* Fills buf with random bytes from the OS. */
void mx_random(void *buf, size_t len);
/* Wipes secret material. */
void mx_wipe(void *buf, size_t len);
/* Compares in constant time: 1 if equal. */
int mx_equal(const void *a, const void *b, size_t len);

void mx_sha256(const uint8_t *msg, size_t len, uint8_t out[32]);
void mx_hmac_sha256(const uint8_t *key, size_t key_len, const uint8_t *msg, size_t len, uint8_t out[32]);
/* HKDF-SHA-256, RFC 5869: out_len <= 255 * 32. salt may be NULL (then 32 zero bytes). Returns 0
 * or -1 (out_len too large). */
int mx_hkdf_sha256(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len, const uint8_t *info,
                   size_t info_len, uint8_t *out, size_t out_len);

/* AES-256-CBC with PKCS#7 padding. Encrypt writes len/16*16+16 bytes into out; decrypt at most
 * len bytes. Return the output length, or -1 (bad padding, bad length, libcrypto failure). */
long mx_aes256_cbc_encrypt(const uint8_t key[32], const uint8_t iv[16], const uint8_t *in, size_t len, uint8_t *out);
long mx_aes256_cbc_decrypt(const uint8_t key[32], const uint8_t iv[16], const uint8_t *in, size_t len, uint8_t *out);

/* X25519. A private key is any 32 random bytes (clamped when used). */
void mx_curve25519_generate(uint8_t priv[32], uint8_t pub[32]);
int mx_curve25519_public(const uint8_t priv[32], uint8_t pub[32]);
/* The shared secret; -1 if pub is a low-order point (all-zero result). */
int mx_curve25519_shared(const uint8_t priv[32], const uint8_t pub[32], uint8_t out[32]);

/* Ed25519 (libsodium): secret = seed || public. */
void mx_ed25519_generate(uint8_t pub[32], uint8_t secret[MX_ED_SECRET_BYTES]);
void mx_ed25519_from_seed(const uint8_t seed[32], uint8_t pub[32], uint8_t secret[MX_ED_SECRET_BYTES]);
void mx_ed25519_sign(const uint8_t secret[MX_ED_SECRET_BYTES], const uint8_t *msg, size_t len, uint8_t sig[64]);
/* 1 if sig is a valid signature of msg by pub. */
int mx_ed25519_verify(const uint8_t pub[32], const uint8_t *msg, size_t len, const uint8_t sig[64]);

/* Unpadded base64: writes the text and a NUL into out (outlen >= mx_b64_len(len) + 1) and
 * returns its length, or 0 if out is too small. */
size_t mx_b64_len(size_t len);
size_t mx_b64_encode(const uint8_t *in, size_t len, char *out, size_t outlen);
/* Decodes base64 (with or without '=' padding; no blanks). Returns the number of bytes, or -1
 * if the text is not base64 or out is too small. */
long mx_b64_decode(const char *in, size_t len, uint8_t *out, size_t outlen);

/* Base64 of len bytes, malloc'd (NULL: out of memory); and the bytes of base64 text, malloc'd,
 * their count in *len (NULL: not base64). */
char *mx_b64_alloc(const uint8_t *in, size_t len);
uint8_t *mx_unb64_alloc(const char *text, size_t *len);

/* Secrets kept in the store: base64(nonce || AES-256-CBC || HMAC-SHA-256), the keys from
 * HKDF-SHA-256(salt = the random 16-byte nonce, the 32-byte store key, label). A label per kind
 * of secret keeps one kind from being taken for another. mx_seal returns the text (malloc'd);
 * mx_unseal writes the secret into out and returns its length, or -1 if the text was not
 * sealed with this key and label (or the secret is longer than cap). */
char *mx_seal(const uint8_t key[32], const char *label, const uint8_t *plain, size_t len);
long mx_unseal(const uint8_t key[32], const char *label, const char *text, uint8_t *out, size_t cap);

/* Protobuf-style varints (the Olm and Megolm message formats): the length of v, and v written
 * at p (returns the byte after it). */
size_t mx_varint_len(uint64_t v);
uint8_t *mx_varint_put(uint8_t *p, uint64_t v);

/* The canonical JSON of v (Matrix appendices, "Canonical JSON": keys sorted, no blanks, UTF-8
 * unescaped), malloc'd; NULL on failure. */
char *mx_canonical_json(const json_t *v);

#endif
