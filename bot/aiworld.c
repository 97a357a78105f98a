/* aiworld.c — a seat's knowledge and the worlds drawn from it (interface in aiworld.h).
 *
 * Placing the unseen cards: every place (a card of another hand, the unseen indicator, an unseen
 * face-down card of a finished trick or of the trick in progress) has a set of suits it may hold. The
 * unseen cards are taken in random order and each goes to a random place that accepts its suit and
 * leaves the rest placeable; Hall's condition decides that, and since every constraint is about suits
 * it is checked over the 15 sets of suits. This is not exactly uniform over the consistent deals (a
 * place with many completions is not favoured), a simplification the weights by bidding dwarf.
 *
 * The bidding model is deliberately soft: a logistic in how strong the relevant suit is against what
 * the bid needed. It does not try to mirror any one player's rules, only to make the deals a bid
 * speaks against rare. Candidates are drawn three times over and resampled by weight, so the
 * searches spend their time on plausible deals. */
#include "aiworld.h"

#include <math.h>
#include <string.h>

#define AIWORLD_OVERSAMPLE 3
#define AIWORLD_MAX_DRAW 64
#define AIWORLD_TRIES 4   /* placements tried per candidate before it is given up */
#define AIWORLD_SOFT 12.0 /* the width of the bidding model's logistic, in suit-strength units */

enum { OWNER_IND = G304_MAX_SEATS, OWNER_HIDDEN = 8, OWNER_TRICK = 8 + CAPS_MAX_HIDDEN };

static int aiworld_team(int seat) { return seat & 1; }

uint64_t aiworld_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int aiworld_below(uint64_t *rng, int n) { return (int)(((aiworld_random(rng) >> 32) * (uint64_t)n) >> 32); }

static double aiworld_unit(uint64_t *rng) { return (double)(aiworld_random(rng) >> 11) / 9007199254740992.0; }

/* ---- the bidding ---- */

void aiworld_history_note(aiworld_history *h, const g304_state *before, int seat, const g304_action *a)
{
    if (before->phase != G304_PHASE_BID4 && before->phase != G304_PHASE_BID8) return;
    if (a->kind != G304_DO_BID && a->kind != G304_DO_PASS && a->kind != G304_DO_PARTNER && a->kind != G304_DO_REDEAL)
        return;
    if (h->n >= AIWORLD_HISTORY_MAX) return;
    aiworld_bid *b = &h->bid[h->n++];
    b->seat = (uint8_t)seat;
    b->kind = a->kind;
    b->round = before->phase == G304_PHASE_BID4 ? 4 : 8;
    b->amount = a->kind == G304_DO_BID ? a->amount : 0;
}

int aiworld_trump_value(cardset_t hand, int s)
{
    static const int honour[RANK_IDS] = {[RANK_J] = 30, [RANK_9] = 20, [RANK_A] = 10, [RANK_T] = 5};
    cardset_t t = hand & CARDSET_SUIT(s);
    int v = 10 * cardset_count(t);
    for (; t; t &= t - 1) v += honour[CARD_RANK(cardset_first(t))];
    return v;
}

int aiworld_legal(const aiworld_input *in, int kind, card_t card, int amount, g304_action *out)
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

int aiworld_tokens(int bid, int made)
{
    int reward = bid == G304_PCC ? 4 : bid >= 250 ? 3 : bid >= 200 ? 2 : 1;
    return made ? reward : -(reward + 1);
}

static int aiworld_best_value(cardset_t hand)
{
    int best = 0;
    for (int s = 0; s < SUIT_COUNT; s++) {
        int v = aiworld_trump_value(hand, s);
        if (v > best) best = v;
    }
    return best;
}

static double aiworld_logistic(double x) { return 1.0 / (1.0 + exp(-x / AIWORLD_SOFT)); }

/* The suit strength a bid asks for: 160 about a Jack and one more card of the suit (four cards);
 * each 10 more about another honour or card. Eight-card bids ask for more length. */
