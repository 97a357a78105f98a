/* dd.c — the double-dummy solver (interface and rules in dd.h).
 *
 * Shape of the search. A node is a whole dd_pos (about 100 bytes, copied per move: simpler and as
 * fast as undoing). dd_play_card() is the one place where a card changes the position, for callers
 * (dd_play) and for the search alike; it mirrors g304.c's do_play()/finish_trick() for what follows
 * a trick. Legal moves come from g304_check_card(), one card per suit; only the cases where it
 * restricts nobody (following the suit led, a seat other than the maker leading, a seat other than
 * the maker with the face-down indicator that cannot follow) are answered without asking it. The
 * search decides tricks by the solver's own tables of powers and strengths, the same rule as
 * g304_trick_winner().
 *
 * Values are team 0's points from the cards still in play, so one alpha-beta serves both teams
 * (team 0 maximises, team 1 minimises) and a yes/no question is a null window; dd_value() closes in
 * on the value with null windows, the first at the value of a line of play (dd_guess), then steps
 * growing until the value is bracketed, then halving. At each trick start, in this order:
 *  - the last trick is counted directly (every seat holds one card);
 *  - bounds from the sure trumps (trumps stronger than all of the other team's: the tricks they win
 *    and the cheapest cards the other seats must give to them) may settle the question;
 *  - the transposition table is probed (the table is used only at trick starts, where a position is
 *    fully told by who holds each card, the leader and a few flags); it keeps a lower and an upper
 *    bound and the move that decided, its entries are 32 bytes at any number of seats, four to a
 *    bucket of two cache lines, and a full bucket loses its entry with the fewest tricks left;
 *  - with two tricks left, every line is played out (at most two cards a seat) and the exact value
 *    stored: cheaper than searching, and good for every later window.
 *
 * The table's key is not the cards but their ranks: for each suit, who holds its cards still in play,
 * from the weakest up. Two positions with the same key differ only in which cards those are (one
 * line of play took the 10 and the 8 of hearts, another the king and the 7), and they play alike:
 * legality goes by suits, holders and the indicator, a trick by the order of powers, so every line
 * in one is a line in the other with the same tricks to the same teams, the i-th card of a suit
 * standing for the i-th. Only the points differ, card by card: a bound found for one holds for the
 * other once shifted by what the swapped cards can add or take away (dd_shift), and a sweep, which
 * counts tricks, holds unchanged. On tests/bench/bench_dd, of the positions with three tricks left
 * that a table by cards did not settle, 81 % had such a twin already searched and its shifted bound
 * settled 58 %; the search by ranks visits a third of the nodes (p99 310,198 against 952,046). This
 * is Kupferschmid and Helmert's "quasi-symmetry reduction" for Skat. Entries written for different
 * cards of one key share its bucket.
 *
 * Merging interchangeable cards must respect card points, which bridge solvers need not: two cards
 * adjacent in power (J and 9 of a suit, say) win the same tricks but carry 30 and 20 points, so
 * which one goes now changes the score. Exact merges used here:
 *  - two cards of one hand and suit with no card still in play between them in power, and the
 *    same points (8 and 7), are one move: swapping them is a symmetry of the rest of the hand;
 *  - the last card of a trick: such a run of cards (same points or not) wins or loses this trick
 *    alike, and the card kept is then worth at most its extra points to the team that later wins
 *    it; so the run's card with the most points dominates when our team takes the trick, the one
 *    with the fewest when it does not. Only that card is searched.
 *
 * Move order decides most of the cost (a null window is cheap only when the first move refutes).
 * First the table's move at a trick start; then the cards that surely take the trick (no seat of
 * the other team still to play holds a legal card that beats them: the same test as the merge
 * above); a low lead to the partner's top card or in a suit the partner can ruff, and last the
 * leads the other team can ruff; a card beating the other team's with the highest such card; points
 * thrown on a partner's winning card when it is safe, and on a trick a partner still to play may
 * take; otherwise the cheapest card.
 *
 * Tried and left out, as they cost more time than they saved on tests/bench/bench_dd: a full window,
 * or windows kept narrow around a guessed value in dd_value() (the guess now places only the first
 * window), killer and history move order, exact values with three tricks left, bounds in the middle
 * of a trick, quick tricks of side suits, probing the table for every child at the last card of a
 * trick, leaving the table out with two tricks left, a search of its own for the last three tricks,
 * a table of best moves inside tricks (for the later windows), the followers' legal cards worked out
 * once a trick, and -O3 with link-time optimisation (slower). */
#include "dd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DD_DEFAULT_BITS 17
#define DD_WAYS 4      /* entries per bucket */
#define DD_INF 10000
#define DD_WORTHS 8    /* distinct card point values, at most */
#define DD_MODE_POINTS 0
#define DD_MODE_SWEEP 1 /* + team */

typedef struct {
    uint64_t cards[2]; /* who holds each card, by its rank among the cards in play (dd_key) */
    uint32_t meta;   /* leader, flags, what is fixed for the hand, and the question asked */
    uint32_t held;   /* the cards in play (of the 32) when written, for their points (dd_shift) */
    int16_t lo, hi;  /* bounds of team 0's points from here (a yes/no answer in lo for sweeps) */
    uint8_t best;    /* the move that decided, as suit * 16 + its rank in play (DD_NO_BEST: none) */
    uint8_t left;    /* tricks left: deeper entries are kept when a bucket is full */
    uint16_t gen;    /* the table's generation when written: older entries count as empty */
} dd_entry;

_Static_assert(sizeof(dd_entry) == 32, "four entries to a bucket of two cache lines");

#define DD_NO_BEST 0xFF

/* A trick start as the table knows it: for each suit, who holds its cards in play from the weakest up
 * (1 + the seat, 7 for the indicator face down), whatever the cards are: three bit planes of nine
 * places a suit, packed into two words so that an entry has the same 32 bytes at any number of seats;
 * the rest in meta; the bucket it hashes to; and, for dd_shift(), the cards in play. */
typedef struct {
    uint64_t cards[2];
    uint32_t meta, bucket;
    uint32_t held;              /* the cards in play of the 32-card pack */
    uint16_t order[SUIT_COUNT]; /* by suit, the powers of its cards in play: bit 0 the six ... bit 8 the jack */
    int points;                 /* the question is about points (a sweep is not): bounds are shifted */
} dd_key;

_Static_assert(CARD_IDS <= 36 && G304_MAX_SEATS < 8, "dd_key packs three planes of 36 cards");

