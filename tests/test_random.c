/* test_random.c — the random simulation of 304: many hands of random play, checking invariants,
 * the agreement of g304_legal() with g304_apply(), and that no event or view tells a seat a card
 * it may not know.
 *
 * Matches run with random options (every *option* of shared/rules/304.md) and small token
 * counts so that they end, in four-player 304 (random.hands) and six-player 304 (random.six_players,
 * R-SIX-…); tokens and the dealer carry over from hand to hand. Each hand takes
 * its random choices from a splitmix64 stream seeded by (run seed, hand index), so a failure
 * reproduces with the same CARDROOM_SIM_SEED; every failure prints the seed, the hand index and
 * the hand as replay JSON (README, `cardroom replay`), the moves up to the one that broke.
 *
 * The leak check keeps its own model of what each seat may know, written from the rules, not
 * from the engine: dealt cards as they are dealt, cards played face up, a seat's own face-down
 * plays, the maker's inspection of face-down cards (R-REVEAL), cards turned up at a reveal,
 * the indicator once it is shown (R-OPEN, R-REVEAL, R-250, a Caps call by the maker, a face-up
 * play), a Caps caller's shown cards, and everything once the hand is over.
 *
 * Hands are played through the Caps judge (judge_apply()), as the bot plays them: when Caps
 * becomes certain for a seat it sometimes calls with the judge's order, and a call judged certain
 * must then win every trick. The judge's input, caps_knowledge_of(), is checked against the same
 * knowledge model.
 *
 * Six players change the numbers the model counts with (seats, hand and trick sizes, the 4 + 2
 * deal, the pack with the sixes), "partner" to "a teammate" and the opponents to three; the
 * invariants, the legality cross-check and the leak check are the same (in Partner Close Caps
 * both teammates' cards stay hidden).
 *
 * Environment: CARDROOM_SIM_HANDS (default 100000), CARDROOM_SIM_HANDS6 (six-player hands, default
 * 30% of CARDROOM_SIM_HANDS), CARDROOM_SIM_SEED (default 304), CARDROOM_SIM_EXHAUSTIVE (percent of
 * states whose every candidate move is tried on a copy, default 10), CARDROOM_SIM_JUDGED (percent
 * of hands played through the Caps judge, default 25; CARDROOM_SIM_JUDGED6 for six players,
 * default 10). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "caps.h"
#include "cards.h"
#include "deal.h"
#include "g304.h"
#include "judge.h"

#define SIM_MAX_MOVES 1000     /* a hand longer than this is a failure (a loop) */
#ifndef SIM_PRINT_FAILURES
#define SIM_PRINT_FAILURES 40  /* failure lines printed in full */
#endif
#ifndef SIM_PRINT_REPROS
#define SIM_PRINT_REPROS 8     /* hands printed as replay JSON (and the first of each kind) */
#endif

/* ---- PRNG: splitmix64 (small, fast, good enough; fixed by the seed) ---- */
typedef struct {
    uint64_t s;
} sim_rng;

static uint64_t rng_u64(sim_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform enough in [0, n) for a test: the top 32 bits scaled (bias below 2^-32). */
static uint32_t rng_below(sim_rng *r, uint32_t n)
{
    return (uint32_t)(((rng_u64(r) >> 32) * (uint64_t)n) >> 32);
}

/* True with probability per10k / 10000. */
static int rng_chance(sim_rng *r, uint32_t per10k)
{
    return rng_below(r, 10000) < per10k;
}

/* ---- Candidate moves: the universe tried by the exhaustive legality check ---- */
#define UNIVERSE_MAX 180
static g304_action universe[UNIVERSE_MAX];
static int universe_n;

static void universe_add(int kind, card_t card, unsigned amount)
{
    g304_action a;
    memset(&a, 0, sizeof a);
    a.kind = (uint8_t)kind;
    a.card = card;
    a.amount = (uint16_t)amount;
    universe[universe_n++] = a;
}

static void universe_build(void)
{
    if (universe_n) return;
    for (unsigned at = 0; at <= CARD_IDS; at++) universe_add(G304_DO_CUT, CARD_NONE, at);
    universe_add(G304_DO_BID, CARD_NONE, 0);
    universe_add(G304_DO_BID, CARD_NONE, 100);
    for (unsigned b = 150; b <= 310; b += 5) universe_add(G304_DO_BID, CARD_NONE, b);
    universe_add(G304_DO_BID, CARD_NONE, 400); /* no number stands for PCC */
    universe_add(G304_DO_BID, CARD_NONE, G304_PCC);
    universe_add(G304_DO_PASS, CARD_NONE, 0);
    universe_add(G304_DO_PARTNER, CARD_NONE, 0);
    universe_add(G304_DO_REDEAL, CARD_NONE, 0);
    universe_add(G304_DO_OPEN, CARD_NONE, 0);
    /* the sixes too: a four-player game must refuse them like any card it does not know */
    for (card_t c = 0; c < CARD_IDS; c++) universe_add(G304_DO_TRUMP, c, 0);
    for (card_t c = 0; c < CARD_IDS; c++) universe_add(G304_DO_PLAY, c, 0);
}

/* Two moves are the same move: same kind and the field that kind uses. */
static int action_same(const g304_action *a, const g304_action *b)
{
    if (a->kind != b->kind) return 0;
    switch (a->kind) {
    case G304_DO_CUT:
    case G304_DO_BID: return a->amount == b->amount;
    case G304_DO_TRUMP:
    case G304_DO_PLAY: return a->card == b->card;
    default: return 1;
    }
}

static int action_listed(const g304_action *a, const g304_action *list, int n)
{
    for (int i = 0; i < n; i++)
        if (action_same(a, &list[i])) return 1;
    return 0;
}

/* ---- Reporting ---- */
static const char *const do_words[G304_DO_COUNT] = {
    [G304_DO_CUT] = "cut",     [G304_DO_BID] = "bid",   [G304_DO_PASS] = "pass", [G304_DO_PARTNER] = "partner",
    [G304_DO_REDEAL] = "redeal", [G304_DO_TRUMP] = "trump", [G304_DO_OPEN] = "open", [G304_DO_PLAY] = "play",
    [G304_DO_CAPS] = "caps",   [G304_DO_SPOILT] = "spoilt"};
static const char *const ev_words[] = {
    [G304_EV_CUT] = "CUT",
    [G304_EV_DEALT] = "DEALT",
    [G304_EV_BID] = "BID",
    [G304_EV_PASS] = "PASS",
    [G304_EV_ASK] = "ASK",
    [G304_EV_REDEAL] = "REDEAL",
    [G304_EV_ALL_PASS] = "ALL_PASS",
    [G304_EV_MAKER] = "MAKER",
    [G304_EV_INDICATOR] = "INDICATOR",
    [G304_EV_PLACED] = "PLACED",
    [G304_EV_RETURNED] = "RETURNED",
    [G304_EV_OPEN] = "OPEN",
    [G304_EV_PLAY] = "PLAY",
    [G304_EV_FACEDOWN] = "FACEDOWN",
    [G304_EV_INSPECT] = "INSPECT",
    [G304_EV_NO_TRUMP] = "NO_TRUMP",
    [G304_EV_REVEAL] = "REVEAL",
    [G304_EV_SHOWN] = "SHOWN",
    [G304_EV_TRICK] = "TRICK",
    [G304_EV_CAPS] = "CAPS",
    [G304_EV_SPOILT] = "SPOILT",
    [G304_EV_CAPS_JUDGED] = "CAPS_JUDGED",
    [G304_EV_HAND] = "HAND",
    [G304_EV_RESULT] = "RESULT",
};

static const char *ev_word(int kind)
{
    return kind >= 0 && kind < (int)(sizeof ev_words / sizeof ev_words[0]) && ev_words[kind] ? ev_words[kind] : "?";
}

static const char *card_text(card_t c)
{
    if (c == CARD_HIDDEN) return "hidden";
    if (c == CARD_NONE) return "none";
    return c < CARD_IDS ? card_str(c) : "??";
}

/* A move in words for failure lines: "play JS", "bid 250", "partner". */
static const char *action_text(const g304_action *a, char *buf, size_t len)
{
    const char *word = a->kind < G304_DO_COUNT ? do_words[a->kind] : "?";
    switch (a->kind) {
    case G304_DO_CUT:
    case G304_DO_BID: snprintf(buf, len, "%s %u", word, a->amount); break;
    case G304_DO_TRUMP:
    case G304_DO_PLAY: snprintf(buf, len, "%s %s", word, card_text(a->card)); break;
    case G304_DO_CAPS: snprintf(buf, len, "%s (%d cards)", word, a->n); break;
    default: snprintf(buf, len, "%s", word);
    }
    return buf;
}

static void action_json(FILE *f, int seat, const g304_action *a)
{
    const char *word = a->kind < G304_DO_COUNT ? do_words[a->kind] : "?";
    fprintf(f, "{\"seat\": %d, \"do\": \"%s\"", seat, word);
    switch (a->kind) {
    case G304_DO_CUT: fprintf(f, ", \"at\": %u", a->amount); break;
    case G304_DO_BID:
        if (a->amount == G304_PCC)
            fprintf(f, ", \"amount\": \"pcc\"");
        else
            fprintf(f, ", \"amount\": %u", a->amount);
        break;
    case G304_DO_TRUMP:
    case G304_DO_PLAY: fprintf(f, ", \"card\": \"%s\"", card_text(a->card)); break;
    case G304_DO_CAPS:
        fprintf(f, ", \"order\": [");
        for (int i = 0; i < a->n && i < G304_TRICKS; i++)
            fprintf(f, "%s\"%s\"", i ? ", " : "", card_text(a->order[i]));
        fprintf(f, "]");
        break;
    default: break;
    }
    fprintf(f, "}");
}

static void rules_json(FILE *f, const g304_rules *r)
{
    static const char *const bidding[] = {"standard", "single"};
    static const char *const opener[] = {"maker", "dealer_right"};
    static const char *const spoilt[] = {"manual", "auto"};
    static const char *const caps[] = {"grace", "strict", "off"};
    static const char *const scoring[] = {"transfer", "bank"};
    fprintf(f,
            "{\"cut\": %s, \"step_above_200\": %u, \"bidding\": \"%s\", \"bid8_opener\": \"%s\", "
            "\"spoilt\": \"%s\", \"caps\": \"%s\", \"scoring\": \"%s\", \"start_tokens\": %u, "
            "\"players\": %d}",
            r->cut ? "true" : "false", r->step_above_200, bidding[r->bidding & 1],
            opener[r->bid8_opener & 1], spoilt[r->spoilt & 1], caps[r->caps < 3 ? r->caps : 0],
            scoring[r->scoring & 1], r->start_tokens, g304_seats(r));
}

/* ---- The simulation ---- */
#define SIM_LOG_MAX (SIM_MAX_MOVES + 8)

typedef struct {
    uint8_t seat;
    g304_action a;
} sim_move;

typedef struct {
    /* run */
    uint64_t seed;
    long hand;            /* index of the hand being played */
    sim_rng rng;          /* this hand's choices */
    /* match */
    int in_match;
    int players;          /* 4 or 6: the game simulated */
    g304_rules rules;
    int seats, tricks, pack; /* 4 8 32, or 6 6 36 (R-SIX-…) */
    int dealer;
    int16_t tokens[2];    /* before the hand */
    /* hand */
    uint8_t deal_seed[DEAL_SEED_BYTES];
    card_t deck[CARD_IDS];     /* as shuffled, before any cut */
    int nlog;
    sim_move log[SIM_LOG_MAX]; /* accepted moves of this hand */
    int failed;

    /* What each seat may know (the rules' model, R-… in the comments). */
    cardset_t known[G304_MAX_SEATS];
    cardset_t first4[G304_MAX_SEATS], all8[G304_MAX_SEATS]; /* expected deal (all8: the whole hand,
                                                                eight or six cards), once cut */
    int deal_fixed;       /* first4/all8 computed */
    int full_dealt;       /* the second batch has been dealt */
    int maker;            /* seat of the last accepted indicator choice, -1 before */
    card_t indicator;     /* that choice */
    int ind_down;         /* the indicator lies face down on the table */
    int ind_public;       /* the indicator has been shown to all (the trump is open) */
    unsigned bid;         /* highest accepted bid (G304_PCC above every number) */
    int bidder;           /* who made it, -1 before */
    int pcc;
    int done;
    int b4_moves;         /* moves made in the four-card round */
    int spoke;            /* bit s: seat s has had a turn in the four-card round (R-B4-200) */
    int asker;            /* the seat whose partner is asked to bid, -1 if none */
    int b8_spoke;         /* bit s: seat s has spoken in the eight-card (six-card) round */
    int b8_last;          /* the last seat to speak in that round, -1 before */
    int b8_bidder;        /* the highest bidder of that round, -1 if none */
    int maker4;           /* the four-card trump maker */
    int exhaust;          /* R-EXHAUST: the maker must keep leading trumps from hand */
    int caps_seat;        /* who called Caps, -1 if nobody */
    int caps_n, caps_next;
    card_t caps_order[G304_TRICKS];
    int caps_skipped;     /* a card of the order was passed over (not playable in its turn) */
    int team_tricks[2];   /* tricks won per team, counted here */
    int caps_at;          /* cards played when Caps was called */
    int caps_certain_call; /* the call stated the order the judge had just found certain, as soon
                              as it was certain for the team */

    int favoured;         /* a team that plays its strongest cards while the other plays its
                             weakest (so that Caps comes up), -1 for random play */

    /* the Caps judge (judge.h) */
    int judged;           /* this hand is played through judge_apply() */
    caps_solver *solver;

    /* what happened in this hand (for the coverage counts) */
    int h_pcc, h_open, h_bid8, h_ask, h_redeal, h_spoilt, h_spoilt_ok, h_spoilt_auto, h_caps,
        h_illegal, h_all_pass, h_violation, h_played, h_trump_reveal, h_certain, h_certain_call,
        h_wrong, h_ask_refused;
} sim;

static long g_failures;
static long g_repros;

static void print_repro(const sim *S, int extra_seat, const g304_action *extra)
{
    FILE *f = stderr;
    fprintf(f, "  replay JSON (moves accepted so far%s):\n  {\"game\": \"304\", \"rules\": ",
            extra ? ", then the move in question" : "");
    rules_json(f, &S->rules);
    fprintf(f, ",\n   \"dealer\": %d, \"tokens\": [%d, %d], \"seed\": \"", S->dealer, S->tokens[0],
            S->tokens[1]);
    for (int i = 0; i < DEAL_SEED_BYTES; i++) fprintf(f, "%02x", S->deal_seed[i]);
    fprintf(f, "\",\n   \"actions\": [");
    for (int i = 0; i < S->nlog; i++) {
        fprintf(f, "%s\n    ", i ? "," : "");
        action_json(f, S->log[i].seat, &S->log[i].a);
    }
    if (extra) {
        fprintf(f, "%s\n    ", S->nlog ? "," : "");
        action_json(f, extra_seat, extra);
    }
    fprintf(f, "]}\n");
}

/* Whether a failure of this kind (its format string) is seen for the first time. */
static int first_of_kind(const char *fmt)
{
    static const char *kinds[64];
    static int nkinds;
    for (int i = 0; i < nkinds; i++)
        if (kinds[i] == fmt) return 0;
    if (nkinds < 64) kinds[nkinds++] = fmt;
    return 1;
}

/* Records a failure: the first ones, and the first of each kind, print in full, with the hand
 * as replay JSON once per hand. The hand is then abandoned (its state can no longer be
 * trusted) and a new match starts. */
__attribute__((format(printf, 4, 5))) static void sim_fail_move(sim *S, int seat, const g304_action *move,
                                                                 const char *fmt, ...)
{
    g_failures++;
    int first = first_of_kind(fmt);
    if (g_failures <= SIM_PRINT_FAILURES || first) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "FAIL seed=%" PRIu64 " hand=%ld move=%d: %s\n", S->seed, S->hand, S->nlog,
                msg);
        if (!S->failed && (g_repros < SIM_PRINT_REPROS || first)) {
            g_repros++;
            print_repro(S, seat, move);
        }
    }
    S->failed = 1;
}

