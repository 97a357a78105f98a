/* cards.c — card points, rank order, and the R-NOTATION reader and writers.
 *
 * The reader accepts what people type in chat: any case, "10" or "T", suit letters,
 * symbols (before or after the rank, with or without an emoji variation selector) and
 * words ("jack of spades", "10 of hearts", "queen hearts"). Everything else is refused
 * with a message that shows the accepted forms; so is a six when the pack has none, with the
 * very message of any other unknown card. Points and strength are tables by card id, so the
 * sixes cost the four-player game nothing. */
#include "cards.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* By card id: the eight ranks of each suit (7 8 9 T J Q K A), then the four sixes. */
static const uint8_t points_by_card[CARD_IDS] = {
    0, 0, 20, 10, 30, 2, 3, 11, 0, 0, 20, 10, 30, 2, 3, 11, 0, 0, 20, 10, 30, 2, 3, 11,
    0, 0, 20, 10, 30, 2, 3, 11, 0, 0, 0, 0};
/* Strength: 6 < 7 < 8 < Q < K < 10 < A < 9 < J; the 32-card pack keeps 0 (7) .. 7 (J). */
static const int8_t power_by_card[CARD_IDS] = {
    0, 1, 6, 4, 7, 2, 3, 5, 0, 1, 6, 4, 7, 2, 3, 5, 0, 1, 6, 4, 7, 2, 3, 5,
    0, 1, 6, 4, 7, 2, 3, 5, -1, -1, -1, -1};
static const char rank_letters[RANK_IDS] = {'7', '8', '9', 'T', 'J', 'Q', 'K', 'A', '6'};
static const char *const rank_words[RANK_IDS] = {"seven", "eight", "nine", "ten", "jack",
                                                  "queen", "king",  "ace",  "six"};
static const char suit_letters[SUIT_COUNT] = {'S', 'H', 'D', 'C'};
static const char *const suit_words[SUIT_COUNT] = {"spades", "hearts", "diamonds", "clubs"};
static const char *const suit_symbols[SUIT_COUNT] = {"\xE2\x99\xA0", "\xE2\x99\xA5",
                                                      "\xE2\x99\xA6", "\xE2\x99\xA3"};
/* White (outline) forms people sometimes paste: ♤ ♡ ♢ ♧. */
static const char *const suit_white_symbols[SUIT_COUNT] = {"\xE2\x99\xA4", "\xE2\x99\xA1",
                                                            "\xE2\x99\xA2", "\xE2\x99\xA7"};
static const char variation_selector[] = "\xEF\xB8\x8F";

#define SUIT8(s) s, s, s, s, s, s, s, s
#define SUITS32(base) SUIT8(base), SUIT8(base + 1), SUIT8(base + 2), SUIT8(base + 3)
const uint8_t card_suit_of[256] = {
    SUITS32(0), 0, 1, 2, 3, 4, 4, 4, 4, SUIT8(5), SUIT8(6), SUIT8(7), SUITS32(8), SUITS32(12), SUITS32(16),
    SUITS32(20), SUITS32(24), SUITS32(28)};
#define RANKS8 0, 1, 2, 3, 4, 5, 6, 7
#define RANKS32 RANKS8, RANKS8, RANKS8, RANKS8
const uint8_t card_rank_of[256] = {
    RANKS32, RANK_6, RANK_6, RANK_6, RANK_6, 4, 5, 6, 7, RANKS8, RANKS8, RANKS8, RANKS32, RANKS32, RANKS32,
    RANKS32, RANKS32, RANKS32};
const cardset_t cardset_suit_of[SUIT_COUNT] = {
    0xFFull | 1ull << 32, 0xFF00ull | 1ull << 33, 0xFF0000ull | 1ull << 34, 0xFF000000ull | 1ull << 35};

int card_points(card_t c) { return c < CARD_IDS ? points_by_card[c] : 0; }
int card_power(card_t c) { return c < CARD_IDS ? power_by_card[c] : -1; }

int cardset_count(cardset_t s) { return __builtin_popcountll(s); }

card_t cardset_first(cardset_t s) { return s ? (card_t)__builtin_ctzll(s) : CARD_NONE; }

int cardset_points(cardset_t s)
{
    int sum = 0;
    while (s) {
        card_t c = (card_t)__builtin_ctzll(s);
        s &= s - 1;
        sum += card_points(c);
    }
    return sum;
}

const char *card_str(card_t c)
{
    static const char names[CARD_IDS][3] = {
        "7S", "8S", "9S", "TS", "JS", "QS", "KS", "AS", "7H", "8H", "9H", "TH", "JH", "QH", "KH", "AH",
        "7D", "8D", "9D", "TD", "JD", "QD", "KD", "AD", "7C", "8C", "9C", "TC", "JC", "QC", "KC", "AC",
        "6S", "6H", "6D", "6C"};
    return c < CARD_IDS ? names[c] : "??";
}

const char *card_pretty(card_t c, char buf[CARD_TEXT_MAX])
{
    if (c >= CARD_IDS) {
        snprintf(buf, CARD_TEXT_MAX, "??");
        return buf;
    }
    int r = CARD_RANK(c);
    if (r == RANK_T)
        snprintf(buf, CARD_TEXT_MAX, "10%s", suit_symbols[CARD_SUIT(c)]);
    else
        snprintf(buf, CARD_TEXT_MAX, "%c%s", rank_letters[r], suit_symbols[CARD_SUIT(c)]);
    return buf;
}

