/* test_mx_html.c — the bot's plain text as Matrix HTML (adapters/matrix/mx_html.h).
 *
 * Exact HTML for the parts of the scheme (escaping, red suits, <br>, the private head, heading
 * labels on real table, result and standings texts, the mention pill and its link), then
 * properties: every cut of a text with suits, entities, bold and a pill is a well-formed piece
 * of the full HTML; a few hundred random texts come back unchanged when the tags are stripped
 * and the entities resolved; random bytes always give valid UTF-8. The checkers here (UTF-8,
 * tags, entities) are written independently of the code under test. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_html.h"

TestSuite(mx_html, .timeout = 30);

#define RED(s) "<font color=\"#d00000\" data-mx-color=\"#d00000\">" s "</font>"
#define PILL(user, name) "<a href=\"https://matrix.to/#/" user "\">" name "</a>"
#define FFFD "\xEF\xBF\xBD"
#define BIG 16384

static char out[BIG];

/* mx_html into a big buffer; checks the returned length. */
static const char *html(const char *text, const char *user, const char *name)
{
    memset(out, 'Z', sizeof out);
    size_t n = mx_html(text, user, name, out, sizeof out);
    cr_assert_lt(n, sizeof out);
    cr_assert_eq(n, strlen(out), "returned %zu, wrote %zu: %s", n, strlen(out), out);
    return out;
}

#define EXPECT(text, user, name, want) cr_assert_str_eq(html(text, user, name), want)

/* ---- independent checkers ---- */

/* Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF). */
static int valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        int n;
        if (*p < 0x80) { p++; continue; }
        if ((*p & 0xE0) == 0xC0) n = 2, cp = *p & 0x1F;
        else if ((*p & 0xF0) == 0xE0) n = 3, cp = *p & 0x0F;
        else if ((*p & 0xF8) == 0xF0) n = 4, cp = *p & 0x07;
        else return 0;
        for (int i = 1; i < n; i++) {
            if ((p[i] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        p += n;
    }
    return 1;
}

static int is_red_open(const char *s) { return strncmp(s, "<font color=\"#d00000\" data-mx-color=\"#d00000\">", 46) == 0; }

/* Length of the tag at s (s[0] == '<') if it is one the scheme may write, else 0; *kind is
 * 'b', 'a', 'f', 'p' (pre) or 'r' (br), *closing whether it is a closing tag. */
static size_t tag_at(const char *s, char *kind, int *closing)
{
    static const char *const fixed[] = {"<b>", "</b>", "<br>", "</font>", "</a>", "<pre>", "</pre>"};
    static const char kinds[] = {'b', 'b', 'r', 'f', 'a', 'p', 'p'};
    for (int i = 0; i < 7; i++)
        if (strncmp(s, fixed[i], strlen(fixed[i])) == 0) {
            *kind = kinds[i];
            *closing = fixed[i][1] == '/';
            return strlen(fixed[i]);
        }
    *closing = 0;
    if (is_red_open(s)) {
        *kind = 'f';
        return 46;
    }
    const char *pre = "<a href=\"https://matrix.to/#/";
    if (strncmp(s, pre, strlen(pre)) != 0) return 0;
    const char *p = s + strlen(pre);
    for (; *p && *p != '"'; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '%') {
            if (!strchr("0123456789ABCDEF", p[1]) || !p[1] || !strchr("0123456789ABCDEF", p[2]) || !p[2]) return 0;
            p += 2;
        } else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     strchr("@:._-=/+", c))) {
            return 0;
        }
    }
    if (p[0] != '"' || p[1] != '>') return 0;
    *kind = 'a';
    return (size_t)(p + 2 - s);
}

static const char *const entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
static const char entity_char[] = "&<>\"'";

/* Strips the tags (<br> = \n) and resolves the entities of h into text; checks on the way
 * that h uses only the scheme's tags, properly nested, no empty element, a red font holding
 * exactly one red suit, only the five entities, and no raw > " '. Returns the pill count. */
