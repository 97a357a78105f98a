/* solve.h — `cardroom solve`: the best play of a 304 hand with every card known.
 *
 * The input is `cardroom replay`'s (README.md): the deal (all four hands, or a seed), the rules and
 * the actions up to the position; every action must be accepted. The output is one line of JSON:
 * for the seat to act, each legal move with the card points each team secures after it when both
 * teams play perfectly (engine/dd.h), whether the bid is then made, and which team can still win
 * every trick (Caps with all cards known). README.md documents the fields. */
#ifndef CARDROOM_SOLVE_H
#define CARDROOM_SOLVE_H

#include <stddef.h>

/* Solves the position the JSON text in[0..len) leads to. On success returns 0 and sets *out to a
 * malloc'd, NUL-terminated JSON document. On bad input (malformed, a refused action, a hand not in
 * play) returns 2 with one line in err. Never aborts. */
int solve_run(const char *in, size_t len, char **out, char *err, size_t errlen);

#endif
