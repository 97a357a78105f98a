/* judge.h — a hand of 304 played under the Caps judge (R-CAPS-CALL, R-CAPS-GRACE, R-CAPS-WRONG).
 *
 * judge_apply() is g304_apply() plus the judging the rules ask of the game itself: a Caps call's
 * stated order is checked with the caller's knowledge at the moment of the call, and after every
 * accepted move each seat of a team that has won every trick is checked; the first moment Caps
 * became certain for it, and the order that proves it, go into the state. The engine scores
 * Wrong Caps from those records when the hand ends. Unknown answers (the search budget ran out)
 * are never held against anybody. */
#ifndef CARDROOM_JUDGE_H
#define CARDROOM_JUDGE_H

#include <stddef.h>

#include "caps.h"

g304_code judge_apply(caps_solver *w, g304_state *st, int seat, const g304_action *a, g304_events *ev,
                      g304_error *err);

/* Whether judge_apply() of that move would search: the move is a Caps call it must judge, or
 * after it Caps is open to a seat not yet found certain. A move that would not search needs no
 * solver time at all (most moves: once both teams have won a trick nobody is open to Caps), so
 * a caller may apply it at once and hand only the others to a thread of their own. */
int judge_would_search(const g304_state *st, int seat, const g304_action *a);

/* Records, for every seat it is open to, whether Caps has become certain now. Call it after any
 * change of the state made without judge_apply() (judge_apply() calls it itself). */
void judge_update(caps_solver *w, g304_state *st);

/* The G304_EV_CAPS_JUDGED event in words for the table, e.g. "Caps was certain for North after
 * the 3rd card of trick 4: J♥ 9♥ 8♥ 7♥ K♣ — not called: Wrong Caps, −2". names[] are the names
 * of the g304_seats() seats. Returns buf. */
const char *judge_describe(const g304_state *st, const g304_event *e, const char *const *names, char *buf,
                           size_t len);

#endif
