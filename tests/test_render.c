/* test_render.c — the words of bot/render.c: exact texts for the common events, hands, turns,
 * the table and the last trick; truncation into tiny buffers; and a random sweep of whole
 * hands checking that no text tells a viewer a card it may not know.
 *
 * The sweep keeps its own record of what the room and each seat know, built from the events
 * as they arrive (not from the state, which already holds every secret): dealt cards for their
 * seat, the indicator and the inspected face-down cards for the maker, a player's own face-down
 * card, cards played face up, cards turned up, the indicator when opened or shown, a Caps
 * caller's cards, the Caps judge's order, and every hand once the HAND events show them. A
 * text may name a card (in card_pretty() form) only if its viewer knows it by then; the room's
 * table may count only the points of cards the room has seen; each seat's hand text must list
 * exactly its cards. Every event kind and every way a hand ends must occur, so the checks
 * cannot pass by having nothing to look at. Six-player 304 gets the same: exact texts (seats
 * without compass points, two more cards, the six-card round, both teammates out in Partner
 * Close Caps, odd and even seats in the tokens) and its own sweep. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"
#include "deal.h"
#include "judge.h"
#include "render.h"
#include "test_hands.h"

static const char *const names[4] = {"alice (South)", "bob (East)", "carol (North)", "dave (West)"};
static const char *const names6[6] = {"alice (seat 1)", "bob (seat 2)", "carol (seat 3)",
                                      "dave (seat 4)", "erin (seat 5)", "frank (seat 6)"};

/* The seats' names for a hand of four or of six players. */
static const char *const *names_of(const g304_state *st) { return g304_seats(&st->rules) == 6 ? names6 : names; }

/* ---- setting up hands (as tests/test_engine.c) ---- */



/* Applies a move that must be accepted; its events go to ev (may be NULL). */
static void ok(g304_state *st, int seat, int kind, const char *card, int amount, g304_events *ev)
{
    g304_action a;
    memset(&a, 0, sizeof a);
    a.kind = (uint8_t)kind;
    a.card = card ? C(card) : 0;
    a.amount = (uint16_t)amount;
    g304_error err;
    if (ev) ev->n = 0;
    g304_code c = g304_apply(st, seat, &a, ev, &err);
    cr_assert_eq(c, G304_OK, "seat %d %s %s refused: %s", seat, g304_do_name(kind), card ? card : "", err.msg);
}

/* The i-th event of a kind (0 = first) in ev, or NULL. */
static const g304_event *find_ev(const g304_events *ev, int kind, int vis, int i)
{
    for (int k = 0; k < ev->n; k++)
        if (ev->ev[k].kind == kind && ev->ev[k].vis == vis && i-- == 0) return &ev->ev[k];
    return NULL;
}

static char text[RENDER_MAX];

static const char *ev_text(const g304_state *st, const g304_events *ev, int kind, int vis, int viewer)
{
    const g304_event *e = find_ev(ev, kind, vis, 0);
    cr_assert_not_null(e, "no event of kind %d", kind);
    size_t n = render_event(st, e, viewer, names_of(st), text, sizeof text);
    cr_assert_eq(n, strlen(text));
    return text;
}

/* Dealer 0, so bob (East) speaks and leads first. bob makes hearts trump with 7♥; clubs led
 * three times strip dave (West) and alice (South), and dave's A♥ face down turns trick 3 up. */
static const char *const hands_r[4] = {
    "JS 9S AS TS  JD 9D 7C 8C",
    "JH 9H 7H 8H  JC 9C AC TC",
    "KS QS 8S 7S  KD QD 8D 7D",
    "AH TH KH QH  KC QC AD TD",
};

/* bob bids 160, everybody passes both rounds; bob's indicator is 7♥. */
static void to_play(g304_state *st)
{
    g304_rules r;
    g304_rules_default(&r);
    start_from(st, &r, 0, hands_r, NULL);
    ok(st, 1, G304_DO_BID, NULL, 160, NULL);
    ok(st, 2, G304_DO_PASS, NULL, 0, NULL);
    ok(st, 3, G304_DO_PASS, NULL, 0, NULL);
    ok(st, 0, G304_DO_PASS, NULL, 0, NULL);
    ok(st, 1, G304_DO_TRUMP, "7H", 0, NULL);
    for (int i = 0; i < 4; i++) ok(st, (1 + i) & 3, G304_DO_PASS, NULL, 0, NULL);
}

/* The first trick: J♣ led, carol's 7♠ face down, nothing trump. */
static void first_trick(g304_state *st, g304_events *ev)
{
    ok(st, 1, G304_DO_PLAY, "JC", 0, NULL);
    ok(st, 2, G304_DO_PLAY, "7S", 0, NULL);
    ok(st, 3, G304_DO_PLAY, "KC", 0, NULL);
    ok(st, 0, G304_DO_PLAY, "7C", 0, ev);
}

/* Plays the first legal card for whoever is to act until the hand is over. */
static void play_out(g304_state *st, g304_events *ev)
{
    while (st->phase != G304_PHASE_DONE) {
        g304_action L[G304_MAX_LEGAL];
        int n = g304_legal(st, st->to_act, L), k = 0;
        while (k < n && L[k].kind != G304_DO_PLAY) k++;
        cr_assert_lt(k, n);
        ok(st, st->to_act, G304_DO_PLAY, card_str(L[k].card), 0, ev);
    }
}

/* ---- events ---- */

/* One timeout for the whole suite: Criterion 2.4 leaks under ASan when a file mixes them. */
TestSuite(render, .timeout = 300);

Test(render, bidding_events)
{
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    start_from(&st, &r, 0, hands_r, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_DEALT, G304_VIS_SEAT, 1), "Your first four cards: \xE2\x99\xA5 J 9 8 7");
    ok(&st, 1, G304_DO_BID, NULL, 160, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_BID, G304_VIS_ALL, -1), "bob (East) bids 160");
    ok(&st, 2, G304_DO_PARTNER, NULL, 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_ASK, G304_VIS_ALL, -1), "carol (North) asks partner alice (South) to bid");
    ok(&st, 0, G304_DO_PASS, NULL, 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_PASS, G304_VIS_ALL, -1), "alice (South) passes");
    ok(&st, 3, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 0, G304_DO_PASS, NULL, 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_MAKER, G304_VIS_ALL, -1),
                     "bob (East) is trump maker at 160");
}

Test(render, indicator_is_private)
{
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    start_from(&st, &r, 0, hands_r, NULL);
    ok(&st, 1, G304_DO_BID, NULL, 160, NULL);
    for (int s = 2; s < 5; s++) ok(&st, s & 3, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 1, G304_DO_TRUMP, "7H", 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_INDICATOR, G304_VIS_SEAT, 1),
                     "Your indicator: 7\xE2\x99\xA5, face down (\xE2\x99\xA5 hearts are trump); only you know it.");
    for (int v = -1; v < 4; v++)
        if (v != 1) cr_assert_str_eq(ev_text(&st, &ev, G304_EV_INDICATOR, G304_VIS_SEAT, v), "", "viewer %d", v);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_PLACED, G304_VIS_ALL, -1), "bob (East) places the indicator face down");
    const g304_event *e = find_ev(&ev, G304_EV_DEALT, G304_VIS_SEAT, 0);
    cr_assert_eq(e->to, 1);
    render_event(&st, e, 1, names, text, sizeof text);
    cr_assert_str_eq(text, "Your next four cards: \xE2\x99\xA3 J 9 A 10 \xE2\x80\x94 your hand: \xE2\x99\xA5 J 9 8 "
                           "\xC2\xB7 \xE2\x99\xA3 J 9 A 10  (indicator 7\xE2\x99\xA5, face down)");
}

