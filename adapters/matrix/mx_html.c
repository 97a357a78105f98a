/* mx_html.c — the bot's plain text as Matrix HTML (mx_html.h).
 *
 * One pass over the text, one unit at a time (a valid UTF-8 character, or one bad byte). At
 * the start of each line the line's bold spans (head, heading label) are found; the mention's
 * span is found once for the whole text. Spans open and close on unit boundaries and nest (a
 * bold span the mention would cut across is dropped), so a small stack of open elements is
 * enough. Output goes through mx_out, which writes whole pieces only and keeps room for the
 * closing tags of the elements it has opened (see "Cuts" in mx_html.h). */
#include "mx_html.h"

#include <stdint.h>
#include <string.h>

#define MX_RED_OPEN "<font color=\"#d00000\" data-mx-color=\"#d00000\">"
#define MX_RED_CLOSE "</font>"
#define MX_FFFD "\xEF\xBF\xBD"
#define MX_PILL_OPEN "<a href=\"https://matrix.to/#/"
#define MX_PILL_END "\">"
#define MX_DEPTH 4       /* at most a table block, a bold span and the pill are open at once */
#define MX_LABEL_MAX 24  /* the longest heading label, in bytes */
#define MX_TABLE_HEAD " \xC2\xB7 table " /* " · table " in "[room · table 1] " */

enum { MX_BOLD, MX_PILL, MX_PRE };
enum { MX_PENDING, MX_WRITTEN, MX_DONE };

typedef struct {
    int kind, state;
    size_t end; /* where in the text the element closes */
} mx_elem;

typedef struct {
    char *buf;
    size_t len, used, total, reserve; /* reserve: bytes of closing tags for the written elements */
    int full;
    const char *user;     /* the pill's user id, or NULL */
    size_t pill_open_len; /* length of the pill's opening tag */
    mx_elem st[MX_DEPTH];
    int depth;
} mx_out;

/* ---- the user id in a link ---- */

static int mx_url_keep(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("@:._-=/+", c));
}

static size_t mx_url_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += mx_url_keep((unsigned char)*s) ? 1 : 3;
    return n;
}

static char *mx_url_write(char *p, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (mx_url_keep(c)) {
            *p++ = (char)c;
        } else {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
    }
    return p;
}

/* ---- bounded output ---- */

static size_t mx_open_len(const mx_out *o, int kind)
{
    return kind == MX_PILL ? o->pill_open_len : kind == MX_PRE ? 5 : 3; /* "<pre>", "<b>" */
}

static size_t mx_close_len(int kind) { return kind == MX_PRE ? 6 : 4; } /* "</pre>", "</a>", "</b>" */

static void mx_write_open(mx_out *o, int kind)
{
    char *p = o->buf + o->used;
    if (kind == MX_PILL) {
        memcpy(p, MX_PILL_OPEN, sizeof MX_PILL_OPEN - 1);
        p = mx_url_write(p + sizeof MX_PILL_OPEN - 1, o->user);
        memcpy(p, MX_PILL_END, sizeof MX_PILL_END - 1);
    } else {
        memcpy(p, kind == MX_PRE ? "<pre>" : "<b>", mx_open_len(o, kind));
    }
    o->used += mx_open_len(o, kind);
}

static void mx_write_close(mx_out *o, int kind)
{
    memcpy(o->buf + o->used, kind == MX_PILL ? "</a>" : kind == MX_PRE ? "</pre>" : "</b>", mx_close_len(kind));
    o->used += mx_close_len(kind);
}

/* Adds one whole piece of n bytes, with the opening tags of elements still pending, or else
 * stops the output for good and closes the elements written so far (their room is kept). */
static void mx_put(mx_out *o, const char *s, size_t n)
{
    o->total += n;
    if (o->full) return;
    size_t need = n, reserve = o->reserve;
    for (int i = 0; i < o->depth; i++)
        if (o->st[i].state == MX_PENDING) {
            need += mx_open_len(o, o->st[i].kind);
            reserve += mx_close_len(o->st[i].kind);
        }
    if (o->used + need + reserve < o->len) {
        for (int i = 0; i < o->depth; i++)
            if (o->st[i].state == MX_PENDING) {
                mx_write_open(o, o->st[i].kind);
                o->st[i].state = MX_WRITTEN;
                o->reserve += mx_close_len(o->st[i].kind);
            }
        memcpy(o->buf + o->used, s, n);
        o->used += n;
        return;
    }
    o->full = 1;
    for (int i = o->depth - 1; i >= 0; i--)
        if (o->st[i].state == MX_WRITTEN) {
            mx_write_close(o, o->st[i].kind);
            o->st[i].state = MX_DONE;
        }
    o->reserve = 0;
}

static void mx_open(mx_out *o, int kind, size_t end)
{
    o->total += mx_open_len(o, kind);
    if (o->depth == MX_DEPTH) return; /* cannot happen: spans nest at most two deep */
    o->st[o->depth++] = (mx_elem){kind, MX_PENDING, end};
}

