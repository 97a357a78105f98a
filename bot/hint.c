/* hint.c — the expert's move for one seat, and what it expects from a card (hint.h).
 *
 * The move is aiplay_choose() at the expert level, nothing else, so a hint is what an expert
 * computer player in the seat would do with the same seed. The figure for a card is computed
 * here, the way the expert weighs its cards: worlds drawn from the seat's knowledge (the same
 * draw as its own search, from the same seed), the card played in each and the rest solved
 * double-dummy; a world whose search reaches the node budget is left out, and with none left
 * there is no figure. */
#include "hint.h"

#include <string.h>

#include "aiplay.h"

#define HINT_WORLDS 20        /* the expert's worlds per card */
#define HINT_BUDGET 400000L   /* nodes per world for the figure */
#define HINT_TABLE_BITS 17

void hint_ask(const g304_state *st, const aiworld_history *bidding, int seat, uint64_t seed, hint_question *q)
{
    g304_action open;
    memset(q, 0, sizeof *q);
    aiworld_input_of(st, seat, bidding, &q->in);
    q->seed = seed;
    q->may_open = aiworld_legal(&q->in, G304_DO_OPEN, CARD_NONE, 0, &open) == 0;
    q->points = HINT_NO_FIGURE;
}

/* The seat's team's expected card points at the end of the hand after it plays card, or
 * HINT_NO_FIGURE. */
static int hint_points(const hint_question *q, dd_solver *w, card_t card)
{
    aiworld worlds[HINT_WORLDS];
    uint64_t rng = q->seed;
    int team = q->in.base.view.seat & 1, nw = aiworld_draw(&q->in, &rng, worlds, HINT_WORLDS), counted = 0;
    long sum = 0;
    dd_solver_budget(w, HINT_BUDGET);
    for (int i = 0; i < nw; i++) {
        dd_pos y = worlds[i].pos;
        dd_play(&y, card);
        int v = y.trick_no < y.ntricks ? dd_value(w, &y) : 0;
        if (v == DD_UNKNOWN) continue;
        sum += team == 0 ? y.points[0] + v : y.points[1] + dd_points_left(&y) - v;
        counted++;
    }
    return counted ? (int)((sum + counted / 2) / counted) : HINT_NO_FIGURE;
}

int hint_think(hint_question *q)
{
    aiplay *p = aiplay_new();
    if (!p) return -1;
    q->chosen = aiplay_choose(p, AIPLAY_EXPERT, &q->in, q->seed, &q->move) == 0;
    aiplay_free(p);
    q->points = HINT_NO_FIGURE;
    if (!q->chosen || q->move.kind != G304_DO_PLAY) return 0;
    dd_solver *w = dd_solver_new(HINT_TABLE_BITS);
    if (!w) return -1;
    q->points = (int16_t)hint_points(q, w, q->move.card);
    dd_solver_free(w);
    return 0;
}