struct dd_solver {
    dd_entry *tt;
    uint32_t buckets; /* a power of two */
    uint16_t gen;     /* dd_solver_clear() starts a new generation */
    long nodes;
    long budget, stop_at; /* dd_solver_budget(); the node count where the current search stops */
    int stopped;          /* the current search reached stop_at: its results are not stored */
    int total;            /* the current search: points in play at its root and won before it */
    int8_t pts[CARD_IDS], pw[CARD_IDS];    /* the 36-card pack: the sixes too (R-SIX-CARDS) */
    int16_t suit_pts[256];                 /* points of a suit's cards by the mask of their ranks */
    card_t by_power[SUIT_COUNT][RANK_IDS]; /* each suit strongest first, its six last */
    cardset_t above[CARD_IDS];             /* the stronger cards of the same suit */
    int8_t strength[SUIT_COUNT][SUIT_COUNT][CARD_IDS]; /* by trump and suit led: trumps, then the
                                                          suit led, then the rest, each by power */
    cardset_t worth[DD_WORTHS];            /* the cards of each point value, cheapest first */
    int8_t worth_pts[DD_WORTHS];
    int nworth;
    uint8_t by_rank[256];                  /* a suit's ranks (bit r: rank r) as powers (bit k: power k) */
    uint8_t squeeze[256];                  /* [all << 4 | m], m within all: m's bits packed down */
    uint8_t count[512];                    /* bits set (a call to libgcc without -mpopcnt) */
    int8_t place_pts[RANK_IDS];            /* by place in dd_key.order: the card's points */
    uint8_t place_rank[RANK_IDS];          /* by place in dd_key.order: the card's rank */
};

static int dd_team(int seat) { return seat & 1; } /* R-SEATS, R-SIX-SEATS: g304.c's team_of() */

static int dd_trick_size(const dd_pos *p)
{
    if (!p->pcc) return p->nseats;
    return p->nseats / 2 + 1; /* the maker and his opponents: his partner, or both teammates, sit out */
}

static int dd_sits_out(const dd_pos *p, int seat)
{
    return p->pcc && seat != p->maker && dd_team(seat) == dd_team(p->maker);
}

static int dd_next_seat(const dd_pos *p, int seat)
{
    do seat = seat + 1 == p->nseats ? 0 : seat + 1;
    while (dd_sits_out(p, seat));
    return seat;
}

/* ---- positions ---- */

int dd_pos_of(const g304_state *st, dd_pos *p, char *err, size_t errlen)
{
    if (st->phase != G304_PHASE_PLAY) {
        if (err && errlen) snprintf(err, errlen, "the hand is not in play (phase %s)", g304_phase_name(st->phase));
        return -1;
    }
    memset(p, 0, sizeof *p);
    p->nseats = (uint8_t)g304_seats(&st->rules);
    p->ntricks = (uint8_t)g304_tricks(&st->rules);
    p->maker = st->maker;
    p->trump = st->trump;
    p->pcc = st->pcc;
    p->bid250 = st->bid >= 250;
    p->trump_open = st->trump_open;
    p->ind_down = st->ind_down;
    p->exhaust = st->exhaust;
    p->indicator = st->indicator;
    p->trick_no = st->trick_no;
    const g304_trick *t = &st->tricks[st->trick_no];
    p->n = t->n;
    p->facedown = t->facedown;
    for (int i = 0; i < t->n; i++) {
        p->card[i] = t->card[i];
        p->seat[i] = t->seat[i];
    }
    p->to_act = st->to_act;
    for (int s = 0; s < p->nseats; s++) p->hand[s] = st->hand[s];
    p->points[0] = st->points[0];
    p->points[1] = st->points[1];
    p->tricks[0] = st->team_tricks[0];
    p->tricks[1] = st->team_tricks[1];
    p->caps_seat = st->caps_seat;
    if (st->caps_seat != G304_NO_SEAT) {
        p->caps_n = (uint8_t)(st->caps_n - st->caps_next);
        memcpy(p->caps_order, st->caps_order + st->caps_next, p->caps_n);
    }
    return 0;
}

static void dd_rules_of(const dd_pos *p, int seat, g304_card_rules *r)
{
    r->hand = p->hand[seat];
    r->indicator = p->ind_down && seat == p->maker ? p->indicator : CARD_NONE;
    r->is_maker = seat == p->maker;
    r->trump = p->trump;
    r->trump_open = p->trump_open;
    r->trick_no = p->trick_no;
    r->exhaust = p->exhaust;
    r->led = p->n ? p->card[0] : CARD_NONE;
}

/* The legal cards of seat when led is the card led (CARD_NONE: seat leads), by g304_check_card(), and
 * those of them that go face down. The engine decides a card of the hand by its suit alone (only the
 * indicator is special), so one card per suit is asked. The cases where g304_check_card() restricts
 * nobody but the maker holding the face-down indicator, or a maker's lead, are answered without
 * asking: a seat holding the suit led follows it face up (R-FOLLOW); another seat leads any card, and
 * one that cannot follow plays any card, face down while the trump is closed (R-FACEDOWN).
 * test_dd_cross compares the result with g304_legal() at every node it searches. */
static cardset_t dd_seat_legal(const dd_pos *p, int seat, card_t led, cardset_t *down)
{
    cardset_t hand = p->hand[seat];
    *down = 0;
    if (led != CARD_NONE) {
        cardset_t follow = hand & CARDSET_SUIT(CARD_SUIT(led));
        if (follow) return follow;
        if (!(p->ind_down && seat == p->maker)) {
            if (!p->trump_open) *down = hand;
            return hand;
        }
    } else if (seat != p->maker) {
        return hand;
    }
    g304_card_rules r;
    dd_rules_of(p, seat, &r);
    r.led = led;
    cardset_t ok = 0;
    int fd;
    for (int s = 0; s < SUIT_COUNT; s++) {
        cardset_t in_suit = r.hand & CARDSET_SUIT(s);
        if (!in_suit || g304_check_card(&r, cardset_first(in_suit), &fd, NULL) != G304_OK) continue;
        ok |= in_suit;
        if (fd) *down |= in_suit;
    }
    if (r.indicator != CARD_NONE && g304_check_card(&r, r.indicator, &fd, NULL) == G304_OK) {
        ok |= CARDSET_BIT(r.indicator);
        if (fd) *down |= CARDSET_BIT(r.indicator);
    }
    return ok;
}

/* The legal cards of the seat to act, and those of them that go face down. After a Caps call the
 * game plays the caller's order: the first of its cards that is legal. */
static cardset_t dd_legal_set(const dd_pos *p, cardset_t *down)
{
    card_t led = p->n ? p->card[0] : CARD_NONE;
    cardset_t ok = dd_seat_legal(p, p->to_act, led, down);
    if (p->caps_n && p->to_act == p->caps_seat) {
        for (int i = 0; i < p->caps_n; i++) {
            if (!(ok & CARDSET_BIT(p->caps_order[i]))) continue;
            *down &= CARDSET_BIT(p->caps_order[i]);
            return CARDSET_BIT(p->caps_order[i]);
        }
        return 0;
    }
    return ok;
}

