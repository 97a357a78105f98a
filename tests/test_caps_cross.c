/* test_caps_cross.c — caps_check() against a brute-force oracle on random positions with few
 * cards left (R-CAPS-CALL).
 *
 * The oracle is written from the rules text and the engine's public interface only, not from
 * the solver:
 *
 *  - Hands are played with g304_start()/g304_apply() from fixed seeds (deal_shuffle() seeded by a
 *    splitmix64 stream), with random options, closed and open games, final bids of 160..240 and
 *    250..300 (never Partner Close Caps). Play is biased so that one team often wins every trick:
 *    a "strong" team gets better cards and plays its strongest legal card, the other team its
 *    weakest (with some random moves). Each hand stops at a random point of trick 6..8 (index
 *    5..7, sometimes mid-trick), before any Caps call.
 *
 *  - For each seat s whose team has won every finished trick, a *world* is a complete deal such
 *    that replaying the recorded actions, with each card s never saw replaced by the world's card
 *    at the same place of the deal, is accepted by g304_apply() at every step and gives s exactly
 *    the same events (g304_event_visible(), compared field by field). The cards s saw are its own
 *    dealt cards and every card named in an event visible to it. The unseen cards are distributed
 *    over the unseen places (each other seat's cards still in hand, each face-down card s has not
 *    seen, a face-down indicator s has not seen) in every way; a few cheap filters (a seat that
 *    showed out of a suit holds none of it later) only skip deals the replay would refuse, and are
 *    themselves checked against the unfiltered enumeration whenever that is small.
 *
 *  - Caps is certain for s iff some order of its remaining cards wins every remaining trick for
 *    its team in every world against every legal play of the other three (all their cards are
 *    tried with g304_apply() on copies, partner included). Each order is played as the rules
 *    play it (R-CAPS-CALL): s calls Caps with it (g304_apply() of the call, in every world) and
 *    the game plays it; every card of it must be legal in its turn (no caps_broken). For a trump
 *    maker whose indicator is down this differs from playing the same cards without a call (the
 *    call shows the indicator: the trump is open and the indicator an ordinary card); that
 *    reading is also computed and counted, not compared. Results at the start of a trick are
 *    shared between worlds (a memo keyed by what decides the rest of the hand), and the memo is
 *    checked against the plain search on a sample of worlds.
 *
 * Six-player 304 (R-SIX-PLAY) gets the same check (caps_cross.six_players): six hands of six, the
 * strong team three seats, the hand stopped in trick 5 or 6 (index 4..5) so that the worlds stay
 * countable, "the other three" being the other five.
 *
 * caps_check() must agree (CAPS_UNKNOWN is tolerated up to 1% of calls), with its quick
 * refutation on and off, its order must win, and in the fixed-order mode every order must be
 * judged certain exactly when it wins. A mismatch prints the seed, the options, the deal, the
 * actions, the position, the seat, both answers and the winning orders.
 *
 * Environment: CARDROOM_CROSS_SEED (run seed, default 304), CARDROOM_CROSS_CHECKS (checks to
 * reach, default 1500), CARDROOM_CROSS_CERTAIN (certain checks to reach, default 300),
 * CARDROOM_CROSS_CHECKS6 and CARDROOM_CROSS_CERTAIN6 (the same for six players, defaults 300 and
 * 60), CARDROOM_CROSS_HAND with CARDROOM_CROSS_PLAYERS (check only the hand with this seed, as
 * printed with a mismatch). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "caps.h"
#include "cards.h"
#include "deal.h"
#include "g304.h"
#include "test_hands.h"

#define MAX_ACTIONS 160
#define MAX_SEEN_EVENTS 512
#define WORLD_CAP 150000L     /* candidate deals per seat before the seat is skipped */
#define NODE_CAP 3000000L     /* steps of the enumeration before the seat is skipped */
#define VERIFY_CAP 60000.0    /* unfiltered deals per seat small enough to check the filters */
#define MAX_HANDS 200000
#define MAX_PRINTED 12

/* ---- PRNG: splitmix64 ---- */
typedef struct {
    uint64_t s;
} xrng;

