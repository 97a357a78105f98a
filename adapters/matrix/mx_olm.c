/* mx_olm.c — Olm (see mx_olm.h): accounts, the double ratchet, the message formats, pickles.
 *
 * Layout of this file: randomness, the message codec, the ratchet primitives, accounts, sessions
 * (outbound, inbound, encrypt, decrypt), pickles, test hooks.
 *
 * Every parser here reads through bounds-checked helpers; every secret on the stack or heap is
 * wiped before it goes out of scope. Decryption runs on a copy of the session and is copied back
 * only when it succeeds, so a failure never changes the session. */
#include "mx_olm.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define KEY 32
#define MAC_LEN 8                          /* Olm v1 truncates its HMAC-SHA-256 to 8 bytes */
#define OLM_VERSION 3
#define MAX_PLAIN (((size_t)1 << 30) - 32) /* mx_aes256_cbc_* refuse more than 1 GiB */

/* tags of the message fields: field number << 3 | type (0 varint, 2 string) */
#define TAG_RATCHET_KEY 0x0A
#define TAG_COUNTER 0x10
#define TAG_CIPHERTEXT 0x22
#define TAG_ONE_TIME_KEY 0x0A
#define TAG_BASE_KEY 0x12
#define TAG_IDENTITY_KEY 0x1A
#define TAG_MESSAGE 0x22

static const uint8_t INFO_ROOT[] = "OLM_ROOT";
static const uint8_t INFO_RATCHET[] = "OLM_RATCHET";
static const uint8_t INFO_KEYS[] = "OLM_KEYS";

/* ---- randomness ------------------------------------------------------------------------- */

static mx_olm_random_fn g_fill;
static void *g_fill_ctx;

void mx_olm_test_set_random(mx_olm_random_fn fill, void *ctx)
{
    g_fill = fill;
    g_fill_ctx = ctx;
}

static void key_random(uint8_t *buf, size_t len)
{
    if (g_fill)
        g_fill(g_fill_ctx, buf, len);
    else
        mx_random(buf, len);
}

/* A Curve25519 key pair from 32 random bytes, as libolm makes them (the private key is the raw
 * random bytes; clamping happens when it is used). */
static void curve_generate(uint8_t priv[KEY], uint8_t pub[KEY])
{
    key_random(priv, KEY);
    mx_curve25519_public(priv, pub);
}

/* ---- the message codec ------------------------------------------------------------------ */

/* Reads a varint of at most 10 bytes at in[*pos]; -1 if it runs off the end or is too long. */
static int varint_get(const uint8_t *in, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*pos >= len) return -1;
        uint8_t b = in[(*pos)++];
        r |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

typedef struct {
    uint64_t tag;
    int seen;
    const uint8_t *p; /* strings */
    size_t len;
    uint64_t v;       /* varints */
} field;

/* Parses protobuf-style key/value pairs: known tags fill fs (the last occurrence wins, as in
 * libolm), unknown ones of type 0 or 2 are skipped, anything else is an error. */
static int parse_fields(const uint8_t *in, size_t len, field *fs, size_t nf)
{
    size_t pos = 0;
    while (pos < len) {
        uint64_t tag, v;
        if (varint_get(in, len, &pos, &tag) || varint_get(in, len, &pos, &v)) return -1;
        const uint8_t *p = NULL;
        if ((tag & 7) == 2) {
            if (v > len - pos) return -1;
            p = in + pos;
            pos += (size_t)v;
        } else if ((tag & 7) != 0) {
            return -1;
        }
        for (size_t i = 0; i < nf; i++)
            if (fs[i].tag == tag) {
                fs[i].seen = 1;
                fs[i].p = p;
                fs[i].len = p ? (size_t)v : 0;
                fs[i].v = v;
            }
    }
    return 0;
}

int mx_olm_test_decode_message(const uint8_t *in, size_t len, size_t mac_len, mx_olm_message_fields *f)
{
    if (!in || !f) return -1;
    memset(f, 0, sizeof *f);
    if (len < 1 + mac_len) return -1;
    field fs[3] = {{.tag = TAG_RATCHET_KEY}, {.tag = TAG_COUNTER}, {.tag = TAG_CIPHERTEXT}};
    if (parse_fields(in + 1, len - 1 - mac_len, fs, 3)) return -1;
    f->version = in[0];
    if (fs[0].seen) {
        f->ratchet_key = fs[0].p;
        f->ratchet_key_len = fs[0].len;
    }
    if (fs[1].seen) {
        if (fs[1].v > UINT32_MAX) return -1;
        f->has_counter = 1;
        f->counter = (uint32_t)fs[1].v;
    }
    if (fs[2].seen) {
        f->ciphertext = fs[2].p;
        f->ciphertext_len = fs[2].len;
    }
    return 0;
}

static size_t message_len(uint32_t counter, size_t rk_len, size_t ct_len)
{
    return 1 + 1 + mx_varint_len(rk_len) + rk_len + 1 + mx_varint_len(counter) + 1 + mx_varint_len(ct_len) + ct_len;
}

/* Writes version, ratchet key, counter and the ciphertext's header; returns where the ciphertext goes. */
static uint8_t *message_put(uint8_t *p, const uint8_t *rk, size_t rk_len, uint32_t counter, size_t ct_len)
{
    *p++ = OLM_VERSION;
    *p++ = TAG_RATCHET_KEY;
    p = mx_varint_put(p, rk_len);
    memcpy(p, rk, rk_len);
    p += rk_len;
    *p++ = TAG_COUNTER;
    p = mx_varint_put(p, counter);
    *p++ = TAG_CIPHERTEXT;
    p = mx_varint_put(p, ct_len);
    return p;
}

