/* test_mx_crypto.c — the primitives under Olm and Megolm against published test vectors:
 * RFC 5869 (HKDF-SHA-256), RFC 7748 (X25519), RFC 8032 (Ed25519), RFC 4231 (HMAC-SHA-256),
 * NIST SP 800-38A (AES-256-CBC), and the Matrix spec's canonical JSON and base64 rules. */
#include <criterion/criterion.h>
#include <string.h>

#include "mx_crypto.h"

TestSuite(mx_crypto, .timeout = 30, .init = (void (*)(void))mx_crypto_init);

static size_t unhex(const char *h, uint8_t *out)
{
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++) sscanf(h + 2 * i, "%2hhx", &out[i]);
    return n;
}

static void assert_hex(const uint8_t *got, size_t len, const char *want)
{
    char h[1024];
    for (size_t i = 0; i < len; i++) sprintf(h + 2 * i, "%02x", got[i]);
    h[2 * len] = 0;
    cr_assert_str_eq(h, want);
}

Test(mx_crypto, hkdf_rfc5869)
{
    uint8_t ikm[80], salt[80], info[80], okm[82];
    /* test case 1 */
    size_t ni = unhex("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", ikm);
    size_t ns = unhex("000102030405060708090a0b0c", salt), nf = unhex("f0f1f2f3f4f5f6f7f8f9", info);
    cr_assert_eq(mx_hkdf_sha256(salt, ns, ikm, ni, info, nf, okm, 42), 0);
    assert_hex(okm, 42, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
    /* test case 2: long inputs, 82 bytes out */
    for (int i = 0; i < 80; i++) ikm[i] = (uint8_t)i, salt[i] = (uint8_t)(0x60 + i), info[i] = (uint8_t)(0xb0 + i);
    cr_assert_eq(mx_hkdf_sha256(salt, 80, ikm, 80, info, 80, okm, 82), 0);
    assert_hex(okm, 82,
               "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da32"
               "75600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87");
    /* test case 3: no salt, no info */
    ni = unhex("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", ikm);
    cr_assert_eq(mx_hkdf_sha256(NULL, 0, ikm, ni, NULL, 0, okm, 42), 0);
    assert_hex(okm, 42, "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8");
    cr_assert_eq(mx_hkdf_sha256(NULL, 0, ikm, ni, NULL, 0, okm, 255 * 32 + 1), -1, "too long an output is refused");
}

Test(mx_crypto, hmac_rfc4231_and_sha256)
{
    uint8_t key[20], out[32];
    memset(key, 0x0b, sizeof key);
    mx_hmac_sha256(key, sizeof key, (const uint8_t *)"Hi There", 8, out);
    assert_hex(out, 32, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    mx_hmac_sha256((const uint8_t *)"Jefe", 4, (const uint8_t *)"what do ya want for nothing?", 28, out);
    assert_hex(out, 32, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    mx_sha256((const uint8_t *)"abc", 3, out);
    assert_hex(out, 32, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

Test(mx_crypto, aes256_cbc_sp800_38a_and_padding)
{
    uint8_t key[32], iv[16], pt[64], ct[80], back[80];
    unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", key);
    unhex("000102030405060708090a0b0c0d0e0f", iv);
    unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
          "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710", pt);
    long n = mx_aes256_cbc_encrypt(key, iv, pt, 64, ct);
    cr_assert_eq(n, 80, "64 bytes + a block of PKCS#7 padding");
    assert_hex(ct, 64, "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
                       "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b");
    cr_assert_eq(mx_aes256_cbc_decrypt(key, iv, ct, 80, back), 64);
    cr_assert_eq(memcmp(back, pt, 64), 0);
    /* bad lengths and padding are refused */
    cr_assert_eq(mx_aes256_cbc_decrypt(key, iv, ct, 79, back), -1);
    cr_assert_eq(mx_aes256_cbc_decrypt(key, iv, ct, 0, back), -1);
    ct[79] ^= 1;
    cr_assert_eq(mx_aes256_cbc_decrypt(key, iv, ct, 80, back), -1);
    cr_assert_eq(mx_aes256_cbc_encrypt(key, iv, pt, 0, ct), 16, "empty input: one block of padding");
    cr_assert_eq(mx_aes256_cbc_decrypt(key, iv, ct, 16, back), 0);
}

Test(mx_crypto, x25519_rfc7748)
{
    uint8_t a[32], b[32], apub[32], bpub[32], s1[32], s2[32];
    unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", a);
    unhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", b);
    cr_assert_eq(mx_curve25519_public(a, apub), 0);
    assert_hex(apub, 32, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    cr_assert_eq(mx_curve25519_public(b, bpub), 0);
    assert_hex(bpub, 32, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    cr_assert_eq(mx_curve25519_shared(a, bpub, s1), 0);
    cr_assert_eq(mx_curve25519_shared(b, apub, s2), 0);
    assert_hex(s1, 32, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    cr_assert(mx_equal(s1, s2, 32));
    uint8_t zero[32] = {0};
    cr_assert_eq(mx_curve25519_shared(a, zero, s1), -1, "a low-order point is refused");
}

Test(mx_crypto, ed25519_rfc8032)
{
    uint8_t seed[32], pub[32], sec[64], sig[64];
    unhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", seed);
    mx_ed25519_from_seed(seed, pub, sec);
    assert_hex(pub, 32, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    mx_ed25519_sign(sec, NULL, 0, sig);
    assert_hex(sig, 64, "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46b"
                        "d25bf5f0595bbe24655141438e7a100b");
    cr_assert(mx_ed25519_verify(pub, NULL, 0, sig));
    sig[0] ^= 1;
    cr_assert_not(mx_ed25519_verify(pub, NULL, 0, sig));
    uint8_t p2[32], s2[64];
    mx_ed25519_generate(p2, s2);
    mx_ed25519_sign(s2, (const uint8_t *)"x", 1, sig);
    cr_assert(mx_ed25519_verify(p2, (const uint8_t *)"x", 1, sig));
    cr_assert_not(mx_ed25519_verify(p2, (const uint8_t *)"y", 1, sig));
}

Test(mx_crypto, unpadded_base64)
{
    static const struct {
        const char *bin, *b64;
    } rows[] = {{"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char out[16];
        uint8_t back[16];
        size_t n = strlen(rows[i].bin);
        cr_assert_eq(mx_b64_encode((const uint8_t *)rows[i].bin, n, out, sizeof out), strlen(rows[i].b64));
        cr_assert_str_eq(out, rows[i].b64);
        cr_assert_eq(mx_b64_len(n), strlen(rows[i].b64));
        cr_assert_eq(mx_b64_decode(rows[i].b64, strlen(rows[i].b64), back, sizeof back), (long)n);
        cr_assert_eq(memcmp(back, rows[i].bin, n), 0);
    }
    uint8_t b[8];
    cr_assert_eq(mx_b64_decode("Zm8=", 4, b, sizeof b), 2, "padding is accepted");
    cr_assert_eq(mx_b64_decode("Zm9vYg==", 8, b, sizeof b), 4);
    cr_assert_eq(mx_b64_decode("Z", 1, b, sizeof b), -1);
    cr_assert_eq(mx_b64_decode("Zm9v!", 5, b, sizeof b), -1);
    cr_assert_eq(mx_b64_decode("Zm 9v", 5, b, sizeof b), -1);
    cr_assert_eq(mx_b64_decode("Zm9vYmFy", 8, b, 5), -1, "too small an output");
    char small[4];
    cr_assert_eq(mx_b64_encode((const uint8_t *)"foo", 3, small, sizeof small), 0, "no room for the NUL");
}

Test(mx_crypto, canonical_json_spec_examples)
{
    /* Matrix spec appendices, "Canonical JSON" examples */
    static const struct {
        const char *in, *want;
    } rows[] = {
        {"{}", "{}"},
        {"{\"one\": 1, \"two\": \"Two\"}", "{\"one\":1,\"two\":\"Two\"}"},
        {"{\"b\": \"2\", \"a\": \"1\"}", "{\"a\":\"1\",\"b\":\"2\"}"},
        {"{\"auth\":{\"success\":true,\"mxid\":\"@john.doe:example.com\",\"profile\":{\"display_name\":\"John Doe\","
         "\"three_pids\":[{\"medium\":\"email\",\"address\":\"john.doe@example.org\"},{\"medium\":\"msisdn\",\"address\":"
         "\"123456789\"}]}}}",
         "{\"auth\":{\"mxid\":\"@john.doe:example.com\",\"profile\":{\"display_name\":\"John Doe\",\"three_pids\":[{\"address\":"
         "\"john.doe@example.org\",\"medium\":\"email\"},{\"address\":\"123456789\",\"medium\":\"msisdn\"}]},\"success\":true}}"},
        {"{\"a\": \"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\"}", "{\"a\":\"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\"}"},
        {"{\"\xe6\x9c\xac\": 2, \"\xe6\x97\xa5\": 1}", "{\"\xe6\x97\xa5\":1,\"\xe6\x9c\xac\":2}"},
        {"{\"a\": \"\\u65E5\"}", "{\"a\":\"\xe6\x97\xa5\"}"},
        {"{\"a\": null}", "{\"a\":null}"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *v = json_loads(rows[i].in, 0, NULL);
        cr_assert_not_null(v, "%s", rows[i].in);
        char *c = mx_canonical_json(v);
        cr_assert_str_eq(c, rows[i].want);
        free(c);
        json_decref(v);
    }
}

Test(mx_crypto, equal_and_wipe)
{
    uint8_t a[16] = {1, 2, 3}, b[16] = {1, 2, 3};
    cr_assert(mx_equal(a, b, 16));
    b[15] = 9;
    cr_assert_not(mx_equal(a, b, 16));
    mx_wipe(a, sizeof a);
    for (size_t i = 0; i < sizeof a; i++) cr_assert_eq(a[i], 0);
    uint8_t r1[32], r2[32];
    mx_random(r1, 32);
    mx_random(r2, 32);
    cr_assert_not(mx_equal(r1, r2, 32));
}

/* The Matrix spec's appendix "Signing JSON": the example key (seed
 * YJDBA9Xnr2sVqXD9Vj7XVUnmFZcZrlw8Md7kMW+3XA1, id ed25519:1; its last character carries two
 * non-zero spare bits, which our strict decoder refuses, so the seed is given in hex) over
 * canonical JSON. */
Test(mx_crypto, matrix_spec_signing_examples)
{
    uint8_t seed[32], pub[32], sec[64], sig[64];
    char b64[100];
    unhex("6090c103d5e7af6b15a970fd563ed75549e6159719ae5c3c31dee4316fb75c0d", seed);
    mx_ed25519_from_seed(seed, pub, sec);
    static const struct {
        const char *json, *sig;
    } rows[] = {
        {"{}", "K8280/U9SSy9IVtjBuVeLr+HpOB4BQFWbg+UZaADMtTdGYI7Geitb76LTrr5QV/7Xg4ahLwYGYZzuHGZKM5ZAQ"},
        {"{\"two\": \"Two\", \"one\": 1}", "KqmLSbO39/Bzb0QIYE82zqLwsA+PDzYIpIRA2sRQ4sL53+sN6/fpNSoqE7BP7vBZhG6kYdD13EIMJpvhJI+6Bw"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *v = json_loads(rows[i].json, 0, NULL);
        char *c = mx_canonical_json(v);
        mx_ed25519_sign(sec, (const uint8_t *)c, strlen(c), sig);
        mx_b64_encode(sig, 64, b64, sizeof b64);
        cr_assert_str_eq(b64, rows[i].sig, "for %s", c);
        cr_assert(mx_ed25519_verify(pub, (const uint8_t *)c, strlen(c), sig));
        free(c);
        json_decref(v);
    }
}

/* Sealed secrets (mx_seal): they open with the same key and label only, a changed byte is
 * refused, every sealing is different (a fresh nonce), and the layout is nonce, AES-256-CBC of
 * the secret, HMAC-SHA-256 of both, with keys from HKDF(nonce, key, label) — checked by
 * opening one by hand. */
Test(mx_crypto, sealed_secrets)
{
    uint8_t key[32], other[32], out[200], buf[300], k[80], mac[32], plain[200];
    memset(key, 7, sizeof key);
    memset(other, 8, sizeof other);
    const char *secret = "syt_Y2FyZHJvb20_secret_access_token_0123456789";
    size_t n = strlen(secret);
    char *a = mx_seal(key, "cardroom-test-v1", (const uint8_t *)secret, n);
    char *b = mx_seal(key, "cardroom-test-v1", (const uint8_t *)secret, n);
    cr_assert(a && b);
    cr_assert_str_neq(a, b, "a nonce per sealing");
    cr_assert_null(strstr(a, "secret"));
    cr_assert_eq(mx_unseal(key, "cardroom-test-v1", a, out, sizeof out), (long)n);
    cr_assert_arr_eq(out, secret, n);
    cr_assert_eq(mx_unseal(other, "cardroom-test-v1", a, out, sizeof out), -1, "another key");
    cr_assert_eq(mx_unseal(key, "cardroom-test-v2", a, out, sizeof out), -1, "another label");
    cr_assert_eq(mx_unseal(key, "cardroom-test-v1", a, out, n - 1), -1, "too long for the buffer");
    cr_assert_eq(mx_unseal(key, "cardroom-test-v1", "not base64!", out, sizeof out), -1);
    cr_assert_eq(mx_unseal(key, "cardroom-test-v1", "", out, sizeof out), -1);

    long len = mx_b64_decode(a, strlen(a), buf, sizeof buf);
    cr_assert_eq(len, 16 + (long)(n / 16 * 16 + 16) + 32);
    mx_hkdf_sha256(buf, 16, key, 32, (const uint8_t *)"cardroom-test-v1", 16, k, sizeof k);
    mx_hmac_sha256(k + 32, 32, buf, (size_t)len - 32, mac);
    cr_assert(mx_equal(mac, buf + len - 32, 32));
    cr_assert_eq(mx_aes256_cbc_decrypt(k, k + 64, buf + 16, (size_t)len - 48, plain), (long)n);
    cr_assert_arr_eq(plain, secret, n);

    for (long i = 0; i < len; i++) { /* any changed byte: refused */
        buf[i] ^= 0x20;
        char *bad = mx_b64_alloc(buf, (size_t)len);
        cr_assert_eq(mx_unseal(key, "cardroom-test-v1", bad, out, sizeof out), -1, "byte %ld changed", i);
        free(bad);
        buf[i] ^= 0x20;
    }
    char *empty = mx_seal(key, "cardroom-test-v1", (const uint8_t *)"", 0);
    cr_assert_eq(mx_unseal(key, "cardroom-test-v1", empty, out, sizeof out), 0);
    free(empty);
    free(a);
    free(b);
}
