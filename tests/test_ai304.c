/* test_ai304.c — the heuristic computer player (bot/ai304.h).
 *
 * - Random hands under several rule variants, every seat played by ai304_choose() through
 *   g304_apply(): every chosen move is accepted, every hand ends within a bounded number of
 *   moves, and no spoilt-trumps declaration is ever wrong (R-SPOILT-WRONG).
 * - Leak check: every input built in those hands holds only cards its seat may know. What a
 *   seat may know is modelled here from the rules, not from the engine's view: its own dealt
 *   cards, cards played face up, its own face-down plays, the face-down cards the maker inspected
 *   after each trick (R-REVEAL), cards turned up at a reveal, and the indicator once shown
 *   (R-OPEN, R-REVEAL, R-250, a face-up last card). The seen[], void_in[] and trick_points
 *   fields are checked against the same model.
 * - Sanity of single decisions in set-up hands: bids, the indicator, points on partner's sure
 *   trick, leading a top card, the cheapest winner, the maker's cut with the indicator, spoilt.
 * - The result of AI-against-AI hands: the maker makes the bid in a plausible share of hands.
 * - Six-player 304 (R-SIX-…): the same legality and leak checks with six AIs, under the same
 *   rule variants, and a plausible make rate.
 *
 * Environment: CARDROOM_AI_HANDS (hands per rule variant, default 1500; 7 variants; six players
 * play a third as many) and CARDROOM_AI_MAKE_HANDS (hands of the make-rate test, default 5000). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ai304.h"
#include "cards.h"
#include "deal.h"
#include "g304.h"
#include "test_hands.h"

#define AI_MAX_MOVES 200 /* a hand with more accepted moves than this is a loop */

