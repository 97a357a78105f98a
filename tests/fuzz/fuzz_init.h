/* fuzz_init.h — what every libFuzzer target here shares: the entry point prototypes and the
 * one-time start-up (libsodium, before any input). Include it from exactly one file per target. */
#ifndef CARDROOM_FUZZ_INIT_H
#define CARDROOM_FUZZ_INIT_H

#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (sodium_init() < 0) abort();
    return 0;
}

#endif