static int strip(const char *h, char *text, size_t cap)
{
    char stack[16];
    int depth = 0, pills = 0;
    size_t n = 0;
    const char *last_open_end = NULL;
    for (const char *p = h; *p;) {
        cr_assert_lt(n + 8, cap);
        if (*p == '<') {
            char kind;
            int closing;
            size_t k = tag_at(p, &kind, &closing);
            cr_assert(k > 0, "unknown tag at \"%.40s\" in %s", p, h);
            if (kind == 'r') {
                text[n++] = '\n';
            } else if (closing) {
                cr_assert(depth > 0 && stack[depth - 1] == kind, "misnested </%c> at \"%.40s\" in %s", kind, p, h);
                cr_assert_neq(last_open_end, p, "empty element before \"%.40s\" in %s", p, h);
                depth--;
            } else {
                cr_assert_lt(depth, 16);
                if (kind == 'f') {
                    const char *suit = p + k;
                    cr_assert(strncmp(suit, "\xE2\x99\xA5</font>", 10) == 0 || strncmp(suit, "\xE2\x99\xA6</font>", 10) == 0 ||
                                  strncmp(suit, "\xE2\x99\xA1</font>", 10) == 0 || strncmp(suit, "\xE2\x99\xA2</font>", 10) == 0,
                              "font without one red suit at \"%.60s\"", p);
                }
                if (kind == 'a') pills++;
                cr_assert(kind != 'b' || depth == 0 || stack[depth - 1] != 'b', "bold in bold in %s", h);
                stack[depth++] = kind;
                last_open_end = p + k;
            }
            p += k;
        } else if (*p == '&') {
            int i = 0;
            while (i < 5 && strncmp(p, entities[i], strlen(entities[i])) != 0) i++;
            cr_assert_lt(i, 5, "unknown entity at \"%.20s\" in %s", p, h);
            text[n++] = entity_char[i];
            p += strlen(entities[i]);
        } else {
            cr_assert(*p != '>' && *p != '"' && *p != '\'', "raw %c in %s", *p, h);
            text[n++] = *p++;
        }
    }
    cr_assert_eq(depth, 0, "unclosed element in %s", h);
    text[n] = 0;
    return pills;
}

/* ---- exact HTML ---- */

Test(mx_html, plain_text_unchanged)
{
    EXPECT("alice (South) passes.", NULL, NULL, "alice (South) passes.");
    EXPECT("Trick 1 to carol (North) (+14 points).", NULL, NULL, "Trick 1 to carol (North) (+14 points).");
    EXPECT("ä 🂠 — −  two  blanks\ttab", NULL, NULL, "ä 🂠 — −  two  blanks\ttab");
    EXPECT("", NULL, NULL, "");
    EXPECT(NULL, NULL, NULL, "");
    EXPECT(NULL, "@alice:example.org", "alice", "");
}

Test(mx_html, escapes_each_special_character)
{
    EXPECT("a & b", NULL, NULL, "a &amp; b");
    EXPECT("a < b", NULL, NULL, "a &lt; b");
    EXPECT("a > b", NULL, NULL, "a &gt; b");
    EXPECT("say \"hi\"", NULL, NULL, "say &quot;hi&quot;");
    EXPECT("it's", NULL, NULL, "it&#39;s");
    EXPECT("&amp;", NULL, NULL, "&amp;amp;");
    EXPECT("<script>alert('x')</script> (South) passes.", NULL, NULL,
           "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; (South) passes.");
    EXPECT("<a href=\"javascript:x\">bob</a> (East) bids 160.", NULL, NULL,
           "&lt;a href=&quot;javascript:x&quot;&gt;bob&lt;/a&gt; (East) bids 160.");
}

Test(mx_html, red_suits)
{
    EXPECT("Your first four cards: \xE2\x99\xA0 K \xC2\xB7 \xE2\x99\xA5 9 \xC2\xB7 \xE2\x99\xA6 J \xC2\xB7 \xE2\x99\xA3 Q",
           NULL, NULL,
           "<b>Your first four cards</b>: \xE2\x99\xA0 K \xC2\xB7 " RED("\xE2\x99\xA5") " 9 \xC2\xB7 " RED("\xE2\x99\xA6")
           " J \xC2\xB7 \xE2\x99\xA3 Q");
    EXPECT("alice (South) plays 10\xE2\x99\xA5.", NULL, NULL, "alice (South) plays 10" RED("\xE2\x99\xA5") ".");
    EXPECT("\xE2\x99\xA1\xE2\x99\xA2\xE2\x99\xA4\xE2\x99\xA7", NULL, NULL,
           RED("\xE2\x99\xA1") RED("\xE2\x99\xA2") "\xE2\x99\xA4\xE2\x99\xA7");
    EXPECT("\xE2\x99\xA0\xE2\x99\xA3", NULL, NULL, "\xE2\x99\xA0\xE2\x99\xA3");
}

Test(mx_html, newlines_become_br)
{
    EXPECT("a\nb", NULL, NULL, "a<br>b");
    EXPECT("a\n\nb\n", NULL, NULL, "a<br><br>b<br>");
    EXPECT("\n", NULL, NULL, "<br>");
}