/* ---- PRNG: splitmix64 ---- */
static uint64_t t_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void t_deck(uint64_t key, const g304_rules *r, card_t deck[CARD_IDS])
{
    uint8_t seed[DEAL_SEED_BYTES];
    uint64_t s = key;
    for (int i = 0; i < DEAL_SEED_BYTES; i += 8) {
        uint64_t x = t_mix(&s);
        memcpy(seed + i, &x, 8);
    }
    deal_shuffle(seed, deck, g304_deck_size(r));
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

/* ---- what a seat may know, from the rules ---- */

static int t_complete(const g304_trick *t) { return t->winner != G304_NO_SEAT; }

/* The indicator has been shown to everybody: an open game (R-OPEN), a trick turned up
 * (R-REVEAL), the first trick of a closed 250+ game, or played face up. */
static int t_indicator_shown(const g304_state *st)
{
    if (st->indicator == CARD_NONE || st->phase != G304_PHASE_PLAY) return st->phase == G304_PHASE_DONE;
    if (st->declared_open) return 1;
    if (st->bid >= 250 && t_complete(&st->tricks[0])) return 1;
    int tricks = g304_tricks(&st->rules);
    int last = st->trick_no < tricks ? st->trick_no : tricks - 1;
    for (int t = 0; t <= last; t++) {
        const g304_trick *tr = &st->tricks[t];
        if (t_complete(tr) && tr->announced == 2) return 1;
        for (int i = 0; i < tr->n; i++)
            if (tr->card[i] == st->indicator && !(tr->facedown >> i & 1)) return 1;
    }
    return 0;
}

/* Whether `seat` may know card i of trick tr. */
static int t_trick_card_known(const g304_state *st, const g304_trick *tr, int i, int seat)
{
    int p = tr->seat[i];
    card_t c = tr->card[i];
    if (!(tr->facedown >> i & 1) || p == seat) return 1;
    if (!t_complete(tr)) return 0;
    if (seat == st->maker) return 1; /* inspected (R-REVEAL) */
    return tr->announced == 2 && !(p == st->maker && CARD_SUIT(c) != st->trump);
}

typedef struct {
    cardset_t known;             /* every card the seat may know */
    cardset_t played[G304_MAX_SEATS]; /* cards it may know each seat played */
    int points[2];               /* points of finished tricks it may count */
    int shown;                   /* the indicator was shown */
} t_knowledge;

static void t_knowledge_of(const g304_state *st, int seat, t_knowledge *k)
{
    memset(k, 0, sizeof *k);
    k->known = st->dealt[seat];
    k->shown = t_indicator_shown(st);
    if (k->shown && st->indicator != CARD_NONE) k->known |= CARDSET_BIT(st->indicator);
    if (st->phase != G304_PHASE_PLAY) return;
    for (int t = 0; t <= st->trick_no && t < g304_tricks(&st->rules); t++) {
        const g304_trick *tr = &st->tricks[t];
        int pts = 0;
        for (int i = 0; i < tr->n; i++) {
            if (!t_trick_card_known(st, tr, i, seat)) continue;
            k->played[tr->seat[i]] |= CARDSET_BIT(tr->card[i]);
            k->known |= CARDSET_BIT(tr->card[i]);
            pts += card_points(tr->card[i]);
        }
        if (t_complete(tr)) k->points[tr->winner & 1] += pts;
    }
}

static void t_expect_known(cardset_t known, card_t c, int seat, const char *where)
{
    if (c == CARD_NONE || c == CARD_HIDDEN) return;
    cr_assert(c < CARD_IDS, "seat %d: a bad card %d in %s", seat, c, where);
    cr_assert(known & CARDSET_BIT(c), "seat %d may not know %s, but the input has it in %s", seat, card_str(c),
              where);
}

static void t_expect_trick(cardset_t known, const g304_trick *t, int seat, const char *where)
{
    for (int i = 0; i < t->n && i < G304_MAX_SEATS; i++) t_expect_known(known, t->card[i], seat, where);
}

/* Every card in the input is one the seat may know; the derived fields agree with the model. */
static void t_check_input(const g304_state *st, int seat, const ai304_input *in)
{
    t_knowledge k;
    t_knowledge_of(st, seat, &k);
    const g304_view *v = &in->view;
    for (card_t c = 0; c < CARD_IDS; c++)
        if (v->hand & CARDSET_BIT(c)) t_expect_known(k.known, c, seat, "view.hand");
    t_expect_known(k.known, v->indicator, seat, "view.indicator");
    t_expect_trick(k.known, &v->current, seat, "view.current");
    t_expect_trick(k.known, &v->last, seat, "view.last");
    for (int i = 0; i < in->nlegal; i++)
        if (in->legal[i].kind == G304_DO_PLAY || in->legal[i].kind == G304_DO_TRUMP)
            t_expect_known(k.known, in->legal[i].card, seat, "legal");
    int knows_trump = st->indicator != CARD_NONE && (seat == st->maker || k.shown);
    cr_assert_eq(v->trump >= 0, knows_trump, "seat %d: trump %d in the input, may know it: %d", seat, v->trump,
                 knows_trump);
    for (int p = 0; p < g304_seats(&st->rules); p++) {
        cr_assert_eq(in->seen[p], k.played[p], "seat %d: seen[%d] %#llx, may know %#llx", seat, p,
                     (unsigned long long)in->seen[p], (unsigned long long)k.played[p]);
        cr_assert_eq(in->seen[p] & ~st->dealt[p], 0, "seen[%d] holds a card seat %d was not dealt", p, p);
        cardset_t hand = st->hand[p];
        if (p == st->maker && st->indicator != CARD_NONE) hand &= ~CARDSET_BIT(st->indicator);
        for (int s = 0; s < SUIT_COUNT; s++)
            if (in->void_in[p] >> s & 1)
                cr_assert_eq(hand & CARDSET_SUIT(s), 0, "void_in[%d] says no %c, but it holds one", p,
                             suit_letter(s));
    }
    cr_assert_eq(in->trick_points[0], k.points[0], "seat %d: team 0 points %d, countable %d", seat,
                 in->trick_points[0], k.points[0]);
    cr_assert_eq(in->trick_points[1], k.points[1], "seat %d: team 1 points %d, countable %d", seat,
                 in->trick_points[1], k.points[1]);
}

/* ---- playing hands with four AIs ---- */

typedef struct {
    long hands, played, made, all_pass, redeals, spoilt, inputs, decisions, opens, asks, pcc;
    long by_level[3][2]; /* 160-199, 200-249, 250+: hands played, made */
} t_stats;

/* Asks seat for a move; applies it if there is one. Returns 1 if a move was applied. */
static int t_ask(g304_state *st, int seat, uint64_t seed, int check, t_stats *S)
{
    ai304_input in;
    g304_action a;
    g304_error err;
    ai304_input_of(st, seat, &in);
    if (check) t_check_input(st, seat, &in), S->inputs++;
    if (ai304_choose(&in, seed, &a) != 0) {
        cr_assert(st->to_act != seat, "seat %d is to act in phase %s but chose nothing", seat,
                  g304_phase_name(st->phase));
        return 0;
    }
    S->decisions++;
    int listed = a.kind == G304_DO_SPOILT;
    for (int i = 0; i < in.nlegal && !listed; i++) listed = memcmp(&in.legal[i], &a, sizeof a) == 0;
    cr_assert(listed, "seat %d chose %s, which is not among its legal moves", seat, g304_do_name(a.kind));
    S->opens += a.kind == G304_DO_OPEN;
    S->asks += a.kind == G304_DO_PARTNER;
    g304_code c = g304_apply(st, seat, &a, NULL, &err);
    cr_assert_eq(c, G304_OK, "seat %d: %s %s refused: %s", seat, g304_do_name(a.kind),
                 a.kind == G304_DO_PLAY || a.kind == G304_DO_TRUMP ? card_str(a.card) : "", err.msg);
    return 1;
}

static void t_tally(const g304_state *st, t_stats *S)
{
    const g304_result *r = &st->result;
    cr_assert_neq(r->end, G304_END_VIOLATION, "a wrong spoilt-trumps declaration by seat %d", r->spoilt_seat);
    S->hands++;
    S->all_pass += r->end == G304_END_ALL_PASS;
    S->redeals += r->end == G304_END_REDEAL;
    S->spoilt += r->end == G304_END_SPOILT;
    if (r->end != G304_END_PLAYED) return;
    int level = st->bid >= 250 ? 2 : st->bid >= 200 ? 1 : 0;
    S->played++;
    S->made += r->made == 1;
    S->pcc += st->pcc;
    S->by_level[level][0]++;
    S->by_level[level][1] += r->made == 1;
}

/* One hand from a shuffled deck, all four seats AIs: before each move of the seat to act,
 * the others may declare (open, spoilt). */
static void t_play_hand(const g304_rules *rules, int dealer, uint64_t key, int check, t_stats *S)
{
    card_t deck[CARD_IDS];
    int16_t tokens[2] = {11, 11};
    g304_state st;
    t_deck(key, rules, deck);
    g304_start(&st, rules, dealer, tokens, deck, NULL);
    uint64_t s = key ^ 0x5151;
    int moves = 0;
    while (st.phase != G304_PHASE_DONE) {
        cr_assert_lt(moves, AI_MAX_MOVES, "hand %llu did not end", (unsigned long long)key);
        int actor = st.to_act, acted = 0;
        for (int seat = 0; seat < g304_seats(rules) && !acted; seat++)
            if (seat != actor) acted = t_ask(&st, seat, t_mix(&s), check, S);
        if (!acted && st.phase != G304_PHASE_DONE) acted = t_ask(&st, actor, t_mix(&s), check, S);
        cr_assert(acted, "nobody moved");
        cr_assert_eq(st.caps_seat, G304_NO_SEAT);
        moves++;
    }
    t_tally(&st, S);
}

static void t_print(const char *name, const t_stats *S)
{
    printf("%-24s hands %ld, played %ld, made %.1f%% (160-199 %ld/%ld, 200-249 %ld/%ld, 250+ %ld/%ld, pcc %ld), "
           "all pass %ld, redeal %ld, spoilt %ld, open %ld, ask %ld, decisions %ld\n",
           name, S->hands, S->played, S->played ? 100.0 * (double)S->made / (double)S->played : 0.0,
           S->by_level[0][1], S->by_level[0][0], S->by_level[1][1], S->by_level[1][0], S->by_level[2][1],
           S->by_level[2][0], S->pcc, S->all_pass, S->redeals, S->spoilt, S->opens, S->asks, S->decisions);
    fflush(stdout);
}

static void t_rules(g304_rules *r, const char *name, const char *value)
{
    g304_error err;
    g304_rules_default(r);
    if (name) cr_assert_eq(g304_rules_set(r, name, value, &err), 0, "%s", err.msg);
}

/* One timeout for the whole suite: Criterion 2.4 leaks under ASan when a file mixes them. */
TestSuite(ai304, .timeout = 1200);

Test(ai304, random_hands_legal_and_leak_free)
{
    static const char *const variants[][2] = {
        {NULL, NULL},           {"bidding", "single"}, {"bid8_opener", "dealer_right"}, {"spoilt", "auto"},
        {"caps", "off"},        {"step_above_200", "5"}, {"cut", "1"},
    };
    long per = env_long("CARDROOM_AI_HANDS", 1500);
    t_stats all;
    memset(&all, 0, sizeof all);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        g304_rules r;
        t_rules(&r, variants[v][0], variants[v][1]);
        t_stats S;
        memset(&S, 0, sizeof S);
        for (long h = 0; h < per; h++) t_play_hand(&r, (int)(h & 3), 0xA1000000ull * (v + 1) + (uint64_t)h, 1, &S);
        char name[64];
        snprintf(name, sizeof name, "%s=%s", variants[v][0] ? variants[v][0] : "default",
                 variants[v][1] ? variants[v][1] : "");
        t_print(name, &S);
        all.hands += S.hands, all.played += S.played, all.made += S.made, all.decisions += S.decisions;
        all.inputs += S.inputs;
    }
    printf("all variants: %ld hands, %ld played, %ld moves chosen and accepted, %ld inputs leak-checked\n",
           all.hands, all.played, all.decisions, all.inputs);
    cr_assert_geq(all.hands, 5000);
}