int dd_legal(const dd_pos *p, card_t out[G304_TRICKS])
{
    cardset_t down;
    if (p->trick_no >= p->ntricks) return 0;
    int n = 0;
    for (cardset_t s = dd_legal_set(p, &down); s && n < G304_TRICKS; s &= s - 1) out[n++] = cardset_first(s);
    return n;
}

/* The cards that beat card best, the card winning a trick so far: the higher cards of its suit, and
 * every trump if it is not one (R-FOLLOW). The same rule as g304_trick_winner(), which decides the
 * tricks of dd_play(); this faster form, by the solver's tables of powers, decides the tricks the
 * search plays, orders its moves and settles tricks early, and test_dd_cross checks the results it
 * leads to. */
static cardset_t dd_beaters(const dd_solver *w, card_t best, int trump)
{
    return CARD_SUIT(best) == trump ? w->above[best] : w->above[best] | CARDSET_SUIT(trump);
}

/* The index of the card winning cards[0..n-1] so far: the strongest by the order dd_beaters() gives,
 * as the solver's table of strengths by trump and suit led holds it. */
static int dd_winning(const dd_solver *w, const card_t *cards, int n, int trump)
{
    const int8_t *str = w->strength[trump][CARD_SUIT(cards[0])];
    int best = 0;
    for (int i = 1; i < n; i++)
        if (str[cards[i]] > str[cards[best]]) best = i;
    return best;
}

/* What follows the last card of a trick: g304.c's finish_trick() (R-REVEAL, the winner and the
 * points, R-EXHAUST, R-250). w: the solver whose tables decide the winner and the points, or NULL for
 * the engine's own functions (dd_play). */
static void dd_finish_trick(const dd_solver *w, dd_pos *p)
{
    int maker = p->maker, n = p->n;
    cardset_t trumps = CARDSET_SUIT(p->trump);
    int any_trump = 0;
    for (int i = 0; i < n; i++)
        if ((p->facedown >> i & 1) && CARD_SUIT(p->card[i]) == p->trump) any_trump = 1;
    if (any_trump) { /* a face-down trump turns the trick up and opens the trump */
        if (p->ind_down) p->hand[maker] |= CARDSET_BIT(p->indicator);
        p->ind_down = 0;
        p->trump_open = 1;
    }
    int winner = p->seat[w ? dd_winning(w, p->card, n, p->trump) : g304_trick_winner(p->card, n, p->trump)], pts = 0;
    for (int i = 0; i < n; i++) pts += w ? w->pts[p->card[i]] : card_points(p->card[i]);
    p->points[dd_team(winner)] = (uint16_t)(p->points[dd_team(winner)] + pts);
    p->tricks[dd_team(winner)]++;
    if (!p->pcc && p->seat[0] == maker && CARD_SUIT(p->card[0]) == p->trump) {
        int followed = 0;
        for (int i = 1; i < n; i++) followed |= CARD_SUIT(p->card[i]) == p->trump;
        if (!followed) p->exhaust = (p->hand[maker] & trumps) != 0;
    }
    if (p->trick_no == 0 && p->bid250 && p->ind_down) {
        p->hand[maker] |= CARDSET_BIT(p->indicator);
        p->ind_down = 0;
        p->trump_open = 1;
    }
    p->trick_no++;
    p->n = 0;
    p->facedown = 0;
    p->to_act = (uint8_t)winner;
}

/* g304.c's do_play() for a legal card; fd: it goes face down; w as for dd_finish_trick(). */
static void dd_play_card(const dd_solver *w, dd_pos *p, card_t c, int fd)
{
    int seat = p->to_act;
    if (p->ind_down && seat == p->maker && c == p->indicator) {
        p->ind_down = 0;
        if (!fd) p->trump_open = 1;
    } else {
        p->hand[seat] &= ~CARDSET_BIT(c);
    }
    if (p->exhaust && seat == p->maker && !(p->hand[seat] & CARDSET_SUIT(p->trump))) p->exhaust = 0;
    if (p->caps_n && seat == p->caps_seat) {
        int k = 0;
        while (k < p->caps_n && p->caps_order[k] != c) k++;
        if (k < p->caps_n) {
            memmove(p->caps_order + k, p->caps_order + k + 1, (size_t)(p->caps_n - k - 1));
            p->caps_n--;
        }
    }
    p->card[p->n] = c;
    p->seat[p->n] = (uint8_t)seat;
    if (fd) p->facedown |= (uint8_t)(1 << p->n);
    p->n++;
    if (p->n == dd_trick_size(p))
        dd_finish_trick(w, p);
    else
        p->to_act = (uint8_t)dd_next_seat(p, seat);
    /* after a Caps call the game plays the caller's cards on his turns (g304.c's caps_autoplay) */
    if (p->caps_n && p->to_act == p->caps_seat && p->trick_no < p->ntricks) {
        cardset_t down, next = dd_legal_set(p, &down);
        if (next) dd_play_card(w, p, cardset_first(next), down != 0);
    }
}

void dd_play(dd_pos *p, card_t card)
{
    g304_card_rules r;
    int fd = 0;
    dd_rules_of(p, p->to_act, &r);
    g304_check_card(&r, card, &fd, NULL);
    dd_play_card(NULL, p, card, fd);
}

/* Cards still to be played: the hands (but those of a partner sitting out, R-PCC) and a face-down
 * indicator. */
static cardset_t dd_in_play(const dd_pos *p)
{
    cardset_t s = p->ind_down ? CARDSET_BIT(p->indicator) : 0;
    for (int i = 0; i < p->nseats; i++) s |= p->hand[i];
    for (int i = 0; p->pcc && i < p->nseats; i++)
        if (dd_sits_out(p, i)) s &= ~p->hand[i];
    return s;
}

int dd_points_left(const dd_pos *p)
{
    int pts = cardset_points(dd_in_play(p));
    for (int i = 0; i < p->n; i++) pts += card_points(p->card[i]);
    return pts;
}

/* ---- the solver ---- */