size_t mx_olm_test_encode_message(uint8_t *out, size_t cap, const uint8_t *ratchet_key, size_t rk_len,
                                  uint32_t counter, const uint8_t *ciphertext, size_t ct_len)
{
    size_t n = message_len(counter, rk_len, ct_len);
    if (!out || cap < n || (!ratchet_key && rk_len) || (!ciphertext && ct_len)) return 0;
    uint8_t *p = message_put(out, ratchet_key, rk_len, counter, ct_len);
    if (ct_len) memcpy(p, ciphertext, ct_len);
    return n;
}

typedef struct {
    const uint8_t *otk, *base, *identity, *message;
    size_t message_len;
} prekey;

/* A pre-key message: version 3 and all four fields, the keys 32 bytes each. */
static int prekey_parse(const uint8_t *in, size_t len, prekey *pk)
{
    if (len < 1 || in[0] != OLM_VERSION) return -1;
    field fs[4] = {{.tag = TAG_ONE_TIME_KEY}, {.tag = TAG_BASE_KEY}, {.tag = TAG_IDENTITY_KEY}, {.tag = TAG_MESSAGE}};
    if (parse_fields(in + 1, len - 1, fs, 4)) return -1;
    for (int i = 0; i < 3; i++)
        if (!fs[i].p || fs[i].len != KEY) return -1;
    if (!fs[3].p) return -1;
    pk->otk = fs[0].p;
    pk->base = fs[1].p;
    pk->identity = fs[2].p;
    pk->message = fs[3].p;
    pk->message_len = fs[3].len;
    return 0;
}

/* ---- the ratchet primitives ------------------------------------------------------------- */

static void hmac_byte(const uint8_t key[KEY], uint8_t byte, uint8_t out[KEY])
{
    mx_hmac_sha256(key, KEY, &byte, 1, out);
}

/* Ri || Ci,0 = HKDF(Ri-1, ECDH(ours, theirs), "OLM_RATCHET", 64); root_out may be root_in. */
static int advance_root(const uint8_t root_in[KEY], const uint8_t our_priv[KEY], const uint8_t their_pub[KEY],
                        uint8_t root_out[KEY], uint8_t chain_out[KEY])
{
    uint8_t secret[KEY], derived[2 * KEY];
    int rc = -1;
    if (mx_curve25519_shared(our_priv, their_pub, secret) == 0 &&
        mx_hkdf_sha256(root_in, KEY, secret, KEY, INFO_RATCHET, sizeof INFO_RATCHET - 1, derived, sizeof derived) == 0) {
        memcpy(root_out, derived, KEY);
        memcpy(chain_out, derived + KEY, KEY);
        rc = 0;
    }
    mx_wipe(secret, sizeof secret);
    mx_wipe(derived, sizeof derived);
    return rc;
}

/* AES key || HMAC key || IV = HKDF(0, message key, "OLM_KEYS", 80) */
static void cipher_keys(const uint8_t mk[KEY], uint8_t aes[KEY], uint8_t mac[KEY], uint8_t iv[MX_AES_IV_BYTES])
{
    uint8_t d[2 * KEY + MX_AES_IV_BYTES];
    mx_hkdf_sha256(NULL, 0, mk, KEY, INFO_KEYS, sizeof INFO_KEYS - 1, d, sizeof d);
    memcpy(aes, d, KEY);
    memcpy(mac, d + KEY, KEY);
    memcpy(iv, d + 2 * KEY, MX_AES_IV_BYTES);
    mx_wipe(d, sizeof d);
}

/* Checks the MAC over msg[0 .. len-8) and decrypts the ciphertext (which lies inside msg). */
static int open_message(const uint8_t mk[KEY], const uint8_t *msg, size_t len, const uint8_t *ct, size_t ct_len,
                        uint8_t **plain, size_t *plain_len)
{
    uint8_t aes[KEY], mac_key[KEY], iv[MX_AES_IV_BYTES], mac[KEY];
    int rc = -1;
    cipher_keys(mk, aes, mac_key, iv);
    mx_hmac_sha256(mac_key, KEY, msg, len - MAC_LEN, mac);
    if (mx_equal(mac, msg + len - MAC_LEN, MAC_LEN)) {
        uint8_t *out = malloc(ct_len);
        long n = out ? mx_aes256_cbc_decrypt(aes, iv, ct, ct_len, out) : -1;
        if (n >= 0) {
            *plain = out;
            *plain_len = (size_t)n;
            rc = 0;
        } else if (out) {
            mx_wipe(out, ct_len);
            free(out);
        }
    }
    mx_wipe(aes, sizeof aes);
    mx_wipe(mac_key, sizeof mac_key);
    mx_wipe(iv, sizeof iv);
    mx_wipe(mac, sizeof mac);
    return rc;
}

/* ---- accounts --------------------------------------------------------------------------- */

typedef struct {
    uint32_t id;
    uint8_t published;
    uint8_t priv[KEY], pub[KEY];
} otk;

struct mx_olm_account {
    uint8_t ed_seed[KEY], ed_secret[MX_ED_SECRET_BYTES], ed_pub[KEY];
    uint8_t curve_priv[KEY], curve_pub[KEY];
    otk otks[MX_OLM_MAX_OTKS]; /* oldest first */
    size_t n_otks;
    otk fallback[2];           /* [0] current, [1] previous */
    size_t n_fallback;
    uint32_t next_id;          /* the last id handed out */
};

