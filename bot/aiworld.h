/* aiworld.h — what one seat knows, and whole deals drawn from it, for the computer players that search
 * (bot/aiplay.h).
 *
 * aiworld_input_of() gathers a seat's knowledge from the full state, copying nothing the seat may not
 * see: the heuristic player's input (ai304_input), the Caps module's information set (caps_knowledge:
 * voids, unseen face-down cards and what they cannot be, a shown indicator, the suits the trump can
 * still be, R-EXHAUST), where the unseen face-down cards lie, the seat's own first batch, the order of
 * a Caps call, and the bidding as the caller recorded it (aiworld_history: the state keeps only the
 * highest bid, so whoever runs the table notes each bidding move as it is made).
 *
 * A world is one complete deal consistent with all of that: each unseen card placed in a hand, as the
 * unseen indicator, or as an unseen face-down card, every place respecting the suits it cannot hold
 * (drawn card by card, each draw keeping a placement of the rest possible: Hall's condition over
 * suits, as the Caps search uses it). Worlds are weighted by what the bidding said (a trump maker holds
 * a strong trump suit, a player who bid holds a strong suit, a player who passed does not) and drawn in
 * proportion to those weights. Everything is a function of the input and a random stream. Four or six
 * players alike (R-SIX-…): the seats, the hands' sizes and the pack (with the sixes) are the game's. */
#ifndef CARDROOM_AIWORLD_H
#define CARDROOM_AIWORLD_H

#include <stdint.h>

#include "ai304.h"
#include "caps.h"
#include "dd.h"

#define AIWORLD_HISTORY_MAX 64

/* One bidding move, in the order made. */
typedef struct {
    uint8_t seat, kind; /* G304_DO_BID, _PASS, _PARTNER or _REDEAL */
    uint8_t round;      /* 4 or 8 */
    uint16_t amount;    /* a bid's amount (G304_PCC for Partner Close Caps) */
} aiworld_bid;

typedef struct {
    int n;
    aiworld_bid bid[AIWORLD_HISTORY_MAX];
} aiworld_history;

/* Records seat's move a if it is a bidding move, given the state just before it was applied. */
void aiworld_history_note(aiworld_history *h, const g304_state *before, int seat, const g304_action *a);

typedef struct {
    ai304_input base;          /* what the heuristic player gets: view, rules, legal moves, ... */
    caps_knowledge know;       /* the information set (meaningful in play) */
    uint8_t hidden_seat[CAPS_MAX_HIDDEN]; /* who played know's unseen face-down card i */
    uint8_t hidden_team[CAPS_MAX_HIDDEN]; /* the team that won its trick */
    cardset_t first4;          /* the seat's first batch */
    uint8_t maker4;            /* the four-card trump maker (G304_NO_SEAT before) */
    uint16_t bid4;             /* the four-card contract */
    uint8_t caps_n;            /* a Caps caller's cards still to play, in the stated order */
    card_t caps_order[G304_TRICKS];
    aiworld_history history;
} aiworld_input;

/* Gathers what seat may know now; h may be NULL (no bidding recorded). */
void aiworld_input_of(const g304_state *st, int seat, const aiworld_history *h, aiworld_input *in);

/* A world in play: the position with every card placed, and every seat's dealt cards in it. */
typedef struct {
    dd_pos pos;
    cardset_t dealt[G304_MAX_SEATS];
    double weight;
} aiworld;

/* splitmix64: the random stream worlds are drawn from. */
uint64_t aiworld_random(uint64_t *state);

/* Draws up to n worlds of the hand in play (of 3n candidates, in proportion to their weights).
 * Returns how many were drawn (0 if the knowledge fits no deal). */
int aiworld_draw(const aiworld_input *in, uint64_t *rng, aiworld *out, int n);

/* Before play: deals every card the seat cannot see (each other seat's hand, its own second batch),
 * first batches first, in proportion to what the bidding said. hands[s][0..3] is seat s's first
 * batch, then its second: [4..7], or [4..5] with six players (R-SIX-DEAL). */
void aiworld_deal(const aiworld_input *in, uint64_t *rng, card_t hands[G304_MAX_SEATS][G304_TRICKS]);

/* How strong suit s is as trump in a hand (any size): the J and 9 above all, then A, 10, length. */
int aiworld_trump_value(cardset_t hand, int s);

/* The legal move of that kind (with that card for plays and indicators, that amount for bids) into
 * *out: 0, or -1 if there is none. */
int aiworld_legal(const aiworld_input *in, int kind, card_t card, int amount, g304_action *out);

/* R-TOKENS from the trump maker's side: what the bid earns when made, minus what it costs when failed. */
int aiworld_tokens(int bid, int made);

#endif