dd_solver *dd_solver_new(int table_bits)
{
    if (table_bits <= 0) table_bits = DD_DEFAULT_BITS;
    if (table_bits < 4 || table_bits > 28) return NULL;
    dd_solver *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->buckets = (uint32_t)1 << (table_bits - 2);
    w->gen = 1;
    size_t bytes = (size_t)w->buckets * DD_WAYS * sizeof *w->tt;
    w->tt = aligned_alloc(DD_WAYS * sizeof *w->tt, bytes); /* a bucket on whole cache lines */
    if (!w->tt) {
        free(w);
        return NULL;
    }
    memset(w->tt, 0, bytes);
    for (card_t c = 0; c < CARD_IDS; c++) {
        w->pts[c] = (int8_t)card_points(c);
        w->pw[c] = (int8_t)card_power(c);
    }
    for (int t = 0; t < SUIT_COUNT; t++)
        for (int l = 0; l < SUIT_COUNT; l++)
            for (card_t c = 0; c < CARD_IDS; c++) /* powers run from -1 (a six) to 7 */
                w->strength[t][l][c] = (int8_t)(1 + w->pw[c] + (CARD_SUIT(c) == t ? 32 : CARD_SUIT(c) == l ? 16 : 0));
    for (int v = 0; v <= 30; v++) { /* the point values, cheapest first */
        cardset_t cards = 0;
        for (card_t c = 0; c < CARD_IDS; c++)
            if (w->pts[c] == v) cards |= CARDSET_BIT(c);
        if (!cards) continue;
        w->worth[w->nworth] = cards;
        w->worth_pts[w->nworth++] = (int8_t)v;
    }
    for (int m = 0; m < 256; m++) w->suit_pts[m] = (int16_t)cardset_points((cardset_t)m);
    for (int r = 0; r < RANK_IDS; r++) { /* places: the six 0, the 7 1 ... the jack 8 */
        card_t c = CARD_MAKE(0, r);
        w->place_pts[w->pw[c] + 1] = w->pts[c];
        w->place_rank[w->pw[c] + 1] = (uint8_t)r;
    }
    for (int m = 0; m < 256; m++)
        for (int r = 0; r < RANK_COUNT; r++)
            if (m >> r & 1) w->by_rank[m] |= (uint8_t)(1 << w->pw[CARD_MAKE(0, r)]);
    for (int m = 0; m < 512; m++) w->count[m] = (uint8_t)__builtin_popcount((unsigned)m);
    for (int all = 0; all < 16; all++)
        for (int m = 0; m < 16; m++) {
            int out = 0, k = 0;
            for (int b = 0; b < 4; b++)
                if (all >> b & 1) out |= (m >> b & 1) << k++;
            w->squeeze[all << 4 | m] = (uint8_t)out;
        }
    for (int s = 0; s < SUIT_COUNT; s++) {
        for (int r = 0; r < RANK_IDS; r++) w->by_power[s][r] = CARD_MAKE(s, r);
        for (int i = 1; i < RANK_IDS; i++) /* insertion sort, strongest first */
            for (int j = i; j > 0 && w->pw[w->by_power[s][j]] > w->pw[w->by_power[s][j - 1]]; j--) {
                card_t t = w->by_power[s][j];
                w->by_power[s][j] = w->by_power[s][j - 1];
                w->by_power[s][j - 1] = t;
            }
        for (int i = 0; i < RANK_IDS; i++)
            for (int j = 0; j < i; j++) w->above[w->by_power[s][i]] |= CARDSET_BIT(w->by_power[s][j]);
    }
    return w;
}

void dd_solver_free(dd_solver *w)
{
    if (!w) return;
    free(w->tt);
    free(w);
}

long dd_nodes(const dd_solver *w) { return w->nodes; }

void dd_solver_clear(dd_solver *w)
{
    if (++w->gen == 0) { /* generations wrapped: old stamps could match again */
        memset(w->tt, 0, (size_t)w->buckets * DD_WAYS * sizeof *w->tt);
        w->gen = 1;
    }
}

void dd_solver_budget(dd_solver *w, long nodes) { w->budget = nodes > 0 ? nodes : 0; }

/* Starts the clock of one search from p. */
static void dd_begin(dd_solver *w, const dd_pos *p)
{
    w->total = dd_points_left(p) + p->points[0] + p->points[1];
    w->stopped = 0;
    w->stop_at = w->budget ? w->nodes + w->budget : -1;
}

/* Counts a node; 1 once the search has to stop. */
static int dd_tick(dd_solver *w)
{
    if (++w->nodes == w->stop_at) w->stopped = 1;
    return w->stopped;
}

/* ---- the transposition table ---- */

static uint32_t dd_meta(const dd_pos *p, int mode)
{
    return (uint32_t)p->to_act | (uint32_t)p->trump_open << 3 | (uint32_t)p->ind_down << 4 |
           (uint32_t)p->exhaust << 5 | (uint32_t)mode << 6 | (uint32_t)p->trump << 8 | (uint32_t)p->maker << 10 |
           (uint32_t)p->pcc << 13 | (uint32_t)p->bid250 << 14 | (uint32_t)p->nseats << 21 |
           (uint32_t)p->ntricks << 25;
}

/* The powers of a suit's cards in a set, as places of dd_key.order. */
static unsigned dd_order(const dd_solver *w, cardset_t set, int suit)
{
    return (unsigned)w->by_rank[set >> (suit * RANK_COUNT) & 255] << 1 | (unsigned)(set >> (CARD_COUNT + suit) & 1);
}

/* The places of m (within all) among those of all, packed down: the ranks of m's cards among all's. */
static unsigned dd_squeeze(const dd_solver *w, unsigned all, unsigned m)
{
    unsigned a1 = all >> 1 & 15, a2 = all >> 5 & 15, six = all & 1;
    return (m & six) | (unsigned)w->squeeze[a1 << 4 | (m >> 1 & 15)] << six |
           (unsigned)w->squeeze[a2 << 4 | (m >> 5 & 15)] << (six + w->count[a1]);
}

/* The key of a trick start by the ranks of the cards in play rather than the cards themselves. Two
 * positions with the same key play alike (legality goes by suits, holders and the indicator; tricks by
 * the order of powers), trick for trick, and differ only in the points of the cards: the table's
 * bounds of one hold for the other once shifted by dd_shift(). */
static void dd_key_of(const dd_solver *w, const dd_pos *p, int mode, dd_key *k)
{
    uint64_t plane[3] = {0, 0, 0}, rel[3] = {0, 0, 0};
    cardset_t all = 0;
    for (int s = 0; s < p->nseats; s++) {
        uint64_t v = (uint64_t)s + 1;
        plane[0] |= p->hand[s] & -(v & 1);
        plane[1] |= p->hand[s] & -(v >> 1 & 1);
        plane[2] |= p->hand[s] & -(v >> 2 & 1);
        all |= p->hand[s];
    }
    if (p->ind_down) { /* holder 7 */
        cardset_t ind = CARDSET_BIT(p->indicator);
        plane[0] |= ind, plane[1] |= ind, plane[2] |= ind;
        all |= ind;
    }
    for (int suit = 0; suit < SUIT_COUNT; suit++) {
        unsigned a = dd_order(w, all, suit);
        k->order[suit] = (uint16_t)a;
        for (int b = 0; b < 3; b++) rel[b] |= (uint64_t)dd_squeeze(w, a, dd_order(w, plane[b], suit)) << (9 * suit);
    }
    k->held = (uint32_t)all;
    k->cards[0] = rel[0] | rel[1] << 36;
    k->cards[1] = rel[1] >> 28 | rel[2] << 8;
    k->meta = dd_meta(p, mode);
    k->points = mode == DD_MODE_POINTS;
    uint64_t h = (k->cards[0] ^ (uint64_t)k->meta << 44) * 0x9E3779B97F4A7C15ull;
    h = (h ^ h >> 31 ^ k->cards[1]) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 29;
    k->bucket = (uint32_t)h & (w->buckets - 1);
}