static mx_olm_account *account_alloc(void)
{
    if (mx_crypto_init() != 0) return NULL;
    return calloc(1, sizeof(mx_olm_account));
}

static void account_set_ed(mx_olm_account *a)
{
    mx_ed25519_from_seed(a->ed_seed, a->ed_pub, a->ed_secret);
}

mx_olm_account *mx_olm_account_new(void)
{
    mx_olm_account *a = account_alloc();
    if (!a) return NULL;
    key_random(a->ed_seed, KEY); /* libolm: Ed25519 seed first, then Curve25519 */
    account_set_ed(a);
    curve_generate(a->curve_priv, a->curve_pub);
    return a;
}

void mx_olm_account_free(mx_olm_account *a)
{
    if (!a) return;
    mx_wipe(a, sizeof *a);
    free(a);
}

void mx_olm_account_identity(const mx_olm_account *a, char curve25519[44], char ed25519[44])
{
    if (!a) return;
    if (curve25519) mx_b64_encode(a->curve_pub, KEY, curve25519, 44);
    if (ed25519) mx_b64_encode(a->ed_pub, KEY, ed25519, 44);
}

void mx_olm_account_sign(const mx_olm_account *a, const uint8_t *msg, size_t len, char sig[87])
{
    uint8_t s[MX_SIG_BYTES];
    static const uint8_t empty[1];
    if (!a || !sig) return;
    mx_ed25519_sign(a->ed_secret, msg ? msg : empty, msg ? len : 0, s);
    mx_b64_encode(s, sizeof s, sig, 87);
}

size_t mx_olm_account_max_otks(const mx_olm_account *a)
{
    (void)a;
    return MX_OLM_MAX_OTKS;
}

static int new_key(mx_olm_account *a, otk *k)
{
    if (a->next_id == UINT32_MAX) return -1;
    k->id = ++a->next_id;
    k->published = 0;
    curve_generate(k->priv, k->pub);
    return 0;
}

int mx_olm_account_generate_otks(mx_olm_account *a, size_t n)
{
    if (!a || n > MX_OLM_MAX_OTKS || (uint64_t)a->next_id + n > UINT32_MAX) return -1;
    for (size_t i = 0; i < n; i++) {
        if (a->n_otks == MX_OLM_MAX_OTKS) { /* drop the oldest */
            mx_wipe(&a->otks[0], sizeof(otk));
            memmove(&a->otks[0], &a->otks[1], (MX_OLM_MAX_OTKS - 1) * sizeof(otk));
            a->n_otks--;
        }
        new_key(a, &a->otks[a->n_otks++]);
    }
    mx_wipe(&a->otks[a->n_otks], (MX_OLM_MAX_OTKS - a->n_otks) * sizeof(otk));
    return 0;
}

/* {"curve25519":{...}} of the given keys that are unpublished */
static char *keys_json(const otk *keys, size_t n)
{
    json_t *root = json_object(), *curve = json_object();
    char *out = NULL;
    if (!root || !curve) goto done;
    for (size_t i = 0; i < n; i++) {
        if (keys[i].published) continue;
        uint8_t id[4] = {(uint8_t)(keys[i].id >> 24), (uint8_t)(keys[i].id >> 16), (uint8_t)(keys[i].id >> 8),
                         (uint8_t)keys[i].id};
        char idb[8], pubb[44];
        mx_b64_encode(id, sizeof id, idb, sizeof idb);
        mx_b64_encode(keys[i].pub, KEY, pubb, sizeof pubb);
        if (json_object_set_new(curve, idb, json_string(pubb))) goto done;
    }
    if (json_object_set(root, "curve25519", curve) == 0) out = json_dumps(root, JSON_COMPACT);
done:
    json_decref(curve);
    json_decref(root);
    return out;
}

char *mx_olm_account_otks_json(const mx_olm_account *a)
{
    if (!a) return NULL;
    return keys_json(a->otks, a->n_otks);
}

void mx_olm_account_mark_published(mx_olm_account *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->n_otks; i++) a->otks[i].published = 1;
    if (a->n_fallback) a->fallback[0].published = 1;
}

int mx_olm_account_generate_fallback(mx_olm_account *a)
{
    if (!a || a->next_id == UINT32_MAX) return -1;
    mx_wipe(&a->fallback[1], sizeof(otk));
    a->fallback[1] = a->fallback[0];
    if (a->n_fallback < 2) a->n_fallback++;
    return new_key(a, &a->fallback[0]);
}

char *mx_olm_account_fallback_json(const mx_olm_account *a)
{
    if (!a) return NULL;
    if (a->n_fallback == 0 || a->fallback[0].published) {
        char *s = malloc(3);
        if (s) memcpy(s, "{}", 3);
        return s;
    }
    return keys_json(a->fallback, 1);
}

/* The private key of one of our one-time or fallback keys with this public key; *otk_index is its
 * index among the one-time keys, or -1 for a fallback key. */
static const uint8_t *account_lookup(const mx_olm_account *a, const uint8_t pub[KEY], long *otk_index)
{
    for (size_t i = 0; i < a->n_otks; i++)
        if (mx_equal(a->otks[i].pub, pub, KEY)) {
            *otk_index = (long)i;
            return a->otks[i].priv;
        }
    for (size_t i = 0; i < a->n_fallback; i++)
        if (mx_equal(a->fallback[i].pub, pub, KEY)) {
            *otk_index = -1;
            return a->fallback[i].priv;
        }
    return NULL;
}

