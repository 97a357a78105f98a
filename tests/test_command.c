/* test_command.c — chat text to commands (design.md, Fixed interfaces 3; bot/command.h).
 * One table of messages and what each must become: every command and alias, seats, bids with
 * their short forms, cards in every R-NOTATION form, caps lists, blanks and case, prefixes,
 * private messages, chat that must stay quiet, and garbage. Then long and binary input, the
 * help texts and the seat names.
 *
 * Decisions pinned here:
 * - "155" is refused: 100..150 are the short forms of 200..250 (rules, four-card bidding) and
 *   155 is neither a short form nor a full bid; likewise 95 and 301.
 * - A bare number ("10", "160") is never a card: card_parse needs a suit.
 * - "ah", "as", "ad" without the prefix are chat unless written in capitals ("AH").
 * - A message over CMD_TEXT_MAX is refused only when it is addressed to the bot (prefix or a
 *   private message); in a room without the prefix it is chat and stays quiet.
 * - The sixes are cards only in the 36-card pack (cmd_parse_pack with CARD_IDS, a six-player
 *   table); in the 32-card pack they are refused with the words of any other non-card, and a
 *   bare "6S" in a room is chat. Seats 5 and 6 are read everywhere: the table knows whether it
 *   has them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "command.h"
#include "g304.h"

#define PCC G304_PCC

typedef struct {
    const char *text;
    size_t len;          /* 0: strlen(text) */
    const char *prefix;  /* NULL: "!" */
    int opt;             /* prefix_optional (a private message) */
    cmd_kind kind;
    int seat;            /* JOIN, BOT */
    int amount;          /* BID, CUT */
    const char *card;    /* PLAY, TRUMP: canonical */
    int bare;            /* PLAY */
    const char *cards;   /* CAPS: canonical cards separated by one space, "" for none */
    int suit;            /* EXCLUDE */
    const char *arg;     /* checked when not NULL */
    const char *arg2;    /* checked when not NULL */
    const char *word;    /* checked when not NULL */
    const char *err;     /* BAD: part of the message */
    int pack;            /* 0: cmd_parse (the 32-card pack); else cmd_parse_pack with this pack */
} row;

#define NONE_(t) {t, .kind = CMD_NONE}
#define BARE(t, c) {t, .kind = CMD_PLAY, .card = c, .bare = 1}
#define PLAY(t, c) {t, .kind = CMD_PLAY, .card = c}
#define BAD(t, w, e) {t, .kind = CMD_BAD, .word = w, .err = e}
#define JOIN(t, s) {t, .kind = CMD_JOIN, .seat = s}
#define BOT(t, s) {t, .kind = CMD_BOT, .seat = s}
#define BID(t, a) {t, .kind = CMD_BID, .amount = a}
#define CUT(t, a) {t, .kind = CMD_CUT, .amount = a}
#define CAPS(t, c) {t, .kind = CMD_CAPS, .cards = c}
#define SIX(t, k, ...) {t, .kind = k, .pack = CARD_IDS, __VA_ARGS__}
#define PLAIN(t, k) {t, .kind = k}
#define SEATS "seats are 1-4 or south, east, north, west"
#define BIDMSG "a bid is a number like 160 (or 60), or pcc"
#define RANGE "bids go from 160 to 300"
#define NOTCARD "is not a card: write rank then suit"
#define NOTTEXT "not text"
#define GRID16 "Zero one two first second third different soloist partner alltrump notrump spades hearts diamonds clubs play"

