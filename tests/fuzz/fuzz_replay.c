/* fuzz_replay.c — libFuzzer target for `cardroom replay` input (replay_run). Whatever the bytes,
 * it must return 0 with a JSON document (which must parse back: valid UTF-8, nothing cut) or
 * 2 with a one-line message; never crash, leak or overrun. */
#include <jansson.h>
#include <string.h>

#include "fuzz_init.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256], *out = NULL;
    int rc = replay_run((const char *)data, size, &out, err, sizeof err);
    if (rc == 0) {
        json_error_t je;
        json_t *doc = out ? json_loads(out, 0, &je) : NULL;
        if (!doc) abort();
        json_decref(doc);
        free(out);
    } else if (rc != 2 || out || strchr(err, '\n') || strlen(err) == 0) {
        abort();
    }
    return 0;
}