static void account_remove_otk(mx_olm_account *a, size_t i)
{
    mx_wipe(&a->otks[i], sizeof(otk));
    memmove(&a->otks[i], &a->otks[i + 1], (a->n_otks - i - 1) * sizeof(otk));
    a->n_otks--;
    mx_wipe(&a->otks[a->n_otks], sizeof(otk));
}

/* ---- sessions --------------------------------------------------------------------------- */

typedef struct {
    uint8_t pub[KEY];
    uint32_t index;
    uint8_t key[KEY]; /* chain key (receiver chains) or message key (skipped keys) */
} chain;

struct mx_olm_session {
    uint8_t alice_identity[KEY], alice_base[KEY], bob_otk[KEY];
    int received;
    uint8_t root[KEY];
    int has_sender;
    uint8_t sender_priv[KEY];
    chain sender;                                  /* pub = our ratchet key */
    chain recv[MX_OLM_MAX_RECEIVER_CHAINS];        /* newest first */
    size_t n_recv;
    chain skipped[MX_OLM_MAX_SKIPPED_KEYS];        /* newest first */
    size_t n_skipped;
};

void mx_olm_session_free(mx_olm_session *s)
{
    if (!s) return;
    mx_wipe(s, sizeof *s);
    free(s);
}

/* Inserts c at the front of list (n entries, at most max), dropping the oldest if full. */
static void chain_push(chain *list, size_t *n, size_t max, const chain *c)
{
    if (*n == max) {
        mx_wipe(&list[max - 1], sizeof(chain));
        (*n)--;
    }
    memmove(&list[1], &list[0], *n * sizeof(chain));
    list[0] = *c;
    (*n)++;
}

static void root_from_secret(mx_olm_session *s, const uint8_t secret[3 * KEY], uint8_t chain_key[KEY])
{
    uint8_t d[2 * KEY];
    mx_hkdf_sha256(NULL, 0, secret, 3 * KEY, INFO_ROOT, sizeof INFO_ROOT - 1, d, sizeof d);
    memcpy(s->root, d, KEY);
    memcpy(chain_key, d + KEY, KEY);
    mx_wipe(d, sizeof d);
}

mx_olm_session *mx_olm_outbound(const mx_olm_account *a, const uint8_t their_identity[32], const uint8_t their_otk[32])
{
    if (!a || !their_identity || !their_otk) return NULL;
    mx_olm_session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    uint8_t base_priv[KEY], secret[3 * KEY];
    curve_generate(base_priv, s->alice_base); /* libolm: the base key, then the ratchet key */
    curve_generate(s->sender_priv, s->sender.pub);
    memcpy(s->alice_identity, a->curve_pub, KEY);
    memcpy(s->bob_otk, their_otk, KEY);
    int ok = mx_curve25519_shared(a->curve_priv, their_otk, secret) == 0 &&
             mx_curve25519_shared(base_priv, their_identity, secret + KEY) == 0 &&
             mx_curve25519_shared(base_priv, their_otk, secret + 2 * KEY) == 0;
    if (ok) {
        root_from_secret(s, secret, s->sender.key);
        s->sender.index = 0;
        s->has_sender = 1;
    }
    mx_wipe(base_priv, sizeof base_priv);
    mx_wipe(secret, sizeof secret);
    if (!ok) {
        mx_olm_session_free(s);
        return NULL;
    }
    return s;
}

/* Decrypts a normal message in s, changing s freely: the caller runs this on a copy. */
static int ratchet_decrypt(mx_olm_session *s, const uint8_t *m, size_t n, uint8_t **plain, size_t *plain_len)
{
    mx_olm_message_fields f;
    if (mx_olm_test_decode_message(m, n, MAC_LEN, &f) || f.version != OLM_VERSION || !f.has_counter ||
        !f.ratchet_key || f.ratchet_key_len != KEY || !f.ciphertext || f.ciphertext_len == 0 ||
        f.ciphertext_len % 16 || f.counter == UINT32_MAX)
        return -1;

    chain *c = NULL;
    for (size_t i = 0; i < s->n_recv && !c; i++)
        if (mx_equal(s->recv[i].pub, f.ratchet_key, KEY)) c = &s->recv[i];

    if (!c || f.counter < c->index) { /* a message we skipped over earlier? */
        for (size_t i = 0; i < s->n_skipped; i++) {
            chain *k = &s->skipped[i];
            if (k->index != f.counter || !mx_equal(k->pub, f.ratchet_key, KEY)) continue;
            if (open_message(k->key, m, n, f.ciphertext, f.ciphertext_len, plain, plain_len)) return -1;
            mx_wipe(k, sizeof *k);
            memmove(k, k + 1, (s->n_skipped - i - 1) * sizeof(chain));
            s->n_skipped--;
            mx_wipe(&s->skipped[s->n_skipped], sizeof(chain));
            return 0;
        }
        if (c) return -1; /* already decrypted, or its key was dropped */
    }

    chain fresh;
    uint8_t new_root[KEY];
    if (!c) { /* they have a new ratchet key: a new receiver chain */
        if (!s->has_sender || f.counter > MX_OLM_MAX_MESSAGE_GAP) return -1;
        memcpy(fresh.pub, f.ratchet_key, KEY);
        fresh.index = 0;
        if (advance_root(s->root, s->sender_priv, fresh.pub, new_root, fresh.key)) return -1;
        c = &fresh;
    } else if (f.counter - c->index > MX_OLM_MAX_MESSAGE_GAP) {
        return -1;
    }

    while (c->index < f.counter) { /* keep the keys of the messages we skip */
        chain k;
        memcpy(k.pub, c->pub, KEY);
        k.index = c->index;
        hmac_byte(c->key, 0x01, k.key);
        chain_push(s->skipped, &s->n_skipped, MX_OLM_MAX_SKIPPED_KEYS, &k);
        mx_wipe(&k, sizeof k);
        hmac_byte(c->key, 0x02, c->key);
        c->index++;
    }
    uint8_t mk[KEY];
    hmac_byte(c->key, 0x01, mk);
    int rc = open_message(mk, m, n, f.ciphertext, f.ciphertext_len, plain, plain_len);
    mx_wipe(mk, sizeof mk);
    if (rc == 0) {
        hmac_byte(c->key, 0x02, c->key);
        c->index++;
        if (c == &fresh) { /* commit the new chain; our next message starts a new sender chain */
            chain_push(s->recv, &s->n_recv, MX_OLM_MAX_RECEIVER_CHAINS, &fresh);
            memcpy(s->root, new_root, KEY);
            mx_wipe(s->sender_priv, KEY);
            mx_wipe(&s->sender, sizeof s->sender);
            s->has_sender = 0;
        }
    }
    mx_wipe(&fresh, sizeof fresh);
    mx_wipe(new_root, sizeof new_root);
    return rc;
}