/* Six-player 304 under the same rule variants: every move legal, every input leak-free. */
Test(ai304, six_player_hands_legal_and_leak_free)
{
    static const char *const variants[][2] = {
        {NULL, NULL},           {"bidding", "single"}, {"bid8_opener", "dealer_right"}, {"spoilt", "auto"},
        {"caps", "off"},        {"step_above_200", "5"}, {"cut", "1"},
    };
    long per = env_long("CARDROOM_AI_HANDS", 1500) / 3;
    t_stats all;
    memset(&all, 0, sizeof all);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        g304_rules r;
        t_rules(&r, variants[v][0], variants[v][1]);
        cr_assert_eq(g304_rules_set_players(&r, 6, NULL), 0);
        t_stats S;
        memset(&S, 0, sizeof S);
        for (long h = 0; h < per; h++) t_play_hand(&r, (int)(h % 6), 0xC3000000ull * (v + 1) + (uint64_t)h, 1, &S);
        char name[64];
        snprintf(name, sizeof name, "six: %s=%s", variants[v][0] ? variants[v][0] : "default",
                 variants[v][1] ? variants[v][1] : "");
        t_print(name, &S);
        all.hands += S.hands, all.played += S.played, all.made += S.made, all.asks += S.asks, all.pcc += S.pcc;
    }
    printf("six players, all variants: %ld hands, %ld played, %ld made, %ld PCC\n", all.hands, all.played, all.made,
           all.pcc);
    cr_assert_eq(all.asks, 0, "a computer player asked partner with six players (R-SIX-PARTNER)");
    cr_assert(all.played > 0 && all.made * 10 >= all.played * 3 && all.made * 20 <= all.played * 19,
              "six players: the maker made %ld of %ld bids", all.made, all.played);
}

