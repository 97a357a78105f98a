/* test_cards.c — the pack (R-CARDS) and card text (R-NOTATION): every accepted input form,
 * canonical and pretty output, points and power order, and the refusals with their message; the
 * sixes of the 36-card pack (R-SIX-CARDS), read only where the pack has them. */
#include <criterion/criterion.h>
#include <string.h>

#include "cards.h"

static card_t parse_ok(const char *text)
{
    card_t c = CARD_NONE;
    char err[160] = "";
    int rc = card_parse(text, strlen(text), &c, err, sizeof err);
    cr_assert_eq(rc, 0, "card_parse(\"%s\") refused: %s", text, err);
    return c;
}

static void expect_card(const char *text, int suit, int rank)
{
    card_t c = parse_ok(text);
    cr_expect_eq(c, CARD_MAKE(suit, rank), "\"%s\" gave %s, want %s", text, card_str(c),
                 card_str(CARD_MAKE(suit, rank)));
}

Test(cards, canonical_and_case)
{
    expect_card("JS", SUIT_S, RANK_J);
    expect_card("js", SUIT_S, RANK_J);
    expect_card("jS", SUIT_S, RANK_J);
    expect_card("7C", SUIT_C, RANK_7);
    expect_card("8d", SUIT_D, RANK_8);
    expect_card("9H", SUIT_H, RANK_9);
    expect_card("QS", SUIT_S, RANK_Q);
    expect_card("kd", SUIT_D, RANK_K);
    expect_card("Ac", SUIT_C, RANK_A);
}

Test(cards, tens)
{
    expect_card("10h", SUIT_H, RANK_T);
    expect_card("10H", SUIT_H, RANK_T);
    expect_card("Th", SUIT_H, RANK_T);
    expect_card("th", SUIT_H, RANK_T);
    expect_card("TH", SUIT_H, RANK_T);
    expect_card("10\xE2\x99\xA5", SUIT_H, RANK_T); /* 10♥ */
    expect_card("\xE2\x99\xA3" "10", SUIT_C, RANK_T); /* ♣10 */
}

Test(cards, symbols_either_side)
{
    expect_card("J\xE2\x99\xA0", SUIT_S, RANK_J);      /* J♠ */
    expect_card("\xE2\x99\xA0J", SUIT_S, RANK_J);      /* ♠J */
    expect_card("\xE2\x99\xA0j", SUIT_S, RANK_J);      /* ♠j */
    expect_card("a\xE2\x99\xA6", SUIT_D, RANK_A);      /* a♦ */
    expect_card("\xE2\x99\xA3" "9", SUIT_C, RANK_9);   /* ♣9 */
    expect_card("Q \xE2\x99\xA5", SUIT_H, RANK_Q);     /* Q ♥ */
}

Test(cards, emoji_variation_selector)
{
    expect_card("J\xE2\x99\xA5\xEF\xB8\x8F", SUIT_H, RANK_J);  /* J♥️ */
    expect_card("\xE2\x99\xA5\xEF\xB8\x8FJ", SUIT_H, RANK_J);  /* ♥️J */
    expect_card("10\xE2\x99\xA6\xEF\xB8\x8F", SUIT_D, RANK_T); /* 10♦️ */
    expect_card("\xE2\x99\xA0\xEF\xB8\x8F" "7", SUIT_S, RANK_7);
}

Test(cards, white_suit_symbols)
{
    expect_card("J\xE2\x99\xA4", SUIT_S, RANK_J); /* J♤ */
    expect_card("J\xE2\x99\xA1", SUIT_H, RANK_J); /* J♡ */
    expect_card("J\xE2\x99\xA2", SUIT_D, RANK_J); /* J♢ */
    expect_card("J\xE2\x99\xA7", SUIT_C, RANK_J); /* J♧ */
    expect_card("\xE2\x99\xA1K", SUIT_H, RANK_K); /* ♡K */
}