/* Decrypts a normal message into s only if it succeeds. */
static int session_decrypt_message(mx_olm_session *s, const uint8_t *m, size_t n, uint8_t **plain, size_t *plain_len)
{
    mx_olm_session *tmp = malloc(sizeof *tmp);
    if (!tmp) return -1;
    *tmp = *s;
    int rc = ratchet_decrypt(tmp, m, n, plain, plain_len);
    if (rc == 0) {
        tmp->received = 1;
        *s = *tmp;
    }
    mx_wipe(tmp, sizeof *tmp);
    free(tmp);
    return rc;
}

mx_olm_session *mx_olm_inbound(mx_olm_account *a, const uint8_t *their_identity, const char *body,
                               uint8_t **plain, size_t *plain_len)
{
    if (!plain || !plain_len) return NULL;
    *plain = NULL;
    *plain_len = 0;
    if (!a || !body) return NULL;
    size_t len = 0;
    uint8_t *buf = mx_unb64_alloc(body, &len);
    if (!buf) return NULL;
    mx_olm_session *s = NULL;
    prekey pk;
    mx_olm_message_fields f;
    long idx = -1;
    const uint8_t *otk_priv = NULL;
    if (prekey_parse(buf, len, &pk) || (their_identity && !mx_equal(their_identity, pk.identity, KEY)) ||
        mx_olm_test_decode_message(pk.message, pk.message_len, MAC_LEN, &f) || !f.ratchet_key ||
        f.ratchet_key_len != KEY || !(otk_priv = account_lookup(a, pk.otk, &idx)))
        goto done;
    if (!(s = calloc(1, sizeof *s))) goto done;
    memcpy(s->alice_identity, pk.identity, KEY);
    memcpy(s->alice_base, pk.base, KEY);
    memcpy(s->bob_otk, pk.otk, KEY);
    uint8_t secret[3 * KEY];
    int ok = mx_curve25519_shared(otk_priv, s->alice_identity, secret) == 0 &&
             mx_curve25519_shared(a->curve_priv, s->alice_base, secret + KEY) == 0 &&
             mx_curve25519_shared(otk_priv, s->alice_base, secret + 2 * KEY) == 0;
    if (ok) {
        root_from_secret(s, secret, s->recv[0].key);
        memcpy(s->recv[0].pub, f.ratchet_key, KEY);
        s->recv[0].index = 0;
        s->n_recv = 1;
    }
    mx_wipe(secret, sizeof secret);
    if (!ok || session_decrypt_message(s, pk.message, pk.message_len, plain, plain_len)) {
        mx_olm_session_free(s);
        s = NULL;
        goto done;
    }
    if (idx >= 0) account_remove_otk(a, (size_t)idx);
done:
    free(buf); /* public data */
    return s;
}

static int prekey_matches(const mx_olm_session *s, const prekey *pk)
{
    return mx_equal(pk->otk, s->bob_otk, KEY) && mx_equal(pk->base, s->alice_base, KEY) &&
           mx_equal(pk->identity, s->alice_identity, KEY);
}

int mx_olm_session_matches(const mx_olm_session *s, const char *body)
{
    if (!s || !body) return 0;
    size_t len = 0;
    uint8_t *buf = mx_unb64_alloc(body, &len);
    if (!buf) return 0;
    prekey pk;
    int r = prekey_parse(buf, len, &pk) == 0 && prekey_matches(s, &pk);
    free(buf);
    return r;
}