Test(ai304, maker_makes_a_plausible_share)
{
    long n = env_long("CARDROOM_AI_MAKE_HANDS", 5000);
    g304_rules r;
    t_rules(&r, NULL, NULL);
    t_stats S;
    memset(&S, 0, sizeof S);
    for (long h = 0; h < n; h++) t_play_hand(&r, (int)(h & 3), 0xB2000000ull + (uint64_t)h, 0, &S);
    t_print("make rate (default)", &S);
    double f = S.played ? (double)S.made / (double)S.played : 0.0;
    printf("maker made the bid in %.1f%% of %ld played hands\n", 100.0 * f, S.played);
    fflush(stdout);
    cr_assert_geq(S.hands, n);
    cr_assert(f >= 0.30 && f <= 0.95, "the maker made %.1f%% of bids", 100.0 * f);
}

/* ---- set-up hands ---- */



static void ok(g304_state *st, int seat, int kind, const char *card, int amount)
{
    g304_action a;
    g304_error err;
    memset(&a, 0, sizeof a);
    a.kind = (uint8_t)kind;
    a.card = card ? C(card) : 0;
    a.amount = (uint16_t)amount;
    cr_assert_eq(g304_apply(st, seat, &a, NULL, &err), G304_OK, "seat %d %s %s refused: %s", seat,
                 g304_do_name(kind), card ? card : "", err.msg);
}