#define sim_fail(S, ...) sim_fail_move((S), -1, NULL, __VA_ARGS__)

static int team_of(int seat)
{
    return seat & 1;
}

/* A card set for failure lines. */
static unsigned long long set_hex(cardset_t s)
{
    return (unsigned long long)s;
}

/* The seat k places after seat (R-SEATS, R-SIX-SEATS). */
static int seat_after(const sim *S, int seat, int k)
{
    return (seat + k) % S->seats;
}

/* Whether b is a teammate of a: the partner (R-SEATS), one of two with six players. */
static int teammates(int a, int b)
{
    return a >= 0 && b >= 0 && a != b && team_of(a) == team_of(b);
}

/* Cards in each batch of the deal: four, then the rest of the hand (R-DEAL, R-SIX-DEAL). */
static int batch_size(const sim *S, int batch)
{
    return batch ? S->tricks - 4 : 4;
}

/* The seat that deck position i is dealt to. */
static int dealt_to(const sim *S, int i)
{
    int first = 4 * S->seats;
    int k = i < first ? i / 4 : (i - first) / batch_size(S, 1);
    return seat_after(S, S->dealer, 1 + k);
}

static int suit_of(card_t c)
{
    return CARD_SUIT(c);
}

/* The expected deal (R-DEAL, R-SIX-DEAL): batches of four from dealer's right, ending with the
 * dealer, then the rest of each hand the same way (four each, or two with six players). deck is
 * the order after the cut. */
static void sim_fix_deal(sim *S, const card_t *deck)
{
    for (int s = 0; s < G304_MAX_SEATS; s++) S->first4[s] = S->all8[s] = 0;
    for (int i = 0; i < S->pack; i++) {
        int seat = dealt_to(S, i);
        cardset_t bit = CARDSET_BIT(deck[i]);
        if (i < 4 * S->seats) S->first4[seat] |= bit;
        S->all8[seat] |= bit;
    }
    S->deal_fixed = 1;
    for (int s = 0; s < S->seats; s++) S->known[s] |= S->first4[s];
}

static void know_all(sim *S, cardset_t cards)
{
    for (int s = 0; s < S->seats; s++) S->known[s] |= cards;
}

/* The indicator is shown to everybody (and, if still down, returns to the maker's hand). */
static void sim_show_indicator(sim *S)
{
    if (S->maker < 0 || S->indicator >= CARD_IDS) return;
    S->ind_public = 1;
    S->ind_down = 0;
    know_all(S, CARDSET_BIT(S->indicator));
}

static int trump_suit(const sim *S)
{
    return S->indicator < CARD_IDS ? suit_of(S->indicator) : -1;
}

/* R-SPOILT: the maker's opponents hold no trump among their eight (six) cards. */
static int sim_spoilt(const sim *S)
{
    if (S->maker < 0) return 0;
    cardset_t trumps = CARDSET_SUIT(trump_suit(S));
    for (int k = 1; k < S->seats; k += 2)
        if (S->all8[seat_after(S, S->maker, k)] & trumps) return 0;
    return 1;
}

/* Who should play after seat (R-SEATS, skipping the partner in PCC; both teammates with six
 * players, R-SIX-PCC). */
static int sim_next(const sim *S, int seat)
{
    int n = seat_after(S, seat, 1);
    while (S->pcc && teammates(S->maker, n)) n = seat_after(S, n, 1);
    return n;
}

/* Cards in a trick: every seat, or in PCC the maker and his opponents. */
static int sim_per_trick(const sim *S)
{
    return S->pcc ? S->seats / 2 + 1 : S->seats;
}

/* R-FOLLOW / R-REVEAL: the winner of a complete trick, from the cards alone. */
static int trick_winner(const g304_trick *t, int trump)
{
    int led = suit_of(t->card[0]);
    int best = -1;
    for (int i = 0; i < t->n; i++) {
        card_t c = t->card[i];
        int s = suit_of(c);
        if (s != trump && s != led) continue;
        if (best < 0) {
            best = i;
            continue;
        }
        card_t b = t->card[best];
        int bs = suit_of(b);
        if (s == trump && bs != trump)
            best = i;
        else if (s == bs && card_power(c) > card_power(b))
            best = i;
    }
    return t->seat[best];
}

/* Follows the new cards on the table between b and st, one by one, in order: who played,
 * face up or down, following suit, the indicator rules; and at each completed trick the
 * inspection, the reveal and R-250. Updates the knowledge model as the rules say. */
