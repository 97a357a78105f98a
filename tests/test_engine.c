/* test_engine.c — engine behaviour that replay output does not show: what each seat sees
 * (views, R-LAST), who receives which event, refusals leaving the state untouched, the Caps
 * autoplay, the rules-option text interface and the number of players. Whole-hand rule cases
 * live in the scenario files (tests/scenarios/304, tests/scenarios/304six). */
#include <criterion/criterion.h>
#include <string.h>

#include "g304.h"
#include "test_hands.h"

static g304_code act(g304_state *st, int seat, int kind, const char *card, int amount, g304_events *ev)
{
    g304_action a;
    memset(&a, 0, sizeof a);
    a.kind = (uint8_t)kind;
    a.card = card ? C(card) : 0;
    a.amount = (uint16_t)amount;
    g304_error err;
    if (ev) ev->n = 0;
    return g304_apply(st, seat, &a, ev, &err);
}

static void ok(g304_state *st, int seat, int kind, const char *card, int amount)
{
    g304_action a;
    memset(&a, 0, sizeof a);
    a.kind = (uint8_t)kind;
    a.card = card ? C(card) : 0;
    a.amount = (uint16_t)amount;
    g304_error err;
    g304_code c = g304_apply(st, seat, &a, NULL, &err);
    cr_assert_eq(c, G304_OK, "seat %d %s %s refused: %s", seat, g304_do_name(kind), card ? card : "", err.msg);
}

/* Seat 1 bids 160 and makes hearts trump with 7H; everybody else passes both rounds. */
static const char *const hands_a[4] = {
    "JS 9S AS TS  JD 9D AD TD", /* seat 0 */
    "JH 9H 7H 8H  JC 9C AC TC", /* seat 1: the maker */
    "KS QS 8S 7S  KD QD 8D 7D", /* seat 2 */
    "AH TH KH QH  KC QC 8C 7C", /* seat 3 */
};

/* Dealer 0: seat 1 bids 160 and places the indicator; everybody else passes both rounds. */
static void to_play_with(g304_state *st, const char *const hands[4], const char *indicator)
{
    g304_rules r;
    g304_rules_default(&r);
    start_from(st, &r, 0, hands, NULL);
    ok(st, 1, G304_DO_BID, NULL, 160);
    ok(st, 2, G304_DO_PASS, NULL, 0);
    ok(st, 3, G304_DO_PASS, NULL, 0);
    ok(st, 0, G304_DO_PASS, NULL, 0);
    ok(st, 1, G304_DO_TRUMP, indicator, 0);
    for (int i = 0; i < 4; i++) ok(st, (1 + i) & 3, G304_DO_PASS, NULL, 0);
    cr_assert_eq(st->phase, G304_PHASE_PLAY);
}

static void to_play(g304_state *st)
{
    to_play_with(st, hands_a, "7H");
}

Test(engine, indicator_is_private)
{
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    start_from(&st, &r, 0, hands_a, NULL);
    ok(&st, 1, G304_DO_BID, NULL, 160);
    ok(&st, 2, G304_DO_PASS, NULL, 0);
    ok(&st, 3, G304_DO_PASS, NULL, 0);
    ok(&st, 0, G304_DO_PASS, NULL, 0);
    cr_assert_eq(act(&st, 1, G304_DO_TRUMP, "7H", 0, &ev), G304_OK);
    int saw_card[4] = {0};
    for (int i = 0; i < ev.n; i++) {
        const g304_event *e = &ev.ev[i];
        for (int s = 0; s < 4; s++)
            for (int k = 0; k < e->n; k++)
                if (g304_event_visible(e, s) && e->cards[k] == C("7H")) saw_card[s] = 1;
    }
    cr_assert(saw_card[1]);
    cr_assert(!saw_card[0] && !saw_card[2] && !saw_card[3], "the indicator reached another seat");
    g304_view v;
    g304_view_of(&st, 0, &v);
    cr_assert_eq(v.indicator, CARD_NONE);
    cr_assert_eq(v.trump, -1);
    g304_view_of(&st, 1, &v);
    cr_assert_eq(v.indicator, C("7H"));
    cr_assert_eq(v.trump, SUIT_H);
    cr_assert(v.hand & CARDSET_BIT(C("7H")), "the maker's view lists the indicator among his cards");
}