/* The AI's move for seat (-1 if none); the seeds do not matter for these cases. */
static int ai_move(const g304_state *st, int seat, g304_action *a)
{
    ai304_input in;
    ai304_input_of(st, seat, &in);
    t_check_input(st, seat, &in);
    int r = -1;
    for (uint64_t seed = 0; seed < 8; seed++) {
        g304_action b;
        int rb = ai304_choose(&in, seed * 0x1234567ull, &b);
        if (seed == 0) {
            r = rb, *a = b;
            continue;
        }
        cr_assert_eq(rb, r, "the choice depends on the seed");
        if (r == 0) cr_assert(b.kind == a->kind && b.card == a->card && b.amount == a->amount,
                              "the choice depends on the seed");
    }
    return r;
}

static void expect_play(const g304_state *st, int seat, const char *card)
{
    g304_action a;
    cr_assert_eq(ai_move(st, seat, &a), 0, "seat %d chose nothing", seat);
    cr_assert_eq(a.kind, G304_DO_PLAY, "seat %d chose %s", seat, g304_do_name(a.kind));
    cr_assert_eq(a.card, C(card), "seat %d played %s, expected %s", seat, card_str(a.card), card);
}

/* Dealer 0: seat 1 bids 160 and makes `indicator` trump; everybody passes both rounds. */
static void to_play(g304_state *st, const char *const hands[4], const char *indicator)
{
    start_from(st, NULL, 0, hands, NULL);
    ok(st, 1, G304_DO_BID, NULL, 160);
    ok(st, 2, G304_DO_PASS, NULL, 0);
    ok(st, 3, G304_DO_PASS, NULL, 0);
    ok(st, 0, G304_DO_PASS, NULL, 0);
    ok(st, 1, G304_DO_TRUMP, indicator, 0);
    for (int i = 0; i < 4; i++) ok(st, (1 + i) & 3, G304_DO_PASS, NULL, 0);
    cr_assert_eq(st->phase, G304_PHASE_PLAY);
}

static const char *const hands_sure[4] = {
    "AS 7S 8S JC | AC TC KC QC", /* seat 0 */
    "JH 9H 7H 8H | QS 7D 8D 7C", /* seat 1: the maker, hearts */
    "JS 9S AH TH | JD 9D 8C 9C", /* seat 2 */
    "KS TS KH QH | AD TD QD KD", /* seat 3 */
};

Test(ai304, bids_a_strong_four)
{
    static const char *const hands[4] = {
        "7S 8S 9S TS | JS QS KS AS", "JH 9H AH TH | KH QH 8H 7H",
        "7D 8D 9D TD | JD QD KD AD", "7C 8C 9C TC | JC QC KC AC",
    };
    g304_state st;
    g304_action a;
    start_from(&st, NULL, 0, hands, NULL);
    cr_assert_eq(ai_move(&st, 1, &a), 0);
    cr_assert_eq(a.kind, G304_DO_BID, "J♥ 9♥ A♥ 10♥ should bid, chose %s", g304_do_name(a.kind));
    cr_assert_geq(a.amount, 160);
}

Test(ai304, passes_a_weak_four)
{
    static const char *const hands[4] = {
        "9S TS JS QS | KS AS 7H 8H", "7S 8D 7C 8C | 9H TH JH QH",
        "7D 9D TD JD | QD KD AD KH", "9C TC JC QC | KC AC AH 8S",
    };
    g304_state st;
    g304_action a;
    start_from(&st, NULL, 0, hands, NULL);
    cr_assert_eq(ai_move(&st, 1, &a), 0);
    cr_assert(a.kind == G304_DO_PASS || a.kind == G304_DO_REDEAL, "7♠ 8♦ 7♣ 8♣ should pass, chose %s %d",
              g304_do_name(a.kind), a.amount);
}

Test(ai304, indicator_is_the_lowest_trump)
{
    static const char *const hands[4] = {
        "9S TS JS QS | KS 8D 7D 8H", "JH 9H 7H AS | TH QH KH 7S",
        "AD 9D TD JD | QD KD 8S AH", "9C TC JC QC | KC AC 7C 8C",
    };
    g304_state st;
    g304_action a;
    start_from(&st, NULL, 0, hands, NULL);
    cr_assert_eq(ai_move(&st, 1, &a), 0);
    cr_assert_eq(a.kind, G304_DO_BID, "J♥ 9♥ 7♥ A♠ should bid");
    ok(&st, 1, G304_DO_BID, NULL, a.amount);
    ok(&st, 2, G304_DO_PASS, NULL, 0);
    ok(&st, 3, G304_DO_PASS, NULL, 0);
    ok(&st, 0, G304_DO_PASS, NULL, 0);
    cr_assert_eq(st.phase, G304_PHASE_TRUMP);
    ai304_input in;
    ai304_input_of(&st, 0, &in); /* the bidding as far as the state tells it */
    for (int s = 0; s < 4; s++) {
        cr_assert_eq(in.bid_of[s], s == 1 ? a.amount : 0, "bid_of[%d] = %d", s, in.bid_of[s]);
        cr_assert_eq(in.passed[s], s != 1, "passed[%d] = %d", s, in.passed[s]);
    }
    cr_assert_eq(ai_move(&st, 1, &a), 0);
    cr_assert_eq(a.kind, G304_DO_TRUMP);
    cr_assert_eq(a.card, C("7H"), "the indicator should be 7♥, chose %s", card_str(a.card));
}

