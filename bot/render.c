/* render.c — 304 in words: what the room and each player read (render.h).
 *
 * Every text is built by appending to one bounded buffer (textbuf): appends after the
 * buffer is full are dropped, and a cut never splits a UTF-8 character, so any len — even 1
 * or 8 — gives a valid, NUL-terminated prefix of the full text. Event texts rely on the
 * event's own fields for anything secret: the state passed in is the state after the whole
 * move (possibly several tricks later, with a Caps autoplay), so it is read only for what
 * everybody knows (names of the dealer and maker, the bid, the rules) and, in a seat's own
 * copy, for that seat's hand. Cards for people are card_pretty() text ("J♠", "10♥"); a card
 * the viewer may not see is 🂠. Seat 0..3 are South, East, North, West (R-SEATS); with six
 * players seats 0..5 have no compass points, and the teams are the odd and the even seats as
 * people count them, 1 3 5 and 2 4 6 (R-SIX-SEATS). The numbers of the game (cards in a hand,
 * seats, the pack) come from the state's rules, so the same words serve four and six.
 *
 * Chat is slow and shared (an IRC channel takes a line a second), so the room gets one line per
 * move: a public event is a piece of a line, and render_move() joins a move's pieces; only the
 * end of a hand takes lines of its own (the result, the cards held). */
#include "render.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "judge.h"
#include "textbuf.h"

#define RENDER_BACK "\xF0\x9F\x82\xA0" /* 🂠 a card face down */
#define RENDER_DOT " \xC2\xB7 "       /* " · " between groups */
#define RENDER_DASH "\xE2\x80\x94"     /* — */
#define RENDER_MINUS "\xE2\x88\x92"    /* − */

/* Ranks from the strongest down (R-CARDS: J 9 A 10 K Q 8 7; R-SIX-CARDS: the 6 last), and their
 * short text. */
static const int render_rank_order[RANK_IDS] = {RANK_J, RANK_9, RANK_A, RANK_T, RANK_K,
                                                RANK_Q, RANK_8, RANK_7, RANK_6};
static const char *const render_rank_text[RANK_IDS] = {"7", "8", "9", "10", "J", "Q", "K", "A", "6"};


/* ---- small words ---- */

static const char *render_who(const char *const names[], int seat)
{
    return seat >= 0 && seat < G304_MAX_SEATS && names[seat] ? names[seat] : "nobody";
}

static int render_six(const g304_state *st) { return g304_seats(&st->rules) == 6; }

/* A count in words, as the sentences say it: "two", "four", "six", "eight". */
static const char *render_count(int n)
{
    static const char *const words[] = {"no", "one", "two", "three", "four", "five", "six", "seven", "eight"};
    return n >= 0 && n <= 8 ? words[n] : "many";
}

/* A team in the results and the table: "South–North", "East–West"; "odd seats", "even seats". */
static const char *render_team_label(const g304_rules *r, int team)
{
    static const char *const four[2] = {"South\xE2\x80\x93North", "East\xE2\x80\x93West"};
    static const char *const six[2] = {"odd seats", "even seats"};
    return g304_seats(r) == 6 ? six[team & 1] : four[team & 1];
}

/* card_pretty(), or 🂠 for a card the viewer may not see. */
static const char *render_card(card_t c, char buf[CARD_TEXT_MAX])
{
    if (c == CARD_HIDDEN) return RENDER_BACK;
    return card_pretty(c, buf);
}

static int render_team(int seat) { return seat & 1; }

/* "alice (South) & carol (North)"; "alice (seat 1), carol (seat 3) & erin (seat 5)". */
static void out_team(textbuf *o, const g304_rules *r, const char *const names[], int team)
{
    int n = g304_seats(r);
    for (int s = team & 1; s < n; s += 2)
        tb_add(o, "%s%s", s < 2 ? "" : s + 2 < n ? ", " : " & ", render_who(names, s));
}

/* "alice (South) & carol (North) play against bob (East) & dave (West)". */
static void out_teams(textbuf *o, const g304_rules *r, const char *const names[])
{
    out_team(o, r, names, 0);
    tb_add(o, " play against ");
    out_team(o, r, names, 1);
}

/* The teammates of the seat, who sit out a Partner Close Caps (R-PCC, R-SIX-PCC): "bob (East)",
 * or "bob (seat 2) and dave (seat 4)". */
static void out_mates(textbuf *o, const g304_state *st, const char *const names[], int seat)
{
    int n = g304_seats(&st->rules);
    tb_add(o, "%s", render_who(names, (seat + 2) % n));
    if (n == 6) tb_add(o, " and %s", render_who(names, (seat + 4) % n));
}

static void out_bid(textbuf *o, int amount)
{
    if (amount == G304_PCC)
        tb_add(o, "Partner Close Caps");
    else
        tb_add(o, "%d", amount);
}

/* Cards in the given order, separated by blanks. */
static void out_cards(textbuf *o, const card_t *cards, int n)
{
    for (int i = 0; i < n; i++) {
        char one[CARD_TEXT_MAX];
        tb_add(o, "%s%s", i ? " " : "", render_card(cards[i], one));
    }
}