static void mx_close(mx_out *o)
{
    mx_elem *e = &o->st[--o->depth];
    o->total += mx_close_len(e->kind);
    if (e->state != MX_WRITTEN) return;
    mx_write_close(o, e->kind); /* fits: its room was kept */
    o->reserve -= mx_close_len(e->kind);
}

/* ---- UTF-8 ---- */

/* Length (2..4) of the valid UTF-8 character at s (non-ASCII lead byte), with its code point
 * in *cp; 0 if the byte at s does not start one. s is NUL-terminated, so reading stops there. */
static size_t mx_utf8(const unsigned char *s, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        *cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        *cp = c & 0x0F;
        if (c == 0xE0) lo = 0xA0;  /* no overlong forms */
        if (c == 0xED) hi = 0x9F;  /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        *cp = c & 0x07;
        if (c == 0xF0) lo = 0x90;  /* no overlong forms */
        if (c == 0xF4) hi = 0x8F;  /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (s[i] < lo || s[i] > hi) return 0;
        *cp = (*cp << 6) | (s[i] & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    return n;
}

/* Bytes of the unit at t[p]: a whole valid character, or 1 for ASCII and for a bad byte. */
static size_t mx_unit_len(const char *t, size_t p)
{
    uint32_t cp;
    size_t n = (unsigned char)t[p] < 0x80 ? 1 : mx_utf8((const unsigned char *)t + p, &cp);
    return n ? n : 1;
}

/* Writes the unit at t[p] (not a \n) and returns its length in the text. */
static size_t mx_unit(mx_out *o, const char *t, size_t p)
{
    unsigned char c = (unsigned char)t[p];
    if (c < 0x80) {
        switch (c) {
        case '&': mx_put(o, "&amp;", 5); break;
        case '<': mx_put(o, "&lt;", 4); break;
        case '>': mx_put(o, "&gt;", 4); break;
        case '"': mx_put(o, "&quot;", 6); break;
        case '\'': mx_put(o, "&#39;", 5); break;
        default:
            if ((c < 0x20 && c != '\t') || c == 0x7F)
                mx_put(o, MX_FFFD, 3);
            else
                mx_put(o, t + p, 1);
        }
        return 1;
    }
    uint32_t cp;
    size_t n = mx_utf8((const unsigned char *)t + p, &cp);
    if (n == 0) {
        mx_put(o, MX_FFFD, 3);
        return 1;
    }
    if (cp == 0x2665 || cp == 0x2666 || cp == 0x2661 || cp == 0x2662) { /* ♥ ♦ ♡ ♢ */
        char red[sizeof MX_RED_OPEN + sizeof MX_RED_CLOSE + 4];
        size_t k = sizeof MX_RED_OPEN - 1;
        memcpy(red, MX_RED_OPEN, k);
        memcpy(red + k, t + p, n);
        memcpy(red + k + n, MX_RED_CLOSE, sizeof MX_RED_CLOSE - 1);
        mx_put(o, red, k + n + sizeof MX_RED_CLOSE - 1);
    } else if (cp <= 0x9F) { /* C1 control */
        mx_put(o, MX_FFFD, 3);
    } else {
        mx_put(o, t + p, n);
    }
    return n;
}

/* ---- spans ---- */

typedef struct {
    size_t start, end; /* end == start: none */
} mx_span;

static int mx_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The first occurrence of name in t on unit boundaries, preferring one that is not part of a
 * longer word. */
static mx_span mx_find_mention(const char *t, const char *name)
{
    mx_span none = {0, 0}, first = none;
    size_t n = strlen(name);
    if (n == 0) return none;
    for (size_t p = 0; t[p]; p += mx_unit_len(t, p)) {
        if (strncmp(t + p, name, n) != 0) continue;
        size_t q = p;
        while (q < p + n) q += mx_unit_len(t, q);
        if (q != p + n) continue; /* would end inside a character */
        int glued = (p > 0 && mx_word((unsigned char)t[p - 1]) && mx_word((unsigned char)name[0])) ||
                    (mx_word((unsigned char)t[p + n]) && mx_word((unsigned char)name[n - 1]));
        if (!glued) return (mx_span){p, p + n};
        if (first.end == 0) first = (mx_span){p, p + n};
    }
    return first;
}

/* The head of the line [ls, le): "[… · table N]" anywhere, or on the first line "[…]" up to its
 * first "]"; followed by a blank. Returns its end (after the "]"), or ls for none. */
static size_t mx_head(const char *t, size_t ls, size_t le, int first_line)
{
    if (t[ls] != '[') return ls;
    size_t k = sizeof MX_TABLE_HEAD - 1;
    for (size_t q = ls + 1; q < le; q++) {
        if (strncmp(t + q, MX_TABLE_HEAD, k) != 0) continue;
        size_t r = q + k;
        while (t[r] >= '0' && t[r] <= '9') r++;
        if (r > q + k && t[r] == ']' && t[r + 1] == ' ') return r + 1;
    }
    if (!first_line) return ls;
    const char *close = memchr(t + ls, ']', le - ls);
    if (close && close[1] == ' ') return (size_t)(close - t) + 1;
    return ls;
}

/* The heading label of the line [from, le) (from: after the head), or an empty span. */
static mx_span mx_label(const char *t, size_t from, size_t le)
{
    mx_span none = {0, 0};
    size_t c = from;
    while (c < le && !(t[c] == ':' && (c + 1 == le || t[c + 1] == ' '))) c++;
    if (c == le) return none;
    size_t s = from;
    for (size_t q = from; q + 1 < c; q++)
        if (t[q] == '.' && t[q + 1] == ' ') s = q + 2;
    if (c <= s || c - s > MX_LABEL_MAX || !(t[s] >= 'A' && t[s] <= 'Z') || t[c - 1] == ' ') return none;
    for (size_t q = s; q < c; q++)
        if (t[q] != ' ' && (t[q] == '_' || !mx_word((unsigned char)t[q]))) return none;
    return (mx_span){s, c};
}

/* Whether bold span b may be kept along with the mention m: apart from it, or nested. */
static int mx_fits(mx_span b, mx_span m)
{
    if (b.end == b.start) return 0;
    if (m.end == m.start || b.end <= m.start || b.start >= m.end) return 1;
    return (b.start <= m.start && m.end <= b.end) || (m.start <= b.start && b.end <= m.end);
}

/* Whether the line [ls, le) is laid out in columns: it has a run of three or more blanks
 * (a grid of contracts). Prose never has one. */
static int mx_columns(const char *t, size_t ls, size_t le)
{
    for (size_t q = ls; q + 2 < le; q++)
        if (t[q] == ' ' && t[q + 1] == ' ' && t[q + 2] == ' ') return 1;
    return 0;
}

/* The end of the block of column lines that starts with the line [ls, le): the end of its last
 * line (its \n, or the text's end). */
static size_t mx_block_end(const char *t, size_t le)
{
    while (t[le] == '\n') {
        size_t next = le + 1 + strcspn(t + le + 1, "\n");
        if (!mx_columns(t, le + 1, next)) break;
        le = next;
    }
    return le;
}

/* ---- the text ---- */

size_t mx_html(const char *text, const char *mention_user, const char *mention_name, char *buf, size_t len)
{
    const char *t = text ? text : "";
    mx_out o = {.buf = buf, .len = buf ? len : 0, .full = !buf || len == 0};
    mx_span m = {0, 0};
    if (mention_user && mention_user[0] && mention_name && mention_name[0]) {
        m = mx_find_mention(t, mention_name);
        o.user = mention_user;
        o.pill_open_len = sizeof MX_PILL_OPEN - 1 + mx_url_len(mention_user) + sizeof MX_PILL_END - 1;
    }
    mx_span bold[2] = {{0, 0}, {0, 0}};
    int line_start = 1, first_line = 1;
    size_t p = 0, block_end = 0; /* block_end: the end of the open <pre> block (0: none) */
    for (;;) {
        if (line_start) {
            size_t le = p + strcspn(t + p, "\n");
            if (p >= block_end && mx_columns(t, p, le)) {
                block_end = mx_block_end(t, le);
                mx_open(&o, MX_PRE, block_end);
            }
            size_t he = mx_head(t, p, le, first_line);
            bold[0] = (mx_span){p, he};
            bold[1] = mx_label(t, he > p ? he + 1 : p, le);
            for (int i = 0; i < 2; i++)
                if (!mx_fits(bold[i], m)) bold[i] = (mx_span){0, 0};
            line_start = first_line = 0;
        }
        while (o.depth > 0 && o.st[o.depth - 1].end == p) mx_close(&o);
        if (!t[p]) break;
        /* Open what starts here, the longer span outside (bold outside on a tie). */
        int pill_here = m.end > m.start && m.start == p;
        for (int i = 0; i < 2; i++) {
            if (bold[i].end == bold[i].start || bold[i].start != p) continue;
            if (pill_here && m.end > bold[i].end) {
                mx_open(&o, MX_PILL, m.end);
                pill_here = 0;
            }
            mx_open(&o, MX_BOLD, bold[i].end);
        }
        if (pill_here) mx_open(&o, MX_PILL, m.end);
        if (t[p] == '\n') {
            if (p < block_end) mx_put(&o, "\n", 1); /* inside a <pre> block */
            else mx_put(&o, "<br>", 4);
            p++;
            line_start = 1;
        } else {
            p += mx_unit(&o, t, p);
        }
    }
    while (o.depth > 0) mx_close(&o); /* cannot happen: every span ends inside the text */
    if (o.len) buf[o.used] = 0;
    return o.total;
}
