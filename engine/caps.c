/* caps.c — the Caps certainty test: a seat's information set, and an exact search over it.
 *
 * Certainty means: there is ONE order of the seat's cards that wins every remaining trick for
 * its team against every world the seat cannot rule out and every legal play of the others.
 * The order is fixed in advance, so the search is not a plain game tree: at the seat's k-th turn
 * it holds the whole set of positions the seat might be in (a belief set), tries one card for
 * all of them, lets "the adversary" (the placement of unseen cards plus the three other players)
 * play every legal continuation up to the seat's next turn, and fails the card as soon as one
 * continuation loses a trick or makes the next card illegal.
 *
 * Unseen cards are placed lazily: a position carries a pool of unseen cards plus, per hand, how
 * many unseen cards it holds and which suits it is known to lack; a play from the pool is allowed
 * when some placement of the rest still fits (Hall's condition over the 15 sets of suits, since
 * every constraint is about suits). Cards of a suit with no card of known location between them
 * are interchangeable for winning tricks, so only one of each such run is tried, and positions are
 * merged after pushing pool cards to the top of their runs. Card points play no part in Caps.
 *
 * With six players (R-SIX-PLAY) the same search runs over six seats, six-card tricks, six
 * tricks and suits of nine cards (the six at the bottom); the four-player search is unchanged,
 * move for move (the seat count, trick count and ranks per suit are the solver's numbers). */
#include "caps.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUDGET 400000L
#define MAX_STATES 16384  /* positions per belief set */
#define HASH_BITS 15
#define FAILED_SLOTS 4096
#define FIRST_TRY_NODES 3000 /* the short search tried first */
#define QUICK_STATES 8   /* positions of the first belief set dealt out for a quick refutation */
#define QUICK_WORLDS 64  /* worlds dealt for it at most */
#define SUIT_BIT(s) (1u << (s))

static int team_of(int seat) { return seat & 1; }

/* The seat after p at a table of n seats. */
static int next_seat(int p, int n) { return p + 1 == n ? 0 : p + 1; }

/* Cards of suit s in a set (its eight of the 32-card pack and its six). */
static int suit_count(cardset_t set, int s);

/* ---- knowledge ---- */

void caps_knowledge_of(const g304_state *st, int seat, caps_knowledge *k)
{
    memset(k, 0, sizeof *k);
    int n = g304_seats(&st->rules);
    k->seat = (uint8_t)seat;
    k->seats = (uint8_t)n;
    k->maker = st->maker;
    k->trump_open = st->trump_open;
    k->ind_down = st->ind_down;
    k->pcc = st->pcc;
    k->bid250 = st->bid >= 250;
    k->own = g304_cards_of(st, seat);
    int sees_indicator = st->indicator != CARD_NONE && (seat == st->maker || st->trump_open);
    k->indicator = sees_indicator ? st->indicator : CARD_NONE;
    k->ind_unknown = st->ind_down && seat != st->maker;
    if (sees_indicator && seat != st->maker && (st->hand[st->maker] & CARDSET_BIT(st->indicator)))
        k->held[st->maker] = CARDSET_BIT(st->indicator);

    if (st->caps_seat != G304_NO_SEAT && st->caps_seat != seat) /* a Caps caller shows his cards */
        k->held[st->caps_seat] |= g304_cards_of(st, st->caps_seat);
    cardset_t seen = k->own;
    for (int p = 0; p < n; p++) seen |= k->held[p];
    int maker = st->maker, trump_known = seat == maker || st->trump_open;
    k->trumps = trump_known ? (uint8_t)SUIT_BIT(st->trump) : 0xF;
    uint8_t exhaust = 0;
    enum { NOT_BACK = 99 };
    int back_at = st->declared_open ? -1 : NOT_BACK; /* when the shown indicator came back to his hand */
    int tricks = g304_tricks(&st->rules);
    int last = st->trick_no < tricks ? st->trick_no : tricks - 1;
    for (int t = 0; t <= last; t++) {
        const g304_trick *tr = &st->tricks[t];
        if (tr->n == 0) continue;
        int led = CARD_SUIT(tr->card[0]);
        int complete = tr->winner != G304_NO_SEAT;
        if (tr->seat[0] == maker) {
            /* R-EXHAUST bound him for trump X and he led another suit: he had no X in hand, and
             * from then on the rule no longer binds him */
            k->maker_void_if |= (uint8_t)(exhaust & ~SUIT_BIT(led));
            exhaust &= (uint8_t)SUIT_BIT(led);
            /* R-LEAD1-TRUMP: a closed first lead by the maker is not a trump */
            if (t == 0 && !trump_known) k->trumps &= (uint8_t)~SUIT_BIT(led);
        }
        if (back_at == NOT_BACK && complete && st->indicator != CARD_NONE) {
            int in_trick = 0;
            for (int i = 0; i < tr->n; i++) in_trick |= tr->card[i] == st->indicator && tr->seat[i] == maker;
            if (tr->announced == 2 && !in_trick) back_at = 2 * t;                 /* R-REVEAL, before R-EXHAUST */
            else if (t == 0 && st->bid >= 250 && tr->announced != 2) back_at = 1; /* R-250, after it */
        }
        int followed = 0;
        for (int i = 0; i < tr->n; i++) {
            int p = tr->seat[i];
            card_t c = g304_trick_card_for(st, tr, i, seat);
            int fd = (tr->facedown >> i) & 1;
            int is_ind = p == maker && fd && tr->card[i] == st->indicator;
            if (c != CARD_HIDDEN) seen |= CARDSET_BIT(c);
            if (i > 0 && (fd || CARD_SUIT(c) != led)) k->voids[p] |= (uint8_t)SUIT_BIT(led);
            if (i > 0 && !fd && CARD_SUIT(c) == led) followed = 1;
            if (is_ind && !trump_known) k->trumps &= (uint8_t)~SUIT_BIT(led); /* it cut: led is not trump */
            if (complete && c == CARD_HIDDEN && k->nhidden < CAPS_MAX_HIDDEN) {
                k->hidden_not[k->nhidden] = (uint8_t)(k->voids[p] | SUIT_BIT(led));
                k->hidden_not_trump[k->nhidden] = tr->announced == 1 || p == maker;
                k->nhidden++;
            }
            /* its own face-down card in a trick announced "no trump" is not of the trump suit */
            if (complete && fd && p == seat && tr->announced == 1 && !trump_known)
                k->trumps &= (uint8_t)~SUIT_BIT(CARD_SUIT(tr->card[i]));
        }
        if (complete && tr->seat[0] == maker && !followed && !(tr->facedown & 1)) {
            exhaust |= (uint8_t)SUIT_BIT(led);
            /* sure to bind if he held the shown indicator (a trump) in hand when it was set:
             * returned at a reveal of this or an earlier trick, or before play (R-OPEN) */
            if (sees_indicator && back_at <= 2 * t && CARD_SUIT(st->indicator) == led)
                k->exhaust_sure |= (uint8_t)SUIT_BIT(led);
            else
                k->exhaust_sure &= (uint8_t)~SUIT_BIT(led);
        }
        else if (complete && tr->seat[0] == maker) exhaust &= (uint8_t)~SUIT_BIT(led); /* re-judged each lead */
        if (!complete) {
            k->n = tr->n;
            for (int i = 0; i < tr->n; i++) {
                k->card[i] = g304_trick_card_for(st, tr, i, seat);
                k->seat_of[i] = tr->seat[i];
                if ((tr->facedown >> i) & 1) k->facedown |= (uint8_t)(1 << i);
                if (tr->seat[i] == maker && ((tr->facedown >> i) & 1) && tr->card[i] == st->indicator)
                    k->indicator_at |= (uint8_t)(1 << i);
            }
        }
    }
    k->exhaust_suits = exhaust;
    if (seat == maker) k->exhaust_suits = st->exhaust ? (uint8_t)SUIT_BIT(st->trump) : 0; /* he knows his hand */
    k->unseen = (n == 6 ? CARDSET_ALL | CARDSET_SIXES : CARDSET_ALL) & ~seen;
    for (int p = 0; p < n; p++) {
        if (p == seat) continue;
        int c = cardset_count(g304_cards_of(st, p)) - cardset_count(k->held[p]);
        if (p == maker && k->ind_unknown) c--;
        k->count[p] = (uint8_t)c;
    }
    k->trick_no = st->trick_no;
    k->to_act = st->to_act;
}