/* Suits in showing order: the trump first (if known, else -1), then S H D C. */
static int render_suit_at(int i, int trump)
{
    if (trump < 0 || trump >= SUIT_COUNT) return i;
    if (i == 0) return trump;
    return i <= trump ? i - 1 : i;
}

/* A set by suit, strongest first: "J♥ 9♥ · 10♠ 7♠" (pretty) or "♥ J 9 · ♠ 10 7" (compact). */
static void out_set(textbuf *o, cardset_t set, int trump, int compact)
{
    int groups = 0;
    for (int i = 0; i < SUIT_COUNT; i++) {
        int suit = render_suit_at(i, trump);
        if (!(set & CARDSET_SUIT(suit))) continue;
        tb_add(o, "%s", groups++ ? RENDER_DOT : "");
        if (compact) tb_add(o, "%s", suit_symbol(suit));
        int k = 0;
        for (int r = 0; r < RANK_IDS; r++) {
            card_t c = CARD_MAKE(suit, render_rank_order[r]);
            if (!(set & CARDSET_BIT(c))) continue;
            char one[CARD_TEXT_MAX];
            if (compact)
                tb_add(o, " %s", render_rank_text[CARD_RANK(c)]);
            else
                tb_add(o, "%s%s", k ? " " : "", card_pretty(c, one));
            k++;
        }
    }
}

static cardset_t render_set_of(const card_t *cards, int n)
{
    cardset_t s = 0;
    for (int i = 0; i < n; i++)
        if (cards[i] < CARD_IDS) s |= CARDSET_BIT(cards[i]);
    return s;
}

/* The trump suit if viewer (-1: the room) knows it, else -1 (as g304_view_of). */
static int render_known_trump(const g304_state *st, int viewer)
{
    if (st->indicator == CARD_NONE) return -1;
    if ((viewer >= 0 && viewer == st->maker) || st->trump_open || st->phase == G304_PHASE_DONE) return st->trump;
    return -1;
}

/* "hearts are trump" with the symbol: "♥ hearts" */
static void out_trump(textbuf *o, int suit)
{
    tb_add(o, "%s %s are trump", suit_symbol(suit), suit_name(suit));
}

/* Whether the event is for viewer at all (-1, the room, gets only events for everybody). */
static int render_for(const g304_event *e, int viewer)
{
    if (e->vis == G304_VIS_ALL) return 1;
    return viewer >= 0 && viewer < G304_MAX_SEATS && g304_event_visible(e, viewer);
}

/* A private copy addressed to viewer and carrying a real card. */
static int render_own_card(const g304_event *e, int viewer)
{
    return e->vis == G304_VIS_SEAT && viewer >= 0 && e->to == viewer && e->n > 0 && e->cards[0] < CARD_IDS;
}

/* ---- events ----
 *
 * A public event is a piece of a line (no capital at the start unless a name starts it, no
 * full stop): render_move() joins a move's pieces with " — ". A private event is a sentence
 * of its own. */

static void ev_dealt(textbuf *o, const g304_state *st, const g304_event *e, int viewer)
{
    int trump = render_known_trump(st, viewer);
    if (e->amount == 0)
        tb_add(o, "Your first four cards: ");
    else
        tb_add(o, "Your next %s cards: ", render_count(g304_tricks(&st->rules) - 4));
    out_set(o, render_set_of(e->cards, e->n), trump, 1);
    if (e->amount == 0) return;
    char hand[RENDER_MAX];
    render_hand(st, viewer, hand, sizeof hand);
    tb_add(o, " " RENDER_DASH " your hand: %s", hand);
}

static void ev_bidding(textbuf *o, const g304_state *st, const g304_event *e, const char *const names[])
{
    const char *who = render_who(names, e->seat);
    switch (e->kind) {
    case G304_EV_CUT:
        if (e->amount)
            tb_add(o, "%s cuts the pack at %d", who, e->amount);
        else
            tb_add(o, "%s does not cut the pack", who);
        break;
    case G304_EV_BID:
        tb_add(o, "%s bids ", who);
        out_bid(o, e->amount);
        break;
    case G304_EV_PASS: tb_add(o, "%s passes", who); break;
    case G304_EV_ASK: tb_add(o, "%s asks partner %s to bid", who, render_who(names, e->other)); break;
    case G304_EV_REDEAL: tb_add(o, "%s asks for a redeal: the first four cards are worth less than 15 points", who); break;
    case G304_EV_ALL_PASS: tb_add(o, "all %s passed", render_count(g304_seats(&st->rules))); break;
    }
}

static void ev_maker(textbuf *o, const g304_state *st, const g304_event *e, const char *const names[])
{
    const char *who = render_who(names, e->seat);
    if (e->amount == G304_PCC) {
        tb_add(o, "%s plays Partner Close Caps: ", who);
        out_mates(o, st, names, e->seat);
        tb_add(o, " %s out, and %s must win all %s tricks", render_six(st) ? "sit" : "sits", who,
               render_count(g304_tricks(&st->rules)));
    } else
        tb_add(o, "%s is trump maker at %d", who, e->amount);
}

