/* command.c — chat text to commands (design.md, Fixed interfaces 3), and the help for them.
 *
 * A message is first cleaned into a bounded stack buffer: it must be valid UTF-8 without
 * control characters, and every run of blanks (space, tab, newline, no-break space) becomes
 * one space, trimmed at both ends. After that every argument reader works on single-space
 * separated words, so "!BID\t 70 \n" and "!bid 70" are the same command. One const table
 * holds each command's word, alias, argument shape and help text, so parsing and help can
 * never disagree about which commands exist.
 *
 * Messages without the prefix (outside private chat) are people talking to each other: the
 * only thing taken from them is a message that is exactly one card ("JH", "10 of hearts"),
 * and never a bare number or an English word that happens to read as a card ("ah", "as"). */
#include "command.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "g304.h"
#include "grid.h"

#define CMD_MAX_CAPS 8      /* a caps order lists the caller's remaining cards: at most 8 */
#define CMD_QUOTE_MAX 24    /* bytes of the player's text quoted back in a message */
#define CMD_CARD_WORDS 4    /* a card is at most this many words ("jack of spades") */

/* What follows a command word. */
typedef enum {
    CMD_ARGS_NONE,  /* nothing */
    CMD_ARGS_GAME,  /* optional game name */
    CMD_ARGS_SEAT,  /* optional seat */
    CMD_ARGS_CUT,   /* cut point */
    CMD_ARGS_BID,   /* amount or pcc */
    CMD_ARGS_CARD,  /* one card */
    CMD_ARGS_CARDS, /* caps order */
    CMD_ARGS_USER,  /* optional player name */
    CMD_ARGS_SET,   /* option and value */
    CMD_ARGS_TOPIC, /* optional command word */
    CMD_ARGS_REST,  /* the rest of the line, required */
    CMD_ARGS_SUIT,  /* one suit */
    CMD_ARGS_SWITCH,/* optional on or off */
    CMD_ARGS_ADMIN, /* what to do and its argument */
} cmd_args;

/* One command. In detail, '~' stands for the prefix. */
typedef struct {
    const char *name;
    const char *alias;   /* another word for it, or NULL */
    cmd_args args;
    const char *usage;   /* what follows the name in the usage line */
    const char *summary; /* the one line in the list */
    const char *detail;  /* one to four sentences */
} cmd_spec;