Test(cards, words)
{
    expect_card("jack of spades", SUIT_S, RANK_J);
    expect_card("Jack of Spades", SUIT_S, RANK_J);
    expect_card("Ten of Hearts", SUIT_H, RANK_T);
    expect_card("10 of hearts", SUIT_H, RANK_T);
    expect_card("queen hearts", SUIT_H, RANK_Q);
    expect_card("seven of clubs", SUIT_C, RANK_7);
    expect_card("eight of diamonds", SUIT_D, RANK_8);
    expect_card("nine of spade", SUIT_S, RANK_9);
    expect_card("KING OF CLUBS", SUIT_C, RANK_K);
    expect_card("ace of diamonds", SUIT_D, RANK_A);
    expect_card("jack of \xE2\x99\xA0", SUIT_S, RANK_J); /* jack of ♠ */
}

Test(cards, blanks_around)
{
    expect_card(" JS", SUIT_S, RANK_J);
    expect_card("JS ", SUIT_S, RANK_J);
    expect_card("  10h\t", SUIT_H, RANK_T);
    expect_card("\tjack of spades \n", SUIT_S, RANK_J);
    expect_card(" \xE2\x99\xA0J ", SUIT_S, RANK_J);
}

Test(cards, parse_without_nul)
{
    /* Only len bytes count: "JSX" cut to two bytes is JS. */
    card_t c;
    cr_assert_eq(card_parse("JSX", 2, &c, NULL, 0), 0);
    cr_expect_eq(c, CARD_MAKE(SUIT_S, RANK_J));
}

Test(cards, round_trip_all)
{
    for (card_t c = 0; c < CARD_COUNT; c++) {
        char pretty[CARD_TEXT_MAX];
        cr_expect_eq(parse_ok(card_str(c)), c, "canonical %s", card_str(c));
        cr_expect_eq(parse_ok(card_pretty(c, pretty)), c, "pretty %s", pretty);
        cr_expect_eq(strlen(card_str(c)), 2u);
        cr_expect_eq(card_str(c)[1], suit_letter(CARD_SUIT(c)));
    }
}

Test(cards, canonical_and_pretty_text)
{
    char buf[CARD_TEXT_MAX];
    cr_expect_str_eq(card_str(CARD_MAKE(SUIT_S, RANK_J)), "JS");
    cr_expect_str_eq(card_str(CARD_MAKE(SUIT_H, RANK_T)), "TH");
    cr_expect_str_eq(card_str(CARD_MAKE(SUIT_C, RANK_7)), "7C");
    cr_expect_str_eq(card_str(CARD_NONE), "??");
    cr_expect_str_eq(card_pretty(CARD_MAKE(SUIT_H, RANK_T), buf), "10\xE2\x99\xA5");
    cr_expect_str_eq(card_pretty(CARD_MAKE(SUIT_S, RANK_J), buf), "J\xE2\x99\xA0");
    cr_expect_str_eq(card_pretty(CARD_MAKE(SUIT_D, RANK_A), buf), "A\xE2\x99\xA6");
    cr_expect_str_eq(card_pretty(CARD_MAKE(SUIT_C, RANK_9), buf), "9\xE2\x99\xA3");
}

Test(cards, points_sum_to_304)
{
    int sum = 0;
    for (card_t c = 0; c < CARD_COUNT; c++) sum += card_points(c);
    cr_expect_eq(sum, 304);
    cr_expect_eq(cardset_points(CARDSET_ALL), 304);
    for (int s = 0; s < SUIT_COUNT; s++) cr_expect_eq(cardset_points(CARDSET_SUIT(s)), 76);
    static const int by_rank[RANK_COUNT] = {0, 0, 20, 10, 30, 2, 3, 11};
    for (int r = 0; r < RANK_COUNT; r++) cr_expect_eq(card_points(CARD_MAKE(SUIT_D, r)), by_rank[r]);
}