static const row rows[] = {
    /* bare cards in a room, and chat that must stay quiet */
    BARE("JH", "JH"),
    BARE("j\xE2\x99\xA5", "JH"),
    BARE("10 of hearts", "TH"),
    BARE("\xE2\x99\xA0J", "JS"),
    BARE("  10h  ", "TH"),
    BARE("Th\n", "TH"),
    BARE("J\xE2\x99\xA5\xEF\xB8\x8F", "JH"),
    BARE("jack of spades", "JS"),
    BARE("queen  of\thearts", "QH"),
    BARE("7s", "7S"),
    BARE("AS", "AS"),
    BARE("\xE2\x99\xA6" "10", "TD"),
    NONE_("hello"),
    NONE_("ok"),
    NONE_("a"),
    NONE_("10"),
    NONE_("160"),
    NONE_("bid 160"),
    NONE_("ah"),
    NONE_("As"),
    NONE_("ad"),
    NONE_("JH please"),
    NONE_("I played JH"),
    NONE_(""),
    NONE_("   \t\n"),
    NONE_("\xFF\xFE"),
    {"J\0H", 3, .kind = CMD_NONE},
    NONE_("\xE2\x99\xA5\xE2\x99\xA5\xE2\x99\xA5"),
    NONE_("help"),
    NONE_("type !help for help"), /* the prefix is not at the start */

    /* the prefix alone, unknown words, cards after the prefix, text that is not text */
    BAD("!", "", "say a command after \"!\", like !help"),
    BAD("   !   ", "", "say a command"),
    BAD("!frob", "frob", "unknown command \"frob\": try !help"),
    BAD("!FROB x", "frob", "unknown command \"FROB\""),
    {"cr:frob", .prefix = "cr:", .kind = CMD_BAD, .word = "frob", .err = "try cr:help"},
    BAD("!!bid 160", "!bid", "unknown command"),
    BAD("!abort!", "abort!", "unknown command"),
    BAD("!\xF0\x9F\x83\x8F", "\xF0\x9F\x83\x8F", "unknown command \"\xF0\x9F\x83\x8F\""),
    BAD("!\xEF\xBD\x82\xEF\xBD\x89\xEF\xBD\x84 160", NULL, "unknown command"), /* full-width "bid" */
    {"!JH", .kind = CMD_PLAY, .card = "JH", .word = "jh"},
    PLAY("!10 of hearts", "TH"),
    PLAY("!  j\xE2\x99\xA5", "JH"),
    PLAY("!ah", "AH"),
    BAD("!\xFF", "", NOTTEXT),
    {"!bid\0 160", 9, .kind = CMD_BAD, .err = NOTTEXT},
    BAD("!bid \x01", "", NOTTEXT),
    BAD("!bid \xC2\x85 160", "", NOTTEXT),           /* a C1 control */
    BAD("!bid \xED\xA0\x80", "", NOTTEXT),           /* a surrogate */
    BAD("!bid \xC0\xAF", "", NOTTEXT),               /* overlong */
    BID("!bid\xC2\xA0" "160", 160),                  /* no-break space */

    /* new */
    {"!new", .kind = CMD_NEW, .arg = "304"},
    {"!new 304", .kind = CMD_NEW, .arg = "304"},
    {"!NEW Grid", .kind = CMD_NEW, .arg = "grid"},
    {"!new contractgrid", .kind = CMD_NEW, .arg = "grid"},
    BAD("!new poker", "new", "the games are 304 and grid"),
    BAD("!new 304 now", "new", "!new 304 or !new grid"),
    {"!new 304 6", .kind = CMD_NEW, .arg = "304", .amount = 6},
    {"!new  304	4", .kind = CMD_NEW, .arg = "304", .amount = 4},
    {"!new 304", .kind = CMD_NEW, .arg = "304", .amount = 0},
    BAD("!new 304 5", "new", "304 is for four or six players: !new 304, or !new 304 6"),
    BAD("!new 304 8", "new", "four or six players"),
    BAD("!new 304 66", "new", "the games are 304 and grid"),
    BAD("!new 304 6 now", "new", "the games are 304 and grid"),
    BAD("!new grid 6", "new", "ContractGrid is for three players: !new grid"),
    BAD("!new grid 3", "new", "ContractGrid is for three players"),

    /* join and bot, seats in every form */
    JOIN("!join", -1),
    JOIN("!join 1", 0),
    JOIN("!join 2", 1),
    JOIN("!join 3", 2),
    JOIN("!join 4", 3),
    JOIN("!join south", 0),
    JOIN("!join East", 1),
    JOIN("!join NORTH", 2),
    JOIN("!join west", 3),
    JOIN("!join S", 0),
    JOIN("!join e", 1),
    JOIN("!join n", 2),
    JOIN("!join W", 3),
    JOIN("!JOIN\t north ", 2),
    JOIN("!join 5", 4), /* whether the table has seats 5 and 6 is the table's business */
    JOIN("!join 6", 5),
    BOT("!bot 6", 5),
    BAD("!join 0", "join", SEATS),
    BAD("!join 7", "join", "and 1-6 at a six-player table"),
    BAD("!bot 7", "bot", "1-6 at a six-player table"),
    SIX("!join 7", CMD_BAD, .word = "join", .err = SEATS),
    BAD("!join -1", "join", SEATS),
    BAD("!join southwest", "join", SEATS),
    BAD("!join north east", "join", SEATS),
    BAD("!join x", "join", "!join north"),
    BOT("!bot", -1),
    BOT("!bot 3", 2),
    BOT("!bot west", 3),
    BOT("!Bot E", 1),
    BAD("!bot x", "bot", SEATS),

    /* commands without arguments */
    PLAIN("!leave", CMD_LEAVE),
    BAD("!leave now", "leave", "leave takes no argument: just !leave"),
    PLAIN("!start", CMD_START),
    PLAIN("!START", CMD_START),
    PLAIN("!abort", CMD_ABORT),
    PLAIN("!back", CMD_BACK),
    PLAIN("!pass", CMD_PASS),
    PLAIN("\t!pass\t", CMD_PASS),
    PLAIN("!pass\r\n", CMD_PASS),
    PLAIN("!PaSs", CMD_PASS),
    BAD("!pass 160", "pass", "pass takes no argument"),
    PLAIN("!partner", CMD_PARTNER),
    {"!ask", .kind = CMD_PARTNER, .word = "ask"},
    BAD("!ask partner", "ask", "ask takes no argument"),
    PLAIN("!redeal", CMD_REDEAL),
    PLAIN("!open", CMD_OPEN),
    PLAIN("!spoilt", CMD_SPOILT),
    {"!Spoiled", .kind = CMD_SPOILT, .word = "spoiled"},
    PLAIN("!hand", CMD_HAND),
    PLAIN("!table", CMD_TABLE),
    PLAIN("!last", CMD_LAST),
    PLAIN("!rules", CMD_RULES),
    BAD("!rules please", "rules", "takes no argument"),
    {"!notify", .kind = CMD_NOTIFY, .arg = ""},
    {"!Notify OFF", .kind = CMD_NOTIFY, .arg = "off"},
    {"notify on", .opt = 1, .kind = CMD_NOTIFY, .arg = "on"},
    BAD("!notify maybe", "notify", "notify takes on or off: !notify off"),

    /* cut */
    CUT("!cut 0", 0),
    CUT("!cut 12", 12),
    CUT("!cut 31", 31),
    CUT("!cut 007", 7),
    BAD("!cut 32", "cut", "from 0 to 31"),
    BAD("!cut", "cut", "from 0 to 31"),
    BAD("!cut x", "cut", "from 0 to 31"),
    BAD("!cut 1 2", "cut", "from 0 to 31"),
    SIX("!cut 35", CMD_CUT, .amount = 35),
    SIX("!cut 31", CMD_CUT, .amount = 31),
    SIX("!cut 36", CMD_BAD, .word = "cut", .err = "from 0 to 35"),

    /* bid: full values, short forms, pcc */
    BID("!bid 160", 160),
    BID("!bid 165", 165),
    BID("!bid 205", 205),
    BID("!bid 250", 250),
    BID("!bid 300", 300),
    BID("!bid 60", 160),
    BID("!bid 65", 165),
    BID("!bid 90", 190),
    BID("!bid 100", 200),
    BID("!bid 150", 250),
    BID("!BID\t  70 ", 170),
    BID("!bid 0160", 160),
    BID("!bid pcc", PCC),
    BID("!bid PCC", PCC),
    BID("!bid Partner  Close Caps", PCC),
    BAD("!bid 155", "bid", RANGE), /* neither a short form (100..150) nor a full bid */
    BAD("!bid 95", "bid", RANGE),
    BAD("!bid 59", "bid", RANGE),
    BAD("!bid 0", "bid", RANGE),
    BAD("!bid 301", "bid", RANGE),
    BAD("!bid 1000", "bid", RANGE),
    BAD("!bid", "bid", BIDMSG),
    BAD("!bid abc", "bid", BIDMSG),
    BAD("!bid 160 170", "bid", BIDMSG),
    BAD("!bid -160", "bid", BIDMSG),
    BAD("!bid 1e2", "bid", BIDMSG),
    BAD("!bid 99999999999", "bid", "or pcc"),
    BAD("!bid 16\xEF\xBC\x90", "bid", BIDMSG), /* full-width zero */
    BAD("!bid partner", "bid", BIDMSG),

    /* trump and play: every card form */
    {"!trump 7S", .kind = CMD_TRUMP, .card = "7S"},
    {"!trump seven of spades", .kind = CMD_TRUMP, .card = "7S"},
    {"!trump \xE2\x99\xA6" "10", .kind = CMD_TRUMP, .card = "TD"},
    BAD("!trump", "trump", "trump takes a card, like !trump JS"),
    BAD("!trump ZZ", "trump", "'ZZ' " NOTCARD),
    PLAY("!play JH", "JH"),
    PLAY("!play 10h", "TH"),
    PLAY("!play Th", "TH"),
    PLAY("!play \xE2\x99\xA0J", "JS"),
    PLAY("!play J\xE2\x99\xA0", "JS"),
    PLAY("!play J\xE2\x99\xA4", "JS"),
    PLAY("!play jack of spades", "JS"),
    PLAY("!play Ace Of Diamonds", "AD"),
    PLAY("!play 10 \xE2\x99\xA5\xEF\xB8\x8F", "TH"),
    PLAY("!play q h", "QH"),
    BAD("!play", "play", "play takes a card"),
    BAD("!play ZZ", "play", NOTCARD),
    BAD("!play JS 9S", "play", NOTCARD),
    BAD("!play 10", "play", NOTCARD),

    /* the sixes: cards of the 36-card pack only (R-SIX-CARDS) */
    SIX("!play 6S", CMD_PLAY, .card = "6S"),
    SIX("!play six of hearts", CMD_PLAY, .card = "6H"),
    SIX("!play \xE2\x99\xA6" "6", CMD_PLAY, .card = "6D"),
    SIX("!trump 6c", CMD_TRUMP, .card = "6C"),
    SIX("6S", CMD_PLAY, .card = "6S", .bare = 1),
    SIX("!play JH", CMD_PLAY, .card = "JH"),
    SIX("!caps 6s JH six of clubs", CMD_CAPS, .cards = "6S JH 6C"),
    SIX("!play 5S", CMD_BAD, .word = "play", .err = "'5S' " NOTCARD),
    BAD("!play 6S", "play", "'6S' " NOTCARD),
    BAD("!play six of hearts", "play", NOTCARD),
    BAD("!trump 6c", "trump", "'6c' " NOTCARD),
    BAD("!caps JH 6S", "caps", "'6S' " NOTCARD),
    NONE_("6S"),
    {"6S", .opt = 1, .kind = CMD_BAD, .err = "unknown command \"6S\""},

    /* caps lists */
    CAPS("!caps", ""),
    CAPS("!caps ,", ""),
    CAPS("!caps JH", "JH"),
    CAPS("!caps JH 9H AH", "JH 9H AH"),
    CAPS("!caps JH,9H,AH", "JH 9H AH"),
    CAPS("!caps JH, 9H ,AH", "JH 9H AH"),
    CAPS("!caps  jh\t9h  ,, ah ", "JH 9H AH"),
    CAPS("!caps jack of hearts, nine of hearts", "JH 9H"),
    CAPS("!caps 10 h 9 s", "TH 9S"),
    CAPS("!caps J\xE2\x99\xA5 \xE2\x99\xA5" "9 10\xE2\x99\xA5", "JH 9H TH"),
    CAPS("!caps 7s 8s 9s ts js qs ks as", "7S 8S 9S TS JS QS KS AS"),
    BAD("!caps 7s 8s 9s ts js qs ks as 7h", "caps", "at most 8 cards"),
    BAD("!caps JH jh", "caps", "listed twice"),
    BAD("!caps J\xE2\x99\xA0 J\xE2\x99\xA0\xEF\xB8\x8F", "caps", "J\xE2\x99\xA0 is listed twice"),
    BAD("!caps JH ZZ", "caps", "'ZZ' " NOTCARD),
    BAD("!caps JH 10", "caps", NOTCARD),

    /* standings */
    {"!standings", .kind = CMD_STANDINGS, .arg = ""},
    {"!standings @alice:example.org", .kind = CMD_STANDINGS, .arg = "@alice:example.org"},
    {"!standings Bob", .kind = CMD_STANDINGS, .arg = "Bob"},
    {"!standings Alice \t Smith", .kind = CMD_STANDINGS, .arg = "Alice Smith"},
    BAD("!standings aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "standings",
        "that name is too long"),

    /* set */
    {"!set caps strict", .kind = CMD_SET, .arg = "caps", .arg2 = "strict"},
    {"!SET Caps Strict", .kind = CMD_SET, .arg = "caps", .arg2 = "Strict"},
    {"!set  step_above_200\t5 ", .kind = CMD_SET, .arg = "step_above_200", .arg2 = "5"},
    {"!set bidding single  please", .kind = CMD_SET, .arg = "bidding", .arg2 = "single please"},
    BAD("!set caps", "set", "set takes an option and a value, like !set caps strict"),
    BAD("!set", "set", "an option and a value"),

    /* help */
    {"!help", .kind = CMD_HELP, .arg = ""},
    {"!help bid", .kind = CMD_HELP, .arg = "bid"},
    {"!help !BID", .kind = CMD_HELP, .arg = "bid"},
    {"!HELP Ask", .kind = CMD_HELP, .arg = "ask"},
    {"cr:help cr:caps", .prefix = "cr:", .kind = CMD_HELP, .arg = "caps"},
    BAD("!help frob", "help", "there is no command \"frob\": !help lists them"),
    BAD("!help bid pass", "help", "help takes one command"),

    /* ContractGrid */
    {"!grid random", .kind = CMD_GRID, .arg2 = "random"},
    {"!grid  Random ", .kind = CMD_GRID, .arg2 = "random"},
    {"!grid " GRID16, .kind = CMD_GRID, .arg2 = "zero one two first second third different soloist partner "
                                                "alltrump notrump spades hearts diamonds clubs play"},
    BAD("!grid", "grid", "grid needs your 16 contracts or random"),
    {"!exclude hearts", .kind = CMD_EXCLUDE, .suit = SUIT_H},
    {"!exclude S", .kind = CMD_EXCLUDE, .suit = SUIT_S},
    {"!exclude \xE2\x99\xA3", .kind = CMD_EXCLUDE, .suit = SUIT_C},
    {"!exclude Diamond", .kind = CMD_EXCLUDE, .suit = SUIT_D},
    BAD("!exclude", "exclude", "takes a suit: S, H, D, C"),
    BAD("!exclude purple", "exclude", "takes a suit"),
    BAD("!exclude hearts spades", "exclude", "takes a suit"),
    {"!mark a1 B2\tc3  d4", .kind = CMD_MARK, .arg2 = "a1 b2 c3 d4"},
    BAD("!mark", "mark", "cells like a1"),

    /* the bot's admins (who may is the core's business) */
    {"!admin list", .kind = CMD_ADMIN, .arg = "list", .arg2 = ""},
    {"admin LIST", .opt = 1, .kind = CMD_ADMIN, .arg = "list"},
    {"!admin close 12", .kind = CMD_ADMIN, .arg = "close", .arg2 = "12"},
    {"!admin leave !Abc:Example.org", .kind = CMD_ADMIN, .arg = "leave", .arg2 = "!Abc:Example.org"},
    {"!admin Ignore @Bob:example.org", .kind = CMD_ADMIN, .arg = "ignore", .arg2 = "@Bob:example.org"},
    {"!admin unignore $a:bob", .kind = CMD_ADMIN, .arg = "unignore", .arg2 = "$a:bob"},
    BAD("!admin", "admin", "admin takes list, close TABLE, leave ROOM, ignore USER or unignore USER"),
    BAD("!admin list all", "admin", "admin takes list"),
    BAD("!admin close", "admin", "admin takes list"),
    BAD("!admin close 12 13", "admin", "admin takes list"),
    BAD("!admin close twelve", "admin", "admin close takes a table number"),
    BAD("!admin close 0", "admin", "admin close takes a table number"),
    BAD("!admin ignore", "admin", "admin takes list"),
    BAD("!admin shout hello", "admin", "admin takes list"),

    /* other prefixes and private messages */
    {"cr:bid 70", .prefix = "cr:", .kind = CMD_BID, .amount = 170},
    {"  CR: bid 70", .prefix = "cr:", .kind = CMD_BID, .amount = 170},
    {"!bid 70", .prefix = "cr:", .kind = CMD_NONE},
    {"cr:", .prefix = "cr:", .kind = CMD_BAD, .err = "say a command after \"cr:\", like cr:help"},
    {"bid 70", .opt = 1, .kind = CMD_BID, .amount = 170},
    {"!bid 70", .opt = 1, .kind = CMD_BID, .amount = 170},
    {"JH", .opt = 1, .kind = CMD_PLAY, .card = "JH", .bare = 1},
    {"!JH", .opt = 1, .kind = CMD_PLAY, .card = "JH", .bare = 0},
    {"trump 7s", .opt = 1, .kind = CMD_TRUMP, .card = "7S"},
    {"help", .opt = 1, .kind = CMD_HELP, .arg = ""},
    {"hello", .opt = 1, .kind = CMD_BAD, .word = "hello", .err = "unknown command \"hello\": try !help"},
    {"ah", .opt = 1, .kind = CMD_BAD, .err = "unknown command"},
    {"", .opt = 1, .kind = CMD_NONE},
    {"  \n", .opt = 1, .kind = CMD_NONE},
    {"!", .opt = 1, .kind = CMD_BAD, .err = "say a command"},
    {"\xFF", .opt = 1, .kind = CMD_BAD, .err = NOTTEXT},
    {"\0\0", 2, .opt = 1, .kind = CMD_BAD, .err = NOTTEXT},
    {"caps js, 9s", .opt = 1, .kind = CMD_CAPS, .cards = "JS 9S"},
    {"set caps off", .prefix = "cr:", .opt = 1, .kind = CMD_SET, .arg = "caps", .arg2 = "off"},
};

