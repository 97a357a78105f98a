/* mx_html.h — the bot's plain-text messages as Matrix HTML (the formatted_body of an
 * m.room.message with "format": "org.matrix.custom.html").
 *
 * The plain body stays the bot's own text; this is only its look. The HTML never adds, drops
 * or reorders text: strip the tags, read <br> as a line break and resolve the five entities,
 * and you get the text back (except that invalid UTF-8 and control characters, which have no
 * place in a message, become U+FFFD). Only tags from the spec's list of HTML clients should
 * allow are used (b, br, font, a, pre), and nothing from the text is ever passed through as
 * markup.
 *
 * The scheme, character by character and line by line:
 *   - & < > " ' are written &amp; &lt; &gt; &quot; &#39;.
 *   - The red suits ♥ ♦ (and ♡ ♢) are each wrapped in
 *     <font color="#d00000" data-mx-color="#d00000">…</font>; ♠ ♣ keep the theme's colour, so
 *     they stay readable on dark themes.
 *   - Every \n becomes <br> (no newline is added to the HTML). Blanks are left as they are.
 *   - Lines laid out in columns — a line with a run of three or more blanks, such as the rows of
 *     a ContractGrid grid — keep their blanks: each block of such lines is one <pre>…</pre>,
 *     with a plain \n (not <br>) between its lines. Prose never has three blanks in a row.
 *   - Invalid UTF-8 becomes U+FFFD, one per bad byte; so do control characters other than \n
 *     and \t (C0, DEL, and C1 U+0080..U+009F). NULL text is the empty text.
 *   - The head of a private message is bold: a line that starts with "[… · table N] " gets
 *     "<b>[… · table N]</b> "; on the first line, any "[…] " up to its first "]" counts as a
 *     head too (the "[room] " of a private !standings answer).
 *   - A heading label is bold: the words just before the first ":" of a line (that ":" must
 *     end the line or be followed by a blank), taken from the line's start (after a head) or
 *     from after the last ". " before the ":", when they look like a heading: 1 to 24 bytes,
 *     an ASCII capital letter first, then only ASCII letters, digits and blanks, not ending in
 *     a blank. So "Dealer", "Trump maker", "Tricks", "Tokens", "Trick 6", "Your hand",
 *     "Your first four cards", "Next dealer", "Match over", "Leaderboard" are bold; a seat's
 *     "alice (South): …", "Match at table 1, hand 1: …" or a long sentence are not.
 *   - The mention: the first occurrence of mention_name that is not part of a longer word
 *     (no ASCII letter, digit or _ glued to a name that starts or ends with one; failing
 *     that, simply the first occurrence) becomes a pill:
 *     <a href="https://matrix.to/#/@alice:example.org">alice</a>. In the link, every byte of
 *     mention_user but ASCII letters, digits and @ : . _ - = / + is percent-encoded (%22, %3C,
 *     %25, %20, non-ASCII bytes, …). The pill wins over a bold span it would cut across: that
 *     bold is left out; spans that nest are nested.
 *
 * Example: "[Card night · table 1] Your turn. Your hand: ♠ K · ♥ 9\nTokens: South–North 3"
 * becomes "<b>[Card night · table 1]</b> Your turn. <b>Your hand</b>: ♠ K · <font
 * color="#d00000" data-mx-color="#d00000">♥</font> 9<br><b>Tokens</b>: South–North 3"
 * (one line, without the break after "<font").
 *
 * Cuts: the output is built from whole pieces (a character, an entity, "<br>", a red suit
 * with its font tags, an opening or closing tag), so a cut never splits any of them. An
 * element is opened only together with its first piece of content, and room is kept for
 * closing every open element: a cut output is the longest such prefix of the full HTML
 * followed by the closing tags of the elements still open there ("</a>", "</b>", "</pre>"), i.e.
 * well-formed HTML in valid UTF-8. No allocation; thread-safe. */
#ifndef CARDROOM_MX_HTML_H
#define CARDROOM_MX_HTML_H

#include <stddef.h>

/* Writes the HTML form of text into buf (always NUL-terminated when len > 0) and returns the
 * length the full HTML has (like snprintf: >= len means it was cut; a cut never splits a UTF-8
 * sequence, an entity or a tag). mention_user/mention_name: the Matrix user id and the display
 * name of the user the message mentions (both NULL or "" for none): the first occurrence of
 * mention_name in the text becomes a pill link to that user. text and buf must not overlap;
 * buf may be NULL when len is 0 (to measure). */
size_t mx_html(const char *text, const char *mention_user, const char *mention_name, char *buf, size_t len);

#endif
