/* aibid.c — contract decisions by rollouts (interface and reasons in aibid.h).
 *
 * A rollout sets the contract up through g304_apply() like a table would (the maker bids, or bids 160
 * and then his eight-card bid; he places the indicator; the others pass), so every rule of the
 * bidding holds; a deal in which the contract cannot be reached that way is not counted. The play is
 * the heuristic player's in all seats, its own open declaration held back unless the rollout tries an
 * open game; a heuristic spoilt-trumps declaration voids the deal, which is then not counted either. */
#include "aibid.h"

#include <string.h>

static int aibid_team(int seat) { return seat & 1; }

/* The lowest card of suit s in hand (the indicator that keeps the J and 9 in hand); CARD_NONE if none. */
static card_t aibid_lowest(cardset_t hand, int s)
{
    card_t low = CARD_NONE;
    for (cardset_t h = hand & CARDSET_SUIT(s); h; h &= h - 1) {
        card_t c = cardset_first(h);
        if (low == CARD_NONE || card_power(c) < card_power(low)) low = c;
    }
    return low;
}

/* The suits held, strongest as trump first, at most max of them. */
static int aibid_suits(cardset_t hand, int *out, int max)
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

static cardset_t aibid_first_batch(card_t hands[G304_MAX_SEATS][G304_TRICKS], int seat)
{
    cardset_t s = 0;
    for (int i = 0; i < 4; i++) s |= CARDSET_BIT(hands[seat][i]);
    return s;
}

/* The heuristic player's move for the seat to act, its open declaration left out unless allowed. */
static int aibid_heuristic(const g304_state *st, int open_allowed, uint64_t seed, g304_action *a)
{
    ai304_input in;
    ai304_input_of(st, st->to_act, &in);
    if (!open_allowed) {
        int k = 0;
        for (int i = 0; i < in.nlegal; i++)
            if (in.legal[i].kind != G304_DO_OPEN) in.legal[k++] = in.legal[i];
        in.nlegal = k;
    }
    return ai304_choose(&in, seed, a);
}

/* One rollout: maker's contract `bid` with indicator ind (open or closed) in the dealt world, played
 * out by the heuristic player. 1 made, 0 failed, -1 not counted. */
static int aibid_rollout(const aiworld_input *in, card_t hands[G304_MAX_SEATS][G304_TRICKS], int maker, card_t ind,
                         int bid, int open, uint64_t *rng)
{
    card_t deck[CARD_IDS];
    int dealer = in->base.view.dealer;
    g304_rules r = in->base.rules;
    if (g304_deck_from_hands_of(&r, (const card_t(*)[G304_TRICKS])hands, dealer, deck) != 0) return -1;
    r.cut = 0;
    r.spoilt = G304_SPOILT_MANUAL;
    const int16_t tokens[2] = {r.start_tokens, r.start_tokens};
    g304_state st;
    g304_start(&st, &r, dealer, tokens, deck, NULL);
    int four = bid != G304_PCC && bid < 250, opened = 0;
    for (int guard = 0; guard < 200 && st.phase != G304_PHASE_DONE; guard++) {
        int seat = st.to_act;
        g304_action a;
        memset(&a, 0, sizeof a);
        a.kind = G304_DO_PASS;
        a.card = CARD_NONE;
        switch (st.phase) {
        case G304_PHASE_BID4:
            if (seat == maker && !st.bid) a.kind = G304_DO_BID, a.amount = (uint16_t)(four ? bid : 160);
            break;
        case G304_PHASE_BID8:
            if (seat == maker && !four && st.bid_round != 8) a.kind = G304_DO_BID, a.amount = (uint16_t)bid;
            break;
        case G304_PHASE_TRUMP:
            a.kind = G304_DO_TRUMP;
            a.card = ind;
            if (!four && st.bid_round != 8) a.card = cardset_first(st.first4[maker]); /* a first indicator */
            break;
        case G304_PHASE_PLAY:
            if (open && !opened && st.trick_no == 0 && st.tricks[0].n == 0) {
                opened = 1;
                a.kind = G304_DO_OPEN;
                seat = st.maker;
            } else if (aibid_heuristic(&st, open, aiworld_random(rng), &a) != 0 || a.kind == G304_DO_SPOILT) {
                return -1;
            }
            break;
        default:
            return -1;
        }
        if (g304_apply(&st, seat, &a, NULL, NULL) != G304_OK) return -1;
    }
    return st.phase == G304_PHASE_DONE && st.result.made >= 0 ? st.result.made : -1;
}

