/* gen_vectors.c — writes olm_vectors.h: known values made by libolm (the reference
 * implementation) from fixed "random" bytes, which test_mx_olm.c checks mx_olm reproduces byte for
 * byte. Not part of the build; regenerate by hand:
 *   gcc -std=c11 -Wall -Wextra tests/olm/gen_vectors.c -lolm -o /tmp/gen_vectors \
 *     && /tmp/gen_vectors > tests/olm/olm_vectors.h
 *
 * The randomness is libolm's own test helper (tests/test_olm.cpp, MockRandom): each 32-byte block
 * is a tag byte followed by 31 copies of a counter that goes up by one per block. Alice uses
 * MockRandom('A', 0x00), Bob MockRandom('B', 0x80), as in libolm's loopback test.
 *
 * The conversation:
 *   Bob: account; 2 one-time keys; a fallback key.
 *   Alice: account; 1 one-time key (unused; it makes her base and ratchet keys the ones of libolm's
 *   tests/test_session.cpp); outbound session to Bob's identity and first one-time key.
 *   Alice -> Bob: PREKEY1 "Hello, World", PREKEY2 "" (both type 0).
 *   Bob: inbound from PREKEY1; decrypts PREKEY2; -> Alice: REPLY1 "Hi Alice" (type 1, new ratchet key).
 *   Alice decrypts REPLY1; -> Bob: MSG1 "third" and MSG2 (100 x 'x'), type 1, a new ratchet key.
 *   Alice signs "cardroom". */
#include <olm/olm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t tag, current;
} mock;

static void mock_fill(mock *m, uint8_t *b, size_t len)
{
    while (len) {
        size_t n = len < 32 ? len : 32;
        b[0] = m->tag;
        memset(b + 1, m->current, n - 1);
        m->current++;
        b += n;
        len -= n;
    }
}

static void die(const char *what)
{
    fprintf(stderr, "gen_vectors: %s failed\n", what);
    exit(1);
}

static void print_str(const char *name, const uint8_t *s, size_t n)
{
    printf("#define %s \"", name);
    for (size_t i = 0; i < n; i++) putchar(s[i]);
    printf("\"\n");
}

static OlmAccount *account(mock *m)
{
    OlmAccount *a = olm_account(malloc(olm_account_size()));
    size_t rl = olm_create_account_random_length(a);
    uint8_t *r = malloc(rl);
    mock_fill(m, r, rl);
    if (olm_create_account(a, r, rl) == olm_error()) die("create_account");
    free(r);
    return a;
}

static void gen_otks(OlmAccount *a, mock *m, size_t n)
{
    size_t rl = olm_account_generate_one_time_keys_random_length(a, n);
    uint8_t *r = malloc(rl ? rl : 1);
    mock_fill(m, r, rl);
    if (olm_account_generate_one_time_keys(a, n, r, rl) == olm_error()) die("generate_one_time_keys");
    free(r);
}

static size_t encrypt(OlmSession *s, mock *m, const char *plain, size_t len, uint8_t *out, size_t cap, size_t *type)
{
    size_t rl = olm_encrypt_random_length(s);
    uint8_t r[32];
    mock_fill(m, r, rl);
    *type = olm_encrypt_message_type(s);
    if (olm_encrypt_message_length(s, len) > cap) die("encrypt_message_length");
    size_t n = olm_encrypt(s, plain, len, r, rl, out, cap);
    if (n == olm_error()) die("encrypt");
    return n;
}

static size_t decrypt(OlmSession *s, size_t type, const uint8_t *msg, size_t n, uint8_t *plain, size_t cap)
{
    uint8_t *tmp = malloc(n);
    memcpy(tmp, msg, n);
    size_t r = olm_decrypt(s, type, tmp, n, plain, cap);
    free(tmp);
    if (r == olm_error()) die("decrypt");
    return r;
}

/* the value of "key" in a JSON object text where it is a string, e.g. {"curve25519":"...",...} */
static void json_field(const uint8_t *json, size_t n, const char *key, char *out)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    char *buf = malloc(n + 1);
    memcpy(buf, json, n);
    buf[n] = 0;
    char *p = strstr(buf, pat);
    if (!p) die("json_field");
    p += strlen(pat);
    size_t k = strcspn(p, "\"");
    memcpy(out, p, k);
    out[k] = 0;
    free(buf);
}

