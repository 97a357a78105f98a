/* fuzz_irc_line.c — libFuzzer target for the IRC line module (adapters/irc/irc_line.h).
 *
 * Any bytes are a line for irc_parse_len. When it accepts, the promises of irc_line.h must
 * hold: a valid command, at most 15 params inside the line buffer, middle params that are
 * non-empty without spaces or a leading ':', at most 32 unique valid tag keys whose values equal
 * an independent unescaping of the last raw occurrence of the key, a source that splits and
 * joins back. irc_format of command + params either refuses or gives a line of at most 512
 * bytes that parses back to the same command and params. The same bytes (up to a NUL) are also
 * split as text at several budgets: every chunk is 1..max bytes, valid UTF-8, free of control
 * characters but the mIRC ones, and is the sanitised input at its offset with whole units.
 * irc_utf8_uncut cuts at most 3 bytes, and only the start of a character that a continuation
 * would complete; of valid UTF-8 cut anywhere it keeps exactly the whole characters. */
#include <stdbool.h>
#include <string.h>

#include "fuzz_init.h"
#include "irc_line.h"
#include "irc_model.h"

#define CHECK(x)             \
    do {                     \
        if (!(x)) abort();   \
    } while (0)

/* ---- the independent model: tests/irc_model.h ---- */

static bool digit(unsigned char c) { return c >= '0' && c <= '9'; }



static bool valid_command(const char *c)
{
    size_t n = strlen(c);
    if (n == 3 && digit((unsigned char)c[0]) && digit((unsigned char)c[1]) && digit((unsigned char)c[2]))
        return true;
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= 'A' && c[i] <= 'Z'))) return false;
    return true;
}

static bool valid_key(const char *k, size_t n)
{
    size_t i = (n > 0 && k[0] == '+') ? 1 : 0;
    if (i == n) return false;
    for (; i < n; i++) {
        char c = k[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || digit((unsigned char)c) ||
              c == '-' || c == '.' || c == '/'))
            return false;
    }
    return true;
}

/* Unescapes raw[0..n) into out, returns its length. */
static size_t unescape(const char *raw, size_t n, char *out)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (raw[i] != '\\') {
            out[w++] = raw[i];
        } else if (i + 1 < n) {
            char e = raw[++i];
            out[w++] = e == ':' ? ';' : e == 's' ? ' ' : e == 'r' ? '\r' : e == 'n' ? '\n' : e;
        }
    }
    return w;
}

/* The value of key in the raw tags text (last occurrence), unescaped into out; -1 if absent. */
static long raw_tag(const char *tags, size_t tlen, const char *key, char *out)
{
    long found = -1;
    size_t klen = strlen(key);
    for (size_t s = 0; s <= tlen;) {
        const char *semi = memchr(tags + s, ';', tlen - s);
        size_t e = semi ? (size_t)(semi - tags) : tlen;
        const char *eq = memchr(tags + s, '=', e - s);
        size_t ke = eq ? (size_t)(eq - tags) : e;
        if (ke - s == klen && memcmp(tags + s, key, klen) == 0)
            found = eq ? (long)unescape(eq + 1, e - ke - 1, out) : 0;
        s = e + 1;
    }
    return found;
}

static bool inside(const char *p, const char *buf, size_t size)
{
    return p >= buf && p <= buf + size && p + strlen(p) <= buf + size;
}