Test(mx_html, private_head_in_bold)
{
    EXPECT("[Card night \xC2\xB7 table 1] alice (South) plays K\xE2\x99\xA0.", NULL, NULL,
           "<b>[Card night \xC2\xB7 table 1]</b> alice (South) plays K\xE2\x99\xA0.");
    EXPECT("[room \xC2\xB7 table 12] Your indicator: K\xE2\x99\xA5 \xE2\x80\x94 \xE2\x99\xA5 hearts are trump.", NULL, NULL,
           "<b>[room \xC2\xB7 table 12]</b> <b>Your indicator</b>: K" RED("\xE2\x99\xA5") " \xE2\x80\x94 "
           RED("\xE2\x99\xA5") " hearts are trump.");
    /* Private messages joined line after line: each keeps its head. */
    EXPECT("[room \xC2\xB7 table 1] Your next four cards: \xE2\x99\xA6 9 K\n"
           "Your hand: \xE2\x99\xA0 A\n"
           "[room \xC2\xB7 table 1] Your turn. Your hand: \xE2\x99\xA0 A",
           NULL, NULL,
           "<b>[room \xC2\xB7 table 1]</b> <b>Your next four cards</b>: " RED("\xE2\x99\xA6") " 9 K<br>"
           "<b>Your hand</b>: \xE2\x99\xA0 A<br>"
           "<b>[room \xC2\xB7 table 1]</b> Your turn. <b>Your hand</b>: \xE2\x99\xA0 A");
    /* A room named with brackets and HTML. */
    EXPECT("[<i>Night</i> [EU] \xC2\xB7 table 3] You play 7\xE2\x99\xA3 face down.", NULL, NULL,
           "<b>[&lt;i&gt;Night&lt;/i&gt; [EU] \xC2\xB7 table 3]</b> You play 7\xE2\x99\xA3 face down.");
    /* The "[room] " of a private !standings answer, on the first line only. */
    EXPECT("[room] Match at table 1, hand 1: alice (South) & carol (North) 11 tokens.\nLeaderboard:\n[x] y", NULL, NULL,
           "<b>[room]</b> Match at table 1, hand 1: alice (South) &amp; carol (North) 11 tokens.<br>"
           "<b>Leaderboard</b>:<br>[x] y");
    /* Not heads: no blank after "]", no "[" first, no table number. */
    EXPECT("[room]x", NULL, NULL, "[room]x");
    EXPECT(" [room] x", NULL, NULL, " [room] x");
    EXPECT("a\n[room \xC2\xB7 table ] x", NULL, NULL, "a<br>[room \xC2\xB7 table ] x");
}

Test(mx_html, headings_on_a_real_table)
{
    /* render_table() for the room, trick 6 of the seed-1 match. */
    EXPECT("Dealer: dave (West) \xC2\xB7 trick 6 of 8\n"
           "Trump maker: dave (West) at Partner Close Caps (bob (East) sits out)\n"
           "Trump: \xE2\x99\xA6 diamonds (indicator 8\xE2\x99\xA6) \xC2\xB7 open game\n"
           "Tricks: South\xE2\x80\x93North 3, East\xE2\x80\x93West 2 \xC2\xB7 points: South\xE2\x80\x93North 89, "
           "East\xE2\x80\x93West 37\n"
           "Tokens: South\xE2\x80\x93North 11, East\xE2\x80\x93West 11\n"
           "alice (South) to lead (trick 6)",
           NULL, NULL,
           "<b>Dealer</b>: dave (West) \xC2\xB7 trick 6 of 8<br>"
           "<b>Trump maker</b>: dave (West) at Partner Close Caps (bob (East) sits out)<br>"
           "<b>Trump</b>: " RED("\xE2\x99\xA6") " diamonds (indicator 8" RED("\xE2\x99\xA6") ") \xC2\xB7 open game<br>"
           "<b>Tricks</b>: South\xE2\x80\x93North 3, East\xE2\x80\x93West 2 \xC2\xB7 points: South\xE2\x80\x93North 89, "
           "East\xE2\x80\x93West 37<br>"
           "<b>Tokens</b>: South\xE2\x80\x93North 11, East\xE2\x80\x93West 11<br>"
           "alice (South) to lead (trick 6)");
    EXPECT("Trick 6: bob (East) K\xE2\x99\xA0 \xC2\xB7 carol (North) \xF0\x9F\x82\xA0", NULL, NULL,
           "<b>Trick 6</b>: bob (East) K\xE2\x99\xA0 \xC2\xB7 carol (North) \xF0\x9F\x82\xA0");
}