static const cmd_spec cmd_specs[CMD_KIND_COUNT] = {
    [CMD_NEW] = {"new", NULL, CMD_ARGS_GAME, " [304 [6]|grid]", "open a new table in this room",
                 "Opens a table for 304 (the default) or ContractGrid (~new grid); ~new 304 6 opens 304 for "
                 "six players in two teams of three. Players then take seats with ~join and someone says "
                 "~start."},
    [CMD_JOIN] = {"join", NULL, CMD_ARGS_SEAT, " [SEAT]", "take a seat at the table",
                  "Seats are 1-4 or south, east, north, west (s, e, n, w), in playing order; South "
                  "and North play against East and West. At a six-player 304 table the seats are 1-6, "
                  "and the odd seats play against the even ones; at a ContractGrid table they are 1-3. "
                  "Without a seat you get the first free one."},
    [CMD_LEAVE] = {"leave", NULL, CMD_ARGS_NONE, "", "give up your seat",
                   "Leaves your seat at this table; you can ~join again later."},
    [CMD_BOT] = {"bot", NULL, CMD_ARGS_SEAT, " [SEAT]", "put a computer player in a seat",
                 "Seats are 1-4 or south, east, north, west (1-6 at a six-player 304 table, 1-3 at "
                 "ContractGrid); without a seat the first free one is taken. Example: ~bot west."},
    [CMD_START] = {"start", NULL, CMD_ARGS_NONE, "", "deal the first hand",
                   "Starts the game once every seat is taken (by people or by ~bot). At a ContractGrid "
                   "table every player must also have arranged a grid (~grid); computer players arrange "
                   "their own."},
    [CMD_ABORT] = {"abort", NULL, CMD_ARGS_NONE, "", "stop the game at this table",
                   "Ends the game at this table; a hand in progress is not scored."},
    [CMD_BACK] = {"back", NULL, CMD_ARGS_NONE, "", "take your seat back from the computer player",
                  "When a computer player has been playing your seat, this gives you your cards back."},
    [CMD_CUT] = {"cut", NULL, CMD_ARGS_CUT, " N", "cut the pack at N (0-31, 0 = no cut)",
                 "Only the player on the dealer's left cuts, and only when the table's cut option is "
                 "on; the six-player pack of 36 cards is cut at 0-35. Example: ~cut 12."},
    [CMD_BID] = {"bid", NULL, CMD_ARGS_BID, " N|pcc",
                 "bid N points (60 means 160) or Partner Close Caps",
                 "Bids go from 160 to 300; 60-90 are short for 160-190 and 100-150 for 200-250. "
                 "In the eight-card round ~bid pcc bids Partner Close Caps, the highest bid. "
                 "Examples: ~bid 170, ~bid 70, ~bid 250. At a ContractGrid table ~bid a1 b2 c3 d4 "
                 "is the same as ~mark."},
    [CMD_PASS] = {"pass", NULL, CMD_ARGS_NONE, "", "do not bid",
                  "Passes your turn in the bidding."},
    [CMD_PARTNER] = {"partner", "ask", CMD_ARGS_NONE, "", "ask your partner to bid for you",
                     "Only in the four-card round, instead of bidding or passing (also ~ask). "
                     "Afterwards neither of you may bid less than 200. Not with six players."},
    [CMD_REDEAL] = {"redeal", NULL, CMD_ARGS_NONE, "", "ask for a new deal (first four cards under 15 points)",
                    "Only the first to speak, before bidding or passing, and only when those four "
                    "cards are worth less than 15 points."},
    [CMD_TRUMP] = {"trump", NULL, CMD_ARGS_CARD, " CARD", "choose your trump indicator (privately)",
                   "As trump maker you lay one of your cards face down as the indicator; its suit "
                   "is trump. Send this privately to the bot, never in the room. Example: ~trump 7S."},
    [CMD_OPEN] = {"open", NULL, CMD_ARGS_NONE, "", "play an open game: show the indicator",
                  "The trump maker may open the game before the first lead: the indicator is shown "
                  "to everyone and goes back to his hand."},
    [CMD_PLAY] = {"play", NULL, CMD_ARGS_CARD, " CARD", "play a card (the card alone works too)",
                  "On your turn you may also just say the card: JH, 10h, J\xE2\x99\xA5 or jack of "
                  "hearts; the ContractGrid joker is JK or joker. A face-down play (a trump when you "
                  "cannot follow in a closed 304 game) must be sent privately."},
    [CMD_CAPS] = {"caps", NULL, CMD_ARGS_CARDS, " CARD...", "call Caps: your side wins every trick left",
                  "List all your remaining cards in the order you will play them, separated by "
                  "spaces or commas, e.g. ~caps JH 9H AH. Your cards are shown to all and played in "
                  "that order; a wrong call costs tokens."},
    [CMD_SPOILT] = {"spoilt", "spoiled", CMD_ARGS_NONE, "", "declare spoilt trumps",
                    "When the trump maker's opponents hold no trump at all, the hand is void and the "
                    "same dealer deals again (also ~spoiled). Declaring it when it is not so is a "
                    "violation."},
    [CMD_HAND] = {"hand", NULL, CMD_ARGS_NONE, "", "show your cards again (privately)",
                  "Sends you your cards in a private message."},
    [CMD_TABLE] = {"table", NULL, CMD_ARGS_NONE, "", "show the table: seats, bids, trick, score",
                   "Shows who sits where, the bidding, the trick on the table and the score; at "
                   "ContractGrid also every grid with its marked cells."},
    [CMD_LAST] = {"last", NULL, CMD_ARGS_NONE, "", "show the last trick",
                  "Shows the cards of the trick that was gathered last, and who won it."},
    [CMD_HINT] = {"hint", NULL, CMD_ARGS_NONE, "", "what the expert computer player would do now (privately)",
                  "At a 304 table whose option hints is on (~set hints on before the start), on your turn: "
                  "the move the expert computer player would make in your seat, from only what you may "
                  "know, and for a card the card points it expects for your team. Sent to you privately."},
    [CMD_REVIEW] = {"review", NULL, CMD_ARGS_NONE, "", "the last hand's costly cards (double dummy)",
                    "After a 304 hand: for each player, the cards that cost his team card points against "
                    "best play with every card known, with the card that would have kept them. Posted to "
                    "the room once per hand. After a match's end its last hand is reviewed in its room "
                    "until a new table opens there."},
    [CMD_STANDINGS] = {"standings", NULL, CMD_ARGS_USER, " [@USER]", "token standings for the room or one player",
                       "Without a name it shows this room's standings. Example: ~standings @alice. For "
                       "ContractGrid a match is a whole game, won means first place, and hands counts the "
                       "hands played; during a game it also shows the scores and who risks the cap."},
    [CMD_RULES] = {"rules", NULL, CMD_ARGS_NONE, "", "this table's options and where to read the rules",
                   "Lists the table's rule options (change them with ~set before the start), where the "
                   "rules are written out in full, and how to check each deal against the seed the bot "
                   "reveals after the hand."},
    [CMD_NOTIFY] = {"notify", NULL, CMD_ARGS_SWITCH, " [on|off]", "your hand privately on each of your turns, or not",
                    "On, the bot sends you your hand privately whenever it is your turn; off, the room's line "
                    "naming you is all (on Matrix it mentions you, which notifies you). It is on at first, "
                    "except on Matrix. A card that would go face down and the indicator are always asked for "
                    "privately. Without on or off it tells you which you have; it is kept for every table."},
    [CMD_SET] = {"set", NULL, CMD_ARGS_SET, " OPTION VALUE", "change a table option",
                 "The options and their values are listed by ~rules. Examples: ~set caps strict (304), "
                 "~set players 6 (304 for six; ~set players 4 again while seats 5 and 6 are empty), "
                 "~set level expert (304: how well the computer players play), "
                 "~set cap 300 or ~set small true (ContractGrid)."},
    [CMD_HELP] = {"help", NULL, CMD_ARGS_TOPIC, " [COMMAND]", "this list, or more about one command",
                  "Example: ~help bid. In a private message to the bot the ~ may be left out."},
    [CMD_GRID] = {"grid", NULL, CMD_ARGS_REST, " CONTRACTS...|random", "ContractGrid: arrange your grid",
                  "Before the first hand, place the 16 contracts on your 4x4 grid row by row from a1 "
                  "(a1 b1 c1 d1, then a2 ... d4), e.g. ~grid zero one two first second third different "
                  "soloist partner alltrump notrump spades hearts diamonds clubs play, or let ~grid "
                  "random do it. With the small option the grid is 3x3 with the first nine. Grids are "
                  "public and shown in the room."},
    [CMD_EXCLUDE] = {"exclude", NULL, CMD_ARGS_SUIT, " SUIT", "ContractGrid: name a suit that is not to be trump",
                     "Suits are S, H, D, C, \xE2\x99\xA0\xE2\x99\xA5\xE2\x99\xA6\xE2\x99\xA3 or names "
                     "like spades; a suit already named cannot be named again, and the one left is "
                     "trump. Example: ~exclude hearts."},
    [CMD_MARK] = {"mark", NULL, CMD_ARGS_REST, " CELL...", "ContractGrid: bid cells of your grid",
                  "Choose the cells of your grid you bid for this hand: exactly the table's bids "
                  "option (4 by default, 3 with small). Example: ~mark a1 b2 c3 d4 (or ~bid a1 b2 c3 "
                  "d4). A bid whose contract you make scores 5 and marks its cell."},
    [CMD_ADMIN] = {"admin", NULL, CMD_ARGS_ADMIN, " list|close TABLE|leave ROOM|ignore USER|unignore USER",
                   "for the bot's admins, privately",
                   "Only the people named in the bot's admins setting, in a private message: ~admin list "
                   "shows every open table, ~admin close 12 closes table 12 (its results stay in the "
                   "standings), ~admin leave ROOM closes the room's table and leaves the room, ~admin "
                   "ignore USER makes the bot ignore someone until ~admin unignore USER."},
};