int mx_olm_encrypt(mx_olm_session *s, const uint8_t *plain, size_t len, int *type, char **body)
{
    if (body) *body = NULL;
    if (!s || !type || !body || (!plain && len) || len > MAX_PLAIN) return -1;
    mx_olm_session *t = malloc(sizeof *t);
    uint8_t *buf = NULL;
    uint8_t mk[KEY], aes[KEY], mac_key[KEY], iv[MX_AES_IV_BYTES], mac[KEY];
    int rc = -1;
    if (!t) return -1;
    *t = *s;
    if (!t->has_sender) { /* our first message since their new ratchet key: a new sender chain */
        if (t->n_recv == 0) goto done;
        curve_generate(t->sender_priv, t->sender.pub);
        if (advance_root(t->root, t->sender_priv, t->recv[0].pub, t->root, t->sender.key)) goto done;
        t->sender.index = 0;
        t->has_sender = 1;
    }
    if (t->sender.index == UINT32_MAX) goto done;
    uint32_t counter = t->sender.index;
    hmac_byte(t->sender.key, 0x01, mk);
    hmac_byte(t->sender.key, 0x02, t->sender.key);
    t->sender.index++;

    size_t ct_len = len / 16 * 16 + 16;
    size_t mlen = message_len(counter, KEY, ct_len) + MAC_LEN;
    size_t total = t->received ? mlen : 1 + 3 * (2 + KEY) + 1 + mx_varint_len(mlen) + mlen;
    if (!(buf = malloc(total))) goto done;
    uint8_t *p = buf;
    if (!t->received) {
        *p++ = OLM_VERSION;
        const uint8_t tags[3] = {TAG_ONE_TIME_KEY, TAG_BASE_KEY, TAG_IDENTITY_KEY};
        const uint8_t *keys[3] = {t->bob_otk, t->alice_base, t->alice_identity};
        for (int i = 0; i < 3; i++) {
            *p++ = tags[i];
            *p++ = KEY;
            memcpy(p, keys[i], KEY);
            p += KEY;
        }
        *p++ = TAG_MESSAGE;
        p = mx_varint_put(p, mlen);
    }
    uint8_t *msg = p;
    uint8_t *ct = message_put(msg, t->sender.pub, KEY, counter, ct_len);
    cipher_keys(mk, aes, mac_key, iv);
    static const uint8_t empty[1];
    if (mx_aes256_cbc_encrypt(aes, iv, plain ? plain : empty, len, ct) != (long)ct_len) goto done;
    mx_hmac_sha256(mac_key, KEY, msg, mlen - MAC_LEN, mac);
    memcpy(msg + mlen - MAC_LEN, mac, MAC_LEN);
    if (!(*body = mx_b64_alloc(buf, total))) goto done;
    *type = t->received ? 1 : 0;
    *s = *t;
    rc = 0;
done:
    mx_wipe(mk, sizeof mk);
    mx_wipe(aes, sizeof aes);
    mx_wipe(mac_key, sizeof mac_key);
    mx_wipe(iv, sizeof iv);
    mx_wipe(mac, sizeof mac);
    mx_wipe(t, sizeof *t);
    free(t);
    free(buf); /* ciphertext only */
    return rc;
}

int mx_olm_decrypt(mx_olm_session *s, int type, const char *body, uint8_t **plain, size_t *plain_len)
{
    if (!plain || !plain_len) return -1;
    *plain = NULL;
    *plain_len = 0;
    if (!s || !body || (type != 0 && type != 1)) return -1;
    size_t len = 0;
    uint8_t *buf = mx_unb64_alloc(body, &len);
    if (!buf) return -1;
    const uint8_t *m = buf;
    size_t n = len;
    int rc = -1;
    if (type == 0) {
        prekey pk;
        if (prekey_parse(buf, len, &pk) || !prekey_matches(s, &pk)) goto done;
        m = pk.message;
        n = pk.message_len;
    }
    rc = session_decrypt_message(s, m, n, plain, plain_len);
done:
    free(buf);
    return rc;
}

void mx_olm_session_id(const mx_olm_session *s, char id[44])
{
    uint8_t keys[3 * KEY], h[KEY];
    if (!s || !id) return;
    memcpy(keys, s->alice_identity, KEY);
    memcpy(keys + KEY, s->alice_base, KEY);
    memcpy(keys + 2 * KEY, s->bob_otk, KEY);
    mx_sha256(keys, sizeof keys, h);
    mx_b64_encode(h, sizeof h, id, 44);
}

/* ---- pickles ------------------------------------------------------------------------------
 * Outer format (unpadded base64 of):
 *   0x01 (format version) | kind ('A' account, 'S' session) | 16-byte random nonce
 *   | AES-256-CBC/PKCS#7 of the state | HMAC-SHA-256 (all 32 bytes) of everything before it
 * AES key || HMAC key || IV = HKDF-SHA-256(salt = nonce, ikm = the 32-byte key,
 *                                          info = "cardroom-olm-pickle-v1-" kind, 80).
 * States (big-endian integers, flags are 0 or 1):
 *   account: Ed25519 seed (32) | Curve25519 private (32) | last key id (u32)
 *            | n one-time keys (u8, <= 100) | n x [id (u32) | published (u8) | private (32)]
 *            | n fallback keys (u8, <= 2; current first) | n x [id | published | private]
 *   session: received (u8) | Alice's identity key | Alice's base key | Bob's one-time key (32 each)
 *            | root key (32) | has sender chain (u8) [| ratchet private (32) | index (u32) | chain key (32)]
 *            | n receiver chains (u8, <= 5, newest first) | n x [ratchet key (32) | index (u32) | chain key (32)]
 *            | n skipped keys (u8, <= 40, newest first) | n x [ratchet key (32) | index (u32) | message key (32)]
 * Public keys are recomputed from private ones on load. */

#define PICKLE_VERSION 1
#define PICKLE_NONCE 16
#define STATE_MAX 8192