static double aiworld_need(int amount, int round)
{
    if (amount == G304_PCC) return 130;
    double base = round == 4 ? 45 : 75;
    return base + (amount - (round == 4 ? 160 : 250)) * 0.8;
}

/* How likely seat's bidding was with these cards: first its first batch, dealt its whole hand. */
static double aiworld_bidding_likelihood(const aiworld_input *in, int seat, cardset_t first, cardset_t dealt)
{
    const aiworld_history *h = &in->history;
    double like = 1.0;
    int bid4 = 0, bid8 = 0, passed4 = 0, passed8 = 0;
    for (int i = 0; i < h->n; i++) {
        const aiworld_bid *b = &h->bid[i];
        if (b->seat != seat) continue;
        if (b->kind == G304_DO_BID && b->round == 4 && b->amount > bid4) bid4 = b->amount;
        if (b->kind == G304_DO_BID && b->round == 8) bid8 = b->amount;
        passed4 |= b->kind == G304_DO_PASS && b->round == 4;
        passed8 |= b->kind == G304_DO_PASS && b->round == 8;
    }
    if (h->n == 0) { /* nothing recorded: what the state tells (the highest bids, who passed) */
        bid4 = in->maker4 == seat ? in->bid4 : 0;
        if (in->base.bid_of[seat] >= 250) bid8 = in->base.bid_of[seat];
        else if (!bid4 && in->base.bid_of[seat]) bid4 = in->base.bid_of[seat];
        passed4 = in->base.passed[seat] && !bid4;
    }
    int v4 = aiworld_best_value(first), v8 = aiworld_best_value(dealt);
    if (bid4) like *= aiworld_logistic(v4 - aiworld_need(bid4, 4));
    else if (passed4) like *= 1.0 - 0.8 * aiworld_logistic(v4 - aiworld_need(160, 4));
    if (bid8) like *= aiworld_logistic(v8 - aiworld_need(bid8, 8));
    else if (passed8 && cardset_count(dealt) == g304_tricks(&in->base.rules)) like *= 1.0 - 0.5 * aiworld_logistic(v8 - aiworld_need(250, 8));
    return like;
}

/* ---- gathering ---- */

void aiworld_input_of(const g304_state *st, int seat, const aiworld_history *h, aiworld_input *in)
{
    memset(in, 0, sizeof *in);
    ai304_input_of(st, seat, &in->base);
    in->first4 = st->first4[seat];
    in->maker4 = st->maker4;
    in->bid4 = st->bid4;
    if (h) in->history = *h;
    if (st->phase != G304_PHASE_PLAY) return;
    caps_knowledge_of(st, seat, &in->know);
    /* the unseen face-down cards of finished tricks, in the order caps_knowledge_of() lists them */
    int ntricks = g304_tricks(&st->rules), n = 0, last = st->trick_no < ntricks ? st->trick_no : ntricks - 1;
    for (int t = 0; t <= last; t++) {
        const g304_trick *tr = &st->tricks[t];
        if (tr->winner == G304_NO_SEAT) continue;
        for (int i = 0; i < tr->n && n < CAPS_MAX_HIDDEN; i++) {
            if (g304_trick_card_for(st, tr, i, seat) != CARD_HIDDEN) continue;
            in->hidden_seat[n] = tr->seat[i];
            in->hidden_team[n++] = (uint8_t)aiworld_team(tr->winner);
        }
    }
    if (st->caps_seat != G304_NO_SEAT) {
        in->caps_n = (uint8_t)(st->caps_n - st->caps_next);
        memcpy(in->caps_order, st->caps_order + st->caps_next, in->caps_n);
    }
}

/* ---- placing unseen cards ---- */

typedef struct {
    uint8_t owner[CARD_IDS]; /* OWNER_* or a seat */
    uint8_t mask[CARD_IDS];  /* suits the place may hold */
    card_t card[CARD_IDS];
    int n;
} aiworld_places;