/* Whether the lists of all commands leave kind out (~help COMMAND still explains it): the
 * admins' command is not for everybody. */
static int cmd_unlisted(int kind) { return kind == CMD_ADMIN; }

/* What ~admin does, and whether it takes an argument. */
static const struct {
    const char *word;
    int takes;
} cmd_admin_words[] = {{"list", 0}, {"close", 1}, {"leave", 1}, {"ignore", 1}, {"unignore", 1}};

static const char *const cmd_seat_names[4] = {"South", "East", "North", "West"};
static const char *const cmd_seat_numbers[6] = {"seat 1", "seat 2", "seat 3", "seat 4", "seat 5", "seat 6"};

/* ---- text helpers ---- */

static int cmd_is_blank(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static char cmd_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t cmd_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c >= 0xE0 && c <= 0xEF) k = 3;
    else if (c >= 0xF0 && c <= 0xF4) k = 4;
    else return 0;
    if (n < k) return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xF0 && s[1] < 0x90)) return 0; /* overlong */
    if (c == 0xED && s[1] >= 0xA0) return 0;                                /* surrogate */
    if (c == 0xF4 && s[1] >= 0x90) return 0;                                /* > U+10FFFF */
    return k;
}

/* The longest m <= max (and <= n) that ends on a character boundary of valid UTF-8 s. */
static size_t cmd_utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max) return n;
    size_t m = max;
    while (m > 0 && ((unsigned char)s[m] & 0xC0) == 0x80) m--;
    return m;
}

/* Copies src into dst[0..n) with one space for each run of blanks, trimmed. Returns the
 * length, or -1 if src is not text: invalid UTF-8, NUL or other control characters.
 * dst needs at most n + 1 bytes. */
static int cmd_normalize(const char *src, size_t n, char *dst, size_t cap, size_t *outn)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    int gap = 0;
    for (size_t i = 0; i < n;) {
        size_t k = cmd_utf8_len(s + i, n - i);
        if (k == 0) return -1;
        int nbsp = k == 2 && s[i] == 0xC2 && s[i + 1] == 0xA0;
        if ((k == 1 && cmd_is_blank(s[i])) || nbsp) {
            gap = 1;
            i += k;
            continue;
        }
        if ((k == 1 && (s[i] < 0x20 || s[i] == 0x7F)) || (k == 2 && s[i] == 0xC2 && s[i + 1] < 0xA0))
            return -1; /* C0 and C1 controls */
        if (o + (gap && o) + k >= cap) return -1;
        if (gap && o) dst[o++] = ' ';
        gap = 0;
        memcpy(dst + o, s + i, k);
        o += k;
        i += k;
    }
    dst[o] = 0;
    *outn = o;
    return 0;
}