static const char *kind_name(cmd_kind k)
{
    return k == CMD_NONE ? "none" : k == CMD_BAD ? "bad" : cmd_name(k);
}

static int is_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int k = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
        if (k == 0) return 0;
        for (int i = 1; i < k; i++)
            if ((p[i] & 0xC0) != 0x80) return 0;
        p += k;
    }
    return 1;
}

static void cards_text(const cmd *c, char *buf, size_t len)
{
    buf[0] = 0;
    for (unsigned i = 0; i < c->ncards && i < CMD_MAX_CARDS; i++) {
        if (i) strncat(buf, " ", len - strlen(buf) - 1);
        strncat(buf, card_str(c->cards[i]), len - strlen(buf) - 1);
    }
}

static void check_invariants(const row *r, size_t i, const cmd *c)
{
    cr_expect(memchr(c->err, 0, sizeof c->err) && memchr(c->word, 0, sizeof c->word), "row %zu: unterminated", i);
    cr_expect_eq(c->pack, r->pack ? r->pack : CARD_COUNT, "row %zu: read from the pack of %d", i, c->pack);
    for (const char *p = c->word; *p; p++) cr_expect(!(*p >= 'A' && *p <= 'Z'), "row %zu: word %s", i, c->word);
    if (c->kind != CMD_BAD) {
        cr_expect_str_empty(c->err, "row %zu \"%s\": err set: %s", i, r->text, c->err);
        return;
    }
    cr_expect_str_not_empty(c->err, "row %zu \"%s\": BAD without a message", i, r->text);
    cr_expect_null(strchr(c->err, '\n'), "row %zu: message on two lines: %s", i, c->err);
    cr_expect_lt(strlen(c->err), CMD_ERR_MAX);
    cr_expect(is_utf8(c->err), "row %zu: message not UTF-8", i);
}