/* Made rollouts of one contract: maker with the indicator his suit `s` gives (lowest of s among `from`,
 * or, if from is 0, among his first batch in each world). */
typedef struct {
    int made, counted;
} aibid_score;

static void aibid_try(const aibid_params *lv, const aiworld_input *in, int maker, cardset_t from, int s, int bid,
                      int open, aibid_score *sc, uint64_t *rng)
{
    sc->made = sc->counted = 0;
    for (int k = 0; k < lv->rollouts; k++) {
        card_t hands[G304_MAX_SEATS][G304_TRICKS];
        aiworld_deal(in, rng, hands);
        cardset_t cards = from ? from : aibid_first_batch(hands, maker);
        int suit = s;
        if (suit < 0) aibid_suits(cards, &suit, 1); /* the maker's best suit in this world */
        card_t ind = aibid_lowest(cards, suit);
        if (ind == CARD_NONE) continue;
        int r = aibid_rollout(in, hands, maker, ind, bid, open, rng);
        if (r < 0) continue;
        sc->counted++;
        sc->made += r;
    }
}

/* The share of counted rollouts in which the bid was made. */
static double aibid_chance(const aibid_score *sc) { return sc->counted ? (double)sc->made / sc->counted : 0; }

static double aibid_tokens(int bid, double p) { return p * aiworld_tokens(bid, 1) + (1 - p) * aiworld_tokens(bid, 0); }

/* The cheapest legal numeric bid, 0 if none. */
static int aibid_cheapest(const aiworld_input *in)
{
    int best = 0;
    for (int i = 0; i < in->base.nlegal; i++) {
        const g304_action *a = &in->base.legal[i];
        if (a->kind == G304_DO_BID && a->amount != G304_PCC && (!best || a->amount < best)) best = a->amount;
    }
    return best;
}

/* The best of the seat's candidate trump suits (its two strongest among `from`) for `bid`: expected
 * tokens, and the suit in *suit. */
static double aibid_best_suit(const aibid_params *lv, const aiworld_input *in, cardset_t from, int bid, int *suit,
                              uint64_t *rng)
{
    int suits[SUIT_COUNT], n = aibid_suits(from, suits, 2);
    double best = -1e9;
    *suit = -1;
    for (int k = 0; k < n; k++) {
        aibid_score sc;
        aibid_try(lv, in, in->base.view.seat, from, suits[k], bid, 0, &sc, rng);
        if (!sc.counted) continue;
        double ev = aibid_tokens(bid, aibid_chance(&sc));
        if (ev > best) best = ev, *suit = suits[k];
    }
    return best;
}

/* The four-card round (R-B4-*): the cheapest bid when it promises more than passing; else a redeal
 * when allowed and the hand is poor; else asking partner when his own best contract promises enough
 * (never with six players, R-SIX-PARTNER: the engine does not list it); else a pass. Overbidding
 * partner, or a teammate (200 or more, R-B4-200), must promise clearly more. */
int aibid_four(const aibid_params *lv, const aiworld_input *in, uint64_t *rng, g304_action *out)
{
    const g304_view *v = &in->base.view;
    int bid = aibid_cheapest(in), suit = -1;
    double ev = bid ? aibid_best_suit(lv, in, v->hand, bid, &suit, rng) : -1e9;
    int partner = (v->seat + 2) % g304_seats(&in->base.rules);
    int partner_holds = v->bid && v->bidder != v->seat && aibid_team(v->bidder) == aibid_team(v->seat);
    double need = lv->bid_margin + (partner_holds ? 1.0 : 0.0);
    if (suit >= 0 && ev > need && aiworld_legal(in, G304_DO_BID, CARD_NONE, bid, out) == 0) return 0;
    if (ev < lv->redeal_below && aiworld_legal(in, G304_DO_REDEAL, CARD_NONE, 0, out) == 0) return 0;
    g304_action ask;
    if (bid && aiworld_legal(in, G304_DO_PARTNER, CARD_NONE, 0, &ask) == 0) {
        aibid_score sc;
        aibid_try(lv, in, partner, 0, -1, bid, 0, &sc, rng);
        if (sc.counted && aibid_tokens(bid, aibid_chance(&sc)) > lv->ask_margin) return *out = ask, 0;
    }
    return aiworld_legal(in, G304_DO_PASS, CARD_NONE, 0, out);
}

/* The indicator (R-TRUMP-PICK, R-B8-RESULT): of each suit among the legal cards, its lowest card;
 * the suit whose rollouts make the bid most often. */