/* Whether s (n bytes) starts with p, ASCII case-insensitively. */
static int cmd_starts_with(const char *s, size_t n, const char *p)
{
    size_t pn = strlen(p);
    if (pn > n) return 0;
    for (size_t i = 0; i < pn; i++)
        if (cmd_lower(s[i]) != cmd_lower(p[i])) return 0;
    return 1;
}

static int cmd_equals(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && cmd_starts_with(s, n, word);
}

/* Splits the first word off a normalized text: *w, *wn is the word, the text moves past it. */
static int cmd_next_word(const char **s, size_t *n, const char **w, size_t *wn)
{
    if (*n == 0) return 0;
    const char *sp = memchr(*s, ' ', *n);
    *w = *s;
    *wn = sp ? (size_t)(sp - *s) : *n;
    *s += *wn + (sp != NULL);
    *n -= *wn + (sp != NULL);
    return 1;
}

static size_t cmd_count_words(const char *s, size_t n)
{
    size_t count = 0;
    const char *w;
    size_t wn;
    while (cmd_next_word(&s, &n, &w, &wn)) count++;
    return count;
}

/* Copies text into dst (cap bytes) lower-cased if asked; -1 if it does not fit. */
static int cmd_copy(char *dst, size_t cap, const char *s, size_t n, int lower)
{
    if (n >= cap) return -1;
    for (size_t i = 0; i < n; i++) dst[i] = lower ? cmd_lower(s[i]) : s[i];
    dst[n] = 0;
    return 0;
}