static int dd_same_key(const dd_solver *w, const dd_entry *e, const dd_key *k)
{
    return e->gen == w->gen && e->meta == k->meta && e->cards[0] == k->cards[0] && e->cards[1] == k->cards[1];
}

/* An entry of k's key that holds for k's position as it is: written for the same cards, or a sweep. */
static int dd_same_cards(const dd_entry *e, const dd_key *k) { return e->held == k->held || !k->points; }

/* How many points team 0 may win more (*pos) or fewer (*neg), at most, in the position of k than in one
 * with the same key and the cards held in play: the i-th card of a suit in one stands for the i-th of
 * the other, so every line of play gives the same tricks to the same team with these cards swapped. */
static void dd_shift(const dd_solver *w, uint32_t held, const dd_key *k, int *pos, int *neg)
{
    *pos = *neg = 0;
    for (int suit = 0; suit < SUIT_COUNT; suit++) {
        unsigned b = k->order[suit], a = (unsigned)w->by_rank[held >> (suit * RANK_COUNT) & 255] << 1;
        a |= w->count[b] > w->count[a]; /* its six, which held does not tell */
        for (; a != b && b; a &= a - 1, b &= b - 1) {
            int d = w->place_pts[__builtin_ctz(b)] - w->place_pts[__builtin_ctz(a)];
            if (d > 0) *pos += d;
            else *neg -= d;
        }
    }
}

/* A card as the table keeps it, by its rank among its suit's cards in play, and back. */
static uint8_t dd_best_code(const dd_solver *w, const dd_key *k, card_t c)
{
    if (c == CARD_NONE) return DD_NO_BEST;
    int suit = CARD_SUIT(c);
    return (uint8_t)(suit * 16 + w->count[k->order[suit] & ((1u << (w->pw[c] + 1)) - 1)]);
}

static card_t dd_best_card(const dd_solver *w, const dd_key *k, uint8_t code)
{
    if (code == DD_NO_BEST) return CARD_NONE;
    int suit = code >> 4, place = code & 15;
    unsigned b = k->order[suit];
    for (int i = 0; i < place && b; i++) b &= b - 1;
    if (!b) return CARD_NONE;
    return CARD_MAKE(suit, w->place_rank[__builtin_ctz(b)]);
}

/* Narrows [*lo, *hi], team 0's points from the position of k, by the table: the entries of the same
 * key, each shifted by dd_shift() unless it was written for the same cards (a sweep needs no shift: it
 * counts tricks only). *hint: the move of the entry for the same cards, else of another. */
static void dd_probe(dd_solver *w, const dd_key *k, int *lo, int *hi, card_t *hint)
{
    const dd_entry *e = &w->tt[(size_t)k->bucket * DD_WAYS];
    int exact = 0;
    for (int i = 0; i < DD_WAYS; i++) {
        if (!dd_same_key(w, &e[i], k)) continue;
        int l = e[i].lo, h = e[i].hi, same = dd_same_cards(&e[i], k);
        if (!same) {
            int pos, neg;
            dd_shift(w, e[i].held, k, &pos, &neg);
            l -= neg;
            h += pos;
        }
        if (l > *lo) *lo = l;
        if (h < *hi) *hi = h;
        if (e[i].best != DD_NO_BEST && (same || !exact)) {
            *hint = dd_best_card(w, k, e[i].best);
            exact |= same;
        }
    }
}

static void dd_store(dd_solver *w, const dd_pos *p, const dd_key *k, int lo, int hi, card_t best)
{
    dd_entry *b = &w->tt[(size_t)k->bucket * DD_WAYS], *e = NULL;
    for (int i = 0; i < DD_WAYS && !e; i++)
        if (dd_same_key(w, &b[i], k) && dd_same_cards(&b[i], k)) e = &b[i];
    if (!e) {
        e = &b[0];
        for (int i = 0; i < DD_WAYS; i++) {
            if (b[i].gen != w->gen) { /* empty */
                e = &b[i];
                break;
            }
            if (b[i].left < e->left) e = &b[i];
        }
        e->gen = w->gen;
        e->cards[0] = k->cards[0];
        e->cards[1] = k->cards[1];
        e->meta = k->meta;
        e->held = k->held;
        e->lo = (int16_t)lo;
        e->hi = (int16_t)hi;
    } else {
        if (lo > e->lo) e->lo = (int16_t)lo;
        if (hi < e->hi) e->hi = (int16_t)hi;
    }
    e->best = dd_best_code(w, k, best);
    e->left = (uint8_t)(p->ntricks - p->trick_no);
}

/* ---- moves ---- */

typedef struct {
    card_t card;
    uint8_t down;
    int16_t score;
} dd_move;


/* Whether the team that wins the trick is settled once the seat to act plays c: no seat still to
 * play on the other side of the card then winning holds a legal card that beats it (R-FOLLOW's
 * winner by g304_trick_winner(); a card of the same team overtaking keeps the trick in that team).
 * win and beat: the trick's winning card so far and the cards that beat it (dd_moves). */
static int dd_settled(const dd_solver *w, const dd_pos *p, card_t c, int win, cardset_t beat, int *team)
{
    card_t led = p->n ? p->card[0] : c, best = c;
    int seat = p->to_act;
    if (p->n && !((beat >> c) & 1)) best = p->card[win], seat = p->seat[win];
    *team = dd_team(seat);
    cardset_t over = dd_beaters(w, best, p->trump);
    for (int k = p->n + 1, s = p->to_act, size = dd_trick_size(p); k < size; k++) {
        s = dd_next_seat(p, s);
        if (dd_team(s) == *team) continue;
        cardset_t down;
        if (dd_seat_legal(p, s, led, &down) & over) return 0;
    }
    return 1;
}