Test(render, facedown_public_and_private)
{
    g304_state st;
    g304_events ev;
    to_play(&st);
    ok(&st, 1, G304_DO_PLAY, "JC", 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_PLAY, G304_VIS_ALL, -1), "bob (East) plays J\xE2\x99\xA3");
    ok(&st, 2, G304_DO_PLAY, "7S", 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_FACEDOWN, G304_VIS_ALL, -1),
                     "carol (North) plays \xF0\x9F\x82\xA0 face down");
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_FACEDOWN, G304_VIS_SEAT, 2), "You play 7\xE2\x99\xA0 face down.");
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_FACEDOWN, G304_VIS_SEAT, -1), "", "the private copy is not for the room");
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_FACEDOWN, G304_VIS_SEAT, 0), "");
    ok(&st, 3, G304_DO_PLAY, "KC", 0, NULL);
    ok(&st, 0, G304_DO_PLAY, "7C", 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_INSPECT, G304_VIS_SEAT, 1),
                     "Face down in this trick: 7\xE2\x99\xA0 \xE2\x80\x94 no trump.");
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_NO_TRUMP, G304_VIS_ALL, -1),
                     "no trump among the face-down cards: they stay face down");
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_TRICK, G304_VIS_ALL, -1),
                     "trick 1 to bob (East) (a card stays face down)");
}

Test(render, reveal_and_trick_points)
{
    g304_state st;
    g304_events ev;
    to_play(&st);
    first_trick(&st, NULL);
    ok(&st, 1, G304_DO_PLAY, "9C", 0, NULL);
    ok(&st, 2, G304_DO_PLAY, "8S", 0, NULL);
    ok(&st, 3, G304_DO_PLAY, "QC", 0, NULL);
    ok(&st, 0, G304_DO_PLAY, "8C", 0, NULL);
    ok(&st, 1, G304_DO_PLAY, "AC", 0, NULL);
    ok(&st, 2, G304_DO_PLAY, "7D", 0, NULL);
    ok(&st, 3, G304_DO_PLAY, "AH", 0, NULL);
    ok(&st, 0, G304_DO_PLAY, "JS", 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_REVEAL, G304_VIS_ALL, -1),
                     "a trump was played face down! Turned up: 7\xE2\x99\xA6 (carol (North)), A\xE2\x99\xA5 (dave (West)), "
                     "J\xE2\x99\xA0 (alice (South)); the indicator was 7\xE2\x99\xA5: \xE2\x99\xA5 hearts are trump, open "
                     "from now; it goes back to bob (East)");
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_TRICK, G304_VIS_ALL, -1), "trick 3 to dave (West), +52");
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_INSPECT, G304_VIS_SEAT, 1),
                     "Face down in this trick: J\xE2\x99\xA0 A\xE2\x99\xA5 7\xE2\x99\xA6 \xE2\x80\x94 a trump is among them.");
}

Test(render, result_made)
{
    g304_state st;
    g304_events ev;
    to_play(&st);
    play_out(&st, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_HAND, G304_VIS_ALL, -1),
                     "alice (South) \xE2\x99\xA0 J 9 A 10 \xC2\xB7 \xE2\x99\xA6 J 9 \xC2\xB7 \xE2\x99\xA3 8 7");
    const g304_event *e = find_ev(&ev, G304_EV_HAND, G304_VIS_ALL, 1);
    render_event(&st, e, -1, names, text, sizeof text);
    cr_assert_str_eq(text, "bob (East) \xE2\x99\xA5 J 9 8 7 \xC2\xB7 \xE2\x99\xA3 J 9 A 10 (indicator 7\xE2\x99\xA5)",
                     "trumps first, the indicator named");
    const char *want = "bob (East) & dave (West) made 160 with 304 points \xE2\x80\x94 tokens: South\xE2\x80\x93North 10 "
                       "(\xE2\x88\x92" "1), East\xE2\x80\x93West 12 (+1)";
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_RESULT, G304_VIS_ALL, -1), want);
    char buf[RENDER_MAX];
    cr_assert_eq(render_result(&st, names, buf, sizeof buf), strlen(want));
    cr_assert_str_eq(buf, want);
}

Test(render, result_failed_and_match_over)
{
    /* carol (North) bids 260 with spades trump and falls short; her team cannot pay all 4 tokens */
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    r.start_tokens = 3;
    start_from(&st, &r, 0, hands_r, NULL);
    ok(&st, 1, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 2, G304_DO_BID, NULL, 260, NULL);
    ok(&st, 3, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 0, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 1, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 2, G304_DO_TRUMP, "7S", 0, NULL);
    ok(&st, 2, G304_DO_PASS, NULL, 0, NULL);
    for (int i = 0; i < 3; i++) ok(&st, (3 + i) & 3, G304_DO_PASS, NULL, 0, NULL);
    play_out(&st, &ev);
    cr_assert_eq(st.result.made, 0, "points %d %d", st.points[0], st.points[1]);
    render_result(&st, names, text, sizeof text);
    char want[RENDER_MAX];
    snprintf(want, sizeof want,
             "alice (South) & carol (North) failed 260 with %d points \xE2\x80\x94 tokens: South\xE2\x80\x93North 0 "
             "(\xE2\x88\x92" "3), East\xE2\x80\x93West 6 (+3)\n"
             "Match over: East\xE2\x80\x93West (bob (East) & dave (West)) win the match!",
             st.points[0]);
    cr_assert_str_eq(text, want);
}

/* Dealer 0; bob (East), first to speak, holds 0 points in his first four cards. */
static const char *const weak[4] = {
    "JS 9S AS TS  JD 9D AD TD",
    "7H 8H 7C 8C  JC 9C AC TC",
    "KS QS 8S 7S  KD QD 8D 7D",
    "AH TH KH QH  JH 9H KC QC",
};

Test(render, redeal_and_all_pass_results)
{
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    start_from(&st, &r, 0, weak, NULL);
    render_turn(&st, names, text, sizeof text);
    cr_assert_str_eq(text, "bob (East) to bid: 160 or more, pass or partner"); /* the redeal right stays private */
    ok(&st, 1, G304_DO_REDEAL, NULL, 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_REDEAL, G304_VIS_ALL, -1),
                     "bob (East) asks for a redeal: the first four cards are worth less than 15 points");
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_RESULT, G304_VIS_ALL, -1), "no score");
    cr_assert_eq(render_turn(&st, names, text, sizeof text), 0, "nobody acts once the hand is over");
    start_from(&st, &r, 0, weak, NULL);
    for (int s = 1; s < 5; s++) ok(&st, s & 3, G304_DO_PASS, NULL, 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_ALL_PASS, G304_VIS_ALL, -1), "all four passed");
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_RESULT, G304_VIS_ALL, -1), "no score");
}

/* ---- hands, turns, the table, the last trick ---- */