static void ev_indicator(textbuf *o, const g304_state *st, const g304_event *e, int viewer,
                         const char *const names[])
{
    char one[CARD_TEXT_MAX];
    const char *who = render_who(names, e->seat);
    switch (e->kind) {
    case G304_EV_INDICATOR:
        tb_add(o, "Your indicator: %s, face down (", card_pretty(e->cards[0], one));
        out_trump(o, CARD_SUIT(e->cards[0]));
        tb_add(o, "); only you know it.");
        break;
    case G304_EV_PLACED: tb_add(o, "%s places the indicator face down", who); break;
    case G304_EV_RETURNED:
        if (render_own_card(e, viewer))
            tb_add(o, "Your old indicator %s is back in your hand.", card_pretty(e->cards[0], one));
        else if (viewer == e->seat)
            tb_add(o, "Your old indicator is back in your hand.");
        else
            tb_add(o, "the old indicator goes back to %s", who);
        break;
    case G304_EV_OPEN:
        tb_add(o, "%s declares an open game: the indicator is %s, ", who, card_pretty(e->cards[0], one));
        out_trump(o, e->flag);
        break;
    case G304_EV_SHOWN:
        if (e->amount == 1)
            tb_add(o, "with the Caps call the indicator is shown: %s, ", card_pretty(e->cards[0], one));
        else
            tb_add(o, "the bid is 250 or more, so the indicator is shown after the first trick: %s, ",
                   card_pretty(e->cards[0], one));
        out_trump(o, e->flag);
        tb_add(o, ", open from now; it goes back to %s", render_who(names, st->maker));
        break;
    }
}

static void ev_play(textbuf *o, const g304_event *e, int viewer, const char *const names[])
{
    char one[CARD_TEXT_MAX];
    const char *who = render_who(names, e->seat);
    if (e->kind == G304_EV_PLAY) {
        tb_add(o, "%s plays %s", who, card_pretty(e->cards[0], one));
    } else if (render_own_card(e, viewer)) {
        if (e->flag)
            tb_add(o, "You cut with your indicator %s, face down.", card_pretty(e->cards[0], one));
        else
            tb_add(o, "You play %s face down.", card_pretty(e->cards[0], one));
    } else if (e->flag) {
        tb_add(o, "%s cuts with the indicator " RENDER_BACK " face down", who);
    } else {
        tb_add(o, "%s plays " RENDER_BACK " face down", who);
    }
}

static void ev_reveal(textbuf *o, const g304_state *st, const g304_event *e, const char *const names[])
{
    char one[CARD_TEXT_MAX];
    cardset_t up = render_set_of(e->cards, e->n);
    int k = 0;
    tb_add(o, "a trump was played face down! Turned up:");
    for (int t = 0; t < G304_TRICKS; t++) /* in playing order, with who played each */
        for (int i = 0; i < st->tricks[t].n; i++) {
            card_t c = st->tricks[t].card[i];
            if (c >= CARD_IDS || !(up & CARDSET_BIT(c))) continue;
            tb_add(o, "%s %s (%s)", k++ ? "," : "", card_pretty(c, one), render_who(names, st->tricks[t].seat[i]));
        }
    tb_add(o, up & CARDSET_BIT(e->other) ? "; the indicator %s is among them: " : "; the indicator was %s: ",
           card_pretty(e->other, one));
    out_trump(o, e->flag);
    tb_add(o, ", open from now");
    if (!(up & CARDSET_BIT(e->other))) tb_add(o, "; it goes back to %s", render_who(names, st->maker));
}

static void ev_trick(textbuf *o, const g304_state *st, const g304_event *e, const char *const names[])
{
    const char *who = render_who(names, e->seat);
    switch (e->kind) {
    case G304_EV_INSPECT: {
        int trump = 0;
        for (int i = 0; i < e->n; i++) trump |= CARD_SUIT(e->cards[i]) == st->trump;
        tb_add(o, "Face down in this trick: ");
        out_cards(o, e->cards, e->n);
        tb_add(o, " %s %s", RENDER_DASH, trump ? "a trump is among them." : "no trump.");
        break;
    }
    case G304_EV_NO_TRUMP: tb_add(o, "no trump among the face-down cards: they stay face down"); break;
    case G304_EV_REVEAL: ev_reveal(o, st, e, names); break;
    case G304_EV_TRICK:
        if (e->flag)
            tb_add(o, "trick %d to %s, +%d", e->amount, who, e->other);
        else
            tb_add(o, "trick %d to %s (a card stays face down)", e->amount, who);
        break;
    }
}

/* "alice (South) ♦ J · ♠ K · ♥ J 9 A" and the maker's indicator. */
static void out_held(textbuf *o, const g304_state *st, const g304_event *e, const char *const names[])
{
    tb_add(o, "%s ", render_who(names, e->seat));
    out_set(o, render_set_of(e->cards, e->n), render_known_trump(st, -1), 1);
    if (e->seat == st->maker && st->indicator != CARD_NONE) {
        char one[CARD_TEXT_MAX];
        tb_add(o, " (indicator %s)", card_pretty(st->indicator, one));
    }
}

