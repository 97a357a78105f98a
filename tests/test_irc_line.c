/* test_irc_line.c — IRC line handling (adapters/irc/irc_line.h).
 *
 * Parser: a table of cases taken from the community irc-parser-tests (msg-split.yaml: tags and
 * their escaping, trailing params, no params, numerics, extra spaces) plus source splitting,
 * limits and refusals. Casemapping and channel names. Split: hand-checked chunkings, then every
 * max_bytes from 1 to 40 over texts with multibyte characters, suits, colour codes, long words,
 * newlines, control characters and bad bytes, checked against an independent model of the
 * units (each chunk is the sanitised input at its offset, whole units only, valid UTF-8, and
 * what lies between chunks is only a breaking space, newlines or units too big to ever fit).
 * Budget arithmetic against the real line, colour_suits outputs and every truncation, and
 * irc_format results, refusals and round trips through the parser. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irc_line.h"
#include "irc_model.h"

TestSuite(irc_line, .timeout = 30);

#define C "\x03" /* colour; always followed by a string break before digits */
#define B "\x02"

/* ==== parsing ================================================================================ */

typedef struct {
    const char *in;
    const char *tags[8][2]; /* key, value; ends at a NULL key */
    const char *source;
    const char *verb;
    const char *params[IRC_MAX_PARAMS + 1]; /* ends at NULL */
} parse_case;