static void sim_follow_plays(sim *S, const g304_state *b, const g304_state *st)
{
    cardset_t cur[G304_MAX_SEATS];
    for (int s = 0; s < S->seats; s++) cur[s] = g304_cards_of(b, s);
    int per_trick = sim_per_trick(S);
    int trump = trump_suit(S);

    for (int t = b->trick_no; t < S->tricks && t <= st->trick_no; t++) {
        const g304_trick *tr = &st->tricks[t];
        int from = t == b->trick_no ? b->tricks[t].n : 0;
        if (tr->n < from || tr->n > per_trick) {
            sim_fail(S, "trick %d has %d cards (was %d, %d per trick)", t + 1, tr->n, from, per_trick);
            return;
        }
        for (int i = from; i < tr->n; i++) {
            card_t c = tr->card[i];
            int p = tr->seat[i];
            if (c >= S->pack || p >= S->seats) {
                sim_fail(S, "trick %d card %d: bad card %d or seat %d", t + 1, i, c, p);
                return;
            }
            int expect_p;
            if (i > 0)
                expect_p = sim_next(S, tr->seat[i - 1]);
            else if (t == 0)
                expect_p = S->pcc ? S->maker : seat_after(S, S->dealer, 1); /* R-LEAD1, R-PCC */
            else
                expect_p = st->tricks[t - 1].winner;
            if (p != expect_p || (i == 0 && tr->leader != p))
                sim_fail(S, "trick %d card %d played by seat %d (leader %d), expected seat %d", t + 1,
                         i, p, tr->leader, expect_p);
            if (!(cur[p] & CARDSET_BIT(c))) {
                sim_fail(S, "trick %d: seat %d played %s which it did not hold", t + 1, p, card_str(c));
                return;
            }
            int led = suit_of(tr->card[0]);
            int fd = (tr->facedown >> i) & 1;
            /* R-FACEDOWN: while the trump is closed, exactly the cards not of the suit led go
             * face down; once it is open everything is face up. */
            int expect_fd = i > 0 && !S->ind_public && suit_of(c) != led;
            if (fd != expect_fd)
                sim_fail(S, "trick %d: %s by seat %d went face %s, the rules say face %s", t + 1,
                         card_str(c), p, fd ? "down" : "up", expect_fd ? "down" : "up");
            int is_ind = S->ind_down && p == S->maker && c == S->indicator;
            /* R-FOLLOW (the face-down indicator does not count as held, R-MAKER-VOID). */
            cardset_t holdable = cur[p] & ~(S->ind_down && p == S->maker ? CARDSET_BIT(S->indicator) : 0);
            if (i > 0 && suit_of(c) != led && (holdable & CARDSET_SUIT(led)) && !is_ind)
                sim_fail(S, "trick %d: seat %d played %s but holds %s (must follow)", t + 1, p,
                         card_str(c), suit_name(led));
            if (i > 0 && is_ind && suit_of(c) != led && (holdable & CARDSET_SUIT(led)) && t < S->tricks - 1)
                sim_fail(S, "trick %d: maker cut with the indicator %s while holding %s", t + 1,
                         card_str(c), suit_name(led));
            /* R-IND-PLAY: the face-down indicator only cuts face down, or is the last card. */
            if (is_ind && t < S->tricks - 1 && (i == 0 || !fd))
                sim_fail(S, "trick %d: the indicator %s was %s", t + 1, card_str(c),
                         i == 0 ? "led" : "played face up");
            /* R-MAKER-VOID: with the indicator down the maker cuts with no other trump. */
            if (S->ind_down && p == S->maker && fd && !is_ind && suit_of(c) == trump)
                sim_fail(S, "trick %d: maker cut with %s while the indicator is down", t + 1,
                         card_str(c));
            /* R-EXHAUST: the maker keeps leading trumps from hand while he has any. */
            if (i == 0 && p == S->maker && S->exhaust) {
                if (!(holdable & CARDSET_SUIT(trump)))
                    S->exhaust = 0;
                else if (suit_of(c) != trump || is_ind)
                    sim_fail(S, "trick %d: maker led %s but must keep leading trumps (R-EXHAUST)", t + 1,
                             card_str(c));
            }
            /* R-LEAD1-TRUMP */
            if (t == 0 && i == 0 && p == S->maker && !S->ind_public && suit_of(c) == trump)
                sim_fail(S, "trick 1: maker led trump %s in a closed game", card_str(c));
            if (p == S->caps_seat) { /* the game plays the stated order (README) */
                int k = S->caps_next;
                while (k < S->caps_n && S->caps_order[k] != c) k++;
                if (k == S->caps_n) {
                    sim_fail(S, "trick %d: Caps caller played %s, not left in the stated order", t + 1,
                             card_str(c));
                } else if (k != S->caps_next) {
                    /* the card passed over must have been unplayable: following suit, or a lead
                     * that no lead rule forbids, is always allowed (R-FOLLOW, R-IND-PLAY,
                     * R-LEAD1-TRUMP, R-EXHAUST) */
                    card_t x = S->caps_order[S->caps_next];
                    int x_ind = S->ind_down && p == S->maker && x == S->indicator;
                    int x_ok = i > 0 ? suit_of(x) == led && !x_ind
                                     : !x_ind && !(t == 0 && p == S->maker && !S->ind_public && suit_of(x) == trump) &&
                                           !(p == S->maker && S->exhaust && (holdable & CARDSET_SUIT(trump)) &&
                                             suit_of(x) != trump);
                    if (x_ok)
                        sim_fail(S, "trick %d: Caps autoplay passed over playable %s for %s", t + 1,
                                 card_str(x), card_str(c));
                    S->caps_skipped = 1;
                    memmove(&S->caps_order[S->caps_next + 1], &S->caps_order[S->caps_next],
                            (size_t)(k - S->caps_next));
                    S->caps_order[S->caps_next] = c;
                }
                S->caps_next++;
            }
            cur[p] &= ~CARDSET_BIT(c);
            if (is_ind) S->ind_down = 0;
            if (!fd) {
                know_all(S, CARDSET_BIT(c));
                if (c == S->indicator) S->ind_public = 1; /* shown face up: the trump is known */
            }
            S->known[p] |= CARDSET_BIT(c);
        }
        if (tr->n < per_trick) break;
        if (t < b->trick_no) continue;
        /* The trick is complete: R-REVEAL, then R-250. */
        if (t + 1 > st->trick_no) {
            sim_fail(S, "trick %d is complete but trick_no is %d", t + 1, st->trick_no);
            return;
        }
        cardset_t fdcards = 0;
        int trump_down = 0;
        for (int i = 0; i < tr->n; i++) {
            if (!((tr->facedown >> i) & 1)) continue;
            fdcards |= CARDSET_BIT(tr->card[i]);
            if (suit_of(tr->card[i]) == trump) trump_down = 1;
        }
        S->known[S->maker] |= fdcards; /* the maker inspects them */
        uint8_t expect_hidden = 0;
        for (int i = 0; i < tr->n; i++) {
            if (!((tr->facedown >> i) & 1)) continue;
            card_t c = tr->card[i];
            if (trump_down && !(tr->seat[i] == S->maker && suit_of(c) != trump))
                know_all(S, CARDSET_BIT(c));
            else
                expect_hidden |= (uint8_t)(1u << i);
        }
        int expect_announced = !fdcards ? 0 : trump_down ? 2 : 1;
        if (tr->announced != expect_announced)
            sim_fail(S, "trick %d: announced %d, expected %d", t + 1, tr->announced, expect_announced);
        if (tr->hidden != expect_hidden)
            sim_fail(S, "trick %d: hidden bits %#x, expected %#x", t + 1, tr->hidden, expect_hidden);
        if (trump_down) {
            S->h_trump_reveal = 1;
            sim_show_indicator(S);
        }
        if (t == 0 && S->bid >= 250 && !S->ind_public) sim_show_indicator(S); /* */
        if (!S->pcc && tr->seat[0] == S->maker && suit_of(tr->card[0]) == trump) {
            int followed = 0;
            for (int i = 1; i < tr->n; i++) followed |= suit_of(tr->card[i]) == trump;
            /* binding only while he still holds a trump in hand; once he has none it is over,
             * even if the indicator comes back to his hand later */
            cardset_t hand = cur[S->maker] & ~(S->ind_down ? CARDSET_BIT(S->indicator) : 0);
            if (!followed) S->exhaust = (hand & CARDSET_SUIT(trump)) != 0;
        }
        int w = trick_winner(tr, trump);
        if (tr->winner != w)
            sim_fail(S, "trick %d won by seat %d, the rules say seat %d", t + 1, tr->winner, w);
        S->team_tricks[team_of(w)]++;
        int pts = 0;
        for (int i = 0; i < tr->n; i++) pts += card_points(tr->card[i]);
        if (tr->points != pts)
            sim_fail(S, "trick %d has %d points, its cards hold %d", t + 1, tr->points, pts);
    }
}

/* R-B4-ORDER, R-B4-AMOUNT, R-B4-200, R-B4-PARTNER: an accepted four-card bid or pass. The
 * 200 rules are checked for `bidding = standard` only; `single` has its own. */
static void sim_check_bid4(sim *S, int seat, const g304_action *a)
{
    S->b4_moves++;
    if (seat == S->bidder) sim_fail(S, "seat %d spoke while holding the highest bid", seat);
    if (a->kind == G304_DO_BID) {
        unsigned x = a->amount;
        int step = x >= 200 && S->rules.step_above_200 == 5 ? 5 : 10;
        if (x < 160 || x > G304_MAX_BID || x % (unsigned)step || x <= S->bid)
            sim_fail(S, "four-card bid %u by seat %d over %u (step %d)", x, seat, S->bid, step);
        int partner_holds = teammates(seat, S->bidder); /* R-SIX-PARTNER: a teammate */
        if (S->rules.bidding == G304_BIDDING_STANDARD && x < 200 &&
            ((S->spoke >> seat & 1) || partner_holds))
            sim_fail(S, "seat %d bid %u below 200 after a turn or over partner (R-B4-200)", seat, x);
    }
    S->spoke |= 1 << seat;
    if (S->asker >= 0) {
        if (seat != (S->asker + 2) % 4 || S->seats != 4) sim_fail(S, "seat %d answered for the asked seat", seat);
        S->spoke |= 1 << S->asker; /* a turn for both of them */
        S->asker = -1;
    }
}

/* R-B8, R-B8-AMOUNT, R-B8-PCC, `bid8_opener`, R-SIX-B6: one circuit, each player once. */
static void sim_check_bid8(sim *S, int seat, const g304_action *a)
{
    int first = S->rules.bid8_opener == G304_OPENER_DEALER_RIGHT ? seat_after(S, S->dealer, 1) : S->maker4;
    int expect = S->b8_last < 0 ? first : seat_after(S, S->b8_last, 1);
    if (seat != expect || (S->b8_spoke >> seat & 1))
        sim_fail(S, "eight-card round: seat %d spoke, expected seat %d", seat, expect);
    S->b8_spoke |= 1 << seat;
    S->b8_last = seat;
    if (a->kind != G304_DO_BID) return;
    unsigned x = a->amount;
    int step = S->rules.step_above_200 == 5 ? 5 : 10;
    if (x != G304_PCC && (x < 250 || x > G304_MAX_BID || x % (unsigned)step || x <= S->bid))
        sim_fail(S, "eight-card bid %u by seat %d over %u", x, seat, S->bid);
    if (teammates(seat, S->b8_bidder))
        sim_fail(S, "seat %d overbid its teammate's eight-card bid", seat);
}