static void ev_end(textbuf *o, const g304_state *st, const g304_event *e, const char *const names[])
{
    const char *who = render_who(names, e->seat);
    switch (e->kind) {
    case G304_EV_CAPS:
        tb_add(o, "%s calls %sCaps: ", who,
               st->maker < G304_MAX_SEATS && render_team(e->seat) != render_team(st->maker) ? "External " : "");
        out_cards(o, e->cards, e->n);
        tb_add(o, ", shown and played in that order");
        break;
    case G304_EV_SPOILT:
        if (e->seat >= G304_MAX_SEATS)
            tb_add(o, "spoilt trumps: the trump maker's opponents hold no trump");
        else if (e->flag)
            tb_add(o, "%s declares spoilt trumps, rightly: the trump maker's opponents hold no trump", who);
        else
            tb_add(o, "%s declares spoilt trumps, but the trumps are not spoilt: a rule violation", who);
        break;
    case G304_EV_CAPS_JUDGED: {
        char text[RENDER_MAX];
        judge_describe(st, e, names, text, sizeof text);
        tb_add(o, "%s", text);
        break;
    }
    case G304_EV_HAND: out_held(o, st, e, names); break;
    }
}

size_t render_event(const g304_state *st, const g304_event *e, int viewer, const char *const names[],
                    char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    if (!render_for(e, viewer)) return tb_end(&o);
    switch (e->kind) {
    case G304_EV_DEALT:
        if (viewer >= 0) ev_dealt(&o, st, e, viewer);
        break;
    case G304_EV_CUT: case G304_EV_BID: case G304_EV_PASS: case G304_EV_ASK: case G304_EV_REDEAL:
    case G304_EV_ALL_PASS:
        ev_bidding(&o, st, e, names);
        break;
    case G304_EV_MAKER: ev_maker(&o, st, e, names); break;
    case G304_EV_INDICATOR: case G304_EV_PLACED: case G304_EV_RETURNED: case G304_EV_OPEN: case G304_EV_SHOWN:
        ev_indicator(&o, st, e, viewer, names);
        break;
    case G304_EV_PLAY: case G304_EV_FACEDOWN: ev_play(&o, e, viewer, names); break;
    case G304_EV_INSPECT: case G304_EV_NO_TRUMP: case G304_EV_REVEAL: case G304_EV_TRICK:
        ev_trick(&o, st, e, names);
        break;
    case G304_EV_CAPS: case G304_EV_SPOILT: case G304_EV_CAPS_JUDGED: case G304_EV_HAND:
        ev_end(&o, st, e, names);
        break;
    case G304_EV_RESULT: return render_result(st, names, buf, len);
    }
    return tb_end(&o);
}

/* Whether a result is said on lines of its own: a played hand and a violation change tokens;
 * a redeal, no bid or spoilt trumps only end the hand (a piece of the move's line). */
static int render_result_own_line(const g304_state *st)
{
    return st->result.end == G304_END_PLAYED || st->result.end == G304_END_VIOLATION;
}

size_t render_move(const g304_state *st, const g304_events *ev, const char *const names[], char *buf,
                   size_t len)
{
    textbuf o;
    char piece[RENDER_MAX], own[RENDER_MAX];
    textbuf rest;
    int pieces = 0, held = 0;
    tb_start(&o, buf, len);
    tb_start(&rest, own, sizeof own);
    for (int i = 0; i < ev->n; i++) {
        const g304_event *e = &ev->ev[i];
        if (e->vis != G304_VIS_ALL || e->kind == G304_EV_HAND) continue;
        if (!render_event(st, e, -1, names, piece, sizeof piece)) continue;
        if (e->kind == G304_EV_CAPS_JUDGED || (e->kind == G304_EV_RESULT && render_result_own_line(st)))
            tb_add(&rest, "\n%s", piece);
        else
            tb_add(&o, "%s%s", pieces++ ? " " RENDER_DASH " " : "", piece);
    }
    tb_add(&o, "%s", own + (pieces == 0 && own[0] == '\n'));
    for (int i = 0; i < ev->n; i++) { /* the cards each seat held, once the hand is over */
        const g304_event *e = &ev->ev[i];
        if (e->vis != G304_VIS_ALL || e->kind != G304_EV_HAND) continue;
        tb_add(&o, "%s", held++ ? "; " : pieces || own[0] ? "\nCards held: " : "Cards held: ");
        out_held(&o, st, e, names);
    }
    return tb_end(&o);
}

/* ---- the hand ---- */

size_t render_hand(const g304_state *st, int seat, char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    if (seat < 0 || seat >= G304_MAX_SEATS) return tb_end(&o);
    int ind_down = st->ind_down && seat == st->maker && st->indicator != CARD_NONE;
    cardset_t hand = g304_cards_of(st, seat);
    if (ind_down) hand &= ~CARDSET_BIT(st->indicator);
    if (hand)
        out_set(&o, hand, render_known_trump(st, seat), 1);
    else if (!ind_down)
        tb_add(&o, "(no cards)");
    if (ind_down) {
        char one[CARD_TEXT_MAX];
        tb_add(&o, "%s(indicator %s, face down)", hand ? "  " : "", card_pretty(st->indicator, one));
    }
    return tb_end(&o);
}

/* ---- whose turn ---- */

/* "a, b or c" from a few phrases; "200 or more, or pass" where a phrase has its own "or". */
static void out_choices(textbuf *o, const char *const *w, int n)
{
    for (int i = 0; i < n; i++)
        tb_add(o, "%s%s", i == 0 ? "" : i < n - 1 ? ", " : n == 2 && strstr(w[0], " or ") ? ", or " : " or ", w[i]);
}

