/* irc_model.h — an independent model of the units irc_split() must keep whole (a UTF-8
 * character, an mIRC colour code, a formatting byte) and how it cleans them, shared by
 * test_irc_line.c and fuzz_irc_line.c so the two check the module against the same model. */
#ifndef CARDROOM_IRC_MODEL_H
#define CARDROOM_IRC_MODEL_H

#include <stddef.h>
#include <string.h>

/* Independent model of the units of a text: length of the unit at s and its sanitised bytes. */
static inline size_t model_unit(const unsigned char *s, char *out)
{
    unsigned c = s[0];
    if (c == 3) {
        size_t n = 1, d = 0;
        while (d < 2 && s[n] >= '0' && s[n] <= '9') n++, d++;
        if (d > 0 && s[n] == ',' && s[n + 1] >= '0' && s[n + 1] <= '9') {
            n += 2;
            if (s[n] >= '0' && s[n] <= '9') n++;
        }
        memcpy(out, s, n);
        return n;
    }
    if (c == '\n' || c == 2 || c == 0x0F || c == 0x1D || c == 0x1F) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x20 || c == 0x7F) {
        out[0] = ' ';
        return 1;
    }
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    /* decode and check the code point */
    size_t n = c >= 0xF8 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    unsigned long cp = n == 4 ? c & 7 : n == 3 ? c & 15 : c & 31;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) n = 0;
        if (!n) break;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const unsigned long lowest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (n == 0 || n > 4 || cp < lowest[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        out[0] = '?';
        return 1;
    }
    memcpy(out, s, n);
    return n;
}

#endif
