/* cards.h — the 304 packs: card ids, rank order, points, parsing and printing.
 *
 * A card of the 32-card pack (R-CARDS) is a small integer: suit * 8 + rank, with suits S H D C
 * (0..3) and ranks 7 8 9 T J Q K A (0..7) in their natural printed order. Six-player 304 adds
 * the four sixes (R-SIX-CARDS) after them, as ids 32..35 (32 + suit): the ids of the 32 cards,
 * and so every four-player deal drawn from a seed, stay what they were. A set of cards is a
 * 64-bit mask, bit c for card c, so hands copy and compare as plain integers.
 * Trick-taking strength is a separate order (J 9 A 10 K Q 8 7 6), given by card_power().
 * Text in and out follows R-NOTATION: canonical "JS", tolerant input ("js", "J♠", "♠J",
 * "10h", "Th", "jack of spades"), symbols for people ("J♠", "10♥"). card_parse() reads the
 * 32-card pack, so a six is refused there as an unknown card; card_parse_pack() reads either. */
#ifndef CARDROOM_CARDS_H
#define CARDROOM_CARDS_H

#include <stddef.h>
#include <stdint.h>

typedef uint8_t card_t;
typedef uint64_t cardset_t;

enum { SUIT_S = 0, SUIT_H = 1, SUIT_D = 2, SUIT_C = 3, SUIT_COUNT = 4 };
/* RANK_COUNT ranks in the 32-card pack; RANK_6 only in the 36-card pack (RANK_IDS ranks). */
enum { RANK_7 = 0, RANK_8, RANK_9, RANK_T, RANK_J, RANK_Q, RANK_K, RANK_A, RANK_COUNT, RANK_6 = RANK_COUNT, RANK_IDS };

#define CARD_COUNT 32              /* cards of the 32-card pack: ids 0..31 */
#define CARD_IDS 36                /* cards of the 36-card pack: ids 0..35, the sixes 32..35 */
#define CARD_NONE ((card_t)0xFF)   /* no card */
#define CARD_HIDDEN ((card_t)0xFE) /* a card lies there face down, unseen by this viewer */
#define CARD_TEXT_MAX 16           /* enough for any card_pretty() text and its NUL */

/* Suit and rank by id from tables (one load, as cheap as the shift of the 32-card pack);
 * ids that are no card keep what they always gave (c >> 3, c & 7): no suit, no real rank. */
extern const uint8_t card_suit_of[256], card_rank_of[256];
/* The cards of a suit: its eight of the 32-card pack and its six (bit 32 + suit). */
extern const cardset_t cardset_suit_of[SUIT_COUNT];

#define CARD_MAKE(suit, rank) \
    ((card_t)((rank) == RANK_6 ? CARD_COUNT + (suit) : (suit) * 8 + (rank)))
#define CARD_SUIT(c) ((int)card_suit_of[(uint8_t)(c)])
#define CARD_RANK(c) ((int)card_rank_of[(uint8_t)(c)])
#define CARDSET_BIT(c) ((cardset_t)1 << (c))
#define CARDSET_SUIT(suit) (cardset_suit_of[(suit) & 3])
#define CARDSET_ALL ((cardset_t)0xFFFFFFFFu)          /* the 32-card pack */
#define CARDSET_SIXES ((cardset_t)0xFu << CARD_COUNT) /* the four sixes */

/* Points of a card (R-CARDS, R-SIX-CARDS): J 30, 9 20, A 11, 10 10, K 3, Q 2, 8 0, 7 0, 6 0. */
int card_points(card_t c);
/* Strength inside a suit, 0 (7) .. 7 (J): higher wins. The six is weaker than all: -1 (as for
 * a non-card). */
int card_power(card_t c);
/* Sum of points of a set. */
int cardset_points(cardset_t s);
int cardset_count(cardset_t s);
/* Lowest card of a set (CARD_NONE if empty). */
card_t cardset_first(cardset_t s);

/* Canonical text: "JS", "TH", "7C", "6D". Returns a static string; "??" for a non-card. */
const char *card_str(card_t c);
/* Text for people: "J♠", "10♥", "6♦". Writes into buf (at least CARD_TEXT_MAX bytes). */
const char *card_pretty(card_t c, char buf[CARD_TEXT_MAX]);
/* The suit as a symbol "♠" and as a word "spades"; the letter "S". */
const char *suit_symbol(int suit);
const char *suit_name(int suit);
char suit_letter(int suit);

/* Parses one card of the 32-card pack from text of the given length (no NUL needed). Leading
 * and trailing blanks are ignored. Returns 0 and sets *out, or -1 with a message in err (which
 * may be NULL) naming what was wrong. */
int card_parse(const char *text, size_t len, card_t *out, char *err, size_t errlen);
/* The same for a pack of `pack` cards: CARD_COUNT (as card_parse) or CARD_IDS (with the sixes:
 * "6S", "6♠", "♠6", "six of spades"). */
int card_parse_pack(const char *text, size_t len, int pack, card_t *out, char *err, size_t errlen);
/* Parses a suit: a letter (S H D C), a symbol (♠♥♦♣ and their white forms) or a name
 * ("spades", "spade"). Returns 0 and sets *suit, or -1. */
int suit_parse(const char *text, size_t len, int *suit);

#endif