/* "bob (East) to bid: 170 or more, pass or partner": the choices in the words a player types. */
static void turn_bidding(textbuf *o, const g304_state *st, const char *const names[])
{
    g304_action acts[G304_MAX_LEGAL];
    int n = g304_legal(st, st->to_act, acts), lo = 0, hi = 0, nw = 0;
    const char *words[5];
    char bid[48];
    for (int i = 0; i < n; i++)
        if (acts[i].kind == G304_DO_BID && acts[i].amount != G304_PCC) {
            if (!lo) lo = acts[i].amount;
            hi = acts[i].amount;
        }
    if (lo) snprintf(bid, sizeof bid, lo == hi ? "%d" : "%d or more", lo), words[nw++] = bid;
    for (int i = 0; i < n; i++) {
        if (acts[i].kind == G304_DO_BID && acts[i].amount == G304_PCC) words[nw++] = "pcc";
        if (acts[i].kind == G304_DO_PASS) words[nw++] = "pass";
        if (acts[i].kind == G304_DO_PARTNER) words[nw++] = "partner";
        /* A redeal is not named: that it is allowed tells the room the four cards are worth
         * less than 15 points. The player hears it privately. */
    }
    tb_add(o, "%s", render_who(names, st->to_act));
    if (st->asked == st->to_act) tb_add(o, " (asked by partner)");
    if (st->phase == G304_PHASE_BID8)
        tb_add(o, " to bid on %s cards: ", render_count(g304_tricks(&st->rules)));
    else
        tb_add(o, " to bid: ");
    out_choices(o, words, nw);
}

/* Whether the maker may still declare an open game (R-OPEN). */
static int render_may_open(const g304_state *st)
{
    g304_action acts[G304_MAX_LEGAL];
    if (st->maker >= G304_MAX_SEATS) return 0;
    int n = g304_legal(st, st->maker, acts);
    for (int i = 0; i < n; i++)
        if (acts[i].kind == G304_DO_OPEN) return 1;
    return 0;
}

static void turn_play(textbuf *o, const g304_state *st, const char *const names[])
{
    const g304_trick *t = &st->tricks[st->trick_no];
    const char *who = render_who(names, st->to_act);
    if (t->n == 0)
        tb_add(o, "%s to lead", who);
    else
        tb_add(o, "%s to play, %s led", who, suit_symbol(CARD_SUIT(t->card[0])));
    if (!render_may_open(st)) return;
    if (st->maker == st->to_act)
        tb_add(o, " or declare an open game");
    else
        tb_add(o, "; %s may first declare an open game", render_who(names, st->maker));
}

size_t render_turn(const g304_state *st, const char *const names[], char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    if (st->phase == G304_PHASE_DONE || st->to_act >= G304_MAX_SEATS) return tb_end(&o);
    const char *who = render_who(names, st->to_act);
    switch (st->phase) {
    case G304_PHASE_CUT:
        tb_add(&o, "%s to cut the pack: 1 to %d, or 0 for no cut", who, g304_deck_size(&st->rules) - 1);
        break;
    case G304_PHASE_BID4:
    case G304_PHASE_BID8: turn_bidding(&o, st, names); break;
    case G304_PHASE_TRUMP:
        if (st->bid_round == 8)
            tb_add(&o, "%s to choose the indicator from %s cards, privately", who,
                   render_count(g304_tricks(&st->rules)));
        else
            tb_add(&o, "%s to choose the indicator from the first four cards, privately", who);
        break;
    case G304_PHASE_PLAY: turn_play(&o, st, names); break;
    }
    return tb_end(&o);
}

/* ---- the table ---- */

static void table_head(textbuf *o, const g304_state *st, const char *const names[])
{
    static const char *const phase_words[] = {"waiting for the cut", "four-card bidding", "choosing the indicator",
                                              "", "", "the hand is over"};
    tb_add(o, "Dealer: %s" RENDER_DOT, render_who(names, st->dealer));
    if (st->phase == G304_PHASE_PLAY)
        tb_add(o, "trick %d of %d", st->trick_no + 1, g304_tricks(&st->rules));
    else if (st->phase == G304_PHASE_BID8)
        tb_add(o, "%s-card bidding", render_count(g304_tricks(&st->rules)));
    else if (st->phase < sizeof phase_words / sizeof phase_words[0])
        tb_add(o, "%s", phase_words[st->phase]);
}

static void table_bid(textbuf *o, const g304_state *st, const char *const names[])
{
    if (st->maker < G304_MAX_SEATS) {
        tb_add(o, "\nTrump maker: %s at ", render_who(names, st->maker));
        out_bid(o, st->bidder == st->maker ? st->bid : st->bid4);
        if (st->pcc) {
            tb_add(o, " (");
            out_mates(o, st, names, st->maker);
            tb_add(o, " %s out)", render_six(st) ? "sit" : "sits");
        }
        if (st->bidder == st->maker) return;
    }
    if (st->bid) {
        tb_add(o, "%s", st->maker < G304_MAX_SEATS ? RENDER_DOT "highest bid " : "\nHighest bid: ");
        out_bid(o, st->bid);
        tb_add(o, " by %s", render_who(names, st->bidder));
    } else if (st->phase == G304_PHASE_BID4) {
        tb_add(o, "\nNo bid yet");
    }
}