int aibid_indicator(const aibid_params *lv, const aiworld_input *in, uint64_t *rng, g304_action *out)
{
    cardset_t allowed = 0;
    for (int i = 0; i < in->base.nlegal; i++)
        if (in->base.legal[i].kind == G304_DO_TRUMP) allowed |= CARDSET_BIT(in->base.legal[i].card);
    int suits[SUIT_COUNT], n = aibid_suits(allowed, suits, SUIT_COUNT), best = n ? suits[0] : -1;
    double best_made = -1;
    for (int k = 0; k < n && n > 1; k++) {
        aibid_score sc;
        aibid_try(lv, in, in->base.view.seat, allowed, suits[k], in->base.view.bid, 0, &sc, rng);
        double p = aibid_chance(&sc);
        if (p > best_made) best_made = p, best = suits[k];
    }
    if (best < 0) return -1;
    return aiworld_legal(in, G304_DO_TRUMP, aibid_lowest(allowed, best), 0, out);
}

/* The tokens the seat's team expects from the contract standing now, its maker playing his best suit
 * of his first batch (or the indicator this seat placed). */
static double aibid_standing(const aibid_params *lv, const aiworld_input *in, uint64_t *rng)
{
    const g304_view *v = &in->base.view;
    int maker = v->bidder;
    aibid_score sc;
    if (maker == v->seat && v->indicator != CARD_NONE)
        aibid_try(lv, in, maker, CARDSET_BIT(v->indicator), CARD_SUIT(v->indicator), v->bid, 0, &sc, rng);
    else
        aibid_try(lv, in, maker, 0, -1, v->bid, 0, &sc, rng);
    double ev = aibid_tokens(v->bid, aibid_chance(&sc));
    return aibid_team(maker) == aibid_team(v->seat) ? ev : -ev;
}

/* The eight-card round (R-B8-*; the six-card round with six players, R-SIX-B6): the cheapest bid of 250
 * or more, or Partner Close Caps when nearly every rollout wins every trick, against letting the
 * standing contract be played. */
int aibid_eight(const aibid_params *lv, const aiworld_input *in, uint64_t *rng, g304_action *out)
{
    const g304_view *v = &in->base.view;
    int bid = aibid_cheapest(in), suit = -1, pcc = 0;
    int strongest = 0;
    for (int s = 0; s < SUIT_COUNT; s++)
        if (aiworld_trump_value(v->hand, s) > strongest) strongest = aiworld_trump_value(v->hand, s);
    if (strongest < 60) return aiworld_legal(in, G304_DO_PASS, CARD_NONE, 0, out); /* no suit to carry 250 */
    double ev = bid ? aibid_best_suit(lv, in, v->hand, bid, &suit, rng) : -1e9;
    g304_action pcc_bid;
    if (strongest >= 90 && aiworld_legal(in, G304_DO_BID, CARD_NONE, G304_PCC, &pcc_bid) == 0) {
        int s;
        aibid_suits(v->hand, &s, 1);
        aibid_score sc;
        aibid_try(lv, in, v->seat, v->hand, s, G304_PCC, 1, &sc, rng);
        double share = aibid_chance(&sc);
        if (share >= lv->pcc_needs && aibid_tokens(G304_PCC, share) > ev) ev = aibid_tokens(G304_PCC, share), pcc = 1;
    }
    if ((suit < 0 && !pcc) || ev <= lv->bid_margin) return aiworld_legal(in, G304_DO_PASS, CARD_NONE, 0, out);
    if (ev <= aibid_standing(lv, in, rng) + lv->bid_margin) return aiworld_legal(in, G304_DO_PASS, CARD_NONE, 0, out);
    if (pcc) return *out = pcc_bid, 0;
    return aiworld_legal(in, G304_DO_BID, CARD_NONE, bid, out);
}

int aibid_open(const aibid_params *lv, const aiworld_input *in, uint64_t *rng)
{
    const g304_view *v = &in->base.view;
    if (v->indicator == CARD_NONE) return 0;
    aibid_score closed, open;
    cardset_t ind = CARDSET_BIT(v->indicator);
    aibid_try(lv, in, v->seat, ind, CARD_SUIT(v->indicator), v->bid, 0, &closed, rng);
    aibid_try(lv, in, v->seat, ind, CARD_SUIT(v->indicator), v->bid, 1, &open, rng);
    if (!closed.counted || !open.counted) return 0;
    return aibid_chance(&open) > aibid_chance(&closed) + lv->open_margin;
}