Test(render, hand_order_and_indicator)
{
    static const char *const hands[4] = {
        "7D JS 9S QS  AD JC 8H TH", /* alice: diamonds trump with 7♦ */
        "JH 9H 7H KH  8S TS KS AS",
        "7S 8D 9D TD  JD QD KD AH",
        "7C 8C 9C TC  QC KC AC QH",
    };
    g304_state st;
    g304_rules r;
    g304_rules_default(&r);
    start_from(&st, &r, 3, hands, NULL);
    render_hand(&st, 0, text, sizeof text);
    cr_assert_str_eq(text, "\xE2\x99\xA0 J 9 Q \xC2\xB7 \xE2\x99\xA6 7", "spades, hearts, diamonds, clubs while no trump is known");
    ok(&st, 0, G304_DO_BID, NULL, 160, NULL);
    for (int s = 1; s < 4; s++) ok(&st, s, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 0, G304_DO_TRUMP, "7D", 0, NULL);
    render_hand(&st, 0, text, sizeof text);
    cr_assert_str_eq(text, "\xE2\x99\xA6 A \xC2\xB7 \xE2\x99\xA0 J 9 Q \xC2\xB7 \xE2\x99\xA5 10 8 \xC2\xB7 \xE2\x99\xA3 J  "
                           "(indicator 7\xE2\x99\xA6, face down)",
                     "trumps first for the maker, J 9 A 10 K Q 8 7 in a suit");
    render_hand(&st, 1, text, sizeof text);
    cr_assert_str_eq(text, "\xE2\x99\xA0 A 10 K 8 \xC2\xB7 \xE2\x99\xA5 J 9 K 7", "the others do not know the trump");
    for (int s = 0; s < 4; s++) ok(&st, s, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 0, G304_DO_OPEN, NULL, 0, NULL);
    render_hand(&st, 1, text, sizeof text);
    cr_assert_str_eq(text, "\xE2\x99\xA0 A 10 K 8 \xC2\xB7 \xE2\x99\xA5 J 9 K 7", "no trumps: order unchanged");
    render_hand(&st, 2, text, sizeof text);
    cr_assert_str_eq(text, "\xE2\x99\xA6 J 9 10 K Q 8 \xC2\xB7 \xE2\x99\xA0 7 \xC2\xB7 \xE2\x99\xA5 A",
                     "once open, everybody sorts trumps first");
    render_hand(&st, 0, text, sizeof text);
    cr_assert_str_eq(text, "\xE2\x99\xA6 A 7 \xC2\xB7 \xE2\x99\xA0 J 9 Q \xC2\xB7 \xE2\x99\xA5 10 8 \xC2\xB7 \xE2\x99\xA3 J",
                     "the opened indicator is an ordinary card");
    play_out(&st, NULL);
    cr_assert_eq(render_hand(&st, 0, text, sizeof text), strlen("(no cards)"));
    cr_assert_str_eq(text, "(no cards)");
    cr_assert_eq(render_hand(&st, -1, text, sizeof text), 0);
}

Test(render, turns)
{
    g304_state st;
    g304_rules r;
    g304_rules_default(&r);
    start_from(&st, &r, 0, hands_r, NULL);
    render_turn(&st, names, text, sizeof text);
    cr_assert_str_eq(text, "bob (East) to bid: 160 or more, pass or partner");
    ok(&st, 1, G304_DO_BID, NULL, 160, NULL);
    ok(&st, 2, G304_DO_PARTNER, NULL, 0, NULL);
    render_turn(&st, names, text, sizeof text);
    cr_assert_str_eq(text, "alice (South) (asked by partner) to bid: 170 or more, or pass");
    ok(&st, 0, G304_DO_PASS, NULL, 0, NULL);
    render_turn(&st, names, text, sizeof text);
    cr_assert_str_eq(text, "dave (West) to bid: 200 or more, or pass");
    ok(&st, 3, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 0, G304_DO_PASS, NULL, 0, NULL);
    render_turn(&st, names, text, sizeof text);
    cr_assert_str_eq(text, "bob (East) to choose the indicator from the first four cards, privately");
    ok(&st, 1, G304_DO_TRUMP, "7H", 0, NULL);
    render_turn(&st, names, text, sizeof text);
    cr_assert_str_eq(text, "bob (East) to bid on eight cards: 250 or more, pcc or pass");
    for (int i = 0; i < 4; i++) ok(&st, (1 + i) & 3, G304_DO_PASS, NULL, 0, NULL);
    render_turn(&st, names, text, sizeof text);
    cr_assert_str_eq(text, "bob (East) to lead or declare an open game");
    ok(&st, 1, G304_DO_PLAY, "JC", 0, NULL);
    render_turn(&st, names, text, sizeof text);
    cr_assert_str_eq(text, "carol (North) to play, \xE2\x99\xA3 led");
}

Test(render, cut)
{
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    r.cut = 1;
    start_from(&st, &r, 0, hands_r, NULL);
    render_turn(&st, names, text, sizeof text);
    cr_assert_str_eq(text, "dave (West) to cut the pack: 1 to 31, or 0 for no cut");
    ok(&st, 3, G304_DO_CUT, NULL, 12, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_CUT, G304_VIS_ALL, -1), "dave (West) cuts the pack at 12");
}

Test(render, last_trick_masks_face_down_cards)
{
    g304_state st;
    to_play(&st);
    render_last(&st, -1, names, text, sizeof text);
    cr_assert_str_eq(text, "No trick has been completed yet.");
    first_trick(&st, NULL);
    const char *hidden = "Last trick (trick 1) to bob (East): bob (East) J\xE2\x99\xA3 \xC2\xB7 carol (North) "
                         "\xF0\x9F\x82\xA0 \xC2\xB7 dave (West) K\xE2\x99\xA3 \xC2\xB7 alice (South) 7\xE2\x99\xA3";
    const char *seen = "Last trick (trick 1) to bob (East) (+33 points): bob (East) J\xE2\x99\xA3 \xC2\xB7 carol (North) "
                       "7\xE2\x99\xA0 (face down) \xC2\xB7 dave (West) K\xE2\x99\xA3 \xC2\xB7 alice (South) 7\xE2\x99\xA3";
    for (int v = -1; v < 4; v++) {
        render_last(&st, v, names, text, sizeof text);
        /* carol played it, bob (the maker) inspected it; the room, alice and dave did not see it */
        cr_assert_str_eq(text, v == 1 || v == 2 ? seen : hidden, "viewer %d", v);
    }
}

Test(render, table_hides_the_trump_from_others_while_closed)
{
    g304_state st;
    to_play(&st);
    ok(&st, 1, G304_DO_PLAY, "JC", 0, NULL);
    ok(&st, 2, G304_DO_PLAY, "7S", 0, NULL);
    render_table(&st, -1, names, text, sizeof text);
    cr_assert_str_eq(text, "Dealer: alice (South) \xC2\xB7 trick 1 of 8\n"
                           "Trump maker: bob (East) at 160\n"
                           "Trump: hidden (closed game)\n"
                           "Tricks: South\xE2\x80\x93North 0, East\xE2\x80\x93West 0 \xC2\xB7 points: "
                           "South\xE2\x80\x93North 0, East\xE2\x80\x93West 0\n"
                           "Trick 1: bob (East) J\xE2\x99\xA3 \xC2\xB7 carol (North) \xF0\x9F\x82\xA0\n"
                           "Tokens: South\xE2\x80\x93North 11, East\xE2\x80\x93West 11\n"
                           "dave (West) to play, \xE2\x99\xA3 led");
    for (int v = -1; v < 4; v++) {
        render_table(&st, v, names, text, sizeof text);
        int shows = strstr(text, "hearts") || strstr(text, "7\xE2\x99\xA5");
        cr_assert_eq(shows, v == 1, "viewer %d: %s", v, text);
    }
    render_table(&st, 1, names, text, sizeof text);
    cr_assert(strstr(text, "Trump: \xE2\x99\xA5 hearts (indicator 7\xE2\x99\xA5) \xC2\xB7 closed, only you know it\n"));
    cr_assert(strstr(text, "carol (North) \xF0\x9F\x82\xA0\n"), "the maker sees face-down cards only after the trick");
    render_table(&st, 2, names, text, sizeof text);
    cr_assert(strstr(text, "carol (North) 7\xE2\x99\xA0 (face down)\n"), "a player sees his own face-down card");
}

Test(render, rules_summary)
{
    g304_rules r;
    g304_error err;
    g304_rules_default(&r);
    cr_assert_eq(g304_rules_set(&r, "caps", "strict", &err), 0);
    size_t n = render_rules(&r, "level=expert", "!", "https://example.org/rules/", text, sizeof text);
    cr_assert_eq(n, strlen(text));
    cr_assert_str_eq(text, "304 for four players in two teams; this table's options: cut=false, step_above_200=10, "
                           "bidding=standard, bid8_opener=maker, spoilt=manual, caps=strict, scoring=transfer, "
                           "start_tokens=11, level=expert (!set OPTION VALUE changes one before the start).\n"
                           "The rules in full: https://example.org/rules/304.md");
    n = render_rules(&r, NULL, "!", "https://example.org/rules/", text, sizeof text);
    cr_assert(strstr(text, "start_tokens=11 (!set") != NULL, "%s", text);
}