/* Updates the model after an accepted move by seat (b = the state before, st = after). */
static void sim_observe(sim *S, const g304_state *b, const g304_state *st, int seat,
                        const g304_action *a)
{
    switch (a->kind) {
    case G304_DO_CUT: {
        /* R-DEAL: cutting at k puts the top k cards under the rest. */
        card_t cut[CARD_IDS];
        int k = a->amount;
        for (int i = 0; i < S->pack; i++) cut[i] = S->deck[(i + k) % S->pack];
        if (memcmp(cut, st->deck, (size_t)S->pack) != 0) sim_fail(S, "cut at %d: deck is not rotated by %d", k, k);
        sim_fix_deal(S, st->deck);
        break;
    }
    case G304_DO_BID:
    case G304_DO_PASS:
        if (b->phase == G304_PHASE_BID4)
            sim_check_bid4(S, seat, a);
        else if (b->phase == G304_PHASE_BID8)
            sim_check_bid8(S, seat, a);
        if (a->kind == G304_DO_BID) {
            S->bid = a->amount;
            S->bidder = seat;
            if (b->phase == G304_PHASE_BID8) S->h_bid8 = 1, S->b8_bidder = seat;
            if (a->amount == G304_PCC) S->pcc = S->h_pcc = 1;
        }
        break;
    case G304_DO_PARTNER:
        S->h_ask = 1;
        if (S->seats != 4) sim_fail(S, "seat %d asked partner with six players (R-SIX-PARTNER)", seat);
        if (b->phase != G304_PHASE_BID4) sim_fail(S, "seat %d asked partner outside the four-card round", seat);
        if (S->asker >= 0) sim_fail(S, "seat %d asked back (R-B4-PARTNER)", seat);
        S->asker = seat;
        S->b4_moves++;
        break;
    case G304_DO_REDEAL:
        S->h_redeal = 1;
        /* R-REDEAL: dealer's right, before bidding or passing, under 15 points */
        if (seat != seat_after(S, S->dealer, 1) || S->b4_moves || cardset_points(S->first4[seat]) >= 15)
            sim_fail(S, "redeal by seat %d (dealer %d) after %d moves with %d points", seat, S->dealer,
                     S->b4_moves, cardset_points(S->first4[seat]));
        break;
    case G304_DO_TRUMP:
        if (!(g304_cards_of(b, seat) & CARDSET_BIT(a->card)) && !(S->all8[seat] & CARDSET_BIT(a->card)))
            sim_fail(S, "seat %d placed %s, which it does not hold", seat, card_str(a->card));
        if (!S->full_dealt && !(S->first4[seat] & CARDSET_BIT(a->card)))
            sim_fail(S, "first indicator %s is not from seat %d's first four", card_str(a->card), seat);
        if (!S->full_dealt) S->maker4 = seat;
        if (seat != (S->b8_bidder >= 0 ? S->b8_bidder : S->bidder))
            sim_fail(S, "seat %d placed the indicator, the highest bidder is %d", seat,
                     S->b8_bidder >= 0 ? S->b8_bidder : S->bidder);
        S->maker = seat;
        S->indicator = a->card;
        S->ind_down = 1;
        S->known[seat] |= CARDSET_BIT(a->card);
        if (!S->full_dealt) {
            S->full_dealt = 1; /* R-TRUMP-PICK: then the deal is completed */
            for (int s = 0; s < S->seats; s++) S->known[s] |= S->all8[s];
        }
        break;
    case G304_DO_OPEN:
        S->h_open = 1;
        if (seat != S->maker) sim_fail(S, "seat %d declared open but the maker is %d", seat, S->maker);
        sim_show_indicator(S);
        break;
    case G304_DO_CAPS: {
        S->h_caps = 1;
        /* R-CAPS-CALL: the caller's team has won every trick so far; none in PCC or caps = off */
        if (S->pcc || S->rules.caps == G304_CAPS_OFF || S->caps_seat >= 0 ||
            S->team_tricks[1 - team_of(seat)])
            sim_fail(S, "Caps call by seat %d accepted (pcc %d, caps option %d, earlier call %d, "
                     "tricks lost %d)", seat, S->pcc, S->rules.caps, S->caps_seat,
                     S->team_tricks[1 - team_of(seat)]);
        S->caps_seat = seat;
        S->caps_at = g304_cards_played(b);
        S->caps_n = a->n;
        memcpy(S->caps_order, a->order, sizeof S->caps_order);
        cardset_t shown = 0;
        for (int i = 0; i < a->n; i++) shown |= CARDSET_BIT(a->order[i]);
        know_all(S, shown);
        if (seat == S->maker && S->ind_down) sim_show_indicator(S);
        break;
    }
    case G304_DO_SPOILT: S->h_spoilt = 1; break;
    default: break;
    }
    /* R-B8-RESULT: an eight-card bid sends the old indicator back to its owner's hand. */
    if (b->phase == G304_PHASE_BID8 && st->phase == G304_PHASE_TRUMP) S->ind_down = 0;
    sim_follow_plays(S, b, st);
    if (st->phase == G304_PHASE_PLAY) {
        if (st->trump_open != S->ind_public)
            sim_fail(S, "trump_open is %d, the rules say %d", st->trump_open, S->ind_public);
        if (st->ind_down != S->ind_down)
            sim_fail(S, "ind_down is %d, the rules say %d", st->ind_down, S->ind_down);
        if (b->phase != G304_PHASE_PLAY && S->rules.spoilt == G304_SPOILT_AUTO && sim_spoilt(S))
            sim_fail(S, "spoilt = auto but play began with spoilt trumps");
    }
    if (st->phase >= G304_PHASE_BID8 && st->phase != G304_PHASE_DONE) {
        if (st->maker != S->maker || st->indicator != S->indicator)
            sim_fail(S, "maker %d indicator %s, expected maker %d indicator %s", st->maker,
                     card_text(st->indicator), S->maker, card_text(S->indicator));
    }
}

/* ---- The leak check ---- */
static cardset_t sim_allowed(const sim *S, int seat)
{
    return S->done ? ~(cardset_t)0 : S->known[seat];
}

static void sim_check_card(sim *S, int seat, card_t c, cardset_t allowed, const char *where, int kind)
{
    if (c == CARD_HIDDEN || c == CARD_NONE) return;
    if (c >= S->pack) {
        sim_fail(S, "%s: bad card value %d (event %s)", where, c, ev_word(kind));
        return;
    }
    if (!(allowed & CARDSET_BIT(c)))
        sim_fail(S, "LEAK: seat %d learns %s via %s (event %s)", seat, card_str(c), where, ev_word(kind));
}

/* The points of a trick tell about its cards: a seat may learn them only if it knows every
 * card of the trick. */
static void sim_check_points(sim *S, int seat, const g304_trick *t, cardset_t allowed, const char *where)
{
    for (int i = 0; i < t->n; i++)
        if (t->card[i] >= S->pack || !(allowed & CARDSET_BIT(t->card[i]))) {
            sim_fail(S, "LEAK: seat %d learns the points of a trick with %s unseen (%s)", seat,
                     card_text(t->card[i]), where);
            return;
        }
}

static void sim_check_events(sim *S, const g304_state *st, const g304_events *ev)
{
    if (ev->n < 0 || ev->n > G304_MAX_EVENTS) {
        sim_fail(S, "event count %d", ev->n);
        return;
    }
    for (int k = 0; k < ev->n; k++) {
        const g304_event *e = &ev->ev[k];
        if (e->kind > G304_EV_RESULT || e->n > G304_TRICKS) {
            sim_fail(S, "event %d: kind %d with %d cards", k, e->kind, e->n);
            continue;
        }
        for (int s = 0; s < S->seats; s++) {
            int vis = g304_event_visible(e, s);
            int expect = e->vis == G304_VIS_ALL    ? 1
                         : e->vis == G304_VIS_SEAT ? s == e->to
                         : e->vis == G304_VIS_TEAM ? team_of(s) == e->to
                                                   : -1;
            if (vis != expect) sim_fail(S, "event %s vis %d to %d: visible(%d) = %d", ev_word(e->kind), e->vis, e->to, s, vis);
            if (!vis) continue;
            cardset_t allowed = (S->done && (e->kind == G304_EV_HAND || e->kind == G304_EV_RESULT ||
                                              e->kind == G304_EV_CAPS_JUDGED))
                                    ? ~(cardset_t)0
                                    : S->known[s];
            for (int i = 0; i < e->n; i++) sim_check_card(S, s, e->cards[i], allowed, "event cards", e->kind);
            if (e->kind == G304_EV_REVEAL) sim_check_card(S, s, e->other, allowed, "event other", e->kind);
            if (e->kind == G304_EV_TRICK && e->flag) {
                if (e->amount < 1 || e->amount > S->tricks || e->amount > st->trick_no)
                    sim_fail(S, "trick event for trick %d with trick_no %d", e->amount, st->trick_no);
                else
                    sim_check_points(S, s, &st->tricks[e->amount - 1], allowed, "trick event");
            }
        }
    }
}

static void sim_check_view_trick(sim *S, int seat, const g304_trick *v, const g304_trick *t,
                                 cardset_t allowed, const char *which)
{
    if (v->n != t->n) {
        sim_fail(S, "view of seat %d: %s trick has %d cards, the state %d", seat, which, v->n, t->n);
        return;
    }
    for (int i = 0; i < v->n; i++) {
        card_t c = v->card[i];
        if (c == CARD_HIDDEN) {
            if (!((t->facedown >> i) & 1))
                sim_fail(S, "view of seat %d: face-up %s in the %s trick is hidden", seat,
                         card_str(t->card[i]), which);
            continue;
        }
        if (c != t->card[i]) {
            sim_fail(S, "view of seat %d: %s trick card %d is %s, the state has %s", seat, which, i,
                     card_text(c), card_text(t->card[i]));
            continue;
        }
        if (c >= S->pack || !(allowed & CARDSET_BIT(c)))
            sim_fail(S, "LEAK: seat %d sees %s in the %s trick of its view", seat, card_text(c), which);
    }
    if (v->points) sim_check_points(S, seat, t, allowed, which);
}

/* The Caps solver judges from caps_knowledge_of(): a seat's information set must be what the
 * rules let it know — no more (the judge would use hidden cards) and no less (it would miss a
 * certain Caps). Its deductions must hold in the real deal. */
static void sim_check_knowledge(sim *S, const g304_state *st)
{
    if (st->phase != G304_PHASE_PLAY) return;
    int trump = trump_suit(S);
    cardset_t pack = S->pack == CARD_IDS ? CARDSET_ALL | CARDSET_SIXES : CARDSET_ALL;
    for (int s = 0; s < S->seats; s++) {
        caps_knowledge k;
        caps_knowledge_of(st, s, &k);
        cardset_t seen = pack & ~k.unseen;
        /* Knowing too little matters only while the judge asks about this seat (a Caps call ends
         * that, and its shown cards are not in the set). */
        cardset_t must = g304_caps_open_for(st, s) ? S->known[s] : seen & S->known[s];
        if ((seen & ~S->known[s]) || (must & ~seen))
            sim_fail(S, "information set of seat %d: sees %#llx, the rules let it know %#llx (extra %#llx, "
                     "missing %#llx)", s, set_hex(seen), set_hex(S->known[s]), set_hex(seen & ~S->known[s]),
                     set_hex(S->known[s] & ~seen));
        if (k.seats != S->seats) sim_fail(S, "information set of seat %d: %d seats", s, k.seats);
        int knows_trump = s == S->maker || S->ind_public;
        if ((k.indicator != CARD_NONE) != knows_trump || (knows_trump && k.trumps != (1u << trump)))
            sim_fail(S, "information set of seat %d: indicator %s, trumps %#x (knows trump %d)", s,
                     card_text(k.indicator), k.trumps, knows_trump);
        if (!(k.trumps & (1u << trump)))
            sim_fail(S, "information set of seat %d rules out the real trump %s (%#x)", s, suit_name(trump), k.trumps);
        for (int p = 0; p < S->seats; p++) {
            cardset_t hand = st->hand[p] & ~(p == S->maker ? CARDSET_BIT(S->indicator) : 0);
            for (int suit = 0; suit < SUIT_COUNT; suit++)
                if ((k.voids[p] >> suit & 1) && (hand & CARDSET_SUIT(suit)))
                    sim_fail(S, "information set of seat %d: seat %d void in %s, but holds %#llx", s, p,
                             suit_name(suit), set_hex(hand & CARDSET_SUIT(suit)));
        }
    }
}