/* A heuristic rank for move order: likely best moves first. Exactness does not depend on it. */
static int dd_order_score(const dd_solver *w, const dd_pos *p, card_t c, cardset_t others, int win, cardset_t beat)
{
    int me = p->to_act, s = CARD_SUIT(c);
    if (p->n == 0) {
        int team;
        if (dd_settled(w, p, c, 0, 0, &team) && team == dd_team(me)) /* the lead wins the trick */
            return 300 + w->pts[c] - (s == p->trump ? 15 : 0);
        cardset_t in_suit = others & CARDSET_SUIT(s), mate = 0;
        int ruffed = 0; /* a seat of the other team can ruff the lead */
        for (int k = 1, seat = me; k < dd_trick_size(p); k++) {
            cardset_t h = p->hand[seat = dd_next_seat(p, seat)];
            if (dd_team(seat) == dd_team(me)) mate |= h;
            else ruffed |= s != p->trump && !(h & CARDSET_SUIT(s)) && (h & CARDSET_SUIT(p->trump));
        }
        for (cardset_t t = in_suit; t; t &= t - 1) {
            card_t top = (card_t)__builtin_ctzll(t);
            if (!(in_suit & w->above[top]) && (mate & CARDSET_BIT(top)) && !(w->above[top] & CARDSET_BIT(c)))
                return 250 - 2 * w->pts[c] - w->pw[c]; /* a low lead to the partner's top card */
        }
        if (s != p->trump && !(mate & CARDSET_SUIT(s)) && (mate & CARDSET_SUIT(p->trump)))
            return 240 - 2 * w->pts[c] - w->pw[c]; /* a lead the partner can ruff */
        if (!(others & w->above[c])) /* the top card left in its suit */
            return 200 + w->pts[c] + (s == p->trump && dd_team(me) == dd_team(p->maker) ? 40 : 0);
        return 100 - 2 * w->pts[c] - w->pw[c] - (s == p->trump ? 30 : 0) - (ruffed ? 40 : 0);
    }
    int partner_wins = dd_team(p->seat[win]) == dd_team(me);
    int beats = (beat >> c) & 1; /* the cards that beat the trick's winning card */
    if (partner_wins) {
        int team, sure = dd_settled(w, p, c, win, beat, &team);
        if (beats) return sure && p->n + 1 < dd_trick_size(p) ? 150 + w->pts[c] : -w->pts[c];
        return sure ? 200 + 2 * w->pts[c] - w->pw[c] : 100 - 2 * w->pts[c] - w->pw[c];
    }
    if (beats && p->n + 1 < dd_trick_size(p)) {
        int team;
        if (dd_settled(w, p, c, win, beat, &team)) return 300 + w->pts[c]; /* it takes the trick */
    }
    if (beats) return 200 + 4 * w->pw[c] + w->pts[c] - (s == p->trump && CARD_SUIT(p->card[0]) != s ? 20 : 0);
    int team;
    if (p->n + 1 < dd_trick_size(p) && !dd_settled(w, p, c, win, beat, &team)) /* the partner may still take it */
        return 100 + 2 * w->pts[c] - w->pw[c];
    return 100 - 2 * w->pts[c] - w->pw[c];
}

/* The moves worth searching, best first (hint: the table's move, tried first). Of each run of this
 * hand's legal cards with no other card in play (or on the table) between them, one card when the
 * trick's winning team is settled whichever is played (the most points if it is ours, the fewest if
 * not), else one card per distinct point value. */
static int dd_moves(const dd_solver *w, const dd_pos *p, card_t hint, dd_move *out)
{
    cardset_t down, legal = dd_legal_set(p, &down);
    int me = p->to_act, n = 0;
    if (!(legal & (legal - 1))) { /* one card: nothing to choose */
        out[0].card = cardset_first(legal);
        out[0].down = down != 0;
        return legal != 0;
    }
    card_t ind = p->ind_down && me == p->maker ? p->indicator : CARD_NONE;
    cardset_t others = dd_in_play(p) & ~p->hand[me], on_table = 0;
    for (int i = 0; i < p->n; i++) on_table |= CARDSET_BIT(p->card[i]);
    int win = p->n ? dd_winning(w, p->card, p->n, p->trump) : 0;
    cardset_t beat = p->n ? dd_beaters(w, p->card[win], p->trump) : 0;
    cardset_t keep = legal;
    if (!(p->caps_n && me == p->caps_seat)) {
        cardset_t split = others | on_table | (ind != CARD_NONE ? CARDSET_BIT(ind) : 0);
        for (int s = 0; s < SUIT_COUNT; s++) {
            cardset_t mine = legal & CARDSET_SUIT(s) & ~(ind != CARD_NONE ? CARDSET_BIT(ind) : 0);
            while (mine & (mine - 1)) { /* a run: the cards of mine with the same cards of split above */
                card_t first = (card_t)__builtin_ctzll(mine);
                cardset_t over = split & w->above[first], run = 0;
                for (cardset_t t = mine; t; t &= t - 1) {
                    card_t c = (card_t)__builtin_ctzll(t);
                    if ((split & w->above[c]) == over) run |= CARDSET_BIT(c);
                }
                mine &= ~run;
                if (!(run & (run - 1))) continue;
                int team;
                if (dd_settled(w, p, first, win, beat, &team)) {
                    int ours = team == dd_team(me);
                    card_t pick = first;
                    for (cardset_t t = run & (run - 1); t; t &= t - 1) {
                        card_t c = (card_t)__builtin_ctzll(t);
                        if (ours ? w->pts[c] > w->pts[pick] : w->pts[c] < w->pts[pick]) pick = c;
                    }
                    keep &= ~run | CARDSET_BIT(pick);
                } else {
                    int seen = 0; /* bit v: a card of v points is kept */
                    for (cardset_t t = run; t; t &= t - 1) {
                        card_t c = (card_t)__builtin_ctzll(t);
                        if (seen >> w->pts[c] & 1) keep &= ~CARDSET_BIT(c);
                        seen |= 1 << w->pts[c];
                    }
                }
            }
        }
    }
    for (cardset_t s = keep; s; s &= s - 1) {
        card_t c = (card_t)__builtin_ctzll(s);
        dd_move m = {c, (uint8_t)((down >> c) & 1), 0};
        m.score = (int16_t)(c == hint ? 1000 : dd_order_score(w, p, c, others, win, beat));
        int j = n++;
        while (j > 0 && out[j - 1].score < m.score) out[j] = out[j - 1], j--;
        out[j] = m;
    }
    return n;
}

/* ---- the searches ---- */

/* Card points of a set, by the solver's table. */
static int dd_set_points(const dd_solver *w, cardset_t s)
{
    int sum = 0;
    for (int suit = 0; suit < SUIT_COUNT; suit++) sum += w->suit_pts[s >> (suit * RANK_COUNT) & 255];
    return sum; /* the sixes (R-SIX-CARDS), after the 32 cards, are worth nothing */
}

/* Bounds of team 0's points from a trick start, from each team's sure trumps: trumps stronger than
 * every trump of the other team. A trump always counts as one in its trick (face down it turns the
 * trick up, R-REVEAL), so each of them wins the trick it is played to, and every card is played by
 * the end. A seat holding k of them wins k distinct tricks (one card of a seat per trick), and each
 * seat of the other team gives a card to each of those tricks: at least its k cheapest cards. So
 * team y wins at least the points of its sure trumps and of those cards. A side card gets no such
 * bound: it may be thrown on a trick the other team wins. */
