/* aibid.h — a searching player's decisions about the contract, from simulation: bids in both rounds
 * (Partner Close Caps, asking partner, a redeal included), the indicator, and an open or closed game.
 *
 * Each option is tried in deals drawn from what the seat knows (aiworld_deal, weighted by the
 * bidding), set up through the engine itself (the bids, the indicator, the open declaration) and
 * played out to the end by the heuristic player in every seat: a Monte-Carlo rollout. The share of
 * rollouts in which the bid is made gives the expected tokens of each option; the best one is taken.
 * (The searching player plays better than the rollouts do; matches against the heuristic player
 * found no gain in crediting that, and it would flatter the rollouts against stronger opponents.)
 *
 * Rollouts, not double-dummy searches, decide here: before the first card most of the deal is
 * unknown, and in matches a double-dummy verdict on each sampled deal (which assumes that everybody
 * sees every card) told made from failed contracts worse than a hundred cheap rollouts did
 * (correlations with the real outcome of 0.30 and 0.37 over 214 four-card contracts). The same with
 * six players (R-SIX-…): the rollouts deal and play the six-player game, whose six-card round follows
 * the eight-card one (R-SIX-B6) and which has no asking partner (R-SIX-PARTNER). */
#ifndef CARDROOM_AIBID_H
#define CARDROOM_AIBID_H

#include <stdint.h>

#include "aiworld.h"

typedef struct {
    int rollouts;        /* per option tried */
    double bid_margin;   /* the expected tokens a bid must promise over the alternative */
    double pcc_needs;    /* the share of rollouts Partner Close Caps must win */
    double redeal_below; /* a redeal when the best bid promises fewer tokens than this */
    double ask_margin;   /* asking partner must promise this many tokens */
    double open_margin;  /* how much likelier an open game must make the bid */
} aibid_params;

/* The four-card round, the indicator, the eight-card round (the seat is to act in each): 0 with the
 * move in *out, or -1 when no move could be chosen. */
int aibid_four(const aibid_params *lv, const aiworld_input *in, uint64_t *rng, g304_action *out);
int aibid_indicator(const aibid_params *lv, const aiworld_input *in, uint64_t *rng, g304_action *out);
int aibid_eight(const aibid_params *lv, const aiworld_input *in, uint64_t *rng, g304_action *out);

/* Whether the trump maker, before the first lead, should declare an open game (R-OPEN). */
int aibid_open(const aibid_params *lv, const aiworld_input *in, uint64_t *rng);

#endif