/* After a move: a seat newly found certain is certain now, with an order of all its cards. */
static void sim_check_certain(sim *S, const g304_state *b, const g304_state *st)
{
    for (int s = 0; s < S->seats; s++) {
        if (st->certain_at[s] == b->certain_at[s]) continue;
        if (!S->judged || b->certain_at[s] != G304_NEVER) {
            sim_fail(S, "certain_at of seat %d changed %d -> %d (judged %d)", s, b->certain_at[s],
                     st->certain_at[s], S->judged);
            continue;
        }
        S->h_certain = 1;
        cardset_t order = 0;
        for (int i = 0; i < st->certain_n[s] && i < G304_TRICKS; i++) order |= CARDSET_BIT(st->certain_order[s][i]);
        if (st->certain_at[s] != g304_cards_played(st) || order != g304_cards_of(st, s) ||
            st->certain_n[s] != cardset_count(order) || S->pcc || S->rules.caps == G304_CAPS_OFF ||
            S->team_tricks[1 - team_of(s)])
            sim_fail(S, "seat %d certain at %d (now %d) with order %#llx of %d cards, holds %#llx", s,
                     st->certain_at[s], g304_cards_played(st), set_hex(order), st->certain_n[s],
                     set_hex(g304_cards_of(st, s)));
    }
}

static void sim_check_views(sim *S, const g304_state *st)
{
    for (int s = 0; s < S->seats; s++) {
        g304_view v;
        g304_view_of(st, s, &v);
        cardset_t allowed = sim_allowed(S, s);
        cardset_t mine = g304_cards_of(st, s);
        if (v.seat != s) sim_fail(S, "view of seat %d says seat %d", s, v.seat);
        if (v.hand != mine) sim_fail(S, "view of seat %d: hand %#llx, cards_of %#llx", s, set_hex(v.hand), set_hex(mine));
        if (v.hand & ~allowed)
            sim_fail(S, "LEAK: seat %d's view holds cards it was not dealt: %#llx", s, set_hex(v.hand & ~allowed));
        for (int p = 0; p < S->seats; p++)
            if (v.hand_size[p] != cardset_count(g304_cards_of(st, p)))
                sim_fail(S, "view of seat %d: seat %d holds %d cards, not %d", s, p, v.hand_size[p],
                         cardset_count(g304_cards_of(st, p)));
        if (v.indicator != CARD_NONE) {
            if (v.indicator != S->indicator)
                sim_fail(S, "view of seat %d: indicator %s, it is %s", s, card_text(v.indicator), card_text(S->indicator));
            sim_check_card(S, s, v.indicator, allowed, "view indicator", -1);
        }
        if (v.trump >= 0 && !S->done && s != S->maker && !S->ind_public)
            sim_fail(S, "LEAK: seat %d's view names the trump %s while closed", s, suit_name(v.trump));
        if (v.caps_shown & ~allowed)
            sim_fail(S, "LEAK: seat %d's view shows Caps cards %#llx", s, set_hex(v.caps_shown & ~allowed));
        if (st->phase == G304_PHASE_PLAY || st->phase == G304_PHASE_DONE) {
            if (st->trick_no < S->tricks)
                sim_check_view_trick(S, s, &v.current, &st->tricks[st->trick_no], allowed, "current");
            if (st->trick_no > 0 && v.last.n)
                sim_check_view_trick(S, s, &v.last, &st->tricks[st->trick_no - 1], allowed, "last");
        }
    }
}

/* ---- State invariants ---- */
static void sim_check_state(sim *S, const g304_state *st)
{
    int per_trick = sim_per_trick(S);
    cardset_t played[G304_MAX_SEATS] = {0}, all_played = 0;
    int pts[2] = {0, 0}, tricks[2] = {0, 0};
    int limit = st->trick_no < S->tricks ? st->trick_no + 1 : S->tricks;
    if (st->trick_no > S->tricks) {
        sim_fail(S, "trick_no %d", st->trick_no);
        return;
    }
    for (int t = 0; t < limit; t++) {
        const g304_trick *tr = &st->tricks[t];
        int complete = t < st->trick_no;
        if (tr->n > per_trick || (complete && tr->n != per_trick)) {
            sim_fail(S, "trick %d has %d cards (%d per trick, %s)", t + 1, tr->n, per_trick,
                     complete ? "complete" : "in progress");
            return;
        }
        for (int i = 0; i < tr->n; i++) {
            card_t c = tr->card[i];
            if (c >= S->pack || tr->seat[i] >= S->seats) {
                sim_fail(S, "trick %d: bad card %d / seat %d", t + 1, c, tr->seat[i]);
                return;
            }
            if (all_played & CARDSET_BIT(c)) sim_fail(S, "%s appears twice in the tricks", card_str(c));
            all_played |= CARDSET_BIT(c);
            played[tr->seat[i]] |= CARDSET_BIT(c);
        }
        if (complete) {
            if (tr->winner >= S->seats) {
                sim_fail(S, "trick %d is complete without a winner", t + 1);
                return;
            }
            pts[team_of(tr->winner)] += tr->points;
            tricks[team_of(tr->winner)]++;
        } else if (tr->winner != G304_NO_SEAT) {
            sim_fail(S, "trick %d in progress has winner %d", t + 1, tr->winner);
        }
    }
    if (st->points[0] != pts[0] || st->points[1] != pts[1])
        sim_fail(S, "points %d/%d, the tricks give %d/%d", st->points[0], st->points[1], pts[0], pts[1]);
    if (st->team_tricks[0] != tricks[0] || st->team_tricks[1] != tricks[1])
        sim_fail(S, "team tricks %d/%d, counted %d/%d", st->team_tricks[0], st->team_tricks[1],
                 tricks[0], tricks[1]);
    for (int s = 0; s < S->seats; s++) {
        cardset_t mine = g304_cards_of(st, s);
        cardset_t dealt = !S->deal_fixed ? 0 : S->full_dealt ? S->all8[s] : S->first4[s];
        if (mine & all_played) sim_fail(S, "seat %d holds played cards %#llx", s, set_hex(mine & all_played));
        if ((mine | played[s]) != dealt)
            sim_fail(S, "seat %d: hand %#llx + played %#llx != dealt %#llx", s, set_hex(mine), set_hex(played[s]),
                     set_hex(dealt));
        if (S->deal_fixed && st->first4[s] != S->first4[s])
            sim_fail(S, "seat %d: first batch %#llx, R-DEAL gives %#llx", s, set_hex(st->first4[s]),
                     set_hex(S->first4[s]));
        if (st->dealt[s] != dealt && st->phase != G304_PHASE_DONE)
            sim_fail(S, "seat %d: dealt %#llx, R-DEAL gives %#llx", s, set_hex(st->dealt[s]), set_hex(dealt));
        cardset_t down = S->ind_down && s == S->maker ? CARDSET_BIT(S->indicator) : 0;
        if (st->phase != G304_PHASE_DONE && st->hand[s] != (mine & ~down))
            sim_fail(S, "seat %d: hand %#llx, cards_of %#llx, indicator down %#llx", s, set_hex(st->hand[s]),
                     set_hex(mine), set_hex(down));
    }
    for (int s = S->seats; s < G304_MAX_SEATS; s++) /* the seats a four-player game lacks hold nothing */
        if (st->hand[s] || st->dealt[s]) sim_fail(S, "seat %d of %d holds cards", s, S->seats);
}

/* ---- The end of a hand ---- */
/* R-TOKENS, R-CAPS-SCORE, R-CAPS-WRONG, R-CAPS-EXTERNAL, R-PCC, R-TRANSFER: the score of a hand
 * played to the end, from the bid, the points, the tricks, the Caps call and the judge's verdict
 * (which this test cannot recompute: it checks that the verdict is consistent and sound). */
static void sim_check_score(sim *S, const g304_state *st, const int16_t before[2])
{
    const g304_result *r = &st->result;
    int mt = team_of(S->maker);
    int made = S->pcc ? S->team_tricks[mt] == S->tricks : st->points[mt] >= (int)S->bid;
    int win, lose;
    if (S->bid == G304_PCC) win = 4, lose = 5;
    else if (S->bid >= 250) win = 3, lose = 4;
    else if (S->bid >= 200) win = 2, lose = 3;
    else win = 1, lose = 2;
    int wrong = r->wrong_seat != G304_NO_SEAT;
    int ct = S->caps_seat >= 0 ? team_of(S->caps_seat) : -1;
    int payer, amount, bonus = 0;
    if (wrong) S->h_wrong = 1;
    if ((wrong || r->caps_on_time) && (!S->judged || S->pcc || S->rules.caps == G304_CAPS_OFF))
        sim_fail(S, "Caps verdict (wrong seat %d, on time %d) in a hand without Caps judging", r->wrong_seat,
                 r->caps_on_time);
    if (wrong != (r->wrong_reason != G304_WRONG_NONE))
        sim_fail(S, "wrong seat %d with reason %d", r->wrong_seat, r->wrong_reason);
    if (r->wrong_reason == G304_WRONG_MISSING &&
        (ct >= 0 || team_of(r->wrong_seat) != mt || st->certain_at[r->wrong_seat] == G304_NEVER))
        sim_fail(S, "missing Caps charged to seat %d (caller %d, certain at %d)", r->wrong_seat, S->caps_seat,
                 st->certain_at[r->wrong_seat]);
    if (r->wrong_reason == G304_WRONG_EARLY && (r->wrong_seat != S->caps_seat || st->call_verdict != G304_CALL_NOT_CERTAIN))
        sim_fail(S, "early Caps charged to seat %d (caller %d, verdict %d)", r->wrong_seat, S->caps_seat, st->call_verdict);
    if (r->wrong_reason == G304_WRONG_LATE && (r->wrong_seat != S->caps_seat || ct != mt))
        sim_fail(S, "late Caps charged to seat %d (caller %d)", r->wrong_seat, S->caps_seat);
    int due = 0;
    for (int s = mt; s < S->seats; s += 2) due |= st->certain_at[s] != G304_NEVER;
    if (ct < 0 && !wrong && S->judged && !S->pcc && S->rules.caps != G304_CAPS_OFF && due)
        sim_fail(S, "Caps was certain for the maker's team and never called, without Wrong Caps");
    /* soundness of the judge: a call it found certain wins every trick, card by card as stated */
    if (ct >= 0 && st->call_verdict == G304_CALL_CERTAIN && !r->caps_won)
        sim_fail(S, "UNSOUND: Caps by seat %d judged certain, but its team lost a trick (tricks %d/%d)",
                 S->caps_seat, S->team_tricks[0], S->team_tricks[1]);
    if (ct >= 0 && st->call_verdict == G304_CALL_CERTAIN && r->caps_broken)
        sim_fail(S, "Caps by seat %d judged certain, but its stated order could not be played as stated "
                 "(caps_broken)", S->caps_seat);
    if (S->caps_certain_call &&
        (st->call_verdict == G304_CALL_NOT_CERTAIN ||
         (st->call_verdict == G304_CALL_CERTAIN && (wrong || !r->caps_on_time))))
        sim_fail(S, "Caps called with the judge's own order as soon as certain: verdict %d, wrong %d, on time %d",
                 st->call_verdict, r->wrong_reason, r->caps_on_time);

    if (S->pcc) {
        payer = made ? 1 - mt : mt, amount = made ? win : lose;
    } else if (ct >= 0) {
        if (S->team_tricks[1 - ct]) payer = ct, amount = 5; /* called, then lost a trick */
        else if (wrong) payer = ct, amount = 2;              /* Wrong Caps */
        else if (ct == mt) /* called before the first card of the second-to-last trick */
            bonus = S->caps_at <= (S->tricks - 2) * S->seats, payer = 1 - mt, amount = win + bonus;
        else payer = mt, amount = lose + 1;                  /* External Caps */
    } else if (wrong) {
        payer = mt, amount = 2;                              /* due and never called */
    } else {
        payer = made ? 1 - mt : mt, amount = made ? win : lose;
    }
    int pay = amount < before[payer] ? amount : before[payer];
    int expect[2];
    expect[payer] = -pay;
    expect[1 - payer] = S->rules.scoring == G304_SCORING_TRANSFER ? pay : 0;
    if (r->made != made || r->delta[0] != expect[0] || r->delta[1] != expect[1] || r->caps_bonus != bonus)
        sim_fail(S, "scoring: bid %u by team %d, points %d/%d, tricks %d/%d, Caps by %d at %d, wrong %d: made %d "
                 "delta %d/%d bonus %d, expected made %d delta %d/%d bonus %d", S->bid, mt, st->points[0],
                 st->points[1], S->team_tricks[0], S->team_tricks[1], S->caps_seat, S->caps_at, r->wrong_reason,
                 r->made, r->delta[0], r->delta[1], r->caps_bonus, made, expect[0], expect[1], bonus);
}

