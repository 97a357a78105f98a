/* bench_megolm.c — Megolm encrypt and decrypt per second, ours (mx_megolm) beside libolm on the
 * same inputs, and (to come) Olm session setup time.
 *
 * A program, not a test. Both outbound sessions start from the same 160 random bytes, so they
 * produce byte-identical messages (checked here); the plaintext is a 300-byte m.room.message
 * event as JSON, the size the bot sends. For each side it times:
 *   encrypt   — mx_megolm_encrypt / olm_group_encrypt, one message after another (each advances
 *               the ratchet one step; base64 output included);
 *   decrypt   — every message of the run, in order, by an inbound session made from the session
 *               key at index 0 (the usual case: a room's messages arrive in order);
 *   decrypt*  — the same messages in a shuffled order (each one may need a walk of up to a few
 *               hundred hashes from the session's first ratchet; libolm and we both keep the
 *               first ratchet and the latest one reached).
 * libolm's API overwrites its input, so each of its calls gets a fresh copy of the message (a
 * memcpy of ~500 bytes, next to ~100 µs of work: noise); its plaintext buffer is allocated once.
 * Ours returns a malloc'd plaintext that is freed in the loop. Each figure is the best of ROUNDS
 * rounds, the two sides interleaved, so that both see the same machine state. The ratio printed
 * is ours / libolm (higher is better for us; the target for Megolm throughput is >= 1.0).
 *
 * Usage: bench_megolm [messages per round]   (default 4000) */
#include <olm/olm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mx_megolm.h"
#include "mx_olm.h"

#define ROUNDS 5
#define TARGET_RATIO 1.0

static const char EVENT[] =
    "{\"type\":\"m.room.message\",\"room_id\":\"!cardroom304:example.org\",\"content\":{\"msgtype\":"
    "\"m.text\",\"body\":\"North bids 160 on spades; East passes; South doubles. Trick 3: 7\\u2660 K\\u2660 "
    "A\\u2660 2\\u2660\",\"format\":\"org.matrix.custom.html\",\"formatted_body\":\"<b>North</b> bids 160"
    " on spades\"},\"m.relates_to\":{}}";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_megolm: %s\n", what);
    exit(1);
}

/* ---- libolm ---- */

static OlmOutboundGroupSession *lo_out(const uint8_t random[160])
{
    OlmOutboundGroupSession *o = olm_outbound_group_session(malloc(olm_outbound_group_session_size()));
    uint8_t copy[160];
    memcpy(copy, random, sizeof copy);
    if (olm_init_outbound_group_session(o, copy, sizeof copy) == olm_error()) die("libolm outbound");
    return o;
}

static OlmInboundGroupSession *lo_in(const char *key)
{
    OlmInboundGroupSession *s = olm_inbound_group_session(malloc(olm_inbound_group_session_size()));
    char *copy = strdup(key);
    if (olm_init_inbound_group_session(s, (uint8_t *)copy, strlen(copy)) == olm_error()) die("libolm inbound");
    free(copy);
    return s;
}

static void lo_in_free(OlmInboundGroupSession *s)
{
    olm_clear_inbound_group_session(s);
    free(s);
}

/* ---- the timed loops: seconds for n operations ---- */

static double enc_ours(mx_megolm_out *o, const uint8_t *p, size_t len, int n, char **keep)
{
    double t = now();
    for (int i = 0; i < n; i++) {
        char *m = mx_megolm_encrypt(o, p, len);
        if (!m) die("our encrypt");
        if (keep) keep[i] = m;
        else free(m);
    }
    return now() - t;
}

static double enc_libolm(OlmOutboundGroupSession *o, const uint8_t *p, size_t len, int n, char **keep)
{
    size_t cap = olm_group_encrypt_message_length(o, len) + 16;
    double t = now();
    for (int i = 0; i < n; i++) {
        size_t ml = olm_group_encrypt_message_length(o, len);
        char *m = malloc(cap + 1);
        if (!m || olm_group_encrypt(o, p, len, (uint8_t *)m, ml) != ml) die("libolm encrypt");
        m[ml] = 0;
        if (keep) keep[i] = m;
        else free(m);
    }
    return now() - t;
}

