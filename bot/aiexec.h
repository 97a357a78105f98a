/* aiexec.h — an outside program as a 304 player: one JSON request per line on its standard input,
 * one action per line on its standard output (`cardroom arena`'s exec:COMMAND players; README.md
 * "The exec protocol").
 *
 * The request holds the seat, its view in the field names of `cardroom replay`'s output as that seat
 * would see it (cards it may not see are null), and its legal moves; the reply is one action in the
 * replay input format. The program runs under /bin/sh -c COMMAND and is asked only when its seat has
 * a move to make. A reply that is late (past the time limit), missing because the program ended, or
 * longer than a line may be, loses the decision: the caller plays a random legal move instead and
 * counts it. A late or runaway program is killed and started again at its next request, so the
 * protocol never falls out of step; every request is complete in itself. */
#ifndef CARDROOM_AIEXEC_H
#define CARDROOM_AIEXEC_H

#include <stddef.h>

#include "aiworld.h"
#include "g304.h"

#define AIEXEC_LINE_MAX 65536

typedef enum {
    AIEXEC_OK = 0,
    AIEXEC_SLOW, /* no whole line within the time limit: killed */
    AIEXEC_GONE, /* the program ended, or could not be started */
    AIEXEC_LONG, /* the line was longer than AIEXEC_LINE_MAX: killed */
} aiexec_status;

typedef struct aiexec aiexec;

/* A player for COMMAND with a time limit per decision in milliseconds; the program starts at the
 * first request. NULL when out of memory. */
aiexec *aiexec_new(const char *command, long limit_ms);
void aiexec_free(aiexec *x);

/* Sends one request line (without the newline) and reads one reply line into reply. */
aiexec_status aiexec_ask(aiexec *x, const char *request, char *reply, size_t len);

/* Times the program was (re)started. */
long aiexec_starts(const aiexec *x);

/* The request for seat: a malloc'd line of JSON, NULL when out of memory. h may be NULL. */
char *aiexec_request(const g304_state *st, int seat, const aiworld_history *h);

/* Reads a reply: one action in the replay format for that seat ("seat" may be left out) under the
 * game's rules r. Returns 0, or -1 with a sentence in err. Whether the engine accepts the move is the
 * caller's test. */
int aiexec_reply(const g304_rules *r, const char *line, size_t len, int seat, g304_action *a, char *err,
                 size_t errlen);

#endif
