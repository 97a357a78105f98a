/* fuzz_replay.c — libFuzzer target for `cardroom replay` input (replay_run). Whatever the bytes,
 * it must return 0 with a JSON document (which must parse back: valid UTF-8, nothing cut) or
 * 2 with a one-line message; never crash, leak or overrun. */
#include "fuzz_init.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256], *out = NULL;
    int rc = replay_run((const char *)data, size, &out, err, sizeof err);
    fuzz_check_answer(rc, out, err);
    return 0;
}
