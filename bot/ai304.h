/* ai304.h — the heuristic computer player for 304.
 *
 * The interface is "what one seat may know → one action", so a stronger player can replace
 * this one later without touching the table: ai304_input_of() gathers the seat's knowledge
 * from the state on the event loop's thread (it is the only function that reads the full
 * state, and it copies nothing the seat may not see); ai304_choose() is a pure function of
 * that input and a seed, cheap enough for many tables, safe to run on a worker thread.
 * The chosen action is always one of input.legal[] (or a spoilt-trumps declaration when
 * input.may_spoilt says it is open). Four or six players (rules.players); the arrays by seat
 * hold g304_seats() entries. */
#ifndef CARDROOM_AI304_H
#define CARDROOM_AI304_H

#include <stdint.h>

#include "g304.h"

typedef struct {
    g304_view view;                        /* g304_view_of(st, seat) */
    g304_rules rules;
    int nlegal;
    g304_action legal[G304_MAX_LEGAL];     /* g304_legal(st, seat) */
    uint8_t may_spoilt;                    /* g304_may_spoilt(st, seat) */
    cardset_t seen[G304_MAX_SEATS];        /* cards each seat was seen to play (face up, turned
                                              up, or the seat's own face-down plays) */
    uint8_t void_in[G304_MAX_SEATS];       /* bit s: the seat showed out of suit s (R-FOLLOW) */
    uint16_t bid_of[G304_MAX_SEATS];       /* the highest bid each seat made (0 none, G304_PCC) */
    uint8_t passed[G304_MAX_SEATS];        /* the seat passed at least once */
    uint16_t trick_points[2];              /* card points each team has won so far, as far
                                              as this seat can count them */
} ai304_input;

/* Gathers what seat may know now. */
void ai304_input_of(const g304_state *st, int seat, ai304_input *in);

/* Chooses seat's move. Returns 0 and sets *out, or -1 when there is nothing for this seat to
 * do (not its turn and no declaration worth making). seed makes choices between equal moves
 * reproducible. */
int ai304_choose(const ai304_input *in, uint64_t seed, g304_action *out);

#endif