static const parse_case parse_cases[] = {
    {"foo bar baz asdf", {{0}}, NULL, "foo", {"bar", "baz", "asdf"}},
    {":coolguy foo bar baz asdf", {{0}}, "coolguy", "foo", {"bar", "baz", "asdf"}},
    {"foo bar baz :asdf quux", {{0}}, NULL, "foo", {"bar", "baz", "asdf quux"}},
    {"foo bar baz :", {{0}}, NULL, "foo", {"bar", "baz", ""}},
    {"foo bar baz ::asdf", {{0}}, NULL, "foo", {"bar", "baz", ":asdf"}},
    {":coolguy foo bar baz :asdf quux", {{0}}, "coolguy", "foo", {"bar", "baz", "asdf quux"}},
    {":coolguy foo bar baz :  asdf quux ", {{0}}, "coolguy", "foo", {"bar", "baz", "  asdf quux "}},
    {":coolguy PRIVMSG bar :lol :) ", {{0}}, "coolguy", "PRIVMSG", {"bar", "lol :) "}},
    {":coolguy foo bar baz :  ", {{0}}, "coolguy", "foo", {"bar", "baz", "  "}},
    {"@a=b;c=32;k;rt=ql7 foo", {{"a", "b"}, {"c", "32"}, {"k", ""}, {"rt", "ql7"}}, NULL, "foo", {NULL}},
    {"@a=b\\\\and\\nk;c=72\\s45;d=gh\\:764 foo",
     {{"a", "b\\and\nk"}, {"c", "72 45"}, {"d", "gh;764"}}, NULL, "foo", {NULL}},
    {"@c;h=;a=b :quux ab cd", {{"c", ""}, {"h", ""}, {"a", "b"}}, "quux", "ab", {"cd"}},
    {":src JOIN #chan", {{0}}, "src", "JOIN", {"#chan"}},
    {":src JOIN :#chan", {{0}}, "src", "JOIN", {"#chan"}},
    {":src AWAY", {{0}}, "src", "AWAY", {NULL}},
    {":src AWAY ", {{0}}, "src", "AWAY", {NULL}},
    {":cool\tguy foo bar baz", {{0}}, "cool\tguy", "foo", {"bar", "baz"}},
    {":coolguy!ag@net" C "5w" C "ork.admin PRIVMSG foo :bar baz", {{0}},
     "coolguy!ag@net" C "5w" C "ork.admin", "PRIVMSG", {"foo", "bar baz"}},
    {"@tag1=value1;tag2;vendor1/tag3=value2;vendor2/tag4= :irc.example.com COMMAND param1 param2 "
     ":param3 param3",
     {{"tag1", "value1"}, {"tag2", ""}, {"vendor1/tag3", "value2"}, {"vendor2/tag4", ""}},
     "irc.example.com", "COMMAND", {"param1", "param2", "param3 param3"}},
    {"@tag1=value1;tag2;vendor1/tag3=value2;vendor2/tag4 COMMAND param1 param2 :param3 param3",
     {{"tag1", "value1"}, {"tag2", ""}, {"vendor1/tag3", "value2"}, {"vendor2/tag4", ""}},
     NULL, "COMMAND", {"param1", "param2", "param3 param3"}},
    {"COMMAND", {{0}}, NULL, "COMMAND", {NULL}},
    {"@foo=\\\\\\\\\\:\\\\s\\s\\r\\n COMMAND", {{"foo", "\\\\;\\s \r\n"}}, NULL, "COMMAND", {NULL}},
    {":gravel.mozilla.org 432  #momo :Erroneous Nickname: Illegal characters", {{0}},
     "gravel.mozilla.org", "432", {"#momo", "Erroneous Nickname: Illegal characters"}},
    {":gravel.mozilla.org MODE #tckk +n ", {{0}}, "gravel.mozilla.org", "MODE", {"#tckk", "+n"}},
    {":services.esper.net MODE #foo-bar +o foobar  ", {{0}}, "services.esper.net", "MODE",
     {"#foo-bar", "+o", "foobar"}},
    {"@tag1=value\\\\ntest COMMAND", {{"tag1", "value\\ntest"}}, NULL, "COMMAND", {NULL}},
    {"@tag1=value\\1 COMMAND", {{"tag1", "value1"}}, NULL, "COMMAND", {NULL}},
    {"@tag1=value1\\ COMMAND", {{"tag1", "value1"}}, NULL, "COMMAND", {NULL}},
    {"@tag1=1;tag2=3;tag3=4;tag1=5 COMMAND", {{"tag1", "5"}, {"tag2", "3"}, {"tag3", "4"}}, NULL,
     "COMMAND", {NULL}},
    {"@tag1=1;tag2=3;tag3=4;tag1=5;vendor/tag2=8 COMMAND",
     {{"tag1", "5"}, {"tag2", "3"}, {"tag3", "4"}, {"vendor/tag2", "8"}}, NULL, "COMMAND", {NULL}},
    {":SomeOp MODE #channel :+i", {{0}}, "SomeOp", "MODE", {"#channel", "+i"}},
    {":SomeOp MODE #channel +oo SomeUser :AnotherUser", {{0}}, "SomeOp", "MODE",
     {"#channel", "+oo", "SomeUser", "AnotherUser"}},
    /* beyond the yaml: client-only and vendor tags, escapes, numerics, extra spaces */
    {"@+draft/reply=abc;+typing=active;time=2024-01-01T00:00:00.000Z :n!u@h TAGMSG #c",
     {{"+draft/reply", "abc"}, {"+typing", "active"}, {"time", "2024-01-01T00:00:00.000Z"}},
     "n!u@h", "TAGMSG", {"#c"}},
    {"@a=\\q\\\\\\s;b=x\\ PING :x", {{"a", "q\\ "}, {"b", "x"}}, NULL, "PING", {"x"}},
    {"@a=1;;b=2; X", {{"a", "1"}, {"b", "2"}}, NULL, "X", {NULL}},
    {"@=v;bad_key=1;ok=1;k\\=2 X", {{"ok", "1"}}, NULL, "X", {NULL}},
    {"@a=b   :srv   001   me   :Welcome  home ", {{"a", "b"}}, "srv", "001", {"me", "Welcome  home "}},
    {":irc.libera.chat 353 bot = #cards :@alice +bob carol", {{0}}, "irc.libera.chat", "353",
     {"bot", "=", "#cards", "@alice +bob carol"}},
    {"PING :irc.example.net", {{0}}, NULL, "PING", {"irc.example.net"}},
    {"a 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", {{0}}, NULL, "a",
     {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15"}},
    {"a 1 2 3 4 5 6 7 8 9 10 11 12 13 14 :15 and more", {{0}}, NULL, "a",
     {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15 and more"}},
};

static int count_tags(const parse_case *c)
{
    int n = 0;
    while (n < 8 && c->tags[n][0]) n++;
    return n;
}

Test(irc_line, parser_test_vectors)
{
    for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
        const parse_case *c = &parse_cases[i];
        char line[1024];
        snprintf(line, sizeof line, "%s", c->in);
        irc_msg m;
        cr_assert_eq(irc_parse(line, &m), 0, "refused: %s", c->in);
        cr_assert_eq(m.ntags, count_tags(c), "%s: %d tags", c->in, m.ntags);
        for (int t = 0; t < count_tags(c); t++) {
            const char *v = irc_tag_get(&m, c->tags[t][0]);
            cr_assert_not_null(v, "%s: no tag %s", c->in, c->tags[t][0]);
            cr_assert_str_eq(v, c->tags[t][1], "%s: tag %s", c->in, c->tags[t][0]);
        }
        if (c->source)
            cr_assert_str_eq(m.prefix ? m.prefix : "(null)", c->source, "%s", c->in);
        else
            cr_assert_null(m.prefix, "%s", c->in);
        cr_assert_str_eq(m.command, c->verb, "%s", c->in);
        int np = 0;
        while (c->params[np]) np++;
        cr_assert_eq(m.nparams, np, "%s: %d params", c->in, m.nparams);
        for (int p = 0; p < np; p++)
            cr_assert_str_eq(m.params[p], c->params[p], "%s: param %d", c->in, p);
    }
}

Test(irc_line, tag_get_absent_and_last_wins)
{
    char line[] = "@k=1;k=2;+x PRIVMSG #c :hi";
    irc_msg m;
    cr_assert_eq(irc_parse(line, &m), 0);
    cr_assert_eq(m.ntags, 2);
    cr_assert_str_eq(irc_tag_get(&m, "k"), "2");
    cr_assert_str_eq(irc_tag_get(&m, "+x"), "");
    cr_assert_null(irc_tag_get(&m, "x"));
    cr_assert_null(irc_tag_get(&m, "K"));
    cr_assert_null(irc_tag_get(&m, NULL));
}

Test(irc_line, source_split)
{
    static const struct {
        const char *src, *nick, *user, *host;
    } cases[] = {
        {"alice!~al@example.org", "alice", "~al", "example.org"},
        {"alice!al", "alice", "al", NULL},
        {"alice@example.org", "alice", NULL, "example.org"},
        {"alice", "alice", NULL, NULL},
        {"[Bot]^", "[Bot]^", NULL, NULL},
        {"irc.libera.chat", NULL, NULL, "irc.libera.chat"},
        {"a!b!c@d@e", "a", "b!c", "d@e"},
        {"a@b!c", "a", NULL, "b!c"},
        {"!u@h", "", "u", "h"},
        {"n!@h", "n", "", "h"},
        {"n!u@", "n", "u", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[256];
        snprintf(line, sizeof line, ":%s PRIVMSG #c :x", cases[i].src);
        irc_msg m;
        cr_assert_eq(irc_parse(line, &m), 0, "%s", cases[i].src);
        cr_assert_str_eq(m.prefix, cases[i].src);
#define SAME(field)                                                                             \
    do {                                                                                        \
        if (cases[i].field)                                                                     \
            cr_assert_str_eq(m.field ? m.field : "(null)", cases[i].field, "%s " #field,        \
                             cases[i].src);                                                     \
        else                                                                                    \
            cr_assert_null(m.field, "%s " #field, cases[i].src);                                \
    } while (0)
        SAME(nick);
        SAME(user);
        SAME(host);
#undef SAME
    }
    char line[] = "PING x";
    irc_msg m;
    cr_assert_eq(irc_parse(line, &m), 0);
    cr_assert(!m.prefix && !m.nick && !m.user && !m.host);
}

Test(irc_line, refusals)
{
    static const char *bad[] = {
        "", " ", "   ", "@a=b", "@a=b ", "@a=b    ", ":pfx", ":pfx ", ":pfx   ", ": PRIVMSG #c :x",
        "@a :", "12", "1234 x", "CMD1 x", "PRIV\tMSG x", "PRIVMSG\t#c", "#c", ":x :y z",
        "foo\rbar", "foo bar\r", "foo\nbar", "\r\n", "@a=\r b", "é x",
        "a 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16",
        "a 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 :16",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "%s", bad[i]);
        irc_msg m;
        cr_assert_eq(irc_parse(line, &m), -1, "accepted: \"%s\"", bad[i]);
    }
    irc_msg m;
    cr_assert_eq(irc_parse(NULL, &m), -1);
    char nul[] = "PRIVMSG #c :a\0b";
    cr_assert_eq(irc_parse_len(nul, sizeof nul - 1, &m), -1);
    char ok[] = "PRIVMSG #c :ab";
    cr_assert_eq(irc_parse_len(ok, sizeof ok - 1, &m), 0);
    cr_assert_str_eq(m.params[1], "ab");
}

/* Lines of exactly n bytes built from parts, for the limits. */
static char big[20000];

Test(irc_line, tag_count_limit)
{
    irc_msg m;
    for (int n = 31; n <= 33; n++) {
        char *w = big;
        *w++ = '@';
        for (int i = 0; i < n; i++) w += sprintf(w, "%st%d=%d", i ? ";" : "", i, i);
        strcpy(w, ";t0=again PING :x"); /* a repeated key does not count twice */
        cr_assert_eq(irc_parse(big, &m), n <= IRC_MAX_TAGS ? 0 : -1, "%d tags", n);
        if (n <= IRC_MAX_TAGS) {
            cr_assert_eq(m.ntags, n);
            cr_assert_str_eq(irc_tag_get(&m, "t0"), "again");
            cr_assert_str_eq(irc_tag_get(&m, "t1"), "1");
        }
    }
}

Test(irc_line, length_limits)
{
    irc_msg m;
    /* tags section: '@' + data + ' ' ≤ 8191 */
    for (size_t data = 8187; data <= 8190; data++) {
        memset(big, 0, sizeof big);
        big[0] = '@';
        memcpy(big + 1, "k=", 2);
        memset(big + 3, 'v', data - 2);
        strcpy(big + 1 + data, " PING :x");
        cr_assert_eq(irc_parse(big, &m), data + 2 <= IRC_MAX_TAG_BYTES ? 0 : -1, "%zu", data);
        if (data + 2 <= IRC_MAX_TAG_BYTES) cr_assert_eq(strlen(irc_tag_get(&m, "k")), data - 2);
    }
    /* the rest: ≤ 510 bytes (512 with the CR LF the caller removed), with or without tags */
    for (int tags = 0; tags <= 1; tags++) {
        for (size_t rest = 508; rest <= 512; rest++) {
            memset(big, 0, sizeof big);
            char *w = big;
            if (tags) w += sprintf(w, "@a=b  ");
            memcpy(w, "PRIVMSG #c :", 12);
            memset(w + 12, 'x', rest - 12);
            cr_assert_eq(irc_parse(big, &m), rest <= 510 ? 0 : -1, "rest %zu", rest);
            if (rest <= 510) cr_assert_eq(strlen(m.params[1]), rest - 12);
        }
    }
}

/* ==== names ================================================================================== */

Test(irc_line, casemapping)
{
    cr_assert(irc_nick_equal("Alice", "aLICE"));
    cr_assert(irc_nick_equal("[Bot]\\~", "{bot}|^"));
    cr_assert(irc_nick_equal("{bot}|^", "[BOT]\\~"));
    cr_assert(irc_nick_equal("", ""));
    cr_assert(irc_nick_equal("a-b_c`1", "A-B_C`1"));
    cr_assert_not(irc_nick_equal("alice", "alicE2"));
    cr_assert_not(irc_nick_equal("alice2", "alice"));
    cr_assert_not(irc_nick_equal("a_b", "a-b"));
    cr_assert_not(irc_nick_equal("a@", "a`")); /* '@' and '`' differ by 32 but do not fold */
    cr_assert_not(irc_nick_equal("é", "É"));   /* no folding beyond ASCII */
    cr_assert_not(irc_nick_equal(NULL, "a"));
    cr_assert_not(irc_nick_equal("a", NULL));
}

Test(irc_line, channels)
{
    static const char *yes[] = {"#cards", "&local", "+modeless", "!12345chan", "##", "#", "#é♥"};
    static const char *no[] = {"", "cards", "@op", "#a b", "#a,#b", "#a\a", "#a\r", "#a\n", " #a"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        cr_assert(irc_is_channel(yes[i]), "%s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        cr_assert_not(irc_is_channel(no[i]), "%s", no[i]);
    cr_assert_not(irc_is_channel(NULL));
}

/* ==== split ================================================================================== */


static bool strict_utf8(const char *s, size_t n)
{
    char tmp[8];
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k = model_unit((const unsigned char *)s + i, tmp);
        if (tmp[0] == '?' || i + k > n) return false;
        i += k;
    }
    return true;
}

typedef struct {
    char text[4096];
    size_t off;
    size_t len;
} chunk;

typedef struct {
    chunk c[512];
    size_t n;
    size_t stop_after; /* 0: never */
} chunks;

static int collect(void *ctx, const char *s, size_t len, size_t off)
{
    chunks *cs = ctx;
    cr_assert_lt(cs->n, 512);
    cr_assert_eq(strlen(s), len, "chunk not NUL-terminated at its length");
    memcpy(cs->c[cs->n].text, s, len + 1);
    cs->c[cs->n].off = off;
    cs->c[cs->n].len = len;
    cs->n++;
    return cs->stop_after && cs->n == cs->stop_after;
}

static chunks got;

static size_t split(const char *text, size_t max)
{
    memset(&got, 0, sizeof got);
    size_t n = irc_split(text, max, collect, &got);
    cr_assert_eq(n, got.n);
    cr_assert_eq(irc_split(text, max, NULL, NULL), n, "counting alone differs");
    return n;
}

/* Whether the space at i may end a line: not one before "·" (the separator stays with its line). */
static bool breakable(const char *san, size_t i, size_t n)
{
    return san[i] == ' ' && !(i + 2 < n && (unsigned char)san[i + 1] == 0xC2 && (unsigned char)san[i + 2] == 0xB7);
}

/* Where the word at i ends in the sanitised text: its next breakable space or newline, or n. */
static size_t word_end(const char *san, const size_t *unit_len, size_t i, size_t n)
{
    while (i < n && !breakable(san, i, n) && san[i] != '\n') i += unit_len[i];
    return i;
}

/* Checks every promise of irc_split on text at max against the model. */
static void check_split(const char *text, size_t max)
{
    const unsigned char *t = (const unsigned char *)text;
    size_t n = strlen(text);
    static char san[8192];
    static size_t unit_len[8192]; /* at each unit start, its length; 0 inside a unit */
    memset(unit_len, 0, sizeof unit_len);
    for (size_t i = 0; i < n;) {
        size_t k = model_unit(t + i, san + i);
        unit_len[i] = k;
        i += k;
    }
    unit_len[n] = 1; /* the end is a boundary */
    split(text, max);
    if (max > IRC_MAX_MSG_BYTES) max = IRC_MAX_MSG_BYTES; /* as irc_split takes it */
    size_t pos = 0;
    for (size_t ci = 0; ci <= got.n; ci++) {
        const chunk *c = ci < got.n ? &got.c[ci] : NULL;
        size_t gap_end = c ? c->off : n;
        cr_assert_geq(gap_end, pos, "max %zu: chunks out of order in \"%s\"", max, text);
        /* the gap: [a breaking space right after a chunk] then newlines and oversized units */
        size_t g = pos;
        if (ci > 0 && g < gap_end && san[g] == ' ' && unit_len[g] == 1) g++;
        while (g < gap_end) {
            cr_assert_neq(unit_len[g], 0, "max %zu: gap inside a unit at %zu", max, g);
            cr_assert(san[g] == '\n' || unit_len[g] > max,
                      "max %zu: byte %zu (0x%02x) of \"%s\" lost", max, g, t[g], text);
            g += unit_len[g];
        }
        if (!c) break;
        cr_assert(c->len >= 1 && c->len <= max, "max %zu: chunk of %zu", max, c->len);
        cr_assert_leq(c->off + c->len, n);
        cr_assert_neq(unit_len[c->off], 0, "max %zu: chunk starts inside a unit", max);
        cr_assert_neq(unit_len[c->off + c->len], 0, "max %zu: chunk ends inside a unit: %s", max,
                      c->text);
        cr_assert(memcmp(c->text, san + c->off, c->len) == 0, "max %zu: chunk \"%s\" differs", max,
                  c->text);
        cr_assert(strict_utf8(c->text, c->len), "max %zu: bad UTF-8", max);
        for (size_t i = 0; i < c->len; i++) {
            unsigned char b = (unsigned char)c->text[i];
            cr_assert(b >= 0x20 ? b != 0x7F : (b == 2 || b == 3 || b == 0x0F || b == 0x1D || b == 0x1F),
                      "max %zu: control 0x%02x in a chunk", max, b);
        }
        /* a hard break (nothing between this chunk and the next) cuts a word longer than max:
         * from the chunk's last space (or its start) to the next space or line end */
        size_t next = c->off + c->len;
        if (ci + 1 < got.n && got.c[ci + 1].off == next) {
            cr_assert_gt(c->len + unit_len[next], max, "max %zu: chunk \"%s\" not full", max, c->text);
            cr_assert_neq(san[next], ' ', "max %zu: hard break before a space", max);
            size_t ws = c->off;
            for (size_t i = c->off; i < next; i++)
                if (breakable(san, i, n)) ws = i + 1;
            cr_assert_gt(word_end(san, unit_len, next, n) - ws, max,
                         "max %zu: \"%s\" cuts a word that fits a line", max, c->text);
        } else if (ci + 1 < got.n && got.c[ci + 1].off == next + 1 && san[next] == ' ') {
            /* a break at a space: either at a " · " that leaves the chunk half full, or the
             * next word did not fit after it */
            int dot = c->len >= 3 && c->len >= (max + 1) / 2 && !memcmp(c->text + c->len - 3, " \xC2\xB7", 3);
            cr_assert(dot || c->len + 1 + (word_end(san, unit_len, next + 1, n) - next - 1) > max,
                      "max %zu: \"%s\" breaks early", max, c->text);
        }
        pos = c->off + c->len;
    }
}

static const char *const split_texts[] = {
    "Hello world, this is a fairly long message with quite a few words in it to split",
    "A♥ K♦ Q♠ J♣ 10♥ 9♦ — trick won by Bob 🂡🂱 ünïcödé ♥♥♥♦♦♦ end",
    B "Bold" B " " C "04red" C " " C "04,01red on black" C " " C "12,5x" C " " C " plain " C
    "99,99end " C "4," C "123 " C ",5",
    "Supercalifragilisticexpialidocious_and_more_without_any_space_at_all_whatsoever",
    "first line\nsecond line\n\n\nthird\r\nfourth\twith\ttabs\x01\x7f and\x1d italic\x1f!",
    "\xff\xfe bad \xf8\x9f\x82\xa1 \xc3 bytes \xe2\x82 end \xed\xa0\x80 surrogate \xf4\x90\x80\x80 \xc0\xaf ok",
    "\n\n\n",
    "",
    " ",
    "   leading and trailing   \n  \n",
    "x" C "04♥" C " " C "04♦" C "\x02\x02" "10 and a long tail of words to wrap around",
    "🂡🂢🂣🂤🂥🂦🂧🂨🂩🂪🂫🂭🂮",
};

Test(irc_line, split_every_max_1_to_40)
{
    for (size_t i = 0; i < sizeof split_texts / sizeof split_texts[0]; i++)
        for (size_t max = 1; max <= 40; max++) check_split(split_texts[i], max);
}

Test(irc_line, split_large_max)
{
    static char text[3000];
    char *w = text;
    for (int i = 0; i < 120; i++) w += sprintf(w, "%s%d♥ ", i % 7 ? "" : C "04", i);
    for (size_t max = 100; max <= 600; max += 37) check_split(text, max);
    /* above 512 bytes a chunk is still at most 512 */
    split(text, 100000);
    for (size_t i = 0; i < got.n; i++) cr_assert_leq(got.c[i].len, IRC_MAX_MSG_BYTES);
    cr_assert_gt(got.n, 1);
}

static void expect_chunks(const char *text, size_t max, const char *const *want)
{
    split(text, max);
    size_t n = 0;
    while (want[n]) n++;
    cr_assert_eq(got.n, n, "\"%s\" at %zu: %zu chunks, first \"%s\"", text, max, got.n,
                 got.n ? got.c[0].text : "");
    for (size_t i = 0; i < n; i++)
        cr_assert_str_eq(got.c[i].text, want[i], "\"%s\" at %zu: chunk %zu", text, max, i);
}

#define CHUNKS(text, max, ...) expect_chunks(text, max, (const char *const[]){__VA_ARGS__, NULL})

Test(irc_line, split_exact_chunks)
{
    CHUNKS("hello world foo", 40, "hello world foo");
    CHUNKS("abc def", 3, "abc", "def");
    CHUNKS("aaaaaaaa bbbb", 10, "aaaaaaaa", "bbbb");
    CHUNKS("aaaaaaa bbbbb", 10, "aaaaaaa", "bbbbb");  /* never inside a word that fits a line */
    CHUNKS("a bbbbbbbbbbbbbbb", 10, "a bbbbbbbb", "bbbbbbb"); /* a word longer than a line is cut */
    CHUNKS("caps=grace, scoring=transfer, start_tokens=11", 24, "caps=grace,", "scoring=transfer,",
           "start_tokens=11");
    CHUNKS("abcdefghij", 4, "abcd", "efgh", "ij");
    CHUNKS("line1\n\n\nline2\n", 40, "line1", "line2");
    CHUNKS("a\tb\rc\x01" "d\x7f", 40, "a b c d ");
    CHUNKS("x" B "b\x0f\x1d\x1fy", 40, "x" B "b\x0f\x1d\x1fy");
    CHUNKS("aé", 1, "a");               /* é cannot fit in 1 byte: dropped */
    CHUNKS("aéb", 2, "a", "é", "b");
    CHUNKS(C "04,01red", 6, C "04,01", "red");
    CHUNKS(C "04,01red", 5, "red");     /* the colour code cannot fit: dropped, not cut */
    CHUNKS("ab" C "04cd", 4, "ab", C "04c", "d");
    CHUNKS("\xff\xc3(", 40, "?" "?(");
    CHUNKS("A♥ K♠", 4, "A♥", "K♠");
    CHUNKS("A♥ K♠", 3, "A", "♥", "K", "♠");
    CHUNKS("one two three", 9, "one two", "three");
    /* " · " first when it leaves the line half full; the "·" stays with the line before */
    CHUNKS("cards: ♠ K · ♥ 9 · ♦ J · ♣ Q", 26, "cards: ♠ K · ♥ 9 ·", "♦ J · ♣ Q");
    CHUNKS("cards: ♠ K · ♥ 9 · ♦ J · ♣ Q", 14, "cards: ♠", "K · ♥ 9 ·", "♦ J · ♣ Q");
    CHUNKS("cards: ♠ K · ♥ 9", 10, "cards: ♠", "K · ♥ 9"); /* no line starts with "·" */
    CHUNKS("x · a long tail of words", 20, "x · a long tail of", "words"); /* "x ·" is too short */
    CHUNKS("cards: ♠ K · ♥ 9", 40, "cards: ♠ K · ♥ 9");
    chunks none = {0};
    cr_assert_eq(irc_split("abc", 0, collect, &none), 0);
    cr_assert_eq(irc_split(NULL, 10, collect, &none), 0);
    cr_assert_eq(irc_split("\n\n", 10, collect, &none), 0);
    cr_assert_eq(none.n, 0);
}

Test(irc_line, split_callback_stops)
{
    memset(&got, 0, sizeof got);
    got.stop_after = 2;
    cr_assert_eq(irc_split("aa bb cc dd", 2, collect, &got), 2);
    cr_assert_eq(got.n, 2);
    cr_assert_str_eq(got.c[1].text, "bb");
    cr_assert_eq(got.c[1].off, 3);
}

/* ==== a line cut inside a character ======================================================== */

Test(irc_line, utf8_uncut_drops_a_cut_character)
{
    static const struct {
        const char *text;
        size_t want;
    } cases[] = {
        {"", 0},
        {"plain", 5},
        {"play 10\xE2\x99\xA5", 10},        /* whole ♥: kept */
        {"play 10\xE2\x99", 7},              /* ♥ cut after 2 of 3 bytes */
        {"play 10\xE2", 7},                   /* after 1 of 3 */
        {"caf\xC3", 3},                       /* é cut after 1 of 2 */
        {"caf\xC3\xA9", 5},
        {"x\xF0\x9F\x82", 1},                /* a 4-byte card cut after 3 */
        {"x\xF0\x9F", 1},
        {"x\xF0", 1},
        {"x\xF0\x9F\x82\xA1", 5},
        {"x\xFF", 2},                         /* not the start of a character: left for the refusal */
        {"x\xC0", 2},                         /* overlong lead */
        {"x\xE0\x80", 3},                     /* overlong: cannot be the start of a character */
        {"x\xED\xA0", 3},                     /* a surrogate */
        {"x\xF4\x90", 3},                     /* above U+10FFFF */
        {"x\xF5", 2},
        {"\x80\x80\x80", 3},                  /* continuation bytes alone */
        {"x\xE2\x99\xA5\xA5", 5},             /* one byte too many is not a cut */
        {"\xC3", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(irc_utf8_uncut(cases[i].text, strlen(cases[i].text)), cases[i].want, "case %zu", i);
    /* Every cut of valid text is whole text again once uncut. */
    const char *t = "A\xE2\x99\xA5 K\xC3\xA9 \xF0\x9F\x82\xA1!";
    for (size_t n = 0; n <= strlen(t); n++) {
        size_t k = irc_utf8_uncut(t, n);
        cr_assert(k <= n && n - k <= 3);
        cr_assert(strict_utf8(t, k), "cut at %zu", n);
    }
}

/* ==== budget ================================================================================= */

Test(irc_line, budget_matches_the_line)
{
    static const struct {
        const char *nick, *user, *host, *cmd, *target;
    } cases[] = {
        {"cardroom", "~bot", "example.org", "PRIVMSG", "#cards"},
        {"cardroom", "bot", "2001:db8::1", "NOTICE", "alice"},
        {"c", NULL, NULL, "PRIVMSG", "#a-rather-long-channel-name-for-cards"},
        {"cardroom", NULL, "host", "PRIVMSG", "bob"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char user[16], host[80];
        snprintf(user, sizeof user, "%s", cases[i].user ? cases[i].user : "uuuuuuuuuu");
        snprintf(host, sizeof host, "%s",
                 cases[i].host ? cases[i].host
                               : "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh");
        cr_assert_eq(strlen(user), cases[i].user ? strlen(cases[i].user) : 10);
        cr_assert_eq(strlen(host), cases[i].host ? strlen(cases[i].host) : 63);
        size_t b = irc_budget(cases[i].nick, cases[i].user, cases[i].host, cases[i].cmd,
                              cases[i].target);
        cr_assert_gt(b, 300);
        for (size_t extra = 0; extra <= 1; extra++) {
            char text[600];
            memset(text, 'x', b + extra);
            text[b + extra] = '\0';
            char line[1200];
            int n = snprintf(line, sizeof line, ":%s!%s@%s %s %s :%s\r\n", cases[i].nick, user,
                             host, cases[i].cmd, cases[i].target, text);
            cr_assert_eq((size_t)n, 512 + extra, "case %zu: %d bytes", i, n);
        }
    }
    cr_assert_eq(irc_budget("n", "u", "h", "PRIVMSG", "#c"), 512 - 21); /* ":n!u@h PRIVMSG #c :" + CR LF */
    char huge[600];
    memset(huge, 'c', 599);
    huge[599] = '\0';
    cr_assert_eq(irc_budget("n", "u", "h", "PRIVMSG", huge), 0);
    huge[493] = '\0';
    cr_assert_eq(irc_budget("n", "u", "h", "PRIVMSG", huge), 0); /* exactly 512 with no text */
    huge[492] = '\0';
    cr_assert_eq(irc_budget("n", "u", "h", "PRIVMSG", huge), 1);
}

Test(irc_line, split_with_budget_fits_lines)
{
    const char *nick = "cardroom", *user = "~cr", *host = "bot.example.net";
    size_t b = irc_budget(nick, user, host, "PRIVMSG", "#cards");
    static char text[4000];
    char *w = text;
    for (int i = 0; i < 60; i++) w += sprintf(w, "Seat %d plays %s; ", i, i % 2 ? "K♥" : "10♦");
    split(text, b);
    cr_assert_gt(got.n, 2);
    for (size_t i = 0; i < got.n; i++) {
        char line[1024];
        int n = snprintf(line, sizeof line, ":%s!%s@%s PRIVMSG #cards :%s\r\n", nick, user, host,
                         got.c[i].text);
        cr_assert_leq(n, 512);
    }
    check_split(text, b);
}

/* ==== colour_suits =========================================================================== */

static char cbuf[1024];

static const char *colour(const char *text)
{
    memset(cbuf, 'Z', sizeof cbuf);
    size_t n = irc_colour_suits(text, cbuf, sizeof cbuf);
    cr_assert_eq(n, strlen(cbuf), "returned %zu, wrote %zu", n, strlen(cbuf));
    return cbuf;
}

Test(irc_line, colour_suits_exact)
{
    cr_assert_str_eq(colour(""), "");
    cr_assert_str_eq(colour("plain text"), "plain text");
    cr_assert_str_eq(colour("A♥ K♠"), "A" C "04♥" C " K♠");
    cr_assert_str_eq(colour("Q♦, J♣"), "Q" C "04♦" C ", J♣");
    cr_assert_str_eq(colour("♥♦"), C "04♥" C C "04♦" C);
    cr_assert_str_eq(colour("♠♣"), "♠♣");
    cr_assert_str_eq(colour("♦10 ♥9"), C "04♦" C B B "10 " C "04♥" C B B "9");
    cr_assert_str_eq(colour(C "12blue ♥"), C "12blue " C "04♥" C);
    cr_assert_str_eq(colour("♡ ♢ ♤"), "♡ ♢ ♤"); /* outline suits untouched */
    cr_assert_str_eq(colour("\xe2\x99"), "\xe2\x99"); /* a cut ♥ is not one */
    cr_assert_eq(irc_colour_suits("A♥", NULL, 0), 8);
}

/* out must be the longest prefix of want ending at one of bounds that fits in len - 1 bytes. */
static void check_truncation(const char *text, const char *want, const size_t *bounds, size_t nb)
{
    size_t full = strlen(want);
    cr_assert_eq(bounds[nb - 1], full);
    for (size_t len = 0; len <= full + 2; len++) {
        char buf[256];
        memset(buf, 'Z', sizeof buf);
        size_t r = irc_colour_suits(text, len ? buf : NULL, len);
        cr_assert_eq(r, full, "len %zu", len);
        if (len == 0) {
            cr_assert_eq(buf[0], 'Z');
            continue;
        }
        size_t fit = 0;
        for (size_t i = 0; i < nb; i++)
            if (bounds[i] <= len - 1) fit = bounds[i];
        cr_assert_eq(strlen(buf), fit, "len %zu: wrote %zu, expected %zu", len, strlen(buf), fit);
        cr_assert(memcmp(buf, want, fit) == 0, "len %zu", len);
        for (size_t i = len; i < sizeof buf; i++)
            cr_assert_eq(buf[i], 'Z', "len %zu: wrote past the buffer at %zu", len, i);
    }
}

Test(irc_line, colour_suits_truncation)
{
    static const size_t b1[] = {0, 1, 8, 9, 10, 19, 20};
    check_truncation("A♥ K♦7", "A" C "04♥" C " K" C "04♦" C B B "7", b1, 7);
    static const size_t b2[] = {0, 3, 4, 5, 12, 18, 19, 22};
    check_truncation(C "12ab♥" C "04,01x♣", C "12ab" C "04♥" C C "04,01x♣", b2, 8);
    static const size_t b3[] = {0, 2, 3, 4, 7};
    check_truncation("é\xff" "a♠", "é\xff" "a♠", b3, 5);
}

/* ==== format ================================================================================= */

static char fbuf[1024];

static const char *fmt(const char *cmd, int n, const char *const *p)
{
    memset(fbuf, 'Z', sizeof fbuf);
    int r = irc_format(fbuf, sizeof fbuf, cmd, p, n);
    if (r < 0) {
        cr_assert_eq(fbuf[0], '\0');
        return NULL;
    }
    cr_assert_eq((size_t)r, strlen(fbuf));
    return fbuf;
}

#define FMT(cmd, ...) fmt(cmd, (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)), \
                          (const char *const[]){__VA_ARGS__})

Test(irc_line, format_lines)
{
    cr_assert_str_eq(FMT("PRIVMSG", "#cards", "hello there"), "PRIVMSG #cards :hello there\r\n");
    cr_assert_str_eq(FMT("USER", "bot", "0", "*", "Card Room"), "USER bot 0 * :Card Room\r\n");
    cr_assert_str_eq(FMT("TOPIC", "#c", ""), "TOPIC #c :\r\n");
    cr_assert_str_eq(FMT("PRIVMSG", "#c", ":)"), "PRIVMSG #c ::)\r\n");
    cr_assert_str_eq(FMT("JOIN", "#c"), "JOIN :#c\r\n");
    cr_assert_str_eq(fmt("QUIT", 0, NULL), "QUIT\r\n");
    cr_assert_str_eq(FMT("001", "me", "hi"), "001 me :hi\r\n");
}

Test(irc_line, format_refusals)
{
    cr_assert_null(FMT("PRIVMSG", "#c", "a\rb"));
    cr_assert_null(FMT("PRIVMSG", "#c", "a\nb"));
    cr_assert_null(FMT("PRIVMSG", "#c\r", "x"));
    cr_assert_null(FMT("PRIVMSG", "", "x"));
    cr_assert_null(FMT("PRIVMSG", ":c", "x"));
    cr_assert_null(FMT("PRIVMSG", "#a b", "x"));
    cr_assert_null(FMT("PRIV MSG", "#c", "x"));
    cr_assert_null(FMT("", "#c", "x"));
    cr_assert_null(FMT("12", "#c", "x"));
    cr_assert_null(FMT("1234", "#c", "x"));
    cr_assert_null(FMT("PRIVMSG", "#c", NULL));
    cr_assert_null(fmt(NULL, 0, NULL));
    cr_assert_null(fmt("PING", -1, NULL));
    cr_assert_null(fmt("PING", 1, NULL));
    const char *many[16] = {"1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f", "g"};
    cr_assert_not_null(fmt("X", 15, many));
    cr_assert_null(fmt("X", 16, many));
    /* 512 bytes with CR LF: "PRIVMSG #c :" (12) + text + 2 */
    char text[600];
    memset(text, 'x', 498);
    text[498] = '\0';
    cr_assert_not_null(FMT("PRIVMSG", "#c", text));
    cr_assert_eq(strlen(fbuf), 512);
    text[498] = 'x';
    text[499] = '\0';
    cr_assert_null(FMT("PRIVMSG", "#c", text));
    /* buffer sizes */
    const char *p[] = {"#c", "hi"};
    char small[32];
    cr_assert_eq(irc_format(small, 17, "PRIVMSG", p, 2), 16); /* "PRIVMSG #c :hi\r\n" */
    memset(small, 'Z', sizeof small);
    cr_assert_eq(irc_format(small, 16, "PRIVMSG", p, 2), -1);
    cr_assert_eq(small[0], '\0');
    cr_assert_eq(small[1], 'Z');
    cr_assert_eq(irc_format(NULL, 0, "PRIVMSG", p, 2), -1);
}

Test(irc_line, format_round_trips)
{
    static const char *const params[][4] = {
        {"#cards", "A♥ K♦ :) with  spaces ", NULL},
        {"alice", "", NULL},
        {"*", "LS", "302", NULL},
        {"#c", "+o", "bob", NULL},
    };
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        int n = 0;
        while (params[i][n]) n++;
        char line[600];
        int r = irc_format(line, sizeof line, "CAP", params[i], n);
        cr_assert_gt(r, 2);
        line[r - 2] = '\0';
        irc_msg m;
        cr_assert_eq(irc_parse(line, &m), 0);
        cr_assert_str_eq(m.command, "CAP");
        cr_assert_eq(m.nparams, n);
        for (int k = 0; k < n; k++) cr_assert_str_eq(m.params[k], params[i][k]);
    }
}

/* ==== words of a list ======================================================================== */

Test(irc_line, next_word_splits_lists)
{
    char one[8];
    const char *s = "  #a, #bb ,,#ccc #toolongname #d";
    const char *want[] = {"#a", "#bb", "#ccc", "#d"};
    int n = 0;
    while (irc_next_word(&s, ",", one, sizeof one)) {
        cr_assert_lt(n, 4);
        cr_assert_str_eq(one, want[n], "word %d", n);
        n++;
    }
    cr_assert_eq(n, 4, "a word too long for the buffer is skipped");
    s = "sasl=PLAIN,EXTERNAL multi-prefix";
    char cap[32];
    cr_assert(irc_next_word(&s, "", cap, sizeof cap));
    cr_assert_str_eq(cap, "sasl=PLAIN,EXTERNAL", "without stops a comma is part of the word");
    cr_assert(irc_next_word(&s, "", cap, sizeof cap));
    cr_assert_str_eq(cap, "multi-prefix");
    cr_assert_not(irc_next_word(&s, "", cap, sizeof cap));
    s = "";
    cr_assert_not(irc_next_word(&s, ",", cap, sizeof cap));
}