/* A move is one line for the room: its public pieces joined by " — "; the end of a hand adds
 * the result and the cards held, each on one line. */
Test(render, a_move_is_one_line)
{
    g304_state st;
    g304_events ev;
    to_play(&st);
    ok(&st, 1, G304_DO_PLAY, "JC", 0, &ev);
    render_move(&st, &ev, names, text, sizeof text);
    cr_assert_str_eq(text, "bob (East) plays J\xE2\x99\xA3");
    ok(&st, 2, G304_DO_PLAY, "7S", 0, &ev);
    render_move(&st, &ev, names, text, sizeof text);
    cr_assert_str_eq(text, "carol (North) plays \xF0\x9F\x82\xA0 face down", "the face-down card stays hidden");
    ok(&st, 3, G304_DO_PLAY, "KC", 0, NULL);
    ok(&st, 0, G304_DO_PLAY, "7C", 0, &ev);
    render_move(&st, &ev, names, text, sizeof text);
    cr_assert_str_eq(text, "alice (South) plays 7\xE2\x99\xA3 \xE2\x80\x94 no trump among the face-down cards: they stay "
                           "face down \xE2\x80\x94 trick 1 to bob (East) (a card stays face down)",
                     "the maker's inspection is private: not in the room's line");
    play_out(&st, &ev);
    render_move(&st, &ev, names, text, sizeof text);
    int lines = 1;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    cr_assert_eq(lines, 3, "the last move, the result, the cards held: %s", text);
    cr_assert(strstr(text, "\nbob (East) & dave (West) made 160 with 304 points \xE2\x80\x94 tokens: "));
    cr_assert(strstr(text, "\nCards held: alice (South) \xE2\x99\xA0 J 9 A 10 \xC2\xB7 \xE2\x99\xA6 J 9 \xC2\xB7 "
                           "\xE2\x99\xA3 8 7; bob (East) \xE2\x99\xA5 J 9 8 7 \xC2\xB7 \xE2\x99\xA3 J 9 A 10 (indicator "
                           "7\xE2\x99\xA5); carol (North) "), "%s", text);
    ev.n = 0;
    cr_assert_eq(render_move(&st, &ev, names, text, sizeof text), 0, "no public event, nothing to say");
}

/* A hand without a score ends on the line of its last move. */
Test(render, a_hand_without_a_score_ends_on_the_moves_line)
{
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    start_from(&st, &r, 0, weak, NULL);
    for (int s = 1; s < 5; s++) ok(&st, s & 3, G304_DO_PASS, NULL, 0, &ev);
    render_move(&st, &ev, names, text, sizeof text);
    cr_assert_str_eq(text, "alice (South) passes \xE2\x80\x94 all four passed \xE2\x80\x94 no score\n"
                           "Cards held: alice (South) \xE2\x99\xA0 J 9 A 10; bob (East) \xE2\x99\xA5 8 7 \xC2\xB7 "
                           "\xE2\x99\xA3 8 7; carol (North) \xE2\x99\xA0 K Q 8 7; dave (West) \xE2\x99\xA5 A 10 K Q");
}

/* ---- texts in general: UTF-8, truncation ---- */

/* Whether s is complete, valid UTF-8 (no cut character). */
static int utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : (*p & 0xF8) == 0xF0 ? 3 : -1;
        if (n < 0) return 0;
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xC0) != 0x80) return 0;
    }
    return 1;
}

typedef size_t (*render_fn)(const void *ctx, char *buf, size_t len);

/* Renders into a heap buffer of exactly len bytes (ASan sees any overflow) and checks that the
 * text is a whole-character prefix of the full text. */
static void check_cut(render_fn f, const void *ctx, const char *full, size_t len)
{
    char *b = malloc(len ? len : 1);
    cr_assert_not_null(b);
    size_t n = f(ctx, len ? b : NULL, len);
    if (len) {
        cr_assert_eq(n, strlen(b));
        cr_assert_lt(n, len);
        cr_assert_eq(memcmp(b, full, n), 0, "not a prefix: '%s' of '%s'", b, full);
        cr_assert(utf8_ok(b), "a character cut in two at len %zu: '%s'", len, b);
        cr_assert(n == strlen(full) || n + 4 > len - 1, "cut %zu bytes early at len %zu", len - 1 - n, len);
    } else {
        cr_assert_eq(n, 0);
    }
    free(b);
}

static void check_cuts(render_fn f, const void *ctx)
{
    char full[RENDER_MAX];
    size_t n = f(ctx, full, sizeof full);
    cr_assert_eq(n, strlen(full));
    cr_assert_lt(n, sizeof full - 1, "a text filled RENDER_MAX");
    cr_assert(utf8_ok(full));
    static const size_t lens[] = {0, 1, 2, 3, 4, 5, 8, 17, 33, 64};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) check_cut(f, ctx, full, lens[i]);
    check_cut(f, ctx, full, n);
    check_cut(f, ctx, full, n + 1);
}

typedef struct {
    const g304_state *st;
    const g304_event *e;
    int viewer;
    const g304_events *ev;
} render_ctx;

static size_t f_event(const void *c, char *b, size_t n)
{
    const render_ctx *x = c;
    return render_event(x->st, x->e, x->viewer, names_of(x->st), b, n);
}
static size_t f_move(const void *c, char *b, size_t n)
{
    const render_ctx *x = c;
    return render_move(x->st, x->ev, names_of(x->st), b, n);
}
static size_t f_hand(const void *c, char *b, size_t n)
{
    const render_ctx *x = c;
    return render_hand(x->st, x->viewer, b, n);
}
static size_t f_turn(const void *c, char *b, size_t n)
{
    const render_ctx *x = c;
    return render_turn(x->st, names_of(x->st), b, n);
}
static size_t f_table(const void *c, char *b, size_t n)
{
    const render_ctx *x = c;
    return render_table(x->st, x->viewer, names_of(x->st), b, n);
}
static size_t f_last(const void *c, char *b, size_t n)
{
    const render_ctx *x = c;
    return render_last(x->st, x->viewer, names_of(x->st), b, n);
}
static size_t f_result(const void *c, char *b, size_t n)
{
    const render_ctx *x = c;
    return render_result(x->st, names_of(x->st), b, n);
}
static size_t f_rules(const void *c, char *b, size_t n)
{
    const render_ctx *x = c;
    return render_rules(&x->st->rules, NULL, "!", "docs/", b, n);
}

static void check_state_cuts(const g304_state *st, int viewer)
{
    render_ctx x = {st, NULL, viewer, NULL};
    check_cuts(f_hand, &x);
    check_cuts(f_turn, &x);
    check_cuts(f_table, &x);
    check_cuts(f_last, &x);
    check_cuts(f_result, &x);
    check_cuts(f_rules, &x);
}

static void check_event_cuts(const g304_state *st, const g304_events *ev)
{
    for (int i = 0; i < ev->n; i++) {
        render_ctx x = {st, &ev->ev[i], ev->ev[i].vis == G304_VIS_ALL ? -1 : ev->ev[i].to, ev};
        check_cuts(f_event, &x);
    }
    render_ctx all = {st, NULL, -1, ev};
    check_cuts(f_move, &all);
}