static void check_fields(const row *r, size_t i, const cmd *c)
{
    char got[128];
    switch (r->kind) {
    case CMD_JOIN:
    case CMD_BOT: cr_expect_eq(c->seat, r->seat, "row %zu \"%s\": seat %d, want %d", i, r->text, c->seat, r->seat); break;
    case CMD_NEW:
    case CMD_BID:
    case CMD_CUT: cr_expect_eq(c->amount, r->amount, "row %zu \"%s\": amount %d, want %d", i, r->text, c->amount, r->amount); break;
    case CMD_PLAY:
        cr_expect_eq(c->bare, r->bare, "row %zu \"%s\": bare %d", i, r->text, c->bare);
        /* fall through */
    case CMD_TRUMP: cr_expect_str_eq(card_str(c->card), r->card, "row %zu \"%s\": card %s", i, r->text, card_str(c->card)); break;
    case CMD_CAPS:
        cards_text(c, got, sizeof got);
        cr_expect_str_eq(got, r->cards, "row %zu \"%s\": caps [%s], want [%s]", i, r->text, got, r->cards);
        break;
    case CMD_EXCLUDE: cr_expect_eq(c->suit, r->suit, "row %zu \"%s\": suit %d", i, r->text, c->suit); break;
    case CMD_BAD: cr_expect(strstr(c->err, r->err) != NULL, "row %zu \"%s\": message \"%s\" lacks \"%s\"", i, r->text, c->err, r->err); break;
    default: break;
    }
    if (r->arg) cr_expect_str_eq(c->arg, r->arg, "row %zu \"%s\": arg \"%s\"", i, r->text, c->arg);
    if (r->arg2) cr_expect_str_eq(c->arg2, r->arg2, "row %zu \"%s\": arg2 \"%s\"", i, r->text, c->arg2);
    if (r->word) cr_expect_str_eq(c->word, r->word, "row %zu \"%s\": word \"%s\"", i, r->text, c->word);
}

