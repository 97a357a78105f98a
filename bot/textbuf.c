/* textbuf.c — see textbuf.h. */
#include "textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tb_start(textbuf *o, char *buf, size_t len)
{
    o->buf = buf;
    o->len = len;
    o->used = 0;
    o->full = len == 0;
    if (len) buf[0] = 0;
}

/* How many of the first n bytes of s to keep so that no UTF-8 character is cut. */
static size_t utf8_keep(const char *s, size_t n)
{
    size_t p = n;
    while (p > 0 && ((unsigned char)s[p - 1] & 0xC0) == 0x80) p--;
    if (p == 0) return 0;
    unsigned char lead = (unsigned char)s[p - 1];
    size_t need = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    return p - 1 + need <= n ? n : p - 1;
}

void tb_add(textbuf *o, const char *fmt, ...)
{
    if (o->full) return;
    size_t room = o->len - o->used;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->buf + o->used, room, fmt, ap);
    va_end(ap);
    if (k < 0) k = 0;
    if ((size_t)k < room) {
        o->used += (size_t)k;
        return;
    }
    o->full = 1; /* truncated: keep whole characters only, and stop here */
    o->used += utf8_keep(o->buf + o->used, room - 1);
    o->buf[o->used] = 0;
}

size_t tb_end(const textbuf *o) { return o->len ? strlen(o->buf) : 0; }