static void aiworld_add(aiworld_places *pl, int owner, int mask, int count)
{
    for (int i = 0; i < count && pl->n < CARD_IDS; i++) {
        pl->owner[pl->n] = (uint8_t)owner;
        pl->mask[pl->n] = (uint8_t)(mask & 0xF);
        pl->card[pl->n++] = CARD_NONE;
    }
}

/* Hall's condition: the cards left (per suit) fit the empty places (by the suits they accept). */
static int aiworld_fits(const int per_suit[SUIT_COUNT], const int cap[16])
{
    for (int set = 1; set < 16; set++) {
        int need = 0, have = 0;
        for (int s = 0; s < SUIT_COUNT; s++)
            if (set >> s & 1) need += per_suit[s];
        for (int m = 1; m < 16; m++)
            if (m & set) have += cap[m];
        if (need > have) return 0;
    }
    return 1;
}

/* Puts every card of pool into a place; 0 on success. */
static int aiworld_place(aiworld_places *pl, cardset_t pool, uint64_t *rng)
{
    int per_suit[SUIT_COUNT] = {0}, cap[16] = {0};
    card_t cards[CARD_IDS];
    int nc = 0;
    for (cardset_t s = pool; s; s &= s - 1) {
        card_t c = cardset_first(s);
        per_suit[CARD_SUIT(c)]++;
        cards[nc++] = c;
    }
    if (nc != pl->n) return -1;
    for (int i = 0; i < pl->n; i++) cap[pl->mask[i]]++;
    if (!aiworld_fits(per_suit, cap)) return -1;
    for (int i = nc - 1; i > 0; i--) { /* the cards in random order */
        int j = aiworld_below(rng, i + 1);
        card_t t = cards[i];
        cards[i] = cards[j];
        cards[j] = t;
    }
    for (int k = 0; k < nc; k++) {
        int s = CARD_SUIT(cards[k]), cand[CARD_IDS], n = 0;
        for (int i = 0; i < pl->n; i++)
            if (pl->card[i] == CARD_NONE && (pl->mask[i] >> s & 1)) cand[n++] = i;
        per_suit[s]--;
        int placed = 0;
        while (n > 0 && !placed) {
            int j = aiworld_below(rng, n), i = cand[j];
            cand[j] = cand[--n];
            cap[pl->mask[i]]--;
            if (aiworld_fits(per_suit, cap)) {
                pl->card[i] = cards[k];
                placed = 1;
            } else {
                cap[pl->mask[i]]++;
            }
        }
        if (!placed) return -1;
    }
    return 0;
}

/* ---- worlds in play ---- */

/* k cards of s at random: which of a seat's cards were its first batch is not known. */
static cardset_t aiworld_some(cardset_t s, int k, uint64_t *rng)
{
    cardset_t out = 0;
    for (int n = cardset_count(s); k > 0 && n > 0; n--) {
        card_t c = cardset_first(s);
        s &= s - 1;
        if (aiworld_below(rng, n) < k) out |= CARDSET_BIT(c), k--;
    }
    return out;
}