/* ---- search positions ---- */

typedef struct {
    cardset_t pool, own;
    cardset_t held[G304_MAX_SEATS];
    uint8_t count[G304_MAX_SEATS], voids[G304_MAX_SEATS];
    uint8_t trump, trump_open, ind_down, ind_unknown, exhaust;
    uint8_t trick_no, n, to_act;
    card_t card[G304_MAX_SEATS];
    uint8_t seat[G304_MAX_SEATS];
    uint8_t fd, ind_at;
    card_t ind_world; /* in a dealt world (quick refutation): the unseen indicator's identity */
} cs_state;

typedef struct {
    uint64_t key;
    uint32_t epoch;
    uint32_t index; /* in the belief set */
} seen_slot;

struct caps_solver {
    long budget, nodes;
    int viewer, team, maker, bid250;
    int seats, tricks, ranks; /* of the game: 4 8 8, or 6 6 9 with six players */
    card_t ind_card; /* the seat's own indicator when it is the maker */
    int quick;              /* try the quick refutation first (on by default) */
    /* twin_above[c]: the seat's next stronger card of c's suit when nothing but cards already
     * out of play lies between them: the two are interchangeable, so only orders that play the
     * stronger first are tried. CARD_NONE if none. */
    card_t twin_above[CARD_IDS];
    int overflow;
    int slot_cap_int[SUIT_COUNT][16]; /* unseen face-down cards of finished tricks, by allowed suits */
    int slot_total[SUIT_COUNT];       /* how many, and whether any is barred from a suit */
    int slot_constrained[SUIT_COUNT];
    cs_state *set[G304_TRICKS + 1];
    int nset[G304_TRICKS + 1];
    seen_slot *seen[G304_TRICKS + 1];
    uint32_t epoch[G304_TRICKS + 1];
    cs_state *roots;   /* the positions the seat may be in now, before the others play on */
    int nroots;
    seen_slot *failed; /* FAILED_SLOTS hashes of belief sets without a winning order */
    uint32_t check_epoch;
    card_t order[G304_TRICKS];
    const card_t *fixed;
};

caps_solver *caps_solver_new(long node_budget)
{
    caps_solver *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->budget = node_budget > 0 ? node_budget : DEFAULT_BUDGET;
    w->quick = 1;
    w->failed = calloc(FAILED_SLOTS, sizeof(seen_slot));
    w->roots = malloc(sizeof(cs_state) * MAX_STATES);
    if (!w->failed || !w->roots) {
        free(w->failed);
        free(w->roots);
        free(w);
        return NULL;
    }
    for (int d = 0; d <= G304_TRICKS; d++) {
        w->set[d] = malloc(sizeof(cs_state) * MAX_STATES);
        w->seen[d] = calloc((size_t)1 << HASH_BITS, sizeof(seen_slot));
        if (!w->set[d] || !w->seen[d]) {
            caps_solver_free(w);
            return NULL;
        }
    }
    return w;
}

void caps_solver_free(caps_solver *w)
{
    if (!w) return;
    for (int d = 0; d <= G304_TRICKS; d++) {
        free(w->set[d]);
        free(w->seen[d]);
    }
    free(w->failed);
    free(w->roots);
    free(w);
}

long caps_solver_nodes(const caps_solver *w) { return w->nodes; }

void caps_solver_quick(caps_solver *w, int on) { w->quick = on; }

