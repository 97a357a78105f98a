/* textbuf.h — a bounded text buffer for the words the bot writes (render.c, render_grid.c).
 *
 * Text is appended printf-style into a caller's buffer of fixed size. When something does not
 * fit, the buffer keeps whole UTF-8 characters only, stays NUL-terminated and takes nothing
 * more, so a message is never cut inside a character. No allocation. */
#ifndef CARDROOM_TEXTBUF_H
#define CARDROOM_TEXTBUF_H

#include <stddef.h>

typedef struct {
    char *buf;
    size_t len, used;
    int full;
} textbuf;

/* Starts writing into buf[0..len) (len may be 0: nothing is written). */
void tb_start(textbuf *o, char *buf, size_t len);
/* Appends formatted text, or what fits of it in whole characters (then the buffer is full). */
void tb_add(textbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The length of the text written so far (0 when len was 0). */
size_t tb_end(const textbuf *o);

#endif