static double dec_ours(const char *key, char **msgs, const int *order, int n, size_t want)
{
    mx_megolm_in *s = mx_megolm_in_new(key);
    if (!s) die("our inbound");
    double t = now();
    for (int i = 0; i < n; i++) {
        uint8_t *p;
        size_t len;
        uint32_t idx;
        if (mx_megolm_decrypt(s, msgs[order[i]], &p, &len, &idx) < 0 || len != want || idx != (uint32_t)order[i])
            die("our decrypt");
        free(p);
    }
    t = now() - t;
    mx_megolm_in_free(s);
    return t;
}

static double dec_libolm(const char *key, char **msgs, const int *order, int n, size_t want)
{
    OlmInboundGroupSession *s = lo_in(key);
    size_t cap = 0;
    for (int i = 0; i < n; i++)
        if (strlen(msgs[i]) > cap) cap = strlen(msgs[i]);
    char *copy = malloc(cap + 1);
    uint8_t *plain = malloc(cap);
    double t = now();
    for (int i = 0; i < n; i++) {
        size_t ml = strlen(msgs[order[i]]);
        memcpy(copy, msgs[order[i]], ml + 1);
        uint32_t idx;
        size_t len = olm_group_decrypt(s, (uint8_t *)copy, ml, plain, cap, &idx);
        if (len != want || idx != (uint32_t)order[i]) die("libolm decrypt");
    }
    t = now() - t;
    free(copy);
    free(plain);
    lo_in_free(s);
    return t;
}

/* ---- Olm (the lead fills this in once mx_olm exists) ---- */

/* Olm session setup time, ours (mx_olm) beside libolm: account creation, one-time key claim,
 * outbound session + first pre-key message, inbound session from it; ratio ours/libolm.
 * PLACEHOLDER: to be written with mx_olm. */
/* ---- Olm session setup: what sharing a room key with a new device costs ----
 * outbound: create the session from the device's identity and one-time key, encrypt the first
 * (pre-key) message; inbound: create the session from that pre-key message and decrypt it.
 * Both sides use the same kind of accounts; key generation is not timed. */
#define OLM_ROUNDS 10
#define OLM_PER_ROUND 100

static void *lo_account(void)
{
    void *a = olm_account(malloc(olm_account_size()));
    size_t n = olm_create_account_random_length(a);
    uint8_t *r = malloc(n);
    mx_random(r, n);
    if (olm_create_account(a, r, n) == olm_error()) die("libolm account");
    free(r);
    return a;
}

static void lo_keys(void *a, uint8_t curve[32], char otk_b64[OLM_PER_ROUND][44])
{
    char ids[200];
    size_t n = olm_account_identity_keys_length(a);
    char *j = malloc(n + 1);
    olm_account_identity_keys(a, j, n);
    j[n] = 0;
    const char *c = strstr(j, "\"curve25519\":\"");
    if (!c || mx_b64_decode(c + 14, 43, curve, 32) != 32) die("libolm identity");
    free(j);
    size_t rn = olm_account_generate_one_time_keys_random_length(a, OLM_PER_ROUND);
    uint8_t *r = malloc(rn);
    mx_random(r, rn);
    olm_account_generate_one_time_keys(a, OLM_PER_ROUND, r, rn);
    free(r);
    n = olm_account_one_time_keys_length(a);
    j = malloc(n + 1);
    olm_account_one_time_keys(a, j, n);
    j[n] = 0;
    const char *p = j;
    for (int i = 0; i < OLM_PER_ROUND; i++) {
        p = strstr(p, "\":\"");
        if (!p) die("libolm one-time keys");
        memcpy(otk_b64[i], p + 3, 43);
        otk_b64[i][43] = 0;
        p += 3;
    }
    (void)ids;
    free(j);
}