/* One candidate world with trump T, or -1 if the placement fails. */
static int aiworld_candidate(const aiworld_input *in, int T, uint64_t *rng, aiworld *w)
{
    const caps_knowledge *k = &in->know;
    const g304_view *v = &in->base.view;
    int me = v->seat, maker = k->maker, seats = k->seats;
    aiworld_places pl;
    pl.n = 0;
    for (int p = 0; p < seats; p++) {
        if (p == me) continue;
        int mask = 0xF & ~k->voids[p];
        if (p == maker && me != maker && (k->maker_void_if >> T & 1)) mask &= ~(1 << T);
        aiworld_add(&pl, p, mask, k->count[p]);
    }
    if (k->ind_unknown) aiworld_add(&pl, OWNER_IND, 1 << T, 1);
    for (int i = 0; i < k->nhidden; i++)
        aiworld_add(&pl, OWNER_HIDDEN + i, ~k->hidden_not[i] & (k->hidden_not_trump[i] ? ~(1 << T) : 0xF), 1);
    int led = k->n ? CARD_SUIT(k->card[0]) : 0;
    for (int i = 0; i < k->n; i++) {
        if (k->card[i] != CARD_HIDDEN) continue;
        int p = k->seat_of[i], mask;
        if (k->indicator_at >> i & 1) mask = (1 << T) & ~(1 << led); /* the indicator cutting */
        else mask = 0xF & ~(1 << led) & ~k->voids[p] & (p == maker ? ~(1 << T) : 0xF); /* R-MAKER-VOID */
        aiworld_add(&pl, OWNER_TRICK + i, mask, 1);
    }
    if (aiworld_place(&pl, k->unseen, rng) != 0) return -1;

    dd_pos *pos = &w->pos;
    memset(w, 0, sizeof *w);
    pos->nseats = (uint8_t)seats;
    pos->ntricks = (uint8_t)g304_tricks(&in->base.rules);
    pos->maker = (uint8_t)maker;
    pos->trump = (uint8_t)T;
    pos->pcc = k->pcc;
    pos->bid250 = k->bid250;
    pos->trump_open = k->trump_open;
    pos->ind_down = k->ind_down;
    pos->indicator = k->indicator;
    pos->trick_no = k->trick_no;
    pos->n = k->n;
    pos->facedown = k->facedown;
    pos->to_act = k->to_act;
    pos->tricks[0] = v->team_tricks[0];
    pos->tricks[1] = v->team_tricks[1];
    pos->points[0] = in->base.trick_points[0];
    pos->points[1] = in->base.trick_points[1];
    pos->caps_seat = v->caps_seat;
    pos->caps_n = in->caps_n;
    memcpy(pos->caps_order, in->caps_order, in->caps_n);
    for (int i = 0; i < k->n; i++) {
        pos->card[i] = k->card[i];
        pos->seat[i] = k->seat_of[i];
    }
    for (int p = 0; p < seats; p++) {
        pos->hand[p] = p == me ? k->own : k->held[p];
        w->dealt[p] = in->base.seen[p];
    }
    for (int i = 0; i < pl.n; i++) {
        card_t c = pl.card[i];
        int o = pl.owner[i];
        if (o < OWNER_IND) {
            pos->hand[o] |= CARDSET_BIT(c);
        } else if (o == OWNER_IND) {
            pos->indicator = c;
        } else if (o < OWNER_TRICK) {
            int h = o - OWNER_HIDDEN;
            pos->points[in->hidden_team[h]] = (uint16_t)(pos->points[in->hidden_team[h]] + card_points(c));
            w->dealt[in->hidden_seat[h]] |= CARDSET_BIT(c);
        } else {
            int i2 = o - OWNER_TRICK;
            pos->card[i2] = c;
            w->dealt[k->seat_of[i2]] |= CARDSET_BIT(c);
            if (k->indicator_at >> i2 & 1) pos->indicator = c;
        }
    }
    if (pos->ind_down) {
        pos->hand[maker] &= ~CARDSET_BIT(pos->indicator); /* the seat's own face-down indicator */
        w->dealt[maker] |= CARDSET_BIT(pos->indicator);
    }
    for (int p = 0; p < seats; p++) w->dealt[p] |= pos->hand[p];
    /* R-EXHAUST binds if it bound for this trump and the maker still holds a trump in hand */
    pos->exhaust = (k->exhaust_suits >> T & 1) && (pos->hand[maker] & CARDSET_SUIT(T)) != 0;
    /* the trump maker chose this suit: he holds a good part of it */
    double like = aiworld_logistic(aiworld_trump_value(w->dealt[maker], T) - (k->pcc ? 90 : 50));
    for (int p = 0; p < seats; p++)
        if (p != me) like *= aiworld_bidding_likelihood(in, p, aiworld_some(w->dealt[p], 4, rng), w->dealt[p]);
    w->weight = like;
    return 0;
}

