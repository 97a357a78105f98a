/* fuzz_e2ee.c — libFuzzer target for the key JSON the encryption machine reads from the
 * homeserver: the input is one JSON document used as a /sync answer (to_device events, device
 * lists, key counts), then as the answer to every request the machine makes (keys upload,
 * query, claim, to-device), then as a room event to decrypt. No crash, no leak; the machine
 * keeps answering. */
#include <jansson.h>
#include <string.h>

#include "fuzz_init.h"
#include "mx_e2ee.h"

static store *db;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    if (!db && store_open(&db, ":memory:", err, sizeof err) != 0) abort();
    static const uint8_t key[32] = {3};
    mx_e2ee *e = mx_e2ee_new(db, "@cardroom:example.org", "BOTDEVICE", key, err, sizeof err);
    if (!e) abort();
    json_t *root = json_loadb((const char *)data, size, 0, NULL);
    mx_e2ee_sync(e, root);
    mx_e2ee_request r;
    for (int round = 0; round < 4 && mx_e2ee_next_request(e, &r); round++) {
        free(r.body);
        mx_e2ee_answer(e, r.id, 200, (const char *)data, size);
    }
    const char *users[] = {"@cardroom:example.org", "@alice:example.org"};
    char *enc = NULL;
    if (mx_e2ee_encrypt(e, "!r:example.org", users, 2, "m.room.message", "{\"body\":\"x\"}", &enc, err, sizeof err) == 1)
        free(enc);
    for (int round = 0; round < 4 && mx_e2ee_next_request(e, &r); round++) {
        free(r.body);
        mx_e2ee_answer(e, r.id, 200, (const char *)data, size);
    }
    if (root) {
        json_t *dec = mx_e2ee_decrypt(e, "!r:example.org", root, err, sizeof err);
        json_decref(dec);
    }
    json_decref(root);
    mx_e2ee_free(e);
    return 0;
}
