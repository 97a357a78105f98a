/* test_mx_megolm.c — Megolm (adapters/matrix/mx_megolm.h) against libolm, the test oracle.
 *
 * libolm (libolm-dev, linked here only) is the reference: its published known values for the
 * ratchet (tests/test_megolm.cpp) and for a session key and message (tests/test_group_session.cpp);
 * its ratchet (the exported megolm_advance / megolm_advance_to) from random states; its group
 * sessions through the public C API both ways: our session keys, messages and exports read by
 * libolm, libolm's read by us, byte-identical output from the same random bytes. Then what must
 * fail: indexes before the first known one, every tampered byte, messages re-signed after a
 * change (so that the MAC and the padding are what catch them), other sessions, garbage and
 * truncated text; and pickles: round trips, wrong keys, every flipped byte. */
#include <criterion/criterion.h>
#include <olm/olm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_megolm.h"

static void setup(void) { cr_assert_eq(mx_crypto_init(), 0); }

TestSuite(mx_megolm, .timeout = 60, .init = setup);

/* libolm's own ratchet (exported by libolm.so.3; the struct is its src/megolm.h layout). */
typedef struct {
    uint8_t data[4][32];
    uint32_t counter;
} OlmMegolm;
void megolm_init(OlmMegolm *megolm, uint8_t const *random_data, uint32_t counter);
void megolm_advance(OlmMegolm *megolm);
void megolm_advance_to(OlmMegolm *megolm, uint32_t advance_to);

/* ---- libolm helpers (its API overwrites its inputs: everything goes through copies) ---- */

#define OLM_RANDOM 160 /* ratchet (128) + Ed25519 seed (32) */

static OlmOutboundGroupSession *lo_out(const uint8_t random[OLM_RANDOM])
{
    OlmOutboundGroupSession *o = olm_outbound_group_session(malloc(olm_outbound_group_session_size()));
    cr_assert_eq(olm_init_outbound_group_session_random_length(o), OLM_RANDOM);
    uint8_t copy[OLM_RANDOM];
    memcpy(copy, random, sizeof copy);
    cr_assert_eq(olm_init_outbound_group_session(o, copy, sizeof copy), 0);
    return o;
}

static void lo_out_free(OlmOutboundGroupSession *o)
{
    olm_clear_outbound_group_session(o);
    free(o);
}

static char *lo_session_key(OlmOutboundGroupSession *o)
{
    size_t n = olm_outbound_group_session_key_length(o);
    char *s = calloc(n + 1, 1);
    cr_assert_eq(olm_outbound_group_session_key(o, (uint8_t *)s, n), n);
    return s;
}

static char *lo_out_id(OlmOutboundGroupSession *o)
{
    size_t n = olm_outbound_group_session_id_length(o);
    char *s = calloc(n + 1, 1);
    cr_assert_eq(olm_outbound_group_session_id(o, (uint8_t *)s, n), n);
    return s;
}

static char *lo_encrypt(OlmOutboundGroupSession *o, const uint8_t *p, size_t len)
{
    size_t n = olm_group_encrypt_message_length(o, len);
    char *s = calloc(n + 1, 1);
    cr_assert_eq(olm_group_encrypt(o, p, len, (uint8_t *)s, n), n);
    return s;
}

/* An inbound session from a session key (import = 0) or an export (import = 1); NULL if refused. */
static OlmInboundGroupSession *lo_in(const char *key, int import)
{
    OlmInboundGroupSession *s = olm_inbound_group_session(malloc(olm_inbound_group_session_size()));
    char *copy = strdup(key);
    size_t r = import ? olm_import_inbound_group_session(s, (uint8_t *)copy, strlen(copy))
                      : olm_init_inbound_group_session(s, (uint8_t *)copy, strlen(copy));
    free(copy);
    if (r == olm_error()) {
        olm_clear_inbound_group_session(s);
        free(s);
        return NULL;
    }
    return s;
}

static void lo_in_free(OlmInboundGroupSession *s)
{
    if (!s) return;
    olm_clear_inbound_group_session(s);
    free(s);
}

/* Decrypts with libolm: the plaintext (malloc'd, NUL after it) or NULL. */
static uint8_t *lo_decrypt(OlmInboundGroupSession *s, const char *msg, size_t *len, uint32_t *index)
{
    char *copy = strdup(msg);
    size_t max = olm_group_decrypt_max_plaintext_length(s, (uint8_t *)copy, strlen(copy));
    free(copy);
    if (max == olm_error()) return NULL;
    uint8_t *out = malloc(max + 1);
    copy = strdup(msg);
    size_t n = olm_group_decrypt(s, (uint8_t *)copy, strlen(copy), out, max, index);
    free(copy);
    if (n == olm_error()) {
        free(out);
        return NULL;
    }
    out[n] = 0;
    *len = n;
    return out;
}

static char *lo_export(OlmInboundGroupSession *s, uint32_t index)
{
    size_t n = olm_export_inbound_group_session_length(s);
    char *e = calloc(n + 1, 1);
    if (olm_export_inbound_group_session(s, (uint8_t *)e, n, index) != n) {
        free(e);
        return NULL;
    }
    return e;
}

static char *lo_in_id(OlmInboundGroupSession *s)
{
    size_t n = olm_inbound_group_session_id_length(s);
    char *id = calloc(n + 1, 1);
    cr_assert_eq(olm_inbound_group_session_id(s, (uint8_t *)id, n), n);
    return id;
}

/* ---- our helpers ---- */

/* Decrypts with ours, checks the outputs are untouched on failure; the plaintext or NULL. */
static uint8_t *our_decrypt(const mx_megolm_in *s, const char *msg, size_t *len, uint32_t *index)
{
    static uint8_t sentinel;
    uint8_t *plain = &sentinel;
    size_t n = 12345;
    uint32_t idx = 777;
    if (mx_megolm_decrypt(s, msg, &plain, &n, &idx) < 0) {
        cr_assert(plain == &sentinel && n == 12345 && idx == 777, "outputs changed on failure");
        return NULL;
    }
    cr_assert_eq(plain[n], 0, "no NUL after the plaintext");
    *len = n;
    if (index) *index = idx;
    return plain;
}

/* got_len is read after got was computed (argument order is unspecified in C) */
static void expect_plain(uint8_t *got, const size_t *got_len, const void *want, size_t want_len)
{
    cr_assert_not_null(got);
    cr_assert_eq(*got_len, want_len);
    cr_assert(memcmp(got, want, want_len) == 0);
    free(got);
}

/* A JSON-ish plaintext of about len bytes that says which message it is. */
static size_t make_plain(uint8_t *buf, size_t len, uint32_t i)
{
    int n = snprintf((char *)buf, len, "{\"type\":\"m.room.message\",\"content\":{\"body\":\"message %u", (unsigned)i);
    size_t k = (size_t)n < len ? (size_t)n : len;
    for (; k < len; k++) buf[k] = (uint8_t)('a' + (i + k) % 26);
    return len;
}

static void random_bytes(void *buf, size_t len) { mx_random(buf, len); }

/* Raw bytes of base64 text (test-side decoding). */
static size_t unb64(const char *text, uint8_t *out, size_t cap)
{
    long n = mx_b64_decode(text, strlen(text), out, cap);
    cr_assert_geq(n, 0);
    return (size_t)n;
}

static char *b64(const uint8_t *raw, size_t len)
{
    char *s = malloc(mx_b64_len(len) + 1);
    mx_b64_encode(raw, len, s, mx_b64_len(len) + 1);
    return s;
}

/* ---- the ratchet: libolm's known values ---- */

static const uint8_t KNOWN_R[128] = "0123456789ABCDEF0123456789ABCDEF"
                                    "0123456789ABCDEF0123456789ABCDEF"
                                    "0123456789ABCDEF0123456789ABCDEF"
                                    "0123456789ABCDEF0123456789ABCDEF";

static const uint8_t EXPECTED1[128] = {
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46,
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46,
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46,
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46,
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46,
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46,
    0xba, 0x9c, 0xd9, 0x55, 0x74, 0x1d, 0x1c, 0x16, 0x23, 0x23, 0xec, 0x82, 0x5e, 0x7c, 0x5c, 0xe8,
    0x89, 0xbb, 0xb4, 0x23, 0xa1, 0x8f, 0x23, 0x82, 0x8f, 0xb2, 0x09, 0x0d, 0x6e, 0x2a, 0xf8, 0x6a,
};