Test(render, truncation_never_overflows)
{
    g304_state st;
    g304_events ev;
    g304_rules r;
    g304_rules_default(&r);
    start_from(&st, &r, 0, hands_r, &ev);
    check_event_cuts(&st, &ev);
    check_state_cuts(&st, 1);
    ok(&st, 1, G304_DO_BID, NULL, 160, &ev);
    check_event_cuts(&st, &ev);
    for (int s = 2; s < 5; s++) ok(&st, s & 3, G304_DO_PASS, NULL, 0, &ev);
    check_event_cuts(&st, &ev);
    ok(&st, 1, G304_DO_TRUMP, "7H", 0, &ev);
    check_event_cuts(&st, &ev);
    check_state_cuts(&st, 1);
    for (int i = 0; i < 4; i++) ok(&st, (1 + i) & 3, G304_DO_PASS, NULL, 0, NULL);
    first_trick(&st, &ev);
    check_event_cuts(&st, &ev);
    for (int v = -1; v < 4; v++) check_state_cuts(&st, v);
    play_out(&st, &ev);
    check_event_cuts(&st, &ev);
    check_state_cuts(&st, -1);
    char b[8];
    memset(b, 'x', sizeof b);
    cr_assert_eq(render_table(&st, -1, names, b, 1), 0);
    cr_assert_eq(b[0], 0);
    cr_assert_eq(b[1], 'x', "nothing written past len");
}

/* ---- the random sweep ---- */

typedef struct {
    uint64_t s;
} sweep_rng;

static uint64_t rng_next(sweep_rng *r) /* splitmix64 */
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rng_below(sweep_rng *r, int n) { return (int)(rng_next(r) % (uint64_t)n); }
static int rng_chance(sweep_rng *r, int percent) { return rng_below(r, 100) < percent; }

#define ROOM G304_MAX_SEATS /* index of the room in what the sweep knows */

typedef struct {
    cardset_t known[ROOM + 1]; /* per seat, and the room: cards that viewer may know by now */
    cardset_t pack;            /* the cards of this match's pack */
    long texts, cards_named, secrets_kept, leaks;
    long kinds[G304_EV_RESULT + 1]; /* events seen, by kind */
    int cuts;                       /* this hand's texts are also cut short (truncation) */
    char where[160];
} sweep;

/* The cards a text names (pretty form), as a set. */
static cardset_t named_cards(const char *s)
{
    static char pretty[CARD_IDS][CARD_TEXT_MAX];
    cardset_t named = 0;
    if (!pretty[0][0])
        for (card_t c = 0; c < CARD_IDS; c++) card_pretty(c, pretty[c]);
    for (card_t c = 0; c < CARD_IDS; c++)
        if (strstr(s, pretty[c])) named |= CARDSET_BIT(c);
    return named;
}

/* The cards a text for viewer (ROOM or a seat) names that the viewer may not know. */
static cardset_t leaked(const sweep *S, int viewer, const char *s) { return named_cards(s) & ~S->known[viewer]; }

static void sweep_check(sweep *S, int viewer, const char *s)
{
    S->texts++;
    S->cards_named += cardset_count(named_cards(s));
    S->secrets_kept += S->known[viewer] != S->pack;
    cr_assert(utf8_ok(s), "%s: bad UTF-8: %s", S->where, s);
    cr_assert_null(strstr(s, "??"), "%s: a non-card in the text: %s", S->where, s);
    cr_assert_null(strstr(s, "nobody"), "%s: a missing seat in the text: %s", S->where, s);
    cardset_t bad = leaked(S, viewer, s);
    S->leaks += bad != 0;
    cr_assert_eq(bad, 0, "%s: viewer %d reads %s, which it may not know: %s", S->where, viewer,
                 card_str(cardset_first(bad)), s);
}

static void publish(sweep *S, int viewer, cardset_t cards)
{
    if (viewer == ROOM)
        for (int v = 0; v <= ROOM; v++) S->known[v] |= cards;
    else
        S->known[viewer] |= cards;
}

static cardset_t ev_set(const g304_event *e)
{
    cardset_t s = 0;
    for (int i = 0; i < e->n; i++)
        if (e->cards[i] < CARD_IDS) s |= CARDSET_BIT(e->cards[i]);
    return s;
}

/* What an event itself tells its receivers (the rules' model, see the top of the file). */
static void learn(sweep *S, const g304_event *e)
{
    int to = e->vis == G304_VIS_ALL ? ROOM : e->to;
    switch (e->kind) {
    case G304_EV_DEALT: case G304_EV_INDICATOR: case G304_EV_INSPECT: case G304_EV_PLAY: case G304_EV_OPEN:
    case G304_EV_SHOWN: case G304_EV_CAPS: case G304_EV_CAPS_JUDGED: case G304_EV_HAND: case G304_EV_FACEDOWN:
    case G304_EV_RETURNED:
        if (to == ROOM && (e->kind == G304_EV_FACEDOWN || e->kind == G304_EV_RETURNED)) break;
        publish(S, to, ev_set(e));
        break;
    case G304_EV_REVEAL:
        publish(S, ROOM, ev_set(e) | CARDSET_BIT(e->other));
        break;
    }
}

static void sweep_events(sweep *S, const g304_state *st, const g304_events *ev)
{
    char buf[RENDER_MAX];
    for (int i = 0; i < ev->n; i++) {
        const g304_event *e = &ev->ev[i];
        int hidden_before = e->kind == G304_EV_FACEDOWN && e->vis == G304_VIS_SEAT &&
                            !(S->known[ROOM] & CARDSET_BIT(e->cards[0]));
        learn(S, e);
        if (e->kind <= G304_EV_RESULT) S->kinds[e->kind]++;
        snprintf(S->where, sizeof S->where, "event %d (kind %d) for the room", i, e->kind);
        size_t n = render_event(st, e, -1, names_of(st), buf, sizeof buf);
        cr_assert_eq(n > 0, e->vis == G304_VIS_ALL, "%s: '%s'", S->where, buf);
        sweep_check(S, ROOM, buf);
        for (int s = 0; s < g304_seats(&st->rules); s++) {
            if (!g304_event_visible(e, s)) continue;
            snprintf(S->where, sizeof S->where, "event %d (kind %d) for seat %d", i, e->kind, s);
            cr_assert_gt(render_event(st, e, s, names_of(st), buf, sizeof buf), 0, "%s", S->where);
            sweep_check(S, s, buf);
            /* the private face-down copy names a card the room does not know: the check has teeth */
            if (hidden_before && s == e->to) cr_assert(named_cards(buf) & ~S->known[ROOM], "%s: %s", S->where, buf);
        }
    }
    snprintf(S->where, sizeof S->where, "the room's line for a move of %d events", ev->n);
    render_move(st, ev, names_of(st), buf, sizeof buf);
    sweep_check(S, ROOM, buf);
}

/* The room's table counts only the points of cards the room has seen (R-REVEAL: trick points
 * would give away face-down cards), and marks a team whose tricks hold unseen cards. */
static void sweep_points(const sweep *S, const g304_state *st, const char *table)
{
    int pts[2] = {0, 0}, unseen[2] = {0, 0}, six = g304_seats(&st->rules) == 6;
    char want[160];
    if (!strstr(table, "points: ")) return;
    for (int t = 0; t < G304_TRICKS; t++) {
        const g304_trick *k = &st->tricks[t];
        if (k->winner >= G304_MAX_SEATS) continue;
        for (int i = 0; i < k->n; i++) {
            if (S->known[ROOM] & CARDSET_BIT(k->card[i]))
                pts[k->winner & 1] += card_points(k->card[i]);
            else
                unseen[k->winner & 1] = 1;
        }
    }
    snprintf(want, sizeof want, "points: %s %d%s, %s %d%s\n", six ? "odd seats" : "South\xE2\x80\x93North", pts[0],
             unseen[0] ? " + \xF0\x9F\x82\xA0" : "", six ? "even seats" : "East\xE2\x80\x93West", pts[1],
             unseen[1] ? " + \xF0\x9F\x82\xA0" : "");
    cr_assert_not_null(strstr(table, want), "%s: the room's points should read '%s': %s", S->where, want, table);
}