/* Picks n of the m candidates in proportion to their weights (systematic resampling). */
static int aiworld_resample(aiworld *cand, int m, aiworld *out, int n, uint64_t *rng)
{
    double total = 0;
    for (int i = 0; i < m; i++) total += cand[i].weight;
    if (m == 0) return 0;
    if (total <= 0) {
        for (int i = 0; i < m; i++) cand[i].weight = 1.0;
        total = m;
    }
    double step = total / n, at = aiworld_unit(rng) * step, acc = 0;
    int got = 0;
    for (int i = 0; i < m && got < n; i++) {
        acc += cand[i].weight;
        while (at < acc && got < n) {
            out[got] = cand[i];
            out[got++].weight = 1.0;
            at += step;
        }
    }
    return got;
}

int aiworld_draw(const aiworld_input *in, uint64_t *rng, aiworld *out, int n)
{
    aiworld cand[AIWORLD_MAX_DRAW * AIWORLD_OVERSAMPLE];
    if (n > AIWORLD_MAX_DRAW) n = AIWORLD_MAX_DRAW;
    int suits[SUIT_COUNT], ns = 0, m = 0;
    for (int s = 0; s < SUIT_COUNT; s++)
        if (in->know.trumps >> s & 1) suits[ns++] = s;
    if (ns == 0) return 0;
    for (int tries = 0; m < n * AIWORLD_OVERSAMPLE && tries < n * AIWORLD_OVERSAMPLE * AIWORLD_TRIES; tries++)
        if (aiworld_candidate(in, suits[aiworld_below(rng, ns)], rng, &cand[m]) == 0) m++;
    return aiworld_resample(cand, m, out, n, rng);
}

/* ---- deals before play ---- */

typedef struct {
    card_t hands[G304_MAX_SEATS][G304_TRICKS];
    double weight;
} aiworld_deal_cand;

void aiworld_deal(const aiworld_input *in, uint64_t *rng, card_t hands[G304_MAX_SEATS][G304_TRICKS])
{
    enum { CANDIDATES = 4 };
    const g304_view *v = &in->base.view;
    const g304_rules *r = &in->base.rules;
    int me = v->seat, seats = g304_seats(r), ntricks = g304_tricks(r);
    cardset_t pack = g304_deck_size(r) == CARD_IDS ? CARDSET_ALL | CARDSET_SIXES : CARDSET_ALL;
    cardset_t own = in->first4 | v->hand, unseen = pack & ~own;
    aiworld_deal_cand cand[CANDIDATES];
    double total = 0;
    for (int c = 0; c < CANDIDATES; c++) {
        card_t pool[CARD_IDS];
        int n = 0;
        for (cardset_t s = unseen; s; s &= s - 1) pool[n++] = cardset_first(s);
        for (int i = n - 1; i > 0; i--) {
            int j = aiworld_below(rng, i + 1);
            card_t t = pool[i];
            pool[i] = pool[j];
            pool[j] = t;
        }
        int used = 0;
        double like = 1.0;
        for (int p = 0; p < seats; p++) {
            cardset_t first = 0, all = 0;
            if (p == me) { /* own first batch, then own second batch or random cards */
                int k = 0;
                for (cardset_t s = in->first4; s; s &= s - 1) cand[c].hands[p][k++] = cardset_first(s);
                for (cardset_t s = own & ~in->first4; s; s &= s - 1) cand[c].hands[p][k++] = cardset_first(s);
                while (k < ntricks) cand[c].hands[p][k++] = pool[used++];
                continue;
            }
            for (int k = 0; k < ntricks; k++) {
                card_t x = pool[used++];
                cand[c].hands[p][k] = x;
                if (k < 4) first |= CARDSET_BIT(x);
                all |= CARDSET_BIT(x);
            }
            like *= aiworld_bidding_likelihood(in, p, first, all);
        }
        cand[c].weight = like;
        total += like;
    }
    double at = aiworld_unit(rng) * total, acc = 0;
    int pick = CANDIDATES - 1;
    for (int c = 0; c < CANDIDATES; c++) {
        acc += cand[c].weight;
        if (at < acc) {
            pick = c;
            break;
        }
    }
    memcpy(hands, cand[pick].hands, sizeof cand[pick].hands);
}