static const uint8_t EXPECTED2[128] = {
    0x54, 0x02, 0x2d, 0x7d, 0xc0, 0x29, 0x8e, 0x16, 0x37, 0xe2, 0x1c, 0x97, 0x15, 0x30, 0x92, 0xf9,
    0x33, 0xc0, 0x56, 0xff, 0x74, 0xfe, 0x1b, 0x92, 0x2d, 0x97, 0x1f, 0x24, 0x82, 0xc2, 0x85, 0x9c,
    0x70, 0x04, 0xc0, 0x1e, 0xe4, 0x9b, 0xd6, 0xef, 0xe0, 0x07, 0x35, 0x25, 0xaf, 0x9b, 0x16, 0x32,
    0xc5, 0xbe, 0x72, 0x6d, 0x12, 0x34, 0x9c, 0xc5, 0xbd, 0x47, 0x2b, 0xdc, 0x2d, 0xf6, 0x54, 0x0f,
    0x31, 0x12, 0x59, 0x11, 0x94, 0xfd, 0xa6, 0x17, 0xe5, 0x68, 0xc6, 0x83, 0x10, 0x1e, 0xae, 0xcd,
    0x7e, 0xdd, 0xd6, 0xde, 0x1f, 0xbc, 0x07, 0x67, 0xae, 0x34, 0xda, 0x1a, 0x09, 0xa5, 0x4e, 0xab,
    0xba, 0x9c, 0xd9, 0x55, 0x74, 0x1d, 0x1c, 0x16, 0x23, 0x23, 0xec, 0x82, 0x5e, 0x7c, 0x5c, 0xe8,
    0x89, 0xbb, 0xb4, 0x23, 0xa1, 0x8f, 0x23, 0x82, 0x8f, 0xb2, 0x09, 0x0d, 0x6e, 0x2a, 0xf8, 0x6a,
};

static const uint8_t EXPECTED3[128] = {
    0x54, 0x02, 0x2d, 0x7d, 0xc0, 0x29, 0x8e, 0x16, 0x37, 0xe2, 0x1c, 0x97, 0x15, 0x30, 0x92, 0xf9,
    0x33, 0xc0, 0x56, 0xff, 0x74, 0xfe, 0x1b, 0x92, 0x2d, 0x97, 0x1f, 0x24, 0x82, 0xc2, 0x85, 0x9c,
    0x55, 0x58, 0x8d, 0xf5, 0xb7, 0xa4, 0x88, 0x78, 0x42, 0x89, 0x27, 0x86, 0x81, 0x64, 0x58, 0x9f,
    0x36, 0x63, 0x44, 0x7b, 0x51, 0xed, 0xc3, 0x59, 0x5b, 0x03, 0x6c, 0xa6, 0x04, 0xc4, 0x6d, 0xcd,
    0x5c, 0x54, 0x85, 0x0b, 0xfa, 0x98, 0xa1, 0xfd, 0x79, 0xa9, 0xdf, 0x1c, 0xbe, 0x8f, 0xc5, 0x68,
    0x19, 0x37, 0xd3, 0x0c, 0x85, 0xc8, 0xc3, 0x1f, 0x7b, 0xb8, 0x28, 0x81, 0x6c, 0xf9, 0xff, 0x3b,
    0x95, 0x6c, 0xbf, 0x80, 0x7e, 0x65, 0x12, 0x6a, 0x49, 0x55, 0x8d, 0x45, 0xc8, 0x4a, 0x2e, 0x4c,
    0xd5, 0x6f, 0x03, 0xe2, 0x44, 0x16, 0xb9, 0x8e, 0x1c, 0xfd, 0x97, 0xc2, 0x06, 0xaa, 0x90, 0x7a,
};

Test(mx_megolm, ratchet_known_values)
{
    mx_megolm_ratchet r;
    mx_megolm_ratchet_init(&r, KNOWN_R, 0);
    mx_megolm_ratchet_advance(&r);
    cr_assert_eq(r.counter, 1);
    cr_assert(memcmp(r.data, EXPECTED1, 128) == 0, "one step");

    mx_megolm_ratchet_init(&r, KNOWN_R, 0);
    mx_megolm_ratchet_advance_to(&r, 1);
    cr_assert_eq(r.counter, 1);
    cr_assert(memcmp(r.data, EXPECTED1, 128) == 0, "advance_to 1");

    mx_megolm_ratchet_advance_to(&r, 0x1000000);
    cr_assert_eq(r.counter, 0x1000000);
    cr_assert(memcmp(r.data, EXPECTED2, 128) == 0, "advance_to 0x1000000");

    mx_megolm_ratchet_advance_to(&r, 0x1041506);
    cr_assert_eq(r.counter, 0x1041506);
    cr_assert(memcmp(r.data, EXPECTED3, 128) == 0, "advance_to 0x1041506");
}

Test(mx_megolm, ratchet_wraparound)
{
    mx_megolm_ratchet a, b;
    mx_megolm_ratchet_init(&a, KNOWN_R, 0xFFFFFFFFu);
    mx_megolm_ratchet_advance_to(&a, 0x1000000);
    cr_assert_eq(a.counter, 0x1000000);
    mx_megolm_ratchet_init(&b, KNOWN_R, 0);
    mx_megolm_ratchet_advance_to(&b, 0x2000000);
    cr_assert_eq(b.counter, 0x2000000);
    cr_assert(memcmp(a.data, b.data, 128) == 0);

    /* one step over the top: 0xFFFFFFFF -> 0 reseeds everything from R0 */
    mx_megolm_ratchet_init(&a, KNOWN_R, 0xFFFFFFFFu);
    mx_megolm_ratchet_advance(&a);
    OlmMegolm lo;
    megolm_init(&lo, KNOWN_R, 0xFFFFFFFFu);
    megolm_advance(&lo);
    cr_assert_eq(a.counter, 0);
    cr_assert_eq(lo.counter, 0);
    cr_assert(memcmp(a.data, lo.data, 128) == 0);
}

/* Single steps over every kind of boundary agree with advance_to and with libolm's ratchet. */
Test(mx_megolm, ratchet_steps_match_advance_to_and_libolm)
{
    static const uint32_t starts[] = {0,          0xF0,     0xFF0,      0xEFF0,     0xFFF0,     0xFEFFF0,
                                      0xFFEFF0,   0xFFFFF0, 0xFFFFFFF0u, 0x12345678, 0x7FFFFFF0, 0xFFFFEFF0u};
    for (size_t s = 0; s < sizeof starts / sizeof *starts; s++) {
        uint8_t init[128];
        random_bytes(init, sizeof init);
        mx_megolm_ratchet step;
        OlmMegolm lo;
        mx_megolm_ratchet_init(&step, init, starts[s]);
        megolm_init(&lo, init, starts[s]);
        for (uint32_t k = 1; k <= 300; k++) {
            mx_megolm_ratchet_advance(&step);
            megolm_advance(&lo);
            cr_assert_eq(step.counter, starts[s] + k);
            cr_assert(memcmp(step.data, lo.data, 128) == 0, "step %u from %#x", k, starts[s]);
            if (k % 37 == 0 || (step.counter & 0xFF) <= 1) {
                mx_megolm_ratchet jump;
                mx_megolm_ratchet_init(&jump, init, starts[s]);
                mx_megolm_ratchet_advance_to(&jump, step.counter);
                cr_assert_eq(jump.counter, step.counter);
                cr_assert(memcmp(jump.data, step.data, 128) == 0, "advance_to %#x", step.counter);
            }
        }
    }
}

/* advance_to to an index below the counter goes all the way round 2^32, as libolm's does. */
Test(mx_megolm, ratchet_full_wrap_matches_libolm)
{
    static const uint32_t pairs[][2] = {{0x10, 0x5}, {0x100, 0x5}, {0x12345678, 0x12345677}, {0xFFFFFFFFu, 0xFFFFFF00u}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        mx_megolm_ratchet ours;
        OlmMegolm lo;
        mx_megolm_ratchet_init(&ours, KNOWN_R, pairs[i][0]);
        megolm_init(&lo, KNOWN_R, pairs[i][0]);
        mx_megolm_ratchet_advance_to(&ours, pairs[i][1]);
        megolm_advance_to(&lo, pairs[i][1]);
        cr_assert_eq(ours.counter, pairs[i][1]);
        cr_assert(memcmp(ours.data, lo.data, 128) == 0, "%#x -> %#x", pairs[i][0], pairs[i][1]);
        /* R0 moved: not the same as staying put */
        cr_assert(memcmp(ours.data[0], KNOWN_R, 32) != 0);
    }
}