Test(ai304, throws_points_on_partners_sure_trick)
{
    g304_state st;
    to_play(&st, hands_sure, "7H");
    ok(&st, 1, G304_DO_PLAY, "QS", 0);
    ok(&st, 2, G304_DO_PLAY, "JS", 0);
    ok(&st, 3, G304_DO_PLAY, "KS", 0);
    expect_play(&st, 0, "AS"); /* partner's J♠ is the top spade: the A goes on it */
}

Test(ai304, leads_a_top_card)
{
    g304_state st;
    to_play(&st, hands_sure, "7H");
    ok(&st, 1, G304_DO_PLAY, "QS", 0);
    ok(&st, 2, G304_DO_PLAY, "JS", 0);
    ok(&st, 3, G304_DO_PLAY, "KS", 0);
    ok(&st, 0, G304_DO_PLAY, "AS", 0);
    cr_assert_eq(st.to_act, 2);
    expect_play(&st, 2, "JD"); /* J♦ is the top diamond, and worth more than the 9♠ (top now too) */
}

Test(ai304, wins_with_the_cheapest_winner)
{
    static const char *const hands[4] = {
        "JS AS KS AC | JD 9D 7D KC", "JH 9H 7H 8H | TD QS 7C 8C",
        "AH TH KH QH | QD 8D 9C TC", "7S 8S 9S TS | AD KD JC QC",
    };
    g304_state st;
    to_play(&st, hands, "7H");
    ok(&st, 1, G304_DO_PLAY, "TD", 0);
    ok(&st, 2, G304_DO_PLAY, "8D", 0);
    ok(&st, 3, G304_DO_PLAY, "AD", 0);
    expect_play(&st, 0, "9D"); /* last to play: 9♦ beats the opponent's A♦ and keeps J♦ */
}

Test(ai304, maker_cuts_with_the_indicator)
{
    static const char *const hands[4] = {
        "AH TH KH QH | JS QS 7D 8D", "JC 9C 8C AD | TS 9S 8S 7S",
        "JH 9H 7H 8H | AS KS QD KD", "7C AC TC KC | QC JD 9D TD",
    };
    g304_state st;
    start_from(&st, NULL, 0, hands, NULL);
    ok(&st, 1, G304_DO_PASS, NULL, 0);
    ok(&st, 2, G304_DO_BID, NULL, 160);
    ok(&st, 3, G304_DO_PASS, NULL, 0);
    ok(&st, 0, G304_DO_PASS, NULL, 0);
    ok(&st, 1, G304_DO_PASS, NULL, 0);
    ok(&st, 2, G304_DO_TRUMP, "7H", 0);
    for (int i = 0; i < 4; i++) ok(&st, (2 + i) & 3, G304_DO_PASS, NULL, 0);
    cr_assert_eq(st.phase, G304_PHASE_PLAY);
    ok(&st, 1, G304_DO_PLAY, "JC", 0);
    expect_play(&st, 2, "7H"); /* void in clubs, an opponent's J♣ led: cut face down */
}