Test(command, table)
{
    cr_assert_geq(sizeof rows / sizeof *rows, 100u);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const row *r = &rows[i];
        cmd c;
        memset(&c, 0xA5, sizeof c); /* whatever was there before must not show through */
        size_t len = r->len ? r->len : strlen(r->text);
        if (r->pack)
            cmd_parse_pack(r->text, len, r->prefix ? r->prefix : "!", r->opt, r->pack, &c);
        else
            cmd_parse(r->text, len, r->prefix ? r->prefix : "!", r->opt, &c);
        cr_expect_eq(c.kind, r->kind, "row %zu \"%s\": %s (%s), want %s", i, r->text, kind_name(c.kind), c.err,
                     kind_name(r->kind));
        check_invariants(r, i, &c);
        if (c.kind == r->kind) check_fields(r, i, &c);
    }
}

static void parse_str(const char *text, size_t len, const char *prefix, int opt, cmd *c)
{
    cmd_parse(text, len, prefix, opt, c);
    if (c->kind == CMD_BAD) cr_expect(strlen(c->err) > 0 && !strchr(c->err, '\n'));
}

Test(command, long_messages)
{
    static char text[10001];
    cmd c;
    memset(text, 'a', 10000);
    text[0] = '!';
    parse_str(text, 10000, "!", 0, &c);
    cr_expect_eq(c.kind, CMD_BAD);
    cr_expect(strstr(c.err, "that message is too long") != NULL, "%s", c.err);
    parse_str(text + 1, 9999, "!", 1, &c);
    cr_expect_eq(c.kind, CMD_BAD, "a long private message is addressed to the bot");
    parse_str(text + 1, 9999, "!", 0, &c);
    cr_expect_eq(c.kind, CMD_NONE, "a long chat message in a room is ignored quietly");

    /* CMD_TEXT_MAX itself is allowed, one more byte is not. */
    memset(text, ' ', sizeof text);
    memcpy(text, "!bid 160", 8);
    parse_str(text, CMD_TEXT_MAX, "!", 0, &c);
    cr_expect_eq(c.kind, CMD_BID);
    cr_expect_eq(c.amount, 160);
    parse_str(text, CMD_TEXT_MAX + 1, "!", 0, &c);
    cr_expect_eq(c.kind, CMD_BAD);

    /* A very long word is cut in the word field, and quoted short in the message. */
    memset(text, 'x', 200);
    text[0] = '!';
    parse_str(text, 200, "!", 0, &c);
    cr_expect_eq(c.kind, CMD_BAD);
    cr_expect_eq(strlen(c.word), CMD_ARG_MAX - 1);
    cr_expect_lt(strlen(c.err), 80u);
}