/* advance_to from random states to random targets (near and far, in hops) against libolm's. */
Test(mx_megolm, ratchet_random_jumps_match_libolm)
{
    for (int t = 0; t < 200; t++) {
        uint8_t init[128];
        uint32_t start, hops[4];
        random_bytes(init, sizeof init);
        random_bytes(&start, sizeof start);
        random_bytes(hops, sizeof hops);
        mx_megolm_ratchet ours;
        OlmMegolm lo;
        mx_megolm_ratchet_init(&ours, init, start);
        megolm_init(&lo, init, start);
        uint32_t at = start;
        for (int h = 0; h < 4; h++) {
            uint32_t d = hops[h] >> (8 * (uint32_t)(t % 4)); /* 32-, 24-, 16- and 8-bit distances */
            at += d;
            mx_megolm_ratchet_advance_to(&ours, at);
            megolm_advance_to(&lo, at);
            cr_assert_eq(ours.counter, at);
            cr_assert(memcmp(ours.data, lo.data, 128) == 0, "from %#x to %#x", start, at);
        }
    }
}

/* ---- libolm's known session key and messages (tests/test_group_session.cpp) ---- */

static const char KNOWN_KEY[] = "AgAAAAAwMTIzNDU2Nzg5QUJERUYwMTIzNDU2Nzg5QUJDREVGMDEyMzQ1Njc4OUFCREVGM"
                                "DEyMzQ1Njc4OUFCQ0RFRjAxMjM0NTY3ODlBQkRFRjAxMjM0NTY3ODlBQkNERUYwMTIzND"
                                "U2Nzg5QUJERUYwMTIzNDU2Nzg5QUJDREVGMDEyMw0bdg1BDq4Px/slBow06q8n/B9WBfw"
                                "WYyNOB8DlUmXGGwrFmaSb9bR/eY8xgERrxmP07hFmD9uqA2p8PMHdnV5ysmgufE6oLZ5+"
                                "8/mWQOW3VVTnDIlnwd8oHUYRuk8TCQ";
static const char KNOWN_MSG[] = "AwgAEhAcbh6UpbByoyZxufQ+h2B+8XHMjhR69G8F4+qjMaFlnIXusJZX3r8LnRORG9T3D"
                                "XFdbVuvIWrLyRfm4i8QRbe8VPwGRFG57B1CtmxanuP8bHtnnYqlwPsD";
static const char KNOWN_KEY2[] = "AgAAAAAwMTIzNDU2Nzg5QUJERUYwMTIzNDU2Nzg5QUJDREVGMDEyMzQ1Njc4OUFCREVGM"
                                 "DEyMzQ1Njc4OUFCQ0RFRjAxMjM0NTY3ODlBQkRFRjAxMjM0NTY3ODlBQkNERUYwMTIzND"
                                 "U2Nzg5QUJERUYwMTIzNDU2Nzg5QUJDREVGMDEyMztqJ7zOtqQtYqOo0CpvDXNlMhV3HeJ"
                                 "DpjrASKGLWdop4lx1cSN3Xv1TgfLPW8rhGiW+hHiMxd36nRuxscNv9k4oJA/KP+o0mi1w"
                                 "v44StrEJ1wwx9WZHBUIWkQbaBSuBDw";
static const char KNOWN_MSG2[] = "AwgAEhAcbh6UpbByoyZxufQ+h2B+8XHMjhR69G8nP4pNZGl/3QMgrzCZPmP+F2aPLyKPz"
                                 "xRPBMUkeXRJ6Iqm5NeOdx2eERgTW7P20CM+lL3Xpk+ZUOOPvsSQNaAL";

Test(mx_megolm, libolm_known_session_key_and_message)
{
    const char *keys[] = {KNOWN_KEY, KNOWN_KEY2}, *msgs[] = {KNOWN_MSG, KNOWN_MSG2};
    for (int k = 0; k < 2; k++) {
        mx_megolm_in *s = mx_megolm_in_new(keys[k]);
        cr_assert_not_null(s, "key %d", k);
        cr_assert_eq(mx_megolm_in_verified(s), 1);
        cr_assert_eq(mx_megolm_in_first_index(s), 0);
        size_t n;
        uint32_t idx = 99;
        expect_plain(our_decrypt(s, msgs[k], &n, &idx), &n, "Message", 7);
        cr_assert_eq(idx, 0);
        /* the other key's message: same ratchet, other signing key */
        cr_assert_null(our_decrypt(s, msgs[1 - k], &n, NULL));

        /* twiddle the signature as libolm's test does */
        char *bad = strdup(msgs[k]);
        bad[strlen(bad) - 1] = 'E';
        cr_assert_null(our_decrypt(s, bad, &n, NULL));
        free(bad);

        /* the ratchet in the key is "0123456789ABDEF0..." at index 0: our export says so */
        char *e = mx_megolm_in_export(s, 0);
        uint8_t raw[200];
        cr_assert_eq(unb64(e, raw, sizeof raw), 165);
        cr_assert_eq(raw[0], 1);
        cr_assert(memcmp(raw + 5, "0123456789ABDEF0123456789ABCDEF0123456789ABDEF0", 47) == 0);
        free(e);
        mx_megolm_in_free(s);
    }
}

/* ---- byte for byte: the same random bytes give libolm's session key and messages ---- */

Test(mx_megolm, same_random_same_bytes_as_libolm)
{
    static const size_t lens[] = {0, 1, 15, 16, 17, 31, 32, 300, 1000, 4097};
    uint8_t random[OLM_RANDOM], plain[5000];
    random_bytes(random, sizeof random);
    OlmOutboundGroupSession *lo = lo_out(random);
    mx_megolm_out *o = mx_megolm_out_from(random, 0, random + 128);

    char id[44];
    mx_megolm_out_id(o, id);
    char *loid = lo_out_id(lo);
    cr_assert_str_eq(id, loid);
    free(loid);

    for (int round = 0; round < 300; round++) {
        if (round % 50 == 0) {
            char *k1 = mx_megolm_out_session_key(o), *k2 = lo_session_key(lo);
            cr_assert_str_eq(k1, k2, "session key at %d", round);
            cr_assert_eq(strlen(k1), 306);
            free(k1);
            free(k2);
        }
        size_t len = lens[round % 10];
        make_plain(plain, len, (uint32_t)round);
        cr_assert_eq(mx_megolm_out_index(o), olm_outbound_group_session_message_index(lo));
        char *m1 = mx_megolm_encrypt(o, plain, len), *m2 = lo_encrypt(lo, plain, len);
        cr_assert_str_eq(m1, m2, "message %d (%zu bytes)", round, len);
        free(m1);
        free(m2);
    }
    cr_assert_eq(mx_megolm_out_index(o), 300);
    mx_megolm_out_free(o);
    lo_out_free(lo);
}


/* ---- interop: our sessions read by libolm ---- */

/* From a counter just below 2^24: 300 messages cross the 2^8, 2^16 and 2^24 reseeds. */
Test(mx_megolm, ours_to_libolm_across_reseeds)
{
    uint8_t random[OLM_RANDOM], plain[300];
    random_bytes(random, sizeof random);
    mx_megolm_out *o = mx_megolm_out_from(random, 0xFFFF00, random + 128);
    char *sk = mx_megolm_out_session_key(o);
    OlmInboundGroupSession *lo = lo_in(sk, 0);
    mx_megolm_in *in = mx_megolm_in_new(sk);
    cr_assert_not_null(lo);
    cr_assert_not_null(in);
    cr_assert_eq(olm_inbound_group_session_first_known_index(lo), 0xFFFF00);
    cr_assert_eq(mx_megolm_in_first_index(in), 0xFFFF00);
    for (uint32_t i = 0; i < 300; i++) {
        make_plain(plain, sizeof plain, i);
        char *m = mx_megolm_encrypt(o, plain, sizeof plain);
        size_t n;
        uint32_t idx = 0;
        expect_plain(lo_decrypt(lo, m, &n, &idx), &n, plain, sizeof plain);
        cr_assert_eq(idx, 0xFFFF00 + i);
        idx = 0;
        expect_plain(our_decrypt(in, m, &n, &idx), &n, plain, sizeof plain);
        cr_assert_eq(idx, 0xFFFF00 + i);
        free(m);
    }
    free(sk);
    lo_in_free(lo);
    mx_megolm_in_free(in);
    mx_megolm_out_free(o);
}