static uint64_t rng_u64(xrng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(xrng *r, uint32_t n) { return (uint32_t)(((rng_u64(r) >> 32) * (uint64_t)n) >> 32); }

static int rng_chance(xrng *r, uint32_t percent) { return rng_below(r, 100) < percent; }

static int team_of(int seat) { return seat & 1; }

/* ---- a recorded hand ---- */
typedef struct {
    uint8_t seat;
    g304_action a;
} rec_action;

typedef struct {
    uint64_t seed; /* the hand's seed: everything below follows from it (with the players) */
    g304_rules rules;
    int seats, tricks, pack; /* 4 8 32, or 6 6 36 */
    int dealer;
    int strong; /* the favoured team */
    card_t hands[G304_MAX_SEATS][G304_TRICKS];
    int nact;
    rec_action act[MAX_ACTIONS];
    g304_state st; /* the position */
} position;

static const int16_t start_tokens[2] = {11, 11};

/* ---- printing ---- */
static void print_cards(FILE *f, const card_t *c, int n)
{
    for (int i = 0; i < n; i++) fprintf(f, "%s%s", i ? " " : "", card_str(c[i]));
}

static void print_set(FILE *f, cardset_t s)
{
    int first = 1;
    for (int c = 0; c < CARD_IDS; c++)
        if (s & CARDSET_BIT(c)) {
            fprintf(f, "%s%s", first ? "" : " ", card_str((card_t)c));
            first = 0;
        }
}

static void print_position(FILE *f, const position *p)
{
    char buf[32];
    fprintf(f, "  hand seed %#" PRIx64 ", dealer %d, options:", p->seed, p->dealer);
    for (int i = 0; g304_option_names[i]; i++) {
        const char *v = g304_rules_get(&p->rules, g304_option_names[i], buf, sizeof buf);
        fprintf(f, " %s=%s", g304_option_names[i], v ? v : "?");
    }
    fprintf(f, " players=%d", p->seats);
    fprintf(f, "\n  deal (by seat, first batch first):\n");
    for (int s = 0; s < p->seats; s++) {
        fprintf(f, "    seat %d: ", s);
        print_cards(f, p->hands[s], 4);
        fprintf(f, " | ");
        print_cards(f, p->hands[s] + 4, p->tricks - 4);
        fprintf(f, "\n");
    }
    fprintf(f, "  actions:");
    for (int i = 0; i < p->nact; i++) {
        const g304_action *a = &p->act[i].a;
        fprintf(f, "%s %d:%s", i % 8 ? "," : "\n   ", p->act[i].seat, g304_do_name(a->kind));
        if (a->kind == G304_DO_BID) fprintf(f, " %u", a->amount);
        if (a->kind == G304_DO_TRUMP || a->kind == G304_DO_PLAY) fprintf(f, " %s", card_str(a->card));
    }
    const g304_state *st = &p->st;
    fprintf(f, "\n  now: maker %d, bid %u, trump %s%s, indicator %s%s, trick index %d with %d cards, "
               "tricks per team %d/%d, to act %d\n",
            st->maker, st->bid, suit_name(st->trump), st->trump_open ? " (open)" : " (closed)",
            card_str(st->indicator), st->ind_down ? " (face down)" : "", st->trick_no, st->tricks[st->trick_no].n,
            st->team_tricks[0], st->team_tricks[1], st->to_act);
    for (int s = 0; s < p->seats; s++) {
        fprintf(f, "    seat %d holds: ", s);
        print_set(f, g304_cards_of(st, s));
        fprintf(f, "\n");
    }
}

/* ---- generation ---- */

/* How good a card is to win with (strong side) or to throw (weak side, lowest first). */
static int play_score(const g304_state *st, card_t c)
{
    const g304_trick *t = &st->tricks[st->trick_no];
    int led = t->n ? CARD_SUIT(t->card[0]) : -1;
    if (CARD_SUIT(c) == st->trump) return 100 + card_power(c);
    if (CARD_SUIT(c) == led) return 50 + card_power(c);
    return card_power(c);
}

static int try_apply(g304_state *st, position *p, int seat, const g304_action *a)
{
    if (g304_apply(st, seat, a, NULL, NULL) != G304_OK) return 0;
    if (p->nact >= MAX_ACTIONS) return 0;
    p->act[p->nact].seat = (uint8_t)seat;
    p->act[p->nact].a = *a;
    p->nact++;
    return 1;
}

/* Plays one random hand of `players` up to a stopping point. Returns 1 with a usable position. */
static int gen_position(uint64_t seed, int players, position *p)
{
    xrng r = {seed};
    memset(p, 0, sizeof *p);
    p->seed = seed;
    g304_rules_default(&p->rules);
    cr_assert_eq(g304_rules_set_players(&p->rules, players, NULL), 0);
    p->seats = g304_seats(&p->rules);
    p->tricks = g304_tricks(&p->rules);
    p->pack = g304_deck_size(&p->rules);
    int mates = p->seats / 2, team_cards = mates * p->tricks;
    p->rules.cut = 0; /* the deal must be the deck as given */
    p->rules.bidding = rng_chance(&r, 50) ? G304_BIDDING_SINGLE : G304_BIDDING_STANDARD;
    p->rules.bid8_opener = rng_chance(&r, 50) ? G304_OPENER_DEALER_RIGHT : G304_OPENER_MAKER;
    p->rules.spoilt = rng_chance(&r, 30) ? G304_SPOILT_AUTO : G304_SPOILT_MANUAL;
    p->rules.caps = rng_chance(&r, 50) ? G304_CAPS_STRICT : G304_CAPS_GRACE;
    p->rules.step_above_200 = rng_chance(&r, 25) ? 5 : 10;
    p->dealer = (int)rng_below(&r, (uint32_t)p->seats);
    p->strong = (int)rng_below(&r, 2);

    /* the bidding plan */
    int high = rng_chance(&r, 50);
    int maker4 = rng_chance(&r, 60) ? (p->strong + 2 * (int)rng_below(&r, (uint32_t)mates))
                                    : (int)rng_below(&r, (uint32_t)p->seats);
    int a4 = 160 + 10 * (int)rng_below(&r, 9);
    int bid8_seat = -1, a8 = 0;
    if (high) {
        if (rng_chance(&r, 40))
            a4 = 250 + 10 * (int)rng_below(&r, 6);
        else {
            bid8_seat = rng_chance(&r, 60) ? (p->strong + 2 * (int)rng_below(&r, (uint32_t)mates))
                                           : (int)rng_below(&r, (uint32_t)p->seats);
            a8 = 250 + (p->rules.step_above_200 == 5 ? 5 * (int)rng_below(&r, 11) : 10 * (int)rng_below(&r, 6));
        }
    }

    /* the deal: a shuffle, then (mostly) a bias for the strong team */
    uint8_t dseed[DEAL_SEED_BYTES];
    for (int i = 0; i < DEAL_SEED_BYTES; i++) dseed[i] = (uint8_t)rng_u64(&r);
    card_t deck[CARD_IDS];
    deal_shuffle(dseed, deck, p->pack);
    int bias = (int)rng_below(&r, 100);
    int want_suit = -1; /* the trump suit the maker picks when he can */
    if (bias < 80) {
        /* the strong team gets the 16 (18) cards with the best (noisy) power; in trump mode one
           suit counts far more, mostly goes to the strong team, and the maker will choose it */
        int key[CARD_IDS];
        int noise = 2 + (int)rng_below(&r, 6);
        if (bias < 35) {
            want_suit = (int)rng_below(&r, 4);
            maker4 = p->strong + 2 * (int)rng_below(&r, (uint32_t)mates);
            if (bid8_seat >= 0) bid8_seat = maker4;
        }
        for (int c = 0; c < p->pack; c++) {
            key[c] = card_power((card_t)c) * 4 + (int)rng_below(&r, (uint32_t)noise * 4);
            if (CARD_SUIT(c) == want_suit) key[c] += 24 + (int)rng_below(&r, 12);
        }
        card_t order[CARD_IDS];
        memcpy(order, deck, (size_t)p->pack);
        for (int i = 1; i < p->pack; i++) /* stable insertion sort by key, best first */
            for (int j = i; j > 0 && key[order[j]] > key[order[j - 1]]; j--) {
                card_t t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        /* the best cards to the strong seats' places, the rest to the others, places shuffled
           (a place is seat * 8 + index in the hand) */
        int places[2][18], np[2] = {0, 0};
        for (int s = 0; s < p->seats; s++)
            for (int i = 0; i < p->tricks; i++) {
                int tm = team_of(s) == p->strong ? 0 : 1;
                places[tm][np[tm]++] = s * 8 + i;
            }
        for (int tm = 0; tm < 2; tm++)
            for (int i = team_cards - 1; i > 0; i--) {
                int j = (int)rng_below(&r, (uint32_t)i + 1), t = places[tm][i];
                places[tm][i] = places[tm][j];
                places[tm][j] = t;
            }
        for (int i = 0; i < team_cards; i++) {
            p->hands[places[0][i] / 8][places[0][i] % 8] = order[i];
            p->hands[places[1][i] / 8][places[1][i] % 8] = order[team_cards + i];
        }
        if (want_suit >= 0) { /* a card of that suit into the maker's first batch */
            int has = 0;
            for (int i = 0; i < 4; i++) has |= CARD_SUIT(p->hands[maker4][i]) == want_suit;
            for (int i = 4; i < p->tricks && !has; i++)
                if (CARD_SUIT(p->hands[maker4][i]) == want_suit) {
                    int j = (int)rng_below(&r, 4);
                    card_t t = p->hands[maker4][i];
                    p->hands[maker4][i] = p->hands[maker4][j];
                    p->hands[maker4][j] = t;
                    has = 1;
                }
        }
    } else {
        for (int s = 0; s < p->seats; s++)
            for (int i = 0; i < p->tricks; i++) p->hands[s][i] = deck[s * p->tricks + i];
    }
    card_t realdeck[CARD_IDS];
    if (g304_deck_from_hands_of(&p->rules, (const card_t(*)[G304_TRICKS])p->hands, p->dealer, realdeck) != 0) return 0;

    int want_open = rng_chance(&r, 40);
    int keep_closed = rng_chance(&r, 30); /* nobody cuts by choice: face-down throw-aways instead */
    /* four players: trick 6, 7 or 8; six players: trick 5 or 6 (two cards or one left) */
    int stop_trick = p->seats == 4 ? 5 + (rng_chance(&r, 60) ? 0 : rng_chance(&r, 70) ? 1 : 2)
                                   : 4 + (rng_chance(&r, 40) ? 0 : 1);
    int stop_cards = rng_chance(&r, 40) ? 0 : (int)rng_below(&r, (uint32_t)p->seats);
    int random_pct = 10 + (int)rng_below(&r, 25);

    g304_state *st = &p->st;
    g304_start(st, &p->rules, p->dealer, start_tokens, realdeck, NULL);
    int open_tried = 0, bid4_done = 0, bid8_done = 0;
    for (int guard = 0; guard < 400; guard++) {
        if (st->phase == G304_PHASE_DONE) return 0;
        if (st->pcc) return 0;
        if (st->phase == G304_PHASE_PLAY) {
            if (st->trick_no == stop_trick && st->tricks[stop_trick].n == stop_cards) return 1;
            if (st->trick_no > stop_trick) return 0;
            if (!open_tried) {
                open_tried = 1;
                if (want_open) {
                    g304_action a = test_action(G304_DO_OPEN, 0, 0);
                    try_apply(st, p, st->maker, &a);
                }
                continue;
            }
        }
        int seat = st->to_act;
        if (seat == G304_NO_SEAT) return 0;
        g304_action a;
        switch (st->phase) {
        case G304_PHASE_BID4:
            if (seat == maker4 && !bid4_done) {
                bid4_done = 1;
                a = test_action(G304_DO_BID, 0, a4);
                if (try_apply(st, p, seat, &a)) continue;
            }
            a = test_action(G304_DO_PASS, 0, 0);
            if (!try_apply(st, p, seat, &a)) return 0;
            break;
        case G304_PHASE_BID8:
            if (seat == bid8_seat && !bid8_done) {
                bid8_done = 1;
                a = test_action(G304_DO_BID, 0, a8);
                if (try_apply(st, p, seat, &a)) continue;
            }
            a = test_action(G304_DO_PASS, 0, 0);
            if (!try_apply(st, p, seat, &a)) return 0;
            break;
        case G304_PHASE_TRUMP: {
            g304_action legal[G304_MAX_LEGAL];
            int n = g304_legal(st, seat, legal), k = 0;
            card_t cand[G304_MAX_LEGAL];
            for (int i = 0; i < n; i++)
                if (legal[i].kind == G304_DO_TRUMP) cand[k++] = legal[i].card;
            if (!k) return 0;
            card_t pick = cand[rng_below(&r, (uint32_t)k)];
            int wanted = 0;
            if (want_suit >= 0 && rng_chance(&r, 90)) {
                for (int i = 0; i < k && !wanted; i++)
                    if (CARD_SUIT(cand[i]) == want_suit) pick = cand[i], wanted = 1;
            }
            if (!wanted && team_of(seat) == p->strong && rng_chance(&r, 70)) {
                /* the suit of the maker's hand with the most power */
                int best = -1, bestv = -1;
                for (int i = 0; i < k; i++) {
                    int v = 0;
                    cardset_t h = st->hand[seat] & CARDSET_SUIT(CARD_SUIT(cand[i]));
                    for (int c = 0; c < CARD_IDS; c++)
                        if (h & CARDSET_BIT(c)) v += 2 + card_power((card_t)c);
                    if (v > bestv) bestv = v, best = i;
                }
                pick = cand[best];
            }
            a = test_action(G304_DO_TRUMP, pick, 0);
            if (!try_apply(st, p, seat, &a)) return 0;
            break;
        }
        case G304_PHASE_PLAY: {
            g304_action legal[G304_MAX_LEGAL];
            int n = g304_legal(st, seat, legal), k = 0;
            card_t cand[G304_MAX_LEGAL];
            for (int i = 0; i < n; i++)
                if (legal[i].kind == G304_DO_PLAY) cand[k++] = legal[i].card;
            if (!k) return 0;
            card_t pick = cand[rng_below(&r, (uint32_t)k)];
            if (!rng_chance(&r, (uint32_t)random_pct)) {
                int strong = team_of(seat) == p->strong;
                for (int i = 0; i < k; i++) {
                    int v = play_score(st, cand[i]), w = play_score(st, pick);
                    if (keep_closed && !st->trump_open && strong) { /* a trump only if nothing else */
                        v -= CARD_SUIT(cand[i]) == st->trump ? 200 : 0;
                        w -= CARD_SUIT(pick) == st->trump ? 200 : 0;
                    }
                    if (strong ? v > w : v < w) pick = cand[i];
                }
            }
            a = test_action(G304_DO_PLAY, pick, 0);
            if (!try_apply(st, p, seat, &a)) return 0;
            break;
        }
        default:
            return 0;
        }
    }
    return 0;
}

/* ---- the oracle: worlds ---- */

static int event_equal(const g304_event *a, const g304_event *b)
{
    if (a->kind != b->kind || a->vis != b->vis || a->to != b->to || a->seat != b->seat || a->other != b->other ||
        a->flag != b->flag || a->amount != b->amount || a->n != b->n)
        return 0;
    for (int i = 0; i < G304_TRICKS; i++)
        if (a->cards[i] != b->cards[i]) return 0;
    return 1;
}

typedef struct {
    g304_event ev[MAX_SEEN_EVENTS];
    int n;
} seen_events;

/* Replays the hand with every card c replaced by sigma[c]. With ref == NULL, records the events
 * visible to seat s into rec; otherwise compares them with ref. Returns 1 if every action was
 * accepted (and the events agree), with the final state in out. */
static int replay(const position *p, const card_t sigma[CARD_IDS], int s, const seen_events *ref,
                  seen_events *rec, g304_state *out)
{
    card_t h[G304_MAX_SEATS][G304_TRICKS], deck[CARD_IDS];
    for (int q = 0; q < p->seats; q++)
        for (int i = 0; i < p->tricks; i++) h[q][i] = sigma[p->hands[q][i]];
    if (g304_deck_from_hands_of(&p->rules, (const card_t(*)[G304_TRICKS])h, p->dealer, deck) != 0) return 0;
    static g304_events ev;
    int at = 0;
    if (rec) rec->n = 0;
    ev.n = 0;
    g304_start(out, &p->rules, p->dealer, start_tokens, deck, &ev);
    for (int k = -1; k < p->nact; k++) {
        if (k >= 0) {
            g304_action a = p->act[k].a;
            if (a.kind == G304_DO_PLAY || a.kind == G304_DO_TRUMP) a.card = sigma[a.card];
            ev.n = 0;
            if (g304_apply(out, p->act[k].seat, &a, &ev, NULL) != G304_OK) return 0;
        }
        for (int i = 0; i < ev.n; i++) {
            if (!g304_event_visible(&ev.ev[i], s)) continue;
            if (rec) {
                if (rec->n >= MAX_SEEN_EVENTS) return 0;
                rec->ev[rec->n++] = ev.ev[i];
            } else {
                if (at >= ref->n || !event_equal(&ev.ev[i], &ref->ev[at])) return 0;
                at++;
            }
        }
    }
    return rec ? 1 : at == ref->n;
}

/* Cards named in the events: what the seat has seen. */
static cardset_t named_cards(const seen_events *e)
{
    cardset_t k = 0;
    for (int i = 0; i < e->n; i++) {
        const g304_event *x = &e->ev[i];
        for (int j = 0; j < x->n && j < G304_TRICKS; j++)
            if (x->cards[j] < CARD_IDS) k |= CARDSET_BIT(x->cards[j]);
        if (x->kind == G304_EV_REVEAL && x->other < CARD_IDS) k |= CARDSET_BIT(x->other);
    }
    return k;
}

/* The places of unseen cards: a group of cards that one world assignment fills. */
enum { GR_HAND, GR_PLAY, GR_IND };
typedef struct {
    int kind, seat;
    cardset_t real;    /* the real cards there */
    int size;
    cardset_t allowed; /* filter: cards that may go there without the replay refusing */
} group;

typedef struct {
    const position *p;
    int s;
    const seen_events *ref;
    group g[CAPS_MAX_HIDDEN + G304_MAX_SEATS + 2];
    int ng;
    card_t sigma[CARD_IDS];
    long candidates, valid, nodes;
    int count_only; /* only count the candidate deals */
    int aborted;
    int filtered;
    /* the orders of s's cards and which still win in every world so far */
    int npi, ncards;
    card_t pi[6][G304_TRICKS];
    int alive[6];       /* the order wins after a Caps call with it, in every world so far */
    int alive_plain[6]; /* the order wins played without a call (maker with the indicator down only) */
    long call_refused;
    int search; /* run the game-tree check on valid worlds */
    long memo_checked;
} oracle;

/* A memo of results at trick boundaries, shared by all worlds of one check: from the start of a
 * trick (after the first) the rest of the hand depends only on the hands, the indicator and
 * whether it is down, the trump and whether it is open, R-EXHAUST, the trick and its leader
 * (R-FOLLOW, R-FACEDOWN, R-IND-PLAY, R-MAKER-VOID, R-REVEAL), and on the cards s still has to
 * play. The memo is itself checked against the plain search on the first checks. */
#define MEMO_BITS 20
typedef struct {
    uint64_t k[3];
    uint32_t gen;
    uint8_t result;
} memo_entry;
static memo_entry *memo;
static uint32_t memo_gen = 1;
static long memo_used;
static int memo_on = 1;

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static memo_entry *memo_slot(const g304_state *st, const card_t *pi, int k, int n, int *found)
{
    /* who holds each card (3 bits a card: 0 nobody, else seat + 1), cards 0..20 and 21..35 */
    uint64_t key[3] = {0, 0, 0};
    for (int q = 0; q < G304_MAX_SEATS; q++)
        for (cardset_t h = st->hand[q]; h; h &= h - 1) {
            int c = cardset_first(h);
            key[c / 21] |= (uint64_t)(q + 1) << (3 * (c % 21));
        }
    uint64_t x = 0;
    if (st->caps_seat != G304_NO_SEAT) { /* after the call: the cards the game still plays for s */
        pi = st->caps_order;
        k = st->caps_next;
        n = st->caps_n;
        x = 1;
    }
    for (int i = k; i < n; i++) x = x << 6 | (uint64_t)(pi[i] + 1);
    x = x << 8 | st->indicator;
    x = x << 1 | (st->ind_down & 1);
    x = x << 2 | (st->trump & 3);
    x = x << 1 | (st->trump_open & 1);
    x = x << 1 | (st->exhaust & 1);
    x = x << 1 | (st->declared_open & 1);
    x = x << 4 | st->trick_no;
    x = x << 3 | (st->tricks[st->trick_no].leader & 7);
    x = x << 3 | (st->to_act & 7);
    key[2] = x;
    uint64_t h = mix64(key[0] ^ mix64(key[1] ^ mix64(key[2])));
    size_t mask = ((size_t)1 << MEMO_BITS) - 1;
    for (size_t i = (size_t)h & mask, probe = 0; probe < 64; probe++, i = (i + 1) & mask) {
        memo_entry *e = &memo[i];
        if (e->gen != memo_gen) {
            *found = 0;
            if (memo_used * 4 > (long)mask * 3) return NULL; /* full: search without it */
            e->k[0] = key[0], e->k[1] = key[1], e->k[2] = key[2];
            return e;
        }
        if (e->k[0] == key[0] && e->k[1] == key[1] && e->k[2] == key[2]) {
            *found = 1;
            return e;
        }
    }
    return NULL;
}

/* Whether seat s's team wins every remaining trick playing pi[k..] whatever the others play
 * (after a Caps call by s: playing the called order, every card of it legal in its turn). */
static int wins_plain(const g304_state *st, int s, const card_t *pi, int k, int n);

static int wins(const g304_state *st, int s, const card_t *pi, int k, int n)
{
    int other = !team_of(s);
    if (st->team_tricks[other] || st->caps_broken) return 0;
    if (st->phase != G304_PHASE_PLAY) return st->trick_no == g304_tricks(&st->rules) && st->team_tricks[other] == 0;
    if (!memo_on || st->trick_no == 0 || st->tricks[st->trick_no].n != 0) return wins_plain(st, s, pi, k, n);
    int found;
    memo_entry *e = memo_slot(st, pi, k, n, &found);
    if (e && found) return e->result;
    int r = wins_plain(st, s, pi, k, n);
    if (e) { /* the slot may have been taken meanwhile by a deeper state: look again */
        e = memo_slot(st, pi, k, n, &found);
        if (e && !found) {
            e->gen = memo_gen;
            e->result = (uint8_t)r;
            memo_used++;
        }
    }
    return r;
}

static int wins_plain(const g304_state *st, int s, const card_t *pi, int k, int n)
{
    int q = st->to_act;
    g304_state c;
    if (q == s) {
        if (k >= n || st->caps_seat == s) return 0; /* after a call the game plays for s */
        g304_action a = test_action(G304_DO_PLAY, pi[k], 0);
        c = *st;
        if (g304_apply(&c, s, &a, NULL, NULL) != G304_OK) return 0;
        return wins(&c, s, pi, k + 1, n);
    }
    cardset_t h = g304_cards_of(st, q);
    int any = 0;
    for (int x = 0; x < CARD_IDS; x++) {
        if (!(h & CARDSET_BIT(x))) continue;
        g304_action a = test_action(G304_DO_PLAY, (card_t)x, 0);
        c = *st;
        if (g304_apply(&c, q, &a, NULL, NULL) != G304_OK) continue;
        any = 1;
        if (!wins(&c, s, pi, k, n)) return 0;
    }
    return any; /* a seat that could not play at all would be an engine bug: not a win */
}

static void memo_reset(void)
{
    if (!memo) memo = calloc((size_t)1 << MEMO_BITS, sizeof *memo);
    cr_assert_not_null(memo);
    memo_gen++;
    memo_used = 0;
}

static void world_found(oracle *o)
{
    static g304_state w;
    o->candidates++;
    if (o->candidates > WORLD_CAP) {
        o->aborted = 1;
        return;
    }
    if (o->count_only) return;
    if (!replay(o->p, o->sigma, o->s, o->ref, NULL, &w)) return;
    o->valid++;
    if (!o->search) return;
    int sample = o->valid % 211 == 1; /* the memo against the plain search, on a sample of worlds */
    for (int i = 0; i < o->npi; i++) {
        if (!o->alive[i] && !sample) continue;
        /* R-CAPS-CALL: s calls Caps with this order; the game then plays it */
        g304_action call = test_action(G304_DO_CAPS, 0, 0);
        call.n = (uint8_t)o->ncards;
        memcpy(call.order, o->pi[i], (size_t)o->ncards);
        static g304_state c;
        c = w;
        if (g304_apply(&c, o->s, &call, NULL, NULL) != G304_OK) {
            o->call_refused++;
            o->alive[i] = 0;
            continue;
        }
        int r = wins(&c, o->s, NULL, 0, 0);
        if (sample) {
            memo_on = 0;
            int without = wins(&c, o->s, NULL, 0, 0);
            memo_on = 1;
            cr_assert_eq(r, without, "the search memo gives a wrong answer (seed %#" PRIx64 ", seat %d)", o->p->seed,
                         o->s);
            o->memo_checked++;
        }
        if (!r) o->alive[i] = 0;
    }
    /* the same orders played without a call: differs only for a maker whose indicator is down */
    if (o->p->st.maker == o->s && o->p->st.ind_down)
        for (int i = 0; i < o->npi; i++)
            if (o->alive_plain[i] && !wins(&w, o->s, o->pi[i], 0, o->ncards)) o->alive_plain[i] = 0;
}

/* Fills group gi (choosing its cards from avail), then the next groups. */
static void assign(oracle *o, int gi, cardset_t avail);

static void choose(oracle *o, int gi, cardset_t avail, cardset_t from, cardset_t chosen, int need)
{
    if (o->aborted) return;
    if (++o->nodes > NODE_CAP) {
        o->aborted = 1;
        return;
    }
    if (!need) {
        group *g = &o->g[gi];
        cardset_t rr = g->real, cc = chosen;
        while (rr) {
            card_t a = cardset_first(rr), b = cardset_first(cc);
            o->sigma[a] = b;
            rr &= rr - 1;
            cc &= cc - 1;
        }
        assign(o, gi + 1, avail & ~chosen);
        return;
    }
    if (cardset_count(from) < need) return;
    card_t c = cardset_first(from);
    cardset_t rest = from & ~CARDSET_BIT(c);
    choose(o, gi, avail, rest, chosen | CARDSET_BIT(c), need - 1);
    choose(o, gi, avail, rest, chosen, need);
}

static void assign(oracle *o, int gi, cardset_t avail)
{
    if (o->aborted) return;
    if (gi == o->ng) {
        world_found(o);
        return;
    }
    group *g = &o->g[gi];
    if (o->filtered) /* every group still to fill needs enough cards it may take */
        for (int i = gi; i < o->ng; i++)
            if (cardset_count(avail & o->g[i].allowed) < o->g[i].size) return;
    cardset_t from = o->filtered ? avail & g->allowed : avail;
    choose(o, gi, avail, from, 0, g->size);
}

/* Builds the groups of unseen places for seat s. Returns 0 if a card cannot be placed (a bug). */
static int build_groups(oracle *o, cardset_t unseen)
{
    const g304_state *st = &o->p->st;
    uint8_t void_all[G304_MAX_SEATS] = {0};
    uint8_t void_before[G304_TRICKS + 1][G304_MAX_SEATS];
    int last = st->trick_no < o->p->tricks ? st->trick_no : o->p->tricks - 1;
    memset(void_before, 0, sizeof void_before);
    for (int t = 0; t <= last; t++) {
        memcpy(void_before[t + 1], void_before[t], G304_MAX_SEATS);
        const g304_trick *tr = &st->tricks[t];
        if (!tr->n) continue;
        int led = CARD_SUIT(tr->card[0]);
        for (int i = 1; i < tr->n; i++)
            if ((tr->facedown & (1 << i)) || CARD_SUIT(tr->card[i]) != led)
                void_before[t + 1][tr->seat[i]] |= (uint8_t)(1 << led);
    }
    memcpy(void_all, void_before[last + 1], G304_MAX_SEATS);
    o->ng = 0;
    for (int q = 0; q < o->p->seats; q++) {
        cardset_t h = st->hand[q] & unseen;
        if (!h) continue;
        if (q == o->s) return 0;
        group *g = &o->g[o->ng++];
        g->kind = GR_HAND;
        g->seat = q;
        g->real = h;
        g->size = cardset_count(h);
        g->allowed = 0;
        for (int su = 0; su < SUIT_COUNT; su++)
            if (!(void_all[q] & (1 << su))) g->allowed |= CARDSET_SUIT(su);
        unseen &= ~h;
    }
    if (st->ind_down && (unseen & CARDSET_BIT(st->indicator))) {
        group *g = &o->g[o->ng++];
        g->kind = GR_IND;
        g->seat = st->maker;
        g->real = CARDSET_BIT(st->indicator);
        g->size = 1;
        g->allowed = CARDSET_ALL;
        unseen &= ~g->real;
    }
    for (int t = 0; t <= last; t++) {
        const g304_trick *tr = &st->tricks[t];
        for (int i = 1; i < tr->n; i++) {
            if (!(unseen & CARDSET_BIT(tr->card[i]))) continue;
            if (!(tr->facedown & (1 << i))) return 0; /* a face-up card is always seen */
            if (o->ng >= (int)(sizeof o->g / sizeof o->g[0])) return 0;
            group *g = &o->g[o->ng++];
            g->kind = GR_PLAY;
            g->seat = tr->seat[i];
            g->real = CARDSET_BIT(tr->card[i]);
            g->size = 1;
            int led = CARD_SUIT(tr->card[0]);
            /* not the suit led; nor a suit its player showed out of before, unless it may be the
               maker's indicator (it does not count for following, R-MAKER-VOID) */
            uint8_t v = (uint8_t)((tr->seat[i] == st->maker ? 0 : void_before[t][tr->seat[i]]) | (1 << led));
            g->allowed = 0;
            for (int su = 0; su < SUIT_COUNT; su++)
                if (!(v & (1 << su))) g->allowed |= CARDSET_SUIT(su);
            unseen &= ~g->real;
        }
    }
    /* the most constrained places first */
    for (int i = 1; i < o->ng; i++)
        for (int j = i; j > 0; j--) {
            group *a = &o->g[j - 1], *b = &o->g[j];
            if (cardset_count(b->allowed) - b->size >= cardset_count(a->allowed) - a->size) break;
            group t = *a;
            *a = *b;
            *b = t;
        }
    return unseen == 0;
}

/* ---- the cross-check ---- */

typedef struct {
    long hands, positions, checks, certain, not_certain, skipped, verified;
    long calls, unknown, mismatches, mismatched_checks, worlds, memo_checked;
    long maker_down, plain_certain, plain_differs; /* the maker with the indicator down: call or no call */
} tally;

static void permutations(oracle *o, cardset_t cards)
{
    static const int perm3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    static const int perm2[2][3] = {{0, 1, 0}, {1, 0, 0}};
    card_t c[G304_TRICKS];
    int n = 0;
    for (int x = 0; x < CARD_IDS; x++)
        if (cards & CARDSET_BIT(x)) c[n++] = (card_t)x;
    o->ncards = n;
    o->npi = n == 3 ? 6 : n == 2 ? 2 : 1; /* n <= 3: every order */
    for (int k = 0; k < o->npi; k++) {
        for (int i = 0; i < n; i++) o->pi[k][i] = c[n == 3 ? perm3[k][i] : n == 2 ? perm2[k][i] : 0];
        o->alive[k] = o->alive_plain[k] = 1;
    }
}

static const char *verdict_name(int v)
{
    return v == CAPS_CERTAIN ? "CERTAIN" : v == CAPS_NOT_CERTAIN ? "NOT_CERTAIN" : v == CAPS_UNKNOWN ? "UNKNOWN" : "?";
}

/* The mismatches of one check, printed together with the position once. */
typedef struct {
    int n;
    char line[16][200];
} mismatch_list;

static void mismatch(mismatch_list *m, tally *t, const char *what, int got, const card_t *order, int n)
{
    t->mismatches++;
    if (m->n >= 16) return;
    char *b = m->line[m->n++];
    size_t len = sizeof m->line[0];
    int k = snprintf(b, len, "%s: caps_check says %s", what, verdict_name(got));
    if (got == CAPS_CERTAIN && order)
        for (int i = 0; i < n && k > 0 && (size_t)k < len; i++)
            k += snprintf(b + k, len - (size_t)k, "%s%s", i ? " " : " with order ", card_str(order[i]));
}

static void print_orders(FILE *f, const oracle *o, const int *alive)
{
    int any = 0;
    for (int i = 0; i < o->npi; i++)
        if (alive[i]) {
            fprintf(f, "%s", any ? ", " : "certain, winning orders: ");
            print_cards(f, o->pi[i], o->ncards);
            any = 1;
        }
    if (!any) fprintf(f, "not certain");
}

static void print_mismatches(const oracle *o, const mismatch_list *m, tally *t, uint64_t master, long hand)
{
    if (!m->n) return;
    t->mismatched_checks++;
    if (t->mismatched_checks > MAX_PRINTED) return;
    fprintf(stderr,
            "MISMATCH for seat %d (run seed %" PRIu64 ", hand %ld; CARDROOM_CROSS_HAND=%#" PRIx64
            " CARDROOM_CROSS_PLAYERS=%d replays it)\n",
            o->s, master, hand, o->p->seed, o->p->seats);
    for (int i = 0; i < m->n; i++) fprintf(stderr, "  %s\n", m->line[i]);
    fprintf(stderr, "  brute force over %ld worlds, each order played after a Caps call: ", o->valid);
    print_orders(stderr, o, o->alive);
    if (o->p->st.maker == o->s && o->p->st.ind_down) {
        fprintf(stderr, "\n  the same orders played without a call (the indicator stays down): ");
        print_orders(stderr, o, o->alive_plain);
    }
    fprintf(stderr, "\n");
    print_position(stderr, o->p);
}

static int same_order(const card_t *a, const card_t *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static void check_seat(caps_solver *w, const position *p, int s, tally *t, uint64_t master, long hand)
{
    static seen_events ref;
    static oracle o;
    static g304_state real;
    card_t id[CARD_IDS];
    for (int c = 0; c < CARD_IDS; c++) id[c] = (card_t)c;
    cr_assert(replay(p, id, s, NULL, &ref, &real), "the recorded hand does not replay (hand %#" PRIx64 ")", p->seed);
    cr_assert(memcmp(&real.hand, &p->st.hand, sizeof real.hand) == 0, "the replay differs (hand %#" PRIx64 ")", p->seed);
    cardset_t seen = named_cards(&ref) | p->st.dealt[s];
    cardset_t pack = p->pack == CARD_IDS ? CARDSET_ALL | CARDSET_SIXES : CARDSET_ALL;
    memset(&o, 0, sizeof o);
    o.p = p;
    o.s = s;
    o.ref = &ref;
    memcpy(o.sigma, id, sizeof id);
    cr_assert(build_groups(&o, (pack & ~seen)), "an unseen card has no place (hand %#" PRIx64 ", seat %d)", p->seed, s);
    permutations(&o, g304_cards_of(&p->st, s));

    /* the filters against the plain enumeration, when that is small */
    double plain = 1;
    for (int i = 0, k = 0; i < o.ng; k += o.g[i].size, i++)
        for (int j = 1; j <= o.g[i].size; j++) plain = plain * (k + j) / j;
    long plain_valid = -1;
    if (plain <= VERIFY_CAP) {
        assign(&o, 0, (pack & ~seen));
        plain_valid = o.valid;
        o.valid = o.candidates = o.nodes = 0;
        o.aborted = 0;
    }
    o.filtered = 1;
    o.count_only = 1; /* first count: too many deals and the seat is skipped */
    assign(&o, 0, (pack & ~seen));
    if (o.aborted) {
        t->skipped++;
        return;
    }
    o.count_only = 0;
    o.candidates = o.nodes = 0;
    o.search = 1;
    memo_reset();
    assign(&o, 0, (pack & ~seen));
    cr_assert(!o.aborted, "the enumeration stopped (hand %#" PRIx64 ", seat %d)", p->seed, s);
    t->memo_checked += o.memo_checked;
    if (plain_valid >= 0) {
        t->verified++;
        cr_assert_eq(plain_valid, o.valid, "the world filters dropped a world (hand %#" PRIx64 ", seat %d)", p->seed, s);
    }
    cr_assert(o.valid >= 1, "the real deal is not a world (hand %#" PRIx64 ", seat %d)", p->seed, s);
    cr_assert_eq(o.call_refused, 0, "a Caps call was refused in a world (hand %#" PRIx64 ", seat %d)", p->seed, s);
    t->worlds += o.valid;
    t->checks++;
    int certain = 0;
    for (int i = 0; i < o.npi; i++) certain |= o.alive[i];
    if (certain)
        t->certain++;
    else
        t->not_certain++;
    if (p->st.maker == s && p->st.ind_down) {
        int plain_certain = 0, differ = 0;
        for (int i = 0; i < o.npi; i++) plain_certain |= o.alive_plain[i], differ |= o.alive_plain[i] != o.alive[i];
        t->maker_down++;
        t->plain_certain += plain_certain;
        t->plain_differs += differ;
    }

    static mismatch_list m;
    m.n = 0;
    card_t order[G304_TRICKS];
    int n;
    for (int quick = 1; quick >= 0; quick--) {
        caps_solver_quick(w, quick);
        char what[96];
        snprintf(what, sizeof what, "free order, quick %s", quick ? "on" : "off");
        memset(order, CARD_NONE, sizeof order);
        n = 0;
        caps_verdict v = caps_check(w, &p->st, s, NULL, 0, order, &n);
        t->calls++;
        if (v == CAPS_UNKNOWN) {
            t->unknown++;
        } else if (v == CAPS_CERTAIN) {
            int ok = 0;
            if (certain && n == o.ncards)
                for (int i = 0; i < o.npi; i++)
                    if (o.alive[i] && same_order(o.pi[i], order, n)) ok = 1;
            if (!ok) {
                if (certain) snprintf(what, sizeof what, "free order, quick %s: the order does not win", quick ? "on" : "off");
                mismatch(&m, t, what, v, order, n);
            }
        } else if (v != CAPS_NOT_CERTAIN || certain) {
            mismatch(&m, t, what, v, NULL, 0);
        }
        for (int i = 0; i < o.npi; i++) {
            n = 0;
            caps_verdict f = caps_check(w, &p->st, s, o.pi[i], o.ncards, order, &n);
            t->calls++;
            if (f == CAPS_UNKNOWN) {
                t->unknown++;
                continue;
            }
            if ((f == CAPS_CERTAIN) != o.alive[i] || (f != CAPS_CERTAIN && f != CAPS_NOT_CERTAIN)) {
                int len = snprintf(what, sizeof what, "fixed order");
                for (int j = 0; j < o.ncards && len > 0 && len < 80; j++)
                    len += snprintf(what + len, sizeof what - (size_t)len, " %s", card_str(o.pi[i][j]));
                snprintf(what + len, sizeof what - (size_t)len, ", quick %s", quick ? "on" : "off");
                mismatch(&m, t, what, f, NULL, 0);
            }
        }
    }
    print_mismatches(&o, &m, t, master, hand);
}

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end;
    long long x = strtoll(v, &end, 0);
    return *end ? def : (long)x;
}

static void check_hand(caps_solver *w, uint64_t hs, int players, tally *t, uint64_t master, long hand)
{
    static position p;
    t->hands++;
    if (!gen_position(hs, players, &p)) return;
    int any = 0;
    for (int s = 0; s < p.seats; s++) {
        if (p.st.team_tricks[!team_of(s)] || !g304_cards_of(&p.st, s)) continue;
        any = 1;
        check_seat(w, &p, s, t, master, hand);
    }
    t->positions += any;
}

/* Cross-checks positions of `players`-player hands until the wanted numbers of checks and of
 * certain ones are reached. */
static void cross_check(int players, long want_checks, long want_certain)
{
    uint64_t seed = (uint64_t)env_long("CARDROOM_CROSS_SEED", 304);
    const char *one = getenv("CARDROOM_CROSS_HAND");
    caps_solver *w = caps_solver_new(0);
    cr_assert_not_null(w);
    tally t;
    memset(&t, 0, sizeof t);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (one && *one) {
        if (env_long("CARDROOM_CROSS_PLAYERS", 4) == players) check_hand(w, strtoull(one, NULL, 0), players, &t, seed, 0);
        want_checks = want_certain = 0;
    } else {
        xrng master = {seed};
        for (long hand = 0; hand < MAX_HANDS && (t.checks < want_checks || t.certain < want_certain); hand++)
            check_hand(w, rng_u64(&master), players, &t, seed, hand);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr,
            "caps_cross (%d players, run seed %" PRIu64 "): %ld hands, %ld positions, %ld checks: %ld certain, %ld not "
            "certain (%ld seats skipped: over %ld deals; world filters verified on %ld checks; %ld worlds; %ld world "
            "searches checked without the memo); the maker with the indicator down: %ld checks, %ld certain if played "
            "without a call, %ld where the call changes an order's result; %ld caps_check calls, %ld unknown, %ld "
            "mismatches in %ld checks; %.1f s\n",
            players, seed, t.hands, t.positions, t.checks, t.certain, t.not_certain, t.skipped, WORLD_CAP, t.verified,
            t.worlds, t.memo_checked, t.maker_down, t.plain_certain, t.plain_differs, t.calls, t.unknown, t.mismatches,
            t.mismatched_checks, secs);
    caps_solver_free(w);
    cr_expect(t.checks >= want_checks && t.certain >= want_certain, "too few checks: %ld (%ld certain)", t.checks,
              t.certain);
    cr_expect(t.unknown * 100 <= t.calls, "caps_check answered unknown in %ld of %ld calls (more than 1%%)", t.unknown,
              t.calls);
    cr_expect_eq(t.mismatches, 0, "%ld mismatches between caps_check and the brute force", t.mismatches);
}

Test(caps_cross, brute_force)
{
    cross_check(4, env_long("CARDROOM_CROSS_CHECKS", 1500), env_long("CARDROOM_CROSS_CERTAIN", 300));
}

Test(caps_cross, six_players)
{
    cross_check(6, env_long("CARDROOM_CROSS_CHECKS6", 300), env_long("CARDROOM_CROSS_CERTAIN6", 60));
}
