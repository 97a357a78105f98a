/* ai304.c — the heuristic computer player for 304 (interface in ai304.h).
 *
 * ai304_input_of() copies out of the full state only what one seat may know: its view
 * (g304_view_of), its legal moves, the cards it saw played (g304_trick_card_for: face up,
 * turned up at a reveal, its own face-down plays, and for the trump maker the face-down cards
 * he inspected, R-REVEAL), which seats showed out of which suit, what is derivable of the
 * bidding, and the card points each team won as far as the seat can count them.
 *
 * ai304_choose() is a pure function of that input and a seed (the seed only breaks ties and
 * picks the cut point). The strategy in brief:
 *  - cut: no cut half the time, else a random point;
 *  - four-card bidding: a trump suit with the Jack and another card bids 160 and more (+10 for
 *    the 9, for length, for the A with J 9, for a side Jack or two side Aces); 9 with two more
 *    of the suit bids 160; weak hands pass (or redeal when the rules allow it, R-REDEAL); an
 *    opener without a trump suit but with 40+ points asks partner one time in eight
 *    (R-B4-PARTNER); the bid is the cheapest legal one up to the estimate (200 at once when
 *    the estimate is 200+), and partner is overbid only with 20 to spare;
 *  - indicator: the suit with the best trump value (J, 9, A, 10, length); the indicator is the
 *    lowest card of that suit among the legal choices, so the J and 9 stay in hand;
 *  - eight-card round: 250 (the opponents then need only 55 points) with five trumps headed by
 *    J 9 A and two side Jacks, six headed by J 9 A and a side Jack, or seven headed by J 9;
 *    Partner Close Caps only when every card is certain to win (top trumps, at least four,
 *    and only side cards that are the top of their suit);
 *  - open (R-OPEN): declared for Partner Close Caps and for 250+ bids with five trumps headed
 *    by J 9, never otherwise;
 *  - play, leading: draw trumps with the top trump when our team made trump and trumps are
 *    still out; else cash a card that is the top of its suit (seen[] says which higher cards
 *    are gone) unless an opponent has shown out of that suit and may cut; else lead the
 *    cheapest card (fewest points, lowest rank, no trump);
 *  - play, following: partner winning with a card nobody left can beat → throw the card with
 *    most points (a top card of its suit counts less: it wins a trick of its own later); an
 *    opponent winning → win with the cheapest winning card when last to play (earlier: with a
 *    top card, or a card worth nothing), cut valuable tricks (10+ points) with the cheapest
 *    trump that wins when the trump is known, the maker cutting face down with the indicator
 *    while the trump is closed (11+ points); otherwise the cheapest card;
 *  - spoilt trumps (R-SPOILT): declared only when certain from what the seat knows — the
 *    trump is known and either all eight trumps are placed with the maker's team (own hand,
 *    indicator, cards that team played) or each opponent of the maker is known trumpless (own
 *    hand, or showed out of trump having played none). The maker's team declares it too (it
 *    could play on instead, R-SPOILT; this player takes the void), except in Partner Close
 *    Caps, where the maker bid on winning every trick.
 * Caps is left to the caller (the table calls it from the game's own judge).
 *
 * Six players (R-SIX-…) play by the same strategy: "partner" reads "a teammate", the opponents
 * are three, hands and tricks are six, a suit has nine cards (the six at the bottom), and the
 * eight-card thresholds are counted from the hand size (250 with three, four or five trumps
 * headed by J 9 A, J 9 A or J 9 and the same side Jacks; Partner Close Caps needs the top five
 * trumps of nine, so that no opponent can hold more). */
#include "ai304.h"

#include <string.h>

#define AI304_NO_CARD CARD_NONE

/* ---- small helpers ---- */

static int ai304_team(int seat) { return seat & 1; }
static int ai304_bit(int suit) { return 1 << suit; }
/* Whether b is a teammate of a (the partner with four players, R-SIX-SEATS with six). */
static int ai304_mate(int a, int b) { return b < G304_MAX_SEATS && a != b && ai304_team(a) == ai304_team(b); }
static int ai304_seats(const ai304_input *in) { return g304_seats(&in->rules); }
/* Cards in a suit: 8, or 9 with the six (R-SIX-CARDS). */
static int ai304_suit_size(const g304_rules *r) { return r->players == 6 ? RANK_IDS : RANK_COUNT; }