Test(mx_megolm, ours_to_libolm_skipping_and_out_of_order)
{
    enum { N = 700 };
    mx_megolm_out *o = mx_megolm_out_new();
    cr_assert_not_null(o);
    cr_assert_eq(mx_megolm_out_index(o), 0);
    char *sk = mx_megolm_out_session_key(o);
    char **msgs = calloc(N, sizeof *msgs);
    uint8_t plain[300];
    for (uint32_t i = 0; i < N; i++) {
        make_plain(plain, sizeof plain, i);
        msgs[i] = mx_megolm_encrypt(o, plain, sizeof plain);
        cr_assert_not_null(msgs[i]);
    }
    cr_assert_eq(mx_megolm_out_index(o), N);
    /* a key shared after 10 messages: libolm reads from index 10 on */
    char *late_key = mx_megolm_out_session_key(o);
    OlmInboundGroupSession *late = lo_in(late_key, 0);
    cr_assert_not_null(late);
    cr_assert_eq(olm_inbound_group_session_first_known_index(late), N);

    OlmInboundGroupSession *lo = lo_in(sk, 0);
    cr_assert_not_null(lo);
    size_t n;
    uint32_t idx;
    /* every third, then the rest backwards */
    for (uint32_t i = 0; i < N; i += 3) {
        make_plain(plain, sizeof plain, i);
        expect_plain(lo_decrypt(lo, msgs[i], &n, &idx), &n, plain, sizeof plain);
        cr_assert_eq(idx, i);
    }
    for (uint32_t i = N; i-- > 0;) {
        make_plain(plain, sizeof plain, i);
        expect_plain(lo_decrypt(lo, msgs[i], &n, &idx), &n, plain, sizeof plain);
        cr_assert_eq(idx, i);
        cr_assert_null(lo_decrypt(late, msgs[i], &n, &idx), "libolm read %u before its first index", i);
    }
    for (uint32_t i = 0; i < N; i++) free(msgs[i]);
    free(msgs);
    free(sk);
    free(late_key);
    lo_in_free(lo);
    lo_in_free(late);
    mx_megolm_out_free(o);
}

/* ---- interop: libolm's sessions read by us ---- */

Test(mx_megolm, libolm_to_ours_skipping_and_out_of_order)
{
    enum { N = 700 };
    uint8_t random[OLM_RANDOM], plain[300];
    random_bytes(random, sizeof random);
    OlmOutboundGroupSession *lo = lo_out(random);
    char **msgs = calloc(N, sizeof *msgs);
    for (uint32_t i = 0; i < N; i++) {
        make_plain(plain, sizeof plain, i);
        msgs[i] = lo_encrypt(lo, plain, sizeof plain);
    }
    /* two keys: at index 0 (from a fresh session with the same random bytes) and now */
    OlmOutboundGroupSession *again = lo_out(random);
    char *key0 = lo_session_key(again);
    char *keyN = lo_session_key(lo);
    mx_megolm_in *in = mx_megolm_in_new(key0), *late = mx_megolm_in_new(keyN);
    cr_assert_not_null(in);
    cr_assert_not_null(late);
    cr_assert_eq(mx_megolm_in_first_index(in), 0);
    cr_assert_eq(mx_megolm_in_first_index(late), N);
    cr_assert_eq(mx_megolm_in_verified(in), 1);

    static const uint32_t order[] = {0, 1, 2, 3, 500, 3, 499, 501, 699, 256, 255, 257, 0, 698, 600, 1};
    size_t n;
    uint32_t idx;
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        uint32_t i = order[k];
        make_plain(plain, sizeof plain, i);
        expect_plain(our_decrypt(in, msgs[i], &n, &idx), &n, plain, sizeof plain);
        cr_assert_eq(idx, i);
    }
    for (uint32_t i = 0; i < N; i += 7) {
        make_plain(plain, sizeof plain, i);
        expect_plain(our_decrypt(in, msgs[i], &n, &idx), &n, plain, sizeof plain);
        cr_assert_eq(idx, i);
        cr_assert_null(our_decrypt(late, msgs[i], &n, &idx), "read %u before the first index", i);
    }
    /* decrypting left the session as it was: first index, export at 0, pickle */
    cr_assert_eq(mx_megolm_in_first_index(in), 0);
    OlmInboundGroupSession *loin = lo_in(key0, 0);
    char *e1 = mx_megolm_in_export(in, 0), *e2 = lo_export(loin, 0);
    cr_assert_str_eq(e1, e2);
    uint8_t pk[32] = {1, 2, 3};
    char *p = mx_megolm_in_pickle(in, pk);
    mx_megolm_in *back = mx_megolm_in_unpickle(p, pk);
    cr_assert_not_null(back);
    cr_assert_eq(mx_megolm_in_first_index(back), 0);
    make_plain(plain, sizeof plain, 0);
    expect_plain(our_decrypt(back, msgs[0], &n, &idx), &n, plain, sizeof plain);

    for (uint32_t i = 0; i < N; i++) free(msgs[i]);
    free(msgs);
    free(key0);
    free(keyN);
    free(e1);
    free(e2);
    free(p);
    lo_in_free(loin);
    mx_megolm_in_free(in);
    mx_megolm_in_free(late);
    mx_megolm_in_free(back);
    lo_out_free(lo);
    lo_out_free(again);
}

/* ---- exports (version 1) both ways ---- */

Test(mx_megolm, exports_equal_libolm_at_any_index)
{
    uint8_t random[OLM_RANDOM];
    random_bytes(random, sizeof random);
    OlmOutboundGroupSession *out = lo_out(random);
    char *sk = lo_session_key(out);
    OlmInboundGroupSession *lo = lo_in(sk, 0);
    mx_megolm_in *in = mx_megolm_in_new(sk);
    uint32_t ks[40] = {0, 1, 2, 255, 256, 257, 65535, 65536, 0xFFFFFF, 0x1000000, 0x1041506, 0x7FFFFFFF};
    random_bytes(ks + 12, sizeof ks - 12 * sizeof *ks);
    for (size_t i = 12; i < 40; i++) ks[i] &= 0x7FFFFFFF;
    for (size_t i = 0; i < 40; i++) {
        char *a = mx_megolm_in_export(in, ks[i]), *b = lo_export(lo, ks[i]);
        cr_assert_not_null(a, "export at %#x", ks[i]);
        cr_assert_str_eq(a, b, "export at %#x", ks[i]);
        /* and an import of it exports the same again */
        mx_megolm_in *imp = mx_megolm_in_import(b);
        cr_assert_not_null(imp);
        cr_assert_eq(mx_megolm_in_first_index(imp), ks[i]);
        char *c = mx_megolm_in_export(imp, ks[i]);
        cr_assert_str_eq(c, b);
        free(a);
        free(b);
        free(c);
        mx_megolm_in_free(imp);
    }
    /* half the index space away is "before": no export (libolm agrees) */
    cr_assert_null(mx_megolm_in_export(in, 0x80000000u));
    cr_assert_null(mx_megolm_in_export(in, 0xFFFFFFFFu));
    OlmInboundGroupSession *fresh = lo_in(sk, 0); /* libolm measures from its latest ratchet */
    cr_assert_null(lo_export(fresh, 0x80000000u));
    lo_in_free(fresh);
    free(sk);
    lo_in_free(lo);
    mx_megolm_in_free(in);
    lo_out_free(out);
}

Test(mx_megolm, exports_imported_both_ways_decrypt_from_their_index)
{
    enum { N = 320, K = 300 };
    uint8_t random[OLM_RANDOM], plain[300];
    random_bytes(random, sizeof random);
    /* the same session on both sides: byte-identical messages */
    mx_megolm_out *o = mx_megolm_out_from(random, 0, random + 128);
    char *sk = mx_megolm_out_session_key(o);
    char **msgs = calloc(N, sizeof *msgs);
    for (uint32_t i = 0; i < N; i++) {
        make_plain(plain, sizeof plain, i);
        msgs[i] = mx_megolm_encrypt(o, plain, sizeof plain);
    }
    mx_megolm_in *ours = mx_megolm_in_new(sk);
    OlmInboundGroupSession *theirs = lo_in(sk, 0);

    /* ours -> libolm */
    char *e_ours = mx_megolm_in_export(ours, K);
    OlmInboundGroupSession *lo_imp = lo_in(e_ours, 1);
    cr_assert_not_null(lo_imp);
    cr_assert_eq(olm_inbound_group_session_first_known_index(lo_imp), K);
    cr_assert_eq(olm_inbound_group_session_is_verified(lo_imp), 0);
    /* libolm -> ours */
    char *e_theirs = lo_export(theirs, K);
    cr_assert_str_eq(e_ours, e_theirs);
    mx_megolm_in *our_imp = mx_megolm_in_import(e_theirs);
    cr_assert_not_null(our_imp);
    cr_assert_eq(mx_megolm_in_first_index(our_imp), K);
    cr_assert_eq(mx_megolm_in_verified(our_imp), 0);
    char id1[44], id2[44];
    mx_megolm_in_id(our_imp, id1);
    mx_megolm_out_id(o, id2);
    cr_assert_str_eq(id1, id2);

    size_t n;
    uint32_t idx;
    for (uint32_t i = 0; i < N; i++) {
        make_plain(plain, sizeof plain, i);
        uint8_t *a = lo_decrypt(lo_imp, msgs[i], &n, &idx);
        if (i < K) {
            cr_assert_null(a, "libolm read %u", i);
            cr_assert_null(our_decrypt(our_imp, msgs[i], &n, &idx), "we read %u", i);
            continue;
        }
        expect_plain(a, &n, plain, sizeof plain);
        expect_plain(our_decrypt(our_imp, msgs[i], &n, &idx), &n, plain, sizeof plain);
        cr_assert_eq(idx, i);
    }
    /* an import exports from its own index on only */
    cr_assert_null(mx_megolm_in_export(our_imp, K - 1));
    char *again = mx_megolm_in_export(our_imp, K);
    cr_assert_str_eq(again, e_theirs);
    char *later = mx_megolm_in_export(our_imp, K + 5), *lo_later = lo_export(theirs, K + 5);
    cr_assert_str_eq(later, lo_later);

    for (uint32_t i = 0; i < N; i++) free(msgs[i]);
    free(msgs);
    free(sk);
    free(e_ours);
    free(e_theirs);
    free(again);
    free(later);
    free(lo_later);
    mx_megolm_in_free(ours);
    mx_megolm_in_free(our_imp);
    lo_in_free(theirs);
    lo_in_free(lo_imp);
    mx_megolm_out_free(o);
}

