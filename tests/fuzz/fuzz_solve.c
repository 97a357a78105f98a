/* fuzz_solve.c — libFuzzer target for `cardroom solve` input (solve_run): replay's input read by
 * replay_304_position(), then the position solved. Whatever the bytes, it must return 0 with a JSON
 * document that parses back, or 2 with a one-line message; never crash, leak or overrun. */
#include "fuzz_init.h"
#include "solve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256], *out = NULL;
    int rc = solve_run((const char *)data, size, &out, err, sizeof err);
    fuzz_check_answer(rc, out, err);
    return 0;
}
