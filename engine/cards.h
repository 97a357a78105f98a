/* cards.h — the 32-card 304 pack: card ids, rank order, points, parsing and printing.
 *
 * A card is a small integer: suit * 8 + rank, with suits S H D C (0..3) and ranks
 * 7 8 9 T J Q K A (0..7) in their natural printed order. A set of cards is a 32-bit mask,
 * bit c for card c, so hands copy and compare as plain integers (R-CARDS).
 * Trick-taking strength is a separate order (J 9 A 10 K Q 8 7), given by card_power().
 * Text in and out follows R-NOTATION: canonical "JS", tolerant input ("js", "J♠", "♠J",
 * "10h", "Th", "jack of spades"), symbols for people ("J♠", "10♥"). */
#ifndef CARDROOM_CARDS_H
#define CARDROOM_CARDS_H

#include <stddef.h>
#include <stdint.h>

typedef uint8_t card_t;
typedef uint32_t cardset_t;

enum { SUIT_S = 0, SUIT_H = 1, SUIT_D = 2, SUIT_C = 3, SUIT_COUNT = 4 };
enum { RANK_7 = 0, RANK_8, RANK_9, RANK_T, RANK_J, RANK_Q, RANK_K, RANK_A, RANK_COUNT };

#define CARD_COUNT 32
#define CARD_NONE ((card_t)0xFF)   /* no card */
#define CARD_HIDDEN ((card_t)0xFE) /* a card lies there face down, unseen by this viewer */
#define CARD_TEXT_MAX 16           /* enough for any card_pretty() text and its NUL */

#define CARD_MAKE(suit, rank) ((card_t)((suit) * 8 + (rank)))
#define CARD_SUIT(c) ((int)(c) >> 3)
#define CARD_RANK(c) ((int)(c) & 7)
#define CARDSET_BIT(c) ((cardset_t)1u << (c))
#define CARDSET_SUIT(suit) ((cardset_t)0xFFu << ((suit) * 8))
#define CARDSET_ALL ((cardset_t)0xFFFFFFFFu)

/* Points of a card (R-CARDS): J 30, 9 20, A 11, 10 10, K 3, Q 2, 8 0, 7 0. */
int card_points(card_t c);
/* Strength inside a suit, 0 (7) .. 7 (J): higher wins. */
int card_power(card_t c);
/* Sum of points of a set. */
int cardset_points(cardset_t s);
int cardset_count(cardset_t s);
/* Lowest card of a set (CARD_NONE if empty). */
card_t cardset_first(cardset_t s);

/* Canonical text: "JS", "TH", "7C". Returns a static string; "??" for a non-card. */
const char *card_str(card_t c);
/* Text for people: "J♠", "10♥". Writes into buf (at least CARD_TEXT_MAX bytes). */
const char *card_pretty(card_t c, char buf[CARD_TEXT_MAX]);
/* The suit as a symbol "♠" and as a word "spades"; the letter "S". */
const char *suit_symbol(int suit);
const char *suit_name(int suit);
char suit_letter(int suit);

/* Parses one card from text of the given length (no NUL needed). Leading and trailing
 * blanks are ignored. Returns 0 and sets *out, or -1 with a message in err (which may be
 * NULL) naming what was wrong. */
int card_parse(const char *text, size_t len, card_t *out, char *err, size_t errlen);
/* Parses a suit: a letter (S H D C), a symbol (♠♥♦♣ and their white forms) or a name
 * ("spades", "spade"). Returns 0 and sets *suit, or -1. */
int suit_parse(const char *text, size_t len, int *suit);

#endif
