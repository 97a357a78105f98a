/* fuzz_aiexec.c — libFuzzer target for an outside player's reply line (aiexec_reply, the exec
 * protocol of `cardroom arena`). Whatever the bytes, it returns 0 with a move of the asked seat, or -1
 * with a one-line message; never crash, leak or overrun. */
#include <string.h>

#include "aiexec.h"
#include "fuzz_init.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    g304_action a;
    int seat = size ? data[0] % G304_SEATS : 0;
    g304_rules r;
    g304_rules_default(&r);
    int rc = aiexec_reply(&r, (const char *)data, size, seat, &a, err, sizeof err);
    if (rc == 0 && a.kind >= G304_DO_COUNT) abort();
    if (rc != 0 && (rc != -1 || strchr(err, '\n') || strlen(err) == 0)) abort();
    return 0;
}