static void dd_bounds(const dd_solver *w, const dd_pos *p, int *lo, int *hi)
{
    cardset_t trumps = CARDSET_SUIT(p->trump), held[G304_MAX_SEATS], team_trumps[2] = {0, 0};
    for (int s = 0; s < p->nseats; s++) {
        held[s] = dd_sits_out(p, s) ? 0 : p->hand[s] | (p->ind_down && s == p->maker ? CARDSET_BIT(p->indicator) : 0);
        team_trumps[dd_team(s)] |= held[s] & trumps;
    }
    int safe[2] = {0, 0}, left = w->total - p->points[0] - p->points[1]; /* a trick start: all in hand */
    for (int y = 0; y < 2; y++) {
        cardset_t sure = team_trumps[y], theirs = team_trumps[!y];
        for (int i = 0; sure && theirs && i < RANK_IDS; i++) {
            card_t c = w->by_power[p->trump][i];
            if (theirs & CARDSET_BIT(c)) {
                sure &= w->above[c];
                break;
            }
        }
        if (!sure) continue;
        int k = 0, by = 0;
        for (int s = 0; s < p->nseats; s++) {
            int ks = 0;
            if (dd_team(s) == y)
                for (cardset_t h = held[s] & sure; h; h &= h - 1) ks++;
            if (ks > k) k = ks, by = s;
        }
        safe[y] = dd_set_points(w, sure);
        for (int s = 0; s < p->nseats; s++) {
            if (s == by || !held[s]) continue;
            if (dd_team(s) == y && (held[s] & sure)) continue; /* may give a sure trump, counted already */
            int need = k; /* the k cheapest cards */
            for (int j = 0; need > 0 && j < w->nworth; j++)
                for (cardset_t t = held[s] & w->worth[j]; t && need > 0; t &= t - 1, need--) safe[y] += w->worth_pts[j];
        }
    }
    *lo = safe[0];
    *hi = left - safe[1];
}

/* The last trick, from its lead: every seat holds one card (the maker's may be the face-down
 * indicator), and it goes to the strongest card (dd_winning); nothing that happens after it counts. */
static int dd_last_trick(const dd_solver *w, const dd_pos *p)
{
    card_t cards[G304_MAX_SEATS];
    int seat = p->to_act, size = dd_trick_size(p), pts = 0;
    uint8_t seats[G304_MAX_SEATS];
    for (int k = 0; k < size; k++, seat = dd_next_seat(p, seat)) {
        cardset_t held = p->hand[seat];
        cards[k] = held ? cardset_first(held) : p->indicator;
        seats[k] = (uint8_t)seat;
        pts += w->pts[cards[k]];
    }
    return dd_team(seats[dd_winning(w, cards, size, p->trump)]) == 0 ? pts : 0;
}

/* The last two tricks from the lead of the first, exactly, without the search: at most two cards a
 * seat, so every line is tried (under alpha-beta, which keeps the value exact). The legal cards of a
 * seat that follows depend only on the card led (nothing a seat plays changes another's choice within
 * the trick: the trump opens and the indicator comes up only once the trick is over), and the last
 * trick is every seat's remaining card, played in the same turn from the first trick's winner. */
typedef struct {
    int size, trump;
    uint8_t seat[G304_MAX_SEATS];    /* by place in the first trick: the seat */
    cardset_t held[G304_MAX_SEATS];  /* by place: the seat's two cards, a face-down indicator included */
    cardset_t legal[G304_MAX_SEATS]; /* by place: the legal cards */
    card_t card[G304_MAX_SEATS];     /* by place: the card played */
} dd_two;

static int dd_two_value(const dd_solver *w, const dd_two *t)
{
    card_t last[G304_MAX_SEATS];
    int size = t->size, first = dd_winning(w, t->card, size, t->trump), pts = 0, rest = 0;
    for (int k = 0; k < size; k++) {
        int j = first + k < size ? first + k : first + k - size;
        last[k] = (card_t)__builtin_ctzll(t->held[j] & ~CARDSET_BIT(t->card[j]));
        pts += w->pts[t->card[k]];
        rest += w->pts[last[k]];
    }
    int wl = first + dd_winning(w, last, size, t->trump);
    if (wl >= size) wl -= size;
    return (dd_team(t->seat[first]) == 0 ? pts : 0) + (dd_team(t->seat[wl]) == 0 ? rest : 0);
}

/* Best play of the seats from place k of the first trick on. */
static int dd_two_play(const dd_solver *w, const dd_pos *p, dd_two *t, int k, int alpha, int beta)
{
    if (k == t->size) return dd_two_value(w, t);
    int maxi = dd_team(t->seat[k]) == 0, best = maxi ? -DD_INF : DD_INF;
    for (cardset_t s = t->legal[k]; s; s &= s - 1) {
        t->card[k] = (card_t)__builtin_ctzll(s);
        if (k == 0) {
            cardset_t down;
            for (int j = 1; j < t->size; j++) t->legal[j] = dd_seat_legal(p, t->seat[j], t->card[0], &down);
        }
        int v = dd_two_play(w, p, t, k + 1, alpha, beta);
        if (maxi ? v > best : v < best) best = v;
        if (maxi && best > alpha) alpha = best;
        if (!maxi && best < beta) beta = best;
        if (alpha >= beta) break;
    }
    return best;
}

static int dd_two_tricks(const dd_solver *w, const dd_pos *p)
{
    dd_two t;
    cardset_t down;
    t.size = dd_trick_size(p);
    t.trump = p->trump;
    for (int k = 0, seat = p->to_act; k < t.size; k++, seat = dd_next_seat(p, seat)) {
        t.seat[k] = (uint8_t)seat;
        t.held[k] = p->hand[seat] | (p->ind_down && seat == p->maker ? CARDSET_BIT(p->indicator) : 0);
    }
    t.legal[0] = dd_legal_set(p, &down);
    return dd_two_play(w, p, &t, 0, -DD_INF, DD_INF);
}