static void table_trump(textbuf *o, const g304_state *st, int viewer)
{
    if (st->indicator == CARD_NONE) return;
    int trump = render_known_trump(st, viewer);
    if (trump < 0) {
        tb_add(o, "\nTrump: hidden (closed game)");
        return;
    }
    char one[CARD_TEXT_MAX];
    tb_add(o, "\nTrump: %s %s (indicator %s)" RENDER_DOT, suit_symbol(trump), suit_name(trump),
            card_pretty(st->indicator, one));
    if (!st->trump_open && st->phase != G304_PHASE_DONE)
        tb_add(o, "closed, only you know it");
    else
        tb_add(o, "%s", st->declared_open ? "open game" : "open");
}

/* Points of a team everybody can count: its tricks' face-up cards; *hidden if some lie face down. */
static int render_public_points(const g304_state *st, int team, int *hidden)
{
    int pts = 0;
    *hidden = 0;
    for (int t = 0; t < G304_TRICKS; t++) {
        const g304_trick *k = &st->tricks[t];
        if (k->winner >= G304_MAX_SEATS || render_team(k->winner) != team) continue;
        for (int i = 0; i < k->n; i++) {
            card_t c = g304_trick_card_for(st, k, i, -1);
            if (c == CARD_HIDDEN)
                *hidden = 1;
            else
                pts += card_points(c);
        }
    }
    return pts;
}

/* One trick as viewer sees it: "bob (East) K♠ · carol (North) 🂠" */
static void out_trick(textbuf *o, const g304_state *st, const g304_trick *t, int viewer, const char *const names[])
{
    for (int i = 0; i < t->n; i++) {
        char one[CARD_TEXT_MAX];
        card_t c = g304_trick_card_for(st, t, i, viewer);
        tb_add(o, "%s%s %s", i ? RENDER_DOT : "", render_who(names, t->seat[i]), render_card(c, one));
        if (c != CARD_HIDDEN && (t->hidden & (1 << i)) && st->phase != G304_PHASE_DONE) tb_add(o, " (face down)");
    }
}

static void table_play(textbuf *o, const g304_state *st, int viewer, const char *const names[])
{
    if (st->phase != G304_PHASE_PLAY && !(st->phase == G304_PHASE_DONE && st->maker < G304_MAX_SEATS)) return;
    tb_add(o, "\nTricks: %s %d, %s %d" RENDER_DOT "points: ", render_team_label(&st->rules, 0), st->team_tricks[0],
            render_team_label(&st->rules, 1), st->team_tricks[1]);
    for (int team = 0; team < 2; team++) {
        int hidden, pts = render_public_points(st, team, &hidden);
        tb_add(o, "%s%s %d%s", team ? ", " : "", render_team_label(&st->rules, team), pts,
               hidden ? " + " RENDER_BACK : "");
    }
    if (st->caps_seat < G304_MAX_SEATS) tb_add(o, "\n%s called Caps.", render_who(names, st->caps_seat));
    if (st->phase != G304_PHASE_PLAY || st->tricks[st->trick_no].n == 0) return;
    tb_add(o, "\nTrick %d: ", st->trick_no + 1);
    out_trick(o, st, &st->tricks[st->trick_no], viewer, names);
}

size_t render_table(const g304_state *st, int viewer, const char *const names[], char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    table_head(&o, st, names);
    if (render_six(st)) { /* seat numbers alone do not tell the teams as compass points do */
        tb_add(&o, "\nTeams: ");
        out_teams(&o, &st->rules, names);
    }
    table_bid(&o, st, names);
    table_trump(&o, st, viewer);
    table_play(&o, st, viewer, names);
    tb_add(&o, "\nTokens: %s %d, %s %d", render_team_label(&st->rules, 0), st->tokens[0],
           render_team_label(&st->rules, 1), st->tokens[1]);
    char turn[RENDER_MAX];
    if (render_turn(st, names, turn, sizeof turn)) tb_add(&o, "\n%s", turn);
    return tb_end(&o);
}

size_t render_last(const g304_state *st, int viewer, const char *const names[], char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    int last = (st->phase == G304_PHASE_PLAY || st->phase == G304_PHASE_DONE) ? st->trick_no - 1 : -1;
    if (last < 0 || last >= G304_TRICKS || st->tricks[last].winner >= G304_MAX_SEATS) {
        tb_add(&o, "No trick has been completed yet.");
        return tb_end(&o);
    }
    const g304_trick *t = &st->tricks[last];
    int unseen = 0;
    for (int i = 0; i < t->n; i++) unseen |= g304_trick_card_for(st, t, i, viewer) == CARD_HIDDEN;
    tb_add(&o, "Last trick (trick %d) to %s", last + 1, render_who(names, t->winner));
    if (!unseen) tb_add(&o, " (+%d points)", t->points);
    tb_add(&o, ": ");
    out_trick(&o, st, t, viewer, names);
    return tb_end(&o);
}

/* ---- the result ---- */

