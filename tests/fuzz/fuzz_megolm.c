/* fuzz_megolm.c — libFuzzer target for Megolm decoding: any bytes as a session key (m.room_key),
 * an exported key, a group message to a real session, and pickles. No crash; a refused message
 * leaves the session able to decrypt a real one. */
#include <string.h>

#include "fuzz_init.h"
#include "mx_megolm.h"

static mx_megolm_out *out;
static mx_megolm_in *in;
static char *good;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!out) {
        out = mx_megolm_out_new();
        char *key = mx_megolm_out_session_key(out);
        in = mx_megolm_in_new(key);
        free(key);
        good = mx_megolm_encrypt(out, (const uint8_t *)"{\"type\":\"x\"}", 12);
        if (!in || !good) abort();
    }
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    uint8_t key[32] = {2}, *plain = NULL;
    size_t plen = 0;
    uint32_t index;
    mx_megolm_in *a = mx_megolm_in_new(text), *b = mx_megolm_in_import(text);
    if (a && mx_megolm_decrypt(a, good, &plain, &plen, &index) == 0) free(plain); /* a forged key cannot read it */
    mx_megolm_in_free(a);
    mx_megolm_in_free(b);
    if (mx_megolm_decrypt(in, text, &plain, &plen, &index) == 0) free(plain);
    if (mx_megolm_decrypt(in, good, &plain, &plen, &index) != 0 || plen != 12) abort();
    free(plain);
    mx_megolm_in_free(mx_megolm_in_unpickle(text, key));
    mx_megolm_out_free(mx_megolm_out_unpickle(text, key));
    free(text);
    return 0;
}