/* The cards of a compact hand text ("♥ J 9 A · ♠ 10 7  (indicator …)"), read back. */
static cardset_t compact_cards(const char *s)
{
    static const char *const ranks[RANK_IDS] = {"7", "8", "9", "10", "J", "Q", "K", "A", "6"};
    cardset_t set = 0;
    int suit = -1;
    char word[16];
    for (const char *p = s; *p && strncmp(p, "(indicator", 10) != 0;) {
        size_t n = strcspn(p, " ");
        if (n && n < sizeof word) {
            memcpy(word, p, n);
            word[n] = 0;
            for (int k = 0; k < SUIT_COUNT; k++)
                if (strcmp(word, suit_symbol(k)) == 0) suit = k;
            for (int r = 0; r < RANK_IDS; r++)
                if (strcmp(word, ranks[r]) == 0 && suit >= 0) set |= CARDSET_BIT(CARD_MAKE(suit, r));
        }
        p += n;
        p += strspn(p, " ");
    }
    return set;
}

/* A seat's hand text lists exactly its cards, the face-down indicator apart. */
static void sweep_hand_text(const sweep *S, const g304_state *st, int seat)
{
    char buf[RENDER_MAX], one[CARD_TEXT_MAX], note[64];
    render_hand(st, seat, buf, sizeof buf);
    int down = st->ind_down && seat == st->maker;
    cardset_t want = g304_cards_of(st, seat) & ~(down ? CARDSET_BIT(st->indicator) : 0);
    cr_assert_eq(compact_cards(buf), want, "%s: hand of seat %d: %s", S->where, seat, buf);
    snprintf(note, sizeof note, "(indicator %s, face down)", card_pretty(st->indicator, one));
    cr_assert_eq(strstr(buf, note) != NULL, down, "%s: hand of seat %d: %s", S->where, seat, buf);
}

static void sweep_state(sweep *S, const g304_state *st)
{
    char buf[RENDER_MAX];
    for (int v = -1; v < g304_seats(&st->rules); v++) {
        int k = v < 0 ? ROOM : v;
        snprintf(S->where, sizeof S->where, "table and hand for %d", v);
        render_table(st, v, names_of(st), buf, sizeof buf);
        sweep_check(S, k, buf);
        if (v < 0) sweep_points(S, st, buf);
        if (v >= 0) sweep_hand_text(S, st, v);
        snprintf(S->where, sizeof S->where, "last trick for %d", v);
        render_last(st, v, names_of(st), buf, sizeof buf);
        sweep_check(S, k, buf);
    }
    snprintf(S->where, sizeof S->where, "turn");
    render_turn(st, names_of(st), buf, sizeof buf);
    sweep_check(S, ROOM, buf);
    snprintf(S->where, sizeof S->where, "result");
    cr_assert_eq(render_result(st, names_of(st), buf, sizeof buf) > 0, st->phase == G304_PHASE_DONE);
    sweep_check(S, ROOM, buf);
}

/* A Caps call: with the judge's order when it is certain, else (rarely) some order. */
static int sweep_caps(sweep_rng *R, caps_solver *w, const g304_state *st, g304_action *a, int *seat)
{
    for (int s = 0; s < g304_seats(&st->rules); s++) {
        if (!g304_may_caps(st, s) || !g304_caps_open_for(st, s)) continue;
        card_t order[G304_TRICKS];
        int n = 0;
        memset(a, 0, sizeof *a);
        a->kind = G304_DO_CAPS;
        if (w && rng_chance(R, 50) && caps_check(w, st, s, NULL, 0, order, &n) == CAPS_CERTAIN) {
            memcpy(a->order, order, (size_t)n);
        } else if (rng_chance(R, 1)) {
            cardset_t mine = g304_cards_of(st, s);
            for (; mine; mine &= mine - 1) a->order[n++] = cardset_first(mine);
        } else {
            continue;
        }
        a->n = (uint8_t)n;
        *seat = s;
        return 1;
    }
    return 0;
}

static void sweep_bid(sweep_rng *R, const g304_action *L, int n, g304_action *a)
{
    int pick = -1;
    for (int i = 0; i < n && pick < 0; i++) {
        int kind = L[i].kind;
        if ((kind == G304_DO_PASS && rng_chance(R, 60)) || (kind == G304_DO_PARTNER && rng_chance(R, 15)) ||
            (kind == G304_DO_REDEAL && rng_chance(R, 30)) ||
            (kind == G304_DO_BID && L[i].amount == G304_PCC && rng_chance(R, 5)))
            pick = i;
    }
    if (pick < 0) pick = L[0].kind == G304_DO_BID && rng_chance(R, 60) ? 0 : rng_below(R, n);
    *a = L[pick];
}

/* The next move: mostly the player to act, sometimes a declaration (open, Caps, spoilt). */
static int sweep_move(sweep_rng *R, caps_solver *w, const g304_state *st, g304_action *a)
{
    g304_action L[G304_MAX_LEGAL];
    int seat = st->to_act;
    if (st->phase == G304_PHASE_PLAY) {
        if (sweep_caps(R, w, st, a, &seat)) return seat;
        if (rng_below(R, 300) == 0) {
            memset(a, 0, sizeof *a);
            a->kind = G304_DO_SPOILT;
            return rng_below(R, g304_seats(&st->rules));
        }
        int n = g304_legal(st, st->maker, L);
        for (int i = 0; i < n; i++)
            if (L[i].kind == G304_DO_OPEN && rng_chance(R, 20)) return *a = L[i], st->maker;
    }
    int n = g304_legal(st, seat, L);
    cr_assert_gt(n, 0, "nothing legal for seat %d in phase %d", seat, st->phase);
    if (st->phase == G304_PHASE_BID4 || st->phase == G304_PHASE_BID8)
        sweep_bid(R, L, n, a);
    else
        *a = L[rng_below(R, n)];
    if (a->kind == G304_DO_OPEN && rng_chance(R, 50)) *a = L[0]; /* open less often */
    return seat;
}

static void sweep_rules(sweep_rng *R, g304_rules *r, int players)
{
    g304_rules_default(r);
    cr_assert_eq(g304_rules_set_players(r, players, NULL), 0);
    r->cut = (uint8_t)rng_below(R, 2);
    r->step_above_200 = rng_below(R, 2) ? 5 : 10;
    r->bidding = (uint8_t)rng_below(R, 2);
    r->bid8_opener = (uint8_t)rng_below(R, 2);
    r->spoilt = (uint8_t)rng_below(R, 2);
    r->caps = (uint8_t)rng_below(R, 3);
    r->scoring = (uint8_t)rng_below(R, 2);
    r->start_tokens = (uint8_t)(2 + rng_below(R, 6));
}