Test(engine, refused_move_changes_nothing)
{
    g304_state st, before;
    to_play(&st);
    memcpy(&before, &st, sizeof st);
    cr_assert_eq(act(&st, 2, G304_DO_PLAY, "KS", 0, NULL), G304_E_TURN);
    cr_assert_eq(act(&st, 1, G304_DO_PLAY, "JH", 0, NULL), G304_E_LEAD_TRUMP);
    cr_assert_eq(act(&st, 1, G304_DO_PLAY, "7H", 0, NULL), G304_E_INDICATOR);
    cr_assert_eq(act(&st, 1, G304_DO_PLAY, "JS", 0, NULL), G304_E_NOT_HELD);
    cr_assert_eq(act(&st, 1, G304_DO_BID, NULL, 250, NULL), G304_E_PHASE);
    cr_assert_eq(memcmp(&st, &before, sizeof st), 0);
}

Test(engine, facedown_card_hidden_from_others_and_in_last_trick)
{
    g304_state st;
    g304_events ev;
    to_play(&st);
    ok(&st, 1, G304_DO_PLAY, "JC", 0);  /* clubs led */
    ok(&st, 2, G304_DO_PLAY, "KS", 0);  /* seat 2 has no clubs: face down */
    cr_assert(st.tricks[0].facedown & 2);
    ok(&st, 3, G304_DO_PLAY, "7C", 0);
    cr_assert_eq(act(&st, 0, G304_DO_PLAY, "JS", 0, &ev), G304_OK); /* seat 0 void too: face down */
    /* no trump among them: they stay face down (R-REVEAL) */
    int announced = 0;
    for (int i = 0; i < ev.n; i++) announced |= ev.ev[i].kind == G304_EV_NO_TRUMP;
    cr_assert(announced);
    cr_assert_eq(st.tricks[0].winner, 1);
    g304_view v;
    g304_view_of(&st, 3, &v); /* R-LAST: the previous trick without its face-down cards */
    cr_assert_eq(v.last.n, 4);
    cr_assert_eq(v.last.card[0], C("JC"));
    cr_assert_eq(v.last.card[1], CARD_HIDDEN);
    cr_assert_eq(v.last.card[3], CARD_HIDDEN);
    cr_assert_eq(v.last.points, 0, "trick points would give away the face-down cards");
    g304_view_of(&st, 2, &v);
    cr_assert_eq(v.last.card[1], C("KS"), "a player sees his own face-down card");
    cr_assert_eq(v.last.card[3], CARD_HIDDEN);
    g304_view_of(&st, 1, &v);
    cr_assert_eq(v.last.card[3], C("JS"), "the maker inspected the face-down cards");
}

