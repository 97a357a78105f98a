/* aiplay.c — the computer players' levels and their decisions in play (interface in aiplay.h; the
 * contract decisions are bot/aibid.c's).
 *
 * A card is chosen the way every searching decision here is made: draw worlds the seat cannot tell
 * from the real one (aiworld.h), let the double-dummy solver (engine/dd.h) play each legal card out
 * in each world, turn each outcome into tokens as the rules score them (R-TOKENS: made or failed, the
 * Caps bonus, External Caps; near the end also the card points), and take the card with the best
 * average. A search that reaches its node budget drops that world from the comparison, so the cards
 * are always compared on the same worlds. Spoilt trumps (R-SPOILT) are weighed the same way. */
#include "aiplay.h"

#include <stdlib.h>
#include <string.h>

#include "aibid.h"

#define AIPLAY_TABLE_BITS 17
#define AIPLAY_MAX_WORLDS 40
#define AIPLAY_POINT_WEIGHT 0.004 /* tokens per card point, to tell apart cards equal in tokens */
#define AIPLAY_TIE_WEIGHT 0.0001  /* the heuristic player's card wins ties */
#define AIPLAY_UNKNOWN (-1e9)

typedef struct {
    int play_worlds;  /* worlds per card played */
    long play_budget; /* nodes per search while playing */
    int exact_from;   /* tricks left from which exact points are searched */
    int contracts;    /* contract decisions by simulation (aibid), else the heuristic player's */
    aibid_params bid;
} aiplay_params;

static const aiplay_params aiplay_levels[AIPLAY_LEVELS] = {
    [AIPLAY_EASY] = {0},
    [AIPLAY_NORMAL] = {.play_worlds = 4, .play_budget = 2000, .exact_from = 2},
    [AIPLAY_EXPERT] = {.play_worlds = 20,
                       .play_budget = 30000,
                       .exact_from = 4,
                       .contracts = 1,
                       .bid = {.rollouts = 200, .bid_margin = 0.0, .pcc_needs = 0.85,
                               .redeal_below = -1.0, .ask_margin = 0.6, .open_margin = 0.08}},
};

static const char *const aiplay_names[AIPLAY_LEVELS] = {"easy", "normal", "expert"};

struct aiplay {
    dd_solver *dd;
    long nodes_at_start;
};

int aiplay_level_parse(const char *name)
{
    for (int i = 0; i < AIPLAY_LEVELS; i++)
        if (strcmp(name, aiplay_names[i]) == 0) return i;
    return -1;
}

const char *aiplay_level_name(int level) { return level >= 0 && level < AIPLAY_LEVELS ? aiplay_names[level] : "?"; }

aiplay *aiplay_new(void)
{
    aiplay *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->dd = dd_solver_new(AIPLAY_TABLE_BITS);
    if (!p->dd) {
        free(p);
        return NULL;
    }
    return p;
}

void aiplay_free(aiplay *p)
{
    if (!p) return;
    dd_solver_free(p->dd);
    free(p);
}

long aiplay_nodes(const aiplay *p) { return p ? dd_nodes(p->dd) - p->nodes_at_start : 0; }

static int aiplay_team(int seat) { return seat & 1; }

/* Whether the maker's team makes the bid from y on (both teams playing perfectly): 1, 0, DD_UNKNOWN. */
static int aiplay_made(aiplay *ap, const dd_pos *y, int bid)
{
    int mt = aiplay_team(y->maker), need = bid - y->points[mt];
    if (y->pcc) return y->tricks[!mt] ? 0 : dd_sweep(ap->dd, y, mt);
    return need <= 0 ? 1 : dd_reach(ap->dd, y, mt, need);
}

/* The tokens of team `mine` from position y on, plus a small share of its card points near the end;
 * AIPLAY_UNKNOWN when a search ran out of budget. */
static double aiplay_outcome(aiplay *ap, const aiplay_params *lv, const dd_pos *y, int bid, int mine)
{
    int mt = aiplay_team(y->maker), made = aiplay_made(ap, y, bid);
    if (made == DD_UNKNOWN) return AIPLAY_UNKNOWN;
    double tokens = aiworld_tokens(bid, made);
    /* R-CAPS-SCORE, R-SIX-PLAY: the bonus for a call before the second-to-last trick (the seventh of
     * eight, the fifth of six) */
    if (!y->pcc && y->trick_no + 2 < y->ntricks) {
        for (int t = 0; t < 2; t++) {
            if (y->tricks[!t]) continue;
            int sweep = dd_sweep(ap->dd, y, t);
            if (sweep == DD_UNKNOWN) return AIPLAY_UNKNOWN;
            if (sweep) tokens += t == mt ? 1 : -1; /* the Caps bonus, or External Caps */
        }
    }
    double result = aiplay_team(mine) == mt ? tokens : -tokens;
    if (y->ntricks - y->trick_no <= lv->exact_from) {
        int v = y->trick_no < y->ntricks ? dd_value(ap->dd, y) : 0;
        if (v == DD_UNKNOWN) return AIPLAY_UNKNOWN;
        int pts = aiplay_team(mine) == 0 ? y->points[0] + v : y->points[1] + dd_points_left(y) - v;
        result += AIPLAY_POINT_WEIGHT * pts;
    }
    return result;
}

/* ---- card play ---- */