Test(mx_html, headings_on_results_and_standings)
{
    EXPECT("dave (West) failed Partner Close Caps: 5 of eight tricks won.\n"
           "Tokens: South\xE2\x80\x93North +5, East\xE2\x80\x93West \xE2\x88\x92" "5 \xC2\xB7 now South\xE2\x80\x93North 16, "
           "East\xE2\x80\x93West 6.\n"
           "Next dealer: alice (South).",
           NULL, NULL,
           "dave (West) failed Partner Close Caps: 5 of eight tricks won.<br>"
           "<b>Tokens</b>: South\xE2\x80\x93North +5, East\xE2\x80\x93West \xE2\x88\x92" "5 \xC2\xB7 now South\xE2\x80\x93North 16, "
           "East\xE2\x80\x93West 6.<br>"
           "<b>Next dealer</b>: alice (South).");
    EXPECT("No match is running here.\nLeaderboard:\n"
           "1. alice \xE2\x80\x94 1 match, 1 won; as trump maker 0 made, 1 failed; 14 hands, tokens +11\n"
           "2. bob \xE2\x80\x94 1 match, 0 won; as trump maker 1 made, 3 failed; 14 hands, tokens -11",
           NULL, NULL,
           "No match is running here.<br><b>Leaderboard</b>:<br>"
           "1. alice \xE2\x80\x94 1 match, 1 won; as trump maker 0 made, 1 failed; 14 hands, tokens +11<br>"
           "2. bob \xE2\x80\x94 1 match, 0 won; as trump maker 1 made, 3 failed; 14 hands, tokens -11");
    EXPECT("Leaderboard: nobody has finished a hand here yet.", NULL, NULL,
           "<b>Leaderboard</b>: nobody has finished a hand here yet.");
    EXPECT("Match over: South\xE2\x80\x93North (alice (South) & carol (North)) win the match!", NULL, NULL,
           "<b>Match over</b>: South\xE2\x80\x93North (alice (South) &amp; carol (North)) win the match!");
    /* A label after the last ". " before the first colon. */
    EXPECT("Hand 1 \xE2\x80\x94 dealer dave (West). Tokens: South\xE2\x80\x93North 11. Seed commitment: 3f30", NULL, NULL,
           "Hand 1 \xE2\x80\x94 dealer dave (West). <b>Tokens</b>: South\xE2\x80\x93North 11. Seed commitment: 3f30");
}

Test(mx_html, what_is_not_a_heading)
{
    const char *plain[] = {
        "alice (South): bid 160 or more, pass, or ask partner",
        "Match at table 1, hand 1: alice (South) & carol (North) 11 tokens",
        "Eight-card round \xE2\x80\x94 carol (North): bid 250 or more",
        "Your four cards are worth 12 points: you may ask for a redeal",
        "ABCDEFGHIJKLMNOPQRSTUVWXY: 25 bytes is too long",
        "lowercase: no",
        "Time 10:30 is not a colon with a blank",
        "Tokens : blank before the colon",
        "Under_score: no",
        ": nothing before",
        "304: 32 cards",
        "A trump was played face down! Turned up: K\xE2\x99\xA0 (alice (South))",
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        html(plain[i], NULL, NULL);
        cr_assert_null(strstr(out, "<b>"), "bold in %s", out);
    }
    EXPECT("ABCDEFGHIJKLMNOPQRSTUVWX: 24 bytes", NULL, NULL, "<b>ABCDEFGHIJKLMNOPQRSTUVWX</b>: 24 bytes");
    EXPECT("Ends here:", NULL, NULL, "<b>Ends here</b>:");
    EXPECT("Trick 2: a: b", NULL, NULL, "<b>Trick 2</b>: a: b");
}

Test(mx_html, column_lines_in_a_pre_block)
{
    /* A grid of contracts: its lines keep their blanks in one <pre> block; prose around it does
     * not, and two blanks (before "(indicator …)") are prose. */
    EXPECT("Grid of alice (seat 1):\n    a           b\n1   zero        [one]\nNext: bob  (x)", NULL, NULL,
           "Grid of alice (seat 1):<br><pre>    a           b\n1   zero        [one]</pre><br><b>Next</b>: bob  (x)");
    EXPECT("    a   b\n1   \xE2\x99\xA5", NULL, NULL, "<pre>    a   b\n1   " RED("\xE2\x99\xA5") "</pre>");
    EXPECT("x   y\n\nz   w", NULL, NULL, "<pre>x   y</pre><br><br><pre>z   w</pre>");
}