Test(cards, power_order)
{
    static const int high_to_low[RANK_COUNT] = {RANK_J, RANK_9, RANK_A, RANK_T, RANK_K, RANK_Q, RANK_8, RANK_7};
    for (int s = 0; s < SUIT_COUNT; s++)
        for (int i = 0; i + 1 < RANK_COUNT; i++)
            cr_expect_gt(card_power(CARD_MAKE(s, high_to_low[i])), card_power(CARD_MAKE(s, high_to_low[i + 1])),
                         "%s should beat %s", card_str(CARD_MAKE(s, high_to_low[i])),
                         card_str(CARD_MAKE(s, high_to_low[i + 1])));
}

Test(cards, sets)
{
    cardset_t s = CARDSET_BIT(CARD_MAKE(SUIT_H, RANK_J)) | CARDSET_BIT(CARD_MAKE(SUIT_S, RANK_9));
    cr_expect_eq(cardset_count(s), 2);
    cr_expect_eq(cardset_first(s), CARD_MAKE(SUIT_S, RANK_9));
    cr_expect_eq(cardset_first(0), CARD_NONE);
    cr_expect_eq(cardset_count(CARDSET_ALL), 32);
}

static void expect_refused(const char *text, size_t len)
{
    card_t c = CARD_NONE;
    char err[200] = "";
    cr_expect_eq(card_parse(text, len, &c, err, sizeof err), -1, "accepted %zu bytes \"%.*s\" as %s", len,
                 (int)(len > 40 ? 40 : len), text, card_str(c));
    cr_expect(strstr(err, "JS") && strstr(err, "10h") && strstr(err, "jack of spades"),
              "message should name the accepted forms: %s", err);
    cr_expect_eq(card_parse(text, len, &c, NULL, 0), -1, "NULL err must be allowed");
}

Test(cards, refusals)
{
    static const char *const bad[] = {
        "", " ", "1", "11h", "JX", "J\xE2\x99\xA0\xE2\x99\xA0", "jack of", "JSS", "S", "J", "10", "1h",
        "jack", "of spades", "jack of of spades", "J S S", "\xE2\x99\xA0", "\xE2\x99\xA0\xE2\x99\xA5",
        "queen heart s", "JS,", "J\xFF", "\xFF\xFE", "\xE2\x99", "J\xE2\x99", "ZZ", "AHH", "7 8 S",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) expect_refused(bad[i], strlen(bad[i]));
}

Test(cards, refuses_long_and_binary)
{
    char longtext[4096];
    memset(longtext, 'J', sizeof longtext);
    expect_refused(longtext, sizeof longtext);
    memset(longtext, ' ', sizeof longtext);
    longtext[0] = 'J';
    longtext[200] = 'S'; /* blanks inside count: far too long for a card */
    expect_refused(longtext, 201);
    static const char nul_inside[] = {'J', 0, 'S'};
    expect_refused(nul_inside, sizeof nul_inside);
}

Test(cards, any_blanks_around)
{
    char text[4096];
    card_t c = CARD_NONE;
    memset(text, ' ', sizeof text);
    memcpy(text + 2000, "JS", 2);
    cr_expect_eq(card_parse(text, sizeof text, &c, NULL, 0), 0, "blanks around are ignored, however many");
    cr_expect_eq(c, CARD_MAKE(SUIT_S, RANK_J));
}

Test(cards, refusal_message_quotes_safely)
{
    char err[200] = "";
    card_t c;
    cr_assert_eq(card_parse("Z\xFFZ\n", 4, &c, err, sizeof err), -1);
    for (const char *p = err; *p; p++) cr_expect((unsigned char)*p >= 0x20, "control byte in message: %s", err);
    cr_expect(strstr(err, "Z?Z") != NULL, "message: %s", err);
    char tiny[8];
    cr_assert_eq(card_parse("ZZ", 2, &c, tiny, sizeof tiny), -1);
    cr_expect_lt(strlen(tiny), sizeof tiny);
}