/* splitmix64's finaliser: a seed and a salt to a few well-mixed bits for tie-breaks. */
static uint64_t ai304_mix(uint64_t seed, uint64_t salt)
{
    uint64_t z = seed + (salt + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A score made unique by a seeded tie-break below one unit. */
static long ai304_key(long score, uint64_t seed, int salt)
{
    return score * 256 + (long)(ai304_mix(seed, (uint64_t)salt) & 0xFF);
}

static cardset_t ai304_suit_of(cardset_t s, int suit) { return s & CARDSET_SUIT(suit); }
static int ai304_has(cardset_t s, int suit, int rank) { return (s & CARDSET_BIT(CARD_MAKE(suit, rank))) != 0; }

/* ---- gathering what a seat may know ---- */

/* Cards seen in the tricks (R-LAST, R-REVEAL), who showed out of what, and the points of
 * finished tricks counted from the visible cards only. */
static void ai304_gather_tricks(const g304_state *st, int seat, ai304_input *in)
{
    if (st->phase != G304_PHASE_PLAY && st->phase != G304_PHASE_DONE) return;
    int tricks = g304_tricks(&st->rules);
    int last = st->trick_no < tricks ? st->trick_no : tricks - 1;
    for (int t = 0; t <= last; t++) {
        const g304_trick *tr = &st->tricks[t];
        if (tr->n == 0) continue;
        int led = CARD_SUIT(tr->card[0]); /* a lead is always face up */
        int pts = 0;
        for (int i = 0; i < tr->n; i++) {
            int p = tr->seat[i] % G304_MAX_SEATS, down = (tr->facedown >> i) & 1;
            card_t c = g304_trick_card_for(st, tr, i, seat);
            if (i > 0 && (down || CARD_SUIT(c) != led)) in->void_in[p] |= (uint8_t)ai304_bit(led);
            if (c == CARD_HIDDEN) continue;
            in->seen[p] |= CARDSET_BIT(c);
            pts += card_points(c);
        }
        if (tr->winner != G304_NO_SEAT) in->trick_points[ai304_team(tr->winner)] += (uint16_t)pts;
    }
}

/* The state keeps only the highest bid (st->bid by st->bidder, made in round st->bid_round)
 * and the final four-card bid (st->bid4 by st->maker4), not each seat's bidding history. So
 * bid_of[] holds those two bids only (an overbid bid is lost), and passed[] marks the seats
 * that had a turn in a round without holding that round's highest bid: in the four-card round
 * they passed, asked partner or were overbid; once it ended with a bid, every seat but the
 * maker passed last (R-B4-ORDER); in the eight-card round, the seats that spoke (in order from
 * its opener, st->passes turns) other than its highest bidder. */
static void ai304_gather_bids(const g304_state *st, ai304_input *in)
{
    int seats = g304_seats(&st->rules);
    if (st->maker4 != G304_NO_SEAT) in->bid_of[st->maker4] = st->bid4;
    if (st->bid && st->bidder < seats && st->bid > in->bid_of[st->bidder]) in->bid_of[st->bidder] = st->bid;
    for (int s = 0; s < seats; s++) {
        if (st->phase == G304_PHASE_BID4) in->passed[s] = (st->spoke >> s & 1) && s != st->bidder;
        else if (st->maker4 != G304_NO_SEAT) in->passed[s] = s != st->maker4;
        else if (st->phase == G304_PHASE_DONE && st->result.end == G304_END_ALL_PASS) in->passed[s] = 1;
    }
    int round8 = st->maker4 != G304_NO_SEAT && cardset_count(st->dealt[st->maker4]) == g304_tricks(&st->rules);
    if (!round8) return;
    int opener = st->rules.bid8_opener == G304_OPENER_DEALER_RIGHT ? (st->dealer + 1) % seats : st->maker4;
    for (int k = 0; k < st->passes && k < seats; k++) {
        int s = (opener + k) % seats;
        if (!(st->bid_round == 8 && s == st->bidder)) in->passed[s] = 1;
    }
}

void ai304_input_of(const g304_state *st, int seat, ai304_input *in)
{
    memset(in, 0, sizeof *in);
    seat %= G304_MAX_SEATS;
    g304_view_of(st, seat, &in->view);
    in->rules = st->rules;
    in->nlegal = g304_legal(st, seat, in->legal);
    in->may_spoilt = (uint8_t)g304_may_spoilt(st, seat);
    ai304_gather_tricks(st, seat, in);
    ai304_gather_bids(st, in);
}

/* ---- the legal list ---- */

/* Index of a legal move of that kind (and card, for plays and indicators), -1 if none. */
static int ai304_find(const ai304_input *in, int kind, card_t card)
{
    int by_card = kind == G304_DO_PLAY || kind == G304_DO_TRUMP;
    for (int i = 0; i < in->nlegal; i++)
        if (in->legal[i].kind == kind && (!by_card || in->legal[i].card == card)) return i;
    return -1;
}

static int ai304_find_bid(const ai304_input *in, int amount)
{
    for (int i = 0; i < in->nlegal; i++)
        if (in->legal[i].kind == G304_DO_BID && in->legal[i].amount == amount) return i;
    return -1;
}

/* The cheapest legal numeric bid from `from` up to `to`, -1 if none. */
static int ai304_cheapest_bid(const ai304_input *in, int from, int to)
{
    int best = -1;
    for (int i = 0; i < in->nlegal; i++) {
        const g304_action *a = &in->legal[i];
        if (a->kind != G304_DO_BID || a->amount == G304_PCC || a->amount < from || a->amount > to) continue;
        if (best < 0 || a->amount < in->legal[best].amount) best = i;
    }
    return best;
}

/* The cards among the legal moves. */
static cardset_t ai304_legal_cards(const ai304_input *in)
{
    cardset_t s = 0;
    for (int i = 0; i < in->nlegal; i++)
        if (in->legal[i].kind == G304_DO_PLAY && in->legal[i].card < CARD_IDS) s |= CARDSET_BIT(in->legal[i].card);
    return s;
}

/* ---- hand strength ---- */

/* How good suit s is as trump in hand: the J and 9 above all, then A, 10 and length. */
static int ai304_trump_value(cardset_t hand, int s)
{
    cardset_t t = ai304_suit_of(hand, s);
    if (!t) return 0;
    return cardset_count(t) * 12 + ai304_has(hand, s, RANK_J) * 30 + ai304_has(hand, s, RANK_9) * 18 +
           ai304_has(hand, s, RANK_A) * 8 + ai304_has(hand, s, RANK_T) * 4;
}

static int ai304_best_suit(cardset_t hand, uint8_t allowed, uint64_t seed)
{
    int best = -1;
    long best_key = 0;
    for (int s = 0; s < SUIT_COUNT; s++) {
        if (!(allowed & ai304_bit(s))) continue;
        long k = ai304_key(ai304_trump_value(hand, s), seed, s);
        if (best < 0 || k > best_key) best = s, best_key = k;
    }
    return best;
}

/* Side Jacks and Aces (suits other than trump). */
static int ai304_side_winners(cardset_t hand, int trump, int *jacks, int *aces)
{
    *jacks = *aces = 0;
    for (int s = 0; s < SUIT_COUNT; s++) {
        if (s == trump) continue;
        *jacks += ai304_has(hand, s, RANK_J);
        *aces += ai304_has(hand, s, RANK_A);
    }
    return *jacks + *aces;
}

/* The four-card bid a hand is worth with s as trump, 0 for a pass. */
static int ai304_bid4_suit(cardset_t hand, int s)
{
    int n = cardset_count(ai304_suit_of(hand, s));
    int j = ai304_has(hand, s, RANK_J), nine = ai304_has(hand, s, RANK_9), a = ai304_has(hand, s, RANK_A);
    int v;
    if (j && n >= 2)
        v = 160 + 10 * nine + 10 * (n >= 3) + 10 * (n == 4) + 10 * (nine && a);
    else if (nine && n >= 3)
        v = 160;
    else
        return 0;
    int jacks, aces;
    ai304_side_winners(hand, s, &jacks, &aces);
    return v + ((10 * jacks + 5 * aces) / 10) * 10;
}

static int ai304_bid4_target(cardset_t hand)
{
    int best = 0;
    for (int s = 0; s < SUIT_COUNT; s++) {
        int v = ai304_bid4_suit(hand, s);
        if (v > best) best = v;
    }
    return best;
}

/* Whether every card of the hand surely wins with s as trump, leading every trick (Partner
 * Close Caps, R-PCC): s holds the top k trumps, k at least half the suit (no opponent can hold
 * more trumps than that: 4 of 8, 5 of 9), and every side card is the top of its suit counting
 * the cards above it in this hand. */
static int ai304_all_winners(cardset_t hand, int s, int suit_size)
{
    static const int by_power[RANK_IDS] = {RANK_J, RANK_9, RANK_A, RANK_T, RANK_K, RANK_Q, RANK_8, RANK_7, RANK_6};
    int k = cardset_count(ai304_suit_of(hand, s));
    if (2 * k < suit_size) return 0;
    for (int i = 0; i < k; i++)
        if (!ai304_has(hand, s, by_power[i])) return 0;
    for (int side = 0; side < SUIT_COUNT; side++) {
        if (side == s) continue;
        int m = cardset_count(ai304_suit_of(hand, side));
        for (int i = 0; i < m; i++)
            if (!ai304_has(hand, side, by_power[i])) return 0;
    }
    return 1;
}

static int ai304_pcc_suit(cardset_t hand, const g304_rules *r)
{
    for (int s = 0; s < SUIT_COUNT; s++)
        if (ai304_all_winners(hand, s, ai304_suit_size(r))) return s;
    return -1;
}

/* The eight-card (six-card) bid a hand is worth: 0, a number, or G304_PCC. */
static int ai304_bid8_target(cardset_t hand, const g304_rules *r)
{
    int size = g304_tricks(r); /* cards in a full hand */
    if (cardset_count(hand) == size && ai304_pcc_suit(hand, r) >= 0) return G304_PCC;
    int s = ai304_best_suit(hand, 0xF, 0), jacks, aces;
    int n = cardset_count(ai304_suit_of(hand, s));
    int top2 = ai304_has(hand, s, RANK_J) && ai304_has(hand, s, RANK_9);
    ai304_side_winners(hand, s, &jacks, &aces);
    /* the opponents need only 55 points: every side Jack out is 30 of them */
    int top3 = top2 && ai304_has(hand, s, RANK_A);
    if (top3 && n >= size - 3 && jacks >= 2) return 250;
    if (top3 && n >= size - 2 && jacks >= 1) return 250;
    if (top2 && n >= size - 1) return 250;
    return 0;
}

/* ---- the phases before play ---- */

static int ai304_pick_cut(const ai304_input *in, uint64_t seed)
{
    uint64_t r = ai304_mix(seed, 1);
    int at = (r & 1) ? 0 : (int)((r >> 8) % (uint64_t)g304_deck_size(&in->rules));
    for (int i = 0; i < in->nlegal; i++)
        if (in->legal[i].kind == G304_DO_CUT && in->legal[i].amount == at) return i;
    return 0;
}

static int ai304_pick_bid4(const ai304_input *in, uint64_t seed)
{
    const g304_view *v = &in->view;
    int me = v->seat, target = ai304_bid4_target(v->hand);
    int partner_holds = v->bid && ai304_mate(me, v->bidder);
    if (target == 0 && ai304_find(in, G304_DO_REDEAL, 0) >= 0) return ai304_find(in, G304_DO_REDEAL, 0);
    int i = -1;
    if (target >= 200) i = ai304_cheapest_bid(in, 200, partner_holds ? target - 20 : target);
    if (i < 0) i = ai304_cheapest_bid(in, 0, partner_holds ? target - 20 : target);
    if (i >= 0) return i;
    int ask = ai304_find(in, G304_DO_PARTNER, 0);
    if (ask >= 0 && target == 0 && v->bid == 0 && cardset_points(v->hand) >= 40 && (ai304_mix(seed, 2) & 7) == 0)
        return ask;
    return ai304_find(in, G304_DO_PASS, 0);
}

static int ai304_pick_bid8(const ai304_input *in)
{
    int target = ai304_bid8_target(in->view.hand, &in->rules);
    if (target == G304_PCC) {
        int i = ai304_find_bid(in, G304_PCC);
        if (i >= 0) return i;
        target = G304_MAX_BID;
    }
    int i = target ? ai304_cheapest_bid(in, 250, target) : -1;
    return i >= 0 ? i : ai304_find(in, G304_DO_PASS, 0);
}

/* The indicator: the best trump suit among the legal choices, its lowest card. */
static int ai304_pick_trump(const ai304_input *in, uint64_t seed)
{
    uint8_t allowed = 0;
    for (int i = 0; i < in->nlegal; i++)
        if (in->legal[i].kind == G304_DO_TRUMP) allowed |= (uint8_t)ai304_bit(CARD_SUIT(in->legal[i].card));
    int s = -1;
    if (in->view.bid == G304_PCC) s = ai304_pcc_suit(in->view.hand, &in->rules);
    if (s < 0 || !(allowed & ai304_bit(s))) s = ai304_best_suit(in->view.hand, allowed, seed);
    int best = -1;
    for (int i = 0; i < in->nlegal; i++) {
        const g304_action *a = &in->legal[i];
        if (a->kind != G304_DO_TRUMP || CARD_SUIT(a->card) != s) continue;
        if (best < 0 || card_power(a->card) < card_power(in->legal[best].card)) best = i;
    }
    return best;
}

/* ---- play: what the seat knows ---- */

typedef struct {
    const ai304_input *in;
    const g304_view *v;
    uint64_t seed;
    int me, trump;          /* trump suit as this seat knows it, -1 if not */
    cardset_t hand;         /* own cards (the maker's include a face-down indicator) */
    cardset_t accounted;    /* own cards and every card seen played: none of them is out */
    cardset_t legal;        /* the cards that may be played now */
} ai304_ctx;

/* The state of the trick in progress, from this seat's eyes. */
typedef struct {
    int n, led;
    int win_seat;           /* seat winning on what is visible (the maker after an indicator cut) */
    card_t win_card;        /* CARD_HIDDEN: the maker's indicator cut, unseen by this seat */
    int win_trump;
    int risky;              /* an unseen face-down card might be a trump */
    int points;             /* points of the visible cards */
    int nrem;               /* seats still to play after this one */
    int rem[G304_MAX_SEATS];
} ai304_tv;

static void ai304_ctx_init(ai304_ctx *x, const ai304_input *in, uint64_t seed)
{
    x->in = in;
    x->v = &in->view;
    x->seed = seed;
    x->me = in->view.seat % G304_MAX_SEATS;
    x->trump = in->view.trump;
    x->hand = in->view.hand;
    x->accounted = x->hand;
    for (int s = 0; s < ai304_seats(in); s++) x->accounted |= in->seen[s];
    x->legal = ai304_legal_cards(in);
}

static int ai304_maker_team(const ai304_ctx *x)
{
    return x->v->maker < G304_MAX_SEATS && ai304_team(x->v->maker) == ai304_team(x->me);
}

/* Whether no card of c's suit above c is still out (all seen played, or in this hand). */
static int ai304_master(const ai304_ctx *x, card_t c)
{
    int s = CARD_SUIT(c);
    for (int r = 0; r < RANK_COUNT; r++) {
        card_t d = CARD_MAKE(s, r);
        if (card_power(d) > card_power(c) && !(x->accounted & CARDSET_BIT(d))) return 0;
    }
    return 1;
}

/* Trumps not yet placed: neither in this hand, nor seen played, nor the known indicator. */
static int ai304_trumps_out(const ai304_ctx *x)
{
    int size = ai304_suit_size(&x->in->rules);
    if (x->trump < 0) return size;
    cardset_t known = x->accounted;
    if (x->v->indicator < CARD_IDS) known |= CARDSET_BIT(x->v->indicator);
    return size - cardset_count(ai304_suit_of(known, x->trump));
}

/* The seat after s (R-SEATS; in Partner Close Caps the maker's teammates sit out). */
static int ai304_next_seat(const ai304_ctx *x, int s)
{
    const g304_view *v = x->v;
    int n = (s + 1) % ai304_seats(x->in);
    while (v->pcc && ai304_mate(v->maker, n)) n = (n + 1) % ai304_seats(x->in);
    return n;
}

/* 1: the unseen face-down card of seat p is surely a trump (the maker's indicator: the
 * indicator left the table while the trump is still closed); 0: surely not; 2: maybe. */
static int ai304_hidden_trump(const ai304_ctx *x, int p)
{
    const g304_view *v = x->v;
    if (p == v->maker) return !v->ind_down && !v->trump_open ? 1 : 0; /* R-MAKER-VOID */
    if (x->trump >= 0 && ((x->in->void_in[p] & ai304_bit(x->trump)) || ai304_trumps_out(x) == 0)) return 0;
    return 2;
}

static void ai304_read_trick(const ai304_ctx *x, ai304_tv *tv)
{
    const g304_trick *t = &x->v->current;
    card_t vis[G304_MAX_SEATS];
    int vseat[G304_MAX_SEATS], nv = 0, ind_cut = 0;
    memset(tv, 0, sizeof *tv);
    tv->n = t->n;
    tv->led = CARD_SUIT(t->card[0]);
    for (int i = 0; i < t->n; i++) {
        int p = t->seat[i] % G304_MAX_SEATS;
        if (t->card[i] == CARD_HIDDEN) {
            int h = ai304_hidden_trump(x, p);
            ind_cut |= h == 1;
            tv->risky |= h == 2;
            continue;
        }
        vis[nv] = t->card[i];
        vseat[nv++] = p;
        tv->points += card_points(t->card[i]);
    }
    int w = g304_trick_winner(vis, nv, x->trump >= 0 ? x->trump : SUIT_COUNT);
    tv->win_seat = vseat[w];
    tv->win_card = vis[w];
    tv->win_trump = x->trump >= 0 && CARD_SUIT(vis[w]) == x->trump;
    if (ind_cut && !tv->win_trump) tv->win_seat = x->v->maker, tv->win_card = CARD_HIDDEN, tv->win_trump = 1;
    int seats = ai304_seats(x->in), size = x->v->pcc ? seats / 2 + 1 : seats;
    for (int k = t->n + 1, s = x->me; k < size; k++) tv->rem[tv->nrem++] = s = ai304_next_seat(x, s);
}

/* Whether seat r, still to play, cannot beat card w: w is the top of its suit, and r cannot
 * cut it (w is a trump, or r has not shown out of w's suit, or r has shown out of trump). */
static int ai304_safe_from(const ai304_ctx *x, card_t w, int r)
{
    if (!ai304_master(x, w)) return 0;
    int s = CARD_SUIT(w);
    if (x->trump >= 0 && s == x->trump) return 1;
    if (!(x->in->void_in[r] & ai304_bit(s))) return 1;
    return x->trump >= 0 && (x->in->void_in[r] & ai304_bit(x->trump));
}

static int ai304_safe_from_rest(const ai304_ctx *x, const ai304_tv *tv, card_t w)
{
    for (int i = 0; i < tv->nrem; i++)
        if (!ai304_safe_from(x, w, tv->rem[i])) return 0;
    return 1;
}

static int ai304_partner_sure(const ai304_ctx *x, const ai304_tv *tv)
{
    if (tv->risky) return 0;
    if (tv->win_card == CARD_HIDDEN) return tv->nrem == 0;
    return ai304_safe_from_rest(x, tv, tv->win_card);
}

/* Whether playing c now beats what is winning (as far as this seat can see). */
static int ai304_beats(const ai304_ctx *x, const ai304_tv *tv, card_t c)
{
    card_t w = tv->win_card;
    if (w == CARD_HIDDEN) return 0;
    int s = CARD_SUIT(c);
    if (s == CARD_SUIT(w)) return card_power(c) > card_power(w);
    if (s == tv->led || x->trump < 0 || s != x->trump) return 0;
    if (!x->v->trump_open && c != x->v->indicator) return 0;
    return !tv->win_trump;
}

/* ---- play: choosing among cards ---- */

/* What a card costs to give away: points first, then rank; trumps and sure winners are kept. */
static int ai304_cost(const ai304_ctx *x, card_t c)
{
    int cost = card_points(c) * 8 + card_power(c);
    if (x->trump >= 0 && CARD_SUIT(c) == x->trump) cost += 300;
    if (card_points(c) > 0 && ai304_master(x, c)) cost += 40;
    return cost;
}

/* The legal card with the best score by `fn` (ties broken by the seed). */
typedef long (*ai304_score_fn)(const ai304_ctx *x, const ai304_tv *tv, card_t c);

static card_t ai304_best_card(const ai304_ctx *x, const ai304_tv *tv, cardset_t among, ai304_score_fn fn)
{
    card_t best = AI304_NO_CARD;
    long best_key = 0;
    for (card_t c = 0; c < CARD_IDS; c++) {
        if (!(among & CARDSET_BIT(c))) continue;
        long k = ai304_key(fn(x, tv, c), x->seed, c);
        if (best == AI304_NO_CARD || k > best_key) best = c, best_key = k;
    }
    return best;
}

static long ai304_score_low(const ai304_ctx *x, const ai304_tv *tv, card_t c)
{
    (void)tv;
    return -ai304_cost(x, c);
}

/* Points onto partner's sure trick: most points, no trump thrown away; a card that is the top
 * of its suit would win a trick of its own later, so its points count for less. */
static long ai304_score_throw(const ai304_ctx *x, const ai304_tv *tv, card_t c)
{
    long score = card_points(c) * (ai304_master(x, c) ? 2 : 8) - card_power(c);
    if (x->trump >= 0 && CARD_SUIT(c) == x->trump && CARD_SUIT(c) != tv->led) score -= 1000;
    return score;
}

static long ai304_score_cheap(const ai304_ctx *x, const ai304_tv *tv, card_t c)
{
    (void)x, (void)tv;
    return -(card_power(c) * 64 + card_points(c));
}

static cardset_t ai304_winners(const ai304_ctx *x, const ai304_tv *tv)
{
    cardset_t w = 0;
    for (card_t c = 0; c < CARD_IDS; c++)
        if ((x->legal & CARDSET_BIT(c)) && ai304_beats(x, tv, c)) w |= CARDSET_BIT(c);
    return w;
}

/* Sure winners among cards: the top of their suit and safe from every seat still to play. */
static cardset_t ai304_sure(const ai304_ctx *x, const ai304_tv *tv, cardset_t cards)
{
    cardset_t sure = 0;
    for (card_t c = 0; c < CARD_IDS; c++)
        if ((cards & CARDSET_BIT(c)) && ai304_safe_from_rest(x, tv, c)) sure |= CARDSET_BIT(c);
    return sure;
}

/* Winning by following suit: the cheapest winner when last; earlier a sure one, or a free one. */
static card_t ai304_win_follow(const ai304_ctx *x, const ai304_tv *tv, cardset_t win)
{
    if (!win) return AI304_NO_CARD;
    card_t cheap = ai304_best_card(x, tv, win, ai304_score_cheap);
    if (tv->nrem == 0 && !tv->risky) return cheap;
    cardset_t sure = ai304_sure(x, tv, win);
    if (sure && !tv->risky) return ai304_best_card(x, tv, sure, ai304_score_cheap);
    return card_points(cheap) == 0 ? cheap : AI304_NO_CARD;
}

/* Cutting a valuable trick with a trump: the cheapest that wins, a sure one when the trick is
 * rich and someone after may overcut. The maker cutting with the face-down indicator reveals
 * the trump, so he wants a little more in the trick. */
static card_t ai304_win_cut(const ai304_ctx *x, const ai304_tv *tv, cardset_t win)
{
    if (!win) return AI304_NO_CARD;
    int closed = !x->v->trump_open;
    if (tv->points < (closed ? 11 : 10)) return AI304_NO_CARD;
    cardset_t sure = ai304_sure(x, tv, win);
    if (tv->nrem > 0 && sure && tv->points >= 20) return ai304_best_card(x, tv, sure, ai304_score_cheap);
    return ai304_best_card(x, tv, win, ai304_score_cheap);
}

static card_t ai304_follow(const ai304_ctx *x)
{
    ai304_tv tv;
    ai304_read_trick(x, &tv);
    if (ai304_mate(x->me, tv.win_seat)) {
        if (ai304_partner_sure(x, &tv)) return ai304_best_card(x, &tv, x->legal, ai304_score_throw);
        return ai304_best_card(x, &tv, x->legal, ai304_score_low);
    }
    cardset_t win = ai304_winners(x, &tv);
    card_t c = ai304_win_follow(x, &tv, win & CARDSET_SUIT(tv.led));
    if (c == AI304_NO_CARD) c = ai304_win_cut(x, &tv, win & ~CARDSET_SUIT(tv.led));
    if (c != AI304_NO_CARD) return c;
    return ai304_best_card(x, &tv, x->legal, ai304_score_low);
}

/* Whether a master of suit s may be cut by an opponent who has shown out of s. */
static int ai304_lead_safe(const ai304_ctx *x, int s)
{
    if (x->trump >= 0 && ai304_trumps_out(x) == 0) return 1;
    int seats = ai304_seats(x->in);
    for (int o = (x->me + 1) % seats; o != x->me; o = (o + 1) % seats) {
        if (ai304_team(o) == ai304_team(x->me)) continue;
        if (x->v->pcc && ai304_mate(x->v->maker, o)) continue;
        if (!(x->in->void_in[o] & ai304_bit(s))) continue;
        if (x->trump >= 0 && (x->in->void_in[o] & ai304_bit(x->trump))) continue;
        return 0;
    }
    return 1;
}

static long ai304_score_lead(const ai304_ctx *x, const ai304_tv *tv, card_t c)
{
    int s = CARD_SUIT(c);
    if (ai304_master(x, c)) {
        if (x->trump >= 0 && s == x->trump)
            return ai304_maker_team(x) && ai304_trumps_out(x) > 0 ? 4000 + card_power(c) : 1500 + card_points(c);
        if (ai304_lead_safe(x, s)) return 3000 + card_points(c) * 2 + card_power(c);
    }
    return ai304_score_low(x, tv, c);
}

static card_t ai304_lead(const ai304_ctx *x)
{
    ai304_tv tv;
    memset(&tv, 0, sizeof tv);
    return ai304_best_card(x, &tv, x->legal, ai304_score_lead);
}

/* R-OPEN: for Partner Close Caps, and for 250+ with five trumps headed by J 9. */
static int ai304_want_open(const ai304_ctx *x)
{
    const g304_view *v = x->v;
    if (v->maker != x->me || x->trump < 0) return 0;
    if (v->pcc) return 1;
    cardset_t t = ai304_suit_of(x->hand, x->trump);
    return v->bid >= 250 && cardset_count(t) >= 5 && ai304_has(x->hand, x->trump, RANK_J) &&
           ai304_has(x->hand, x->trump, RANK_9);
}

static int ai304_pick_play(const ai304_input *in, uint64_t seed)
{
    ai304_ctx x;
    ai304_ctx_init(&x, in, seed);
    int open = ai304_find(in, G304_DO_OPEN, 0);
    if (open >= 0 && ai304_want_open(&x)) return open;
    if (!x.legal) return -1;
    card_t c = in->view.current.n == 0 ? ai304_lead(&x) : ai304_follow(&x);
    return ai304_find(in, G304_DO_PLAY, c);
}

/* ---- spoilt trumps (R-SPOILT) ---- */

/* Certain that the maker's opponents were dealt no trump: all the trumps are placed with the
 * maker's team, or each opponent is known to hold none and has played none. Hidden face-down
 * cards are never trumps (a face-down trump turns the trick up, R-REVEAL). */
static int ai304_spoilt_certain(const ai304_input *in)
{
    const g304_view *v = &in->view;
    int me = v->seat % G304_MAX_SEATS, maker = v->maker, t = v->trump, seats = ai304_seats(in);
    if (t < 0 || maker >= seats || v->phase != G304_PHASE_PLAY) return 0;
    /* The maker's team may play on and score normally (R-SPOILT), and with all the trumps it
     * usually wins: only the opponents, who gain a void hand, declare. */
    if (ai304_team(me) == ai304_team(maker)) return 0;
    cardset_t trumps = CARDSET_SUIT(t), placed = 0;
    for (int s = ai304_team(maker); s < seats; s += 2) placed |= in->seen[s];
    if (ai304_team(me) == ai304_team(maker)) placed |= v->hand;
    if (v->indicator < CARD_IDS) placed |= CARDSET_BIT(v->indicator);
    if (cardset_count(placed & trumps) == ai304_suit_size(&in->rules)) return 1;
    for (int o = !ai304_team(maker); o < seats; o += 2) {
        if (in->seen[o] & trumps) return 0;
        int none = o == me ? !(v->hand & trumps) : (in->void_in[o] & ai304_bit(t)) != 0;
        if (!none) return 0;
    }
    return 1;
}

/* ---- the choice ---- */

/* Any legal move but the open declaration (a safety net; the pickers always find one). */
static int ai304_fallback(const ai304_input *in)
{
    for (int i = 0; i < in->nlegal; i++)
        if (in->legal[i].kind != G304_DO_OPEN) return i;
    return -1;
}

int ai304_choose(const ai304_input *in, uint64_t seed, g304_action *out)
{
    const g304_view *v = &in->view;
    if (in->may_spoilt && ai304_spoilt_certain(in)) {
        memset(out, 0, sizeof *out);
        out->kind = G304_DO_SPOILT;
        return 0;
    }
    if (in->nlegal <= 0) return -1;
    int i = -1;
    switch (v->phase) {
    case G304_PHASE_CUT: i = ai304_pick_cut(in, seed); break;
    case G304_PHASE_BID4: i = ai304_pick_bid4(in, seed); break;
    case G304_PHASE_TRUMP: i = ai304_pick_trump(in, seed); break;
    case G304_PHASE_BID8: i = ai304_pick_bid8(in); break;
    case G304_PHASE_PLAY: i = ai304_pick_play(in, seed); break;
    default: break;
    }
    if (i < 0 && v->to_act == v->seat) i = ai304_fallback(in);
    if (i < 0) return -1;
    *out = in->legal[i];
    return 0;
}
