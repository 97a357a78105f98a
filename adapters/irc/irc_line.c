/* irc_line.c — see irc_line.h. */
#include "irc_line.h"

#include <string.h>

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/* A command is one or more letters, or exactly three digits. */
static bool valid_command(const char *c, size_t n)
{
    if (n == 0) return false;
    if (is_digit((unsigned char)c[0])) {
        return n == 3 && is_digit((unsigned char)c[1]) && is_digit((unsigned char)c[2]);
    }
    for (size_t i = 0; i < n; i++)
        if (!is_alpha((unsigned char)c[i])) return false;
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Units: a valid UTF-8 character, a colour code, or a single (possibly replaced) byte.
 * ------------------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1..4), 0 if invalid. Never reads past a NUL: the
 * continuation checks fail on it first. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0;
    if (c < 0xE0) return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && s[1] >= 0xA0) return 0; /* surrogate */
        return 3;
    }
    if (c < 0xF5) {
        if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
        if (c == 0xF4 && s[1] >= 0x90) return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

/* Length of the colour code at s (s[0] == 0x03): "\x03" [d[d] ["," d[d]]]. */
static size_t colour_len(const unsigned char *s)
{
    size_t n = 1;
    if (is_digit(s[n])) {
        n++;
        if (is_digit(s[n])) n++;
        if (s[n] == ',' && is_digit(s[n + 1])) {
            n += 2;
            if (is_digit(s[n])) n++;
        }
    }
    return n;
}

static bool kept_control(unsigned char c)
{
    return c == 0x02 || c == 0x03 || c == 0x0F || c == 0x1D || c == 0x1F;
}

enum unit_kind { U_TEXT, U_SPACE, U_NEWLINE };

/* Reads the unit at s (s[0] != 0): returns its length n and writes its n sanitised bytes. */
static size_t unit_at(const unsigned char *s, unsigned char out[8], enum unit_kind *kind)
{
    unsigned char c = s[0];
    *kind = U_TEXT;
    if (c == '\n') {
        *kind = U_NEWLINE;
        out[0] = c;
        return 1;
    }
    if (c == 0x03) {
        size_t n = colour_len(s);
        memcpy(out, s, n);
        return n;
    }
    if (c < 0x20 || c == 0x7F) {
        if (kept_control(c)) {
            out[0] = c;
        } else {
            out[0] = ' ';
            *kind = U_SPACE;
        }
        return 1;
    }
    if (c == ' ') *kind = U_SPACE;
    size_t n = utf8_len(s);
    if (n == 0) {
        out[0] = '?';
        return 1;
    }
    memcpy(out, s, n);
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------------------------- */

static bool valid_tag_key(const char *k)
{
    if (*k == '+') k++;
    if (!*k) return false;
    for (; *k; k++) {
        unsigned char c = (unsigned char)*k;
        if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '.' && c != '/') return false;
    }
    return true;
}

/* Unescapes an IRCv3 tag value in place. */
static void unescape_value(char *v)
{
    char *w = v;
    for (const char *r = v; *r; r++) {
        if (*r != '\\') {
            *w++ = *r;
            continue;
        }
        r++;
        switch (*r) {
        case '\0': r--; break; /* a trailing lone backslash is dropped */
        case ':': *w++ = ';'; break;
        case 's': *w++ = ' '; break;
        case 'r': *w++ = '\r'; break;
        case 'n': *w++ = '\n'; break;
        default: *w++ = *r; break; /* "\\" → '\', unknown "\x" → 'x' */
        }
    }
    *w = '\0';
}

/* t: the tags text after '@', NUL-terminated. */
static int parse_tags(char *t, irc_msg *m)
{
    char *s = t;
    for (;;) {
        char *e = strchr(s, ';');
        if (e) *e = '\0';
        if (*s) {
            char *eq = strchr(s, '=');
            const char *val;
            if (eq) {
                *eq = '\0';
                unescape_value(eq + 1);
                val = eq + 1;
            } else {
                val = s + strlen(s);
            }
            if (valid_tag_key(s)) {
                int j;
                for (j = 0; j < m->ntags; j++)
                    if (strcmp(m->tags[j].key, s) == 0) break;
                if (j < m->ntags) {
                    m->tags[j].value = val;
                } else {
                    if (m->ntags == IRC_MAX_TAGS) return -1;
                    m->tags[m->ntags].key = s;
                    m->tags[m->ntags].value = val;
                    m->ntags++;
                }
            }
        }
        if (!e) return 0;
        s = e + 1;
    }
}

static void split_prefix(irc_msg *m, const char *src, size_t n)
{
    char *b = m->split_;
    memcpy(b, src, n);
    b[n] = '\0';
    char *at = memchr(b, '@', n);
    char *bang = memchr(b, '!', at ? (size_t)(at - b) : n);
    if (!bang && !at) {
        if (memchr(b, '.', n))
            m->host = b; /* a server name */
        else
            m->nick = b;
        return;
    }
    m->nick = b;
    if (bang) {
        *bang = '\0';
        m->user = bang + 1;
    }
    if (at) {
        *at = '\0';
        m->host = at + 1;
    }
}

int irc_parse_len(char *line, size_t len, irc_msg *m)
{
    if (!line || !m) return -1;
    m->ntags = 0;
    m->nparams = 0;
    m->prefix = m->nick = m->user = m->host = m->command = NULL;
    line[len] = '\0';
    if (len == 0) return -1;
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\0' || line[i] == '\r' || line[i] == '\n') return -1;

    size_t p = 0;
    if (line[0] == '@') {
        char *sp = memchr(line, ' ', len);
        if (!sp) return -1; /* tags only, no command */
        size_t tl = (size_t)(sp - line);
        if (tl + 1 > IRC_MAX_TAG_BYTES) return -1;
        *sp = '\0';
        if (parse_tags(line + 1, m) < 0) return -1;
        p = tl + 1;
    }
    while (p < len && line[p] == ' ') p++;
    if (len - p > IRC_MAX_MSG_BYTES - 2) return -1;

    if (line[p] == ':') {
        size_t s = p + 1, e = s;
        while (e < len && line[e] != ' ') e++;
        if (e == s || e == len) return -1; /* empty prefix, or no command after it */
        line[e] = '\0';
        m->prefix = line + s;
        split_prefix(m, line + s, e - s);
        p = e + 1;
        while (p < len && line[p] == ' ') p++;
    }

    size_t s = p;
    while (p < len && line[p] != ' ') p++;
    if (!valid_command(line + s, p - s)) return -1;
    if (p < len) line[p++] = '\0';
    m->command = line + s;

    for (;;) {
        while (p < len && line[p] == ' ') p++;
        if (p >= len) break;
        if (m->nparams == IRC_MAX_PARAMS) return -1;
        if (line[p] == ':') {
            m->params[m->nparams++] = line + p + 1;
            break;
        }
        s = p;
        while (p < len && line[p] != ' ') p++;
        if (p < len) line[p++] = '\0';
        m->params[m->nparams++] = line + s;
    }
    return 0;
}

int irc_parse(char *line, irc_msg *m)
{
    if (!line) return -1;
    return irc_parse_len(line, strlen(line), m);
}

const char *irc_tag_get(const irc_msg *m, const char *key)
{
    if (!m || !key) return NULL;
    for (int i = m->ntags - 1; i >= 0; i--)
        if (strcmp(m->tags[i].key, key) == 0) return m->tags[i].value;
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------------------------- */

static unsigned char rfc1459_fold(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return (unsigned char)(c + ('a' - 'A'));
    switch (c) {
    case '[': return '{';
    case ']': return '}';
    case '\\': return '|';
    case '~': return '^';
    default: return c;
    }
}

bool irc_nick_equal(const char *a, const char *b)
{
    if (!a || !b) return false;
    for (;; a++, b++) {
        if (rfc1459_fold((unsigned char)*a) != rfc1459_fold((unsigned char)*b)) return false;
        if (!*a) return true;
    }
}

bool irc_is_channel(const char *name)
{
    if (!name || !strchr("#&+!", name[0]) || !name[0]) return false;
    return strpbrk(name, " ,\a\r\n") == NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Splitting
 * ------------------------------------------------------------------------------------------- */

struct splitter {
    irc_chunk_fn fn;
    void *ctx;
    size_t count;
    bool stop;
};

static void emit(struct splitter *sp, char *buf, size_t len, size_t offset)
{
    if (len == 0 || sp->stop) return;
    char saved = buf[len];
    buf[len] = '\0';
    sp->count++;
    if (sp->fn && sp->fn(sp->ctx, buf, len, offset)) sp->stop = true;
    buf[len] = saved;
}

/* Bytes from s up to the next space, newline or end (counted only up to limit + 1). */
static size_t word_rest(const unsigned char *s, size_t limit)
{
    size_t n = 0;
    while (*s && n <= limit) {
        unsigned char u[8];
        enum unit_kind kind;
        size_t k = unit_at(s, u, &kind);
        if (kind != U_TEXT) break;
        n += k;
        s += k;
    }
    return n;
}

/* Whether s starts with "·": the space before it stays with the word before (a line never starts
 * with the separator). */
static bool dot_at(const unsigned char *s) { return s[0] == 0xC2 && s[1] == 0xB7; }

/* Where to break the chunk buf[0, len) when the unit at next does not fit: the index of the
 * space to drop (the chunk is then buf[0, i)), or len to break right before next. A " · "
 * separator that leaves the chunk at least half full comes first (the chunk keeps its "·"),
 * then the last space not followed by "·", unless the word after it is longer than max on its
 * own. */
static size_t break_at(const char *buf, size_t len, size_t max, const unsigned char *next)
{
    const size_t half = (max + 1) / 2;
    for (size_t s = len >= 4 ? len - 4 : 0; len >= 4 && s + 3 >= half; s--) {
        if (!memcmp(buf + s, " \xC2\xB7 ", 4)) return s + 3;
        if (s == 0) break;
    }
    size_t i = len;
    while (i > 0 && (buf[i - 1] != ' ' || dot_at(i < len ? (const unsigned char *)buf + i : next))) i--;
    if (i == 0) return len; /* one word fills the chunk */
    size_t word = len - i;  /* the word's part in the chunk, then its rest in the text */
    return word + word_rest(next, max - word) <= max ? i - 1 : len;
}

size_t irc_split(const char *text, size_t max_bytes, irc_chunk_fn fn, void *ctx)
{
    if (!text || max_bytes == 0) return 0;
    if (max_bytes > IRC_MAX_MSG_BYTES) max_bytes = IRC_MAX_MSG_BYTES;
    struct splitter sp = {fn, ctx, 0, false};
    char buf[IRC_MAX_MSG_BYTES + 1];
    size_t len = 0, start = 0, pos = 0;
    const unsigned char *s = (const unsigned char *)text;

    while (s[pos] && !sp.stop) {
        unsigned char u[8];
        enum unit_kind kind;
        size_t n = unit_at(s + pos, u, &kind);
        if (kind == U_NEWLINE || n > max_bytes) {
            emit(&sp, buf, len, start);
            len = 0;
            pos += n;
            continue;
        }
        if (len + n > max_bytes) {
            if (kind == U_SPACE && !dot_at(s + pos + n)) { /* break right here, dropping the space */
                emit(&sp, buf, len, start);
                len = 0;
                pos += n;
                continue;
            }
            size_t i = break_at(buf, len, max_bytes, s + pos);
            if (i < len) { /* buf[i] is the space dropped */
                emit(&sp, buf, i, start);
                memmove(buf, buf + i + 1, len - i - 1);
                len -= i + 1;
                start += i + 1;
            } else {
                emit(&sp, buf, len, start);
                len = 0;
            }
            if (len + n > max_bytes) {
                emit(&sp, buf, len, start);
                len = 0;
            }
            if (sp.stop) break;
        }
        if (len == 0) start = pos;
        memcpy(buf + len, u, n);
        len += n;
        pos += n;
    }
    emit(&sp, buf, len, start);
    return sp.count;
}

size_t irc_utf8_uncut(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = s[len - back];
        if ((c & 0xC0) == 0x80) continue; /* a continuation byte: look further back */
        size_t need = c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
        if (need <= back) return len; /* ASCII, an invalid byte, or a whole character */
        if (back >= 2) { /* the second byte must be one that can follow this lead */
            unsigned char d = s[len - back + 1];
            if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d >= 0xA0) || (c == 0xF0 && d < 0x90) ||
                (c == 0xF4 && d >= 0x90))
                return len;
        }
        return len - back;
    }
    return len;
}