typedef struct {
    uint8_t *p;
    size_t len, cap;
} wbuf;

static void w_bytes(wbuf *w, const void *b, size_t n)
{
    if (w->p && w->len + n <= w->cap) memcpy(w->p + w->len, b, n);
    w->len += n;
}

static void w_u8(wbuf *w, unsigned v)
{
    uint8_t b = (uint8_t)v;
    w_bytes(w, &b, 1);
}

static void w_u32(wbuf *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    w_bytes(w, b, 4);
}

typedef struct {
    const uint8_t *p;
    size_t len, pos;
    int bad;
} rbuf;

static void r_bytes(rbuf *r, void *b, size_t n)
{
    if (r->bad || r->len - r->pos < n) {
        r->bad = 1;
        memset(b, 0, n);
        return;
    }
    memcpy(b, r->p + r->pos, n);
    r->pos += n;
}

static unsigned r_u8(rbuf *r)
{
    uint8_t b;
    r_bytes(r, &b, 1);
    return b;
}

static unsigned r_flag(rbuf *r)
{
    unsigned v = r_u8(r);
    if (v > 1) r->bad = 1;
    return v;
}

static uint32_t r_u32(rbuf *r)
{
    uint8_t b[4];
    r_bytes(r, b, 4);
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void pickle_keys(const uint8_t nonce[PICKLE_NONCE], char kind, const uint8_t key[32], uint8_t aes[KEY],
                        uint8_t mac[KEY], uint8_t iv[MX_AES_IV_BYTES])
{
    uint8_t info[] = "cardroom-olm-pickle-v1-?", d[2 * KEY + MX_AES_IV_BYTES];
    info[sizeof info - 2] = (uint8_t)kind;
    mx_hkdf_sha256(nonce, PICKLE_NONCE, key, 32, info, sizeof info - 1, d, sizeof d);
    memcpy(aes, d, KEY);
    memcpy(mac, d + KEY, KEY);
    memcpy(iv, d + 2 * KEY, MX_AES_IV_BYTES);
    mx_wipe(d, sizeof d);
}

static char *seal(char kind, const uint8_t *state, size_t n, const uint8_t key[32])
{
    if (!key) return NULL;
    size_t ct_len = n / 16 * 16 + 16, total = 2 + PICKLE_NONCE + ct_len + KEY;
    uint8_t *buf = malloc(total), aes[KEY], mac_key[KEY], iv[MX_AES_IV_BYTES];
    char *out = NULL;
    if (!buf) return NULL;
    buf[0] = PICKLE_VERSION;
    buf[1] = (uint8_t)kind;
    mx_random(buf + 2, PICKLE_NONCE);
    pickle_keys(buf + 2, kind, key, aes, mac_key, iv);
    if (mx_aes256_cbc_encrypt(aes, iv, state, n, buf + 2 + PICKLE_NONCE) == (long)ct_len) {
        mx_hmac_sha256(mac_key, KEY, buf, total - KEY, buf + total - KEY);
        out = mx_b64_alloc(buf, total);
    }
    mx_wipe(aes, sizeof aes);
    mx_wipe(mac_key, sizeof mac_key);
    mx_wipe(iv, sizeof iv);
    free(buf); /* encrypted */
    return out;
}

/* The state inside a pickle, into state[STATE_MAX]; its length, or -1. */
static long unseal(char kind, const char *pickle, const uint8_t key[32], uint8_t *state)
{
    if (!pickle || !key) return -1;
    size_t len = 0;
    uint8_t *buf = mx_unb64_alloc(pickle, &len);
    if (!buf) return -1;
    long rc = -1;
    uint8_t aes[KEY], mac_key[KEY], iv[MX_AES_IV_BYTES], mac[KEY];
    if (len < 2 + PICKLE_NONCE + 16 + KEY || len > 2 + PICKLE_NONCE + STATE_MAX + KEY || buf[0] != PICKLE_VERSION ||
        buf[1] != (uint8_t)kind) {
        free(buf);
        return -1;
    }
    pickle_keys(buf + 2, kind, key, aes, mac_key, iv);
    mx_hmac_sha256(mac_key, KEY, buf, len - KEY, mac);
    if (mx_equal(mac, buf + len - KEY, KEY))
        rc = mx_aes256_cbc_decrypt(aes, iv, buf + 2 + PICKLE_NONCE, len - 2 - PICKLE_NONCE - KEY, state);
    mx_wipe(aes, sizeof aes);
    mx_wipe(mac_key, sizeof mac_key);
    mx_wipe(iv, sizeof iv);
    mx_wipe(mac, sizeof mac);
    free(buf);
    return rc;
}

static void account_state(const mx_olm_account *a, wbuf *w)
{
    w_bytes(w, a->ed_seed, KEY);
    w_bytes(w, a->curve_priv, KEY);
    w_u32(w, a->next_id);
    w_u8(w, (unsigned)a->n_otks);
    for (size_t i = 0; i < a->n_otks; i++) {
        w_u32(w, a->otks[i].id);
        w_u8(w, a->otks[i].published);
        w_bytes(w, a->otks[i].priv, KEY);
    }
    w_u8(w, (unsigned)a->n_fallback);
    for (size_t i = 0; i < a->n_fallback; i++) {
        w_u32(w, a->fallback[i].id);
        w_u8(w, a->fallback[i].published);
        w_bytes(w, a->fallback[i].priv, KEY);
    }
}

char *mx_olm_account_pickle(const mx_olm_account *a, const uint8_t key[32])
{
    if (!a) return NULL;
    uint8_t state[STATE_MAX];
    wbuf w = {state, 0, sizeof state};
    account_state(a, &w);
    char *out = w.len <= sizeof state ? seal('A', state, w.len, key) : NULL;
    mx_wipe(state, sizeof state);
    return out;
}

static void read_key(rbuf *r, otk *k)
{
    k->id = r_u32(r);
    k->published = (uint8_t)r_flag(r);
    r_bytes(r, k->priv, KEY);
    mx_curve25519_public(k->priv, k->pub);
}

mx_olm_account *mx_olm_account_unpickle(const char *pickle, const uint8_t key[32])
{
    uint8_t state[STATE_MAX];
    long n = unseal('A', pickle, key, state);
    mx_olm_account *a = n >= 0 ? account_alloc() : NULL;
    if (a) {
        rbuf r = {state, (size_t)n, 0, 0};
        r_bytes(&r, a->ed_seed, KEY);
        account_set_ed(a);
        r_bytes(&r, a->curve_priv, KEY);
        mx_curve25519_public(a->curve_priv, a->curve_pub);
        a->next_id = r_u32(&r);
        a->n_otks = r_u8(&r);
        if (a->n_otks > MX_OLM_MAX_OTKS) r.bad = 1;
        for (size_t i = 0; i < a->n_otks && !r.bad; i++) read_key(&r, &a->otks[i]);
        a->n_fallback = r_u8(&r);
        if (a->n_fallback > 2) r.bad = 1;
        for (size_t i = 0; i < a->n_fallback && !r.bad; i++) read_key(&r, &a->fallback[i]);
        if (r.bad || r.pos != r.len) {
            mx_olm_account_free(a);
            a = NULL;
        }
    }
    mx_wipe(state, sizeof state);
    return a;
}

static void write_chain(wbuf *w, const chain *c)
{
    w_bytes(w, c->pub, KEY);
    w_u32(w, c->index);
    w_bytes(w, c->key, KEY);
}

static void read_chain(rbuf *r, chain *c)
{
    r_bytes(r, c->pub, KEY);
    c->index = r_u32(r);
    r_bytes(r, c->key, KEY);
}

static void session_state(const mx_olm_session *s, wbuf *w)
{
    w_u8(w, (unsigned)s->received);
    w_bytes(w, s->alice_identity, KEY);
    w_bytes(w, s->alice_base, KEY);
    w_bytes(w, s->bob_otk, KEY);
    w_bytes(w, s->root, KEY);
    w_u8(w, (unsigned)s->has_sender);
    if (s->has_sender) {
        w_bytes(w, s->sender_priv, KEY);
        w_u32(w, s->sender.index);
        w_bytes(w, s->sender.key, KEY);
    }
    w_u8(w, (unsigned)s->n_recv);
    for (size_t i = 0; i < s->n_recv; i++) write_chain(w, &s->recv[i]);
    w_u8(w, (unsigned)s->n_skipped);
    for (size_t i = 0; i < s->n_skipped; i++) write_chain(w, &s->skipped[i]);
}

size_t mx_olm_test_session_state(const mx_olm_session *s, uint8_t *out, size_t cap)
{
    wbuf w = {out, 0, out ? cap : 0};
    session_state(s, &w);
    return w.len;
}

char *mx_olm_session_pickle(const mx_olm_session *s, const uint8_t key[32])
{
    if (!s) return NULL;
    uint8_t state[STATE_MAX];
    wbuf w = {state, 0, sizeof state};
    session_state(s, &w);
    char *out = w.len <= sizeof state ? seal('S', state, w.len, key) : NULL;
    mx_wipe(state, sizeof state);
    return out;
}

mx_olm_session *mx_olm_session_unpickle(const char *pickle, const uint8_t key[32])
{
    uint8_t state[STATE_MAX];
    long n = mx_crypto_init() == 0 ? unseal('S', pickle, key, state) : -1;
    mx_olm_session *s = n >= 0 ? calloc(1, sizeof *s) : NULL;
    if (s) {
        rbuf r = {state, (size_t)n, 0, 0};
        s->received = (int)r_flag(&r);
        r_bytes(&r, s->alice_identity, KEY);
        r_bytes(&r, s->alice_base, KEY);
        r_bytes(&r, s->bob_otk, KEY);
        r_bytes(&r, s->root, KEY);
        s->has_sender = (int)r_flag(&r);
        if (s->has_sender) {
            r_bytes(&r, s->sender_priv, KEY);
            mx_curve25519_public(s->sender_priv, s->sender.pub);
            s->sender.index = r_u32(&r);
            r_bytes(&r, s->sender.key, KEY);
        }
        s->n_recv = r_u8(&r);
        if (s->n_recv > MX_OLM_MAX_RECEIVER_CHAINS) r.bad = 1;
        for (size_t i = 0; i < s->n_recv && !r.bad; i++) read_chain(&r, &s->recv[i]);
        s->n_skipped = r_u8(&r);
        if (s->n_skipped > MX_OLM_MAX_SKIPPED_KEYS) r.bad = 1;
        for (size_t i = 0; i < s->n_skipped && !r.bad; i++) read_chain(&r, &s->skipped[i]);
        if (r.bad || r.pos != r.len || (!s->has_sender && s->n_recv == 0)) {
            mx_olm_session_free(s);
            s = NULL;
        }
    }
    mx_wipe(state, sizeof state);
    return s;
}