static void check_parse(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1), *orig = malloc(size + 1);
    if (!line || !orig) abort();
    memcpy(line, data, size);
    memcpy(orig, data, size);
    orig[size] = '\0';
    irc_msg m;
    if (irc_parse_len(line, size, &m) != 0) goto out;

    CHECK(size > 0 && memchr(orig, '\0', size) == NULL && memchr(orig, '\r', size) == NULL &&
          memchr(orig, '\n', size) == NULL);
    CHECK(m.command && valid_command(m.command) && inside(m.command, line, size));
    CHECK(m.nparams >= 0 && m.nparams <= IRC_MAX_PARAMS);
    for (int i = 0; i < m.nparams; i++) {
        CHECK(inside(m.params[i], line, size));
        CHECK(!strchr(m.params[i], '\r') && !strchr(m.params[i], '\n'));
        if (i < m.nparams - 1)
            CHECK(m.params[i][0] && m.params[i][0] != ':' && !strchr(m.params[i], ' '));
    }

    /* tags against the raw text */
    CHECK(m.ntags >= 0 && m.ntags <= IRC_MAX_TAGS);
    if (orig[0] == '@') {
        const char *sp = strchr(orig, ' ');
        CHECK(sp && (size_t)(sp - orig) + 1 <= IRC_MAX_TAG_BYTES);
        static char want[IRC_MAX_TAG_BYTES];
        for (int i = 0; i < m.ntags; i++) {
            const char *k = m.tags[i].key, *v = m.tags[i].value;
            CHECK(inside(k, line, size) && inside(v, line, size));
            CHECK(valid_key(k, strlen(k)));
            for (int j = 0; j < i; j++) CHECK(strcmp(m.tags[j].key, k) != 0);
            CHECK(irc_tag_get(&m, k) == v);
            long n = raw_tag(orig + 1, (size_t)(sp - orig - 1), k, want);
            CHECK(n >= 0 && (size_t)n == strlen(v) && memcmp(v, want, (size_t)n) == 0);
        }
    } else {
        CHECK(m.ntags == 0);
    }

    /* source */
    if (m.prefix) {
        CHECK(inside(m.prefix, line, size) && m.prefix[0]);
        char join[IRC_MAX_MSG_BYTES * 2];
        if (m.nick) {
            CHECK(!strpbrk(m.nick, "!@") && (!m.user || !strchr(m.user, '@')));
            snprintf(join, sizeof join, "%s%s%s%s%s", m.nick, m.user ? "!" : "",
                     m.user ? m.user : "", m.host ? "@" : "", m.host ? m.host : "");
        } else {
            CHECK(m.host && !m.user && !strpbrk(m.host, "!@") && strchr(m.host, '.'));
            snprintf(join, sizeof join, "%s", m.host);
        }
        CHECK(strcmp(join, m.prefix) == 0);
    } else {
        CHECK(!m.nick && !m.user && !m.host);
    }

    /* format and parse back */
    char fmt[IRC_MAX_MSG_BYTES + 8];
    int r = irc_format(fmt, sizeof fmt, m.command, m.params, m.nparams);
    if (r >= 0) {
        CHECK(r <= IRC_MAX_MSG_BYTES && (size_t)r == strlen(fmt) && r >= 2);
        CHECK(fmt[r - 2] == '\r' && fmt[r - 1] == '\n');
        fmt[r - 2] = '\0';
        irc_msg back;
        CHECK(irc_parse(fmt, &back) == 0);
        CHECK(strcmp(back.command, m.command) == 0 && back.nparams == m.nparams);
        for (int i = 0; i < m.nparams; i++) CHECK(strcmp(back.params[i], m.params[i]) == 0);
        CHECK(back.ntags == 0 && !back.prefix);
    } else {
        /* only the length can be refused: the command and params came from a parsed line */
        size_t total = strlen(m.command) + 2;
        for (int i = 0; i < m.nparams; i++) total += 1 + (i == m.nparams - 1) + strlen(m.params[i]);
        CHECK(total > IRC_MAX_MSG_BYTES);
    }
out:
    free(line);
    free(orig);
}

/* ---- split ---- */

typedef struct {
    const char *text;
    const char *san;
    const unsigned char *unit_start;
    size_t n, max, next_off;
} split_ctx;

static int on_chunk(void *vctx, const char *chunk, size_t len, size_t off)
{
    split_ctx *c = vctx;
    CHECK(len >= 1 && len <= c->max && strlen(chunk) == len);
    CHECK(off >= c->next_off && off + len <= c->n);
    CHECK(c->unit_start[off] && c->unit_start[off + len]);
    CHECK(memcmp(chunk, c->san + off, len) == 0);
    for (size_t i = 0; i < len; i++) {
        unsigned char b = (unsigned char)chunk[i];
        CHECK(b >= 0x20 ? b != 0x7F : (b == 2 || b == 3 || b == 0x0F || b == 0x1D || b == 0x1F));
    }
    /* valid UTF-8: every unit of the chunk re-read by the model is itself */
    char tmp[8];
    for (size_t i = 0; i < len;) {
        size_t k = model_unit((const unsigned char *)chunk + i, tmp);
        CHECK(i + k <= len && memcmp(tmp, chunk + i, k) == 0);
        i += k;
    }
    c->next_off = off + len;
    return 0;
}

