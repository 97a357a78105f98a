/* command.h — chat text to commands (design.md, Fixed interfaces 3).
 *
 * cmd_parse() turns one chat message into a command: the prefix (configurable, "!" by
 * default; optional in private messages), a case-insensitive command word, tolerant of
 * extra blanks, cards per R-NOTATION, bids with the short forms of the rules (60..90 =
 * 160..190, 100..150 = 200..250). It knows nothing of tables: whether a move is allowed
 * now is the table's business. A bad argument gives CMD_BAD with a sentence for the player.
 * Pure and allocation-free, so it is also the command fuzz target. */
#ifndef CARDROOM_COMMAND_H
#define CARDROOM_COMMAND_H

#include <stddef.h>
#include <stdint.h>

#include "cards.h"

#define CMD_TEXT_MAX 2048 /* longer messages are refused as a whole */
#define CMD_ARG_MAX 64
#define CMD_ERR_MAX 200
#define CMD_MAX_CARDS 16  /* caps orders (8) and ContractGrid cell lists (16) */

typedef enum {
    CMD_NONE = 0,  /* not addressed to the bot (no prefix and not a bare card): ignore quietly */
    CMD_BAD,       /* addressed to the bot but unusable: err says why and what is allowed */
    CMD_NEW,       /* arg: the game, "304" or "grid"; amount: the players asked for (304: 4 or
                      6), 0 when not said */
    CMD_JOIN,      /* seat: 0..5, or -1 for any free seat */
    CMD_LEAVE,
    CMD_BOT,       /* seat: 0..5, or -1 for the first free seat */
    CMD_START,
    CMD_ABORT,
    CMD_BACK,      /* take one's seat back from the computer player */
    CMD_CUT,       /* amount: cut point 0..31 (0..35 in the 36-card pack) */
    CMD_BID,       /* amount: full points (160..300) or G304_PCC */
    CMD_PASS,
    CMD_PARTNER,
    CMD_REDEAL,
    CMD_TRUMP,     /* card */
    CMD_OPEN,
    CMD_PLAY,      /* card; bare = 1 when the message was just a card with no prefix */
    CMD_CAPS,      /* cards[0..ncards-1]: the order; ncards may be 0 ("caps" alone) */
    CMD_SPOILT,
    CMD_HAND,
    CMD_TABLE,
    CMD_LAST,
    CMD_HINT,      /* 304: the expert's move for the asker's seat, privately (table option hints) */
    CMD_REVIEW,    /* 304: the costly cards of the last finished hand, double dummy, in the room */
    CMD_STANDINGS, /* arg: a user to look up ("@alice" or "alice"), "" for the room */
    CMD_RULES,
    CMD_NOTIFY,    /* arg = "on", "off", or "" to ask */
    CMD_SET,       /* arg = option name (lower case), arg2 = value (as typed, trimmed) */
    CMD_HELP,      /* arg = command word asked about (lower case, no prefix), "" for all */
    CMD_GRID,      /* ContractGrid: arg2 = the rest of the line (cells or "random") */
    CMD_EXCLUDE,   /* ContractGrid: suit (0..3) */
    CMD_MARK,      /* ContractGrid: arg2 = the rest of the line (cells); "bid CELL..." reads as
                      this too (word "bid"), since a 304 bid is never a cell name */
    CMD_ADMIN,     /* the bot's admins: arg = list, close, leave, ignore or unignore; arg2 = its
                      argument as typed (a table number, a room, a user); not in the help list */
    CMD_KIND_COUNT
} cmd_kind;

typedef struct {
    cmd_kind kind;
    int seat;                  /* JOIN, BOT */
    int suit;                  /* EXCLUDE */
    uint16_t amount;           /* BID, CUT; NEW: players */
    card_t card;               /* TRUMP, PLAY */
    uint8_t pack;              /* the pack cards are read from: CARD_COUNT, or CARD_IDS (with the
                                  sixes, at a six-player 304 table) */
    uint8_t bare;              /* PLAY without prefix */
    uint8_t joker;             /* PLAY: the card named is the joker of ContractGrid ("JK", "joker",
                                  U+1F0CF); card is then 0 and means nothing (304 has no joker) */
    uint8_t ncards;            /* CAPS */
    card_t cards[CMD_MAX_CARDS];
    char word[CMD_ARG_MAX];    /* the command word as the user typed it, lower case (for BAD too) */
    char arg[CMD_ARG_MAX];     /* NEW: game; SET: option; HELP: topic; STANDINGS: user; NOTIFY: on, off */
    char arg2[CMD_ARG_MAX * 4];/* SET: value; GRID, MARK: the rest of the line */
    char err[CMD_ERR_MAX];     /* CMD_BAD: a sentence for the player */
} cmd;

/* Parses text[0..len) (need not be NUL-terminated). prefix is the command prefix ("!").
 * prefix_optional: the message was sent privately to the bot, so "bid 160" works as well as
 * "!bid 160". A message that is only a card ("JH", "j♥", "10 of hearts") without prefix is
 * CMD_PLAY with bare = 1 (the table decides whether to take it or stay quiet); the joker
 * ("JK", "joker", U+1F0CF) is such a card too, with joker = 1. Seats are given as 1..6 or
 * south/east/north/west (s/e/n/w), and come out as 0..5 (whether the table has that seat is
 * the table's business). Cards are those of the 32-card pack. */
void cmd_parse(const char *text, size_t len, const char *prefix, int prefix_optional, cmd *out);

/* The same for the pack of the table the message goes to (card_parse_pack): CARD_COUNT, or
 * CARD_IDS at a six-player 304 table, where the sixes are cards ("6S", "six of spades") and
 * the cut goes to 35. With CARD_COUNT it is cmd_parse(). */
void cmd_parse_pack(const char *text, size_t len, const char *prefix, int prefix_optional, int pack, cmd *out);

/* The command word for a kind ("bid"), as used in help. */
const char *cmd_name(cmd_kind kind);

/* Whether a kind is a move in a hand (bid, play, caps …, ContractGrid's mark and exclude): the
 * game lets only the player to act make one, so accepted moves pace themselves. */
int cmd_is_move(cmd_kind kind);

/* Help: cmd_help(NULL or "") is the list of every command with one line each; cmd_help("bid")
 * (with or without prefix, any case) is one line: the usage and a few sentences. prefix is
 * shown in the examples. Returns NULL for an unknown topic. The text is written into buf
 * (NUL-terminated). */
const char *cmd_help(const char *topic, const char *prefix, char *buf, size_t len);

/* Help in one line for a room: every command word, how to ask about one, and that the full
 * list went privately. Written into buf, which is returned. */
const char *cmd_help_line(const char *prefix, char *buf, size_t len);

/* Seat names in playing order: South, East, North, West for four (R-SEATS); "seat 1" to
 * "seat 6" for six (R-SIX-SEATS: there are no compass points for six). seats: 4 or 6. */
const char *cmd_seat_name(int seat, int seats);

#endif