/* Whether a Caps call (or a missing one) overrides the bid: lost after the call, or Wrong Caps. */
static int render_caps_overrides(const g304_result *r)
{
    return (r->caps_seat < G304_MAX_SEATS && !r->caps_won) || r->wrong_seat < G304_MAX_SEATS;
}

static void result_bid(textbuf *o, const g304_state *st, const char *const names[])
{
    const g304_result *r = &st->result;
    int mt = render_team(st->maker);
    if (st->pcc) {
        const char *tricks = render_count(g304_tricks(&st->rules));
        tb_add(o, "%s %s Partner Close Caps", render_who(names, st->maker), r->made ? "made" : "failed");
        if (r->made)
            tb_add(o, ", winning all %s tricks", tricks);
        else
            tb_add(o, ": %d of %s tricks won", st->team_tricks[mt], tricks);
        return;
    }
    out_team(o, &st->rules, names, mt);
    tb_add(o, " %s ", render_caps_overrides(r) ? "bid" : r->made ? "made" : "failed");
    out_bid(o, st->bid);
    tb_add(o, render_caps_overrides(r) ? " and took %d points" : " with %d points", st->points[mt]);
}

static const char *render_wrong_word(int reason)
{
    return reason == G304_WRONG_EARLY ? "too early" : reason == G304_WRONG_LATE ? "too late" : "not called";
}

static void result_caps(textbuf *o, const g304_state *st, const char *const names[])
{
    const g304_result *r = &st->result;
    const char *dash = " " RENDER_DASH " ";
    if (r->caps_seat < G304_MAX_SEATS) {
        const char *who = render_who(names, r->caps_seat);
        int external = render_team(r->caps_seat) != render_team(st->maker);
        const char *bid = external ? "" : "nothing for the bid, ";
        if (!r->caps_won)
            tb_add(o, "%s%s called Caps and then lost a trick: %s5 tokens to pay", dash, who, bid);
        else if (r->wrong_seat < G304_MAX_SEATS)
            tb_add(o, "%sWrong Caps: %s called %s: %s2 tokens to pay", dash, who, render_wrong_word(r->wrong_reason),
                   bid);
        else if (external)
            tb_add(o, "%s%s called External Caps and won every trick: the trump maker's team pays 1 token more", dash,
                   who);
        else
            tb_add(o, "%s%s called Caps and won every trick%s%s", dash, who,
                   r->caps_bonus ? ": +1 token for calling before the " : "",
                   r->caps_bonus ? (render_six(st) ? "fifth trick" : "seventh trick") : "");
        if (r->caps_broken) tb_add(o, " (a card of the stated order could not be played in turn)");
    } else if (r->wrong_seat < G304_MAX_SEATS) {
        tb_add(o, "%sWrong Caps: Caps was certain for %s but not called: nothing for the bid, 2 tokens to pay", dash,
               render_who(names, r->wrong_seat));
    }
}

/* " — tokens: South–North 12 (+1), East–West 10 (−1)" */
static void result_tokens(textbuf *o, const g304_state *st)
{
    const g304_result *r = &st->result;
    tb_add(o, " " RENDER_DASH " tokens:");
    for (int t = 0; t < 2; t++) {
        int d = r->delta[t];
        tb_add(o, "%s %s %d", t ? "," : "", render_team_label(&st->rules, t), st->tokens[t]);
        if (d) tb_add(o, " (%s%d%s)", d < 0 ? RENDER_MINUS : "+", d < 0 ? -d : d,
                      d < 0 && st->rules.scoring == G304_SCORING_BANK ? " to the bank" : "");
    }
}

size_t render_result(const g304_state *st, const char *const names[], char *buf, size_t len)
{
    textbuf o;
    const g304_result *r = &st->result;
    tb_start(&o, buf, len);
    if (st->phase != G304_PHASE_DONE || r->end == G304_END_NONE) return tb_end(&o);
    switch (r->end) {
    case G304_END_REDEAL:
    case G304_END_ALL_PASS: tb_add(&o, "no score"); return tb_end(&o);
    case G304_END_SPOILT: tb_add(&o, "the hand is void, no score"); return tb_end(&o);
    case G304_END_VIOLATION: {
        int winners = !render_team(r->spoilt_seat);
        out_team(&o, &st->rules, names, winners);
        tb_add(&o, " win the hand and 2 tokens for the violation");
        break;
    }
    case G304_END_PLAYED:
        result_bid(&o, st, names);
        result_caps(&o, st, names);
        break;
    }
    result_tokens(&o, st);
    if (r->match_over && r->match_winner < 2) {
        tb_add(&o, "\nMatch over: %s (", render_team_label(&st->rules, r->match_winner));
        out_team(&o, &st->rules, names, r->match_winner);
        tb_add(&o, ") win the match!");
    }
    return tb_end(&o);
}

/* ---- the rules ---- */