/* Reads a number of at most `digits` digits; -1 if it is not one. */
static long cmd_number(const char *s, size_t n, size_t digits)
{
    while (n > 1 && *s == '0') s++, n--;
    if (n == 0 || n > digits) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* The command a word names (by its name or alias, any case), or CMD_NONE. */
static cmd_kind cmd_lookup(const char *w, size_t n)
{
    for (int k = CMD_NEW; k < CMD_KIND_COUNT; k++) {
        const cmd_spec *sp = &cmd_specs[k];
        if (cmd_equals(w, n, sp->name) || (sp->alias && cmd_equals(w, n, sp->alias))) return (cmd_kind)k;
    }
    return CMD_NONE;
}

/* Help topics may be written with the prefix ("help !bid"). */
static void cmd_skip_prefix(const char **s, size_t *n, const char *prefix)
{
    if (cmd_starts_with(*s, *n, prefix)) *s += strlen(prefix), *n -= strlen(prefix);
}

/* ---- results ---- */

static void cmd_reset(cmd *out)
{
    memset(out, 0, sizeof *out);
    out->kind = CMD_NONE;
    out->seat = -1;
    out->suit = -1;
    out->card = CARD_NONE;
    memset(out->cards, CARD_NONE, sizeof out->cards);
}

/* Makes out a CMD_BAD with a one-line message (the command word is kept). The message is
 * formatted before out is cleared, so arguments may point into out. */
__attribute__((format(printf, 2, 3))) static void cmd_bad(cmd *out, const char *fmt, ...)
{
    char word[CMD_ARG_MAX], err[CMD_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(err, sizeof err, fmt, ap) < 0) err[0] = 0;
    va_end(ap);
    uint8_t pack = out->pack;
    memcpy(word, out->word, sizeof word);
    cmd_reset(out);
    memcpy(out->word, word, sizeof word);
    out->pack = pack;
    out->kind = CMD_BAD;
    /* The pieces are text; only a cut-off tail can leave half a character: drop it. */
    size_t n = strlen(err), i = 0, k;
    while (i < n && (k = cmd_utf8_len((const unsigned char *)err + i, n - i)) != 0) {
        if (k == 1 && (unsigned char)err[i] < 0x20) err[i] = ' ';
        i += k;
    }
    err[i] = 0;
    snprintf(out->err, sizeof out->err, "%s", i ? err : "that could not be read as a command");
}

/* How much of the player's text to quote back. */
static int cmd_quote_len(const char *s, size_t n) { return (int)cmd_utf8_cut(s, n, CMD_QUOTE_MAX); }

/* ---- argument readers: s, n is the normalized text after the command word ---- */

static void cmd_read_none(cmd *out, size_t n, const char *prefix)
{
    if (n) cmd_bad(out, "%s takes no argument: just %s%s", out->word, prefix, out->word);
}

/* "304", "grid", and for 304 the players: "304 6" (R-SIX-…) or "304 4". */
static void cmd_read_game(cmd *out, const char *s, size_t n, const char *prefix)
{
    const char *game = s;
    size_t gn = 0;
    cmd_next_word(&s, &n, &game, &gn);
    long players = n ? cmd_number(s, n, 1) : 0;
    if ((gn == 0 || cmd_equals(game, gn, "304")) && players >= 0) {
        strcpy(out->arg, "304");
    } else if ((cmd_equals(game, gn, "grid") || cmd_equals(game, gn, "contractgrid")) && players >= 0) {
        strcpy(out->arg, "grid");
    } else {
        cmd_bad(out, "the games are 304 and grid (ContractGrid): %snew 304 or %snew grid", prefix, prefix);
        return;
    }
    if (n == 0) return;
    if (strcmp(out->arg, "grid") == 0)
        cmd_bad(out, "ContractGrid is for three players: %snew grid", prefix);
    else if (players != 4 && players != 6)
        cmd_bad(out, "304 is for four or six players: %snew 304, or %snew 304 6 for two teams of three", prefix,
                prefix);
    else
        out->amount = (uint16_t)players;
}

static int cmd_seat_word(const char *s, size_t n)
{
    static const char *const words[4] = {"south", "east", "north", "west"};
    if (n == 1 && s[0] >= '1' && s[0] <= '6') return s[0] - '1';
    for (int i = 0; i < 4; i++)
        if (cmd_equals(s, n, words[i]) || (n == 1 && cmd_lower(s[0]) == words[i][0])) return i;
    return -1;
}

static void cmd_read_seat(cmd *out, const char *s, size_t n, const char *prefix)
{
    out->seat = -1;
    if (n == 0) return;
    int seat = cmd_seat_word(s, n);
    if (seat < 0)
        cmd_bad(out, "seats are 1-4 or south, east, north, west (like %s%s north), and 1-6 at a six-player table",
                prefix, out->word);
    else
        out->seat = seat;
}

static void cmd_read_cut(cmd *out, const char *s, size_t n, const char *prefix)
{
    long v = cmd_number(s, n, 2);
    if (v < 0 || v > out->pack - 1)
        cmd_bad(out, "the cut is a number from 0 to %d (0 = no cut), like %scut 12", out->pack - 1, prefix);
    else
        out->amount = (uint16_t)v;
}

static void cmd_read_rest(cmd *out, const char *s, size_t n, const char *prefix);

/* R-B4-AMOUNT and the short forms of the rules: 60..90 mean 160..190, 100..150 mean
 * 200..250. Whether a bid is a legal step (multiples of 10, or of 5 above 200) is the
 * table's business; a number that is no bid in any form (95, 155, 301) is refused here. */
static void cmd_read_bid(cmd *out, const char *s, size_t n, const char *prefix)
{
    if (cmd_equals(s, n, "pcc") || cmd_equals(s, n, "partner close caps")) {
        out->amount = G304_PCC;
        return;
    }
    if (n >= 2 && cmd_lower(s[0]) >= 'a' && cmd_lower(s[0]) <= 'z' && s[1] >= '0' && s[1] <= '9') {
        out->kind = CMD_MARK; /* ContractGrid: "bid a1 b2 c3 d4" bids cells */
        cmd_read_rest(out, s, n, prefix);
        return;
    }
    long v = cmd_number(s, n, 6);
    if (v < 0) {
        cmd_bad(out, "a bid is a number like 160 (or 60), or pcc: %sbid 160", prefix);
        return;
    }
    if ((v >= 60 && v <= 90) || (v >= 100 && v <= 150)) v += 100;
    if (v < 160 || v > 300)
        cmd_bad(out, "bids go from 160 to 300 (60-90 mean 160-190, 100-150 mean 200-250), or pcc");
    else
        out->amount = (uint16_t)v;
}

/* Whether the text names the ContractGrid joker ("JK", "joker", U+1F0CF). */
static int cmd_is_joker(const char *s, size_t n)
{
    card_t c;
    return grid_card_parse(s, n, &c, NULL, 0) == 0 && c == GRID_JOKER;
}

static void cmd_read_card(cmd *out, const char *s, size_t n, const char *prefix)
{
    if (n == 0) {
        cmd_bad(out, "%s takes a card, like %s%s JS, 10h, J\xE2\x99\xA0 or jack of spades", out->word,
                prefix, out->word);
        return;
    }
    char err[CMD_ERR_MAX];
    if (out->kind == CMD_PLAY && cmd_is_joker(s, n)) {
        out->joker = 1;
        out->card = 0;
        return;
    }
    if (card_parse_pack(s, n, out->pack, &out->card, err, sizeof err) < 0) cmd_bad(out, "%s", err);
}

/* Bytes of the next `words` words at s that are not split by a comma; 0 if there are fewer. */
static size_t cmd_caps_span(const char *s, size_t n, int words)
{
    size_t i = 0;
    for (int w = 0; w < words; w++) {
        if (w > 0) {
            if (i >= n || s[i] != ' ') return 0;
            i++;
        }
        size_t start = i;
        while (i < n && s[i] != ' ' && s[i] != ',') i++;
        if (i == start) return 0;
    }
    return i;
}

/* Reads one card of a caps list at s: the shortest run of words that is a card. */
static size_t cmd_caps_card(cmd *out, const char *s, size_t n, card_t *c)
{
    for (int w = 1; w <= CMD_CARD_WORDS; w++) {
        size_t span = cmd_caps_span(s, n, w);
        if (span == 0) break;
        if (card_parse_pack(s, span, out->pack, c, NULL, 0) == 0) return span;
    }
    char err[CMD_ERR_MAX];
    card_parse_pack(s, cmd_caps_span(s, n, 1), out->pack, c, err, sizeof err);
    cmd_bad(out, "%s", err);
    return 0;
}

static int cmd_caps_add(cmd *out, card_t c)
{
    char pretty[CARD_TEXT_MAX];
    for (unsigned i = 0; i < out->ncards; i++) {
        if (out->cards[i] == c) {
            cmd_bad(out, "%s is listed twice: list each of your remaining cards once, in playing order",
                    card_pretty(c, pretty));
            return -1;
        }
    }
    if (out->ncards == CMD_MAX_CAPS) {
        cmd_bad(out, "caps lists at most %d cards: your remaining cards in playing order", CMD_MAX_CAPS);
        return -1;
    }
    out->cards[out->ncards++] = c;
    return 0;
}

static void cmd_read_cards(cmd *out, const char *s, size_t n, const char *prefix)
{
    (void)prefix;
    size_t i = 0;
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == ',')) i++;
        if (i == n) return;
        card_t c;
        size_t used = cmd_caps_card(out, s + i, n - i, &c);
        if (used == 0 || cmd_caps_add(out, c) < 0) return;
        i += used;
    }
}