Test(mx_html, mention_pill)
{
    EXPECT("alice (South): bid 160 or more, pass, or ask partner", "@alice:example.org", "alice",
           PILL("@alice:example.org", "alice") " (South): bid 160 or more, pass, or ask partner");
    /* First occurrence only. */
    EXPECT("Eight-card round \xE2\x80\x94 alice (South): bid 250 or more (highest bid 220 by alice (South))",
           "@alice:example.org", "alice (South)",
           "Eight-card round \xE2\x80\x94 " PILL("@alice:example.org", "alice (South)")
           ": bid 250 or more (highest bid 220 by alice (South))");
    /* A name with HTML in it is escaped inside the pill. */
    EXPECT("<b>al&ce</b> \"x\" (South): cut the pack", "@alice:example.org", "<b>al&ce</b> \"x\"",
           PILL("@alice:example.org", "&lt;b&gt;al&amp;ce&lt;/b&gt; &quot;x&quot;") " (South): cut the pack");
    /* A red suit in the name. */
    EXPECT("\xE2\x99\xA5 bob (East): pass", "@bob:x.org", "\xE2\x99\xA5 bob",
           PILL("@bob:x.org", RED("\xE2\x99\xA5") " bob") " (East): pass");
    /* The user id: readable characters kept, the rest percent-encoded. */
    EXPECT("bob (East): go", "@x.y_z-w=v/u+t:host.example.org:8448", "bob",
           PILL("@x.y_z-w=v/u+t:host.example.org:8448", "bob") " (East): go");
    EXPECT("bob (East): go", "@a\"b<c>'d e&f%g\x01\xC3\xA9#?:x.org", "bob",
           PILL("@a%22b%3Cc%3E%27d%20e%26f%25g%01%C3%A9%23%3F:x.org", "bob") " (East): go");
    /* Not glued to a longer word when a free occurrence exists; else the first one. */
    EXPECT("Dealer: al (South)", "@al:x.org", "al", "<b>Dealer</b>: " PILL("@al:x.org", "al") " (South)");
    EXPECT("Dealer: alice", "@al:x.org", "al", "<b>De" PILL("@al:x.org", "al") "er</b>: alice");
    EXPECT("bobby and bob", "@bob:x.org", "bob", "bobby and " PILL("@bob:x.org", "bob"));
    EXPECT("bob_x bob", "@bob:x.org", "bob", "bob_x " PILL("@bob:x.org", "bob"));
}

Test(mx_html, mention_and_bold_nest_or_bold_gives_way)
{
    /* The pill inside a bold label, the bold label inside the pill, the same span. */
    EXPECT("Trump maker: bob (East)", "@t:x.org", "Trump", "<b>" PILL("@t:x.org", "Trump") " maker</b>: bob (East)");
    EXPECT("Trump maker: bob (East)", "@t:x.org", "Trump maker: bob",
           PILL("@t:x.org", "<b>Trump maker</b>: bob") " (East)");
    EXPECT("Dealer: x", "@d:x.org", "Dealer", "<b>" PILL("@d:x.org", "Dealer") "</b>: x");
    /* Cutting across the label: the bold is left out, on that line only. */
    EXPECT("Trump maker: bob (East)\nTokens: 3", "@t:x.org", "maker: bob",
           "Trump " PILL("@t:x.org", "maker: bob") " (East)<br><b>Tokens</b>: 3");
    /* Across a head, and across lines. */
    EXPECT("[room \xC2\xB7 table 1] x", "@r:x.org", "table 1] x", "[room \xC2\xB7 " PILL("@r:x.org", "table 1] x"));
    EXPECT("Dealer: ann\nTokens: 3", "@a:x.org", "ann\nTokens",
           "<b>Dealer</b>: " PILL("@a:x.org", "ann<br><b>Tokens</b>") ": 3");
}

Test(mx_html, no_mention_without_the_name)
{
    const char *text = "bob (East): bid 160 or more";
    EXPECT(text, "@alice:example.org", "alice", "bob (East): bid 160 or more");
    EXPECT(text, "@alice:example.org", "", "bob (East): bid 160 or more");
    EXPECT(text, "@alice:example.org", NULL, "bob (East): bid 160 or more");
    EXPECT(text, NULL, "bob", "bob (East): bid 160 or more");
    EXPECT(text, "", "bob", "bob (East): bid 160 or more");
    /* A name that would end or start inside a character does not match. */
    EXPECT("\xE2\x99\xA5 x", "@h:x.org", "\xE2\x99", RED("\xE2\x99\xA5") " x");
    EXPECT("\xE2\x99\xA5 x", "@h:x.org", "\x99\xA5 x", RED("\xE2\x99\xA5") " x");
    /* The case differs: no match. */
    EXPECT("Bob (East): pass", "@bob:x.org", "bob", "Bob (East): pass");
}

