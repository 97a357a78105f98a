/* mx_megolm.c — Megolm group sessions (see mx_megolm.h for the protocol and the formats).
 *
 * Pickles (our own format, version 1). The text is the unpadded base64 of
 *   'M' 'G' 0x01 kind | nonce (16 random bytes) | AES-256-CBC(body) | HMAC-SHA-256 (32 bytes)
 * where kind is 'O' (outbound) or 'I' (inbound), the MAC covers everything before it, and
 *   AES key (32) | HMAC key (32) | IV (16) = HKDF-SHA-256(salt nonce, the 32-byte pickle key,
 *                                            "cardroom megolm pickle", 80).
 * The body (PKCS#7 padded) is
 *   outbound: counter (4 bytes, big-endian) | R0..R3 | Ed25519 seed (32)          164 bytes
 *   inbound:  first counter (4 bytes, big-endian) | R0..R3 | Ed25519 public key (32) |
 *             verified (one byte, 0 or 1)                                         165 bytes
 * Reading checks the length and the header, then the MAC (constant time) before anything is
 * decrypted, then the padding, the exact body length and the fields. A fresh nonce per pickle means equal states never give equal
 * ciphertexts and no two pickles share an AES key and IV. Only the earliest ratchet of an
 * inbound session is kept; the cache of the latest one (mx_megolm_decrypt) is not. */
#include "mx_megolm.h"

#include <stdlib.h>
#include <string.h>

#define VERSION_MESSAGE 3
#define VERSION_SESSION_KEY 2
#define VERSION_EXPORT 1
#define TAG_INDEX 0x08
#define TAG_CIPHERTEXT 0x12
#define MAC_BYTES 8
#define MAX_PLAIN ((size_t)1 << 30)   /* mx_aes256_cbc_* refuse more */
#define MAX_MESSAGE_TEXT ((size_t)1 << 28)
#define KEYS_INFO "MEGOLM_KEYS"

#define PICKLE_VERSION 1
#define PICKLE_INFO "cardroom megolm pickle"
#define PICKLE_HEAD 4
#define PICKLE_NONCE 16
#define PICKLE_MAC 32
#define PICKLE_OUT_BODY (4 + MX_MEGOLM_RATCHET_BYTES + 32)
#define PICKLE_IN_BODY (4 + MX_MEGOLM_RATCHET_BYTES + 32 + 1)
#define PICKLE_CT_MAX 176 /* both bodies pad to 176 bytes */
#define PICKLE_RAW_MAX (PICKLE_HEAD + PICKLE_NONCE + PICKLE_CT_MAX + PICKLE_MAC)

struct mx_megolm_out {
    mx_megolm_ratchet r;
    uint8_t pub[32];
    uint8_t sec[MX_ED_SECRET_BYTES]; /* seed || public key */
};

/* The latest ratchet a decryption reached (a copy ahead of first; see mx_megolm_decrypt). It is
 * reached through a pointer so that readers taking the session const may update it. */
typedef struct {
    mx_megolm_ratchet latest;
    int has_latest;
} in_cache;

struct mx_megolm_in {
    mx_megolm_ratchet first; /* the earliest ratchet we know: counter = first index */
    uint8_t pub[32];
    int verified;
    in_cache *cache; /* points into the same allocation (in_block) */
};

typedef struct {
    mx_megolm_in s; /* first: a session pointer is the block's */
    in_cache c;
} in_block;

/* ---- the ratchet ---- */

/* R_to = H_to(R_from) = HMAC-SHA-256(key R_from, the byte `to`). from == to is fine: the key is
 * absorbed before the output is written. */
static void rehash(mx_megolm_ratchet *r, int from, int to)
{
    const uint8_t seed = (uint8_t)to;
    mx_hmac_sha256(r->data[from], MX_MEGOLM_PART_BYTES, &seed, 1, r->data[to]);
}

void mx_megolm_ratchet_init(mx_megolm_ratchet *r, const uint8_t data[MX_MEGOLM_RATCHET_BYTES], uint32_t counter)
{
    memcpy(r->data, data, MX_MEGOLM_RATCHET_BYTES);
    r->counter = counter;
}

