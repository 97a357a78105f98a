/* aiplay.c — the computer players' levels and their decisions (interface in aiplay.h).
 *
 * Every searching decision has the same shape: draw worlds the seat cannot tell from the real one
 * (aiworld.h), let the double-dummy solver (engine/dd.h) play each option out in each world, turn
 * each outcome into tokens as the rules score them (R-TOKENS: made or failed, the Caps bonus,
 * External Caps), and take the option with the best average. A search that reaches its node budget
 * drops that world from the comparison, so the options are always compared on the same worlds.
 *
 * Double-dummy outcomes assume that everybody sees every card, which helps the side that would
 * guess wrong in a real game. The margins below (the threshold for bidding, the preference for a
 * closed game, whose hidden trump only a real game rewards) absorb that bias; they were set by
 * matches in `cardroom arena`. */
#include "aiplay.h"

#include <stdlib.h>
#include <string.h>

#define AIPLAY_TABLE_BITS 17
#define AIPLAY_MAX_WORLDS 32
#define AIPLAY_POINT_WEIGHT 0.004 /* tokens per card point, to tell apart cards equal in tokens */
#define AIPLAY_TIE_WEIGHT 0.0001  /* the heuristic player's card wins ties */
#define AIPLAY_CAPS_LAST 5        /* Caps earns its bonus when called before the seventh trick */

typedef struct {
    int play_worlds;  /* worlds per card played */
    long play_budget; /* nodes per search while playing */
    int exact_from;   /* tricks left from which exact points are searched */
    int bid_worlds;   /* worlds per bidding decision; 0: the heuristic player's bidding */
    long bid_budget;  /* nodes per search while bidding */
    double bid_margin;   /* the expected tokens a bid must promise */
    int pad_low, pad_high; /* card points added to a bid below / from 250 in the simulations */
    double pcc_needs;      /* the share of worlds Partner Close Caps must win in */
    double redeal_below; /* a redeal when the best bid promises less than this */
    double ask_margin;   /* asking partner must promise this much more than passing */
    double open_margin;  /* how much likelier an open game must make the bid */
} aiplay_params;

