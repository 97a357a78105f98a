/* aiplay.h — computer players for 304 at three levels, behind one entry point.
 *
 * aiplay_choose() takes a level, what one seat knows (aiworld_input: only what that seat may see) and
 * a seed, and returns the seat's move, so tables and `cardroom arena` call the same thing:
 *  - easy: the heuristic player (bot/ai304.h), unchanged;
 *  - normal: the heuristic player's bidding, indicator and declarations, and card play by searching
 *    a few deals the seat cannot tell from the real one (4 worlds, small search budgets, exact points
 *    only in the last two tricks);
 *  - expert: every decision from simulation. Cards: 20 worlds drawn from the seat's information set
 *    and weighted by the bidding, every legal card solved double-dummy in each (is the bid made,
 *    Caps, exact points in the last four tricks), the card with the best average in tokens. Bids,
 *    asking partner, redeals, the indicator, open or closed, Partner Close Caps: 200 rollouts of the
 *    whole hand per option (bot/aibid.h). Spoilt trumps: double-dummy over worlds, as for cards. Caps
 *    calls are not guessed: a call is right only when Caps is certain for the caller, which the
 *    game's own test decides (tables call it for computer seats); expert play counts the Caps bonus
 *    in its outcomes.
 * Choices are a function of the input, the level and the seed; search budgets are counted in nodes,
 * not time, so the same input gives the same move on any machine. Four or six players alike (R-SIX-…:
 * the worlds, the rollouts and the solver play the table's game). */
#ifndef CARDROOM_AIPLAY_H
#define CARDROOM_AIPLAY_H

#include <stdint.h>

#include "aiworld.h"

typedef enum { AIPLAY_EASY = 0, AIPLAY_NORMAL, AIPLAY_EXPERT, AIPLAY_LEVELS } aiplay_level;

/* The level named "easy", "normal" or "expert"; -1 for anything else. */
int aiplay_level_parse(const char *name);
const char *aiplay_level_name(int level);

/* A player's work space: the double-dummy solver and its table (a few MiB). One per thread; NULL
 * when out of memory. */
typedef struct aiplay aiplay;
aiplay *aiplay_new(void);
void aiplay_free(aiplay *p);

/* Chooses the seat's move. Returns 0 and sets *out (one of in->base.legal[], or a spoilt-trumps
 * declaration), or -1 when there is nothing for the seat to do. p may be NULL at the easy level. */
int aiplay_choose(aiplay *p, int level, const aiworld_input *in, uint64_t seed, g304_action *out);

/* Search nodes the last aiplay_choose() spent. */
long aiplay_nodes(const aiplay *p);

#endif