/* One hand; returns whether the match goes on, updating tokens and dealer. */
static int sweep_hand(sweep *S, sweep_rng *R, caps_solver *w, const g304_rules *r, int16_t tokens[2], int *dealer,
                      long *ends)
{
    g304_state st;
    g304_events ev;
    uint8_t seed[DEAL_SEED_BYTES];
    card_t deck[CARD_IDS];
    for (int i = 0; i < DEAL_SEED_BYTES; i++) seed[i] = (uint8_t)rng_next(R);
    g304_shuffle(seed, r, deck);
    memset(S->known, 0, sizeof S->known);
    S->pack = CARDSET_ALL | (g304_deck_size(r) == CARD_IDS ? CARDSET_SIXES : 0);
    ev.n = 0;
    g304_start(&st, r, *dealer, tokens, deck, &ev);
    sweep_events(S, &st, &ev);
    if (S->cuts) check_event_cuts(&st, &ev);
    for (int moves = 0; st.phase != G304_PHASE_DONE; moves++) {
        cr_assert_lt(moves, 500, "a hand that does not end");
        sweep_state(S, &st);
        g304_action a;
        int seat = sweep_move(R, w, &st, &a);
        g304_error err;
        ev.n = 0;
        g304_code c = w ? judge_apply(w, &st, seat, &a, &ev, &err) : g304_apply(&st, seat, &a, &ev, &err);
        cr_assert_eq(c, G304_OK, "seat %d %s refused: %s", seat, g304_do_name(a.kind), err.msg);
        sweep_events(S, &st, &ev);
        if (S->cuts) check_event_cuts(&st, &ev);
        if (S->cuts) check_state_cuts(&st, rng_below(R, g304_seats(r) + 1) - 1);
    }
    sweep_state(S, &st);
    ends[st.result.end]++;
    tokens[0] = st.tokens[0];
    tokens[1] = st.tokens[1];
    *dealer = st.result.next_dealer;
    return !st.result.match_over;
}

/* Whole matches of random rules for `players`, hand after hand: every cuts-th hand's texts are also
 * cut short, every judged-th hand is played under the Caps judge. Returns the matches begun. */
static long sweep_matches(sweep *S, uint64_t seed, int players, int hands, int cuts, int judged, long ends[8])
{
    sweep_rng R = {seed};
    caps_solver *w = caps_solver_new(0);
    cr_assert_not_null(w);
    memset(S, 0, sizeof *S);
    long matches = 0;
    g304_rules r;
    int16_t tokens[2];
    int dealer = 0, in_match = 0;
    for (int hand = 0; hand < hands; hand++) {
        if (!in_match) {
            sweep_rules(&R, &r, players);
            tokens[0] = tokens[1] = r.start_tokens;
            dealer = rng_below(&R, players);
            matches++;
        }
        S->cuts = hand % cuts == 0;
        in_match = sweep_hand(S, &R, hand % judged == 0 ? w : NULL, &r, tokens, &dealer, ends);
    }
    caps_solver_free(w);
    return matches;
}

Test(render, random_hands_never_tell_a_secret)
{
    sweep S;
    long ends[8] = {0}, matches = sweep_matches(&S, 304, 4, 2000, 20, 4, ends);
    cr_assert_eq(S.leaks, 0);
    /* not vacuous: texts name many cards while others are still secret, and every ending occurs */
    cr_assert_gt(S.cards_named, 100000, "only %ld card mentions", S.cards_named);
    cr_assert_gt(S.secrets_kept, S.texts / 2);
    for (int end = G304_END_PLAYED; end <= G304_END_VIOLATION; end++) cr_assert_gt(ends[end], 0, "no hand ended with %d", end);
    for (int kind = 0; kind <= G304_EV_RESULT; kind++) cr_assert_gt(S.kinds[kind], 0, "no event of kind %d", kind);
    cr_assert_gt(matches, 10);
    cr_log_info("%ld texts, %ld cards named, %ld with secrets; %ld matches; ends %ld %ld %ld %ld %ld", S.texts,
                S.cards_named, S.secrets_kept, matches, ends[1], ends[2], ends[3], ends[4], ends[5]);
}

Test(render, sweep_check_catches_a_leak)
{
    sweep S;
    memset(&S, 0, sizeof S);
    S.known[ROOM] = CARDSET_BIT(C("JH"));
    cr_assert_eq(leaked(&S, ROOM, "bob (East) plays J\xE2\x99\xA5."), 0);
    cr_assert_eq(leaked(&S, ROOM, "bob (East) plays J\xE2\x99\xA5 and 9\xE2\x99\xA5."), CARDSET_BIT(C("9H")));
    cr_assert_eq(leaked(&S, 2, "J\xE2\x99\xA5"), CARDSET_BIT(C("JH")), "seats know only what they were told");
    cr_assert_eq(named_cards("x 10\xE2\x99\xA5 y"), CARDSET_BIT(C("TH")));
    cr_assert_eq(named_cards("\xE2\x99\xA5 J 9"), 0, "the compact hand form names no card");
}

/* ---- six players (R-SIX-…) ---- */

/* Dealer alice (seat 1), so bob (seat 2) speaks and leads first; erin holds the four sixes. */
static const char *const hands6[6] = {
    "JS 9S AS TS  JD 9D", "JH 9H 7H 8H  JC 9C", "KS QS 8S 7S  KD QD",
    "AH TH KH QH  KC QC", "6S 6H 6D 6C  AC TC", "8D 7D AD TD  8C 7C",
};

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Starts a six-player hand from hands by seat (each: four cards, then two). */
static void start_six(g304_state *st, g304_rules *r, int dealer, const char *const hands[6], g304_events *ev)
{
    card_t h[G304_MAX_SEATS][G304_TRICKS], deck[CARD_IDS];
    cr_assert_eq(g304_rules_set_players(r, 6, NULL), 0);
    for (int s = 0; s < 6; s++) {
        const char *p = hands[s];
        for (int i = 0; i < 6; i++) {
            while (*p == ' ') p++;
            size_t n = strcspn(p, " ");
            cr_assert_eq(card_parse_pack(p, n, CARD_IDS, &h[s][i], NULL, 0), 0, "bad card in a test hand");
            p += n;
        }
    }
    cr_assert_eq(g304_deck_from_hands_of(r, (const card_t(*)[G304_TRICKS])h, dealer, deck), 0);
    int16_t tokens[2] = {r->start_tokens, r->start_tokens};
    if (ev) ev->n = 0;
    g304_start(st, r, dealer, tokens, deck, ev);
}

Test(render, six_players_bidding_and_the_deal)
{
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    start_six(&st, &r, 0, hands6, &ev);
    const g304_event *e = find_ev(&ev, G304_EV_DEALT, G304_VIS_SEAT, 3);
    cr_assert_eq(e->to, 4);
    render_event(&st, e, 4, names6, text, sizeof text);
    cr_assert_str_eq(text, "Your first four cards: \xE2\x99\xA0 6 \xC2\xB7 \xE2\x99\xA5 6 \xC2\xB7 \xE2\x99\xA6 6 \xC2\xB7 "
                           "\xE2\x99\xA3 6");
    render_turn(&st, names6, text, sizeof text);
    cr_assert_str_eq(text, "bob (seat 2) to bid: 160 or more, or pass", "no partner to ask with six players");
    ok(&st, 1, G304_DO_BID, NULL, 160, &ev);
    render_turn(&st, names6, text, sizeof text);
    cr_assert_str_eq(text, "carol (seat 3) to bid: 170 or more, or pass");
    while (st.phase == G304_PHASE_BID4) ok(&st, st.to_act, G304_DO_PASS, NULL, 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_MAKER, G304_VIS_ALL, -1), "bob (seat 2) is trump maker at 160");
    render_table(&st, -1, names6, text, sizeof text);
    cr_assert_str_eq(text, "Dealer: alice (seat 1) \xC2\xB7 choosing the indicator\n"
                           "Teams: alice (seat 1), carol (seat 3) & erin (seat 5) play against bob (seat 2), dave "
                           "(seat 4) & frank (seat 6)\n"
                           "Trump maker: bob (seat 2) at 160\n"
                           "Tokens: odd seats 11, even seats 11\n"
                           "bob (seat 2) to choose the indicator from the first four cards, privately");
    ok(&st, 1, G304_DO_TRUMP, "7H", 0, &ev);
    e = find_ev(&ev, G304_EV_DEALT, G304_VIS_SEAT, 0);
    cr_assert_eq(e->to, 1);
    render_event(&st, e, 1, names6, text, sizeof text);
    cr_assert_str_eq(text, "Your next two cards: \xE2\x99\xA3 J 9 \xE2\x80\x94 your hand: \xE2\x99\xA5 J 9 8 \xC2\xB7 "
                           "\xE2\x99\xA3 J 9  (indicator 7\xE2\x99\xA5, face down)");
    render_turn(&st, names6, text, sizeof text);
    cr_assert_str_eq(text, "bob (seat 2) to bid on six cards: 250 or more, pcc or pass");
    render_table(&st, -1, names6, text, sizeof text);
    cr_assert(starts_with(text, "Dealer: alice (seat 1) \xC2\xB7 six-card bidding\n"), "%s", text);
    ok(&st, 1, G304_DO_BID, NULL, G304_PCC, &ev); /* the highest bid ends the round at once */
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_MAKER, G304_VIS_ALL, -1),
                     "bob (seat 2) plays Partner Close Caps: dave (seat 4) and frank (seat 6) sit out, and bob (seat 2) "
                     "must win all six tricks");
    render_turn(&st, names6, text, sizeof text);
    cr_assert_str_eq(text, "bob (seat 2) to choose the indicator from six cards, privately");
    ok(&st, 1, G304_DO_TRUMP, "9C", 0, NULL);
    render_table(&st, -1, names6, text, sizeof text);
    cr_assert(strstr(text, "Trump maker: bob (seat 2) at Partner Close Caps (dave (seat 4) and frank (seat 6) sit out)\n"),
              "%s", text);
    cr_assert(starts_with(text, "Dealer: alice (seat 1) \xC2\xB7 trick 1 of 6\n"), "%s", text);
    play_out(&st, &ev);
    render_result(&st, names6, text, sizeof text);
    char want[RENDER_MAX];
    snprintf(want, sizeof want, "bob (seat 2) %s Partner Close Caps", st.result.made ? "made" : "failed");
    cr_assert(starts_with(text, want), "%s", text);
    cr_assert(strstr(text, st.result.made ? ", winning all six tricks" : " of six tricks won"), "%s", text);
    cr_assert(strstr(text, " \xE2\x80\x94 tokens: odd seats "), "%s", text);
    cr_assert(strstr(text, ", even seats "), "%s", text);
}