void mx_megolm_ratchet_advance(mx_megolm_ratchet *r)
{
    r->counter++;
    /* h: the highest part to reseed from: 0 when the low 24 bits wrapped, 1 for 16, 2 for 8 */
    int h = 3;
    if ((r->counter & 0x00FFFFFFu) == 0) h = 0;
    else if ((r->counter & 0x0000FFFFu) == 0) h = 1;
    else if ((r->counter & 0x000000FFu) == 0) h = 2;
    for (int k = 3; k >= h; k--) rehash(r, h, k); /* R_h itself last */
}

void mx_megolm_ratchet_advance_to(mx_megolm_ratchet *r, uint32_t index)
{
    for (int j = 0; j < 4; j++) {
        int shift = (3 - j) * 8;
        /* how far part j moves: the difference in its byte of the counter (modulo 256, so a
         * wrap of the lower bytes is counted right) */
        unsigned steps = ((index >> shift) - (r->counter >> shift)) & 0xFFu;
        if (steps == 0) {
            /* Same byte but index below the counter: only possible for R0 (the lower parts
             * start from index's upper bytes), and it means all the way round 2^32. */
            if (index >= r->counter) continue;
            steps = 0x100;
        }
        /* all but the last step only move R_j; the last also reseeds R_j+1..R_3 */
        for (; steps > 1; steps--) rehash(r, j, j);
        for (int k = 3; k >= j; k--) rehash(r, j, k);
        r->counter = index & (~(uint32_t)0 << shift);
    }
}

/* AES key | HMAC key | IV for the message at the ratchet's counter. */
static void message_keys(const mx_megolm_ratchet *r, uint8_t keys[80])
{
    mx_hkdf_sha256(NULL, 0, &r->data[0][0], MX_MEGOLM_RATCHET_BYTES, (const uint8_t *)KEYS_INFO,
                   sizeof KEYS_INFO - 1, keys, 80);
}

/* ---- small helpers ---- */

/* A varint of at most 32 bits (at most 5 bytes, the fifth at most 0x0F) from [*p, end);
 * -1 if it runs off the end or is too large. */