Test(engine, closed_hand_played_to_the_end)
{
    g304_state st;
    to_play(&st);
    ok(&st, 1, G304_DO_PLAY, "JC", 0);
    ok(&st, 2, G304_DO_PLAY, "KS", 0);
    ok(&st, 3, G304_DO_PLAY, "7C", 0);
    ok(&st, 0, G304_DO_PLAY, "JS", 0);
    /* seat 1 leads clubs again: seat 3 follows, seats 2 and 0 go face down */
    ok(&st, 1, G304_DO_PLAY, "9C", 0);
    ok(&st, 2, G304_DO_PLAY, "QS", 0);
    ok(&st, 3, G304_DO_PLAY, "QC", 0);
    ok(&st, 0, G304_DO_PLAY, "9S", 0);
    cr_assert_eq(st.trick_no, 2);
    cr_assert_eq(st.to_act, 1);
    g304_events ev;
    cr_assert_eq(act(&st, 1, G304_DO_PLAY, "AC", 0, &ev), G304_OK);
    ok(&st, 2, G304_DO_PLAY, "8S", 0);
    cr_assert_eq(act(&st, 3, G304_DO_PLAY, "AH", 0, &ev), G304_E_FOLLOW, "seat 3 still holds clubs");
    ok(&st, 3, G304_DO_PLAY, "KC", 0);
    ok(&st, 0, G304_DO_PLAY, "AS", 0);
    cr_assert(!st.trump_open);
    /* trick 4: seat 1 leads TC; seat 3 has 8C left, must follow; seat 2 and 0 void */
    ok(&st, 1, G304_DO_PLAY, "TC", 0);
    ok(&st, 2, G304_DO_PLAY, "7S", 0);
    ok(&st, 3, G304_DO_PLAY, "8C", 0);
    ok(&st, 0, G304_DO_PLAY, "TS", 0);
    /* trick 5: seat 1 leads JH (trump; allowed after trick 1); everybody but seat 3 void */
    ok(&st, 1, G304_DO_PLAY, "JH", 0);
    ok(&st, 2, G304_DO_PLAY, "KD", 0);
    ok(&st, 3, G304_DO_PLAY, "AH", 0);
    ok(&st, 0, G304_DO_PLAY, "JD", 0);
    cr_assert_eq(st.tricks[4].winner, 1);
    cr_assert(!st.trump_open, "no face-down trump yet: the trump stays closed");
    /* trick 6: seat 1 leads JC? gone. Seat 1 holds 9H 8H and the indicator 7H. Lead 8H. */
    ok(&st, 1, G304_DO_PLAY, "8H", 0);
    ok(&st, 2, G304_DO_PLAY, "QD", 0);
    ok(&st, 3, G304_DO_PLAY, "TH", 0);
    ok(&st, 0, G304_DO_PLAY, "9D", 0);
    cr_assert_eq(st.tricks[5].winner, 3, "TH beats 8H");
    /* seat 3 leads a club? none left (KC QC 8C 7C all played). He holds KH QH: lead KC? no. */
    cr_assert_eq(act(&st, 3, G304_DO_PLAY, "QH", 0, &ev), G304_OK);
    /* seat 0 void in hearts: face down; seat 1 must follow with 9H */
    ok(&st, 0, G304_DO_PLAY, "AD", 0);
    cr_assert_eq(act(&st, 1, G304_DO_PLAY, "7H", 0, NULL), G304_E_FOLLOW);
    ok(&st, 1, G304_DO_PLAY, "9H", 0);
    ok(&st, 2, G304_DO_PLAY, "8D", 0);
    cr_assert_eq(st.tricks[6].winner, 1);
    /* trick 8: the indicator is the maker's last card and may be led */
    ok(&st, 1, G304_DO_PLAY, "7H", 0);
    cr_assert(st.trump_open, "the indicator led face up shows the trump");
    ok(&st, 2, G304_DO_PLAY, "7D", 0);
    ok(&st, 3, G304_DO_PLAY, "KH", 0);
    ok(&st, 0, G304_DO_PLAY, "TD", 0);
    cr_assert_eq(st.phase, G304_PHASE_DONE);
    cr_assert_eq(st.points[0] + st.points[1], 304);
}

Test(engine, reveal_turns_up_and_returns_indicator)
{
    static const char *const hands[4] = {
        "JS 9S AS TS  JD 9D AD TD",
        "7H KS QS 8S  7S KD QD 8D", /* seat 1: the maker, indicator 7H */
        "JH 9H AH TH  7D 7C 8C 9C",
        "KH QH 8H JC  AC TC KC QC",
    };
    g304_state st;
    g304_events ev;
    to_play_with(&st, hands, "7H");
    ok(&st, 1, G304_DO_PLAY, "KS", 0);
    ok(&st, 2, G304_DO_PLAY, "JH", 0); /* void in spades: face down, a trump */
    ok(&st, 3, G304_DO_PLAY, "AC", 0); /* void: face down, not a trump */
    cr_assert_eq(act(&st, 0, G304_DO_PLAY, "JS", 0, &ev), G304_OK);
    int inspect_to_maker_only = 0, reveal = 0;
    for (int i = 0; i < ev.n; i++) {
        if (ev.ev[i].kind == G304_EV_INSPECT)
            inspect_to_maker_only = ev.ev[i].vis == G304_VIS_SEAT && ev.ev[i].to == 1 && ev.ev[i].n == 2;
        if (ev.ev[i].kind == G304_EV_REVEAL) reveal = ev.ev[i].n == 2 && ev.ev[i].other == C("7H");
    }
    cr_assert(inspect_to_maker_only);
    cr_assert(reveal, "both face-down cards turn up and the indicator is shown");
    cr_assert_eq(st.tricks[0].winner, 2, "the face-down trump wins");
    cr_assert_eq(st.tricks[0].points, 3 + 30 + 11 + 30);
    cr_assert_eq(st.tricks[0].hidden, 0);
    cr_assert(st.trump_open);
    cr_assert(st.hand[1] & CARDSET_BIT(C("7H")), "the indicator is back in the maker's hand");
    g304_view v;
    g304_view_of(&st, 3, &v);
    cr_assert_eq(v.trump, SUIT_H);
    cr_assert_eq(v.last.card[1], C("JH"));
    cr_assert_eq(v.last.points, 74);
}

