/* mx_crypto.c — the primitives under Olm and Megolm (see mx_crypto.h). */
#include "mx_crypto.h"

#include <openssl/evp.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

int mx_crypto_init(void) { return sodium_init() < 0 ? -1 : 0; }

void mx_random(void *buf, size_t len) { randombytes_buf(buf, len); }

void mx_wipe(void *buf, size_t len)
{
    if (buf && len) sodium_memzero(buf, len);
}

int mx_equal(const void *a, const void *b, size_t len) { return sodium_memcmp(a, b, len) == 0; }

void mx_sha256(const uint8_t *msg, size_t len, uint8_t out[32]) { crypto_hash_sha256(out, msg, len); }

void mx_hmac_sha256(const uint8_t *key, size_t key_len, const uint8_t *msg, size_t len, uint8_t out[32])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, key_len);
    crypto_auth_hmacsha256_update(&st, msg, len);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof st);
}

int mx_hkdf_sha256(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len, const uint8_t *info,
                   size_t info_len, uint8_t *out, size_t out_len)
{
    static const uint8_t zeros[32];
    uint8_t prk[32], t[32];
    if (out_len > 255 * 32) return -1;
    if (!salt) {
        salt = zeros;
        salt_len = sizeof zeros;
    }
    mx_hmac_sha256(salt, salt_len, ikm, ikm_len, prk); /* extract */
    size_t done = 0, tlen = 0;
    for (uint8_t i = 1; done < out_len; i++) {          /* expand */
        crypto_auth_hmacsha256_state st;
        crypto_auth_hmacsha256_init(&st, prk, sizeof prk);
        crypto_auth_hmacsha256_update(&st, t, tlen);
        crypto_auth_hmacsha256_update(&st, info, info_len);
        crypto_auth_hmacsha256_update(&st, &i, 1);
        crypto_auth_hmacsha256_final(&st, t);
        sodium_memzero(&st, sizeof st);
        tlen = sizeof t;
        size_t n = out_len - done < sizeof t ? out_len - done : sizeof t;
        memcpy(out + done, t, n);
        done += n;
    }
    sodium_memzero(prk, sizeof prk);
    sodium_memzero(t, sizeof t);
    return 0;
}

static long aes_cbc(int enc, const uint8_t key[32], const uint8_t iv[16], const uint8_t *in, size_t len, uint8_t *out)
{
    if (len > (size_t)1 << 30 || (!enc && (len == 0 || len % 16))) return -1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n1 = 0, n2 = 0;
    long rc = -1;
    if (ctx && EVP_CipherInit_ex(ctx, EVP_aes_256_cbc(), NULL, key, iv, enc) == 1 &&
        EVP_CipherUpdate(ctx, out, &n1, in, (int)len) == 1 && EVP_CipherFinal_ex(ctx, out + n1, &n2) == 1)
        rc = (long)n1 + n2;
    EVP_CIPHER_CTX_free(ctx); /* wipes the key schedule */
    return rc;
}

long mx_aes256_cbc_encrypt(const uint8_t key[32], const uint8_t iv[16], const uint8_t *in, size_t len, uint8_t *out)
{
    return aes_cbc(1, key, iv, in, len, out);
}

long mx_aes256_cbc_decrypt(const uint8_t key[32], const uint8_t iv[16], const uint8_t *in, size_t len, uint8_t *out)
{
    /* OpenSSL writes up to len + 16 bytes during decryption; keep the caller's promise of len */
    if (len > (size_t)1 << 30) return -1;
    uint8_t *tmp = sodium_malloc(len + 16);
    if (!tmp) return -1;
    long n = aes_cbc(0, key, iv, in, len, tmp);
    if (n >= 0) memcpy(out, tmp, (size_t)n);
    sodium_free(tmp); /* wiped */
    return n;
}

void mx_curve25519_generate(uint8_t priv[32], uint8_t pub[32])
{
    randombytes_buf(priv, 32);
    crypto_scalarmult_base(pub, priv);
}

int mx_curve25519_public(const uint8_t priv[32], uint8_t pub[32]) { return crypto_scalarmult_base(pub, priv) == 0 ? 0 : -1; }

int mx_curve25519_shared(const uint8_t priv[32], const uint8_t pub[32], uint8_t out[32])
{
    return crypto_scalarmult(out, priv, pub) == 0 ? 0 : -1;
}

void mx_ed25519_generate(uint8_t pub[32], uint8_t secret[MX_ED_SECRET_BYTES]) { crypto_sign_keypair(pub, secret); }

void mx_ed25519_from_seed(const uint8_t seed[32], uint8_t pub[32], uint8_t secret[MX_ED_SECRET_BYTES])
{
    crypto_sign_seed_keypair(pub, secret, seed);
}