static void cmd_read_user(cmd *out, const char *s, size_t n, const char *prefix)
{
    if (cmd_copy(out->arg, sizeof out->arg, s, n, 0) < 0)
        cmd_bad(out, "that name is too long: %sstandings @user, or %sstandings alone for the room", prefix,
                prefix);
}

static void cmd_read_set(cmd *out, const char *s, size_t n, const char *prefix)
{
    const char *opt;
    size_t on;
    if (!cmd_next_word(&s, &n, &opt, &on) || n == 0 || cmd_copy(out->arg, sizeof out->arg, opt, on, 1) < 0) {
        cmd_bad(out, "set takes an option and a value, like %sset caps strict (%srules lists them)", prefix,
                prefix);
        return;
    }
    if (cmd_copy(out->arg2, sizeof out->arg2, s, n, 0) < 0)
        cmd_bad(out, "that value is too long: %srules lists the options and their values", prefix);
}

static void cmd_read_topic(cmd *out, const char *s, size_t n, const char *prefix)
{
    if (n == 0) return;
    if (cmd_count_words(s, n) > 1) {
        cmd_bad(out, "help takes one command, like %shelp bid", prefix);
        return;
    }
    const char *topic = s;
    size_t tn = n;
    cmd_skip_prefix(&topic, &tn, prefix);
    if (cmd_lookup(topic, tn) == CMD_NONE)
        cmd_bad(out, "there is no command \"%.*s\": %shelp lists them", cmd_quote_len(s, n), s, prefix);
    else
        cmd_copy(out->arg, sizeof out->arg, topic, tn, 1); /* fits: it equals a command word */
}

/* grid and mark: cells and contract names, lower-cased (they are case-insensitive). */
static void cmd_read_rest(cmd *out, const char *s, size_t n, const char *prefix)
{
    if (n == 0)
        cmd_bad(out, "%s needs %s: see %shelp %s", out->word,
                out->kind == CMD_GRID ? "your 16 contracts or random" : "cells like a1 b2", prefix, out->word);
    else if (cmd_copy(out->arg2, sizeof out->arg2, s, n, 1) < 0)
        cmd_bad(out, "that is too long for %s%s: see %shelp %s", prefix, out->word, prefix, out->word);
}

static void cmd_read_suit(cmd *out, const char *s, size_t n, const char *prefix)
{
    if (n == 0 || suit_parse(s, n, &out->suit) < 0)
        cmd_bad(out,
                "%sexclude takes a suit: S, H, D, C, "
                "\xE2\x99\xA0\xE2\x99\xA5\xE2\x99\xA6\xE2\x99\xA3 or a name like spades",
                prefix);
}

static void cmd_read_admin(cmd *out, const char *s, size_t n, const char *prefix)
{
    const char *w, *arg;
    size_t wn, an;
    int known = -1;
    if (cmd_next_word(&s, &n, &w, &wn))
        for (size_t i = 0; i < sizeof cmd_admin_words / sizeof *cmd_admin_words; i++)
            if (cmd_equals(w, wn, cmd_admin_words[i].word)) known = (int)i;
    int takes = known >= 0 && cmd_admin_words[known].takes;
    if (known < 0 || (takes ? cmd_count_words(s, n) != 1 : n != 0)) {
        cmd_bad(out, "admin takes list, close TABLE, leave ROOM, ignore USER or unignore USER: see %shelp admin",
                prefix);
        return;
    }
    strcpy(out->arg, cmd_admin_words[known].word);
    if (!takes) return;
    cmd_next_word(&s, &n, &arg, &an);
    if (cmd_copy(out->arg2, sizeof out->arg2, arg, an, 0) < 0)
        cmd_bad(out, "that name is too long for %sadmin %s", prefix, out->arg);
    else if (known == 1 && cmd_number(arg, an, 18) < 1)
        cmd_bad(out, "admin close takes a table number, like %sadmin close 12", prefix);
}

