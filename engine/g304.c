/* g304.c — the 304 rules as a state machine (shared/rules/304.md).
 *
 * Every move is checked by the same functions that list legal moves, so "legal" and
 * "accepted" cannot drift apart. A move is validated completely before anything in the
 * state changes; a refused move therefore leaves the state untouched. Events are written
 * into a fixed buffer; nothing here allocates. Comments cite the rule ids they implement.
 *
 * Six players (R-SIX-…) change numbers, not rules: how many seats (seats_of), tricks and cards
 * in a trick, and "partner" read as "a teammate" (teammates). Seats advance by seat_add(), a
 * compare instead of a division, so the four-player game keeps its speed. */
#include "g304.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "option.h"

/* ---- small helpers ---- */

static int team_of(int seat) { return seat & 1; }
static int partner_of(int seat) { return (seat + 2) & 3; } /* four players only (R-B4-PARTNER) */
static int seat_bit(int seat) { return 1 << seat; }
static int six(const g304_state *st) { return st->rules.players == 6; }
static int seats_of(const g304_state *st) { return six(st) ? 6 : 4; }
static int tricks_of(const g304_state *st) { return six(st) ? 6 : G304_TRICKS; }

/* The seat k places after seat in playing order (0 <= k < seats). */
static int seat_add(const g304_state *st, int seat, int k)
{
    int s = seat + k, n = seats_of(st);
    return s >= n ? s - n : s;
}

/* Whether b is a teammate of a (R-SEATS: the partner; R-SIX-SEATS: one of the two others). */
static int teammates(int a, int b) { return b != G304_NO_SEAT && a != b && team_of(a) == team_of(b); }

/* "your partner", or with six players "your teammate", for messages. */
static const char *mate(const g304_state *st) { return six(st) ? "your teammate" : "your partner"; }
/* The name of the second bidding round: "eight-card", or "six-card" (R-SIX-B6). */
static const char *round2(const g304_state *st) { return six(st) ? "six-card" : "eight-card"; }

static int pack_of(const g304_state *st) { return six(st) ? CARD_IDS : CARD_COUNT; }
/* Cards in a trick: every seat's, or in Partner Close Caps the maker's and his opponents'. */
static int trick_cards(const g304_state *st) { return st->pcc ? seats_of(st) / 2 + 1 : seats_of(st); }
/* The lowest card of a non-empty set (cardset_first() without the call, for the hot loops). */
static card_t low_card(cardset_t s) { return (card_t)__builtin_ctzll(s); }

int g304_seats(const g304_rules *r) { return r->players == 6 ? 6 : 4; }
int g304_tricks(const g304_rules *r) { return r->players == 6 ? 6 : G304_TRICKS; }
int g304_deck_size(const g304_rules *r) { return r->players == 6 ? CARD_IDS : CARD_COUNT; }
int g304_trick_size(const g304_state *st) { return trick_cards(st); }