static void bench_olm_session_setup(void)
{
    static const char msg[] = "{\"type\":\"m.room_key\",\"content\":{\"algorithm\":\"m.megolm.v1.aes-sha2\"}}";
    double t_out_ours = 0, t_in_ours = 0, t_out_lo = 0, t_in_lo = 0;
    static char otk[OLM_PER_ROUND][44];
    for (int round = 0; round < OLM_ROUNDS; round++) {
        /* ours: alice (the bot) to bob (a device) */
        mx_olm_account *alice = mx_olm_account_new(), *bob = mx_olm_account_new();
        char curve[44], ed[44];
        uint8_t bob_curve[32], k[32];
        mx_olm_account_identity(bob, curve, ed);
        mx_b64_decode(curve, 43, bob_curve, 32);
        mx_olm_account_generate_otks(bob, OLM_PER_ROUND);
        char *js = mx_olm_account_otks_json(bob);
        const char *p = js;
        for (int i = 0; i < OLM_PER_ROUND; i++) {
            p = strstr(p, "\":\"");
            memcpy(otk[i], p + 3, 43);
            otk[i][43] = 0;
            p += 3;
        }
        free(js);
        char *bodies[OLM_PER_ROUND];
        double t0 = now();
        for (int i = 0; i < OLM_PER_ROUND; i++) {
            mx_b64_decode(otk[i], 43, k, 32);
            mx_olm_session *s = mx_olm_outbound(alice, bob_curve, k);
            int type;
            if (!s || mx_olm_encrypt(s, (const uint8_t *)msg, sizeof msg - 1, &type, &bodies[i]) != 0) die("ours outbound");
            mx_olm_session_free(s);
        }
        double t1 = now();
        for (int i = 0; i < OLM_PER_ROUND; i++) {
            uint8_t *plain;
            size_t plen;
            mx_olm_session *s = mx_olm_inbound(bob, NULL, bodies[i], &plain, &plen);
            if (!s || plen != sizeof msg - 1) die("ours inbound");
            free(plain);
            mx_olm_session_free(s);
            free(bodies[i]);
        }
        double t2 = now();
        t_out_ours += t1 - t0;
        t_in_ours += t2 - t1;
        mx_olm_account_free(alice);
        mx_olm_account_free(bob);

        /* libolm, the same steps */
        void *la = lo_account(), *lb = lo_account();
        uint8_t lb_curve[32];
        lo_keys(lb, lb_curve, otk);
        char lcurve[44];
        mx_b64_encode(lb_curve, 32, lcurve, sizeof lcurve);
        char *lbodies[OLM_PER_ROUND];
        size_t llen[OLM_PER_ROUND];
        t0 = now();
        for (int i = 0; i < OLM_PER_ROUND; i++) {
            void *s = olm_session(malloc(olm_session_size()));
            size_t rn = olm_create_outbound_session_random_length(s);
            uint8_t r[128];
            mx_random(r, rn);
            if (olm_create_outbound_session(s, la, lcurve, 43, otk[i], 43, r, rn) == olm_error()) die("libolm outbound");
            size_t ern = olm_encrypt_random_length(s);
            mx_random(r, ern);
            llen[i] = olm_encrypt_message_length(s, sizeof msg - 1);
            lbodies[i] = malloc(llen[i]);
            if (olm_encrypt(s, msg, sizeof msg - 1, r, ern, lbodies[i], llen[i]) == olm_error()) die("libolm encrypt");
            olm_clear_session(s);
            free(s);
        }
        t1 = now();
        for (int i = 0; i < OLM_PER_ROUND; i++) {
            void *s = olm_session(malloc(olm_session_size()));
            char *copy = malloc(llen[i]);
            memcpy(copy, lbodies[i], llen[i]);
            if (olm_create_inbound_session(s, lb, copy, llen[i]) == olm_error()) die("libolm inbound");
            memcpy(copy, lbodies[i], llen[i]);
            size_t max = olm_decrypt_max_plaintext_length(s, 0, copy, llen[i]);
            char *plain = malloc(max);
            memcpy(copy, lbodies[i], llen[i]);
            if (olm_decrypt(s, 0, copy, llen[i], plain, max) != sizeof msg - 1) die("libolm decrypt");
            free(plain);
            free(copy);
            olm_clear_session(s);
            free(s);
            free(lbodies[i]);
        }
        t2 = now();
        t_out_lo += t1 - t0;
        t_in_lo += t2 - t1;
        olm_clear_account(la);
        olm_clear_account(lb);
        free(la);
        free(lb);
    }
    int n = OLM_ROUNDS * OLM_PER_ROUND;
    printf("olm session setup, %d sessions each\n", n);
    printf("olm outbound + first message  ours %8.1f us  libolm %8.1f us  libolm/ours %.2f (ours faster above 1)\n",
           t_out_ours / n * 1e6, t_out_lo / n * 1e6, t_out_lo / t_out_ours);
    printf("olm inbound + decrypt         ours %8.1f us  libolm %8.1f us  libolm/ours %.2f\n", t_in_ours / n * 1e6,
           t_in_lo / n * 1e6, t_in_lo / t_in_ours);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4000;
    if (n < 10 || n > 1000000) die("messages per round: 10..1000000");
    if (mx_crypto_init() < 0) die("mx_crypto_init");
    const uint8_t *plain = (const uint8_t *)EVENT;
    size_t len = sizeof EVENT - 1;

    uint8_t random[160];
    mx_random(random, sizeof random);
    mx_megolm_out *ours = mx_megolm_out_from(random, 0, random + 128);
    OlmOutboundGroupSession *theirs = lo_out(random);
    char *key = mx_megolm_out_session_key(ours);

    /* the messages every decryption round reads, made once by each side: equal byte for byte */
    char **msgs = calloc((size_t)n, sizeof *msgs), **lo_msgs = calloc((size_t)n, sizeof *lo_msgs);
    enc_ours(ours, plain, len, n, msgs);
    enc_libolm(theirs, plain, len, n, lo_msgs);
    for (int i = 0; i < n; i++)
        if (strcmp(msgs[i], lo_msgs[i]) != 0) die("the two sides' messages differ");
    int *in_order = malloc((size_t)n * sizeof *in_order), *shuffled = malloc((size_t)n * sizeof *shuffled);
    for (int i = 0; i < n; i++) in_order[i] = shuffled[i] = i;
    for (int i = n - 1; i > 0; i--) {
        uint32_t r;
        mx_random(&r, sizeof r);
        int j = (int)(r % (uint32_t)(i + 1)), t = shuffled[i];
        shuffled[i] = shuffled[j];
        shuffled[j] = t;
    }

    double best[3][2] = {{1e9, 1e9}, {1e9, 1e9}, {1e9, 1e9}};
    for (int round = 0; round < ROUNDS; round++) {
        double t;
#define BEST(k, side, expr) t = (expr); if (t < best[k][side]) best[k][side] = t
        BEST(0, 0, enc_ours(ours, plain, len, n, NULL));
        BEST(0, 1, enc_libolm(theirs, plain, len, n, NULL));
        BEST(1, 0, dec_ours(key, msgs, in_order, n, len));
        BEST(1, 1, dec_libolm(key, msgs, in_order, n, len));
        BEST(2, 0, dec_ours(key, msgs, shuffled, n, len));
        BEST(2, 1, dec_libolm(key, msgs, shuffled, n, len));
#undef BEST
    }

    uint8_t maj, min, pat;
    olm_get_library_version(&maj, &min, &pat);
    printf("megolm: %zu-byte event, %d messages per round, best of %d rounds; libolm %u.%u.%u\n", len, n, ROUNDS,
           maj, min, pat);
    printf("megolm: message %zu base64 characters (identical from both sides)\n", strlen(msgs[0]));
    static const char *names[] = {"encrypt", "decrypt (in order)", "decrypt (shuffled)"};
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        double a = n / best[k][0], b = n / best[k][1], ratio = a / b;
        printf("megolm %-19s ours %9.0f/s (%6.1f us)  libolm %9.0f/s (%6.1f us)  ours/libolm %.2f%s\n", names[k], a,
               1e6 / a, b, 1e6 / b, ratio, ratio >= TARGET_RATIO ? "" : "  (below target 1.0)");
        if (k < 2 && ratio < TARGET_RATIO) ok = 0;
    }
    printf("megolm: throughput target ours/libolm >= %.1f (encrypt, decrypt in order): %s\n", TARGET_RATIO,
           ok ? "met" : "NOT met");

    bench_olm_session_setup();

    for (int i = 0; i < n; i++) {
        free(msgs[i]);
        free(lo_msgs[i]);
    }
    free(msgs);
    free(lo_msgs);
    free(in_order);
    free(shuffled);
    free(key);
    mx_megolm_out_free(ours);
    olm_clear_outbound_group_session(theirs);
    free(theirs);
    return 0;
}