size_t render_rules(const g304_rules *r, const char *table_options, const char *prefix, const char *rules_url,
                    char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    int six = g304_seats(r) == 6;
    tb_add(&o, "304 for %s; this table's options:%s", six ? "six players in two teams of three" : "four players in two teams",
           six ? " players=6" : "");
    for (int i = 0; g304_option_names[i]; i++) {
        char value[32];
        const char *v = g304_rules_get(r, g304_option_names[i], value, sizeof value);
        tb_add(&o, "%s %s=%s", i || six ? "," : "", g304_option_names[i], v ? v : "?");
    }
    if (table_options && *table_options) tb_add(&o, ", %s", table_options);
    tb_add(&o, " (%sset OPTION VALUE changes one before the start).\nThe rules in full: %s304.md", prefix, rules_url);
    return tb_end(&o);
}

/* ---- the teams ---- */

size_t render_team_names(const g304_rules *r, const char *const names[], int team, char *buf,
                         size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    out_team(&o, r, names, team);
    return tb_end(&o);
}

size_t render_teams(const g304_rules *r, const char *const names[], char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    if (!names)
        tb_add(&o, "%s", g304_seats(r) == 6 ? "odd seats 1, 3, 5 play against even seats 2, 4, 6"
                                            : "South and North play against East and West");
    else
        out_teams(&o, r, names);
    return tb_end(&o);
}

/* ---- advice: !hint and !review ---- */

size_t render_hint(const g304_action *move, int points, int may_open, const char *prefix, char *buf, size_t len)
{
    textbuf o;
    char one[CARD_TEXT_MAX];
    tb_start(&o, buf, len);
    if (!move) {
        tb_add(&o, may_open ? "hint: keep the game closed (do not %sopen)."
                            : "hint: the expert sees nothing for you to do now.", prefix);
        return tb_end(&o);
    }
    tb_add(&o, "hint: ");
    switch (move->kind) {
    case G304_DO_CUT: tb_add(&o, "cut at %u (%scut %u)", (unsigned)move->amount, prefix, (unsigned)move->amount); break;
    case G304_DO_BID:
        tb_add(&o, "bid ");
        out_bid(&o, move->amount);
        if (move->amount == G304_PCC) tb_add(&o, " (%sbid pcc)", prefix);
        break;
    case G304_DO_PASS: tb_add(&o, "pass"); break;
    case G304_DO_PARTNER: tb_add(&o, "ask your partner to bid (%spartner)", prefix); break;
    case G304_DO_REDEAL: tb_add(&o, "ask for a redeal (%sredeal)", prefix); break;
    case G304_DO_TRUMP:
        tb_add(&o, "make %s your indicator (send %strump %s privately)", render_card(move->card, one), prefix,
               card_str(move->card));
        break;
    case G304_DO_OPEN: tb_add(&o, "declare an open game (%sopen)", prefix); break;
    case G304_DO_PLAY:
        tb_add(&o, "play %s", render_card(move->card, one));
        if (may_open) tb_add(&o, " and keep the game closed");
        if (points >= 0)
            tb_add(&o, " " RENDER_DASH " about %d of the %d card points for your team", points,
                   cardset_points(CARDSET_ALL));
        break;
    case G304_DO_CAPS:
        tb_add(&o, "call Caps now: %scaps", prefix);
        for (int i = 0; i < move->n; i++) tb_add(&o, " %s", card_str(move->order[i]));
        break;
    case G304_DO_SPOILT: tb_add(&o, "declare spoilt trumps (%sspoilt)", prefix); break;
    default: break;
    }
    tb_add(&o, ".");
    return tb_end(&o);
}

static int render_review_lost(int seat, const review_cost *costs, int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++) sum += costs[i].seat == seat ? costs[i].cost : 0;
    return sum;
}

size_t render_review_head(int hand_no, const review_cost *costs, int n, const char *const names[], int seats,
                          char *buf, size_t len)
{
    textbuf o;
    int clean = 0, listed = 0;
    tb_start(&o, buf, len);
    tb_add(&o, "Review of hand %d, double dummy (each card against the best one with every card known)", hand_no);
    for (int s = 0; s < seats; s++) clean += render_review_lost(s, costs, n) == 0;
    if (clean == seats) {
        tb_add(&o, ": no card cost its team a point.");
        return tb_end(&o);
    }
    tb_add(&o, clean ? ":" : ".");
    for (int s = 0; s < seats && clean > 0; s++) {
        if (render_review_lost(s, costs, n)) continue;
        listed++;
        tb_add(&o, "%s %s", listed == 1 ? "" : listed == clean ? " and" : ",", render_who(names, s));
    }
    if (clean) tb_add(&o, " lost nothing.");
    return tb_end(&o);
}

size_t render_review_seat(int seat, const review_cost *costs, int n, const char *const names[], char *buf,
                          size_t len)
{
    textbuf o;
    char a[CARD_TEXT_MAX], b[CARD_TEXT_MAX];
    int lost = render_review_lost(seat, costs, n), said = 0;
    if (!lost) {
        if (len) buf[0] = 0;
        return 0;
    }
    tb_start(&o, buf, len);
    tb_add(&o, "%s lost %d:", render_who(names, seat), lost);
    for (int i = 0; i < n; i++) {
        if (costs[i].seat != seat) continue;
        tb_add(&o, "%s trick %d %s, where %s kept %d more", said++ ? ";" : "", costs[i].trick + 1,
               render_card(costs[i].played, a), render_card(costs[i].best, b), costs[i].cost);
    }
    tb_add(&o, ".");
    return tb_end(&o);
}