Test(mx_megolm, session_ids_and_verified_flags)
{
    mx_megolm_out *o = mx_megolm_out_new();
    char *sk = mx_megolm_out_session_key(o);
    mx_megolm_in *in = mx_megolm_in_new(sk);
    OlmInboundGroupSession *lo = lo_in(sk, 0);
    char a[44], b[44];
    mx_megolm_out_id(o, a);
    mx_megolm_in_id(in, b);
    char *c = lo_in_id(lo);
    cr_assert_eq(strlen(a), 43);
    cr_assert_str_eq(a, b);
    cr_assert_str_eq(a, c);
    /* the id is the public key in the session key */
    uint8_t raw[240], pub[32];
    cr_assert_eq(unb64(sk, raw, sizeof raw), 229);
    cr_assert_eq(unb64(a, pub, sizeof pub), 32);
    cr_assert(memcmp(raw + 133, pub, 32) == 0);
    cr_assert_eq(raw[0], 2);
    cr_assert_eq(mx_megolm_in_verified(in), 1);
    char *e = mx_megolm_in_export(in, 0);
    mx_megolm_in *imp = mx_megolm_in_import(e);
    cr_assert_eq(mx_megolm_in_verified(imp), 0);
    /* two new sessions differ */
    mx_megolm_out *o2 = mx_megolm_out_new();
    mx_megolm_out_id(o2, b);
    cr_assert_str_neq(a, b);
    free(sk);
    free(c);
    free(e);
    mx_megolm_in_free(in);
    mx_megolm_in_free(imp);
    lo_in_free(lo);
    mx_megolm_out_free(o);
    mx_megolm_out_free(o2);
}

/* ---- what must fail ---- */

Test(mx_megolm, before_first_index_fails)
{
    mx_megolm_out *o = mx_megolm_out_new();
    char *msgs[8];
    for (int i = 0; i < 5; i++) msgs[i] = mx_megolm_encrypt(o, (const uint8_t *)"x", 1);
    char *sk = mx_megolm_out_session_key(o);
    for (int i = 5; i < 8; i++) msgs[i] = mx_megolm_encrypt(o, (const uint8_t *)"y", 1);
    mx_megolm_in *in = mx_megolm_in_new(sk);
    OlmInboundGroupSession *lo = lo_in(sk, 0);
    cr_assert_eq(mx_megolm_in_first_index(in), 5);
    size_t n;
    uint32_t idx;
    for (int i = 0; i < 8; i++) {
        uint8_t *a = our_decrypt(in, msgs[i], &n, &idx), *b = lo_decrypt(lo, msgs[i], &n, &idx);
        cr_assert_eq(a == NULL, i < 5, "ours at %d", i);
        cr_assert_eq(b == NULL, i < 5, "libolm at %d", i);
        if (a) cr_assert_eq(idx, (uint32_t)i);
        free(a);
        free(b);
        free(msgs[i]);
    }
    free(sk);
    mx_megolm_in_free(in);
    lo_in_free(lo);
    mx_megolm_out_free(o);
}

/* Flipping any bit of a message (raw, then base64 again) makes it fail, here and in libolm. */
Test(mx_megolm, every_flipped_bit_fails)
{
    mx_megolm_out *o = mx_megolm_out_new();
    char *sk = mx_megolm_out_session_key(o);
    mx_megolm_in *in = mx_megolm_in_new(sk);
    OlmInboundGroupSession *lo = lo_in(sk, 0);
    char *m = mx_megolm_encrypt(o, (const uint8_t *)"{\"body\":\"hello\"}", 16);
    uint8_t raw[512];
    size_t len = unb64(m, raw, sizeof raw);
    cr_assert_eq(len, 1 + 2 + 2 + 32 + 8 + 64);
    size_t n;
    uint32_t idx;
    for (size_t i = 0; i < len; i++)
        for (int bit = 0; bit < 8; bit += 3) {
            raw[i] ^= (uint8_t)(1 << bit);
            char *t = b64(raw, len);
            cr_assert_null(our_decrypt(in, t, &n, &idx), "byte %zu bit %d", i, bit);
            if (bit == 0) cr_assert_null(lo_decrypt(lo, t, &n, &idx), "libolm: byte %zu", i);
            free(t);
            raw[i] ^= (uint8_t)(1 << bit);
        }
    /* untouched, it still reads */
    expect_plain(our_decrypt(in, m, &n, &idx), &n, "{\"body\":\"hello\"}", 16);
    free(m);
    free(sk);
    mx_megolm_in_free(in);
    lo_in_free(lo);
    mx_megolm_out_free(o);
}

/* Test-side message builder: the sender's seed signs whatever payload we write, so that the
 * MAC, the padding and the parser are what must reject it (the signature is good). */
typedef struct {
    uint8_t seed[32], pub[32], sec[64], ratchet[128];
    mx_megolm_out *out;
    mx_megolm_in *in;
    OlmInboundGroupSession *lo;
} forger;

static void forger_init(forger *f)
{
    random_bytes(f->seed, 32);
    random_bytes(f->ratchet, 128);
    mx_ed25519_from_seed(f->seed, f->pub, f->sec);
    f->out = mx_megolm_out_from(f->ratchet, 0, f->seed);
    char *sk = mx_megolm_out_session_key(f->out);
    f->in = mx_megolm_in_new(sk);
    f->lo = lo_in(sk, 0);
    cr_assert(f->in && f->lo);
    free(sk);
}

static void forger_free(forger *f)
{
    mx_megolm_out_free(f->out);
    mx_megolm_in_free(f->in);
    lo_in_free(f->lo);
}

/* The AES key | HMAC key | IV of message index, derived here from the ratchet. */
static void forger_keys(const forger *f, uint32_t index, uint8_t keys[80])
{
    mx_megolm_ratchet r;
    mx_megolm_ratchet_init(&r, f->ratchet, 0);
    mx_megolm_ratchet_advance_to(&r, index);
    cr_assert_eq(mx_hkdf_sha256(NULL, 0, &r.data[0][0], 128, (const uint8_t *)"MEGOLM_KEYS", 11, keys, 80), 0);
}

/* 0x03 | payload | MAC (good, or with a flipped bit) | signature, as base64. */
static char *forge(const forger *f, const uint8_t *payload, size_t len, const uint8_t keys[80], int bad_mac,
                   uint8_t version)
{
    uint8_t raw[4096], mac[32];
    raw[0] = version;
    memcpy(raw + 1, payload, len);
    mx_hmac_sha256(keys + 32, 32, raw, 1 + len, mac);
    if (bad_mac) mac[bad_mac % 8] ^= 0x40;
    memcpy(raw + 1 + len, mac, 8);
    mx_ed25519_sign(f->sec, raw, 1 + len + 8, raw + 1 + len + 8);
    return b64(raw, 1 + len + 8 + 64);
}