static const aiplay_params aiplay_levels[AIPLAY_LEVELS] = {
    [AIPLAY_EASY] = {0},
    [AIPLAY_NORMAL] = {.play_worlds = 8, .play_budget = 4000, .exact_from = 3},
    [AIPLAY_EXPERT] = {.play_worlds = 20, .play_budget = 30000, .exact_from = 4, .bid_worlds = 24,
                       .bid_budget = 30000, .bid_margin = 0.0, .pad_low = 20, .pad_high = 45, .pcc_needs = 0.9, .redeal_below = -1.0, .ask_margin = 0.6,
                       .open_margin = 0.12},
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

/* R-TOKENS: what a made bid earns, what a failed one costs. */
static int aiplay_reward(int bid)
{
    if (bid == G304_PCC) return 4;
    return bid >= 250 ? 3 : bid >= 200 ? 2 : 1;
}
static int aiplay_charge(int bid) { return aiplay_reward(bid) + 1; }

static double aiplay_tokens(int bid, double p_made) { return p_made * aiplay_reward(bid) - (1 - p_made) * aiplay_charge(bid); }

/* ---- outcomes in one world ---- */

/* The maker's team's tokens from position y on (both teams playing perfectly), plus a small share
 * of the card points of team `mine`; DD_UNKNOWN-like -1e9 when a search ran out of budget. */
static double aiplay_outcome(aiplay *ap, const aiplay_params *lv, const dd_pos *y, int bid, int mine)
{
    enum { UNKNOWN = -1000000000 };
    int mt = aiplay_team(y->maker), made;
    if (y->pcc) {
        made = y->tricks[!mt] == 0 ? dd_sweep(ap->dd, y, mt) : 0;
    } else {
        int need = bid - y->points[mt];
        made = need <= 0 ? 1 : dd_reach(ap->dd, y, mt, need);
    }
    if (made == DD_UNKNOWN) return UNKNOWN;
    double tokens = made ? aiplay_reward(bid) : -aiplay_charge(bid);
    if (!y->pcc && y->trick_no <= AIPLAY_CAPS_LAST && y->trick_no < y->ntricks) {
        for (int t = 0; t < 2; t++) {
            if (y->tricks[!t]) continue;
            int sweep = dd_sweep(ap->dd, y, t);
            if (sweep == DD_UNKNOWN) return UNKNOWN;
            if (sweep) tokens += t == mt ? 1 : -1; /* the Caps bonus, or External Caps */
        }
    }
    double result = aiplay_team(mine) == mt ? tokens : -tokens;
    if (y->ntricks - y->trick_no <= lv->exact_from) {
        int v = y->trick_no < y->ntricks ? dd_value(ap->dd, y) : 0;
        if (v == DD_UNKNOWN) return UNKNOWN;
        int mine_pts = aiplay_team(mine) == 0 ? y->points[0] + v : y->points[1] + dd_points_left(y) - v;
        result += AIPLAY_POINT_WEIGHT * mine_pts;
    }
    return result;
}

/* ---- the heuristic player, for what a level does not search and to break ties ---- */

static int aiplay_heuristic(const aiworld_input *in, uint64_t seed, g304_action *out)
{
    return ai304_choose(&in->base, seed, out);
}

static int aiplay_find(const aiworld_input *in, int kind, card_t card, int amount, g304_action *out)
{
    for (int i = 0; i < in->base.nlegal; i++) {
        const g304_action *a = &in->base.legal[i];
        if (a->kind != kind) continue;
        if ((kind == G304_DO_PLAY || kind == G304_DO_TRUMP) && a->card != card) continue;
        if (kind == G304_DO_BID && a->amount != amount) continue;
        *out = *a;
        return 0;
    }
    return -1;
}

/* ---- card play ---- */

static int aiplay_card(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, uint64_t seed, g304_action *out)
{
    card_t cards[G304_MAX_LEGAL];
    int nc = 0;
    for (int i = 0; i < in->base.nlegal; i++)
        if (in->base.legal[i].kind == G304_DO_PLAY) cards[nc++] = in->base.legal[i].card;
    g304_action guess;
    int have_guess = aiplay_heuristic(in, seed, &guess) == 0 && guess.kind == G304_DO_PLAY;
    if (nc <= 1 || lv->play_worlds <= 0) {
        if (nc == 0) return -1;
        return aiplay_find(in, G304_DO_PLAY, have_guess ? guess.card : cards[0], 0, out);
    }
    uint64_t rng = seed;
    aiworld worlds[AIPLAY_MAX_WORLDS];
    int nw = aiworld_draw(in, &rng, worlds, lv->play_worlds);
    double sum[G304_MAX_LEGAL] = {0};
    int counted = 0, me = in->base.view.seat, bid = in->base.view.bid;
    dd_solver_budget(ap->dd, lv->play_budget);
    for (int w = 0; w < nw; w++) {
        double u[G304_MAX_LEGAL];
        int ok = 1;
        for (int i = 0; i < nc && ok; i++) {
            dd_pos y = worlds[w].pos;
            dd_play(&y, cards[i]);
            u[i] = aiplay_outcome(ap, lv, &y, bid, me);
            ok = u[i] > -1e8;
        }
        if (!ok) continue;
        for (int i = 0; i < nc; i++) sum[i] += u[i];
        counted++;
    }
    int best = 0;
    if (counted == 0) { /* no world searched in budget: the heuristic card */
        if (have_guess) return aiplay_find(in, G304_DO_PLAY, guess.card, 0, out);
    } else {
        for (int i = 0; i < nc; i++) {
            if (have_guess && cards[i] == guess.card) sum[i] += AIPLAY_TIE_WEIGHT * counted;
            if (sum[i] > sum[best]) best = i;
        }
    }
    return aiplay_find(in, G304_DO_PLAY, cards[best], 0, out);
}

/* ---- positions before play ---- */

/* The lowest card of suit s in hand (the indicator that keeps the J and 9 in hand), CARD_NONE if
 * the hand has none. */
static card_t aiplay_lowest(cardset_t hand, int s)
{
    card_t low = CARD_NONE;
    for (cardset_t h = hand & CARDSET_SUIT(s); h; h &= h - 1) {
        card_t c = cardset_first(h);
        if (low == CARD_NONE || card_power(c) < card_power(low)) low = c;
    }
    return low;
}

/* The first lead of a dealt world with maker, his face-down indicator, the bid (R-250, R-PCC). */
static void aiplay_first_lead(const aiworld_input *in, card_t hands[G304_SEATS][G304_TRICKS], int maker,
                              card_t indicator, int bid, dd_pos *p)
{
    memset(p, 0, sizeof *p);
    p->nseats = G304_SEATS;
    p->ntricks = G304_TRICKS;
    p->maker = (uint8_t)maker;
    p->trump = (uint8_t)CARD_SUIT(indicator);
    p->pcc = bid == G304_PCC;
    p->bid250 = bid >= 250;
    p->ind_down = 1;
    p->indicator = indicator;
    p->to_act = (uint8_t)(p->pcc ? maker : (in->base.view.dealer + 1) % G304_SEATS);
    p->caps_seat = G304_NO_SEAT;
    for (int s = 0; s < G304_SEATS; s++)
        for (int i = 0; i < G304_TRICKS; i++) p->hand[s] |= CARDSET_BIT(hands[s][i]);
    p->hand[maker] &= ~CARDSET_BIT(indicator);
}

/* Whether maker's team makes bid from the first lead, with pad points to spare: 1, 0, or DD_UNKNOWN.
 * The pad stands for what perfect knowledge of every card is worth to the maker's side. */
static int aiplay_makes(aiplay *ap, const dd_pos *p, int bid, int pad)
{
    int mt = aiplay_team(p->maker);
    return bid == G304_PCC ? dd_sweep(ap->dd, p, mt) : dd_reach(ap->dd, p, mt, bid + pad);
}

static int aiplay_pad(const aiplay_params *lv, int bid) { return bid >= 250 ? lv->pad_high : lv->pad_low; }

/* The suits worth trying as trump with these cards: those held, strongest first, at most max. */
static int aiplay_suits(cardset_t hand, int *out, int max)
{
    int order[SUIT_COUNT], n = 0;
    for (int s = 0; s < SUIT_COUNT; s++) {
        if (!(hand & CARDSET_SUIT(s))) continue;
        int j = n++;
        while (j > 0 && aiworld_trump_value(hand, order[j - 1]) < aiworld_trump_value(hand, s))
            order[j] = order[j - 1], j--;
        order[j] = s;
    }
    if (n > max) n = max;
    memcpy(out, order, sizeof(int) * (size_t)n);
    return n;
}

/* For each candidate suit (indicator from `from`) and each bid: how often the seat, as maker with the
 * rest dealt as in each world, makes the bid. p[s][b] over ok[s] worlds. */
typedef struct {
    int nsuits, suits[SUIT_COUNT];
    int nbids, bids[3];
    int made[SUIT_COUNT][3], ok[SUIT_COUNT];
} aiplay_trials;

static void aiplay_try_bids(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, cardset_t from,
                            aiplay_trials *t, uint64_t *rng)
{
    int me = in->base.view.seat;
    memset(t->made, 0, sizeof t->made);
    memset(t->ok, 0, sizeof t->ok);
    dd_solver_budget(ap->dd, lv->bid_budget);
    for (int w = 0; w < lv->bid_worlds; w++) {
        card_t hands[G304_SEATS][G304_TRICKS];
        aiworld_deal(in, rng, hands);
        for (int k = 0; k < t->nsuits; k++) {
            dd_pos p;
            aiplay_first_lead(in, hands, me, aiplay_lowest(from, t->suits[k]), t->bids[0], &p);
            int r[3], ok = 1;
            for (int b = 0; b < t->nbids && ok; b++) {
                p.bid250 = t->bids[b] >= 250;
                p.pcc = t->bids[b] == G304_PCC;
                r[b] = aiplay_makes(ap, &p, t->bids[b], aiplay_pad(lv, t->bids[b]));
                ok = r[b] != DD_UNKNOWN;
            }
            if (!ok) continue;
            t->ok[k]++;
            for (int b = 0; b < t->nbids; b++) t->made[k][b] += r[b];
        }
    }
}

/* The best (suit, bid) by expected tokens; returns the tokens, sets *bid (0 if no trial counted).
 * Partner Close Caps counts only when it wins in nearly every world. */
static double aiplay_best_trial(const aiplay_params *lv, const aiplay_trials *t, int *bid, int *suit)
{
    double best = -1e9;
    *bid = 0;
    *suit = -1;
    for (int k = 0; k < t->nsuits; k++) {
        if (!t->ok[k]) continue;
        for (int b = 0; b < t->nbids; b++) {
            /* a few worlds per estimate: shrunk towards even odds, so one lucky run does not bid */
            double share = (t->made[k][b] + 0.5) / (t->ok[k] + 1.0);
            if (t->bids[b] == G304_PCC && share < lv->pcc_needs) continue;
            double ev = aiplay_tokens(t->bids[b], share);
            if (ev > best) best = ev, *bid = t->bids[b], *suit = t->suits[k];
        }
    }
    return best;
}

/* The legal numeric bids the trials look at: the cheapest, then 200 and 250 if above it. */
static int aiplay_bid_levels(const aiworld_input *in, int *out)
{
    int cheapest = 0, n = 0;
    for (int i = 0; i < in->base.nlegal; i++) {
        const g304_action *a = &in->base.legal[i];
        if (a->kind == G304_DO_BID && a->amount != G304_PCC && (!cheapest || a->amount < cheapest)) cheapest = a->amount;
    }
    if (!cheapest) return 0;
    out[n++] = cheapest;
    static const int steps[] = {200, 250};
    for (int i = 0; i < 2; i++) {
        g304_action a;
        if (steps[i] > cheapest && aiplay_find(in, G304_DO_BID, 0, steps[i], &a) == 0) out[n++] = steps[i];
    }
    return n;
}

/* The partner's chance, over dealt worlds, to make `bid` as maker with his best suit of his first
 * batch: the case for asking him (R-B4-PARTNER). */
static double aiplay_partner_tokens(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, int bid,
                                    uint64_t *rng)
{
    int partner = (in->base.view.seat + 2) % G304_SEATS, made = 0, ok = 0;
    dd_solver_budget(ap->dd, lv->bid_budget);
    for (int w = 0; w < lv->bid_worlds; w++) {
        card_t hands[G304_SEATS][G304_TRICKS];
        aiworld_deal(in, rng, hands);
        cardset_t first = 0;
        for (int i = 0; i < 4; i++) first |= CARDSET_BIT(hands[partner][i]);
        int s;
        aiplay_suits(first, &s, 1);
        dd_pos p;
        aiplay_first_lead(in, hands, partner, aiplay_lowest(first, s), bid, &p);
        int r = aiplay_makes(ap, &p, bid, aiplay_pad(lv, bid));
        if (r == DD_UNKNOWN) continue;
        ok++;
        made += r;
    }
    return ok ? aiplay_tokens(bid, (double)made / ok) : -1e9;
}

/* Four-card bidding (R-B4-*): bid what the simulations say pays, else redeal when allowed and the
 * hand is poor, ask partner when his chances are much better than passing, else pass. */
static int aiplay_bid4(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, uint64_t *rng, g304_action *out)
{
    const g304_view *v = &in->base.view;
    aiplay_trials t;
    t.nbids = aiplay_bid_levels(in, t.bids) ? 1 : 0; /* the cheapest bid: higher ones come in later turns */
    t.nsuits = aiplay_suits(v->hand, t.suits, 2);
    double ev = -1e9;
    int bid = 0, suit;
    if (t.nbids) {
        aiplay_try_bids(ap, lv, in, v->hand, &t, rng);
        ev = aiplay_best_trial(lv, &t, &bid, &suit);
    }
    int partner_holds = v->bid && v->bidder == (v->seat + 2) % G304_SEATS;
    double need = lv->bid_margin + (partner_holds ? 0.5 : 0.0); /* overbidding partner must pay clearly */
    if (bid && ev > need) return aiplay_find(in, G304_DO_BID, 0, bid, out);
    if (aiplay_find(in, G304_DO_REDEAL, 0, 0, out) == 0 && ev < lv->redeal_below) return 0;
    g304_action ask;
    if (t.nbids && aiplay_find(in, G304_DO_PARTNER, 0, 0, &ask) == 0 &&
        aiplay_partner_tokens(ap, lv, in, t.bids[0], rng) > lv->ask_margin) {
        *out = ask;
        return 0;
    }
    return aiplay_find(in, G304_DO_PASS, 0, 0, out);
}

/* The tokens my team expects from the contract standing now (st's highest bid), over dealt worlds:
 * its maker plays his best suit (or the indicator this seat knows). */
static double aiplay_contract_tokens(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, uint64_t *rng)
{
    const g304_view *v = &in->base.view;
    int maker = v->bidder, made = 0, ok = 0, me = v->seat;
    dd_solver_budget(ap->dd, lv->bid_budget);
    for (int w = 0; w < lv->bid_worlds; w++) {
        card_t hands[G304_SEATS][G304_TRICKS];
        aiworld_deal(in, rng, hands);
        card_t ind = v->indicator;
        if (maker != me || ind == CARD_NONE) {
            cardset_t first = 0;
            for (int i = 0; i < 4; i++) first |= CARDSET_BIT(hands[maker][i]);
            int s;
            aiplay_suits(first, &s, 1);
            ind = aiplay_lowest(first, s);
        }
        dd_pos p;
        aiplay_first_lead(in, hands, maker, ind, v->bid, &p);
        int r = aiplay_makes(ap, &p, v->bid, aiplay_pad(lv, v->bid));
        if (r == DD_UNKNOWN) continue;
        ok++;
        made += r;
    }
    if (!ok) return 0;
    double ev = aiplay_tokens(v->bid, (double)made / ok);
    return aiplay_team(maker) == aiplay_team(me) ? ev : -ev;
}

/* The eight-card round (R-B8-*): pass, the cheapest bid of 250 or more, or Partner Close Caps, by the
 * tokens each promises against letting the standing contract be played. */
static int aiplay_bid8(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, uint64_t *rng, g304_action *out)
{
    const g304_view *v = &in->base.view;
    aiplay_trials t;
    t.nbids = aiplay_bid_levels(in, t.bids);
    g304_action pcc;
    int can_pcc = aiplay_find(in, G304_DO_BID, 0, G304_PCC, &pcc) == 0;
    if (t.nbids > 1) t.nbids = 1; /* the cheapest only: the rest would only add risk */
    int best_value = 0;
    for (int s = 0; s < SUIT_COUNT; s++)
        if (aiworld_trump_value(v->hand, s) > best_value) best_value = aiworld_trump_value(v->hand, s);
    if (can_pcc && best_value >= 90) t.bids[t.nbids++] = G304_PCC; /* only a hand with a long, high trump */
    if (!t.nbids || best_value < 60) return aiplay_find(in, G304_DO_PASS, 0, 0, out);
    t.nsuits = aiplay_suits(v->hand, t.suits, 2);
    aiplay_try_bids(ap, lv, in, v->hand, &t, rng);
    int bid, suit;
    double ev = aiplay_best_trial(lv, &t, &bid, &suit);
    if (!bid || ev <= lv->bid_margin) return aiplay_find(in, G304_DO_PASS, 0, 0, out);
    double stay = aiplay_contract_tokens(ap, lv, in, rng);
    if (ev > stay + lv->bid_margin) return aiplay_find(in, G304_DO_BID, 0, bid, out);
    return aiplay_find(in, G304_DO_PASS, 0, 0, out);
}

/* The indicator (R-TRUMP-PICK, R-B8-RESULT): of each suit among the legal cards its lowest card, the
 * one that makes the bid most often. */
static int aiplay_trump(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, uint64_t *rng, g304_action *out)
{
    const g304_view *v = &in->base.view;
    cardset_t allowed = 0;
    for (int i = 0; i < in->base.nlegal; i++)
        if (in->base.legal[i].kind == G304_DO_TRUMP) allowed |= CARDSET_BIT(in->base.legal[i].card);
    aiplay_trials t;
    t.nbids = 1;
    t.bids[0] = v->bid;
    t.nsuits = aiplay_suits(allowed, t.suits, SUIT_COUNT);
    if (t.nsuits == 1) return aiplay_find(in, G304_DO_TRUMP, aiplay_lowest(allowed, t.suits[0]), 0, out);
    aiplay_try_bids(ap, lv, in, allowed, &t, rng);
    int bid, suit;
    aiplay_best_trial(lv, &t, &bid, &suit);
    if (suit < 0) return -1;
    return aiplay_find(in, G304_DO_TRUMP, aiplay_lowest(allowed, suit), 0, out);
}

/* R-OPEN: open when, over worlds of the defenders' cards, the bid is made clearly more often with the
 * trump shown than hidden (a real game rewards the hidden trump more than double-dummy play does). */
static int aiplay_want_open(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, uint64_t *rng)
{
    aiworld worlds[AIPLAY_MAX_WORLDS];
    int nw = aiworld_draw(in, rng, worlds, lv->bid_worlds), closed = 0, open = 0, ok = 0;
    int bid = in->base.view.bid;
    dd_solver_budget(ap->dd, lv->bid_budget);
    for (int w = 0; w < nw; w++) {
        dd_pos c = worlds[w].pos, o = c;
        o.hand[o.maker] |= CARDSET_BIT(o.indicator);
        o.ind_down = 0;
        o.trump_open = 1;
        int rc = aiplay_makes(ap, &c, bid, 0), ro = aiplay_makes(ap, &o, bid, 0);
        if (rc == DD_UNKNOWN || ro == DD_UNKNOWN) continue;
        ok++;
        closed += rc;
        open += ro;
    }
    return ok && (double)(open - closed) / ok > lv->open_margin;
}

/* R-SPOILT: when the trumps are certainly spoilt (the heuristic player's test, from what the seat
 * knows), void the hand only if playing on is worth less to the seat's team than nothing. */
static int aiplay_want_spoilt(aiplay *ap, const aiplay_params *lv, const aiworld_input *in, uint64_t seed,
                              uint64_t *rng)
{
    g304_action a;
    if (aiplay_heuristic(in, seed, &a) != 0 || a.kind != G304_DO_SPOILT) return 0;
    aiworld worlds[AIPLAY_MAX_WORLDS];
    int nw = aiworld_draw(in, rng, worlds, lv->bid_worlds), made = 0, ok = 0;
    const g304_view *v = &in->base.view;
    dd_solver_budget(ap->dd, lv->bid_budget);
    for (int w = 0; w < nw; w++) {
        const dd_pos *p = &worlds[w].pos;
        int mt = aiplay_team(p->maker), need = v->bid - p->points[mt];
        int r = p->pcc ? dd_sweep(ap->dd, p, mt) : need <= 0 ? 1 : dd_reach(ap->dd, p, mt, need);
        if (r == DD_UNKNOWN) continue;
        ok++;
        made += r;
    }
    if (!ok) return 1;
    double ev = aiplay_tokens(v->bid, (double)made / ok);
    return (aiplay_team(v->seat) == aiplay_team(v->maker) ? ev : -ev) < 0;
}

/* ---- the entry point ---- */

int aiplay_choose(aiplay *p, int level, const aiworld_input *in, uint64_t seed, g304_action *out)
{
    if (level < 0 || level >= AIPLAY_LEVELS) level = AIPLAY_EASY;
    if (p) p->nodes_at_start = dd_nodes(p->dd);
    aiplay_params tmp = aiplay_levels[level];
    if (level == AIPLAY_NORMAL && getenv("XP_W")) { tmp.play_worlds = atoi(getenv("XP_W")); tmp.play_budget = atol(getenv("XP_B")); tmp.exact_from = atoi(getenv("XP_E")); }
    if (level == AIPLAY_EXPERT) {
        if (getenv("XB_MARGIN")) tmp.bid_margin = atof(getenv("XB_MARGIN"));
        if (getenv("XB_PADL")) tmp.pad_low = atoi(getenv("XB_PADL"));
        if (getenv("XB_PADH")) tmp.pad_high = atoi(getenv("XB_PADH"));
        if (getenv("XB_OPEN")) tmp.open_margin = atof(getenv("XB_OPEN"));
    }
    const char *heur = getenv("XB_HEUR");
    if (level == AIPLAY_EXPERT && heur && p) {
        const g304_view *vv = &in->base.view;
        const char *ph = vv->phase == G304_PHASE_BID4 ? "bid4" : vv->phase == G304_PHASE_BID8 ? "bid8" : vv->phase == G304_PHASE_TRUMP ? "trump" : "";
        if (*ph && strstr(heur, ph)) return aiplay_heuristic(in, seed, out);
    }
    const aiplay_params *lv = &tmp;
    if (level == AIPLAY_EASY || !p) return aiplay_heuristic(in, seed, out);
    const g304_view *v = &in->base.view;
    dd_solver_clear(p->dd); /* the same input gives the same move whatever was searched before */
    uint64_t rng = seed ^ 0xA5A5A5A55A5A5A5Aull;
    int searching_bids = lv->bid_worlds > 0;
    switch (v->phase) {
    case G304_PHASE_BID4:
        if (searching_bids && v->to_act == v->seat) return aiplay_bid4(p, lv, in, &rng, out);
        break;
    case G304_PHASE_TRUMP:
        if (searching_bids && v->to_act == v->seat) return aiplay_trump(p, lv, in, &rng, out);
        break;
    case G304_PHASE_BID8:
        if (searching_bids && v->to_act == v->seat) return aiplay_bid8(p, lv, in, &rng, out);
        break;
    case G304_PHASE_PLAY: {
        if (in->base.may_spoilt && searching_bids) {
            if (aiplay_want_spoilt(p, lv, in, seed, &rng)) {
                memset(out, 0, sizeof *out);
                out->kind = G304_DO_SPOILT;
                return 0;
            }
        } else if (in->base.may_spoilt) {
            g304_action a;
            if (aiplay_heuristic(in, seed, &a) == 0 && a.kind == G304_DO_SPOILT) return *out = a, 0;
        }
        g304_action open;
        if (aiplay_find(in, G304_DO_OPEN, 0, 0, &open) == 0) {
            int want = searching_bids ? aiplay_want_open(p, lv, in, &rng)
                                      : aiplay_heuristic(in, seed, out) == 0 && out->kind == G304_DO_OPEN;
            if (want) return *out = open, 0;
        }
        if (v->to_act != v->seat) return -1;
        return aiplay_card(p, lv, in, seed, out);
    }
    default:
        break;
    }
    return aiplay_heuristic(in, seed, out);
}