static int dd_search(dd_solver *w, const dd_pos *p, int alpha, int beta)
{
    if (dd_tick(w)) return alpha; /* any value: the search is abandoned and stores nothing */
    if (p->trick_no >= p->ntricks) return 0;
    int start = p->n == 0 && !p->caps_n;
    dd_key key;
    card_t hint = CARD_NONE;
    int a0 = alpha, b0 = beta;
    if (start) {
        if (p->trick_no == p->ntricks - 1) return dd_last_trick(w, p);
        dd_key_of(w, p, DD_MODE_POINTS, &key);
        __builtin_prefetch(&w->tt[(size_t)key.bucket * DD_WAYS]); /* the bounds below hide the memory latency */
        __builtin_prefetch(&w->tt[(size_t)key.bucket * DD_WAYS + DD_WAYS - 1]);
        int lo, hi;
        dd_bounds(w, p, &lo, &hi);
        if (lo >= beta || lo == hi) return lo;
        if (hi <= alpha) return hi;
        dd_probe(w, &key, &lo, &hi, &hint);
        if (lo >= beta || lo == hi) return lo;
        if (hi <= alpha) return hi;
        if (p->trick_no == p->ntricks - 2) {
            int v = dd_two_tricks(w, p);
            dd_store(w, p, &key, v, v, CARD_NONE);
            return v;
        }
        if (lo > alpha) alpha = lo;
        if (hi < beta) beta = hi;
        a0 = alpha, b0 = beta;
    }
    dd_move mv[G304_TRICKS + 1];
    int nm = dd_moves(w, p, hint, mv);
    int maxi = dd_team(p->to_act) == 0;
    int best = maxi ? -DD_INF : DD_INF;
    card_t best_card = CARD_NONE;
    for (int i = 0; i < nm; i++) {
        dd_pos y = *p;
        dd_play_card(w, &y, mv[i].card, mv[i].down);
        int gain = y.points[0] - p->points[0];
        int v = gain + dd_search(w, &y, alpha - gain, beta - gain);
        if (maxi ? v > best : v < best) best = v, best_card = mv[i].card;
        if (maxi && best > alpha) alpha = best;
        if (!maxi && best < beta) beta = best;
        if (alpha >= beta) break;
    }
    if (start && !w->stopped) {
        int lo = best >= b0 ? best : -DD_INF, hi = best <= a0 ? best : DD_INF;
        if (best > a0 && best < b0) lo = hi = best;
        dd_store(w, p, &key, lo, hi, best_card);
    }
    return best;
}

/* The points team 0 wins when every seat plays the move dd_moves() ranks first (no search: a few
 * dozen plays). */
static int dd_line(const dd_solver *w, const dd_pos *p)
{
    dd_pos y = *p;
    dd_move mv[G304_TRICKS + 1];
    while (y.trick_no < y.ntricks && dd_moves(w, &y, CARD_NONE, mv)) dd_play_card(w, &y, mv[0].card, mv[0].down);
    return y.points[0] - p->points[0];
}

/* A first guess of the value: a line of play in which every seat, in turn, plays the move whose
 * dd_line() is best for its team (a thousand or so plays, nothing next to a search). Closer than
 * dd_line() alone (on tests/bench/bench_dd, 19 points off the value at the median against 23), so
 * dd_value() needs fewer windows. */
static int dd_guess(const dd_solver *w, const dd_pos *p)
{
    dd_pos y = *p;
    dd_move mv[G304_TRICKS + 1];
    int n;
    while (y.trick_no < y.ntricks && (n = dd_moves(w, &y, CARD_NONE, mv)) > 0) {
        int maxi = dd_team(y.to_act) == 0, best = 0, best_v = 0;
        for (int i = 0; i < n && n > 1; i++) {
            dd_pos z = y;
            dd_play_card(w, &z, mv[i].card, mv[i].down);
            int v = z.points[0] + dd_line(w, &z);
            if (i == 0 || (maxi ? v > best_v : v < best_v)) best_v = v, best = i;
        }
        dd_play_card(w, &y, mv[best].card, mv[best].down);
    }
    return y.points[0] - p->points[0];
}

/* Null-window searches close in on the value: they prune far more than one search with the whole
 * window, and the table carries their bounds from one to the next. The first asks about the guess;
 * while the answers keep going the same way the next asks 16, 32, 64 ... points further on, then the
 * range left is halved. Fail-soft values help little (in a points game they fall next to the window),
 * and the searches near the value cost the most, so a guess within a few dozen points saves the
 * cheap far ones and keeps the count of near ones. */
int dd_value(dd_solver *w, const dd_pos *p)
{
    int lower = 0, upper = dd_points_left(p), beta = dd_guess(w, p), step = 16, dir = 0;
    if (beta <= lower) beta = lower + 1; /* the guess as a window inside the range */
    if (beta > upper) beta = upper;
    dd_begin(w, p);
    while (lower < upper && !w->stopped) {
        int g = dd_search(w, p, beta - 1, beta), d = g < beta ? -1 : 1;
        if (g < beta) upper = g;
        else lower = g;
        if (dir == 0 || d == dir) { /* still going one way: a longer step */
            dir = d;
            beta = d > 0 ? lower + step : upper + 1 - step;
            step *= 2;
        } else {
            dir = 2; /* bracketed: halve from now on */
        }
        if (dir == 2 || beta <= lower || beta > upper) beta = (lower + upper + 1) / 2, dir = 2;
    }
    return w->stopped ? DD_UNKNOWN : lower;
}

int dd_reach(dd_solver *w, const dd_pos *p, int team, int target)
{
    if (target <= 0) return 1;
    dd_begin(w, p);
    int r;
    if (team == 0) {
        r = dd_search(w, p, target - 1, target) >= target;
    } else {
        int cap = dd_points_left(p) - target; /* team 1 reaches target iff team 0 gets at most cap */
        r = cap >= 0 && dd_search(w, p, cap, cap + 1) <= cap;
    }
    return w->stopped ? DD_UNKNOWN : r;
}

static int dd_sweep_search(dd_solver *w, const dd_pos *p, int team)
{
    if (dd_tick(w)) return 0;
    if (p->trick_no >= p->ntricks) return 1;
    int start = p->n == 0 && !p->caps_n;
    dd_key key;
    card_t hint = CARD_NONE;
    if (start) {
        dd_key_of(w, p, DD_MODE_SWEEP + team, &key);
        int lo = -DD_INF, hi = DD_INF;
        dd_probe(w, &key, &lo, &hi, &hint);
        if (lo > -DD_INF) return lo;
    }
    dd_move mv[G304_TRICKS + 1];
    int nm = dd_moves(w, p, hint, mv);
    int ours = dd_team(p->to_act) == team, result = !ours;
    card_t best_card = CARD_NONE;
    for (int i = 0; i < nm; i++) {
        dd_pos y = *p;
        dd_play_card(w, &y, mv[i].card, mv[i].down);
        int r = y.tricks[!team] == p->tricks[!team] && dd_sweep_search(w, &y, team);
        if (r == ours) {
            result = r, best_card = mv[i].card;
            break;
        }
    }
    if (start && !w->stopped) dd_store(w, p, &key, result, result, best_card);
    return result;
}

int dd_sweep(dd_solver *w, const dd_pos *p, int team)
{
    dd_begin(w, p);
    int r = dd_sweep_search(w, p, team);
    return w->stopped ? DD_UNKNOWN : r;
}