static size_t len_or(const char *s, size_t assumed) { return s ? strlen(s) : assumed; }

size_t irc_budget(const char *nick, const char *user, const char *host, const char *command,
                  const char *target)
{
    /* ":" nick "!" user "@" host " " command " " target " :" text "\r\n" */
    size_t fixed = 1 + len_or(nick, IRC_ASSUME_NICKLEN) + 1 + len_or(user, IRC_ASSUME_USERLEN) +
                   1 + len_or(host, IRC_ASSUME_HOSTLEN) + 1 + len_or(command, 0) + 1 +
                   len_or(target, 0) + 2 + 2;
    return fixed >= IRC_MAX_MSG_BYTES ? 0 : IRC_MAX_MSG_BYTES - fixed;
}

/* ---------------------------------------------------------------------------------------------
 * Colours
 * ------------------------------------------------------------------------------------------- */

size_t irc_colour_suits(const char *text, char *buf, size_t len)
{
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t full = 0, written = 0;
    bool room = len > 0 && buf;
    while (*s) {
        unsigned char u[16];
        size_t n, in;
        if (s[0] == 0xE2 && s[1] == 0x99 && (s[2] == 0xA5 || s[2] == 0xA6)) {
            memcpy(u, "\x03" "04", 3);
            memcpy(u + 3, s, 3);
            u[6] = 0x03;
            n = 7;
            if (is_digit(s[3])) {
                u[n++] = 0x02; /* two bold toggles: keeps the digit out of the colour code */
                u[n++] = 0x02;
            }
            in = 3;
        } else {
            if (s[0] == 0x03)
                in = colour_len(s);
            else if ((in = utf8_len(s)) == 0)
                in = 1; /* invalid byte: copied as is */
            memcpy(u, s, in);
            n = in;
        }
        if (room && written + n < len) {
            memcpy(buf + written, u, n);
            written += n;
        } else {
            room = false;
        }
        full += n;
        s += in;
    }
    if (len > 0 && buf) buf[written] = '\0';
    return full;
}