Test(mx_html, invalid_utf8_and_controls)
{
    EXPECT("a\xFF" "b", NULL, NULL, "a" FFFD "b");
    EXPECT("\xE2\x99", NULL, NULL, FFFD FFFD);               /* cut short */
    EXPECT("\xE2\x99 K", NULL, NULL, FFFD FFFD " K");
    EXPECT("\xC0\xAF", NULL, NULL, FFFD FFFD);               /* overlong */
    EXPECT("\xE0\x80\xAF", NULL, NULL, FFFD FFFD FFFD);      /* overlong */
    EXPECT("\xED\xA0\x80", NULL, NULL, FFFD FFFD FFFD);      /* surrogate */
    EXPECT("\xF4\x90\x80\x80", NULL, NULL, FFFD FFFD FFFD FFFD); /* above U+10FFFF */
    EXPECT("\x80<", NULL, NULL, FFFD "&lt;");
    EXPECT("a\x01" "b\x1F" "c\x7F" "d\te\r", NULL, NULL, "a" FFFD "b" FFFD "c" FFFD "d\te" FFFD);
    EXPECT("x\xC2\x85y\xC2\xA0z", NULL, NULL, "x" FFFD "y\xC2\xA0z"); /* C1 NEL replaced, NBSP kept */
    EXPECT("\xF0\x9F\x82\xA0\xF4\x8F\xBF\xBF", NULL, NULL, "\xF0\x9F\x82\xA0\xF4\x8F\xBF\xBF");
}

Test(mx_html, measures_without_a_buffer)
{
    const char *text = "alice: \xE2\x99\xA5 & <x>";
    size_t full = mx_html(text, "@alice:x.org", "alice", NULL, 0);
    cr_assert_eq(full, strlen(html(text, "@alice:x.org", "alice")));
    char one = 'Q';
    cr_assert_eq(mx_html(text, "@alice:x.org", "alice", &one, 0), full);
    cr_assert_eq(one, 'Q', "len 0 must not write");
    cr_assert_eq(mx_html(text, "@alice:x.org", "alice", &one, 1), full);
    cr_assert_eq(one, 0);
}

/* ---- cuts ---- */

/* The closing tags for the elements open at the end of h (a prefix of a full output). */
static void open_closers(const char *h, size_t n, char *closers)
{
    char stack[16];
    int depth = 0;
    for (size_t i = 0; i < n;) {
        char kind;
        int closing;
        size_t k = h[i] == '<' ? tag_at(h + i, &kind, &closing) : 0;
        if (k == 0) { i++; continue; }
        if (kind == 'b' || kind == 'a' || kind == 'p') {
            if (closing) depth--;
            else stack[depth++] = kind;
        }
        i += k;
    }
    closers[0] = 0;
    while (depth > 0) {
        char kind = stack[--depth];
        strcat(closers, kind == 'a' ? "</a>" : kind == 'p' ? "</pre>" : "</b>");
    }
}

/* Whether a cut of full at k leaves every piece whole: not inside a tag, an entity, a UTF-8
 * character, a red suit's font, and not right after an opening tag (opened with content only). */
static int whole_at(const char *full, size_t k)
{
    int in_ent = 0, in_font = 0;
    size_t tag = (size_t)-1, after_open = (size_t)-1; /* tag: where the tag we are in started */
    for (size_t i = 0; i < k; i++) {
        char c = full[i];
        if (tag != (size_t)-1) {
            if (c != '>') continue;
            if (full[tag + 1] != '/' && strncmp(full + tag, "<br>", 4) != 0) after_open = i + 1;
            if (is_red_open(full + tag)) in_font = 1;
            if (strncmp(full + tag, "</font>", 7) == 0) in_font = 0;
            tag = (size_t)-1;
        } else if (in_ent) {
            if (c == ';') in_ent = 0;
        } else if (c == '<') {
            tag = i;
        } else if (c == '&') {
            in_ent = 1;
        }
    }
    if (tag != (size_t)-1 || in_ent || in_font || after_open == k) return 0;
    return ((unsigned char)full[k] & 0xC0) != 0x80;
}

/* Checks a cut output against the full one: full[:k] + the closers of what is open at k, k a
 * whole-piece boundary. */
