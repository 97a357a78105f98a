/* replay.h — `cardroom replay`: one hand of 304 or ContractGrid as JSON in, the resulting state
 * as JSON out.
 *
 * The input and output shapes are fixed (design.md, Fixed interfaces 1); README.md documents
 * every field. Refused moves are reported per action and change nothing; malformed input
 * (bad JSON, unknown card/field/action, wrong card counts, duplicates) is an error. */
#ifndef CARDROOM_REPLAY_H
#define CARDROOM_REPLAY_H

#include <jansson.h>
#include <stddef.h>

#include "g304.h"

/* Replays the JSON text in[0..len). On success returns 0 and sets *out to a malloc'd,
 * NUL-terminated JSON document (the caller frees it). On malformed input returns 2 and
 * writes one line naming the problem into err (no trailing newline). Never aborts. */
int replay_run(const char *in, size_t len, char **out, char *err, size_t errlen);

/* Reads one hand of 304 in the same input format and plays its actions as replay does (under the Caps
 * judge); the state after them goes to *st. Returns 0, or 2 with one line in err when the input is
 * malformed, is not 304, or has an action the engine refuses (the position would not be the one
 * meant). For tools that start from a position: `cardroom solve`. */
int replay_304_position(const char *in, size_t len, g304_state *st, char *err, size_t errlen);

/* A move in the action format without "seat", as in the output's "legal" list; NULL when out of
 * memory. */
json_t *replay_move_json(const g304_action *m);

/* Reads one action in the replay format ({"seat": 1, "do": "play", "card": "JH"}) under the rules r
 * (their seats and pack). Returns 0, or 2 with one line in err (the message names it "action 0").
 * For outside players' replies. */
int replay_304_action(const g304_rules *r, const char *text, size_t len, int *seat, g304_action *a, char *err,
                      size_t errlen);

#endif