static void check_split(const uint8_t *data, size_t size)
{
    if (size > 4096) size = 4096;
    char *text = malloc(size + 1), *san = malloc(size + 8);
    unsigned char *start = calloc(size + 1, 1);
    if (!text || !san || !start) abort();
    memcpy(text, data, size);
    text[size] = '\0';
    size_t n = strlen(text);
    for (size_t i = 0; i < n;) {
        size_t k = model_unit((const unsigned char *)text + i, san + i);
        start[i] = 1;
        i += k;
    }
    start[n] = 1;
    static const size_t maxes[] = {1, 2, 5, 7, 13, 40, 100, 512};
    for (size_t i = 0; i < sizeof maxes / sizeof maxes[0]; i++) {
        split_ctx c = {text, san, start, n, maxes[i], 0};
        size_t count = irc_split(text, maxes[i], on_chunk, &c);
        CHECK(count == irc_split(text, maxes[i], NULL, NULL));
    }
    free(text);
    free(san);
    free(start);
}

static void check_colour(const uint8_t *data, size_t size)
{
    if (size > 2048) size = 2048;
    char *text = malloc(size + 1);
    if (!text) abort();
    memcpy(text, data, size);
    text[size] = '\0';
    size_t full = irc_colour_suits(text, NULL, 0);
    char *buf = malloc(full + 1);
    if (!buf) abort();
    CHECK(irc_colour_suits(text, buf, full + 1) == full && strlen(buf) == full);
    size_t len = size ? data[0] % (full + 2) : 0; /* a truncation: a prefix of the full output */
    char *cut = malloc(len + 1);
    if (!cut) abort();
    CHECK(irc_colour_suits(text, cut, len) == full);
    if (len) CHECK(strlen(cut) < len && memcmp(cut, buf, strlen(cut)) == 0);
    free(cut);
    free(buf);
    free(text);
}

/* The model's length of the UTF-8 unit at s (1 for ASCII and for a byte that starts none). */
static size_t utf8_unit(const unsigned char *s)
{
    char tmp[8];
    return s[0] < 0x80 ? 1 : model_unit(s, tmp);
}

static void check_uncut(const uint8_t *data, size_t size)
{
    if (size > 4096) size = 4096;
    const char *t = (const char *)data;
    size_t k = irc_utf8_uncut(t, size);
    CHECK(k <= size && size - k <= 3);
    if (k < size) { /* the tail starts a character: completed with continuation bytes it is one */
        unsigned char whole[8] = {0};
        memcpy(whole, data + k, size - k);
        unsigned char lead = whole[0];
        size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
        CHECK(need > size - k);
        for (size_t i = size - k; i < need; i++)
            whole[i] = i == 1 && lead == 0xE0 ? 0xA0 : i == 1 && lead == 0xF0 ? 0x90 : 0x80;
        char tmp[8];
        CHECK(model_unit(whole, tmp) == need && (unsigned char)tmp[0] == lead);
    }
    /* Valid UTF-8 (with a NUL ending it) cut at every byte keeps its whole characters. */
    unsigned char *z = malloc(size + 4);
    CHECK(z);
    memcpy(z, data, size);
    memset(z + size, 0, 4);
    size_t at = 0;
    int valid = 1;
    while (at < size && valid) {
        size_t n = utf8_unit(z + at);
        char tmp[8];
        valid = z[at] < 0x80 || (model_unit(z + at, tmp) == n && tmp[0] != '?' && at + n <= size);
        at += n;
    }
    for (size_t cut = 0, unit = 0; valid && cut <= size; cut++) {
        while (unit + utf8_unit(z + unit) <= cut && unit < size) unit += utf8_unit(z + unit);
        CHECK(irc_utf8_uncut((const char *)z, cut) == unit);
    }
    free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_uncut(data, size);
    check_parse(data, size);
    check_split(data, size);
    check_colour(data, size);
    return 0;
}