static int count_bits(uint32_t v)
{
    v = v - ((v >> 1) & 0x55555555u);
    v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
    return (int)((((v + (v >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24);
}

static int suit_count(cardset_t set, int s)
{
    return count_bits((uint32_t)(set >> (8 * s)) & 0xFF) + (int)(set >> (CARD_COUNT + s) & 1);
}

/* Hall's condition: the pool can be dealt into the unknown parts of the hands, the unseen
 * indicator and the unseen face-down cards, respecting the suits each may hold. For every set
 * of suits, the pool cards of those suits must fit into the places that accept one of them;
 * "places accepting none of the set" are summed over subsets of its complement. */
static int feasible(const caps_solver *w, const cs_state *x)
{
    int cap[16], total = w->slot_total[x->trump], constrained = w->slot_constrained[x->trump];
    memcpy(cap, w->slot_cap_int[x->trump], sizeof cap);
    for (int p = 0; p < w->seats; p++) {
        if (p == w->viewer || !x->count[p]) continue;
        int m = 0xF & ~x->voids[p];
        cap[m] += x->count[p];
        total += x->count[p];
        constrained |= m != 0xF;
    }
    if (x->ind_unknown) cap[SUIT_BIT(x->trump)] += 1, total++, constrained = 1;
    if (count_bits((uint32_t)x->pool) + count_bits((uint32_t)(x->pool >> 32)) != total) return 0;
    if (!constrained) return 1; /* every place takes every suit */
    int per_suit[SUIT_COUNT];
    for (int s = 0; s < SUIT_COUNT; s++) per_suit[s] = suit_count(x->pool, s);
    for (int b = 0; b < SUIT_COUNT; b++) /* cap[m] := places whose suits lie within m */
        for (int m = 0; m < 16; m++)
            if (m & (1 << b)) cap[m] += cap[m ^ (1 << b)];
    for (int set = 1; set < 16; set++) {
        int need = 0;
        for (int s = 0; s < SUIT_COUNT; s++)
            if (set & SUIT_BIT(s)) need += per_suit[s];
        if (need > total - cap[0xF & ~set]) return 0;
    }
    return 1;
}

/* Cards whose place is known, which split runs of interchangeable pool cards. */
static cardset_t separators(const caps_solver *w, const cs_state *x)
{
    cardset_t s = x->own;
    for (int p = 0; p < w->seats; p++) s |= x->held[p];
    for (int i = 0; i < x->n; i++)
        if (x->card[i] < CARD_IDS) s |= CARDSET_BIT(x->card[i]);
    return s;
}

/* The ranks of a suit from strongest to weakest: J 9 A T K Q 8 7, and the 6 with six players
 * (the solver's `ranks` of them). */
static const uint8_t by_power[RANK_IDS] = {RANK_J, RANK_9, RANK_A, RANK_T, RANK_K, RANK_Q, RANK_8, RANK_7, RANK_6};

/* Pool cards of suit s that can make a difference: a run of pool cards with no card of known
 * place between them is interchangeable against every other card, except against the pool
 * cards still to be played to this same trick. So of each run, the strongest `depth` cards are
 * tried, depth being 1 + the number of pool cards still to come in this trick. */
static int run_choices(const caps_solver *w, const cs_state *x, int s, int depth, card_t *out)
{
    cardset_t sep = separators(w, x);
    int n = 0, taken = 0;
    for (int i = 0; i < w->ranks; i++) {
        card_t c = CARD_MAKE(s, by_power[i]);
        if (sep & CARDSET_BIT(c)) taken = 0;
        else if ((x->pool & CARDSET_BIT(c)) && taken < depth) out[n++] = c, taken++;
    }
    return n;
}

/* How many cards after position i of the trick will be chosen by the adversary: unseen ones
 * already played (at the root) and the plays still to come by the three others. */
static int later_unknown(const caps_solver *w, const cs_state *x, int i)
{
    int leader = x->n ? x->seat[0] : x->to_act, later = 0;
    for (int j = i + 1; j < w->seats; j++) {
        if (j < x->n) later += x->card[j] == CARD_HIDDEN;
        else later += (leader + j < w->seats ? leader + j : leader + j - w->seats) != w->viewer;
    }
    return later;
}

/* Pushes pool cards to the top of their runs, so interchangeable positions compare equal. */
static void canonical_pool(const caps_solver *w, cs_state *x)
{
    cardset_t sep = separators(w, x), pool = 0;
    for (int s = 0; s < SUIT_COUNT; s++) {
        card_t run[RANK_IDS];
        int len = 0, in_pool = 0;
        for (int i = 0; i <= w->ranks; i++) {
            card_t c = i < w->ranks ? CARD_MAKE(s, by_power[i]) : CARD_NONE;
            if (c == CARD_NONE || (sep & CARDSET_BIT(c))) {
                for (int j = 0; j < in_pool; j++) pool |= CARDSET_BIT(run[j]);
                len = in_pool = 0;
                continue;
            }
            run[len++] = c;
            if (x->pool & CARDSET_BIT(c)) in_pool++;
        }
    }
    x->pool = pool;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
}

static uint64_t state_key(const caps_solver *w, const cs_state *x)
{
    uint64_t h = mix(x->pool, x->own);
    for (int p = 0; p < w->seats; p++) {
        h = mix(h, x->held[p]);
        h = mix(h, x->count[p]); /* voids are compared apart: see add_state() */
    }
    h = mix(h, (uint64_t)x->trump | (uint64_t)x->trump_open << 8 | (uint64_t)x->ind_down << 16 |
                   (uint64_t)x->ind_unknown << 24 | (uint64_t)x->exhaust << 32 | (uint64_t)x->trick_no << 40 |
                   (uint64_t)x->to_act << 48 | (uint64_t)x->n << 56);
    for (int i = 0; i < x->n; i++) h = mix(h, (uint64_t)x->card[i] | (uint64_t)x->seat[i] << 8);
    return mix(h, (uint64_t)x->fd << 8 | x->ind_at);
}

/* Whether every suit a seat of a is known to lack, it is known to lack in b too: then every
 * world of b is a world of a, and whatever order survives a survives b. */
static int voids_within(const caps_solver *w, const cs_state *a, const cs_state *b)
{
    for (int p = 0; p < w->seats; p++)
        if (a->voids[p] & ~b->voids[p]) return 0;
    return 1;
}

/* Adds a position at the seat's turn to the belief set of depth d. Positions equal but for the
 * voids they have revealed are merged into the one with fewer voids (it allows more worlds);
 * positions with incomparable voids are both kept. */
static int add_state(caps_solver *w, const cs_state *x, int d)
{
    cs_state y = *x;
    canonical_pool(w, &y);
    uint64_t key = state_key(w, &y);
    seen_slot *tab = w->seen[d];
    uint32_t mask = (1u << HASH_BITS) - 1, i;
    for (i = (uint32_t)key & mask; tab[i].epoch == w->epoch[d]; i = (i + 1) & mask) {
        if (tab[i].key != key) continue;
        cs_state *old = &w->set[d][tab[i].index];
        if (voids_within(w, old, &y)) return 1;
        if (voids_within(w, &y, old)) {
            *old = y;
            return 1;
        }
    }
    if (w->nset[d] >= MAX_STATES || w->nset[d] >= (1 << HASH_BITS) / 2) {
        w->overflow = 1;
        return -1;
    }
    tab[i].epoch = w->epoch[d];
    tab[i].key = key;
    tab[i].index = (uint32_t)w->nset[d];
    w->set[d][w->nset[d]++] = y;
    return 1;
}

static void clear_set(caps_solver *w, int d)
{
    w->nset[d] = 0;
    if (++w->epoch[d] == 0) { /* wrapped: really clear */
        memset(w->seen[d], 0, sizeof(seen_slot) << HASH_BITS);
        w->epoch[d] = 1;
    }
}

static int adv(caps_solver *w, cs_state *x, int d);

/* Shows the face-down indicator and returns it to the maker's hand; when the seat has not seen
 * it, every identity it could have is a different world, so each continuation must hold. */
static int show_indicator_then(caps_solver *w, cs_state *x, int d)
{
    x->trump_open = 1;
    if (!x->ind_down) return adv(w, x, d);
    x->ind_down = 0;
    if (!x->ind_unknown) return adv(w, x, d); /* the seat is the maker: it is in its own hand */
    card_t heads[RANK_IDS];
    int n = run_choices(w, x, x->trump, w->ranks, heads); /* its rank matters in later tricks */
    for (int i = 0; i < n; i++) {
        for (int ended = 0; ended <= x->exhaust; ended++) {
            /* R-EXHAUST "if he still has a trump": if his unseen hand had none, the rule ended
             * and the indicator coming back does not revive it */
            cs_state y = *x;
            y.pool &= ~CARDSET_BIT(heads[i]);
            y.held[w->maker] |= CARDSET_BIT(heads[i]);
            y.ind_unknown = 0;
            if (ended) y.exhaust = 0, y.voids[w->maker] |= (uint8_t)SUIT_BIT(y.trump);
            if (!feasible(w, &y)) continue;
            int r = adv(w, &y, d);
            if (r <= 0) return r;
        }
    }
    return 1;
}

/* The trick in x is complete: R-EXHAUST, and the next trick begins with the winner to lead.
 * Returns the winner; *show tells whether the indicator is now shown (R-REVEAL: a face-down
 * trump in the trick; R-250: a closed bid of 250 or more after the first trick). */
static int close_trick(const caps_solver *w, cs_state *x, int *show)
{
    int T = x->trump;
    int winner = x->seat[g304_trick_winner(x->card, w->seats, T)];
    *show = x->trick_no == 0 && w->bid250 && x->ind_down;
    if (!x->trump_open)
        for (int i = 0; i < w->seats; i++)
            if (((x->fd >> i) & 1) && CARD_SUIT(x->card[i]) == T) *show = 1;
    if (x->seat[0] == w->maker && CARD_SUIT(x->card[0]) == T && !(x->ind_at & 1)) {
        int followed = 0;
        for (int i = 1; i < w->seats; i++) followed |= CARD_SUIT(x->card[i]) == T;
        /* binding while he still holds a trump; for another seat's view "if he still has one" */
        if (!followed) x->exhaust = w->viewer != w->maker || (x->own & CARDSET_SUIT(T));
    }
    x->trick_no++;
    x->n = 0;
    x->fd = x->ind_at = 0;
    x->to_act = (uint8_t)winner;
    return winner;
}

/* The trick is complete: a trick lost ends the search; otherwise play goes on. */
static int finish_trick(caps_solver *w, cs_state *x, int d)
{
    int show;
    if (team_of(close_trick(w, x, &show)) != w->team) return 0; /* a trick lost: not Caps */
    if (x->trick_no == w->tricks) return 1;                       /* every trick won */
    return show ? show_indicator_then(w, x, d) : adv(w, x, d);
}

/* A move of another player: a card it is known to hold, a card from the pool, or (the maker)
 * the unseen indicator with the given identity. */
enum { FROM_HELD, FROM_POOL, FROM_INDICATOR };

static int apply_other(caps_solver *w, cs_state *x, int p, card_t c, int from)
{
    int T = x->trump, s = CARD_SUIT(c), is_maker = p == w->maker;
    int fd = 0;
    if (from == FROM_POOL && (!x->count[p] || (x->voids[p] & SUIT_BIT(s)))) return 0;
    if (x->n == 0) { /* leading */
        if (from == FROM_INDICATOR && (x->trick_no != w->tricks - 1 || x->count[p] || x->held[p])) return 0;
        if (is_maker && !x->trump_open && x->trick_no == 0 && s == T && from != FROM_INDICATOR) return 0;
        if (is_maker && x->exhaust && s != T) { /* allowed only without a trump in hand */
            if (x->held[p] & CARDSET_SUIT(T)) return 0;
            x->voids[p] |= (uint8_t)SUIT_BIT(T);
            x->exhaust = 0; /* he has none left: the rule is over */
        }
    } else {
        int L = CARD_SUIT(x->card[0]);
        if (from == FROM_INDICATOR) {
            int last = !x->count[p] && !x->held[p];
            if (last) {
                fd = !x->trump_open && s != L;
                if (!fd) x->trump_open = 1; /* shown face up */
            } else {
                if ((x->held[p] & CARDSET_SUIT(L)) || L == T) return 0;
                x->voids[p] |= (uint8_t)SUIT_BIT(L);
                fd = 1;
            }
        } else if (s != L) {
            if (x->held[p] & CARDSET_SUIT(L)) return 0;
            x->voids[p] |= (uint8_t)SUIT_BIT(L);
            if (!x->trump_open) {
                if (is_maker && x->ind_down && s == T) return 0; /* R-MAKER-VOID */
                fd = 1;
            }
        }
    }
    if (from == FROM_HELD) {
        x->held[p] &= ~CARDSET_BIT(c);
    } else {
        x->pool &= ~CARDSET_BIT(c);
        if (from == FROM_POOL) x->count[p]--;
        else x->ind_unknown = 0, x->ind_down = 0;
    }
    int i = x->n++;
    x->card[i] = c;
    x->seat[i] = (uint8_t)p;
    if (fd) x->fd |= (uint8_t)(1 << i);
    if (from == FROM_INDICATOR) x->ind_at |= (uint8_t)(1 << i);
    x->to_act = (uint8_t)next_seat(p, w->seats);
    return 1;
}

/* How good a move looks for the adversary (tried first when high). An opponent takes the trick
 * as cheaply as it can, or else throws its weakest card and keeps the strong ones for later; the
 * partner does the same the other way round: it avoids taking the trick and sheds low cards. */
static int move_score(const caps_solver *w, const cs_state *x, int p, card_t c)
{
    int strength = card_power(c) + (CARD_SUIT(c) == x->trump ? 16 : 0);
    int takes = 0;
    if (x->n) {
        card_t cards[G304_MAX_SEATS];
        memcpy(cards, x->card, x->n);
        cards[x->n] = c;
        takes = g304_trick_winner(cards, x->n + 1, x->trump) == x->n;
    }
    int wanted = team_of(p) == w->team ? !takes : takes;
    return (wanted ? 100 : 0) - strength;
}

typedef struct {
    card_t card;
    uint8_t from;
    int score;
} adv_move;

/* Moves of one seat: its known cards, a run head per suit and depth, and indicator identities. */
#define MAX_MOVES (CARD_IDS + RANK_IDS)

/* The moves worth trying for seat p (another player), best first for the adversary. */
static int gen_moves(caps_solver *w, const cs_state *x, int p, adv_move *moves)
{
    int nm = 0;
    for (cardset_t h = x->held[p]; h; h &= h - 1) moves[nm++] = (adv_move){cardset_first(h), FROM_HELD, 0};
    int depth = 1 + later_unknown(w, x, x->n);
    if (x->count[p]) {
        for (int s = 0; s < SUIT_COUNT; s++) {
            if (x->voids[p] & SUIT_BIT(s)) continue;
            card_t heads[RANK_IDS];
            int k = run_choices(w, x, s, depth, heads);
            for (int i = 0; i < k; i++) moves[nm++] = (adv_move){heads[i], FROM_POOL, 0};
        }
    }
    if (p == w->maker && x->ind_unknown && x->ind_down) {
        card_t heads[RANK_IDS];
        int k = run_choices(w, x, x->trump, depth, heads);
        for (int i = 0; i < k; i++) moves[nm++] = (adv_move){heads[i], FROM_INDICATOR, 0};
    }
    for (int i = 0; i < nm; i++) moves[i].score = move_score(w, x, p, moves[i].card);
    for (int i = 1; i < nm; i++) { /* insertion sort, best first */
        adv_move m = moves[i];
        int j = i;
        while (j > 0 && moves[j - 1].score < m.score) moves[j] = moves[j - 1], j--;
        moves[j] = m;
    }
    return nm;
}

/* Plays move m of seat p in x into y; 0 if it is not legal or no world fits it any more. */
static int play_move(caps_solver *w, const cs_state *x, int p, const adv_move *m, cs_state *y)
{
    *y = *x;
    if (!apply_other(w, y, p, m->card, m->from)) return 0;
    if (m->from != FROM_HELD || y->voids[p] != x->voids[p]) return feasible(w, y);
    return 1;
}

static int adv(caps_solver *w, cs_state *x, int d)
{
    if (++w->nodes > w->budget) return -1;
    if (x->n == w->seats) return finish_trick(w, x, d);
    int p = x->to_act;
    if (p == w->viewer) return add_state(w, x, d);
    adv_move moves[MAX_MOVES];
    int nm = gen_moves(w, x, p, moves);
    for (int i = 0; i < nm; i++) {
        cs_state y;
        if (!play_move(w, x, p, &moves[i], &y)) continue;
        int r = adv(w, &y, d);
        if (r <= 0) return r;
    }
    return 1;
}

/* The seat plays c in position x, if the engine would allow it (g304_check_card). */
static int apply_viewer(caps_solver *w, cs_state *x, card_t c)
{
    int is_maker = w->viewer == w->maker;
    int ind_down = is_maker && x->ind_down;
    g304_card_rules r = {
        .hand = x->own & ~(ind_down ? CARDSET_BIT(w->ind_card) : 0),
        .indicator = ind_down ? w->ind_card : CARD_NONE,
        .led = x->n ? x->card[0] : CARD_NONE,
        .is_maker = (uint8_t)is_maker,
        .trump = x->trump,
        .trump_open = x->trump_open,
        .trick_no = x->trick_no,
        .exhaust = x->exhaust,
    };
    int fd;
    if (!(x->own & CARDSET_BIT(c)) || g304_check_card(&r, c, &fd, NULL) != G304_OK) return 0;
    int is_ind = ind_down && c == w->ind_card;
    x->own &= ~CARDSET_BIT(c);
    if (is_ind) {
        x->ind_down = 0;
        if (!fd) x->trump_open = 1;
    }
    int i = x->n++;
    x->card[i] = c;
    x->seat[i] = (uint8_t)w->viewer;
    if (fd) x->fd |= (uint8_t)(1 << i);
    if (is_ind) x->ind_at |= (uint8_t)(1 << i);
    x->to_act = (uint8_t)next_seat(w->viewer, w->seats);
    return 1;
}

static int solve(caps_solver *w, int d);
static int solve_set(caps_solver *w, int d);

/* Tries card c at depth d for every position of the belief set. A position that defeats one
 * card often defeats the next, so it moves to the front (a "killer" position). */
static int try_card(caps_solver *w, int d, card_t c)
{
    clear_set(w, d + 1);
    for (int i = 0; i < w->nset[d]; i++) {
        cs_state y = w->set[d][i];
        int r = apply_viewer(w, &y, c) ? adv(w, &y, d + 1) : 0;
        if (r == 0 && i > 0) {
            cs_state t = w->set[d][0];
            w->set[d][0] = w->set[d][i];
            w->set[d][i] = t;
        }
        if (r <= 0) return r;
    }
    return 1;
}

/* Whether c waits for its stronger interchangeable twin, still in own, to be played first. */
static int waits_for_twin(const caps_solver *w, cardset_t own, card_t c)
{
    return w->twin_above[c] != CARD_NONE && (own & CARDSET_BIT(w->twin_above[c]));
}

/* The seat's cards in the order worth trying first: trumps (when known) and strong cards. */
static int candidates(const caps_solver *w, int d, card_t *out)
{
    const cs_state *x = &w->set[d][0];
    int n = 0;
    if (w->fixed) {
        out[n++] = w->fixed[d];
        return n;
    }
    int score[G304_TRICKS];
    int one_trump = 1;
    for (int i = 1; i < w->nset[d]; i++) one_trump &= w->set[d][i].trump == x->trump;
    for (cardset_t s = x->own; s; s &= s - 1) {
        card_t c = cardset_first(s);
        if (waits_for_twin(w, x->own, c)) continue;
        score[n] = card_power(c) + (one_trump && CARD_SUIT(c) == x->trump ? 16 : 0);
        out[n++] = c;
    }
    for (int i = 1; i < n; i++) {
        card_t c = out[i];
        int sc = score[i], j = i;
        while (j > 0 && score[j - 1] < sc) out[j] = out[j - 1], score[j] = score[j - 1], j--;
        out[j] = c, score[j] = sc;
    }
    return n;
}

/* Belief sets already shown to have no winning continuation. Different orders of the same
 * cards often reach the same set: its hash (the sum of its positions' keys) is remembered. */
static int failed_before(caps_solver *w, uint64_t h, int insert)
{
    uint32_t mask = FAILED_SLOTS - 1;
    for (uint32_t i = (uint32_t)h & mask, tries = 0; tries < 16; i = (i + 1) & mask, tries++) {
        if (w->failed[i].epoch != w->check_epoch) {
            if (insert) w->failed[i] = (seen_slot){h, w->check_epoch, 0};
            return 0;
        }
        if (w->failed[i].key == h) return 1;
    }
    return 0;
}

static int solve(caps_solver *w, int d)
{
    if (w->nset[d] == 0) return 1;
    uint64_t h = (uint64_t)d * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < w->nset[d]; i++) h += state_key(w, &w->set[d][i]);
    if (failed_before(w, h, 0)) return 0;
    int r = solve_set(w, d);
    if (r == 0) failed_before(w, h, 1);
    return r;
}

static int solve_set(caps_solver *w, int d)
{
    card_t cand[G304_TRICKS];
    int n = candidates(w, d, cand);
    for (int i = 0; i < n; i++) {
        int r = try_card(w, d, cand[i]);
        if (r < 0) return -1;
        if (r == 0) continue;
        w->order[d] = cand[i];
        r = solve(w, d + 1);
        if (r != 0) return r;
    }
    return 0;
}

/* Gives each face-down card of the trick in progress that the seat has not seen every identity
 * it could have, then plays on to the seat's first turn. */
static int root_assign(caps_solver *w, const caps_knowledge *k, cs_state *x, int i)
{
    for (; i < x->n; i++)
        if (x->card[i] == CARD_HIDDEN) break;
    if (i == x->n) {
        if (!feasible(w, x)) return 1; /* no world fits this trump */
        if (w->nroots >= MAX_STATES) {
            w->overflow = 1;
            return -1;
        }
        w->roots[w->nroots++] = *x;
        return 1;
    }
    int L = CARD_SUIT(x->card[0]), T = x->trump;
    uint8_t allowed;
    if ((k->indicator_at >> i) & 1) /* the indicator: a trump cutting another suit; no hand void applies */
        allowed = (uint8_t)(SUIT_BIT(T) & ~SUIT_BIT(L));
    else /* from a hand: not the suit led, nor one its player showed out of (this trick is the last) */
        allowed = (uint8_t)(0xF & ~SUIT_BIT(L) & ~k->voids[k->seat_of[i]]);
    if (!((k->indicator_at >> i) & 1) && k->seat_of[i] == w->maker) allowed &= (uint8_t)~SUIT_BIT(T); /* R-MAKER-VOID */
    for (int s = 0; s < SUIT_COUNT; s++) {
        if (!(allowed & SUIT_BIT(s))) continue;
        card_t heads[RANK_IDS];
        int n = run_choices(w, x, s, 1 + later_unknown(w, x, i), heads);
        for (int h = 0; h < n; h++) {
            cs_state y = *x;
            y.card[i] = heads[h];
            y.pool &= ~CARDSET_BIT(heads[h]);
            int r = root_assign(w, k, &y, i + 1);
            if (r <= 0) return r;
        }
    }
    return 1;
}

/* Can the others, knowing the seat will play c when its turn comes in this trick, make c
 * illegal or take this trick? (Its order is fixed in advance, so they may plan around it.) */
static int trick_refutes(caps_solver *w, const cs_state *x, card_t c)
{
    if (++w->nodes > w->budget) return 0; /* undecided: the full search will tell */
    if (x->n == w->seats) return team_of(x->seat[g304_trick_winner(x->card, w->seats, x->trump)]) != w->team;
    int p = x->to_act;
    if (p == w->viewer) {
        cs_state y = *x;
        return !apply_viewer(w, &y, c) || trick_refutes(w, &y, c);
    }
    adv_move moves[MAX_MOVES];
    int nm = gen_moves(w, x, p, moves);
    for (int i = 0; i < nm; i++) {
        cs_state y;
        if (play_move(w, x, p, &moves[i], &y) && trick_refutes(w, &y, c)) return 1;
    }
    return 0;
}

/* When the seat has still to play to this trick: if every card it could play first can be made
 * illegal or beaten in this very trick, no order is certain — found without enumerating all the
 * plays of those before it. */
static int every_first_card_beaten(caps_solver *w)
{
    const cs_state *x0 = &w->roots[0];
    for (int i = 0; i < x0->n; i++)
        if (x0->seat[i] == w->viewer) return 0; /* it has played here: its first card is for the next trick */
    for (cardset_t s = x0->own; s; s &= s - 1) {
        card_t c = cardset_first(s);
        if (w->fixed && c != w->fixed[0]) continue;
        if (!w->fixed && waits_for_twin(w, x0->own, c)) continue;
        int beaten = 0;
        for (int i = 0; i < w->nroots && !beaten; i++) beaten = trick_refutes(w, &w->roots[i], c);
        if (!beaten) return 0;
    }
    return 1;
}

/* The position for one trump hypothesis, before the unseen cards of the current trick. */
static void root_state(caps_solver *w, const caps_knowledge *k, int T, cs_state *x)
{
    memset(x, 0, sizeof *x);
    x->pool = k->unseen;
    x->own = k->own;
    memcpy(x->held, k->held, sizeof x->held);
    memcpy(x->count, k->count, sizeof x->count);
    memcpy(x->voids, k->voids, sizeof x->voids);
    if (w->maker != w->viewer && (k->maker_void_if & SUIT_BIT(T))) x->voids[w->maker] |= (uint8_t)SUIT_BIT(T);
    x->trump = (uint8_t)T;
    x->trump_open = k->trump_open;
    x->ind_down = k->ind_down;
    x->ind_unknown = k->ind_unknown;
    if (w->viewer == w->maker && x->ind_down) {
        /* A Caps call by the maker shows the indicator: the trump opens and the indicator becomes
         * an ordinary card of his hand (as with R-OPEN). His order must win under those rules. */
        x->trump_open = 1;
        x->ind_down = 0;
    }
    x->exhaust = (k->exhaust_suits >> T) & 1;
    x->trick_no = k->trick_no;
    x->n = k->n;
    x->to_act = k->to_act;
    memcpy(x->card, k->card, sizeof x->card);
    memcpy(x->seat, k->seat_of, sizeof x->seat);
    x->fd = k->facedown;
    x->ind_at = k->indicator_at;
    memset(w->slot_cap_int[T], 0, sizeof w->slot_cap_int[T]);
    w->slot_total[T] = k->nhidden;
    w->slot_constrained[T] = 0;
    for (int i = 0; i < k->nhidden; i++) {
        int mask = 0xF & ~k->hidden_not[i];
        if (k->hidden_not_trump[i]) mask &= ~SUIT_BIT(T);
        w->slot_cap_int[T][mask]++;
        w->slot_constrained[T] |= mask != 0xF;
    }
}

/* Cards out of play for good: seen in finished tricks. Between two of the seat's cards of a
 * suit only such cards (or its own) may lie for the two to be interchangeable. */
static void find_twins(caps_solver *w, const g304_state *st, const caps_knowledge *k)
{
    cardset_t live = k->unseen, own = k->own;
    for (int p = 0; p < w->seats; p++) live |= k->held[p];
    for (int i = 0; i < k->n; i++)
        if (k->card[i] < CARD_IDS) live |= CARDSET_BIT(k->card[i]);
    if (w->viewer == st->maker && st->ind_down) own &= ~CARDSET_BIT(st->indicator); /* special to play */
    memset(w->twin_above, CARD_NONE, sizeof w->twin_above);
    for (int s = 0; s < SUIT_COUNT; s++) {
        card_t above = CARD_NONE;
        for (int i = 0; i < w->ranks; i++) {
            card_t c = CARD_MAKE(s, by_power[i]);
            if (live & CARDSET_BIT(c)) above = CARD_NONE;
            else if (own & CARDSET_BIT(c)) w->twin_above[c] = above, above = c;
            else if (k->own & CARDSET_BIT(c)) above = CARD_NONE; /* the face-down indicator */
        }
    }
}

/* ---- a quick refutation in one concrete world ----
 * Most positions are not certain for a plain reason: some opponent may hold a card that will
 * beat one of ours. Deal the unseen cards out concretely, strongest first to one favoured
 * opponent, and let the others play greedily (move_score): if no order of the seat's cards
 * survives that single world and that single line of play, Caps is not certain — a proof that
 * costs a few hundred moves instead of the full search. */

/* Deals every unseen card of x to a hand (favoured opponent first, then the other opponents,
 * then the seat's teammates); the rest stay in the pool for the unseen face-down cards of
 * finished tricks. Returns 0 if it cannot. */
static int deal_world(caps_solver *w, const cs_state *x, int favoured, int void_suit, cs_state *y)
{
    int pref[G304_MAX_SEATS], np = 0;
    for (int k = 0; k < w->seats; k += 2) pref[np++] = (favoured + k) % w->seats;
    for (int k = 2; k < w->seats; k += 2) pref[np++] = (w->viewer + k) % w->seats;
    *y = *x;
    for (int strength = 16 + w->ranks - 1; strength >= 0; strength--) {
        for (int s = 0; s < SUIT_COUNT; s++) {
            int trump_bonus = s == x->trump ? 16 : 0;
            int power = strength - trump_bonus;
            if (power < 0 || power >= w->ranks) continue;
            card_t c = CARD_MAKE(s, by_power[w->ranks - 1 - power]);
            if (!(y->pool & CARDSET_BIT(c))) continue;
            cs_state z = *y;
            int placed = 0;
            if (y->ind_unknown && s == x->trump) { /* the strongest unseen trump as the indicator */
                z.pool &= ~CARDSET_BIT(c);
                z.ind_unknown = 0;
                placed = feasible(w, &z);
                if (placed) {
                    z.ind_world = c;
                    *y = z;
                    continue;
                }
                z = *y;
            }
            for (int i = 0; i < np && !placed; i++) {
                int p = pref[i];
                if (p == w->viewer || !y->count[p] || (y->voids[p] & SUIT_BIT(s))) continue;
                if (p == favoured && s == void_suit) continue;
                z = *y;
                z.pool &= ~CARDSET_BIT(c);
                z.held[p] |= CARDSET_BIT(c);
                z.count[p]--;
                placed = feasible(w, &z);
                if (placed) *y = z;
            }
        }
    }
    for (int p = 0; p < w->seats; p++)
        if (p != w->viewer && y->count[p]) return 0;
    return !y->ind_unknown;
}

/* Plays greedily for the others until the seat's turn or the end. Returns 0 if a trick is lost,
 * 1 at the seat's turn, 2 at the end of the hand. */
static int greedy_to_turn(caps_solver *w, cs_state *x)
{
    for (;;) {
        if (++w->nodes > w->budget) return 1; /* out of budget: let the full search decide */
        if (x->n == w->seats) {
            int show;
            if (team_of(close_trick(w, x, &show)) != w->team) return 0;
            if (show) {
                x->trump_open = 1;
                if (x->ind_down && w->viewer != w->maker) x->held[w->maker] |= CARDSET_BIT(x->ind_world);
                x->ind_down = 0;
            }
            if (x->trick_no == w->tricks) return 2;
        }
        int p = x->to_act;
        if (p == w->viewer) return 1;
        int best = -1000;
        cs_state chosen;
        int ind_here = x->ind_down && p == w->maker; /* the seat is not the maker here */
        cardset_t mine = x->held[p] | (ind_here ? CARDSET_BIT(x->ind_world) : 0);
        for (cardset_t h = mine; h; h &= h - 1) {
            card_t c = cardset_first(h);
            cs_state y = *x;
            int from = ind_here && c == x->ind_world ? FROM_INDICATOR : FROM_HELD;
            if (!apply_other(w, &y, p, c, from)) continue;
            int sc = move_score(w, x, p, c);
            if (sc > best) best = sc, chosen = y;
        }
        if (best == -1000) return 1; /* no legal card: cannot happen in a dealt world */
        *x = chosen;
    }
}

/* Does some order of the seat's cards survive all these worlds, each with its line of play? */
static int survives(caps_solver *w, const cs_state *worlds, int k, int d)
{
    card_t cand[G304_TRICKS];
    int n = 0;
    const cs_state *x = &worlds[0];
    if (w->fixed) {
        cand[n++] = w->fixed[d];
    } else {
        for (cardset_t s = x->own; s; s &= s - 1) {
            card_t c = cardset_first(s);
            if (!waits_for_twin(w, x->own, c)) cand[n++] = c;
        }
    }
    for (int i = 0; i < n; i++) {
        cs_state next[QUICK_WORLDS];
        int live = 0, lost = 0;
        for (int j = 0; j < k && !lost; j++) {
            cs_state y = worlds[j];
            int r = apply_viewer(w, &y, cand[i]) ? greedy_to_turn(w, &y) : 0;
            if (r == 0) lost = 1;
            else if (r == 1) next[live++] = y; /* r == 2: this world is won to the end */
        }
        if (w->nodes > w->budget) return 1;
        if (lost) continue;
        if (live == 0 || survives(w, next, live, d + 1)) return 1;
    }
    return 0;
}

/* Whether a few concrete worlds with greedy play already defeat every order: for positions `from`
 * (the first belief set, or the roots before it), an opponent is dealt the strongest unseen
 * cards (trumps first), once with every suit and once lacking each suit in turn (so that it can
 * cut). A world not yet at the seat's turn is played on greedily to it; if a trick is lost on the
 * way, no order of the seat's cards can help. */
static int quickly_refuted(caps_solver *w, const cs_state *from, int n)
{
    cs_state worlds[QUICK_WORLDS];
    int k = 0;
    int states = n < QUICK_STATES ? n : QUICK_STATES;
    for (int i = 0; i < states; i++) {
        for (int o = 1; o < w->seats; o += 2) {
            for (int v = -1; v < SUIT_COUNT && k < QUICK_WORLDS; v++) {
                if (v == from[i].trump || !deal_world(w, &from[i], (w->viewer + o) % w->seats, v, &worlds[k])) continue;
                if (worlds[k].to_act != w->viewer && greedy_to_turn(w, &worlds[k]) == 0) return 1;
                if (worlds[k].to_act == w->viewer) k++;
            }
        }
    }
    return k > 0 && !survives(w, worlds, k, 0);
}

/* The first belief set could not be built whole: up to five players move before the seat's first
 * turn at a six-player table, and their choices can overflow it or the budget. The positions it
 * holds are real ones, so if no order of the seat's cards wins even for them, none wins for all:
 * Caps is not certain. Tried with the quick refutation, then a search with a fresh budget. (At
 * four seats such a check stays "unknown", as it always was: a judged hand replays the same.) */
static int refuted_in_part(caps_solver *w)
{
    if (w->nset[0] == 0) return 0;
    long budget = w->budget;
    w->overflow = 0;
    w->budget = w->nodes + budget;
    int refuted = (w->quick && quickly_refuted(w, w->set[0], w->nset[0])) || solve(w, 0) == 0;
    w->budget = budget;
    return refuted;
}

/* The strongest card of a set (by card_power; sets of one suit), CARD_NONE if empty. */
static card_t strongest(cardset_t s)
{
    card_t best = CARD_NONE;
    for (; s; s &= s - 1)
        if (best == CARD_NONE || card_power(cardset_first(s)) > card_power(best)) best = cardset_first(s);
    return best;
}

/* A claim that needs no search, for six players: the seat is on lead at the start of a trick,
 * knows the trump (its own, or open), and every card it holds beats every card of its suit the
 * others may hold, with trumps enough to draw every trump any one of them may hold. Leading its
 * trumps and then its side cards wins every trick: each trump lead is the highest trump, the
 * others must follow while they have trumps, and then nobody can cut the side cards. The maker's
 * call shows a face-down indicator, which then counts as a card of his hand (as in root_state).
 * The search proves the same, but five others to play around make its belief sets too large.
 * Writes such an order (or checks the fixed one: trumps first, then the rest) and returns its
 * length; 0 if the claim does not hold. */
static int top_cards_claim(const caps_solver *w, const caps_knowledge *k, const card_t *fixed, card_t *order)
{
    if (k->n != 0 || k->to_act != w->viewer || __builtin_popcount(k->trumps) != 1) return 0;
    int T = __builtin_ctz(k->trumps);
    cardset_t mine = k->own, others = k->unseen, trumps = CARDSET_SUIT(T);
    for (int p = 0; p < w->seats; p++) others |= k->held[p];
    for (int s = 0; s < SUIT_COUNT; s++) {
        cardset_t h = mine & CARDSET_SUIT(s), o = others & CARDSET_SUIT(s);
        if (!h || !o) continue;
        card_t weakest = CARD_NONE;
        for (cardset_t x = h; x; x &= x - 1)
            if (weakest == CARD_NONE || card_power(cardset_first(x)) < card_power(weakest)) weakest = cardset_first(x);
        if (card_power(weakest) < card_power(strongest(o))) return 0;
    }
    int ntrumps = cardset_count(mine & trumps), most = 0; /* the most trumps one other seat may hold */
    for (int p = 0; p < w->seats; p++) {
        if (p == w->viewer) continue;
        int t = cardset_count(k->held[p] & trumps);
        if (!(k->voids[p] & SUIT_BIT(T))) t += k->count[p];
        if (t > most) most = t;
    }
    if (most > cardset_count(others & trumps)) most = cardset_count(others & trumps);
    if ((mine & ~trumps) && ntrumps < most) return 0;
    int n = 0;
    for (cardset_t x = mine & trumps; x; x &= x - 1) order[n++] = cardset_first(x);
    for (cardset_t x = mine & ~trumps; x; x &= x - 1) order[n++] = cardset_first(x);
    for (int i = 1; i < n; i++) /* the strongest trump first, as people claim (any order of them wins) */
        for (int j = i; j > 0 && j < ntrumps && card_power(order[j]) > card_power(order[j - 1]); j--) {
            card_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    if (!fixed) return n;
    for (int i = 0; i < n; i++) /* the fixed order: all the trumps, then the rest */
        if ((CARD_SUIT(fixed[i]) == T) != (i < ntrumps)) return 0;
    memcpy(order, fixed, (size_t)n);
    return n;
}

static int valid_fixed(cardset_t own, const card_t *fixed, int n)
{
    cardset_t seen = 0;
    if (n != cardset_count(own)) return 0;
    for (int i = 0; i < n; i++) {
        if (fixed[i] >= CARD_IDS || !(own & CARDSET_BIT(fixed[i])) || (seen & CARDSET_BIT(fixed[i]))) return 0;
        seen |= CARDSET_BIT(fixed[i]);
    }
    return 1;
}

caps_verdict caps_check(caps_solver *w, const g304_state *st, int seat, const card_t *fixed, int nfixed,
                        card_t order[G304_TRICKS], int *n)
{
    caps_knowledge k;
    *n = 0;
    w->nodes = 0;
    w->overflow = 0;
    if (++w->check_epoch == 0) {
        memset(w->failed, 0, sizeof(seen_slot) * FAILED_SLOTS);
        w->check_epoch = 1;
    }
    if (st->phase != G304_PHASE_PLAY || st->pcc || st->team_tricks[!team_of(seat)]) return CAPS_NOT_CERTAIN;
    caps_knowledge_of(st, seat, &k);
    if (!k.own) return CAPS_NOT_CERTAIN;
    if (fixed && !valid_fixed(k.own, fixed, nfixed)) return CAPS_NOT_CERTAIN;
    w->viewer = seat;
    w->seats = k.seats;
    w->tricks = g304_tricks(&st->rules);
    w->ranks = k.seats == 6 ? RANK_IDS : RANK_COUNT;
    w->team = team_of(seat);
    w->maker = st->maker;
    w->bid250 = k.bid250;
    w->ind_card = seat == st->maker ? st->indicator : CARD_NONE;
    w->fixed = fixed;
    if (w->seats == 6 && (*n = top_cards_claim(w, &k, fixed, order)) > 0) return CAPS_CERTAIN;
    find_twins(w, st, &k);
    clear_set(w, 0);
    w->nroots = 0;
    for (int T = 0; T < SUIT_COUNT; T++) {
        if (!(k.trumps & SUIT_BIT(T))) continue;
        cs_state x;
        root_state(w, &k, T, &x);
        int split = x.exhaust && seat != st->maker && !(k.exhaust_sure & SUIT_BIT(T));
        for (int ended = 0; ended <= split; ended++) {
            cs_state y = x;
            if (ended) y.exhaust = 0, y.voids[st->maker] |= (uint8_t)SUIT_BIT(T);
            if (root_assign(w, &k, &y, 0) < 0) /* too many: those found may still beat every card */
                return w->nroots && every_first_card_beaten(w) ? CAPS_NOT_CERTAIN : CAPS_UNKNOWN;
        }
    }
    if (w->nroots == 0) return CAPS_UNKNOWN; /* no world fits what the seat saw: never blame anyone */
    if (every_first_card_beaten(w)) return CAPS_NOT_CERTAIN;
    /* Six players: up to five others move before the seat's first turn and their choices multiply
     * the first belief set, so dealt worlds are tried from the roots before it is built. */
    if (w->seats == 6 && w->quick && quickly_refuted(w, w->roots, w->nroots)) return CAPS_NOT_CERTAIN;
    for (int i = 0; i < w->nroots; i++) {
        cs_state *x = &w->roots[i];
        int r = x->to_act == w->viewer ? add_state(w, x, 0) : adv(w, x, 0);
        if (r < 0) return w->seats == 6 && refuted_in_part(w) ? CAPS_NOT_CERTAIN : CAPS_UNKNOWN;
        if (r == 0) return CAPS_NOT_CERTAIN;
    }
    /* Most positions are settled by a short search; for the rest a few dealt worlds often prove
     * "not certain" at once, and only then does the full search run to its budget. */
    long budget = w->budget;
    w->budget = w->nodes + FIRST_TRY_NODES < budget ? w->nodes + FIRST_TRY_NODES : budget;
    int r = solve(w, 0);
    w->budget = budget;
    if (r < 0 && w->nodes < budget) {
        if (w->quick && quickly_refuted(w, w->set[0], w->nset[0])) return CAPS_NOT_CERTAIN;
        w->overflow = 0;
        r = solve(w, 0);
    }
    if (r < 0 || w->overflow) return CAPS_UNKNOWN;
    if (r == 0) return CAPS_NOT_CERTAIN;
    *n = cardset_count(k.own);
    memcpy(order, w->order, (size_t)*n);
    return CAPS_CERTAIN;
}
