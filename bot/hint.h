/* hint.h — the move the expert computer player would make now for one seat, from only what
 * that seat may know, for !hint.
 *
 * hint_ask() gathers the seat's knowledge exactly as a computer player at that seat gets it
 * (aiworld_input_of: never a hidden card), so two deals that differ only in cards the seat
 * cannot see ask the same question. hint_think() runs the expert (aiplay_choose) on it and,
 * for a card, what the expert expects from it: the card points the seat's team ends with,
 * averaged over the deals the expert's own search draws (each solved double-dummy after the
 * card). The contract decisions (bids, the indicator, open or closed) come from rollouts that
 * give no figure in card points, so they have none. Everything is a function of the question:
 * the same position and seed give the same hint. The thinking takes up to a few seconds, so
 * tables run it off the event loop. */
#ifndef CARDROOM_HINT_H
#define CARDROOM_HINT_H

#include <stdint.h>

#include "aiworld.h"
#include "g304.h"

#define HINT_NO_FIGURE (-1)

typedef struct {
    aiworld_input in;   /* what the seat knows */
    uint64_t seed;
    uint8_t may_open;   /* the seat may declare an open game now */
    /* the answer */
    uint8_t chosen;     /* move holds the expert's move */
    g304_action move;
    int16_t points;     /* a card: the team's expected card points in the end; else HINT_NO_FIGURE */
} hint_question;

/* The question for seat in state st (bidding: the hand's bidding as the table noted it). */
void hint_ask(const g304_state *st, const aiworld_history *bidding, int seat, uint64_t seed, hint_question *q);

/* The expert's answer into q (chosen, move, points). Returns 0, or -1 when out of memory. */
int hint_think(hint_question *q);

#endif