Test(command, long_word_cut_on_a_character)
{
    char text[300] = "!";
    for (int i = 0; i < 60; i++) strcat(text, "\xE2\x99\xA0"); /* ♠ ♠ ♠ … as one word */
    cmd c;
    parse_str(text, strlen(text), "!", 0, &c);
    cr_expect_eq(c.kind, CMD_BAD);
    cr_expect(is_utf8(c.word) && is_utf8(c.err), "word and message stay UTF-8");
    cr_expect_eq(strlen(c.word) % 3, 0u);
}

Test(command, length_not_nul)
{
    cmd c;
    parse_str("!bid 160XYZ", 8, "!", 0, &c);
    cr_expect_eq(c.kind, CMD_BID);
    cr_expect_eq(c.amount, 160);
    parse_str("JSX", 2, "!", 0, &c);
    cr_expect_eq(c.kind, CMD_PLAY);
    cr_expect_eq(c.card, CARD_MAKE(SUIT_S, RANK_J));
    parse_str(NULL, 5, "!", 1, &c);
    cr_expect_eq(c.kind, CMD_NONE);
}

Test(command, default_prefix)
{
    cmd c;
    parse_str("!pass", 5, NULL, 0, &c);
    cr_expect_eq(c.kind, CMD_PASS);
    parse_str("!pass", 5, "", 0, &c);
    cr_expect_eq(c.kind, CMD_PASS);
    parse_str("pass", 4, "", 0, &c);
    cr_expect_eq(c.kind, CMD_NONE, "an empty prefix does not make all chat a command");
}