static void expect_suit(const char *text, int want)
{
    int suit = -1;
    cr_expect_eq(suit_parse(text, strlen(text), &suit), 0, "suit_parse(\"%s\") refused", text);
    cr_expect_eq(suit, want, "suit_parse(\"%s\") gave %d, want %d", text, suit, want);
}

Test(cards, suit_parse_forms)
{
    expect_suit("S", SUIT_S);
    expect_suit("h", SUIT_H);
    expect_suit(" d ", SUIT_D);
    expect_suit("C", SUIT_C);
    expect_suit("\xE2\x99\xA0", SUIT_S);
    expect_suit("\xE2\x99\xA5\xEF\xB8\x8F", SUIT_H);
    expect_suit("\xE2\x99\xA2", SUIT_D);
    expect_suit("\xE2\x99\xA7", SUIT_C);
    expect_suit("spades", SUIT_S);
    expect_suit("Spade", SUIT_S);
    expect_suit("HEARTS", SUIT_H);
    expect_suit("diamond", SUIT_D);
    expect_suit("clubs", SUIT_C);
}

Test(cards, suit_parse_refusals)
{
    static const char *const bad[] = {"", " ", "x", "SS", "spadess", "spad", "\xE2\x99\xA0J", "JS", "\xFF", "hearts s"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int suit = -1;
        cr_expect_eq(suit_parse(bad[i], strlen(bad[i]), &suit), -1, "suit_parse(\"%s\") accepted: %d", bad[i], suit);
    }
}

Test(cards, suit_names_and_symbols)
{
    static const char *const letters = "SHDC";
    for (int s = 0; s < SUIT_COUNT; s++) {
        int back = -1;
        cr_expect_eq(suit_letter(s), letters[s]);
        cr_expect_eq(suit_parse(suit_symbol(s), strlen(suit_symbol(s)), &back), 0);
        cr_expect_eq(back, s);
        cr_expect_eq(suit_parse(suit_name(s), strlen(suit_name(s)), &back), 0);
        cr_expect_eq(back, s);
    }
    cr_expect_eq(suit_letter(4), '?');
    cr_expect_str_eq(suit_name(-1), "?");
}

/* ---- the sixes of six-player 304 (R-SIX-CARDS) ---- */

static card_t parse36(const char *text)
{
    card_t c = CARD_NONE;
    char err[160] = "";
    cr_assert_eq(card_parse_pack(text, strlen(text), CARD_IDS, &c, err, sizeof err), 0,
                 "card_parse_pack(\"%s\", 36) refused: %s", text, err);
    return c;
}

Test(cards, sixes_in_every_form)
{
    static const struct {
        const char *text;
        int suit;
    } forms[] = {
        {"6S", SUIT_S}, {"6s", SUIT_S}, {"6\xE2\x99\xA0", SUIT_S}, {"\xE2\x99\xA0" "6", SUIT_S},
        {"six of spades", SUIT_S}, {"Six Of Spades", SUIT_S}, {"6 of spades", SUIT_S}, {"six spade", SUIT_S},
        {"6\xE2\x99\xA5\xEF\xB8\x8F", SUIT_H}, {"\xE2\x99\xA1" "6", SUIT_H}, {"6h", SUIT_H},
        {"six of diamonds", SUIT_D}, {" 6D ", SUIT_D}, {"six of \xE2\x99\xA3", SUIT_C}, {"6c", SUIT_C},
    };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        card_t c = parse36(forms[i].text);
        cr_expect_eq(c, CARD_MAKE(forms[i].suit, RANK_6), "\"%s\" gave %s", forms[i].text, card_str(c));
        cr_expect_eq(c, CARD_COUNT + forms[i].suit, "the sixes are ids 32..35, after the 32-card pack");
    }
    /* the 32 cards read the same with or without the sixes */
    for (card_t c = 0; c < CARD_COUNT; c++) cr_expect_eq(parse36(card_str(c)), c);
}