static void sim_check_result(sim *S, const g304_state *st)
{
    const g304_result *r = &st->result;
    int16_t before[2] = {S->tokens[0], S->tokens[1]};
    int after[2] = {st->tokens[0], st->tokens[1]};
    int start = S->rules.start_tokens;
    for (int t = 0; t < 2; t++) {
        if (after[t] < 0) sim_fail(S, "team %d has %d tokens", t, after[t]);
        if (r->delta[t] != after[t] - before[t])
            sim_fail(S, "team %d: delta %d but tokens went %d -> %d", t, r->delta[t], before[t], after[t]);
    }
    if (S->rules.scoring == G304_SCORING_TRANSFER && after[0] + after[1] != 2 * start)
        sim_fail(S, "transfer scoring: tokens %d + %d != %d", after[0], after[1], 2 * start);
    if (S->rules.scoring == G304_SCORING_BANK && (after[0] > before[0] || after[1] > before[1]))
        sim_fail(S, "bank scoring: tokens rose %d/%d -> %d/%d", before[0], before[1], after[0], after[1]);
    int over = after[0] == 0 || after[1] == 0;
    if (r->match_over != over)
        sim_fail(S, "match_over %d with tokens %d/%d", r->match_over, after[0], after[1]);
    if (over && after[0] != after[1]) {
        int winner = after[0] ? 0 : 1;
        if (r->match_winner != winner) sim_fail(S, "match winner %d, tokens %d/%d", r->match_winner, after[0], after[1]);
    }
    int same = S->dealer, next = seat_after(S, S->dealer, 1);
    switch (r->end) {
    case G304_END_REDEAL:
    case G304_END_ALL_PASS:
    case G304_END_SPOILT:
        if (r->delta[0] || r->delta[1]) sim_fail(S, "end %d moved tokens %d/%d", r->end, r->delta[0], r->delta[1]);
        if (r->next_dealer != (r->end == G304_END_ALL_PASS ? next : same))
            sim_fail(S, "end %d: next dealer %d (dealer %d)", r->end, r->next_dealer, S->dealer);
        if (r->end == G304_END_ALL_PASS) S->h_all_pass = 1;
        if (r->end == G304_END_SPOILT) {
            if (!sim_spoilt(S)) sim_fail(S, "hand ended spoilt, but the opponents hold trumps");
            if (r->spoilt_seat == G304_NO_SEAT) {
                S->h_spoilt_auto = 1;
                if (S->rules.spoilt != G304_SPOILT_AUTO) sim_fail(S, "automatic spoilt with spoilt = manual");
            } else {
                S->h_spoilt_ok = 1;
            }
        }
        if (r->end == G304_END_REDEAL && !S->h_redeal) sim_fail(S, "redeal without a redeal move");
        break;
    case G304_END_VIOLATION:
        S->h_violation = 1;
        if (sim_spoilt(S)) sim_fail(S, "violation, but the trumps were spoilt");
        if (r->spoilt_seat >= S->seats) {
            sim_fail(S, "violation without a declaring seat");
        } else {
            int bad = team_of(r->spoilt_seat);
            if (r->delta[bad] > 0 || r->delta[1 - bad] < 0)
                sim_fail(S, "violation by team %d scored %d/%d", bad, r->delta[0], r->delta[1]);
        }
        break;
    case G304_END_PLAYED: {
        S->h_played = 1;
        if (st->trick_no != S->tricks) {
            sim_fail(S, "played to the end with trick_no %d", st->trick_no);
            break;
        }
        int total = 304;
        for (int s = 0; s < S->seats; s++) /* R-PCC, R-SIX-PCC: the teammates' cards are not played */
            if (S->pcc && teammates(S->maker, s)) total -= cardset_points(S->all8[s]);
        if (st->points[0] + st->points[1] != total)
            sim_fail(S, "points %d + %d != %d", st->points[0], st->points[1], total);
        if (r->next_dealer != next) sim_fail(S, "next dealer %d after dealer %d", r->next_dealer, S->dealer);
        if (r->made != 0 && r->made != 1) sim_fail(S, "played hand with made = %d", r->made);
        sim_check_score(S, st, before);
        break;
    }
    default: sim_fail(S, "hand over with end %d", r->end);
    }
    if (r->caps_seat != (S->caps_seat < 0 ? G304_NO_SEAT : S->caps_seat) ||
        (S->caps_seat >= 0 && r->end == G304_END_PLAYED && r->caps_broken != S->caps_skipped))
        sim_fail(S, "result: Caps seat %d broken %d, expected seat %d broken %d", r->caps_seat,
                 r->caps_broken, S->caps_seat, S->caps_skipped);
    if (S->caps_seat >= 0 && r->end == G304_END_PLAYED &&
        r->caps_won != (S->team_tricks[team_of(S->caps_seat)] == S->tricks))
        sim_fail(S, "result: caps_won %d, the caller's team won %d tricks", r->caps_won,
                 S->team_tricks[team_of(S->caps_seat)]);
    if (r->end == G304_END_SPOILT || r->end == G304_END_VIOLATION) {
        if (r->spoilt_ok != (r->end == G304_END_SPOILT))
            sim_fail(S, "end %d with spoilt_ok %d", r->end, r->spoilt_ok);
    }
}

/* ---- Moves ---- */
static int sim_legal(sim *S, const g304_state *st, int seat, g304_action *out)
{
    int n = g304_legal(st, seat, out);
    if (n < 0 || n > G304_MAX_LEGAL) {
        sim_fail(S, "g304_legal(seat %d) returned %d", seat, n);
        return 0;
    }
    return n;
}

/* Applies a move that must be refused (to a copy); the copy must not change. */
static void sim_expect_refused(sim *S, const g304_state *st, g304_state *copy, int seat,
                               const g304_action *a, const char *why)
{
    g304_events ev;
    g304_error err;
    ev.n = 0;
    memset(&err, 0, sizeof err);
    g304_code code = g304_apply(copy, seat, a, &ev, &err);
    char text[48];
    if (code == G304_OK) {
        sim_fail_move(S, seat, a, "seat %d: %s accepted in phase %d (%s)", seat,
                      action_text(a, text, sizeof text), st->phase, why);
        memcpy(copy, st, sizeof *copy);
        return;
    }
    if (err.code != code || !memchr(err.msg, 0, sizeof err.msg) || !err.msg[0])
        sim_fail_move(S, seat, a, "seat %d: %s refused with %d but error code %d, message \"%.40s\"", seat,
                      action_text(a, text, sizeof text), code, err.code, err.msg);
    if (memcmp(copy, st, sizeof *copy) != 0) {
        sim_fail_move(S, seat, a, "seat %d: refused %s (%s) changed the state", seat,
                      action_text(a, text, sizeof text), g304_code_name(code));
        memcpy(copy, st, sizeof *copy);
    }
}

/* Applies a move that must be accepted (to a copy), then restores the copy. */
static void sim_expect_accepted(sim *S, const g304_state *st, g304_state *copy, int seat,
                                const g304_action *a, const char *why)
{
    g304_events ev;
    g304_error err;
    ev.n = 0;
    char text[48];
    g304_code code = g304_apply(copy, seat, a, &ev, &err);
    if (code != G304_OK)
        sim_fail_move(S, seat, a, "seat %d: %s refused in phase %d (%s: %s) though %s", seat,
                      action_text(a, text, sizeof text), st->phase, g304_code_name(code), err.msg, why);
    memcpy(copy, st, sizeof *copy);
}

/* Every candidate move by every seat: accepted iff listed by g304_legal(); Caps and spoilt
 * iff g304_may_caps() / g304_may_spoilt(). */
static void sim_exhaustive(sim *S, const g304_state *st)
{
    g304_state copy;
    memcpy(&copy, st, sizeof copy);
    for (int seat = 0; seat < S->seats && !S->failed; seat++) {
        g304_action legal[G304_MAX_LEGAL + 8];
        int n = sim_legal(S, st, seat, legal);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < i; j++)
                if (action_same(&legal[i], &legal[j]))
                    sim_fail_move(S, seat, &legal[i], "g304_legal lists a move twice");
            if (!action_listed(&legal[i], universe, universe_n))
                sim_fail_move(S, seat, &legal[i], "g304_legal lists a move outside the tested universe");
            sim_expect_accepted(S, st, &copy, seat, &legal[i], "g304_legal lists it");
        }
        for (int u = 0; u < universe_n; u++) {
            const g304_action *a = &universe[u];
            if (action_listed(a, legal, n)) continue; /* accepted above */
            sim_expect_refused(S, st, &copy, seat, a, "g304_legal does not list it");
        }
        g304_action d;
        memset(&d, 0, sizeof d);
        d.kind = G304_DO_SPOILT;
        if (g304_may_spoilt(st, seat))
            sim_expect_accepted(S, st, &copy, seat, &d, "g304_may_spoilt says yes");
        else
            sim_expect_refused(S, st, &copy, seat, &d, "g304_may_spoilt says no");
        d.kind = G304_DO_CAPS;
        cardset_t mine = g304_cards_of(st, seat);
        for (cardset_t m = mine; m; m &= m - 1) d.order[d.n++] = cardset_first(m);
        if (g304_may_caps(st, seat) && d.n)
            sim_expect_accepted(S, st, &copy, seat, &d, "g304_may_caps says yes");
        else
            sim_expect_refused(S, st, &copy, seat, &d, "g304_may_caps says no");
        if (d.n) {
            d.n--; /* one card short: never a valid order */
            sim_expect_refused(S, st, &copy, seat, &d, "the order lacks a card");
        }
    }
}