static void cmd_read_switch(cmd *out, const char *s, size_t n, const char *prefix)
{
    if (n == 0) return;
    if (cmd_equals(s, n, "on") || cmd_equals(s, n, "off"))
        cmd_copy(out->arg, sizeof out->arg, s, n, 1);
    else
        cmd_bad(out, "%s takes on or off: %s%s off", out->word, prefix, out->word);
}

static void cmd_read_args(cmd *out, const cmd_spec *sp, const char *s, size_t n, const char *prefix)
{
    switch (sp->args) {
    case CMD_ARGS_NONE: cmd_read_none(out, n, prefix); break;
    case CMD_ARGS_GAME: cmd_read_game(out, s, n, prefix); break;
    case CMD_ARGS_SEAT: cmd_read_seat(out, s, n, prefix); break;
    case CMD_ARGS_CUT: cmd_read_cut(out, s, n, prefix); break;
    case CMD_ARGS_BID: cmd_read_bid(out, s, n, prefix); break;
    case CMD_ARGS_CARD: cmd_read_card(out, s, n, prefix); break;
    case CMD_ARGS_CARDS: cmd_read_cards(out, s, n, prefix); break;
    case CMD_ARGS_USER: cmd_read_user(out, s, n, prefix); break;
    case CMD_ARGS_SET: cmd_read_set(out, s, n, prefix); break;
    case CMD_ARGS_TOPIC: cmd_read_topic(out, s, n, prefix); break;
    case CMD_ARGS_REST: cmd_read_rest(out, s, n, prefix); break;
    case CMD_ARGS_SUIT: cmd_read_suit(out, s, n, prefix); break;
    case CMD_ARGS_SWITCH: cmd_read_switch(out, s, n, prefix); break;
    case CMD_ARGS_ADMIN: cmd_read_admin(out, s, n, prefix); break;
    }
}

/* ---- the message ---- */