/* payload = index field | ciphertext field of AES-CBC(plain) (whole, or cut to ct_cut bytes) */
static size_t payload_for(uint8_t *p, uint32_t index, const uint8_t keys[80], const uint8_t *plain, size_t len,
                          long ct_cut)
{
    uint8_t ct[2048];
    long ctn = mx_aes256_cbc_encrypt(keys, keys + 64, plain, len, ct);
    cr_assert_gt(ctn, 0);
    if (ct_cut >= 0) ctn = ct_cut;
    size_t k = 0;
    p[k++] = 0x08;
    for (uint32_t v = index; ; v >>= 7) {
        p[k++] = (uint8_t)((v & 0x7F) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80) break;
    }
    p[k++] = 0x12;
    p[k++] = (uint8_t)ctn; /* < 128 here */
    memcpy(p + k, ct, (size_t)ctn);
    return k + (size_t)ctn;
}

/* Both implementations accept (with this plaintext) or both refuse. */
static void both(const forger *f, const char *msg, const void *want, size_t want_len, const char *what)
{
    size_t n, n2;
    uint32_t idx;
    uint8_t *a = our_decrypt(f->in, msg, &n, &idx), *b = lo_decrypt(f->lo, msg, &n2, &idx);
    if (!want) {
        cr_assert_null(a, "ours accepted: %s", what);
        cr_assert_null(b, "libolm accepted: %s", what);
        return;
    }
    cr_assert_not_null(a, "ours refused: %s", what);
    cr_assert_not_null(b, "libolm refused: %s", what);
    expect_plain(a, &n, want, want_len);
    expect_plain(b, &n2, want, want_len);
}

/* Ours refuses where libolm is more lenient (it reads only the last padding byte, and keeps
 * the last of repeated fields). */
static void ours_refuses(const forger *f, const char *msg, const char *what)
{
    size_t n;
    uint32_t idx;
    cr_assert_null(our_decrypt(f->in, msg, &n, &idx), "ours accepted: %s", what);
}

Test(mx_megolm, resigned_tampering_caught_by_mac_padding_and_parser)
{
    forger f;
    forger_init(&f);
    uint8_t keys[80], keys7[80], p[2048];
    forger_keys(&f, 3, keys);
    forger_keys(&f, 7, keys7);
    const uint8_t *text = (const uint8_t *)"a plaintext of 40 bytes, give or take!!!";
    size_t len = 40;

    /* control: our builder's message is the real thing, byte for byte */
    for (int i = 0; i < 3; i++) free(mx_megolm_encrypt(f.out, text, len));
    char *real = mx_megolm_encrypt(f.out, text, len);
    size_t pl = payload_for(p, 3, keys, text, len, -1);
    char *m = forge(&f, p, pl, keys, 0, 3);
    cr_assert_str_eq(m, real);
    both(&f, m, text, len, "control");
    free(m);
    free(real);

    /* bad MAC, every position of it */
    for (int b = 1; b <= 8; b++) {
        m = forge(&f, p, pl, keys, b, 3);
        both(&f, m, NULL, 0, "bad mac");
        free(m);
    }
    /* a ciphertext byte changed after the MAC was computed (then signed again) */
    {
        uint8_t raw[4096];
        uint8_t mac[32];
        raw[0] = 3;
        memcpy(raw + 1, p, pl);
        mx_hmac_sha256(keys + 32, 32, raw, 1 + pl, mac);
        raw[1 + pl - 5] ^= 1;
        memcpy(raw + 1 + pl, mac, 8);
        mx_ed25519_sign(f.sec, raw, 1 + pl + 8, raw + 1 + pl + 8);
        char *t = b64(raw, 1 + pl + 8 + 64);
        both(&f, t, NULL, 0, "ciphertext changed under the MAC");
        free(t);
    }
    /* the index changed to 7, MAC by index 3's key: the keys of 7 do not match */
    p[1] = 7;
    m = forge(&f, p, pl, keys, 0, 3);
    both(&f, m, NULL, 0, "index changed");
    free(m);
    p[1] = 3;
    /* MAC'd with the keys of index 7 while claiming 3 */
    m = forge(&f, p, pl, keys7, 0, 3);
    both(&f, m, NULL, 0, "keys of another index");
    free(m);

    /* bad padding: 32 bytes of plaintext ending in 0x00, cut before the padding block */
    uint8_t block[32];
    memset(block, 'z', sizeof block);
    block[31] = 0x00;
    pl = payload_for(p, 3, keys, block, 32, 32);
    m = forge(&f, p, pl, keys, 0, 3);
    ours_refuses(&f, m, "bad padding 0x00"); /* libolm reads only the last byte */
    free(m);
    block[31] = 0x11;
    pl = payload_for(p, 3, keys, block, 32, 32);
    m = forge(&f, p, pl, keys, 0, 3);
    ours_refuses(&f, m, "bad padding 0x11"); /* libolm reads only the last byte */
    free(m);
    block[30] = 0x01;
    block[31] = 0x02; /* 0x02 0x02 wanted, 0x01 0x02 given */
    pl = payload_for(p, 3, keys, block, 32, 32);
    m = forge(&f, p, pl, keys, 0, 3);
    ours_refuses(&f, m, "bad padding 01 02"); /* libolm reads only the last byte */
    free(m);
    block[31] = 0x01; /* good padding inside the cut: 31 bytes */
    pl = payload_for(p, 3, keys, block, 32, 32);
    m = forge(&f, p, pl, keys, 0, 3);
    both(&f, m, block, 31, "padding of one inside");
    free(m);
    /* ciphertext not a whole number of blocks */
    pl = payload_for(p, 3, keys, text, len, 40);
    m = forge(&f, p, pl, keys, 0, 3);
    ours_refuses(&f, m, "40-byte ciphertext"); /* libolm decrypts the whole blocks */
    free(m);

    /* wrong version byte */
    pl = payload_for(p, 3, keys, text, len, -1);
    m = forge(&f, p, pl, keys, 0, 4);
    both(&f, m, NULL, 0, "version 4");
    free(m);
    m = forge(&f, p, pl, keys, 0, 2);
    both(&f, m, NULL, 0, "version 2");
    free(m);

    /* unknown fields are skipped by both (a varint one and a string one, before and after) */
    {
        uint8_t q[2048];
        size_t k = 0;
        q[k++] = 0x18;
        q[k++] = 0x85;
        q[k++] = 0x01;
        memcpy(q + k, p, pl);
        k += pl;
        q[k++] = 0x22;
        q[k++] = 3;
        q[k++] = 'a';
        q[k++] = 'b';
        q[k++] = 'c';
        m = forge(&f, q, k, keys, 0, 3);
        both(&f, m, text, len, "unknown fields");
        free(m);
        /* fields in the other order */
        size_t ilen = 2, clen = pl - ilen;
        memcpy(q, p + ilen, clen);
        memcpy(q + clen, p, ilen);
        m = forge(&f, q, pl, keys, 0, 3);
        both(&f, m, text, len, "ciphertext first");
        free(m);
        /* non-minimal varint for the index (3 as 0x83 0x00) */
        q[0] = 0x08;
        q[1] = 0x83;
        q[2] = 0x00;
        memcpy(q + 3, p + 2, pl - 2);
        m = forge(&f, q, pl + 1, keys, 0, 3);
        both(&f, m, text, len, "long varint");
        free(m);
    }
    /* missing fields */
    m = forge(&f, p + 2, pl - 2, keys, 0, 3);
    both(&f, m, NULL, 0, "no index");
    free(m);
    m = forge(&f, p, 2, keys, 0, 3);
    both(&f, m, NULL, 0, "no ciphertext");
    free(m);
    m = forge(&f, p, 0, keys, 0, 3);
    both(&f, m, NULL, 0, "empty payload");
    free(m);

    /* ours only (libolm is more lenient): a repeated field, a 33-bit index, a truncated field */
    size_t n;
    uint32_t idx;
    {
        uint8_t q[2048];
        memcpy(q, p, 2);
        memcpy(q + 2, p, pl);
        m = forge(&f, q, pl + 2, keys, 0, 3);
        cr_assert_null(our_decrypt(f.in, m, &n, &idx), "repeated index");
        free(m);
        static const uint8_t big[] = {0x08, 0x83, 0x80, 0x80, 0x80, 0x10};
        memcpy(q, big, sizeof big);
        memcpy(q + sizeof big, p + 2, pl - 2);
        m = forge(&f, q, pl - 2 + sizeof big, keys, 0, 3);
        cr_assert_null(our_decrypt(f.in, m, &n, &idx), "index over 32 bits");
        free(m);
        memcpy(q, p, pl);
        q[3] = (uint8_t)(q[3] + 16); /* ciphertext length past the end */
        m = forge(&f, q, pl, keys, 0, 3);
        cr_assert_null(our_decrypt(f.in, m, &n, &idx), "length past the end");
        free(m);
        q[3] = 0x80; /* unterminated varint */
        m = forge(&f, q, 4, keys, 0, 3);
        cr_assert_null(our_decrypt(f.in, m, &n, &idx), "open varint");
        free(m);
        q[2] = 0x0D; /* wire type 5 */
        m = forge(&f, q, pl, keys, 0, 3);
        cr_assert_null(our_decrypt(f.in, m, &n, &idx), "wire type 5");
        free(m);
    }
    forger_free(&f);
}