static int varint_get32(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (*p >= end) return -1;
        uint8_t b = *(*p)++;
        if (i == 4 && b > 0x0F) return -1;
        v |= (uint32_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* Skips a varint of up to 10 bytes (any 64-bit value). */
static int varint_skip(const uint8_t **p, const uint8_t *end)
{
    for (int i = 0; i < 10; i++) {
        if (*p >= end) return -1;
        if (!(*(*p)++ & 0x80)) return 0;
    }
    return -1;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* strlen(s), or max + 1 if s is longer than max (reads at most max + 1 characters). */
static size_t bounded_len(const char *s, size_t max)
{
    size_t n = 0;
    while (n <= max && s[n]) n++;
    return n;
}

/* Decodes text of at most max_text characters into out (outlen bytes); the byte count, or -1. */
static long unb64(const char *text, size_t max_text, uint8_t *out, size_t outlen)
{
    if (!text) return -1;
    size_t n = bounded_len(text, max_text);
    if (n > max_text) return -1;
    return mx_b64_decode(text, n, out, outlen);
}

/* Is index at or after first (modulo 2^32, as libolm)? */
static int at_or_after(uint32_t index, uint32_t first) { return (uint32_t)(index - first) < 0x80000000u; }

/* ---- outbound ---- */

static mx_megolm_out *out_alloc(void)
{
    mx_megolm_out *o = malloc(sizeof *o);
    if (o) memset(o, 0, sizeof *o);
    return o;
}

mx_megolm_out *mx_megolm_out_new(void)
{
    mx_megolm_out *o = out_alloc();
    if (!o) return NULL;
    mx_random(o->r.data, MX_MEGOLM_RATCHET_BYTES);
    o->r.counter = 0;
    mx_ed25519_generate(o->pub, o->sec);
    return o;
}

mx_megolm_out *mx_megolm_out_from(const uint8_t ratchet[MX_MEGOLM_RATCHET_BYTES], uint32_t counter,
                                  const uint8_t ed25519_seed[32])
{
    mx_megolm_out *o = out_alloc();
    if (!o) return NULL;
    mx_megolm_ratchet_init(&o->r, ratchet, counter);
    mx_ed25519_from_seed(ed25519_seed, o->pub, o->sec);
    return o;
}

void mx_megolm_out_free(mx_megolm_out *o)
{
    if (!o) return;
    mx_wipe(o, sizeof *o);
    free(o);
}

void mx_megolm_out_id(const mx_megolm_out *o, char id[44]) { mx_b64_encode(o->pub, 32, id, 44); }

uint32_t mx_megolm_out_index(const mx_megolm_out *o) { return o->r.counter; }

char *mx_megolm_out_session_key(const mx_megolm_out *o)
{
    uint8_t raw[MX_MEGOLM_SESSION_KEY_BYTES];
    raw[0] = VERSION_SESSION_KEY;
    put_be32(raw + 1, o->r.counter);
    memcpy(raw + 5, o->r.data, MX_MEGOLM_RATCHET_BYTES);
    memcpy(raw + 133, o->pub, 32);
    mx_ed25519_sign(o->sec, raw, 165, raw + 165);
    char *s = mx_b64_alloc(raw, sizeof raw);
    mx_wipe(raw, sizeof raw);
    return s;
}

char *mx_megolm_encrypt(mx_megolm_out *o, const uint8_t *plain, size_t len)
{
    if (!o || (!plain && len) || len > MAX_PLAIN) return NULL;
    size_t ct_len = len / 16 * 16 + 16;
    size_t head = 1 + 1 + mx_varint_len(o->r.counter) + 1 + mx_varint_len(ct_len);
    size_t raw_len = head + ct_len + MAC_BYTES + MX_SIG_BYTES;
    uint8_t *raw = malloc(raw_len);
    char *text = malloc(mx_b64_len(raw_len) + 1);
    if (!raw || !text) {
        free(raw);
        free(text);
        return NULL;
    }
    uint8_t *p = raw;
    *p++ = VERSION_MESSAGE;
    *p++ = TAG_INDEX;
    p = mx_varint_put(p, o->r.counter);
    *p++ = TAG_CIPHERTEXT;
    p = mx_varint_put(p, ct_len);

    uint8_t keys[80], mac[32];
    message_keys(&o->r, keys);
    long n = mx_aes256_cbc_encrypt(keys, keys + 64, plain ? plain : (const uint8_t *)"", len, p);
    if (n != (long)ct_len) {
        mx_wipe(keys, sizeof keys);
        free(raw);
        free(text);
        return NULL;
    }
    p += ct_len;
    mx_hmac_sha256(keys + 32, 32, raw, (size_t)(p - raw), mac);
    memcpy(p, mac, MAC_BYTES);
    p += MAC_BYTES;
    mx_ed25519_sign(o->sec, raw, (size_t)(p - raw), p);
    mx_wipe(keys, sizeof keys);
    mx_wipe(mac, sizeof mac);

    mx_b64_encode(raw, raw_len, text, mx_b64_len(raw_len) + 1);
    free(raw); /* ciphertext only: nothing secret */
    mx_megolm_ratchet_advance(&o->r);
    return text;
}

/* ---- inbound ---- */

/* A session with the first ratchet, the public key and the flag; NULL if out of memory. */
static mx_megolm_in *in_make(const uint8_t ratchet[MX_MEGOLM_RATCHET_BYTES], uint32_t counter, const uint8_t pub[32],
                             int verified)
{
    in_block *b = malloc(sizeof *b);
    if (!b) return NULL;
    memset(b, 0, sizeof *b);
    mx_megolm_ratchet_init(&b->s.first, ratchet, counter);
    memcpy(b->s.pub, pub, 32);
    b->s.verified = verified;
    b->s.cache = &b->c;
    return &b->s;
}

/* From a decoded session key (signed) or export (not). */
static mx_megolm_in *in_from_raw(const uint8_t *raw, int signed_key)
{
    return in_make(raw + 5, get_be32(raw + 1), raw + 133, signed_key);
}

mx_megolm_in *mx_megolm_in_new(const char *session_key)
{
    uint8_t raw[MX_MEGOLM_SESSION_KEY_BYTES + 8];
    long n = unb64(session_key, 400, raw, sizeof raw);
    mx_megolm_in *s = NULL;
    if (n == MX_MEGOLM_SESSION_KEY_BYTES && raw[0] == VERSION_SESSION_KEY &&
        mx_ed25519_verify(raw + 133, raw, 165, raw + 165))
        s = in_from_raw(raw, 1);
    mx_wipe(raw, sizeof raw);
    return s;
}

mx_megolm_in *mx_megolm_in_import(const char *exported)
{
    uint8_t raw[MX_MEGOLM_EXPORT_BYTES + 8];
    long n = unb64(exported, 300, raw, sizeof raw);
    mx_megolm_in *s = NULL;
    if (n == MX_MEGOLM_EXPORT_BYTES && raw[0] == VERSION_EXPORT) s = in_from_raw(raw, 0);
    mx_wipe(raw, sizeof raw);
    return s;
}

void mx_megolm_in_free(mx_megolm_in *s)
{
    if (!s) return;
    in_block *b = (in_block *)s;
    mx_wipe(b, sizeof *b);
    free(b);
}

void mx_megolm_in_id(const mx_megolm_in *s, char id[44]) { mx_b64_encode(s->pub, 32, id, 44); }

uint32_t mx_megolm_in_first_index(const mx_megolm_in *s) { return s->first.counter; }

int mx_megolm_in_verified(const mx_megolm_in *s) { return s->verified; }

/* The ratchet at index (at or after the first index) into *r: from the cached latest ratchet
 * when index is at or after it, else from the first. */
static void ratchet_at(const mx_megolm_in *s, uint32_t index, mx_megolm_ratchet *r)
{
    uint32_t first = s->first.counter;
    const in_cache *c = s->cache;
    if (c->has_latest && (uint32_t)(c->latest.counter - first) <= (uint32_t)(index - first))
        *r = c->latest;
    else
        *r = s->first;
    mx_megolm_ratchet_advance_to(r, index);
}

char *mx_megolm_in_export(const mx_megolm_in *s, uint32_t index)
{
    if (!s || !at_or_after(index, s->first.counter)) return NULL;
    uint8_t raw[MX_MEGOLM_EXPORT_BYTES];
    mx_megolm_ratchet r;
    ratchet_at(s, index, &r);
    raw[0] = VERSION_EXPORT;
    put_be32(raw + 1, index);
    memcpy(raw + 5, r.data, MX_MEGOLM_RATCHET_BYTES);
    memcpy(raw + 133, s->pub, 32);
    char *text = mx_b64_alloc(raw, sizeof raw);
    mx_wipe(&r, sizeof r);
    mx_wipe(raw, sizeof raw);
    return text;
}

/* The fields of a decoded version 3 message's payload [p, end): each of the two known fields
 * exactly once, other fields (varint or length-delimited) skipped as libolm does. */
static int parse_payload(const uint8_t *p, const uint8_t *end, uint32_t *index, const uint8_t **ct, size_t *ct_len)
{
    int has_index = 0, has_ct = 0;
    while (p < end) {
        uint32_t tag, v;
        if (varint_get32(&p, end, &tag) < 0) return -1;
        if (tag == TAG_INDEX) {
            if (has_index || varint_get32(&p, end, index) < 0) return -1;
            has_index = 1;
        } else if (tag == TAG_CIPHERTEXT) {
            if (has_ct || varint_get32(&p, end, &v) < 0 || v > (size_t)(end - p)) return -1;
            *ct = p;
            *ct_len = v;
            p += v;
            has_ct = 1;
        } else if ((tag & 7) == 0) {
            if (varint_skip(&p, end) < 0) return -1;
        } else if ((tag & 7) == 2) {
            if (varint_get32(&p, end, &v) < 0 || v > (size_t)(end - p)) return -1;
            p += v;
        } else {
            return -1;
        }
    }
    return has_index && has_ct ? 0 : -1;
}

int mx_megolm_decrypt(const mx_megolm_in *s, const char *msg, uint8_t **plain, size_t *plain_len, uint32_t *index)
{
    if (!s || !msg || !plain || !plain_len) return -1;
    size_t text_len = bounded_len(msg, MAX_MESSAGE_TEXT);
    if (text_len > MAX_MESSAGE_TEXT) return -1;
    size_t cap = text_len / 4 * 3 + 3;
    uint8_t *raw = malloc(cap);
    if (!raw) return -1;
    int rc = -1;
    uint8_t *out = NULL;
    uint8_t keys[80], mac[32];
    mx_megolm_ratchet r;
    long n = mx_b64_decode(msg, text_len, raw, cap);
    if (n < 1 + MAC_BYTES + MX_SIG_BYTES || raw[0] != VERSION_MESSAGE) goto done;
    size_t raw_len = (size_t)n, signed_len = raw_len - MX_SIG_BYTES, mac_at = signed_len - MAC_BYTES;

    uint32_t idx = 0;
    const uint8_t *ct = NULL;
    size_t ct_len = 0;
    if (parse_payload(raw + 1, raw + mac_at, &idx, &ct, &ct_len) < 0) goto done;
    if (ct_len == 0 || ct_len % 16) goto done;
    if (!mx_ed25519_verify(s->pub, raw, signed_len, raw + signed_len)) goto done;
    if (!at_or_after(idx, s->first.counter)) goto done;

    ratchet_at(s, idx, &r);
    message_keys(&r, keys);
    mx_hmac_sha256(keys + 32, 32, raw, mac_at, mac);
    if (!mx_equal(mac, raw + mac_at, MAC_BYTES)) goto wipe;
    out = malloc(ct_len + 1);
    if (!out) goto wipe;
    long got = mx_aes256_cbc_decrypt(keys, keys + 64, ct, ct_len, out);
    if (got < 0) {
        free(out);
        goto wipe;
    }
    out[got] = 0;
    *plain = out;
    *plain_len = (size_t)got;
    if (index) *index = idx;
    rc = 0;
    /* Remember how far we got: the next message in order is one step from here. The cache is
     * not part of the session's state (never pickled or exported); only ratchet_at reads it. */
    {
        in_cache *c = s->cache;
        uint32_t first = s->first.counter;
        if (!c->has_latest || (uint32_t)(c->latest.counter - first) < (uint32_t)(idx - first)) {
            c->latest = r;
            c->has_latest = 1;
        }
    }
wipe:
    mx_wipe(&r, sizeof r);
    mx_wipe(keys, sizeof keys);
    mx_wipe(mac, sizeof mac);
done:
    free(raw);
    return rc;
}

/* ---- pickles ---- */

static void pickle_keys(const uint8_t key[32], const uint8_t nonce[PICKLE_NONCE], uint8_t keys[80])
{
    mx_hkdf_sha256(nonce, PICKLE_NONCE, key, 32, (const uint8_t *)PICKLE_INFO, sizeof PICKLE_INFO - 1, keys, 80);
}

static char *pickle(char kind, const uint8_t *body, size_t body_len, const uint8_t key[32])
{
    if (!key) return NULL;
    uint8_t raw[PICKLE_RAW_MAX], keys[80];
    uint8_t *p = raw;
    *p++ = 'M';
    *p++ = 'G';
    *p++ = PICKLE_VERSION;
    *p++ = (uint8_t)kind;
    mx_random(p, PICKLE_NONCE);
    pickle_keys(key, p, keys);
    p += PICKLE_NONCE;
    long n = mx_aes256_cbc_encrypt(keys, keys + 64, body, body_len, p);
    char *text = NULL;
    if (n == PICKLE_CT_MAX) {
        p += n;
        mx_hmac_sha256(keys + 32, 32, raw, (size_t)(p - raw), p);
        p += PICKLE_MAC;
        text = mx_b64_alloc(raw, (size_t)(p - raw));
    }
    mx_wipe(keys, sizeof keys);
    mx_wipe(raw, sizeof raw);
    return text;
}

/* The body of a pickle of kind into body (PICKLE_CT_MAX bytes); its length, or -1. */
static long unpickle(char kind, const char *text, const uint8_t key[32], uint8_t body[PICKLE_CT_MAX])
{
    if (!key) return -1;
    uint8_t raw[PICKLE_RAW_MAX + 4], keys[80], mac[32];
    long n = unb64(text, 400, raw, sizeof raw);
    long got = -1;
    if (n != PICKLE_RAW_MAX || raw[0] != 'M' || raw[1] != 'G' || raw[2] != PICKLE_VERSION || raw[3] != (uint8_t)kind)
        goto out;
    pickle_keys(key, raw + PICKLE_HEAD, keys);
    mx_hmac_sha256(keys + 32, 32, raw, PICKLE_RAW_MAX - PICKLE_MAC, mac);
    if (!mx_equal(mac, raw + PICKLE_RAW_MAX - PICKLE_MAC, 32)) goto out;
    got = mx_aes256_cbc_decrypt(keys, keys + 64, raw + PICKLE_HEAD + PICKLE_NONCE, PICKLE_CT_MAX, body);
out:
    mx_wipe(keys, sizeof keys);
    mx_wipe(mac, sizeof mac);
    mx_wipe(raw, sizeof raw);
    return got;
}

char *mx_megolm_out_pickle(const mx_megolm_out *o, const uint8_t key[32])
{
    if (!o) return NULL;
    uint8_t body[PICKLE_OUT_BODY];
    put_be32(body, o->r.counter);
    memcpy(body + 4, o->r.data, MX_MEGOLM_RATCHET_BYTES);
    memcpy(body + 4 + MX_MEGOLM_RATCHET_BYTES, o->sec, 32); /* the seed */
    char *text = pickle('O', body, sizeof body, key);
    mx_wipe(body, sizeof body);
    return text;
}

mx_megolm_out *mx_megolm_out_unpickle(const char *text, const uint8_t key[32])
{
    uint8_t body[PICKLE_CT_MAX];
    mx_megolm_out *o = NULL;
    if (unpickle('O', text, key, body) == PICKLE_OUT_BODY)
        o = mx_megolm_out_from(body + 4, get_be32(body), body + 4 + MX_MEGOLM_RATCHET_BYTES);
    mx_wipe(body, sizeof body);
    return o;
}

char *mx_megolm_in_pickle(const mx_megolm_in *s, const uint8_t key[32])
{
    if (!s) return NULL;
    uint8_t body[PICKLE_IN_BODY];
    put_be32(body, s->first.counter);
    memcpy(body + 4, s->first.data, MX_MEGOLM_RATCHET_BYTES);
    memcpy(body + 4 + MX_MEGOLM_RATCHET_BYTES, s->pub, 32);
    body[PICKLE_IN_BODY - 1] = (uint8_t)(s->verified ? 1 : 0);
    char *text = pickle('I', body, sizeof body, key);
    mx_wipe(body, sizeof body);
    return text;
}

mx_megolm_in *mx_megolm_in_unpickle(const char *text, const uint8_t key[32])
{
    uint8_t body[PICKLE_CT_MAX];
    mx_megolm_in *s = NULL;
    if (unpickle('I', text, key, body) == PICKLE_IN_BODY && body[PICKLE_IN_BODY - 1] <= 1)
        s = in_make(body + 4, get_be32(body), body + 4 + MX_MEGOLM_RATCHET_BYTES, body[PICKLE_IN_BODY - 1]);
    mx_wipe(body, sizeof body);
    return s;
}