Test(command, every_name_reads_back)
{
    for (int k = CMD_NEW; k < CMD_KIND_COUNT; k++) {
        char text[80];
        cmd c;
        snprintf(text, sizeof text, "!%s", cmd_name((cmd_kind)k));
        parse_str(text, strlen(text), "!", 0, &c);
        cr_expect(c.kind == (cmd_kind)k || c.kind == CMD_BAD, "%s gave %s", text, kind_name(c.kind));
        cr_expect_str_eq(c.word, cmd_name((cmd_kind)k));
        snprintf(text, sizeof text, "!help %s", cmd_name((cmd_kind)k));
        parse_str(text, strlen(text), "!", 0, &c);
        cr_expect_eq(c.kind, CMD_HELP, "%s", text);
        cr_expect_str_eq(c.arg, cmd_name((cmd_kind)k));
    }
    cr_expect_str_eq(cmd_name(CMD_NONE), "?");
    cr_expect_str_eq(cmd_name(CMD_BAD), "?");
    cr_expect_str_eq(cmd_name(CMD_KIND_COUNT), "?");
}

/* ---- help ---- */

static char help_buf[4096];

static const char *help(const char *topic, const char *prefix)
{
    return cmd_help(topic, prefix, help_buf, sizeof help_buf);
}

static int starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

