/* fuzz_init.h — what every libFuzzer target here shares: the entry point prototypes and the
 * one-time start-up (libsodium, before any input). Include it from exactly one file per target. */
#ifndef CARDROOM_FUZZ_INIT_H
#define CARDROOM_FUZZ_INIT_H

#include <jansson.h>
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (sodium_init() < 0) abort();
    return 0;
}

/* What a tool that reads a document and answers (replay_run, solve_run) must give: rc 0 with a
 * JSON document in out that parses back (valid UTF-8, nothing cut), or 2 with a one-line message
 * in err and no out. Aborts otherwise; frees out. */
static inline void fuzz_check_answer(int rc, char *out, const char *err)
{
    if (rc == 0) {
        json_t *doc = out ? json_loads(out, 0, NULL) : NULL;
        if (!doc) abort();
        json_decref(doc);
        free(out);
    } else if (rc != 2 || out || strchr(err, '\n') || strlen(err) == 0) {
        abort();
    }
}

#endif