Test(ai304, face_down_cards_stay_private)
{
    g304_state st;
    to_play(&st, hands_sure, "7H");
    /* seat 3 has no clubs and throws A♦ face down; nobody cut, so it stays down (R-REVEAL) */
    ok(&st, 1, G304_DO_PLAY, "7C", 0);
    ok(&st, 2, G304_DO_PLAY, "8C", 0);
    ok(&st, 3, G304_DO_PLAY, "AD", 0);
    ai304_input in;
    for (int seat = 0; seat < 4; seat++) { /* in the trick: only its player has seen it */
        ai304_input_of(&st, seat, &in);
        t_check_input(&st, seat, &in);
        cr_assert_eq((in.seen[3] & CARDSET_BIT(C("AD"))) != 0, seat == 3, "seat %d", seat);
    }
    ok(&st, 0, G304_DO_PLAY, "AC", 0);
    cr_assert_eq(st.tricks[0].announced, 1);
    for (int seat = 0; seat < 4; seat++) { /* gathered: the maker inspected it too */
        ai304_input_of(&st, seat, &in);
        t_check_input(&st, seat, &in);
        int knows = seat == 3 || seat == 1;
        cr_assert_eq((in.seen[3] & CARDSET_BIT(C("AD"))) != 0, knows, "seat %d", seat);
        cr_assert_eq(in.trick_points[0], knows ? 22 : 11, "seat %d counts %d", seat, in.trick_points[0]);
        cr_assert_eq(in.void_in[3], 1 << SUIT_C, "seat %d: seat 3 showed out of clubs", seat);
        for (int i = 0; i < in.view.last.n; i++)
            if (in.view.last.seat[i] == 3) cr_assert_eq(in.view.last.card[i], knows ? C("AD") : CARD_HIDDEN);
    }
}

/* Seat 1 holds all eight hearts and makes hearts trump: spoilt trumps (R-SPOILT). */
static const char *const hands_spoilt[4] = {
    "JC 9C AC TC | KC QC 8C 7C", "JH 9H 7H TH | KH QH 8H AH",
    "JS 9S AS TS | KS QS 8S 7S", "JD 9D AD TD | KD QD 8D 7D",
};

/* The maker's team may play on (R-SPOILT) and, holding every trump, does: it would usually win. */
Test(ai304, maker_with_every_trump_plays_on)
{
    g304_state st;
    g304_action a;
    to_play(&st, hands_spoilt, "7H");
    cr_assert(g304_may_spoilt(&st, 1), "spoilt trumps may be declared");
    for (int seat = 0; seat < 4; seat++) {
        int r = ai_move(&st, seat, &a);
        cr_assert(r != 0 || a.kind != G304_DO_SPOILT, "seat %d declared spoilt", seat);
    }
}

Test(ai304, opponent_declares_spoilt_once_certain)
{
    g304_state st;
    g304_action a;
    to_play(&st, hands_spoilt, "7H");
    ok(&st, 1, G304_DO_OPEN, NULL, 0); /* hearts known to all */
    ok(&st, 1, G304_DO_PLAY, "JH", 0);
    ok(&st, 2, G304_DO_PLAY, "7S", 0);
    ok(&st, 3, G304_DO_PLAY, "7D", 0);
    /* seat 2 has no heart; its partner (seat 0) has not shown out yet: not certain */
    int r = ai_move(&st, 2, &a);
    cr_assert(r != 0 || a.kind != G304_DO_SPOILT, "seat 2 cannot be certain before seat 0 shows out");
    ok(&st, 0, G304_DO_PLAY, "7C", 0);
    cr_assert_eq(ai_move(&st, 2, &a), 0);
    cr_assert_eq(a.kind, G304_DO_SPOILT, "seat 2 knows both opponents of the maker hold no trump");
    cr_assert_eq(g304_apply(&st, 2, &a, NULL, NULL), G304_OK);
    cr_assert(st.result.spoilt_ok);
}

Test(ai304, no_spoilt_while_an_opponent_may_hold_a_trump)
{
    static const char *const hands[4] = {
        "JC 9C AC TC | KC QC 8C 7H", "JH 9H 8H TH | KH QH AH 7C",
        "JS 9S AS TS | KS QS 8S 7S", "JD 9D AD TD | KD QD 8D 7D",
    };
    g304_state st;
    g304_action a;
    to_play(&st, hands, "8H");
    ok(&st, 1, G304_DO_OPEN, NULL, 0);
    ok(&st, 1, G304_DO_PLAY, "JH", 0);
    ok(&st, 2, G304_DO_PLAY, "7S", 0);
    ok(&st, 3, G304_DO_PLAY, "7D", 0);
    ok(&st, 0, G304_DO_PLAY, "7H", 0);
    for (int seat = 0; seat < 4; seat++) {
        int r = ai_move(&st, seat, &a);
        cr_assert(r != 0 || a.kind != G304_DO_SPOILT, "seat %d declared spoilt with a trump out", seat);
    }
}