/* A deliberately illegal move on the real state: must be refused and change nothing. */
static void sim_try_illegal(sim *S, g304_state *st)
{
    g304_state before;
    memcpy(&before, st, sizeof before);
    int seat = (int)rng_below(&S->rng, (uint32_t)S->seats);
    g304_action a;
    memset(&a, 0, sizeof a);
    uint32_t pick = rng_below(&S->rng, 10);
    if (pick == 0) {
        a.kind = G304_DO_SPOILT;
        if (g304_may_spoilt(st, seat)) return;
    } else if (pick == 1) {
        a.kind = G304_DO_CAPS;
        if (g304_may_caps(st, seat)) return;
        cardset_t mine = g304_cards_of(st, seat);
        for (cardset_t m = mine; m; m &= m - 1) a.order[a.n++] = cardset_first(m);
    } else {
        g304_action legal[G304_MAX_LEGAL + 8];
        int n = sim_legal(S, st, seat, legal);
        a = universe[rng_below(&S->rng, (uint32_t)universe_n)];
        if (action_listed(&a, legal, n)) return;
    }
    S->h_illegal = 1;
    sim_expect_refused(S, &before, st, seat, &a, "a deliberately illegal move");
}

static void sim_apply(sim *S, g304_state *st, int seat, const g304_action *a)
{
    g304_state before;
    g304_events ev;
    g304_error err;
    memcpy(&before, st, sizeof before);
    ev.n = 0;
    g304_code code = S->judged ? judge_apply(S->solver, st, seat, a, &ev, &err) : g304_apply(st, seat, a, &ev, &err);
    if (code != G304_OK) {
        sim_fail_move(S, seat, a, "chosen move refused: %s: %s", g304_code_name(code), err.msg);
        return;
    }
    sim_check_certain(S, &before, st);
    if (S->nlog < SIM_LOG_MAX) S->log[S->nlog++] = (sim_move){.seat = (uint8_t)seat, .a = *a};
    sim_observe(S, &before, st, seat, a);
    if (a->kind == G304_DO_SPOILT) {
        int spoilt = sim_spoilt(S);
        if (st->phase != G304_PHASE_DONE || st->result.end != (spoilt ? G304_END_SPOILT : G304_END_VIOLATION))
            sim_fail(S, "spoilt call (trumps %sspoilt) gave phase %d end %d", spoilt ? "" : "not ",
                     st->phase, st->result.end);
    }
    if (st->phase == G304_PHASE_DONE) S->done = 1;
    sim_check_events(S, st, &ev);
    sim_check_state(S, st);
    sim_check_views(S, st);
    sim_check_knowledge(S, st);
}

/* The random policy: a random legal move, biased so that hands look like hands: pass 60% in
 * the four-card round (80% in the eight-card round), the lowest bid half the time when bidding
 * (else bids would climb to 300 and every game would open after trick 1, R-250), Partner Close
 * Caps for a tenth of eight-card bids, redeal 30% when allowed. */
static void sim_choose(sim *S, const g304_state *st, int seat, g304_action *out)
{
    g304_action legal[G304_MAX_LEGAL + 8];
    int n = sim_legal(S, st, seat, legal);
    int pass = -1, redeal = -1, ask = -1, pcc = -1, bids[G304_MAX_LEGAL + 8], nb = 0,
        others[G304_MAX_LEGAL + 8], no = 0;
    for (int i = 0; i < n; i++) {
        if (legal[i].kind == G304_DO_PASS) pass = i;
        else if (legal[i].kind == G304_DO_REDEAL) redeal = i;
        else if (legal[i].kind == G304_DO_PARTNER) ask = i;
        else if (legal[i].kind == G304_DO_BID && legal[i].amount == G304_PCC) pcc = i;
        else if (legal[i].kind == G304_DO_BID) bids[nb++] = i;
        else others[no++] = i;
    }
    int bidding = st->phase == G304_PHASE_BID4 || st->phase == G304_PHASE_BID8;
    if (S->favoured >= 0 && st->phase != G304_PHASE_PLAY) {
        /* the favoured team takes the contract at the lowest bid, with its longest suit as
         * trump; nobody cuts, nobody asks for a redeal */
        int mine = team_of(seat) == S->favoured, pick = -1;
        if (st->phase == G304_PHASE_CUT) {
            for (int i = 0; i < n && pick < 0; i++)
                if (legal[i].amount == 0) pick = i;
        } else if (st->phase == G304_PHASE_TRUMP) {
            int best_len = -1;
            for (int i = 0; i < n; i++) {
                int len = cardset_count(S->all8[seat] & CARDSET_SUIT(suit_of(legal[i].card)));
                if (len > best_len || (len == best_len && card_power(legal[i].card) < card_power(legal[pick].card)))
                    best_len = len, pick = i;
            }
        } else if (st->phase == G304_PHASE_BID4 && mine && (S->bidder < 0 || team_of(S->bidder) != S->favoured)) {
            pick = nb ? bids[0] : pass;
        } else {
            pick = pass;
        }
        if (pick >= 0) {
            *out = legal[pick];
            return;
        }
    }
    if (!bidding && st->phase == G304_PHASE_PLAY && S->favoured >= 0 && rng_chance(&S->rng, 8000)) {
        /* strongest (or weakest) card: a trump over the suit led over the rest, then by rank */
        int sign = team_of(seat) == S->favoured ? 1 : -1, best = -1, best_score = 0;
        const g304_trick *t = &st->tricks[st->trick_no];
        for (int k = 0; k < no; k++) {
            const g304_action *m = &legal[others[k]];
            if (m->kind != G304_DO_PLAY) continue;
            int suit = suit_of(m->card);
            int score = (suit == trump_suit(S) ? 16 : t->n && suit == suit_of(t->card[0]) ? 8 : 0) +
                        card_power(m->card);
            if (best < 0 || sign * score > sign * best_score) best = others[k], best_score = score;
        }
        if (best >= 0) {
            *out = legal[best];
            return;
        }
    }
    if (!bidding) {
        *out = legal[others[rng_below(&S->rng, (uint32_t)no)]];
        return;
    }
    int pick = pass;
    if (redeal >= 0 && rng_chance(&S->rng, 3000)) pick = redeal;
    else if (pass >= 0 && rng_chance(&S->rng, st->phase == G304_PHASE_BID4 ? 6000 : 8000)) pick = pass;
    else if (ask >= 0 && rng_chance(&S->rng, 1500)) pick = ask;
    else if (pcc >= 0 && (nb == 0 || rng_chance(&S->rng, 1000))) pick = pcc;
    else if (nb > 0) pick = bids[rng_chance(&S->rng, 5000) ? 0 : rng_below(&S->rng, (uint32_t)nb)];
    if (pick < 0) pick = pass >= 0 ? pass : 0;
    *out = legal[pick];
}

static void sim_new_match(sim *S)
{
    g304_rules *r = &S->rules;
    g304_rules_default(r);
    r->cut = (uint8_t)rng_below(&S->rng, 2);
    r->step_above_200 = rng_below(&S->rng, 2) ? 5 : 10;
    r->bidding = (uint8_t)rng_below(&S->rng, 2);
    r->bid8_opener = (uint8_t)rng_below(&S->rng, 2);
    r->spoilt = (uint8_t)rng_below(&S->rng, 2);
    r->caps = (uint8_t)rng_below(&S->rng, 3);
    r->scoring = (uint8_t)rng_below(&S->rng, 2);
    r->start_tokens = (uint8_t)(3 + rng_below(&S->rng, 9));
    cr_assert_eq(g304_rules_set_players(r, S->players, NULL), 0);
    S->seats = g304_seats(r);
    S->tricks = g304_tricks(r);
    S->pack = g304_deck_size(r);
    S->dealer = (int)rng_below(&S->rng, (uint32_t)S->seats);
    S->tokens[0] = S->tokens[1] = r->start_tokens;
    S->in_match = 1;
}