/* A six is no card of the 32-card pack: refused with the message of any unknown card. */
Test(cards, sixes_refused_by_the_32_card_pack)
{
    static const char *const sixes[] = {"6S", "6h", "\xE2\x99\xA6" "6", "six of clubs"};
    for (size_t i = 0; i < sizeof sixes / sizeof *sixes; i++) {
        card_t c = CARD_NONE;
        char err[200] = "", err32[200] = "";
        cr_expect_eq(card_parse(sixes[i], strlen(sixes[i]), &c, err, sizeof err), -1, "accepted %s", sixes[i]);
        cr_expect_eq(c, CARD_NONE, "a refused card leaves the output alone");
        cr_expect_eq(card_parse_pack(sixes[i], strlen(sixes[i]), CARD_COUNT, &c, err32, sizeof err32), -1);
        cr_expect_str_eq(err, err32);
    }
    char err[200] = "";
    card_t c;
    card_parse("6S", 2, &c, err, sizeof err);
    cr_expect_str_eq(err, "'6S' is not a card: write rank then suit, like JS, 10h, J\xE2\x99\xA0 or jack of spades");
    expect_refused("6", 1);
    expect_refused("66", 2);
}

Test(cards, sixes_text_points_power)
{
    char buf[CARD_TEXT_MAX];
    static const char *const canon[SUIT_COUNT] = {"6S", "6H", "6D", "6C"};
    static const char *const pretty[SUIT_COUNT] = {"6\xE2\x99\xA0", "6\xE2\x99\xA5", "6\xE2\x99\xA6", "6\xE2\x99\xA3"};
    for (int s = 0; s < SUIT_COUNT; s++) {
        card_t six = CARD_MAKE(s, RANK_6);
        cr_expect_str_eq(card_str(six), canon[s]);
        cr_expect_str_eq(card_pretty(six, buf), pretty[s]);
        cr_expect_eq(parse36(card_pretty(six, buf)), six);
        cr_expect_eq(CARD_SUIT(six), s);
        cr_expect_eq(CARD_RANK(six), RANK_6);
        cr_expect_eq(card_points(six), 0);
        for (int r = 0; r < RANK_COUNT; r++) /* the weakest of its suit */
            cr_expect_lt(card_power(six), card_power(CARD_MAKE(s, r)), "6 below %s", card_str(CARD_MAKE(s, r)));
        cr_expect(CARDSET_SUIT(s) & CARDSET_BIT(six), "the suit's set holds its six");
        cr_expect_eq(cardset_count(CARDSET_SUIT(s)), 9);
    }
    cardset_t pack36 = CARDSET_ALL | CARDSET_SIXES;
    cr_expect_eq(cardset_count(pack36), 36);
    cr_expect_eq(cardset_points(pack36), 304, "the pack still holds 304 points");
    cr_expect_eq(cardset_first(CARDSET_SIXES), CARD_MAKE(SUIT_S, RANK_6));
    cr_expect_str_eq(card_str(CARD_IDS), "??");
}

/* Suit and rank come from tables: they must agree with the layout for every byte value (ids that
 * are no card keep c >> 3 and c & 7, so they never look like a suit 0..3). */
Test(cards, suit_and_rank_of_every_id)
{
    for (int c = 0; c < 256; c++) {
        int suit = c < CARD_COUNT ? c >> 3 : c < CARD_IDS ? c - CARD_COUNT : c >> 3;
        int rank = c < CARD_COUNT ? c & 7 : c < CARD_IDS ? RANK_6 : c & 7;
        cr_expect_eq(CARD_SUIT(c), suit, "suit of id %d", c);
        cr_expect_eq(CARD_RANK(c), rank, "rank of id %d", c);
        if (c < CARD_IDS) cr_expect_eq(CARD_MAKE(suit, rank), c);
    }
    for (int s = 0; s < SUIT_COUNT; s++)
        cr_expect_eq(CARDSET_SUIT(s), ((cardset_t)0xFF << (8 * s)) | ((cardset_t)1 << (CARD_COUNT + s)));
}