static int aiplay_card(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, uint64_t seed, g304_action *out)
{
    card_t cards[G304_MAX_LEGAL];
    int nc = 0;
    for (int i = 0; i < in->base.nlegal; i++)
        if (in->base.legal[i].kind == G304_DO_PLAY) cards[nc++] = in->base.legal[i].card;
    if (nc == 0) return -1;
    g304_action guess;
    int have_guess = ai304_choose(&in->base, seed, &guess) == 0 && guess.kind == G304_DO_PLAY;
    card_t pick = have_guess ? guess.card : cards[0];
    if (nc > 1 && lv->play_worlds > 0) {
        uint64_t rng = seed;
        aiworld worlds[AIPLAY_MAX_WORLDS];
        int nw = aiworld_draw(in, &rng, worlds, lv->play_worlds), counted = 0;
        int me = in->base.view.seat, bid = in->base.view.bid;
        double sum[G304_MAX_LEGAL] = {0};
        dd_solver_budget(ap->dd, lv->play_budget);
        for (int w = 0; w < nw; w++) {
            double u[G304_MAX_LEGAL];
            int ok = 1;
            for (int i = 0; i < nc && ok; i++) {
                dd_pos y = worlds[w].pos;
                dd_play(&y, cards[i]);
                u[i] = aiplay_outcome(ap, lv, &y, bid, me);
                ok = u[i] != AIPLAY_UNKNOWN;
            }
            if (!ok) continue;
            for (int i = 0; i < nc; i++) sum[i] += u[i];
            counted++;
        }
        if (counted) {
            int best = 0;
            for (int i = 0; i < nc; i++) {
                if (cards[i] == pick) sum[i] += AIPLAY_TIE_WEIGHT * counted;
                if (sum[i] > sum[best]) best = i;
            }
            pick = cards[best];
        }
    }
    return aiworld_legal(in, G304_DO_PLAY, pick, 0, out);
}

/* R-SPOILT: when the trumps are certainly spoilt (the heuristic player's test, from what the seat
 * knows), void the hand only if playing on is worth less to the seat's team than nothing. */
static int aiplay_want_spoilt(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, uint64_t seed)
{
    g304_action a;
    if (ai304_choose(&in->base, seed, &a) != 0 || a.kind != G304_DO_SPOILT) return 0;
    uint64_t rng = seed;
    aiworld worlds[AIPLAY_MAX_WORLDS];
    int nw = aiworld_draw(in, &rng, worlds, lv->play_worlds), made = 0, counted = 0;
    const g304_view *v = &in->base.view;
    dd_solver_budget(ap->dd, lv->play_budget);
    for (int w = 0; w < nw; w++) {
        int r = aiplay_made(ap, &worlds[w].pos, v->bid);
        if (r == DD_UNKNOWN) continue;
        counted++;
        made += r;
    }
    if (!counted) return 1;
    double p = (double)made / counted;
    double ev = p * aiworld_tokens(v->bid, 1) + (1 - p) * aiworld_tokens(v->bid, 0);
    return (aiplay_team(v->seat) == aiplay_team(v->maker) ? ev : -ev) < 0;
}

/* ---- the entry point ---- */

static int aiplay_play_phase(aiplay *p, const aiplay_params *lv, const aiworld_input *in, uint64_t seed,
                             g304_action *out)
{
    const g304_view *v = &in->base.view;
    if (in->base.may_spoilt) {
        int spoilt;
        if (lv->contracts) {
            spoilt = aiplay_want_spoilt(p, lv, in, seed);
        } else {
            g304_action a;
            spoilt = ai304_choose(&in->base, seed, &a) == 0 && a.kind == G304_DO_SPOILT;
        }
        if (spoilt) {
            memset(out, 0, sizeof *out);
            out->kind = G304_DO_SPOILT;
            return 0;
        }
    }
    g304_action open;
    if (aiworld_legal(in, G304_DO_OPEN, CARD_NONE, 0, &open) == 0) {
        uint64_t rng = seed;
        g304_action a;
        int want = lv->contracts ? aibid_open(&lv->bid, in, &rng)
                                 : ai304_choose(&in->base, seed, &a) == 0 && a.kind == G304_DO_OPEN;
        if (want) return *out = open, 0;
    }
    if (v->to_act != v->seat) return -1;
    return aiplay_card(p, lv, in, seed, out);
}

int aiplay_choose(aiplay *p, int level, const aiworld_input *in, uint64_t seed, g304_action *out)
{
    if (level < 0 || level >= AIPLAY_LEVELS) level = AIPLAY_EASY;
    const aiplay_params *lv = &aiplay_levels[level];
    if (level == AIPLAY_EASY || !p) return ai304_choose(&in->base, seed, out);
    p->nodes_at_start = dd_nodes(p->dd);
    dd_solver_clear(p->dd); /* the same input gives the same move whatever was searched before */
    const g304_view *v = &in->base.view;
    uint64_t rng = seed ^ 0xA5A5A5A55A5A5A5Aull;
    int mine = v->to_act == v->seat && lv->contracts;
    switch (v->phase) {
    case G304_PHASE_BID4:
        if (mine) return aibid_four(&lv->bid, in, &rng, out);
        break;
    case G304_PHASE_TRUMP:
        if (mine) return aibid_indicator(&lv->bid, in, &rng, out);
        break;
    case G304_PHASE_BID8:
        if (mine) return aibid_eight(&lv->bid, in, &rng, out);
        break;
    case G304_PHASE_PLAY:
        return aiplay_play_phase(p, lv, in, seed, out);
    default:
        break;
    }
    return ai304_choose(&in->base, seed, out);
}