Test(mx_megolm, wrong_session_fails)
{
    mx_megolm_out *a = mx_megolm_out_new(), *b = mx_megolm_out_new();
    char *ka = mx_megolm_out_session_key(a), *kb = mx_megolm_out_session_key(b);
    mx_megolm_in *ina = mx_megolm_in_new(ka), *inb = mx_megolm_in_new(kb);
    OlmInboundGroupSession *lob = lo_in(kb, 0);
    char *m = mx_megolm_encrypt(a, (const uint8_t *)"for a", 5);
    size_t n;
    uint32_t idx;
    cr_assert_null(our_decrypt(inb, m, &n, &idx));
    cr_assert_null(lo_decrypt(lob, m, &n, &idx));
    expect_plain(our_decrypt(ina, m, &n, &idx), &n, "for a", 5);
    /* same ratchet, other signing key: the signature catches it */
    uint8_t random[OLM_RANDOM], seed2[32];
    random_bytes(random, sizeof random);
    random_bytes(seed2, sizeof seed2);
    mx_megolm_out *c = mx_megolm_out_from(random, 0, random + 128), *d = mx_megolm_out_from(random, 0, seed2);
    char *kc = mx_megolm_out_session_key(c);
    mx_megolm_in *inc = mx_megolm_in_new(kc);
    char *md = mx_megolm_encrypt(d, (const uint8_t *)"from d", 6);
    cr_assert_null(our_decrypt(inc, md, &n, &idx));
    free(ka);
    free(kb);
    free(kc);
    free(m);
    free(md);
    mx_megolm_in_free(ina);
    mx_megolm_in_free(inb);
    mx_megolm_in_free(inc);
    lo_in_free(lob);
    mx_megolm_out_free(a);
    mx_megolm_out_free(b);
    mx_megolm_out_free(c);
    mx_megolm_out_free(d);
}

static void expect_no_session(const char *text, const char *what)
{
    cr_assert_null(mx_megolm_in_new(text), "in_new took %s", what);
    cr_assert_null(mx_megolm_in_import(text), "import took %s", what);
}

Test(mx_megolm, garbage_and_truncated_text_fails)
{
    mx_megolm_out *o = mx_megolm_out_new();
    char *sk = mx_megolm_out_session_key(o);
    mx_megolm_in *in = mx_megolm_in_new(sk);
    char *m = mx_megolm_encrypt(o, (const uint8_t *)"some plaintext here", 19);
    char *e = mx_megolm_in_export(in, 0);
    size_t n;
    uint32_t idx;
    static const char *junk[] = {"", "A", "AA", "AAA", "AAAA", "AA==", "====", "!!!!", "Aw", "Aw==", "AwgA",
                                 "AwgAEhAc", "\xff\xfe", " ", "Aw gA", "{}", "AwgAEhAcbh6U\n"};
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
        cr_assert_null(our_decrypt(in, junk[i], &n, &idx), "junk %zu", i);
        expect_no_session(junk[i], junk[i]);
    }
    /* every prefix, and a character too many */
    size_t ml = strlen(m);
    for (size_t cut = 0; cut < ml; cut++) {
        char *t = strndup(m, cut);
        cr_assert_null(our_decrypt(in, t, &n, &idx), "prefix %zu", cut);
        free(t);
    }
    char *longer = malloc(ml + 2);
    memcpy(longer, m, ml);
    strcpy(longer + ml, "A");
    cr_assert_null(our_decrypt(in, longer, &n, &idx));
    free(longer);
    /* padded base64 of a real message is fine (receivers accept padding) */
    {
        uint8_t raw[512];
        size_t len = unb64(m, raw, sizeof raw);
        char *t = malloc(mx_b64_len(len) + 4);
        strcpy(t, m);
        while (strlen(t) % 4) strcat(t, "=");
        expect_plain(our_decrypt(in, t, &n, &idx), &n, "some plaintext here", 19);
        free(t);
    }
    /* session keys and exports: prefixes, a changed character, each other's format */
    size_t kl = strlen(sk);
    for (size_t cut = 0; cut < kl; cut += 3) {
        char *t = strndup(sk, cut);
        expect_no_session(t, "a cut key");
        free(t);
    }
    for (size_t i = 0; i < kl; i += 5) {
        char *t = strdup(sk);
        t[i] = t[i] == 'A' ? 'B' : 'A';
        cr_assert_null(mx_megolm_in_new(t), "changed char %zu", i);
        free(t);
    }
    cr_assert_null(mx_megolm_in_import(sk));
    cr_assert_null(mx_megolm_in_new(e));
    /* an export with another version byte */
    {
        uint8_t raw[200];
        size_t len = unb64(e, raw, sizeof raw);
        raw[0] = 2;
        char *t = b64(raw, len);
        cr_assert_null(mx_megolm_in_import(t));
        free(t);
    }
    /* random bytes as base64, and random printable text */
    for (int t = 0; t < 500; t++) {
        uint8_t raw[400];
        uint16_t len;
        random_bytes(&len, sizeof len);
        len %= sizeof raw;
        random_bytes(raw, len);
        if (t % 2) raw[0] = 3; /* looks like a message */
        char *s = b64(raw, len);
        cr_assert_null(our_decrypt(in, s, &n, &idx));
        expect_no_session(s, "random");
        for (size_t k = 0; s[k]; k++) s[k] = (char)(32 + raw[k % (len ? len : 1)] % 95);
        cr_assert_null(our_decrypt(in, s, &n, &idx));
        expect_no_session(s, "random text");
        free(s);
    }
    /* NULLs */
    uint8_t *pl;
    cr_assert_eq(mx_megolm_decrypt(in, NULL, &pl, &n, &idx), -1);
    cr_assert_eq(mx_megolm_decrypt(NULL, m, &pl, &n, &idx), -1);
    expect_no_session(NULL, "NULL");
    uint8_t key[32] = {0};
    cr_assert_null(mx_megolm_in_unpickle(NULL, key));
    cr_assert_null(mx_megolm_out_unpickle(NULL, key));
    mx_megolm_out_free(NULL);
    mx_megolm_in_free(NULL);
    free(sk);
    free(m);
    free(e);
    mx_megolm_in_free(in);
    mx_megolm_out_free(o);
}

/* Random edits of a good message (bytes set, inserted, removed, cut) never pass or crash. */
Test(mx_megolm, mutated_messages_fail)
{
    mx_megolm_out *o = mx_megolm_out_new();
    char *sk = mx_megolm_out_session_key(o);
    mx_megolm_in *in = mx_megolm_in_new(sk);
    uint8_t plain[300];
    make_plain(plain, sizeof plain, 1);
    char *m = mx_megolm_encrypt(o, plain, sizeof plain);
    uint8_t raw[1024], mut[1100];
    size_t len = unb64(m, raw, sizeof raw);
    size_t n;
    uint32_t idx;
    for (int t = 0; t < 400; t++) {
        uint32_t r[4];
        random_bytes(r, sizeof r);
        size_t ml = len, at = r[1] % len;
        memcpy(mut, raw, len);
        switch (r[0] % 4) {
        case 0: mut[at] = (uint8_t)(mut[at] + 1 + r[2] % 255); break;
        case 1: memmove(mut + at + 1, mut + at, len - at); mut[at] = (uint8_t)r[2]; ml++; break;
        case 2: memmove(mut + at, mut + at + 1, len - at - 1); ml--; break;
        default: ml = at; break;
        }
        char *s = b64(mut, ml);
        cr_assert_null(our_decrypt(in, s, &n, &idx), "mutation %u at %zu", r[0] % 4, at);
        free(s);
    }
    free(sk);
    free(m);
    mx_megolm_in_free(in);
    mx_megolm_out_free(o);
}