static void check_cut(const char *full, const char *got, size_t len)
{
    size_t g = strlen(got);
    char closers[80], text[BIG];
    int found = 0;
    /* Try every split of got into a prefix and a tail made of closing tags. */
    for (size_t k = g;;) {
        if (strncmp(full, got, k) == 0 && whole_at(full, k)) {
            open_closers(full, k, closers);
            if (strcmp(got + k, closers) == 0) { found = 1; break; }
        }
        if (k >= 4 && (strncmp(got + k - 4, "</a>", 4) == 0 || strncmp(got + k - 4, "</b>", 4) == 0)) k -= 4;
        else if (k >= 6 && strncmp(got + k - 6, "</pre>", 6) == 0) k -= 6;
        else break;
    }
    cr_assert(found, "len %zu: bad cut \"%s\" of \"%s\"", len, got, full);
    cr_assert(valid_utf8(got), "len %zu: invalid UTF-8", len);
    strip(got, text, sizeof text);
    /* No more than one piece (the largest: a pill opening with its first character, or a red
     * suit) and the closers are given up. */
    cr_assert_geq(g + 120, len - 1, "len %zu: only %zu bytes used", len, g);
}

/* Every cut of text's HTML, from no room to more than enough. */
static void cut_all(const char *text, const char *user, const char *name, int pills)
{
    static char full[BIG], got[BIG], back[BIG];
    size_t n = mx_html(text, user, name, full, sizeof full);
    cr_assert_eq(n, strlen(full));
    cr_assert_eq(strip(full, back, sizeof back), pills);
    cr_assert_str_eq(back, text);
    size_t prev = 0;
    for (size_t len = 0; len <= n + 2; len++) {
        memset(got, 'Z', sizeof got);
        size_t r = mx_html(text, user, name, got, len);
        cr_assert_eq(r, n, "len %zu: returned %zu, full is %zu", len, r, n);
        if (len == 0) {
            cr_assert_eq(got[0], 'Z', "len 0 must not write");
            continue;
        }
        size_t g = strnlen(got, len);
        cr_assert_lt(g, len, "len %zu: not NUL-terminated in the buffer", len);
        cr_assert_eq(got[len], 'Z', "len %zu: wrote past the buffer", len);
        if (len > n) {
            cr_assert_str_eq(got, full);
            continue;
        }
        check_cut(full, got, len);
        /* The text kept grows with the room. */
        strip(got, back, sizeof back);
        size_t kept = strlen(back);
        cr_assert_eq(strncmp(back, text, kept), 0, "len %zu: text %s is no prefix", len, back);
        cr_assert_geq(kept, prev, "len %zu: less text than with less room", len);
        prev = kept;
    }
    cr_assert_gt(prev, strlen(text) / 2, "the cuts near the full length kept too little");
}

Test(mx_html, cut_at_every_length)
{
    cut_all("[Card night \xC2\xB7 table 2] Tokens: \xE2\x99\xA5 J 9 \xC2\xB7 \xE2\x99\xA6 A & <x> \"q\" 'a'\n"
            "Dealer: alice (South): go \xE2\x99\xA3 \xF0\x9F\x82\xA0 \xC3\xA9\xE2\x99\xA5",
            "@ali ce:example.org", "alice (South)", 1);
    /* A grid in a <pre> block, with the mention inside it. */
    cut_all("Grid of seat 1:\n    a           b\n1   alice       [one]\n2   \xE2\x99\xA5 x   y\nDone.",
            "@alice:example.org", "alice", 1);
}

/* ---- random texts ---- */

static uint64_t rng = 0x9E3779B97F4A7C15u;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static const char *const bits[] = {
    "a", "b", "Z", "7", " ", " ", "(South)", "alice", "bob", "\xE2\x99\xA0", "\xE2\x99\xA5", "\xE2\x99\xA6",
    "\xE2\x99\xA3", "\xE2\x99\xA1", "\xE2\x99\xA2", "<", ">", "&", "\"", "'", "\n", "\n", "[Card night \xC2\xB7 table 3] ",
    "[room] ", "[", "]", "Tokens: ", "Your turn. Your hand: ", ": ", ". ", "\xC2\xB7", "\xE2\x80\x94", "\xC3\xA9",
    "\xF0\x9F\x82\xA0", "&amp;", "<br>", "<b>x</b>", "\t", "Trick 3:", "   ", "1   zero        [one]\n",
};

static void random_text(char *t, size_t cap)
{
    size_t n = 0, parts = rnd(40);
    t[0] = 0;
    for (size_t i = 0; i < parts; i++) {
        const char *b = bits[rnd(sizeof bits / sizeof bits[0])];
        if (n + strlen(b) + 1 >= cap) break;
        strcpy(t + n, b);
        n += strlen(b);
    }
}

