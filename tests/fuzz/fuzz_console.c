/* fuzz_console.c — libFuzzer target for what people type: a whole `cardroom console --script`
 * input (USER> TEXT and USER>> TEXT lines) run through the console adapter, the command parser,
 * the tables, the computer players and the store (in memory). Whatever the bytes, the run must
 * end with status 0, or 2 for a line that is not "USER> TEXT"; never crash, leak or overrun. */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "console.h"
#include "fuzz_init.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    if (!sink || size == 0) return 0;
    FILE *in = fmemopen((void *)data, size, "r");
    if (!in) return 0;
    cfg c;
    cfg_defaults(&c);
    c.threads = 0; /* computer players answer at once: one thread, reproducible */
    c.rules.start_tokens = 1;
    console_options o = {.script = 1, .fixed_seed = 1, .seed = 7, .db = ":memory:", .in = in, .out = sink, .err = sink};
    int rc = console_run(&c, &o);
    fclose(in);
    if (rc != 0 && rc != 2) abort();
    return 0;
}