void mx_ed25519_sign(const uint8_t secret[MX_ED_SECRET_BYTES], const uint8_t *msg, size_t len, uint8_t sig[64])
{
    crypto_sign_detached(sig, NULL, msg, len, secret);
}

int mx_ed25519_verify(const uint8_t pub[32], const uint8_t *msg, size_t len, const uint8_t sig[64])
{
    return crypto_sign_verify_detached(sig, msg, len, pub) == 0;
}

size_t mx_b64_len(size_t len) { return len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0); }

size_t mx_b64_encode(const uint8_t *in, size_t len, char *out, size_t outlen)
{
    size_t need = mx_b64_len(len);
    if (outlen < need + 1) return 0;
    /* libsodium's buffer size includes room for padding */
    size_t full = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
    if (outlen >= full) {
        sodium_bin2base64(out, outlen, in, len, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
        return need;
    }
    char *tmp = malloc(full);
    if (!tmp) return 0;
    sodium_bin2base64(tmp, full, in, len, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
    memcpy(out, tmp, need + 1);
    free(tmp);
    return need;
}

long mx_b64_decode(const char *in, size_t len, uint8_t *out, size_t outlen)
{
    size_t n = len;
    while (n > 0 && in[n - 1] == '=') n--;
    if (len - n > 2 || n % 4 == 1) return -1;
    size_t got = 0;
    const char *end = NULL;
    if (sodium_base642bin(out, outlen, in, n, NULL, &got, &end, sodium_base64_VARIANT_ORIGINAL_NO_PADDING) != 0 ||
        end != in + n)
        return -1;
    return (long)got;
}

char *mx_b64_alloc(const uint8_t *in, size_t len)
{
    size_t n = mx_b64_len(len) + 1;
    char *out = malloc(n);
    if (out && mx_b64_encode(in, len, out, n) == 0 && len) {
        free(out);
        return NULL;
    }
    return out;
}

uint8_t *mx_unb64_alloc(const char *text, size_t *len)
{
    if (!text) return NULL;
    size_t n = strlen(text);
    uint8_t *buf = malloc(n / 4 * 3 + 3);
    long got = buf ? mx_b64_decode(text, n, buf, n / 4 * 3 + 3) : -1;
    if (got < 0) {
        free(buf);
        return NULL;
    }
    *len = (size_t)got;
    return buf;
}

/* The sealing keys: AES key, HMAC key and IV from HKDF(salt = nonce, key, label). */
#define SEAL_NONCE 16
#define SEAL_MAC 32

static void seal_keys(const uint8_t key[32], const char *label, const uint8_t nonce[SEAL_NONCE], uint8_t k[80])
{
    mx_hkdf_sha256(nonce, SEAL_NONCE, key, 32, (const uint8_t *)label, strlen(label), k, 80);
}

char *mx_seal(const uint8_t key[32], const char *label, const uint8_t *plain, size_t len)
{
    uint8_t k[80];
    size_t total = SEAL_NONCE + len / 16 * 16 + 16 + SEAL_MAC;
    uint8_t *buf = malloc(total);
    char *out = NULL;
    if (!buf) return NULL;
    mx_random(buf, SEAL_NONCE);
    seal_keys(key, label, buf, k);
    long n = mx_aes256_cbc_encrypt(k, k + 64, plain, len, buf + SEAL_NONCE);
    if (n == (long)(total - SEAL_NONCE - SEAL_MAC)) {
        mx_hmac_sha256(k + 32, 32, buf, total - SEAL_MAC, buf + total - SEAL_MAC);
        out = mx_b64_alloc(buf, total);
    }
    mx_wipe(k, sizeof k);
    free(buf); /* encrypted */
    return out;
}

long mx_unseal(const uint8_t key[32], const char *label, const char *text, uint8_t *out, size_t cap)
{
    size_t n = 0;
    uint8_t *buf = mx_unb64_alloc(text, &n), k[80], mac[32];
    long got = -1;
    if (!buf || n < SEAL_NONCE + 16 + SEAL_MAC || (n - SEAL_NONCE - SEAL_MAC) % 16) {
        free(buf);
        return -1;
    }
    uint8_t *plain = malloc(n);
    seal_keys(key, label, buf, k);
    mx_hmac_sha256(k + 32, 32, buf, n - SEAL_MAC, mac);
    if (plain && mx_equal(mac, buf + n - SEAL_MAC, SEAL_MAC))
        got = mx_aes256_cbc_decrypt(k, k + 64, buf + SEAL_NONCE, n - SEAL_NONCE - SEAL_MAC, plain);
    if (got >= 0 && (size_t)got <= cap) memcpy(out, plain, (size_t)got);
    else got = -1;
    if (plain) mx_wipe(plain, n);
    mx_wipe(k, sizeof k);
    free(plain);
    free(buf);
    return got;
}

size_t mx_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

uint8_t *mx_varint_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

char *mx_canonical_json(const json_t *v)
{
    return v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
}