Test(engine, maker_holding_only_trumps_must_open_to_lead)
{
    static const char *const hands[4] = {
        "JS 9S AS TS  JD 9D AD TD",
        "JH 9H 7H 8H  AH TH KH QH", /* seat 1 leads trick 1 and holds eight hearts */
        "KS QS 8S 7S  KD QD 8D 7D",
        "JC 9C AC TC  KC QC 8C 7C",
    };
    g304_state st;
    to_play_with(&st, hands, "7H");
    g304_action L[G304_MAX_LEGAL];
    int n = g304_legal(&st, 1, L);
    cr_assert_eq(n, 1);
    cr_assert_eq(L[0].kind, G304_DO_OPEN);
    ok(&st, 1, G304_DO_OPEN, NULL, 0);
    cr_assert_eq(g304_legal(&st, 1, L), 8, "after opening every heart may be led");
}

Test(engine, caps_autoplay_in_order)
{
    g304_state st;
    to_play(&st);
    g304_action a;
    memset(&a, 0, sizeof a);
    a.kind = G304_DO_CAPS;
    const char *order[] = {"JC", "9C", "AC", "TC", "JH", "9H", "8H", "7H"};
    for (int i = 0; i < 8; i++) a.order[a.n++] = C(order[i]);
    g304_events ev;
    ev.n = 0;
    g304_error err;
    cr_assert_eq(g304_apply(&st, 1, &a, &ev, &err), G304_OK, "%s", err.msg);
    cr_assert(st.trump_open, "the maker's shown cards include the indicator");
    cr_assert_eq(st.tricks[0].n, 1);
    cr_assert_eq(st.tricks[0].card[0], C("JC"), "the first card of the order is led at once");
    cr_assert_eq(act(&st, 1, G304_DO_PLAY, "9C", 0, NULL), G304_E_TURN);
}

Test(engine, rules_text_interface)
{
    g304_rules r;
    g304_error err;
    char buf[32];
    g304_rules_default(&r);
    for (int i = 0; g304_option_names[i]; i++) cr_assert_not_null(g304_rules_get(&r, g304_option_names[i], buf, sizeof buf));
    cr_assert_eq(g304_rules_set(&r, "caps", "strict", &err), 0);
    cr_assert_str_eq(g304_rules_get(&r, "caps", buf, sizeof buf), "strict");
    cr_assert_eq(g304_rules_set(&r, "step_above_200", "5", &err), 0);
    cr_assert_eq(r.step_above_200, 5);
    cr_assert_eq(g304_rules_set(&r, "step_above_200", "7", &err), -1);
    cr_assert(strstr(err.msg, "10 or 5"));
    cr_assert_eq(g304_rules_set(&r, "caps", "sometimes", &err), -1);
    cr_assert(strstr(err.msg, "grace"), "the message lists the allowed values: %s", err.msg);
    cr_assert_eq(g304_rules_set(&r, "colour", "red", &err), -1);
    cr_assert_eq(g304_rules_set(&r, "cut", "on", &err), 0);
    cr_assert_eq(r.cut, 1);
    cr_assert_eq(g304_rules_set(&r, "start_tokens", "0", &err), -1);
}

/* The number of players (R-SIX-…): set apart from the play options, 4 or 6; the game's numbers
 * follow from it. */
