/* game304.h — 304 at a table: the game behind the table interface (game.h).
 *
 * Journal entries of a 304 table, besides the core's seat entries (table.c):
 *   set OPTION VALUE     an option (g304_rules_set names, or the table's own: level), before the
 *                        start
 *   start                the match begins (every seat taken)
 *   deal DEALER T0 T1    the next hand, with the dealer and tokens it starts from (they follow
 *                        from the hands before; stated so that a rebuild may skip the moves of
 *                        finished hands, and so that a damaged journal shows)
 *   move SEAT ACTION     bid 160 | bid pcc | pass | partner | redeal | cut N | trump JH | open |
 *                        play JH | caps JH 9H … | spoilt
 *   review               the room heard the review of the last finished hand (!review): said
 *                        once per hand, and never again after a restart
 * The state below lives in the table's game_state; tests read it through game304_of(). */
#ifndef CARDROOM_GAME304_H
#define CARDROOM_GAME304_H

#include <stdint.h>

#include "aiworld.h"
#include "g304.h"
#include "game.h"
#include "review.h"

typedef struct {
    g304_rules rules;                 /* the options (the match keeps its copy from the first deal) */
    g304_state st;                    /* the hand (phase DONE between hands and before the first) */
    int hand_no;                      /* hands dealt so far (the current one is hand_no) */
    int16_t tokens[2];                /* tokens at the start of the current hand */
    uint8_t dealer;
    uint8_t seed[STORE_SEED_BYTES];   /* the current hand's seed */
    int64_t turn_said;                /* the journal position whose turn the room heard at the end
                                         of a move's line (live only: not rebuilt) */
    uint8_t level;                    /* option level: how the computer players play (aiplay_level) */
    aiworld_history bidding;          /* the current hand's bidding, which the searching levels read */
    uint8_t hints;                    /* option hints: whether !hint answers */
    int moves;                        /* moves made in the current hand (with its seed, a hint's seed) */
    int reviewed;                     /* the last hand whose review the room heard (0: none) */
    int64_t review_seq;               /* the journal position a review left while the turn it found
                                         had been prompted already (live only: not rebuilt) */
    review_record play;               /* the current hand's cards, for its review (review.h) */
    review_record last;               /* the hand before it */
} game304_state;

extern const table_game game304;

/* The 304 state of a 304 table. */
static inline const game304_state *game304_of(const table *t) { return (const game304_state *)t->game_state.bytes; }

#endif
