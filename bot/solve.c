/* solve.c — `cardroom solve` (interface in solve.h).
 *
 * The position comes from replay's own reader (replay_304_position), so the input is exactly
 * replay's. Each legal move is applied by the engine on a copy of the state (the open declaration
 * too), and the position after it goes to the double-dummy solver: exact points for both teams
 * (dd_value) and, for a team that has won every trick so far, whether it can win the rest
 * (dd_sweep). One solver serves every move, so their searches share its table. */
#include "solve.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dd.h"
#include "replay.h"

#define SOLVE_TABLE_BITS 20

typedef struct {
    int points[2]; /* final card points of each team under best play */
    int made;      /* 1 made, 0 failed */
    int caps;      /* the team that can still win every trick of the hand, -1 if none */
} solve_outcome;

static json_t *solve_pair(const int v[2]) { return json_pack("[ii]", v[0], v[1]); }

/* What the hand comes to from st when both teams play perfectly. */
static void solve_outcome_of(dd_solver *w, const g304_state *st, solve_outcome *o)
{
    dd_pos p;
    int mt = st->maker & 1;
    o->caps = -1;
    if (dd_pos_of(st, &p, NULL, 0) != 0) { /* the hand is over */
        o->points[0] = st->points[0];
        o->points[1] = st->points[1];
        o->made = st->result.made == 1;
        if (st->team_tricks[0] == G304_TRICKS || st->team_tricks[1] == G304_TRICKS)
            o->caps = st->team_tricks[1] == G304_TRICKS;
        return;
    }
    int v = dd_value(w, &p);
    o->points[0] = p.points[0] + v;
    o->points[1] = p.points[1] + dd_points_left(&p) - v;
    for (int t = 0; t < 2 && o->caps < 0; t++)
        if (p.tricks[!t] == 0 && dd_sweep(w, &p, t)) o->caps = t;
    o->made = st->pcc ? o->caps == mt : o->points[mt] >= st->bid;
}

static json_t *solve_move_json(const g304_action *a, const solve_outcome *o)
{
    json_t *m = a->kind == G304_DO_PLAY ? json_pack("{s:s, s:s}", "do", "play", "card", card_str(a->card))
                                        : json_pack("{s:s}", "do", g304_do_name((g304_do)a->kind));
    json_t *rest = json_pack("{s:o, s:b, s:o}", "points", solve_pair(o->points), "made", o->made, "caps",
                             o->caps < 0 ? json_null() : json_integer(o->caps));
    if (!m || !rest || json_object_update(m, rest) < 0) {
        json_decref(m);
        m = NULL;
    }
    json_decref(rest);
    return m;
}

static json_t *solve_doc(dd_solver *w, const g304_state *st)
{
    g304_action legal[G304_MAX_LEGAL];
    int n = g304_legal(st, st->to_act, legal);
    json_t *moves = json_array();
    solve_outcome best, o;
    solve_outcome_of(w, st, &best);
    for (int i = 0; i < n && moves; i++) {
        g304_state after = *st;
        if (g304_apply(&after, st->to_act, &legal[i], NULL, NULL) != G304_OK) continue;
        solve_outcome_of(w, &after, &o);
        json_t *m = solve_move_json(&legal[i], &o);
        if (!m || json_array_append_new(moves, m) < 0) {
            json_decref(moves);
            moves = NULL;
        }
    }
    char trump[2] = {suit_letter(st->trump), 0};
    json_t *bid = st->bid == G304_PCC ? json_string("pcc") : json_integer(st->bid);
    int pts[2] = {st->points[0], st->points[1]};
    return json_pack("{s:i, s:i, s:i, s:o, s:s, s:s, s:b, s:o, s:o, s:o, s:o}", "to_act", st->to_act, "trick",
                     st->trick_no + 1, "trump_maker", st->maker, "bid", bid, "trump", trump, "indicator",
                     card_str(st->indicator), "open", st->trump_open, "points", solve_pair(pts), "value",
                     solve_pair(best.points), "caps", best.caps < 0 ? json_null() : json_integer(best.caps),
                     "moves", moves ? moves : json_null());
}

int solve_run(const char *in, size_t len, char **out, char *err, size_t errlen)
{
    g304_state st;
    *out = NULL;
    if (replay_304_position(in, len, &st, err, errlen) != 0) return 2;
    if (st.phase != G304_PHASE_PLAY) {
        snprintf(err, errlen, "the hand is not in play (phase %s): solve needs a position after the bidding",
                 g304_phase_name(st.phase));
        return 2;
    }
    dd_pos p;
    if (dd_pos_of(&st, &p, err, errlen) != 0) return 2;
    dd_solver *w = dd_solver_new(SOLVE_TABLE_BITS);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return 2;
    }
    json_t *doc = solve_doc(w, &st);
    dd_solver_free(w);
    *out = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    if (!*out) {
        snprintf(err, errlen, "out of memory");
        return 2;
    }
    return 0;
}