/* ---------------------------------------------------------------------------------------------
 * Formatting
 * ------------------------------------------------------------------------------------------- */

int irc_format(char *buf, size_t len, const char *command, const char *const *params,
               int nparams)
{
    if (buf && len > 0) buf[0] = '\0';
    if (!buf || !command || nparams < 0 || nparams > IRC_MAX_PARAMS) return -1;
    if (nparams > 0 && !params) return -1;
    size_t clen = strlen(command);
    if (!valid_command(command, clen)) return -1;
    size_t total = clen + 2;
    for (int i = 0; i < nparams; i++) {
        const char *p = params[i];
        if (!p || strpbrk(p, "\r\n")) return -1;
        bool last = i == nparams - 1;
        if (!last && (!p[0] || p[0] == ':' || strchr(p, ' '))) return -1;
        total += 1 + (last ? 1 : 0) + strlen(p);
        if (total > IRC_MAX_MSG_BYTES) return -1;
    }
    if (total > IRC_MAX_MSG_BYTES || total + 1 > len) return -1;
    char *w = buf;
    memcpy(w, command, clen);
    w += clen;
    for (int i = 0; i < nparams; i++) {
        size_t pl = strlen(params[i]);
        *w++ = ' ';
        if (i == nparams - 1) *w++ = ':';
        memcpy(w, params[i], pl);
        w += pl;
    }
    memcpy(w, "\r\n", 3);
    return (int)total;
}

/* Copies the next word of *s — up to a blank or one of stops — into one (a word of len bytes
 * or more is skipped) and moves *s past it. Returns 0 when no word is left. */
int irc_next_word(const char **s, const char *stops, char *one, size_t len)
{
    for (;;) {
        while (**s && (**s == ' ' || strchr(stops, **s))) (*s)++;
        if (!**s) return 0;
        const char *w = *s, *e = w;
        while (*e && *e != ' ' && !strchr(stops, *e)) e++;
        *s = e;
        size_t n = (size_t)(e - w);
        if (n < len) {
            memcpy(one, w, n);
            one[n] = 0;
            return 1;
        }
    }
}
