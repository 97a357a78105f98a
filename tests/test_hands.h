/* test_hands.h — what the engine-level tests share: a card and a deal written as text.
 *
 * Hands are written per seat as "JH 9H 7S 8S | AC KC QD 7D" (the first four cards are the
 * first batch; '|' is optional). Static functions for Criterion tests: include this from the
 * test file that uses them. */
#ifndef CARDROOM_TEST_HANDS_H
#define CARDROOM_TEST_HANDS_H

#include <criterion/criterion.h>
#include <string.h>

#include "g304.h"

/* A card of the 36-card pack (the sixes too, R-SIX-CARDS). */
static inline card_t C(const char *s)
{
    card_t c;
    cr_assert_eq(card_parse_pack(s, strlen(s), CARD_IDS, &c, NULL, 0), 0, "bad card %s", s);
    return c;
}

/* Starts a hand from hands by seat with dealer and rules r (NULL: the defaults), each team with
 * the rules' start tokens; the deal's events go to ev (may be NULL). */
static inline void start_from(g304_state *st, const g304_rules *r, int dealer, const char *const hands[4],
                              g304_events *ev)
{
    card_t h[4][8];
    g304_rules defaults;
    if (!r) g304_rules_default(&defaults), r = &defaults;
    for (int s = 0; s < 4; s++) {
        const char *p = hands[s];
        for (int i = 0; i < 8; i++) {
            while (*p == ' ' || *p == '|') p++;
            const char *q = p;
            while (*q && *q != ' ') q++;
            cr_assert_eq(card_parse(p, (size_t)(q - p), &h[s][i], NULL, 0), 0, "bad card in test hand");
            p = q;
        }
    }
    card_t deck[CARD_COUNT];
    cr_assert_eq(g304_deck_from_hands(h, dealer, deck), 0, "the test hands are not 32 different cards");
    int16_t tokens[2] = {r->start_tokens, r->start_tokens};
    if (ev) ev->n = 0;
    g304_start(st, r, dealer, tokens, deck, ev);
}

/* A move of that kind with that card and amount (the others zero). */
static inline g304_action test_action(int kind, card_t card, int amount)
{
    g304_action a;
    memset(&a, 0, sizeof a);
    a.kind = (uint8_t)kind;
    a.card = card;
    a.amount = (uint16_t)amount;
    return a;
}

#endif