Test(render, six_players_all_pass_cut_and_rules)
{
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    start_six(&st, &r, 0, hands6, NULL);
    for (int s = 1; s < 7; s++) ok(&st, s % 6, G304_DO_PASS, NULL, 0, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_ALL_PASS, G304_VIS_ALL, -1), "all six passed");
    render_move(&st, &ev, names6, text, sizeof text);
    cr_assert_str_eq(text, "alice (seat 1) passes \xE2\x80\x94 all six passed \xE2\x80\x94 no score\n"
                           "Cards held: alice (seat 1) \xE2\x99\xA0 J 9 A 10; bob (seat 2) \xE2\x99\xA5 J 9 8 7; carol "
                           "(seat 3) \xE2\x99\xA0 K Q 8 7; dave (seat 4) \xE2\x99\xA5 A 10 K Q; erin (seat 5) "
                           "\xE2\x99\xA0 6 \xC2\xB7 \xE2\x99\xA5 6 \xC2\xB7 \xE2\x99\xA6 6 \xC2\xB7 \xE2\x99\xA3 6; "
                           "frank (seat 6) \xE2\x99\xA6 A 10 8 7",
                     "a hand thrown in after the first four cards shows those");
    r.cut = 1;
    start_six(&st, &r, 0, hands6, NULL);
    render_turn(&st, names6, text, sizeof text);
    cr_assert_str_eq(text, "frank (seat 6) to cut the pack: 1 to 35, or 0 for no cut");
    ok(&st, 5, G304_DO_CUT, NULL, 33, &ev);
    cr_assert_str_eq(ev_text(&st, &ev, G304_EV_CUT, G304_VIS_ALL, -1), "frank (seat 6) cuts the pack at 33");
    render_rules(&r, NULL, "!", "docs/", text, sizeof text);
    cr_assert_str_eq(text, "304 for six players in two teams of three; this table's options: players=6, cut=true, "
                           "step_above_200=10, bidding=standard, bid8_opener=maker, spoilt=manual, caps=grace, "
                           "scoring=transfer, start_tokens=11 (!set OPTION VALUE changes one before the start).\n"
                           "The rules in full: docs/304.md");
    render_teams(&r, NULL, text, sizeof text);
    cr_assert_str_eq(text, "odd seats 1, 3, 5 play against even seats 2, 4, 6");
    render_teams(&r, names6, text, sizeof text);
    cr_assert_str_eq(text, "alice (seat 1), carol (seat 3) & erin (seat 5) play against bob (seat 2), dave (seat 4) & "
                           "frank (seat 6)");
    render_team_names(&r, names6, 1, text, sizeof text);
    cr_assert_str_eq(text, "bob (seat 2), dave (seat 4) & frank (seat 6)");
    g304_rules_default(&r);
    render_teams(&r, NULL, text, sizeof text);
    cr_assert_str_eq(text, "South and North play against East and West");
    render_team_names(&r, names, 0, text, sizeof text);
    cr_assert_str_eq(text, "alice (South) & carol (North)");
}

/* erin (seat 5) bids 260 with clubs trump (her 6♣ the indicator) against the top clubs and
 * falls short; her team cannot pay all 4 tokens. */
Test(render, six_players_failed_bid_ends_the_match)
{
    g304_state st;
    g304_rules r;
    g304_events ev;
    g304_rules_default(&r);
    r.start_tokens = 3;
    start_six(&st, &r, 0, hands6, NULL);
    for (int s = 1; s < 4; s++) ok(&st, s, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 4, G304_DO_BID, NULL, 260, NULL);
    while (st.phase == G304_PHASE_BID4) ok(&st, st.to_act, G304_DO_PASS, NULL, 0, NULL);
    ok(&st, 4, G304_DO_TRUMP, "6C", 0, NULL);
    while (st.phase == G304_PHASE_BID8) ok(&st, st.to_act, G304_DO_PASS, NULL, 0, NULL);
    play_out(&st, &ev);
    cr_assert_eq(st.result.made, 0, "points %d %d", st.points[0], st.points[1]);
    render_result(&st, names6, text, sizeof text);
    char want[RENDER_MAX];
    snprintf(want, sizeof want,
             "alice (seat 1), carol (seat 3) & erin (seat 5) failed 260 with %d points \xE2\x80\x94 tokens: odd seats 0 "
             "(\xE2\x88\x92" "3), even seats 6 (+3)\n"
             "Match over: even seats (bob (seat 2), dave (seat 4) & frank (seat 6)) win the match!",
             st.points[0]);
    cr_assert_str_eq(text, want);
    check_event_cuts(&st, &ev);
    for (int v = -1; v < 6; v++) check_state_cuts(&st, v);
}

Test(render, random_six_player_hands_never_tell_a_secret)
{
    sweep S;
    long ends[8] = {0}, matches = sweep_matches(&S, 306, 6, 400, 25, 10, ends);
    cr_assert_eq(S.leaks, 0);
    cr_assert_gt(S.cards_named, 10000, "only %ld card mentions", S.cards_named);
    cr_assert_gt(S.secrets_kept, S.texts / 2);
    for (int end = G304_END_PLAYED; end <= G304_END_VIOLATION; end++)
        cr_expect_gt(ends[end], 0, "no hand ended with %d", end);
    for (int kind = 0; kind <= G304_EV_RESULT; kind++)
        if (kind != G304_EV_ASK) cr_expect_gt(S.kinds[kind], 0, "no event of kind %d", kind);
    cr_assert_eq(S.kinds[G304_EV_ASK], 0, "asking partner with six players");
    cr_log_info("six players: %ld texts, %ld cards named, %ld with secrets; %ld matches; ends %ld %ld %ld %ld %ld",
                S.texts, S.cards_named, S.secrets_kept, matches, ends[1], ends[2], ends[3], ends[4], ends[5]);
}