const char *suit_symbol(int suit) { return suit >= 0 && suit < SUIT_COUNT ? suit_symbols[suit] : "?"; }
const char *suit_name(int suit) { return suit >= 0 && suit < SUIT_COUNT ? suit_words[suit] : "?"; }
char suit_letter(int suit) { return suit >= 0 && suit < SUIT_COUNT ? suit_letters[suit] : '?'; }

/* A lower-cased, blank-trimmed copy of the input, bounded so odd input cannot overflow. */
typedef struct {
    char s[48];
    size_t n;
} word_buf;

static int trimmed_lower(const char *text, size_t len, word_buf *w)
{
    while (len && isspace((unsigned char)*text)) text++, len--;
    while (len && isspace((unsigned char)text[len - 1])) len--;
    if (len == 0 || len >= sizeof w->s) return -1;
    for (size_t i = 0; i < len; i++) w->s[i] = (char)tolower((unsigned char)text[i]);
    w->s[len] = 0;
    w->n = len;
    return 0;
}

/* Matches a suit symbol at the start of s; returns its byte length (with an optional
 * variation selector after it) or 0. */
static size_t symbol_prefix(const char *s, size_t n, int *suit)
{
    for (int i = 0; i < SUIT_COUNT; i++) {
        const char *forms[2] = {suit_symbols[i], suit_white_symbols[i]};
        for (int f = 0; f < 2; f++) {
            if (n >= 3 && memcmp(s, forms[f], 3) == 0) {
                *suit = i;
                if (n >= 6 && memcmp(s + 3, variation_selector, 3) == 0) return 6;
                return 3;
            }
        }
    }
    return 0;
}

static int suit_from_lower(const char *s, size_t n, int *suit)
{
    while (n && *s == ' ') s++, n--;
    while (n && s[n - 1] == ' ') n--;
    if (n == 0) return -1;
    if (n == 1) {
        for (int i = 0; i < SUIT_COUNT; i++)
            if (s[0] == tolower((unsigned char)suit_letters[i])) return *suit = i, 0;
        return -1;
    }
    size_t k = symbol_prefix(s, n, suit);
    if (k && k == n) return 0;
    for (int i = 0; i < SUIT_COUNT; i++) {
        size_t wl = strlen(suit_words[i]);
        /* "spades" or the singular "spade" */
        if ((n == wl || n == wl - 1) && memcmp(s, suit_words[i], n) == 0) return *suit = i, 0;
    }
    return -1;
}

int suit_parse(const char *text, size_t len, int *suit)
{
    word_buf w;
    if (trimmed_lower(text, len, &w) < 0) return -1;
    return suit_from_lower(w.s, w.n, suit);
}

/* Reads a rank at the start of s (the six included); returns the bytes used or 0. */
static size_t rank_prefix(const char *s, size_t n, int *rank)
{
    for (int i = 0; i < RANK_IDS; i++) {
        size_t wl = strlen(rank_words[i]);
        if (n >= wl && memcmp(s, rank_words[i], wl) == 0) return *rank = i, wl;
    }
    if (n >= 2 && s[0] == '1' && s[1] == '0') return *rank = RANK_T, 2;
    for (int i = 0; i < RANK_IDS; i++)
        if (n >= 1 && s[0] == tolower((unsigned char)rank_letters[i])) return *rank = i, 1;
    return 0;
}

static int parse_lower(const char *s, size_t n, card_t *out)
{
    int suit, rank;
    size_t k = symbol_prefix(s, n, &suit);
    if (k) { /* "♠J" */
        const char *r = s + k;
        size_t rn = n - k;
        while (rn && *r == ' ') r++, rn--;
        size_t used = rank_prefix(r, rn, &rank);
        if (used == 0 || used != rn) return -1;
        *out = CARD_MAKE(suit, rank);
        return 0;
    }
    k = rank_prefix(s, n, &rank);
    if (k == 0) return -1;
    const char *rest = s + k;
    size_t rn = n - k;
    while (rn && *rest == ' ') rest++, rn--;
    if (rn >= 3 && memcmp(rest, "of ", 3) == 0) rest += 3, rn -= 3;
    if (suit_from_lower(rest, rn, &suit) < 0) return -1;
    *out = CARD_MAKE(suit, rank);
    return 0;
}

int card_parse_pack(const char *text, size_t len, int pack, card_t *out, char *err, size_t errlen)
{
    word_buf w;
    card_t c;
    if (trimmed_lower(text, len, &w) == 0 && parse_lower(w.s, w.n, &c) == 0 && c < pack) return *out = c, 0;
    if (err && errlen) {
        /* Quote at most a short, printable prefix of what was given. */
        char shown[24];
        size_t j = 0;
        for (size_t i = 0; i < len && j + 1 < sizeof shown; i++) {
            unsigned char ch = (unsigned char)text[i];
            shown[j++] = (ch >= 0x20 && ch < 0x7F) ? (char)ch : '?'; /* ASCII only: always valid UTF-8 */
        }
        shown[j] = 0;
        snprintf(err, errlen,
                 "'%s' is not a card: write rank then suit, like JS, 10h, J\xE2\x99\xA0 or jack of spades",
                 shown);
    }
    return -1;
}

int card_parse(const char *text, size_t len, card_t *out, char *err, size_t errlen)
{
    return card_parse_pack(text, len, CARD_COUNT, out, err, errlen);
}