Test(engine, players_option)
{
    g304_rules r;
    g304_error err;
    g304_rules_default(&r);
    cr_assert_eq(g304_seats(&r), 4);
    cr_assert_eq(g304_tricks(&r), 8);
    cr_assert_eq(g304_deck_size(&r), 32);
    cr_assert_eq(g304_rules_set_players(&r, 6, &err), 0);
    cr_assert_eq(g304_seats(&r), 6);
    cr_assert_eq(g304_tricks(&r), 6);
    cr_assert_eq(g304_deck_size(&r), 36);
    cr_assert_eq(g304_rules_set_players(&r, 5, &err), -1);
    cr_assert(strstr(err.msg, "4 or 6"), "%s", err.msg);
    cr_assert_eq(g304_seats(&r), 6, "a refused value changes nothing");
    cr_assert_eq(g304_rules_set_players(&r, 4, &err), 0);
    cr_assert_eq(g304_seats(&r), 4);
    /* not a table option: a table's size is not changed with `set` */
    cr_assert_eq(g304_rules_set(&r, "players", "6", &err), -1);
    for (int i = 0; g304_option_names[i]; i++) cr_assert_str_neq(g304_option_names[i], "players");
    memset(&r, 0, sizeof r); /* rules never set read as four players */
    cr_assert_eq(g304_seats(&r), 4);
}

/* Six players, Partner Close Caps (R-SIX-PCC): play skips both of the maker's teammates, tricks
 * have four cards, and the teammates' cards reach nobody before the hand is over. */
Test(engine, six_player_pcc_skips_both_teammates)
{
    static const char *const rows[6] = {"JC 9C AC TC KC QC", "JS 9S AS TS KS QS", "8S 7S 8H 7H 8D 8C",
                                        "JH 9H AH TH KH QH", "6S 6H 6D 6C 7D 7C", "JD 9D AD TD KD QD"};
    card_t hands[G304_MAX_SEATS][G304_TRICKS], deck[CARD_IDS];
    for (int s = 0; s < 6; s++)
        for (int i = 0; i < 6; i++) {
            card_t c;
            cr_assert_eq(card_parse_pack(rows[s] + 3 * i, 2, CARD_IDS, &c, NULL, 0), 0);
            hands[s][i] = c;
        }
    g304_rules r;
    g304_rules_default(&r);
    cr_assert_eq(g304_rules_set_players(&r, 6, NULL), 0);
    cr_assert_eq(g304_deck_from_hands_of(&r, (const card_t(*)[G304_TRICKS])hands, 0, deck), 0);
    const int16_t tokens[2] = {11, 11};
    g304_state st;
    g304_start(&st, &r, 0, tokens, deck, NULL);
    ok(&st, 1, G304_DO_BID, NULL, 160);
    for (int s = 2; s < 7; s++) ok(&st, s % 6, G304_DO_PASS, NULL, 0);
    ok(&st, 1, G304_DO_TRUMP, "TS", 0);
    ok(&st, 1, G304_DO_BID, NULL, G304_PCC);
    ok(&st, 1, G304_DO_TRUMP, "TS", 0);
    ok(&st, 1, G304_DO_OPEN, NULL, 0);
    cr_assert_eq(g304_trick_size(&st), 4);
    cr_assert_eq(g304_next_seat(&st, 1), 2);
    cr_assert_eq(g304_next_seat(&st, 2), 4, "seat 3 sits out");
    cr_assert_eq(g304_next_seat(&st, 4), 0, "seat 5 sits out");
    cr_assert_eq(g304_next_seat(&st, 0), 1);
    cardset_t mates = g304_cards_of(&st, 3) | g304_cards_of(&st, 5);
    g304_events ev;
    static const char *const trick[4][2] = {{"1", "JS"}, {"2", "8S"}, {"4", "6S"}, {"0", "JC"}};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(act(&st, trick[i][0][0] - '0', G304_DO_PLAY, trick[i][1], 0, &ev), G304_OK);
        for (int k = 0; k < ev.n; k++)
            for (int j = 0; j < ev.ev[k].n; j++)
                cr_assert(!(mates & CARDSET_BIT(ev.ev[k].cards[j])) || (ev.ev[k].vis == G304_VIS_SEAT &&
                                                                      (ev.ev[k].to == 3 || ev.ev[k].to == 5)),
                          "an event names a teammate's card");
    }
    cr_assert_eq(st.tricks[0].n, 4);
    cr_assert_eq(st.tricks[0].winner, 1);
    cr_assert_eq(g304_cards_played(&st), 4);
    for (int s = 0; s < 6; s++) {
        g304_view v;
        g304_view_of(&st, s, &v);
        if (s != 3 && s != 5) cr_assert_eq(v.hand & mates, 0, "seat %d's view holds a teammate's card", s);
        cr_assert_eq(v.hand_size[3], 6);
        cr_assert_eq(v.hand_size[5], 6);
    }
}
