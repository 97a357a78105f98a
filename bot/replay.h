/* replay.h — `cardroom replay`: one hand of 304 or ContractGrid as JSON in, the resulting state
 * as JSON out.
 *
 * The input and output shapes are fixed (design.md, Fixed interfaces 1); README.md documents
 * every field. Refused moves are reported per action and change nothing; malformed input
 * (bad JSON, unknown card/field/action, wrong card counts, duplicates) is an error. */
#ifndef CARDROOM_REPLAY_H
#define CARDROOM_REPLAY_H

#include <stddef.h>

/* Replays the JSON text in[0..len). On success returns 0 and sets *out to a malloc'd,
 * NUL-terminated JSON document (the caller frees it). On malformed input returns 2 and
 * writes one line naming the problem into err (no trailing newline). Never aborts. */
int replay_run(const char *in, size_t len, char **out, char *err, size_t errlen);

#endif