static g304_code fail(g304_error *err, g304_code code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Writes "9♥ 7♥" for a set of cards into buf. */
static const char *cards_text(cardset_t s, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    if (!len) return buf; /* no message wanted (see g304_check_card) */
    /* strongest first within a suit, as people sort a hand */
    static const uint8_t by_power[RANK_IDS] = {RANK_J, RANK_9, RANK_A, RANK_T, RANK_K, RANK_Q, RANK_8, RANK_7, RANK_6};
    for (int suit = 0; suit < SUIT_COUNT; suit++) {
        for (int i = 0; i < RANK_IDS; i++) {
            card_t c = CARD_MAKE(suit, by_power[i]);
            if (!(s & CARDSET_BIT(c))) continue;
            char one[CARD_TEXT_MAX];
            int k = snprintf(buf + used, len - used, "%s%s", used ? " " : "", card_pretty(c, one));
            if (k < 0 || (size_t)k >= len - used) return buf;
            used += (size_t)k;
        }
    }
    return buf;
}

static g304_event *emit(g304_events *ev, int kind, int vis, int to, int seat)
{
    if (ev->n >= G304_MAX_EVENTS) return &ev->ev[G304_MAX_EVENTS - 1]; /* cannot happen: see G304_MAX_EVENTS */
    g304_event *e = &ev->ev[ev->n++];
    memset(e, 0, sizeof *e);
    e->kind = (uint8_t)kind;
    e->vis = (uint8_t)vis;
    e->to = (uint8_t)to;
    e->seat = (uint8_t)seat;
    return e;
}

static void event_cards(g304_event *e, cardset_t s)
{
    while (s && e->n < G304_TRICKS) {
        e->cards[e->n++] = low_card(s);
        s &= s - 1;
    }
}

int g304_event_visible(const g304_event *e, int seat)
{
    switch (e->vis) {
    case G304_VIS_ALL: return 1;
    case G304_VIS_SEAT: return e->to == seat;
    case G304_VIS_TEAM: return e->to == team_of(seat);
    }
    return 0;
}

/* ---- names ---- */

static const char *const code_names[] = {
    [G304_OK] = "ok",
    [G304_E_PHASE] = "phase",
    [G304_E_TURN] = "turn",
    [G304_E_SEAT] = "seat",
    [G304_E_AMOUNT] = "amount",
    [G304_E_BID_LOW] = "bid_low",
    [G304_E_BID_200] = "bid_200",
    [G304_E_PARTNER_BID] = "partner_bid",
    [G304_E_ONCE] = "once",
    [G304_E_ASK] = "ask",
    [G304_E_REDEAL] = "redeal",
    [G304_E_NOT_HELD] = "not_held",
    [G304_E_INDICATOR] = "indicator",
    [G304_E_FOLLOW] = "follow",
    [G304_E_MAKER_TRUMP] = "maker_trump",
    [G304_E_LEAD_TRUMP] = "lead_trump",
    [G304_E_EXHAUST] = "exhaust",
    [G304_E_OPEN] = "open",
    [G304_E_CAPS] = "caps",
    [G304_E_SPOILT] = "spoilt",
    [G304_E_CUT] = "cut",
    [G304_E_OVER] = "over",
};

const char *g304_code_name(g304_code code)
{
    return (unsigned)code < sizeof code_names / sizeof code_names[0] ? code_names[code] : "unknown";
}

static const char *const do_names[G304_DO_COUNT] = {"cut",  "bid",  "pass", "partner", "redeal",
                                                     "trump", "open", "play", "caps",    "spoilt"};

const char *g304_do_name(g304_do kind) { return (unsigned)kind < G304_DO_COUNT ? do_names[kind] : "?"; }

const char *g304_phase_name(g304_phase p)
{
    static const char *const names[] = {"cut", "bid4", "trump", "bid8", "play", "done"};
    return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : "?";
}

/* ---- options ---- */

const char *const g304_option_names[] = {"cut",     "step_above_200", "bidding", "bid8_opener",
                                         "spoilt",  "caps",           "scoring", "start_tokens",
                                         NULL};

void g304_rules_default(g304_rules *r)
{
    memset(r, 0, sizeof *r);
    r->step_above_200 = 10;
    r->start_tokens = 11;
    r->players = 4;
}

int g304_rules_set_players(g304_rules *r, int players, g304_error *err)
{
    if (players != 4 && players != 6)
        return fail(err, G304_E_PHASE, "option players is 4 or 6, not %d", players), -1;
    r->players = (uint8_t)players;
    return 0;
}

/* An option whose value is one of a few words; index = stored value. */
typedef struct {
    const char *name;
    size_t offset;
    const char *words[4];
} word_option;

static const word_option word_options[] = {
    {"bidding", offsetof(g304_rules, bidding), {"standard", "single"}},
    {"bid8_opener", offsetof(g304_rules, bid8_opener), {"maker", "dealer_right"}},
    {"spoilt", offsetof(g304_rules, spoilt), {"manual", "auto"}},
    {"caps", offsetof(g304_rules, caps), {"grace", "strict", "off"}},
    {"scoring", offsetof(g304_rules, scoring), {"transfer", "bank"}},
    {"cut", offsetof(g304_rules, cut), {"false", "true"}},
};

int g304_rules_set(g304_rules *r, const char *name, const char *value, g304_error *err)
{
    for (size_t i = 0; i < sizeof word_options / sizeof word_options[0]; i++) {
        const word_option *o = &word_options[i];
        if (strcmp(name, o->name) != 0) continue;
        uint8_t *field = (uint8_t *)r + o->offset;
        if (strcmp(name, "cut") == 0) {
            int b = option_bool(value);
            if (b < 0) return fail(err, G304_E_PHASE, "option cut is true or false, not '%.40s'", value), -1;
            *field = (uint8_t)b;
            return 0;
        }
        for (int w = 0; w < 4 && o->words[w]; w++) {
            if (strcmp(value, o->words[w]) == 0) {
                *field = (uint8_t)w;
                return 0;
            }
        }
        char list[64] = "";
        for (int w = 0; w < 4 && o->words[w]; w++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", w ? ", " : "", o->words[w]);
        fail(err, G304_E_PHASE, "option %s is one of %s, not '%.40s'", name, list, value);
        return -1;
    }
    int v;
    if (strcmp(name, "step_above_200") == 0) {
        if (option_uint(value, 5, 10, &v) < 0 || (v != 5 && v != 10))
            return fail(err, G304_E_PHASE, "option step_above_200 is 10 or 5, not '%.40s'", value), -1;
        r->step_above_200 = (uint8_t)v;
        return 0;
    }
    if (strcmp(name, "start_tokens") == 0) {
        if (option_uint(value, 1, 100, &v) < 0)
            return fail(err, G304_E_PHASE, "option start_tokens is a number from 1 to 100, not '%.40s'", value), -1;
        r->start_tokens = (uint8_t)v;
        return 0;
    }
    fail(err, G304_E_PHASE,
         "unknown option '%.40s' (options: cut, step_above_200, bidding, bid8_opener, spoilt, caps, scoring, "
         "start_tokens)",
         name);
    return -1;
}

const char *g304_rules_get(const g304_rules *r, const char *name, char *buf, size_t len)
{
    for (size_t i = 0; i < sizeof word_options / sizeof word_options[0]; i++) {
        const word_option *o = &word_options[i];
        if (strcmp(name, o->name) != 0) continue;
        uint8_t v = *((const uint8_t *)r + o->offset);
        snprintf(buf, len, "%s", v < 4 && o->words[v] ? o->words[v] : "?");
        return buf;
    }
    if (strcmp(name, "step_above_200") == 0) return snprintf(buf, len, "%d", r->step_above_200), buf;
    if (strcmp(name, "start_tokens") == 0) return snprintf(buf, len, "%d", r->start_tokens), buf;
    return NULL;
}

/* ---- dealing (R-DEAL, R-SIX-DEAL) ---- */

void g304_shuffle(const uint8_t seed[DEAL_SEED_BYTES], const g304_rules *r, card_t deck[CARD_IDS])
{
    deal_shuffle(seed, deck, g304_deck_size(r));
}

/* The dealer as a seat of a game of n seats. */
static int dealer_seat(int dealer, int n) { return ((dealer % n) + n) % n; }

/* Cards each seat gets in a batch: four, then the rest of the hand (four, or two with six). */
static int batch_cards(int batch, int hand) { return batch ? hand - 4 : 4; }

int g304_deck_from_hands_of(const g304_rules *r, const card_t hands[G304_MAX_SEATS][G304_TRICKS], int dealer,
                            card_t deck[CARD_IDS])
{
    int n = g304_seats(r), pack = g304_deck_size(r), at = 0;
    cardset_t seen = 0;
    dealer = dealer_seat(dealer, n);
    for (int batch = 0; batch < 2; batch++) {
        int per = batch_cards(batch, g304_tricks(r));
        for (int i = 0; i < n; i++) {
            int seat = (dealer + 1 + i) % n;
            for (int k = 0; k < per; k++) {
                card_t c = hands[seat][batch * 4 + k];
                if (c >= pack || (seen & CARDSET_BIT(c))) return -1;
                seen |= CARDSET_BIT(c);
                deck[at++] = c;
            }
        }
    }
    return 0;
}

int g304_deck_from_hands(const card_t hands[G304_SEATS][G304_TRICKS], int dealer, card_t deck[CARD_COUNT])
{
    g304_rules r;
    card_t all[G304_MAX_SEATS][G304_TRICKS], out[CARD_IDS];
    g304_rules_default(&r);
    memcpy(all, hands, sizeof(card_t) * G304_SEATS * G304_TRICKS);
    if (g304_deck_from_hands_of(&r, (const card_t(*)[G304_TRICKS])all, dealer, out) < 0) return -1;
    memcpy(deck, out, CARD_COUNT);
    return 0;
}

/* Deals one batch to each player, starting at the dealer's right: four cards each, then the
 * rest of the hands (four each, or two with six players). */
static void deal_batch(g304_state *st, int batch, g304_events *ev)
{
    int n = seats_of(st), per = batch_cards(batch, tricks_of(st)), base = batch * 4 * n;
    for (int i = 0; i < n; i++) {
        int seat = seat_add(st, st->dealer, 1 + i);
        cardset_t got = 0;
        for (int k = 0; k < per; k++) got |= CARDSET_BIT(st->deck[base + i * per + k]);
        st->hand[seat] |= got;
        st->dealt[seat] |= got;
        if (batch == 0) st->first4[seat] = got;
        g304_event *e = emit(ev, G304_EV_DEALT, G304_VIS_SEAT, seat, seat);
        e->amount = (uint16_t)batch;
        event_cards(e, got);
    }
}

static void start_bidding(g304_state *st, g304_events *ev)
{
    deal_batch(st, 0, ev);
    st->phase = G304_PHASE_BID4;
    st->turn = st->to_act = (uint8_t)seat_add(st, st->dealer, 1);
}

void g304_start(g304_state *st, const g304_rules *rules, int dealer, const int16_t tokens[2],
                const card_t *deck, g304_events *ev)
{
    g304_events scratch;
    if (!ev) ev = &scratch;
    scratch.n = 0;
    memset(st, 0, sizeof *st);
    st->rules = *rules;
    st->dealer = (uint8_t)dealer_seat(dealer, seats_of(st));
    st->tokens[0] = tokens[0];
    st->tokens[1] = tokens[1];
    memcpy(st->deck, deck, (size_t)g304_deck_size(rules));
    st->bidder = st->asked = st->maker = st->maker4 = G304_NO_SEAT;
    st->caps_seat = st->spoilt_seat = G304_NO_SEAT;
    st->indicator = CARD_NONE;
    for (int t = 0; t < G304_TRICKS; t++) st->tricks[t].winner = G304_NO_SEAT;
    st->result.made = -1;
    st->result.caps_seat = st->result.spoilt_seat = st->result.payer = st->result.match_winner = G304_NO_SEAT;
    st->result.wrong_seat = G304_NO_SEAT;
    memset(st->certain_at, G304_NEVER, sizeof st->certain_at);
    if (rules->cut) {
        st->phase = G304_PHASE_CUT;
        st->to_act = (uint8_t)seat_add(st, st->dealer, seats_of(st) - 1); /* the dealer's left cuts */
    } else {
        start_bidding(st, ev);
    }
}

/* ---- ends of a hand ---- */

static void show_all_hands(g304_state *st, g304_events *ev)
{
    for (int s = 0; s < seats_of(st); s++) {
        g304_event *e = emit(ev, G304_EV_HAND, G304_VIS_ALL, 0, s);
        event_cards(e, st->dealt[s]);
    }
}

static void finish(g304_state *st, int end, int next_dealer, g304_events *ev)
{
    st->result.end = (uint8_t)end;
    st->result.next_dealer = (uint8_t)(next_dealer >= seats_of(st) ? next_dealer - seats_of(st) : next_dealer);
    st->result.caps_seat = st->caps_seat;
    st->result.caps_broken = st->caps_broken;
    st->result.spoilt_seat = st->spoilt_seat;
    st->phase = G304_PHASE_DONE;
    st->to_act = G304_NO_SEAT;
    show_all_hands(st, ev);
    g304_event *e = emit(ev, G304_EV_RESULT, G304_VIS_ALL, 0, st->maker);
    e->amount = (uint16_t)end;
}

/* R-TOKENS: reward for a made bid and charge for a failed one. */
static int bid_reward(int bid)
{
    if (bid == G304_PCC) return 4;
    return bid >= 250 ? 3 : bid >= 200 ? 2 : 1;
}
static int bid_charge(int bid) { return bid_reward(bid) + 1; }

/* R-TRANSFER: the paying team loses up to what it holds; under transfer scoring the other
 * team receives it, under bank scoring the bank does. */
static void pay(g304_state *st, int payer, int amount)
{
    g304_result *r = &st->result;
    int got = amount < st->tokens[payer] ? amount : st->tokens[payer];
    r->payer = (uint8_t)payer;
    r->delta[payer] = (int16_t)-got;
    r->delta[!payer] = st->rules.scoring == G304_SCORING_TRANSFER ? (int16_t)got : 0;
    st->tokens[0] = (int16_t)(st->tokens[0] + r->delta[0]);
    st->tokens[1] = (int16_t)(st->tokens[1] + r->delta[1]);
    if (st->tokens[payer] == 0) {
        r->match_over = 1;
        r->match_winner = (uint8_t)!payer;
    }
}

/* R-SPOILT: the maker's opponents (two, or three with six players) were dealt no trump. */
static int spoilt_trumps(const g304_state *st)
{
    cardset_t opp_cards = 0;
    for (int s = !team_of(st->maker); s < seats_of(st); s += 2) opp_cards |= st->dealt[s];
    return (opp_cards & CARDSET_SUIT(st->trump)) == 0;
}

int g304_cards_played(const g304_state *st)
{
    int per = trick_cards(st), tricks = tricks_of(st);
    if (st->trick_no >= tricks) return tricks * per;
    return st->trick_no * per + st->tricks[st->trick_no].n;
}

/* The first moment Caps was certain for a seat of the team, G304_NEVER if never. */
static int team_due(const g304_state *st, int team)
{
    int due = G304_NEVER;
    for (int s = team; s < seats_of(st); s += 2)
        if (st->certain_at[s] < due) due = st->certain_at[s];
    return due;
}

/* R-CAPS-GRACE: the last moment (cards played) a call is on time when Caps became certain
 * at `due`. Grace: until the first card of the next trick; strict: before any other card. */
static int call_deadline(const g304_state *st, int due)
{
    int per = trick_cards(st);
    if (st->rules.caps == G304_CAPS_STRICT) return due;
    return (due / per) * per + per;
}

/* R-CAPS-WRONG: was the hand's Caps call (or its absence) wrong, and why. External Caps is never
 * wrong for being missing or late. */
static void judge_caps(g304_state *st)
{
    g304_result *r = &st->result;
    int mt = team_of(st->maker);
    if (st->rules.caps == G304_CAPS_OFF || st->pcc) return;
    if (st->caps_seat == G304_NO_SEAT) {
        if (team_due(st, mt) != G304_NEVER) {
            int due = team_due(st, mt);
            r->wrong_reason = G304_WRONG_MISSING;
            for (int s = mt; s < seats_of(st); s += 2)
                if (st->certain_at[s] == due && r->wrong_seat == G304_NO_SEAT) r->wrong_seat = (uint8_t)s;
        }
        return;
    }
    int ct = team_of(st->caps_seat);
    int at = st->caps_trick * trick_cards(st) + st->caps_cards;
    int due = team_due(st, ct);
    if (st->call_verdict == G304_CALL_NOT_CERTAIN) {
        r->wrong_reason = G304_WRONG_EARLY;
    } else if (ct == mt && due != G304_NEVER && at > call_deadline(st, due)) {
        r->wrong_reason = G304_WRONG_LATE;
    } else {
        r->caps_on_time = st->call_verdict != G304_CALL_UNJUDGED;
        return;
    }
    r->wrong_seat = st->caps_seat;
}

/* After the hand, the table hears when Caps became certain, for whom and with which order, and
 * how the call (or its absence) was judged (R-CAPS-WRONG). The calling team's first certain
 * seat is told first, then the maker's team's, then the opponents'. */
static void tell_caps(g304_state *st, g304_events *ev)
{
    int teams[3] = {st->caps_seat != G304_NO_SEAT ? team_of(st->caps_seat) : team_of(st->maker),
                    team_of(st->maker), !team_of(st->maker)};
    int seat = G304_NO_SEAT;
    for (int i = 0; i < 3 && seat == G304_NO_SEAT; i++) {
        int due = team_due(st, teams[i]);
        for (int s = teams[i]; s < seats_of(st) && due != G304_NEVER; s += 2)
            if (st->certain_at[s] == due && seat == G304_NO_SEAT) seat = s;
    }
    if (seat == G304_NO_SEAT && st->caps_seat == G304_NO_SEAT) return;
    g304_event *e = emit(ev, G304_EV_CAPS_JUDGED, G304_VIS_ALL, 0, seat);
    e->other = st->caps_seat;
    e->flag = st->result.wrong_reason;
    e->amount = seat == G304_NO_SEAT ? G304_NEVER : st->certain_at[seat];
    if (seat != G304_NO_SEAT) {
        e->n = st->certain_n[seat];
        memcpy(e->cards, st->certain_order[seat], e->n);
    }
}

int g304_caps_open_for(const g304_state *st, int seat)
{
    return st->phase == G304_PHASE_PLAY && st->rules.caps != G304_CAPS_OFF && !st->pcc &&
           st->caps_seat == G304_NO_SEAT && st->team_tricks[!team_of(seat)] == 0;
}

/* R-TOKENS, R-CAPS-SCORE, R-PCC: the score of a hand played to the end. */
static void score_played(g304_state *st, g304_events *ev)
{
    g304_result *r = &st->result;
    int mt = team_of(st->maker), ot = !mt;
    if (st->pcc) {
        r->made = st->team_tricks[mt] == tricks_of(st);
        pay(st, r->made ? ot : mt, r->made ? bid_reward(G304_PCC) : bid_charge(G304_PCC));
        finish(st, G304_END_PLAYED, st->dealer + 1, ev);
        return;
    }
    r->made = st->points[mt] >= st->bid;
    judge_caps(st);
    if (st->caps_seat != G304_NO_SEAT) {
        int ct = team_of(st->caps_seat);
        r->caps_won = st->team_tricks[ct] == tricks_of(st);
        if (!r->caps_won) {
            pay(st, ct, 5); /* a trick lost after the call */
        } else if (r->wrong_seat != G304_NO_SEAT) {
            pay(st, ct, 2); /* Wrong Caps: nothing for the bid */
        } else if (ct == mt) {
            /* called before the first card of the second-to-last trick: the seventh of eight, the
             * fifth of six (R-SIX-PLAY) */
            int late = tricks_of(st) - 2;
            r->caps_bonus = st->caps_trick < late || (st->caps_trick == late && st->caps_cards == 0);
            pay(st, ot, bid_reward(st->bid) + r->caps_bonus);
        } else {
            pay(st, mt, bid_charge(st->bid) + 1); /* R-CAPS-EXTERNAL */
        }
    } else if (r->wrong_seat != G304_NO_SEAT) {
        pay(st, mt, 2); /* Caps was due and never called */
    } else {
        pay(st, r->made ? ot : mt, r->made ? bid_reward(st->bid) : bid_charge(st->bid));
    }
    tell_caps(st, ev);
    finish(st, G304_END_PLAYED, st->dealer + 1, ev);
}

/* ---- the trick ---- */

int g304_next_seat(const g304_state *st, int seat)
{
    int n = seat_add(st, seat, 1);
    while (st->pcc && teammates(st->maker, n)) n = seat_add(st, n, 1); /* R-PCC, R-SIX-PCC */
    return n;
}

cardset_t g304_cards_of(const g304_state *st, int seat)
{
    if ((unsigned)seat >= G304_MAX_SEATS) return 0;
    cardset_t s = st->hand[seat];
    if (st->ind_down && seat == st->maker) s |= CARDSET_BIT(st->indicator);
    return s;
}

/* Puts the face-down indicator back into the maker's hand and opens the trump. */
static void indicator_to_hand(g304_state *st)
{
    if (st->ind_down) st->hand[st->maker] |= CARDSET_BIT(st->indicator);
    st->ind_down = 0;
    st->trump_open = 1;
}

g304_code g304_check_card(const g304_card_rules *p, card_t card, int *facedown, g304_error *err)
{
    char buf[64];
    size_t buflen = err ? sizeof buf : 0; /* legal() asks without a message: skip the text */
    int is_ind = p->indicator != CARD_NONE && card == p->indicator;
    cardset_t hand = p->hand;
    int closed = !p->trump_open;
    int suit = CARD_SUIT(card);
    *facedown = 0;
    if (!is_ind && !(hand & CARDSET_BIT(card))) {
        char one[CARD_TEXT_MAX];
        return fail(err, G304_E_NOT_HELD, "you don't hold %s", card_pretty(card, one));
    }
    if (p->led == CARD_NONE) { /* leading */
        if (is_ind && hand != 0) /* only his very last card, in the last trick, may be led */
            return fail(err, G304_E_INDICATOR,
                        "the indicator can't be led: it is played only to cut, or as your last card");
        if (closed && p->trick_no == 0 && p->is_maker && suit == p->trump)
            return fail(err, G304_E_LEAD_TRUMP,
                        "in a closed game the trump maker may not lead a trump to the first trick");
        if (p->exhaust && p->is_maker) {
            cardset_t trumps = hand & CARDSET_SUIT(p->trump);
            if (trumps && suit != p->trump)
                return fail(err, G304_E_EXHAUST, "exhausted trumps: you must keep leading trumps (%s)",
                            cards_text(trumps, buf, buflen));
        }
        return G304_OK;
    }
    int led = CARD_SUIT(p->led);
    cardset_t have_led = hand & CARDSET_SUIT(led);
    if (is_ind) {
        if (hand == 0) { /* his very last card, in the last trick */
            *facedown = closed && suit != led;
            return G304_OK;
        }
        if (have_led)
            return fail(err, G304_E_FOLLOW, "you must follow %s: you hold %s", suit_symbol(led),
                        cards_text(have_led, buf, buflen));
        if (led == p->trump)
            return fail(err, G304_E_INDICATOR,
                        "the indicator can only be played to cut a suit you cannot follow; play a card from "
                        "your hand face down");
        *facedown = 1;
        return G304_OK;
    }
    if (suit == led) return G304_OK;
    if (have_led)
        return fail(err, G304_E_FOLLOW, "you must follow %s: you hold %s", suit_symbol(led),
                    cards_text(have_led, buf, buflen));
    if (closed) {
        if (p->is_maker && p->indicator != CARD_NONE && suit == p->trump)
            return fail(err, G304_E_MAKER_TRUMP,
                        "while the indicator is face down you can cut only with the indicator; otherwise play "
                        "a card that is not trump");
        *facedown = 1;
    }
    return G304_OK;
}

/* The situation of seat at its turn in the current trick, for g304_check_card(). */
static void card_rules_of(const g304_state *st, int seat, g304_card_rules *p)
{
    const g304_trick *t = &st->tricks[st->trick_no];
    p->hand = st->hand[seat];
    p->indicator = st->ind_down && seat == st->maker ? st->indicator : CARD_NONE;
    p->is_maker = seat == st->maker;
    p->trump = st->trump;
    p->trump_open = st->trump_open;
    p->trick_no = st->trick_no;
    p->exhaust = st->exhaust;
    p->led = t->n ? t->card[0] : CARD_NONE;
}

static g304_code check_play(const g304_state *st, int seat, card_t card, int *facedown, g304_error *err)
{
    g304_card_rules p;
    card_rules_of(st, seat, &p);
    return g304_check_card(&p, card, facedown, err);
}

/* Which card of a complete trick wins: the highest trump if any trump is in it, else the
 * highest card of the suit led (R-FOLLOW). A trump can only be in a trick face up while the
 * trump is closed if trump was led, and a face-down trump always turns the trick up
 * (R-REVEAL), so this holds for closed tricks too. */
int g304_trick_winner(const card_t *cards, int n, int trump)
{
    int led = CARD_SUIT(cards[0]), best = 0, best_trump = 0;
    for (int i = 0; i < n; i++) {
        int s = CARD_SUIT(cards[i]);
        int is_trump = s == trump;
        if (is_trump && !best_trump) {
            best = i, best_trump = 1;
            continue;
        }
        int cmp_suit = best_trump ? trump : led;
        if (s == cmp_suit && (best_trump == is_trump) && card_power(cards[i]) > card_power(cards[best]))
            best = i;
    }
    return best;
}

static void finish_trick(g304_state *st, g304_events *ev)
{
    g304_trick *t = &st->tricks[st->trick_no];
    int n = t->n, maker = st->maker;
    if (t->facedown) { /* R-REVEAL */
        cardset_t down = 0, turned = 0;
        int any_trump = 0;
        for (int i = 0; i < n; i++) {
            if (!(t->facedown & (1 << i))) continue;
            down |= CARDSET_BIT(t->card[i]);
            any_trump |= CARD_SUIT(t->card[i]) == st->trump;
        }
        g304_event *e = emit(ev, G304_EV_INSPECT, G304_VIS_SEAT, maker, maker);
        event_cards(e, down);
        if (!any_trump) {
            t->announced = 1;
            emit(ev, G304_EV_NO_TRUMP, G304_VIS_ALL, 0, maker);
        } else {
            t->announced = 2;
            for (int i = 0; i < n; i++) {
                if (!(t->facedown & (1 << i))) continue;
                if (t->seat[i] == maker && CARD_SUIT(t->card[i]) != st->trump) continue;
                t->hidden &= (uint8_t) ~(1 << i);
                turned |= CARDSET_BIT(t->card[i]);
            }
            indicator_to_hand(st);
            e = emit(ev, G304_EV_REVEAL, G304_VIS_ALL, 0, maker);
            event_cards(e, turned);
            e->other = st->indicator;
            e->flag = st->trump;
        }
    }
    int w = g304_trick_winner(t->card, n, st->trump);
    int winner = t->seat[w];
    uint16_t pts = 0;
    for (int i = 0; i < n; i++) pts = (uint16_t)(pts + card_points(t->card[i]));
    t->winner = (uint8_t)winner;
    t->points = pts;
    st->points[team_of(winner)] = (uint16_t)(st->points[team_of(winner)] + pts);
    st->team_tricks[team_of(winner)]++;
    g304_event *e = emit(ev, G304_EV_TRICK, G304_VIS_ALL, 0, winner);
    e->amount = (uint16_t)(st->trick_no + 1);
    e->flag = t->hidden == 0;
    e->other = t->hidden == 0 ? (uint8_t)pts : 0;

    /* R-EXHAUST: the maker led a trump from hand and nobody else could follow */
    if (!st->pcc && t->seat[0] == maker && CARD_SUIT(t->card[0]) == st->trump) {
        int followed = 0;
        for (int i = 1; i < n; i++) followed |= CARD_SUIT(t->card[i]) == st->trump;
        /* binding only while he still holds a trump; once he has none it is over for good */
        if (!followed) st->exhaust = (st->hand[maker] & CARDSET_SUIT(st->trump)) != 0;
    }
    /* a closed game at 250 or more opens after the first trick */
    if (st->trick_no == 0 && st->bid >= 250 && st->ind_down) {
        e = emit(ev, G304_EV_SHOWN, G304_VIS_ALL, 0, maker);
        e->cards[0] = st->indicator;
        e->n = 1;
        e->flag = st->trump;
        indicator_to_hand(st);
    }
    st->trick_no++;
    if (st->trick_no == tricks_of(st)) {
        score_played(st, ev);
        return;
    }
    st->tricks[st->trick_no].leader = (uint8_t)winner;
    st->to_act = (uint8_t)winner;
}

/* Plays a card already checked by check_play(). */
static void do_play(g304_state *st, int seat, card_t card, int facedown, g304_events *ev)
{
    g304_trick *t = &st->tricks[st->trick_no];
    int is_ind = st->ind_down && seat == st->maker && card == st->indicator;
    if (is_ind) {
        st->ind_down = 0;
        if (!facedown) st->trump_open = 1; /* shown face up as the last card: everybody sees it */
    } else {
        st->hand[seat] &= ~CARDSET_BIT(card);
    }
    if (st->exhaust && seat == st->maker && !(st->hand[seat] & CARDSET_SUIT(st->trump))) st->exhaust = 0;
    int i = t->n;
    t->card[i] = card;
    t->seat[i] = (uint8_t)seat;
    if (facedown) {
        t->facedown |= (uint8_t)(1 << i);
        t->hidden |= (uint8_t)(1 << i);
    }
    t->n++;
    if (facedown) {
        g304_event *e = emit(ev, G304_EV_FACEDOWN, G304_VIS_ALL, 0, seat);
        e->cards[0] = CARD_HIDDEN;
        e->n = 1;
        e->flag = (uint8_t)is_ind;
        e = emit(ev, G304_EV_FACEDOWN, G304_VIS_SEAT, seat, seat);
        e->cards[0] = card;
        e->n = 1;
        e->flag = (uint8_t)is_ind;
    } else {
        g304_event *e = emit(ev, G304_EV_PLAY, G304_VIS_ALL, 0, seat);
        e->cards[0] = card;
        e->n = 1;
    }
    if (t->n == trick_cards(st))
        finish_trick(st, ev);
    else
        st->to_act = (uint8_t)g304_next_seat(st, seat);
}

/* R-CAPS-CALL: after a call the game plays the caller's cards in the stated order. A card
 * that cannot legally be played when its turn comes is passed over for the next one of the
 * order that can (the call was not certain; the result notes it). */
static void caps_autoplay(g304_state *st, g304_events *ev)
{
    while (st->phase == G304_PHASE_PLAY && st->caps_seat != G304_NO_SEAT && st->to_act == st->caps_seat &&
           st->caps_next < st->caps_n) {
        int seat = st->caps_seat, fd = 0;
        int k = st->caps_next;
        while (k < st->caps_n && check_play(st, seat, st->caps_order[k], &fd, NULL) != G304_OK) k++;
        if (k == st->caps_n) return; /* cannot happen: some card in hand is always playable */
        if (k != st->caps_next) {
            card_t c = st->caps_order[k];
            memmove(&st->caps_order[st->caps_next + 1], &st->caps_order[st->caps_next],
                    (size_t)(k - st->caps_next));
            st->caps_order[st->caps_next] = c;
            st->caps_broken = 1;
        }
        card_t c = st->caps_order[st->caps_next++];
        do_play(st, seat, c, fd, ev);
    }
}

/* Sets up the first trick (R-LEAD1) once the final indicator lies on the table; voids the
 * hand at once under `spoilt = auto` (R-SPOILT). */
static void start_play(g304_state *st, g304_events *ev)
{
    st->phase = G304_PHASE_PLAY;
    st->trick_no = 0;
    int leader = st->pcc ? st->maker : seat_add(st, st->dealer, 1);
    st->tricks[0].leader = (uint8_t)leader;
    st->to_act = (uint8_t)leader;
    if (st->rules.spoilt == G304_SPOILT_AUTO && spoilt_trumps(st)) {
        st->result.spoilt_ok = 1;
        g304_event *e = emit(ev, G304_EV_SPOILT, G304_VIS_ALL, 0, G304_NO_SEAT);
        e->flag = 1;
        finish(st, G304_END_SPOILT, st->dealer, ev);
    }
}

/* ---- bidding ---- */

static int amount_step_ok(const g304_state *st, int amount)
{
    if (amount < 200) return amount % 10 == 0;
    return amount % (st->rules.step_above_200 == 5 ? 5 : 10) == 0;
}

static g304_code check_amount(const g304_state *st, int amount, int minimum, g304_error *err)
{
    if (amount == G304_PCC) return G304_OK;
    if (amount < minimum || amount > G304_MAX_BID)
        return fail(err, G304_E_AMOUNT, "bids go from %d to %d", minimum, G304_MAX_BID);
    if (!amount_step_ok(st, amount))
        return fail(err, G304_E_AMOUNT, st->rules.step_above_200 == 5 ? "bids are multiples of 10, or of 5 from 200 up"
                                                                      : "bids are multiples of 10");
    if (st->bid && amount <= st->bid)
        return fail(err, G304_E_BID_LOW, "the bid is %d: bid more than that, or pass", st->bid);
    return G304_OK;
}

/* R-B4-AMOUNT, R-B4-200, and `bidding = single`. */
static g304_code check_bid4(const g304_state *st, int seat, int amount, g304_error *err)
{
    if (amount == G304_PCC)
        return fail(err, G304_E_AMOUNT, "Partner Close Caps can only be bid with %s cards", six(st) ? "six" : "eight");
    g304_code c = check_amount(st, amount, 160, err);
    if (c) return c;
    int spoke = (st->spoke & seat_bit(seat)) != 0;
    int partner_holds = teammates(seat, st->bidder); /* R-SIX-PARTNER: "a teammate" */
    if (st->rules.bidding == G304_BIDDING_SINGLE) {
        int may_break = amount >= 200 && !st->high200; /* the first bid of 200 or more */
        if (spoke && !may_break)
            return fail(err, G304_E_ONCE,
                        st->high200 ? "you have had your turn: each player bids once"
                                    : "you have had your turn: only a first bid of 200 or more may come now");
        if (partner_holds && !may_break)
            return fail(err, G304_E_PARTNER_BID,
                        st->high200 ? "you may not overbid %s"
                                    : "you may not overbid %s, unless with the first bid of 200 or more",
                        mate(st));
        return G304_OK;
    }
    if (partner_holds && amount < 200)
        return fail(err, G304_E_BID_200, "%s holds the bid: bid 200 or more, or pass", mate(st));
    if (spoke && amount < 200)
        return fail(err, G304_E_BID_200, "you have already had a turn: bid 200 or more, or pass");
    return G304_OK;
}

/* R-B8-AMOUNT, R-B8-PCC, R-SIX-B6. */
static g304_code check_bid8(const g304_state *st, int seat, int amount, g304_error *err)
{
    g304_code c = check_amount(st, amount, 250, err);
    if (c) return c;
    if (st->bid_round == 8 && teammates(seat, st->bidder))
        return fail(err, G304_E_PARTNER_BID, "%s made the highest bid in this round: you must pass", mate(st));
    return G304_OK;
}

/* R-B4-PARTNER; R-SIX-PARTNER: not with six players. */
static g304_code check_ask(const g304_state *st, int seat, g304_error *err)
{
    if (six(st)) return fail(err, G304_E_ASK, "there is no asking partner with six players: bid or pass");
    if (st->asked != G304_NO_SEAT)
        return fail(err, G304_E_ASK, "you were asked to bid: bid or pass, you can't ask back");
    if (st->bidder == partner_of(seat))
        return fail(err, G304_E_ASK, "your partner holds the highest bid and may not overbid himself");
    (void)seat;
    return G304_OK;
}

static g304_code check_redeal(const g304_state *st, int seat, g304_error *err)
{
    if (seat != seat_add(st, st->dealer, 1))
        return fail(err, G304_E_SEAT, "only the player at the dealer's right may ask for a redeal");
    if (st->spoke || st->asked != G304_NO_SEAT || st->bid)
        return fail(err, G304_E_REDEAL, "too late: a redeal must come before you bid or pass");
    int pts = cardset_points(st->first4[seat]);
    if (pts >= 15)
        return fail(err, G304_E_REDEAL, "your four cards are worth %d points: a redeal needs less than 15", pts);
    return G304_OK;
}

/* The turn in the four-card round resolved (bid or pass, possibly by the asked partner). */
static void b4_turn_done(g304_state *st, int passed, g304_events *ev)
{
    if (st->asked != G304_NO_SEAT) {
        st->spoke |= (uint8_t)(seat_bit(st->turn) | seat_bit(st->asked));
        st->asked = G304_NO_SEAT;
    } else {
        st->spoke |= (uint8_t)seat_bit(st->turn);
    }
    st->passes = passed ? (uint8_t)(st->passes + 1) : 0;
    if (st->bid == 0 && st->passes == seats_of(st)) { /* all passed */
        emit(ev, G304_EV_ALL_PASS, G304_VIS_ALL, 0, G304_NO_SEAT);
        finish(st, G304_END_ALL_PASS, st->dealer + 1, ev);
        return;
    }
    if (st->bid && st->passes == seats_of(st) - 1) { /* R-B4-ORDER: the others passed after a bid */
        st->maker = st->maker4 = st->bidder;
        st->bid4 = st->bid;
        st->phase = G304_PHASE_TRUMP;
        st->to_act = st->maker;
        g304_event *e = emit(ev, G304_EV_MAKER, G304_VIS_ALL, 0, st->maker);
        e->amount = st->bid;
        return;
    }
    int next = seat_add(st, st->turn, 1);
    if (next == st->bidder) next = seat_add(st, next, 1); /* nobody overbids himself */
    st->turn = st->to_act = (uint8_t)next;
}

static void end_bid8(g304_state *st, g304_events *ev)
{
    if (st->bid_round != 8) { /* R-B8-RESULT: nobody bid, play on the four-card bid */
        start_play(st, ev);
        return;
    }
    /* the old indicator goes back to its owner; the new maker places a new one */
    st->hand[st->maker4] |= CARDSET_BIT(st->indicator);
    emit(ev, G304_EV_RETURNED, G304_VIS_ALL, 0, st->maker4);
    st->indicator = CARD_NONE;
    st->ind_down = 0;
    st->maker = st->bidder;
    st->pcc = st->bid == G304_PCC;
    st->phase = G304_PHASE_TRUMP;
    st->to_act = st->maker;
    g304_event *e = emit(ev, G304_EV_MAKER, G304_VIS_ALL, 0, st->maker);
    e->amount = st->bid;
}

/* ---- the moves ---- */

static g304_code apply_bid(g304_state *st, int seat, int amount, g304_events *ev, g304_error *err)
{
    if (st->phase == G304_PHASE_BID4) {
        g304_code c = check_bid4(st, seat, amount, err);
        if (c) return c;
    } else {
        g304_code c = check_bid8(st, seat, amount, err);
        if (c) return c;
    }
    st->bid = (uint16_t)amount;
    st->bidder = (uint8_t)seat;
    g304_event *e = emit(ev, G304_EV_BID, G304_VIS_ALL, 0, seat);
    e->amount = (uint16_t)amount;
    if (st->phase == G304_PHASE_BID4) {
        st->bid_round = 4;
        if (amount >= 200) st->high200 = 1;
        b4_turn_done(st, 0, ev);
        return G304_OK;
    }
    st->bid_round = 8;
    st->passes++;
    if (amount == G304_PCC || st->passes == seats_of(st))
        end_bid8(st, ev);
    else
        st->to_act = (uint8_t)seat_add(st, seat, 1);
    return G304_OK;
}

static g304_code apply_pass(g304_state *st, int seat, g304_events *ev)
{
    emit(ev, G304_EV_PASS, G304_VIS_ALL, 0, seat);
    if (st->phase == G304_PHASE_BID4) {
        b4_turn_done(st, 1, ev);
        return G304_OK;
    }
    st->passes++;
    if (st->passes == seats_of(st))
        end_bid8(st, ev);
    else
        st->to_act = (uint8_t)seat_add(st, seat, 1);
    return G304_OK;
}

static g304_code check_trump(const g304_state *st, int seat, card_t card, g304_error *err)
{
    char one[CARD_TEXT_MAX];
    (void)seat;
    if (card >= pack_of(st)) return fail(err, G304_E_NOT_HELD, "that is not a card");
    if (!(st->hand[st->maker] & CARDSET_BIT(card)))
        return fail(err, G304_E_NOT_HELD, "you don't hold %s", card_pretty(card, one));
    if (st->bid_round != 8 && !(st->first4[st->maker] & CARDSET_BIT(card)))
        return fail(err, G304_E_INDICATOR, "the indicator must be one of your first four cards");
    return G304_OK;
}

static void apply_trump(g304_state *st, card_t card, g304_events *ev)
{
    int maker = st->maker;
    st->indicator = card;
    st->trump = (uint8_t)CARD_SUIT(card);
    st->ind_down = 1;
    st->hand[maker] &= ~CARDSET_BIT(card);
    g304_event *e = emit(ev, G304_EV_INDICATOR, G304_VIS_SEAT, maker, maker);
    e->cards[0] = card;
    e->n = 1;
    emit(ev, G304_EV_PLACED, G304_VIS_ALL, 0, maker);
    if (st->bid_round == 8) { /* the eight-card round is over: play */
        start_play(st, ev);
        return;
    }
    deal_batch(st, 1, ev); /* R-DEAL: complete the deal */
    st->phase = G304_PHASE_BID8;
    st->passes = 0;
    st->to_act = (uint8_t)(st->rules.bid8_opener == G304_OPENER_DEALER_RIGHT ? seat_add(st, st->dealer, 1) : maker);
}

static g304_code check_open(const g304_state *st, int seat, g304_error *err)
{
    if (seat != st->maker) return fail(err, G304_E_SEAT, "only the trump maker may declare an open game");
    if (!st->ind_down || st->trick_no != 0 || st->tricks[0].n != 0)
        return fail(err, G304_E_OPEN, "an open game is declared before the first card is led");
    return G304_OK;
}

static void apply_open(g304_state *st, g304_events *ev)
{
    st->declared_open = 1;
    indicator_to_hand(st);
    g304_event *e = emit(ev, G304_EV_OPEN, G304_VIS_ALL, 0, st->maker);
    e->cards[0] = st->indicator;
    e->n = 1;
    e->flag = st->trump;
}

/* Whether seat may call Caps now, whatever the order (R-CAPS-CALL, R-PCC, `caps = off`). */
static g304_code check_caps_allowed(const g304_state *st, int seat, g304_error *err)
{
    if (st->phase != G304_PHASE_PLAY) return fail(err, G304_E_PHASE, "Caps is called during play");
    if (st->rules.caps == G304_CAPS_OFF) return fail(err, G304_E_CAPS, "Caps calls are off at this table");
    if (st->pcc) return fail(err, G304_E_CAPS, "no Caps call in Partner Close Caps: the maker must win every trick");
    if (st->caps_seat != G304_NO_SEAT) return fail(err, G304_E_CAPS, "Caps has already been called");
    if (st->team_tricks[!team_of(seat)])
        return fail(err, G304_E_CAPS, "your team has already lost a trick: Caps is no longer possible");
    if (!g304_cards_of(st, seat)) return fail(err, G304_E_CAPS, "you have no cards left");
    return G304_OK;
}

int g304_may_caps(const g304_state *st, int seat) { return check_caps_allowed(st, seat, NULL) == G304_OK; }

static g304_code check_caps(const g304_state *st, int seat, const g304_action *a, g304_error *err)
{
    char buf[64];
    g304_code c = check_caps_allowed(st, seat, err);
    if (c) return c;
    cardset_t have = g304_cards_of(st, seat), listed = 0;
    for (int i = 0; i < a->n && i < G304_TRICKS; i++) {
        if (a->order[i] >= pack_of(st) || (listed & CARDSET_BIT(a->order[i]))) {
            listed = ~have; /* forces the message below */
            break;
        }
        listed |= CARDSET_BIT(a->order[i]);
    }
    if (listed != have || a->n != cardset_count(have))
        return fail(err, G304_E_CAPS, "a Caps call lists every card you hold once, in playing order: %s",
                    cards_text(have, buf, sizeof buf));
    return G304_OK;
}

static void apply_caps(g304_state *st, int seat, const g304_action *a, g304_events *ev)
{
    st->caps_seat = (uint8_t)seat;
    st->caps_n = a->n;
    st->caps_next = 0;
    memcpy(st->caps_order, a->order, a->n);
    st->caps_trick = st->trick_no;
    st->caps_cards = st->tricks[st->trick_no].n;
    g304_event *e = emit(ev, G304_EV_CAPS, G304_VIS_ALL, 0, seat);
    memcpy(e->cards, a->order, a->n);
    e->n = a->n;
    if (seat == st->maker && st->ind_down) { /* his shown cards include the indicator */
        e = emit(ev, G304_EV_SHOWN, G304_VIS_ALL, 0, seat);
        e->cards[0] = st->indicator;
        e->n = 1;
        e->flag = st->trump;
        e->amount = 1;
        indicator_to_hand(st);
    }
    caps_autoplay(st, ev);
}

int g304_may_spoilt(const g304_state *st, int seat)
{
    (void)seat;
    return st->phase == G304_PHASE_PLAY;
}

/* R-SPOILT, R-SPOILT-WRONG, R-VIOLATION. */
static void apply_spoilt(g304_state *st, int seat, g304_events *ev)
{
    int ok = spoilt_trumps(st);
    st->spoilt_seat = (uint8_t)seat;
    st->result.spoilt_ok = (uint8_t)ok;
    g304_event *e = emit(ev, G304_EV_SPOILT, G304_VIS_ALL, 0, seat);
    e->flag = (uint8_t)ok;
    if (ok) {
        finish(st, G304_END_SPOILT, st->dealer, ev);
        return;
    }
    /* the other team gets the hand with its winnings plus 2 tokens */
    int caller = team_of(seat), mt = team_of(st->maker);
    if (caller == mt) {
        st->result.made = 0;
        pay(st, caller, bid_charge(st->bid) + 2);
    } else {
        st->result.made = 1;
        pay(st, caller, bid_reward(st->bid) + 2);
    }
    finish(st, G304_END_VIOLATION, st->dealer + 1, ev);
}

static g304_code check_cut(const g304_state *st, int amount, g304_error *err)
{
    int last = pack_of(st) - 1;
    if (amount > last) return fail(err, G304_E_CUT, "the cut point is a number from 0 (no cut) to %d", last);
    return G304_OK;
}

static void apply_cut(g304_state *st, int seat, int at, g304_events *ev)
{
    int pack = pack_of(st);
    card_t old[CARD_IDS];
    memcpy(old, st->deck, (size_t)pack);
    for (int i = 0; i < pack; i++) st->deck[i] = old[(i + at) % pack];
    g304_event *e = emit(ev, G304_EV_CUT, G304_VIS_ALL, 0, seat);
    e->amount = (uint16_t)at;
    start_bidding(st, ev);
}

/* Which phase each move belongs to, and a message when it does not. */
static g304_code check_phase(const g304_state *st, int kind, g304_error *err)
{
    static const uint8_t phase_of[G304_DO_COUNT] = {
        [G304_DO_CUT] = 1 << G304_PHASE_CUT,
        [G304_DO_BID] = 1 << G304_PHASE_BID4 | 1 << G304_PHASE_BID8,
        [G304_DO_PASS] = 1 << G304_PHASE_BID4 | 1 << G304_PHASE_BID8,
        [G304_DO_PARTNER] = 1 << G304_PHASE_BID4,
        [G304_DO_REDEAL] = 1 << G304_PHASE_BID4,
        [G304_DO_TRUMP] = 1 << G304_PHASE_TRUMP,
        [G304_DO_OPEN] = 1 << G304_PHASE_PLAY,
        [G304_DO_PLAY] = 1 << G304_PHASE_PLAY,
        [G304_DO_CAPS] = 1 << G304_PHASE_PLAY,
        [G304_DO_SPOILT] = 1 << G304_PHASE_PLAY,
    };
    static const char *const when[G304_DO_COUNT] = {
        [G304_DO_CUT] = "the cut comes before the deal",
        [G304_DO_BID] = "this is not the time to bid",
        [G304_DO_PASS] = "there is no bidding going on",
        [G304_DO_PARTNER] = "you can ask your partner only in the four-card bidding",
        [G304_DO_REDEAL] = "a redeal is asked for before the four-card bidding starts",
        [G304_DO_TRUMP] = "the indicator is placed by the trump maker after the bidding",
        [G304_DO_OPEN] = "an open game is declared after the %s bidding, before the first lead",
        [G304_DO_PLAY] = "cards are played after the bidding",
        [G304_DO_CAPS] = "Caps is called during play",
        [G304_DO_SPOILT] = "spoilt trumps are declared after the %s bidding, during play",
    };
    if (st->phase == G304_PHASE_DONE) return fail(err, G304_E_OVER, "the hand is over");
    if (kind < 0 || kind >= G304_DO_COUNT) return fail(err, G304_E_PHASE, "unknown move");
    if (kind == G304_DO_PARTNER && six(st)) return check_ask(st, 0, err); /* R-SIX-PARTNER, in every phase */
    if (!(phase_of[kind] & (1 << st->phase))) {
        if (kind == G304_DO_PARTNER && st->phase == G304_PHASE_BID8)
            return fail(err, G304_E_ASK, "no asking partner in the eight-card round");
        return fail(err, G304_E_PHASE, when[kind], round2(st));
    }
    return G304_OK;
}

static g304_code check_turn(const g304_state *st, int seat, g304_error *err)
{
    if (seat == st->to_act) return G304_OK;
    if (st->caps_seat == seat)
        return fail(err, G304_E_TURN, "the game plays your cards in the order of your Caps call");
    return fail(err, G304_E_TURN, "it is not your turn: seat %d is to act", st->to_act);
}

/* Validates a move completely without changing anything. */
static g304_code check_move(const g304_state *st, int seat, const g304_action *a, int *facedown, g304_error *err)
{
    g304_code c = check_phase(st, a->kind, err);
    if (c) return c;
    switch (a->kind) {
    case G304_DO_OPEN: return check_open(st, seat, err);
    case G304_DO_CAPS: return check_caps(st, seat, a, err);
    case G304_DO_SPOILT: return G304_OK;
    case G304_DO_REDEAL:
        /* the seat and timing say more than "not your turn" */
        if ((c = check_redeal(st, seat, err))) return c;
        return check_turn(st, seat, err);
    default: break;
    }
    if ((c = check_turn(st, seat, err))) return c;
    switch (a->kind) {
    case G304_DO_CUT: return check_cut(st, a->amount, err);
    case G304_DO_BID:
        return st->phase == G304_PHASE_BID4 ? check_bid4(st, seat, a->amount, err)
                                            : check_bid8(st, seat, a->amount, err);
    case G304_DO_PASS: return G304_OK;
    case G304_DO_PARTNER: return check_ask(st, seat, err);
    case G304_DO_TRUMP: return check_trump(st, seat, a->card, err);
    case G304_DO_PLAY:
        if (a->card >= pack_of(st)) return fail(err, G304_E_NOT_HELD, "that is not a card");
        return check_play(st, seat, a->card, facedown, err);
    }
    return fail(err, G304_E_PHASE, "unknown move");
}

g304_code g304_apply(g304_state *st, int seat, const g304_action *a, g304_events *ev, g304_error *err)
{
    g304_events scratch;
    if (!ev) ev = &scratch, scratch.n = 0;
    if (seat < 0 || seat >= seats_of(st)) return fail(err, G304_E_SEAT, "there is no seat %d", seat);
    int facedown = 0;
    g304_code c = check_move(st, seat, a, &facedown, err);
    if (c) return c;
    if (err) err->code = G304_OK, err->msg[0] = 0;
    switch (a->kind) {
    case G304_DO_CUT: apply_cut(st, seat, a->amount, ev); break;
    case G304_DO_BID: apply_bid(st, seat, a->amount, ev, err); break;
    case G304_DO_PASS: apply_pass(st, seat, ev); break;
    case G304_DO_PARTNER: {
        g304_event *e = emit(ev, G304_EV_ASK, G304_VIS_ALL, 0, seat);
        e->other = (uint8_t)partner_of(seat);
        st->asked = st->to_act = (uint8_t)partner_of(seat);
        break;
    }
    case G304_DO_REDEAL:
        emit(ev, G304_EV_REDEAL, G304_VIS_ALL, 0, seat);
        finish(st, G304_END_REDEAL, st->dealer, ev);
        break;
    case G304_DO_TRUMP: apply_trump(st, a->card, ev); break;
    case G304_DO_OPEN: apply_open(st, ev); break;
    case G304_DO_PLAY:
        do_play(st, seat, a->card, facedown, ev);
        caps_autoplay(st, ev);
        break;
    case G304_DO_CAPS: apply_caps(st, seat, a, ev); break;
    case G304_DO_SPOILT: apply_spoilt(st, seat, ev); break;
    }
    return G304_OK;
}

/* ---- legal moves ---- */

static void add(g304_action *out, int *n, int kind, card_t card, int amount)
{
    if (*n >= G304_MAX_LEGAL) return;
    g304_action *a = &out[(*n)++];
    memset(a, 0, sizeof *a);
    a->kind = (uint8_t)kind;
    a->card = card;
    a->amount = (uint16_t)amount;
}

int g304_legal(const g304_state *st, int seat, g304_action *out)
{
    int n = 0, fd;
    if (seat < 0 || seat >= seats_of(st) || st->phase == G304_PHASE_DONE) return 0;
    if (seat != st->to_act) { /* the maker may declare an open game out of turn */
        if (st->phase == G304_PHASE_PLAY && check_open(st, seat, NULL) == G304_OK) add(out, &n, G304_DO_OPEN, 0, 0);
        return n;
    }
    switch (st->phase) {
    case G304_PHASE_CUT:
        for (int at = 0; at < pack_of(st); at++) add(out, &n, G304_DO_CUT, 0, at);
        break;
    case G304_PHASE_BID4:
    case G304_PHASE_BID8:
        for (int amount = 160; amount <= G304_MAX_BID; amount += 5) {
            g304_code c = st->phase == G304_PHASE_BID4 ? check_bid4(st, seat, amount, NULL)
                                                      : check_bid8(st, seat, amount, NULL);
            if (c == G304_OK) add(out, &n, G304_DO_BID, 0, amount);
        }
        if (st->phase == G304_PHASE_BID8 && check_bid8(st, seat, G304_PCC, NULL) == G304_OK)
            add(out, &n, G304_DO_BID, 0, G304_PCC);
        add(out, &n, G304_DO_PASS, 0, 0);
        if (st->phase == G304_PHASE_BID4) {
            if (check_ask(st, seat, NULL) == G304_OK) add(out, &n, G304_DO_PARTNER, 0, 0);
            if (check_redeal(st, seat, NULL) == G304_OK) add(out, &n, G304_DO_REDEAL, 0, 0);
        }
        break;
    case G304_PHASE_TRUMP: /* the maker's cards, in card order */
        for (cardset_t h = st->hand[st->maker]; h; h &= h - 1)
            if (check_trump(st, seat, low_card(h), NULL) == G304_OK) add(out, &n, G304_DO_TRUMP, low_card(h), 0);
        break;
    case G304_PHASE_PLAY: {
        for (cardset_t h = g304_cards_of(st, seat); h; h &= h - 1)
            if (check_play(st, seat, low_card(h), &fd, NULL) == G304_OK) add(out, &n, G304_DO_PLAY, low_card(h), 0);
        if (check_open(st, seat, NULL) == G304_OK) add(out, &n, G304_DO_OPEN, 0, 0);
        break;
    }
    }
    return n;
}

/* ---- what a seat may know ---- */

card_t g304_trick_card_for(const g304_state *st, const g304_trick *t, int i, int seat)
{
    if (i >= t->n) return CARD_NONE;
    card_t c = t->card[i];
    if (!(t->hidden & (1 << i))) return c;
    if (st->phase == G304_PHASE_DONE || t->seat[i] == seat) return c;
    if (seat == st->maker && t->winner != G304_NO_SEAT) return c; /* he inspected it (R-REVEAL) */
    if (st->caps_seat == t->seat[i] && st->caps_trick <= (uint8_t)(t - st->tricks) &&
        !(st->caps_trick == (uint8_t)(t - st->tricks) && i < st->caps_cards))
        return c; /* played from the cards shown with a Caps call */
    return CARD_HIDDEN;
}

static void mask_trick(const g304_state *st, const g304_trick *t, int seat, g304_trick *out)
{
    *out = *t;
    for (int i = 0; i < t->n; i++) out->card[i] = g304_trick_card_for(st, t, i, seat);
    /* trick points reveal face-down cards: only when everything in it is visible */
    if (t->hidden && !(st->phase == G304_PHASE_DONE)) {
        for (int i = 0; i < t->n; i++)
            if (out->card[i] == CARD_HIDDEN) out->points = 0;
    }
}

void g304_view_of(const g304_state *st, int seat, g304_view *v)
{
    memset(v, 0, sizeof *v);
    v->seat = (uint8_t)seat;
    v->phase = st->phase;
    v->dealer = st->dealer;
    v->to_act = st->to_act;
    v->maker = st->maker;
    v->bid = st->bid;
    v->bidder = st->bidder;
    v->pcc = st->pcc;
    v->hand = g304_cards_of(st, seat);
    int knows = st->indicator != CARD_NONE &&
                (seat == st->maker || st->trump_open || st->phase == G304_PHASE_DONE);
    v->indicator = knows ? st->indicator : CARD_NONE;
    v->trump = knows ? (int8_t)st->trump : -1;
    v->trump_open = st->trump_open;
    v->ind_down = st->ind_down;
    v->declared_open = st->declared_open;
    v->trick_no = st->trick_no;
    for (int s = 0; s < seats_of(st); s++) v->hand_size[s] = (uint8_t)cardset_count(g304_cards_of(st, s));
    v->team_tricks[0] = st->team_tricks[0];
    v->team_tricks[1] = st->team_tricks[1];
    v->tokens[0] = st->tokens[0];
    v->tokens[1] = st->tokens[1];
    v->last.winner = v->current.winner = G304_NO_SEAT;
    if (st->phase == G304_PHASE_PLAY || st->phase == G304_PHASE_DONE) {
        int cur = st->trick_no < tricks_of(st) ? st->trick_no : -1;
        if (cur >= 0) mask_trick(st, &st->tricks[cur], seat, &v->current);
        int last = (cur >= 0 ? cur : tricks_of(st)) - 1;
        if (last >= 0) mask_trick(st, &st->tricks[last], seat, &v->last);
    }
    v->caps_seat = st->caps_seat;
    if (st->caps_seat != G304_NO_SEAT)
        for (int i = 0; i < st->caps_n; i++) v->caps_shown |= CARDSET_BIT(st->caps_order[i]);
}