Test(mx_megolm, plaintext_sizes_round_trip)
{
    mx_megolm_out *o = mx_megolm_out_new();
    char *sk = mx_megolm_out_session_key(o);
    mx_megolm_in *in = mx_megolm_in_new(sk);
    OlmInboundGroupSession *lo = lo_in(sk, 0);
    static uint8_t big[65536 + 7];
    random_bytes(big, sizeof big);
    size_t n;
    uint32_t idx;
    for (size_t len = 0; len <= 50; len++) {
        char *m = mx_megolm_encrypt(o, big, len);
        expect_plain(our_decrypt(in, m, &n, &idx), &n, big, len);
        expect_plain(lo_decrypt(lo, m, &n, &idx), &n, big, len);
        cr_assert_eq(idx, len);
        free(m);
    }
    char *m = mx_megolm_encrypt(o, NULL, 0);
    expect_plain(our_decrypt(in, m, &n, &idx), &n, "", 0);
    free(m);
    m = mx_megolm_encrypt(o, big, sizeof big);
    expect_plain(our_decrypt(in, m, &n, &idx), &n, big, sizeof big);
    expect_plain(lo_decrypt(lo, m, &n, &idx), &n, big, sizeof big);
    free(m);
    uint32_t before = mx_megolm_out_index(o);
    cr_assert_null(mx_megolm_encrypt(o, big, ((size_t)1 << 30) + 1));
    cr_assert_null(mx_megolm_encrypt(o, NULL, 5));
    cr_assert_eq(mx_megolm_out_index(o), before, "a refused encryption advanced the ratchet");
    free(sk);
    mx_megolm_in_free(in);
    lo_in_free(lo);
    mx_megolm_out_free(o);
}

/* ---- pickles ---- */

static void expect_pickle_refused(const char *p, const uint8_t key[32], const char *what)
{
    cr_assert_null(mx_megolm_out_unpickle(p, key), "out took %s", what);
    cr_assert_null(mx_megolm_in_unpickle(p, key), "in took %s", what);
}

/* Every flipped bit of the raw pickle, a cut, a wrong key: refused. */
static void pickle_tamper(const char *p, const uint8_t key[32])
{
    uint8_t raw[400];
    size_t len = unb64(p, raw, sizeof raw);
    for (size_t i = 0; i < len; i++) {
        raw[i] ^= (uint8_t)(1 << (i % 8));
        char *t = b64(raw, len);
        expect_pickle_refused(t, key, "a flipped bit");
        free(t);
        raw[i] ^= (uint8_t)(1 << (i % 8));
    }
    for (size_t cut = 0; cut < len; cut += 7) {
        char *t = b64(raw, cut);
        expect_pickle_refused(t, key, "a cut pickle");
        free(t);
    }
    char *t = b64(raw, len);
    char *longer = malloc(strlen(t) + 5);
    sprintf(longer, "%sAAAA", t);
    expect_pickle_refused(longer, key, "a longer pickle");
    free(longer);
    free(t);
    uint8_t other[32];
    memcpy(other, key, 32);
    for (int i = 0; i < 32; i += 5) {
        other[i] ^= 0x80;
        expect_pickle_refused(p, other, "a wrong key");
        other[i] ^= 0x80;
    }
}

Test(mx_megolm, out_pickle_round_trip)
{
    uint8_t key[32], random[OLM_RANDOM];
    random_bytes(key, sizeof key);
    random_bytes(random, sizeof random);
    mx_megolm_out *o = mx_megolm_out_from(random, 0, random + 128);
    char *sk = mx_megolm_out_session_key(o);
    OlmInboundGroupSession *lo = lo_in(sk, 0);
    for (int i = 0; i < 260; i++) free(mx_megolm_encrypt(o, (const uint8_t *)"before", 6));
    char *p = mx_megolm_out_pickle(o, key), *p2 = mx_megolm_out_pickle(o, key);
    cr_assert_not_null(p);
    cr_assert_str_neq(p, p2, "two pickles of one state are equal (no fresh nonce)");
    cr_assert_null(strchr(p, '='));
    mx_megolm_out *back = mx_megolm_out_unpickle(p, key), *back2 = mx_megolm_out_unpickle(p2, key);
    cr_assert_not_null(back);
    cr_assert_not_null(back2);
    cr_assert_eq(mx_megolm_out_index(back), 260);
    char a[44], b[44];
    mx_megolm_out_id(o, a);
    mx_megolm_out_id(back, b);
    cr_assert_str_eq(a, b);
    char *k1 = mx_megolm_out_session_key(o), *k2 = mx_megolm_out_session_key(back);
    cr_assert_str_eq(k1, k2);
    /* the unpickled session goes on exactly as the original would */
    for (int i = 0; i < 5; i++) {
        char *m1 = mx_megolm_encrypt(o, (const uint8_t *)"after", 5), *m2 = mx_megolm_encrypt(back, (const uint8_t *)"after", 5);
        cr_assert_str_eq(m1, m2);
        size_t n;
        uint32_t idx;
        expect_plain(lo_decrypt(lo, m2, &n, &idx), &n, "after", 5);
        cr_assert_eq(idx, 260 + (uint32_t)i);
        free(m1);
        free(m2);
    }
    /* not an inbound pickle */
    cr_assert_null(mx_megolm_in_unpickle(p, key));
    pickle_tamper(p, key);
    free(sk);
    free(p);
    free(p2);
    free(k1);
    free(k2);
    lo_in_free(lo);
    mx_megolm_out_free(o);
    mx_megolm_out_free(back);
    mx_megolm_out_free(back2);
}

Test(mx_megolm, in_pickle_round_trip)
{
    uint8_t key[32], random[OLM_RANDOM], plain[300];
    random_bytes(key, sizeof key);
    random_bytes(random, sizeof random);
    OlmOutboundGroupSession *lo = lo_out(random);
    for (int i = 0; i < 3; i++) free(lo_encrypt(lo, (const uint8_t *)"skip", 4));
    char *sk = lo_session_key(lo);
    char *msgs[20];
    for (uint32_t i = 0; i < 20; i++) {
        make_plain(plain, sizeof plain, i);
        msgs[i] = lo_encrypt(lo, plain, sizeof plain);
    }
    mx_megolm_in *in = mx_megolm_in_new(sk);
    size_t n;
    uint32_t idx;
    make_plain(plain, sizeof plain, 15);
    expect_plain(our_decrypt(in, msgs[15], &n, &idx), &n, plain, sizeof plain); /* fills the cache */
    char *p = mx_megolm_in_pickle(in, key);
    cr_assert_not_null(p);
    mx_megolm_in *back = mx_megolm_in_unpickle(p, key);
    cr_assert_not_null(back);
    cr_assert_eq(mx_megolm_in_first_index(back), 3);
    cr_assert_eq(mx_megolm_in_verified(back), 1);
    char a[44], b[44];
    mx_megolm_in_id(in, a);
    mx_megolm_in_id(back, b);
    cr_assert_str_eq(a, b);
    char *e1 = mx_megolm_in_export(in, 3), *e2 = mx_megolm_in_export(back, 3);
    cr_assert_str_eq(e1, e2);
    for (uint32_t i = 0; i < 20; i++) {
        make_plain(plain, sizeof plain, i);
        expect_plain(our_decrypt(back, msgs[i], &n, &idx), &n, plain, sizeof plain);
        cr_assert_eq(idx, 3 + i);
    }
    /* an imported (unverified) session stays unverified */
    mx_megolm_in *imp = mx_megolm_in_import(e1);
    char *pi = mx_megolm_in_pickle(imp, key);
    mx_megolm_in *impb = mx_megolm_in_unpickle(pi, key);
    cr_assert_not_null(impb);
    cr_assert_eq(mx_megolm_in_verified(impb), 0);
    cr_assert_null(mx_megolm_out_unpickle(p, key));
    pickle_tamper(p, key);
    pickle_tamper(pi, key);
    for (int i = 0; i < 20; i++) free(msgs[i]);
    free(sk);
    free(p);
    free(pi);
    free(e1);
    free(e2);
    mx_megolm_in_free(in);
    mx_megolm_in_free(back);
    mx_megolm_in_free(imp);
    mx_megolm_in_free(impb);
    lo_out_free(lo);
}

Test(mx_megolm, random_pickle_text_refused)
{
    uint8_t key[32];
    random_bytes(key, sizeof key);
    for (int t = 0; t < 300; t++) {
        uint8_t raw[300];
        uint16_t len;
        random_bytes(&len, sizeof len);
        len %= sizeof raw;
        random_bytes(raw, len);
        if (t % 3 == 0 && len >= 4) memcpy(raw, "MG\x01O", 4);
        if (t % 3 == 1 && len >= 4) memcpy(raw, "MG\x01I", 4);
        char *s = b64(raw, len);
        expect_pickle_refused(s, key, "random");
        free(s);
    }
    static const char *junk[] = {"", "A", "====", "not a pickle", "TUcBTw"};
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) expect_pickle_refused(junk[i], key, junk[i]);
}