Test(command, help_for_every_kind)
{
    for (int k = CMD_NEW; k < CMD_KIND_COUNT; k++) {
        const char *name = cmd_name((cmd_kind)k);
        char want[40], topic[40];
        const char *h = help(name, "!");
        cr_assert_not_null(h, "no help for %s", name);
        snprintf(want, sizeof want, "!%s", name);
        cr_expect(starts_with(h, want), "help %s starts: %s", name, h);
        const char *dot = strstr(h, ". ");
        cr_expect(!strchr(h, '\n') && dot && strchr(dot + 2, '.'), "help %s: one line, the usage then sentences: %s",
                  name, h);
        cr_expect(is_utf8(h));

        h = help(name, "cr:");
        snprintf(want, sizeof want, "cr:%s", name);
        cr_expect(h && starts_with(h, want), "help with prefix cr: %s", h);
        cr_expect_null(strstr(h, "~"), "template marker left in: %s", h);

        snprintf(topic, sizeof topic, "!%s", name);
        for (char *p = topic; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        h = help(topic, "!");
        snprintf(want, sizeof want, "!%s", name);
        cr_expect(h && starts_with(h, want), "help %s (prefix, capitals)", topic);
    }
}

Test(command, help_aliases_and_unknown)
{
    cr_expect(starts_with(help("ask", "!"), "!partner"));
    cr_expect(starts_with(help(" SPOILED ", "!"), "!spoilt"));
    cr_expect(starts_with(help("cr:ask", "cr:"), "cr:partner"));
    static const char *const unknown[] = {"frob", "!frob", "bid pass", "pcc", "\xFF", "none", "bad", "?"};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        cr_expect_null(help(unknown[i], "!"), "help for \"%s\" should be NULL", unknown[i]);
    char tiny[4];
    cr_expect_null(cmd_help("bid", "!", NULL, 10));
    cr_expect_null(cmd_help("bid", "!", tiny, 0));
}

Test(command, help_list)
{
    const char *h = help(NULL, "!");
    cr_assert_not_null(h);
    cr_expect_str_eq(help("", "!"), h);
    int lines = 1;
    for (const char *p = h; *p; p++) lines += *p == '\n';
    cr_expect_eq(lines, CMD_KIND_COUNT - CMD_NEW, "a heading and one line per command but admin:\n%s", h);
    for (int k = CMD_NEW; k < CMD_KIND_COUNT; k++) {
        char want[40];
        snprintf(want, sizeof want, "\n!%s ", cmd_name((cmd_kind)k));
        if (k == CMD_ADMIN) cr_expect(strstr(h, want) == NULL, "the list shows %s to everybody", want + 1);
        else cr_expect(strstr(h, want) != NULL, "list lacks %s", want + 1);
    }
    cr_expect(strstr(h, "!bid N|pcc \xE2\x80\x94 bid N points (60 means 160) or Partner Close Caps"));
    h = help("  ", "cr:");
    cr_expect(h && strstr(h, "\ncr:bid ") && !strstr(h, "\n!"), "list with cr: %s", h);
}

/* The one line help says in a room: every command word, and where the rest went. */
Test(command, help_line_for_a_room)
{
    char line[1024], small[40];
    cr_assert_eq(cmd_help_line("!", line, sizeof line), line);
    cr_expect_null(strchr(line, '\n'));
    cr_expect(starts_with(line, "Commands: new, join, "), "%s", line);
    for (int k = CMD_NEW; k < CMD_ADMIN; k++) {
        char word[40];
        snprintf(word, sizeof word, " %s%s", cmd_name((cmd_kind)k), k == CMD_ADMIN - 1 ? "." : ",");
        cr_expect(strstr(line, word), "the line lacks%s: %s", word, line);
    }
    cr_expect_null(strstr(line, "admin"), "the admins' command is not shown to everybody: %s", line);
    cr_expect(strstr(line, "!help COMMAND tells more of one; I sent you the list privately."), "%s", line);
    cmd_help_line("cr:", line, sizeof line);
    cr_expect(strstr(line, "cr:help COMMAND") && !strchr(line, '~'), "%s", line);
    cr_assert_eq(cmd_help_line("!", small, sizeof small), small);
    cr_expect_lt(strlen(small), sizeof small);
    cr_expect(is_utf8(small));
    cr_expect_null(cmd_help_line("!", small, 0));
}

Test(command, help_says_what_matters)
{
    cr_expect(strstr(help("trump", "!"), "privately"));
    cr_expect(strstr(help("play", "!"), "face-down") && strstr(help("play", "!"), "privately"));
    cr_expect(strstr(help("caps", "!"), "remaining") && strstr(help("caps", "!"), "order"));
    cr_expect(strstr(help("rules", "!"), "options") && strstr(help("rules", "!"), "check"));
    cr_expect(strstr(help("notify", "!"), "privately") && strstr(help("notify", "!"), "Matrix"));
    cr_expect(strstr(help("bid", "!"), "60") && strstr(help("bid", "!"), "!bid pcc"));
    cr_expect(strstr(help("join", "!"), "south, east, north, west"));
}

Test(command, help_small_buffers)
{
    char full[4096], buf[4096];
    strcpy(full, help(NULL, "!"));
    for (size_t len = 1; len <= strlen(full) + 1; len++) {
        memset(buf, 'Z', sizeof buf);
        cr_assert_not_null(cmd_help(NULL, "!", buf, len));
        size_t n = strlen(buf);
        cr_assert_lt(n, len);
        cr_assert(strncmp(buf, full, n) == 0 && (full[n] == '\n' || full[n] == 0 || n == 0 || len < 60),
                  "whole lines only (len %zu): %s", len, buf);
        cr_assert(is_utf8(buf));
    }
    for (size_t len = 1; len < 200; len++) {
        cr_assert_not_null(cmd_help("bid", "!", buf, len));
        cr_assert_lt(strlen(buf), len);
        cr_assert(is_utf8(buf), "cut inside a character at len %zu", len);
    }
}

Test(command, seat_names)
{
    cr_expect_str_eq(cmd_seat_name(0, 4), "South");
    cr_expect_str_eq(cmd_seat_name(1, 4), "East");
    cr_expect_str_eq(cmd_seat_name(2, 4), "North");
    cr_expect_str_eq(cmd_seat_name(3, 4), "West");
    cr_expect_str_eq(cmd_seat_name(-1, 4), "?");
    cr_expect_str_eq(cmd_seat_name(4, 4), "?");
    /* six seats have numbers, no compass points (R-SIX-SEATS) */
    cr_expect_str_eq(cmd_seat_name(0, 6), "seat 1");
    cr_expect_str_eq(cmd_seat_name(3, 6), "seat 4");
    cr_expect_str_eq(cmd_seat_name(5, 6), "seat 6");
    cr_expect_str_eq(cmd_seat_name(6, 6), "?");
    cr_expect_str_eq(cmd_seat_name(-1, 6), "?");
}