int main(void)
{
    mock ma = {'A', 0x00}, mb = {'B', 0x80};
    uint8_t buf[4096], plain[4096];
    size_t n, type;

    OlmAccount *bob = account(&mb);
    gen_otks(bob, &mb, 2);
    {
        uint8_t r[32];
        mock_fill(&mb, r, 32);
        if (olm_account_generate_fallback_key(bob, r, 32) == olm_error()) die("generate_fallback_key");
    }
    OlmAccount *alice = account(&ma);
    gen_otks(alice, &ma, 1);

    uint8_t maj, min, pat;
    olm_get_library_version(&maj, &min, &pat);
    printf("/* olm_vectors.h — made by tests/olm/gen_vectors.c with libolm %u.%u.%u; do not edit. */\n", maj, min, pat);
    char bob_curve[64], bob_ed[64], alice_curve[64], alice_ed[64], bob_otk1[64];
    n = olm_account_identity_keys(bob, buf, sizeof buf);
    json_field(buf, n, "curve25519", bob_curve);
    json_field(buf, n, "ed25519", bob_ed);
    n = olm_account_identity_keys(alice, buf, sizeof buf);
    json_field(buf, n, "curve25519", alice_curve);
    json_field(buf, n, "ed25519", alice_ed);
    print_str("V_BOB_CURVE", (uint8_t *)bob_curve, strlen(bob_curve));
    print_str("V_BOB_ED", (uint8_t *)bob_ed, strlen(bob_ed));
    print_str("V_ALICE_CURVE", (uint8_t *)alice_curve, strlen(alice_curve));
    print_str("V_ALICE_ED", (uint8_t *)alice_ed, strlen(alice_ed));

    n = olm_account_one_time_keys(bob, buf, sizeof buf);
    printf("/* Bob's one-time keys as libolm lists them (newest first) */\n");
    printf("#define V_BOB_OTKS \"");
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '"') putchar('\\');
        putchar(buf[i]);
    }
    printf("\"\n");
    json_field(buf, n, "AAAAAQ", bob_otk1);
    print_str("V_BOB_OTK1", (uint8_t *)bob_otk1, strlen(bob_otk1));
    n = olm_account_unpublished_fallback_key(bob, buf, sizeof buf);
    printf("#define V_BOB_FALLBACK \"");
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '"') putchar('\\');
        putchar(buf[i]);
    }
    printf("\"\n");

    n = olm_account_sign(alice, "cardroom", 8, buf, sizeof buf);
    print_str("V_ALICE_SIG_CARDROOM", buf, n);

    OlmSession *as = olm_session(malloc(olm_session_size()));
    {
        uint8_t r[64];
        mock_fill(&ma, r, 64);
        if (olm_create_outbound_session(as, alice, bob_curve, strlen(bob_curve), bob_otk1, strlen(bob_otk1), r, 64) ==
            olm_error())
            die("create_outbound_session");
    }
    uint8_t pk1[4096], pk2[4096], reply1[4096], msg1[4096], msg2[4096];
    size_t pk1n, pk2n, reply1n, msg1n, msg2n;
    pk1n = encrypt(as, &ma, "Hello, World", 12, pk1, sizeof pk1, &type);
    if (type != 0) die("type pk1");
    pk2n = encrypt(as, &ma, "", 0, pk2, sizeof pk2, &type);
    if (type != 0) die("type pk2");
    print_str("V_PREKEY1", pk1, pk1n);
    print_str("V_PREKEY2", pk2, pk2n);

    OlmSession *bs = olm_session(malloc(olm_session_size()));
    memcpy(buf, pk1, pk1n);
    if (olm_create_inbound_session(bs, bob, buf, pk1n) == olm_error()) die("create_inbound_session");
    n = decrypt(bs, 0, pk1, pk1n, plain, sizeof plain);
    if (n != 12 || memcmp(plain, "Hello, World", 12)) die("check pk1");
    n = decrypt(bs, 0, pk2, pk2n, plain, sizeof plain);
    if (n != 0) die("check pk2");
    n = olm_session_id(bs, buf, sizeof buf);
    print_str("V_SESSION_ID", buf, n);

    reply1n = encrypt(bs, &mb, "Hi Alice", 8, reply1, sizeof reply1, &type);
    if (type != 1) die("type reply1");
    print_str("V_REPLY1", reply1, reply1n);
    n = decrypt(as, 1, reply1, reply1n, plain, sizeof plain);
    if (n != 8 || memcmp(plain, "Hi Alice", 8)) die("check reply1");

    char hundred[100];
    memset(hundred, 'x', sizeof hundred);
    msg1n = encrypt(as, &ma, "third", 5, msg1, sizeof msg1, &type);
    if (type != 1) die("type msg1");
    msg2n = encrypt(as, &ma, hundred, 100, msg2, sizeof msg2, &type);
    print_str("V_MSG1", msg1, msg1n);
    print_str("V_MSG2", msg2, msg2n);
    n = decrypt(bs, 1, msg2, msg2n, plain, sizeof plain);
    if (n != 100) die("check msg2");
    n = decrypt(bs, 1, msg1, msg1n, plain, sizeof plain);
    if (n != 5) die("check msg1");

    olm_clear_session(as);
    olm_clear_session(bs);
    olm_clear_account(alice);
    olm_clear_account(bob);
    free(as);
    free(bs);
    free(alice);
    free(bob);
    return 0;
}