static int count_red(const char *t)
{
    int k = 0;
    for (const char *p = t; (p = strstr(p, "\xE2\x99")) != NULL; p += 2)
        k += p[2] == '\xA5' || p[2] == '\xA6' || p[2] == '\xA1' || p[2] == '\xA2';
    return k;
}

static int count_fonts(const char *h)
{
    int k = 0;
    for (const char *p = h; (p = strstr(p, "<font")) != NULL; p++) k++;
    return k;
}

Test(mx_html, random_texts_round_trip)
{
    static char text[2048], name[64], back[BIG];
    int pills = 0, bolds = 0;
    for (int i = 0; i < 600; i++) {
        random_text(text, sizeof text);
        const char *user = NULL;
        name[0] = 0;
        switch (rnd(3)) {
        case 0: break;
        case 1: { /* a piece of the text, cut at character boundaries */
            size_t n = strlen(text);
            if (n == 0) break;
            size_t s = rnd((unsigned)n), l = 1 + rnd(12);
            while (s > 0 && ((unsigned char)text[s] & 0xC0) == 0x80) s--;
            if (s + l > n) l = n - s;
            while (s + l < n && ((unsigned char)text[s + l] & 0xC0) == 0x80) l++;
            memcpy(name, text + s, l);
            name[l] = 0;
            user = rnd(2) ? "@alice:example.org" : "@\"<a>' &%:x.org";
            break;
        }
        default: strcpy(name, rnd(2) ? "alice" : "<b>al&ce\xE2\x99\xA5"); user = "@alice:example.org";
        }
        const char *h = html(text, user, name);
        cr_assert(valid_utf8(h), "invalid UTF-8 from \"%s\"", text);
        int p = strip(h, back, sizeof back);
        cr_assert_str_eq(back, text, "round trip of \"%s\" gave \"%s\" from %s", text, back, h);
        cr_assert_eq(p, user && name[0] && strstr(text, name) ? 1 : 0, "pills %d for \"%s\" in \"%s\": %s", p, name,
                     text, h);
        cr_assert_eq(count_fonts(h), count_red(text), "red suits of \"%s\": %s", text, h);
        pills += p;
        bolds += strstr(h, "<b>") != NULL;
    }
    cr_assert_gt(pills, 100, "too few pills (%d) to test anything", pills);
    cr_assert_gt(bolds, 100, "too few bold spans (%d) to test anything", bolds);
}

Test(mx_html, random_bytes_stay_valid)
{
    static char text[256], full[BIG], got[BIG], back[BIG], ascii_in[256], ascii_out[BIG];
    for (int i = 0; i < 600; i++) {
        size_t n = 1 + rnd(80);
        for (size_t k = 0; k < n; k++) {
            unsigned c = 1 + rnd(255);
            if (rnd(4) == 0) c = "\xE2\x99\xA5\xF0\x9F\x82\xA0\xC3\xA9<&\n["[rnd(14)] & 0xFF; /* pieces of valid ones */
            text[k] = (char)c;
        }
        text[n] = 0;
        const char *user = rnd(2) ? "@\xFF\x01:x.org" : NULL;
        char name[4] = {text[rnd((unsigned)n)], text[rnd((unsigned)n)], 0, 0};
        size_t full_len = mx_html(text, user, name, full, sizeof full);
        cr_assert_eq(full_len, strlen(full));
        cr_assert(valid_utf8(full), "invalid UTF-8 out of random bytes");
        strip(full, back, sizeof back);
        /* Every printable ASCII byte, and every \n, comes through in order. */
        size_t a = 0, b = 0;
        for (size_t k = 0; text[k]; k++)
            if ((text[k] >= 0x20 && text[k] < 0x7F) || text[k] == '\n' || text[k] == '\t') ascii_in[a++] = text[k];
        for (size_t k = 0; back[k]; k++)
            if ((back[k] >= 0x20 && back[k] < 0x7F) || back[k] == '\n' || back[k] == '\t') ascii_out[b++] = back[k];
        ascii_in[a] = ascii_out[b] = 0;
        cr_assert_str_eq(ascii_out, ascii_in);
        cr_assert(strchr(back, '\r') == NULL && strchr(back, '\x01') == NULL, "control character passed");
        /* A few cuts. */
        for (int c = 0; c < 4; c++) {
            size_t len = 1 + rnd((unsigned)full_len + 1);
            cr_assert_eq(mx_html(text, user, name, got, len), full_len);
            cr_assert(valid_utf8(got));
            if (len <= full_len) check_cut(full, got, len);
        }
    }
}
