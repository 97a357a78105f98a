/* irc_line.h — pure text handling for the IRC adapter: parsing one incoming line (RFC 1459/2812
 * plus IRCv3 message tags), rfc1459 casemapping, splitting outgoing text into chunks that fit one
 * PRIVMSG/NOTICE, mIRC colours for red suits and formatting of command lines. No I/O, no
 * allocation, no global state; every function is reentrant. */
#ifndef CARDROOM_IRC_LINE_H
#define CARDROOM_IRC_LINE_H

#include <stdbool.h>
#include <stddef.h>

#define IRC_MAX_PARAMS 15
#define IRC_MAX_TAGS 32
/* IRCv3: the tags section, counting the leading '@' and the trailing space, is at most 8191
 * bytes; the rest of the message at most 512 bytes counting the final CR LF. */
#define IRC_MAX_TAG_BYTES 8191
#define IRC_MAX_MSG_BYTES 512
/* Lengths assumed by irc_budget() for a part of the bot's own prefix that is not known yet. */
#define IRC_ASSUME_NICKLEN 30
#define IRC_ASSUME_USERLEN 10
#define IRC_ASSUME_HOSTLEN 63

typedef struct {
    const char *key;   /* raw key, possibly with the client-only '+' and a vendor/ prefix */
    const char *value; /* unescaped; "" when the tag has no value (or an empty one) */
} irc_tag;

typedef struct {
    irc_tag tags[IRC_MAX_TAGS]; /* unique keys: a repeated key keeps its last value */
    int ntags;
    const char *prefix;         /* the source without its ':', NULL when absent */
    /* Split source. "nick!user@host" → all three; "nick!user" / "nick@host" → the parts present
     * (a present but empty part is ""); a source without '!' or '@' is a nick if it has no '.',
     * otherwise a server name, given as host with nick and user NULL. All NULL without prefix. */
    const char *nick, *user, *host;
    const char *command;        /* letters (case as sent) or exactly three digits */
    const char *params[IRC_MAX_PARAMS]; /* the trailing parameter, if any, is the last one */
    int nparams;
    char split_[IRC_MAX_MSG_BYTES]; /* private: storage of nick/user/host */
} irc_msg;

/* Parses one line without its CR LF. The line is modified in place (NULs written, tag values
 * unescaped) and every pointer in *m except nick/user/host points into it; nick/user/host point
 * into m->split_, so *m must not be copied by value while they are used. Returns 0, or -1 for:
 * an empty line, a missing or invalid command (not letters, not 3 digits), an empty prefix, a
 * CR or LF inside, more than IRC_MAX_TAGS distinct tags or IRC_MAX_PARAMS params, a tags
 * section over IRC_MAX_TAG_BYTES or a rest over IRC_MAX_MSG_BYTES - 2. One or more spaces
 * separate the parts; tag entries that are empty or whose key has characters other than
 * letters, digits, '-', '.', '/' after an optional '+' are ignored (not refused). After -1 the
 * line's contents and *m are unspecified. */
int irc_parse(char *line, irc_msg *m);
/* Same with an explicit length, for lines read from a socket: line[0..len) must not contain a
 * NUL either (else -1), and line must have room for len + 1 bytes: line[len] is set to NUL. */
int irc_parse_len(char *line, size_t len, irc_msg *m);
/* Value of the tag key (unescaped), NULL if absent. */
const char *irc_tag_get(const irc_msg *m, const char *key);

/* Case-insensitive comparison with rfc1459 casemapping (A-Z ≡ a-z, "[]\~" ≡ "{}|^"). False if
 * either is NULL. */
bool irc_nick_equal(const char *a, const char *b);
/* True when name starts with '#', '&', '+' or '!' and has no space, comma, BEL, CR or LF. */
bool irc_is_channel(const char *name);

/* Called once per chunk by irc_split: chunk is NUL-terminated (len bytes, 1..max_bytes),
 * sanitised, and only valid until the callback returns; offset is where it starts in text (one
 * byte of output per byte of input, so the chunk is the sanitised text[offset, offset + len)).
 * A nonzero return stops the split. */
typedef int (*irc_chunk_fn)(void *ctx, const char *chunk, size_t len, size_t offset);

/* Splits text into chunks of at most max_bytes bytes (max_bytes above IRC_MAX_MSG_BYTES is taken
 * as IRC_MAX_MSG_BYTES) and calls fn for each (fn may be NULL to only count). Every '\n' ends a
 * chunk, empty lines give none. Control characters other than '\n' and the mIRC codes 0x02,
 * 0x03, 0x0F, 0x1D, 0x1F, and DEL, become a space; bytes that are not valid UTF-8 become '?'.
 * Units are never cut: a UTF-8 character, or a colour code "\x03" [d[d] [",", d[d]]]. A unit
 * longer than max_bytes cannot be sent and is dropped (it ends the chunk before it). Chunks
 * break between words: when the next unit does not fit, a space there ends the chunk (and is
 * dropped); otherwise the chunk ends at its last " · " if that leaves it at least half full
 * (the chunk keeps the "·", the space after it is dropped), else at its last space (dropped).
 * A space before "·" is never a break: no chunk starts with the separator. Only a word longer
 * than max_bytes on its own is cut, between two units, just before the unit that does not
 * fit. Returns the number of chunks delivered. */
size_t irc_split(const char *text, size_t max_bytes, irc_chunk_fn fn, void *ctx);

/* The length of text[0, len) without a UTF-8 character cut short at its end: a server that cuts
 * a long line at its byte limit may keep only the first bytes of the last character. Returns
 * len, or less when the text ends with the first 1 to 3 bytes of a valid character but not its
 * last; other invalid bytes are left as they are. */
size_t irc_utf8_uncut(const char *text, size_t len);

/* Bytes of text that fit in ":nick!user@host COMMAND target :text\r\n" within 512 bytes (0 if
 * none). A NULL nick, user or host counts as IRC_ASSUME_NICKLEN/USERLEN/HOSTLEN bytes. */
size_t irc_budget(const char *nick, const char *user, const char *host, const char *command,
                  const char *target);

/* Copies text to buf with every ♥ (U+2665) and ♦ (U+2666) wrapped in red: "\x0304" … "\x03"
 * (followed by "\x02\x02" when the next byte is a digit, so that digit is not read as a colour).
 * ♠ and ♣ are left alone. Like snprintf: returns the full output length; when len > 0 buf is
 * NUL-terminated and holds the longest prefix that fits and ends between units (a UTF-8
 * character, an input colour code, a whole wrapped suit). buf may be NULL when len is 0. */
size_t irc_colour_suits(const char *text, char *buf, size_t len);

/* Writes "COMMAND p1 p2 … :last\r\n" (the last parameter always gets its ':') and returns its
 * length, or -1 (buf then "" if len > 0) when: command is not letters or 3 digits, nparams is
 * outside 0..IRC_MAX_PARAMS, a param is NULL or has CR or LF, a middle param is empty, starts
 * with ':' or has a space, the line exceeds IRC_MAX_MSG_BYTES, or buf is too small. */
int irc_format(char *buf, size_t len, const char *command, const char *const *params,
               int nparams);

/* Copies the next word of *s — up to a blank or one of the characters of stops — into one (a
 * word of len bytes or more is skipped) and moves *s past it. Returns 0 when no word is left.
 * For lists in settings and in CAP lines: "#a, #b", "sasl=PLAIN multi-prefix". */
int irc_next_word(const char **s, const char *stops, char *one, size_t len);

#endif