/* Words people say that also read as cards: taken as chat unless written in capitals. */
static int cmd_is_chat_word(const char *s, size_t n)
{
    static const char *const words[] = {"ah", "as", "ad"};
    if (n != 2 || (s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z')) return 0;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (cmd_equals(s, n, words[i])) return 1;
    return 0;
}

/* A message that is just a card; bare when it came without the prefix. */
static int cmd_try_card(cmd *out, const char *s, size_t n, int bare)
{
    card_t c;
    if (bare && cmd_is_chat_word(s, n)) return 0;
    if (cmd_is_joker(s, n) && (unsigned char)s[0] < 0x80) { /* JK or joker: the 🃏 emoji alone is chat */
        out->kind = CMD_PLAY;
        out->joker = 1;
        out->card = 0;
        out->bare = (uint8_t)bare;
        return 1;
    }
    if (card_parse_pack(s, n, out->pack, &c, NULL, 0) < 0) return 0;
    out->kind = CMD_PLAY;
    out->card = c;
    out->bare = (uint8_t)bare;
    return 1;
}

/* s, n: the normalized, non-empty text after the prefix (if any). */
static void cmd_parse_words(const char *s, size_t n, const char *prefix, int bare, cmd *out)
{
    const char *all = s, *w;
    size_t alln = n, wn;
    cmd_next_word(&s, &n, &w, &wn);
    cmd_copy(out->word, sizeof out->word, w, cmd_utf8_cut(w, wn, sizeof out->word - 1), 1);
    cmd_kind kind = cmd_lookup(w, wn);
    if (kind != CMD_NONE) {
        out->kind = kind;
        cmd_read_args(out, &cmd_specs[kind], s, n, prefix);
    } else if (!cmd_try_card(out, all, alln, bare)) {
        cmd_bad(out, "unknown command \"%.*s\": try %shelp", cmd_quote_len(w, wn), w, prefix);
    }
}

/* A message without the prefix in a room: a card alone, or chat to ignore. */
static void cmd_parse_chat(const char *text, size_t len, cmd *out)
{
    char buf[CMD_TEXT_MAX + 1];
    size_t n;
    if (len > CMD_TEXT_MAX || cmd_normalize(text, len, buf, sizeof buf, &n) < 0) return;
    cmd_try_card(out, buf, n, 1);
}

void cmd_parse(const char *text, size_t len, const char *prefix, int prefix_optional, cmd *out)
{
    cmd_parse_pack(text, len, prefix, prefix_optional, CARD_COUNT, out);
}

void cmd_parse_pack(const char *text, size_t len, const char *prefix, int prefix_optional, int pack, cmd *out)
{
    cmd_reset(out);
    out->pack = (uint8_t)(pack == CARD_IDS ? CARD_IDS : CARD_COUNT);
    if (!text) text = "", len = 0;
    if (!prefix || !*prefix) prefix = "!";
    size_t at = 0;
    while (at < len && cmd_is_blank((unsigned char)text[at])) at++;
    int has_prefix = cmd_starts_with(text + at, len - at, prefix);
    if (!has_prefix && !prefix_optional) {
        cmd_parse_chat(text, len, out);
        return;
    }
    if (len > CMD_TEXT_MAX) {
        cmd_bad(out, "that message is too long: commands are short, like %shelp", prefix);
        return;
    }
    size_t skip = has_prefix ? at + strlen(prefix) : 0;
    char buf[CMD_TEXT_MAX + 1];
    size_t n;
    if (cmd_normalize(text + skip, len - skip, buf, sizeof buf, &n) < 0) {
        cmd_bad(out, "that message has bytes that are not text: write plain words, like %shelp", prefix);
    } else if (n == 0 && has_prefix) {
        cmd_bad(out, "say a command after \"%s\", like %shelp", prefix, prefix);
    } else if (n > 0) {
        cmd_parse_words(buf, n, prefix, !has_prefix, out);
    }
}

/* ---- names and help ---- */

const char *cmd_name(cmd_kind kind)
{
    if ((int)kind < CMD_NEW || kind >= CMD_KIND_COUNT) return "?";
    return cmd_specs[kind].name;
}

int cmd_is_move(cmd_kind kind)
{
    return (kind >= CMD_CUT && kind <= CMD_SPOILT) || kind == CMD_EXCLUDE || kind == CMD_MARK;
}

const char *cmd_seat_name(int seat, int seats)
{
    if (seats == 6) return seat >= 0 && seat < 6 ? cmd_seat_numbers[seat] : "?";
    return seat >= 0 && seat < 4 ? cmd_seat_names[seat] : "?";
}

/* A bounded writer: what does not fit is dropped, never half a character. */
typedef struct {
    char *buf;
    size_t len, pos;
    int full;
} cmd_writer;

static void cmd_put(cmd_writer *w, const char *s, size_t n)
{
    if (w->full) return;
    size_t room = w->len - 1 - w->pos;
    if (n > room) {
        n = cmd_utf8_cut(s, n, room);
        w->full = 1;
    }
    memcpy(w->buf + w->pos, s, n);
    w->pos += n;
    w->buf[w->pos] = 0;
}

static void cmd_puts(cmd_writer *w, const char *s) { cmd_put(w, s, strlen(s)); }

/* Writes a template, '~' standing for the prefix. */
static void cmd_put_template(cmd_writer *w, const char *t, const char *prefix)
{
    for (const char *tilde; (tilde = strchr(t, '~')) != NULL; t = tilde + 1) {
        cmd_put(w, t, (size_t)(tilde - t));
        cmd_puts(w, prefix);
    }
    cmd_puts(w, t);
}

/* "!bid N|pcc — bid N points (60 means 160) or Partner Close Caps" */
static void cmd_put_line(cmd_writer *w, const cmd_spec *sp, const char *prefix)
{
    cmd_puts(w, prefix);
    cmd_puts(w, sp->name);
    cmd_puts(w, sp->usage);
    cmd_puts(w, " \xE2\x80\x94 ");
    cmd_puts(w, sp->summary);
}

static void cmd_put_list(cmd_writer *w, const char *prefix)
{
    cmd_put_template(w, "Commands (in a private message the ~ may be left out):", prefix);
    for (int k = CMD_NEW; k < CMD_KIND_COUNT && !w->full; k++) {
        if (cmd_unlisted(k)) continue;
        size_t keep = w->pos;
        cmd_puts(w, "\n");
        cmd_put_line(w, &cmd_specs[k], prefix);
        if (w->full) w->buf[w->pos = keep] = 0; /* whole lines only */
    }
}

const char *cmd_help(const char *topic, const char *prefix, char *buf, size_t len)
{
    if (!buf || len == 0) return NULL;
    if (!prefix || !*prefix) prefix = "!";
    cmd_writer w = {buf, len, 0, 0};
    buf[0] = 0;
    char norm[CMD_TEXT_MAX + 1];
    size_t n = 0, tn = topic ? strnlen(topic, CMD_TEXT_MAX + 1) : 0;
    if (tn > CMD_TEXT_MAX || (topic && cmd_normalize(topic, tn, norm, sizeof norm, &n) < 0)) return NULL;
    if (n == 0) {
        cmd_put_list(&w, prefix);
        return buf;
    }
    const char *topic_word = norm;
    cmd_skip_prefix(&topic_word, &n, prefix);
    cmd_kind kind = cmd_lookup(topic_word, n);
    if (kind == CMD_NONE) return NULL;
    cmd_put_line(&w, &cmd_specs[kind], prefix);
    cmd_puts(&w, ". ");
    cmd_put_template(&w, cmd_specs[kind].detail, prefix);
    return buf;
}

const char *cmd_help_line(const char *prefix, char *buf, size_t len)
{
    if (!buf || len == 0) return NULL;
    if (!prefix || !*prefix) prefix = "!";
    cmd_writer w = {buf, len, 0, 0};
    buf[0] = 0;
    cmd_puts(&w, "Commands:");
    for (int k = CMD_NEW; k < CMD_KIND_COUNT; k++) {
        if (cmd_unlisted(k)) continue;
        cmd_puts(&w, k == CMD_NEW ? " " : ", ");
        cmd_puts(&w, cmd_specs[k].name);
    }
    cmd_put_template(&w, ". ~help COMMAND tells more of one; I sent you the list privately.", prefix);
    return buf;
}