/* Plays one hand; returns 1 if the match goes on. */
static int sim_hand(sim *S, uint32_t exhaustive_per10k, sim_rng *check_rng)
{
    g304_state st;
    g304_events ev;
    if (!S->in_match) sim_new_match(S);
    S->nlog = 0;
    S->failed = 0;
    S->favoured = rng_chance(&S->rng, 3000) ? (int)rng_below(&S->rng, 2) : -1;
    /* A favoured team gets the best of 16 shuffles (most card points), still one seed. */
    int best_points = -1;
    for (int tries = S->favoured >= 0 ? 16 : 1; tries > 0; tries--) {
        uint8_t seed[DEAL_SEED_BYTES];
        card_t deck[CARD_IDS];
        for (int i = 0; i < DEAL_SEED_BYTES; i += 8) {
            uint64_t x = rng_u64(&S->rng);
            memcpy(seed + i, &x, 8);
        }
        deal_shuffle(seed, deck, S->pack); /* R-SHUFFLE over the game's pack (README) */
        int points = 0;
        for (int i = 0; i < S->pack && S->favoured >= 0; i++)
            if (team_of(dealt_to(S, i)) == S->favoured) points += card_points(deck[i]);
        if (points > best_points) {
            best_points = points;
            memcpy(S->deal_seed, seed, sizeof seed);
            memcpy(S->deck, deck, sizeof deck);
        }
    }
    memset(S->known, 0, sizeof S->known);
    S->deal_fixed = S->full_dealt = 0;
    S->maker = -1;
    S->indicator = CARD_NONE;
    S->ind_down = S->ind_public = 0;
    S->bid = 0;
    S->bidder = S->asker = S->b8_last = S->b8_bidder = S->maker4 = -1;
    S->pcc = S->done = S->b4_moves = S->spoke = S->b8_spoke = S->exhaust = 0;
    S->caps_seat = -1;
    S->caps_n = S->caps_next = S->caps_skipped = S->caps_at = S->caps_certain_call = 0;
    S->team_tricks[0] = S->team_tricks[1] = 0;
    S->h_pcc = S->h_open = S->h_bid8 = S->h_ask = S->h_redeal = S->h_spoilt = S->h_spoilt_ok =
        S->h_spoilt_auto = S->h_caps = S->h_illegal = S->h_all_pass = S->h_violation = S->h_played =
            S->h_trump_reveal = S->h_certain = S->h_certain_call = S->h_wrong = 0;

    ev.n = 0;
    g304_start(&st, &S->rules, S->dealer, S->tokens, S->deck, &ev);
    if (st.tokens[0] != S->tokens[0] || st.tokens[1] != S->tokens[1] || st.dealer != S->dealer)
        sim_fail(S, "start: tokens %d/%d dealer %d", st.tokens[0], st.tokens[1], st.dealer);
    if (S->rules.cut) {
        if (st.phase != G304_PHASE_CUT || st.to_act != seat_after(S, S->dealer, S->seats - 1))
            sim_fail(S, "cut option: phase %d to_act %d", st.phase, st.to_act);
    } else {
        if (memcmp(st.deck, S->deck, (size_t)S->pack) != 0) sim_fail(S, "start without cut changed the deck");
        sim_fix_deal(S, S->deck);
    }
    sim_check_events(S, &st, &ev);
    sim_check_state(S, &st);
    sim_check_views(S, &st);

    int moves = 0;
    while (!S->failed && st.phase != G304_PHASE_DONE) {
        if (++moves > SIM_MAX_MOVES) {
            sim_fail(S, "hand not over after %d moves", SIM_MAX_MOVES);
            break;
        }
        int seat = st.to_act;
        if (seat >= S->seats) {
            sim_fail(S, "phase %d with nobody to act (%d)", st.phase, seat);
            break;
        }
        g304_action legal[G304_MAX_LEGAL + 8];
        if (sim_legal(S, &st, seat, legal) == 0) {
            sim_fail(S, "seat %d to act in phase %d has no legal move", seat, st.phase);
            break;
        }
        if (seat == S->caps_seat) sim_fail(S, "the Caps caller is asked to act (the game plays for him)");
        for (int s = 0; s < S->seats; s++) {
            int play = st.phase == G304_PHASE_PLAY;
            int caps_ok = play && !S->pcc && S->rules.caps != G304_CAPS_OFF && S->caps_seat < 0 &&
                          !S->team_tricks[1 - team_of(s)] && g304_cards_of(&st, s);
            if (!!g304_may_spoilt(&st, s) != play || !!g304_may_caps(&st, s) != caps_ok)
                sim_fail(S, "seat %d: may_spoilt %d may_caps %d, the rules say %d %d", s,
                         g304_may_spoilt(&st, s), g304_may_caps(&st, s), play, caps_ok);
        }
        if (st.phase == G304_PHASE_BID4 && seat == S->bidder)
            sim_fail(S, "seat %d is to act while holding the highest bid (R-B4-ORDER)", seat);
        if (S->pcc && st.phase == G304_PHASE_PLAY && teammates(S->maker, seat))
            sim_fail(S, "the PCC partner (a teammate of the maker) is to act");
        if (exhaustive_per10k && rng_chance(check_rng, exhaustive_per10k)) sim_exhaustive(S, &st);
        if (S->failed) break;

        g304_action a;
        memset(&a, 0, sizeof a);
        if (rng_chance(&S->rng, 200)) {
            sim_try_illegal(S, &st);
            if (S->failed) break;
        }
        if (st.phase == G304_PHASE_PLAY && S->judged) {
            /* Caps has just become certain for a seat: half the time it calls, with the order
             * the judge found; the team must then win every trick (checked at the end). */
            int now = g304_cards_played(&st), caller = -1;
            for (int s = 0; s < S->seats && caller < 0; s++)
                if (st.certain_at[s] == now && g304_may_caps(&st, s)) caller = s;
            if (caller >= 0 && rng_chance(&S->rng, 5000)) {
                int first = 1; /* no teammate was certain earlier */
                for (int s = 0; s < S->seats; s++)
                    if (teammates(caller, s) && st.certain_at[s] != G304_NEVER && st.certain_at[s] != now) first = 0;
                a.kind = G304_DO_CAPS;
                a.n = st.certain_n[caller];
                memcpy(a.order, st.certain_order[caller], sizeof a.order);
                S->caps_certain_call = first;
                S->h_certain_call = 1;
                sim_apply(S, &st, caller, &a);
                continue;
            }
        }
        if (st.phase == G304_PHASE_PLAY) {
            int spoilt = sim_spoilt(S);
            int who = (int)rng_below(&S->rng, (uint32_t)S->seats);
            if (rng_chance(&S->rng, spoilt ? 1500 : 10) && g304_may_spoilt(&st, who)) {
                a.kind = G304_DO_SPOILT;
                sim_apply(S, &st, who, &a);
                continue;
            }
            if (rng_chance(&S->rng, 50)) {
                int eligible[G304_MAX_SEATS], ne = 0;
                for (int s = 0; s < S->seats; s++)
                    if (g304_may_caps(&st, s)) eligible[ne++] = s;
                if (ne) {
                    int caller = eligible[rng_below(&S->rng, (uint32_t)ne)];
                    a.kind = G304_DO_CAPS;
                    for (cardset_t m = g304_cards_of(&st, caller); m; m &= m - 1)
                        a.order[a.n++] = cardset_first(m);
                    for (int i = a.n - 1; i > 0; i--) {
                        int j = (int)rng_below(&S->rng, (uint32_t)i + 1);
                        card_t t = a.order[i];
                        a.order[i] = a.order[j];
                        a.order[j] = t;
                    }
                    sim_apply(S, &st, caller, &a);
                    continue;
                }
            }
            /* R-OPEN may come from the maker when it is not his turn. */
            if (st.trick_no == 0 && st.tricks[0].n == 0 && S->maker >= 0 && S->maker != seat &&
                rng_chance(&S->rng, 1000)) {
                g304_action ml[G304_MAX_LEGAL + 8];
                int mn = sim_legal(S, &st, S->maker, ml);
                for (int i = 0; i < mn; i++)
                    if (ml[i].kind == G304_DO_OPEN) {
                        a = ml[i];
                        break;
                    }
                if (a.kind == G304_DO_OPEN) {
                    sim_apply(S, &st, S->maker, &a);
                    continue;
                }
            }
        }
        sim_choose(S, &st, seat, &a);
        sim_apply(S, &st, seat, &a);
    }
    if (S->failed) {
        S->in_match = 0;
        return 0;
    }
    sim_check_result(S, &st);
    if (S->failed || st.result.match_over) {
        S->in_match = 0;
        return 0;
    }
    S->tokens[0] = st.tokens[0];
    S->tokens[1] = st.tokens[1];
    S->dealer = st.result.next_dealer;
    return 1;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    return strtol(v, NULL, 0);
}

/* Plays `hands` hands of `players`-player 304 (matches of random options) and checks them all. */
static void simulate(int players, long hands, long judged)
{
    universe_build();
    const char *seed_text = getenv("CARDROOM_SIM_SEED");
    uint64_t seed = seed_text && *seed_text ? strtoull(seed_text, NULL, 0) : 304;
    long exhaustive = env_long("CARDROOM_SIM_EXHAUSTIVE", 10);
    if (exhaustive < 0) exhaustive = 0;
    if (exhaustive > 100) exhaustive = 100;

    static sim S; /* large: the move log */
    memset(&S, 0, sizeof S);
    S.seed = seed;
    S.players = players;
    S.solver = caps_solver_new(0);
    cr_assert_not_null(S.solver, "caps_solver_new");
    sim_rng check_rng = {seed ^ 0xC0FFEE304ull};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fprintf(stderr, "random (%d players): %ld hands, seed %" PRIu64 ", exhaustive check on %ld%% of states\n",
            players, hands, seed, exhaustive);

    long c_pcc = 0, c_open = 0, c_bid8 = 0, c_ask = 0, c_redeal = 0, c_spoilt = 0, c_spoilt_ok = 0,
         c_spoilt_auto = 0, c_caps = 0, c_illegal = 0, c_all_pass = 0, c_violation = 0,
         c_played = 0, c_reveal = 0, c_matches = 0, c_judged = 0, c_certain = 0, c_certain_call = 0,
         c_wrong = 0;
    for (long h = 0; h < hands; h++) {
        S.hand = h;
        S.rng.s = seed ^ ((uint64_t)(h + 1) * 0xD1B54A32D192ED03ull);
        rng_u64(&S.rng);
        if (!S.in_match) c_matches++;
        S.judged = rng_chance(&check_rng, (uint32_t)(judged * 100));
        sim_hand(&S, (uint32_t)(exhaustive * 100), &check_rng);
        c_judged += S.judged;
        c_certain += S.h_certain;
        c_certain_call += S.h_certain_call;
        c_wrong += S.h_wrong;
        c_pcc += S.h_pcc;
        c_open += S.h_open;
        c_bid8 += S.h_bid8;
        c_ask += S.h_ask;
        c_redeal += S.h_redeal;
        c_spoilt += S.h_spoilt;
        c_spoilt_ok += S.h_spoilt_ok;
        c_spoilt_auto += S.h_spoilt_auto;
        c_caps += S.h_caps;
        c_illegal += S.h_illegal;
        c_all_pass += S.h_all_pass;
        c_violation += S.h_violation;
        c_played += S.h_played;
        c_reveal += S.h_trump_reveal;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr,
            "random (%d players): %ld hands in %.1f s, %ld matches; hands with: played %ld, PCC %ld, open %ld, "
            "%s-card bid %ld, ask %ld, redeal %ld, all pass %ld, face-down trump revealed %ld, "
            "spoilt call %ld (correct %ld, violation %ld), auto spoilt %ld, Caps call %ld, "
            "illegal tries %ld; judged %ld, Caps certain %ld, called when certain %ld, Wrong Caps %ld; "
            "failures %ld\n",
            players, hands, secs, c_matches, c_played, c_pcc, c_open, players == 6 ? "six" : "eight", c_bid8, c_ask,
            c_redeal, c_all_pass, c_reveal, c_spoilt, c_spoilt_ok, c_violation, c_spoilt_auto, c_caps, c_illegal,
            c_judged, c_certain, c_certain_call, c_wrong, g_failures);
    caps_solver_free(S.solver);
    cr_assert_eq(g_failures, 0, "%ld failures (seed %" PRIu64 "), the first are printed above",
                 g_failures, seed);
    if (players == 6) cr_expect_eq(c_ask, 0, "asking partner accepted with six players (R-SIX-PARTNER)");
    if (hands >= 1000) {
        cr_expect_gt(c_pcc, 0, "no PCC hand");
        cr_expect_gt(c_open, 0, "no open game");
        cr_expect_gt(c_bid8, 0, "no eight-card (six-card) bid");
        if (players == 4) cr_expect_gt(c_ask, 0, "no ask partner");
        cr_expect_gt(c_redeal, 0, "no redeal");
        cr_expect_gt(c_spoilt, 0, "no spoilt call");
        cr_expect_gt(c_caps, 0, "no Caps call");
        cr_expect_gt(c_illegal, 0, "no illegal move tried");
        cr_expect_gt(c_reveal, 0, "no face-down trump revealed");
        if (judged) {
            cr_expect_gt(c_certain_call, 0, "no Caps called when certain");
            cr_expect_gt(c_wrong, 0, "no Wrong Caps");
        }
    }
}

Test(random, hands, .timeout = 0)
{
    simulate(4, env_long("CARDROOM_SIM_HANDS", 100000), env_long("CARDROOM_SIM_JUDGED", 25));
}

/* Six-player 304 (R-SIX-…). Its Caps checks cost far more (five others to play around, up to six
 * seats open to Caps in the first trick), so fewer of its hands go through the judge. */
Test(random, six_players, .timeout = 0)
{
    long hands = env_long("CARDROOM_SIM_HANDS6", env_long("CARDROOM_SIM_HANDS", 100000) * 3 / 10);
    simulate(6, hands, env_long("CARDROOM_SIM_JUDGED6", 10));
}
