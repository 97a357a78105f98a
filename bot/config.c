/* config.c — the bot's settings (config.h): defaults, then one INI file, then the environment.
 *
 * Every setting is a row of one const table (section, key, kind, field, limits, what is allowed),
 * so the file parser and the environment share one code path and a new setting — or a new
 * section such as [matrix] with a password that should live in CARDROOM_MATRIX_PASSWORD — is one
 * row. [rules] has no rows of its own: its keys are the engine's g304_option_names and its values
 * go through g304_rules_set, so a new rules option needs no change here.
 *
 * The file is read by Debian's libinih through ini_parse_stream() with our own line reader.
 * The reader is where we learn what libinih does not tell a handler built without
 * INI_HANDLER_LINENO (Debian's): the number of the line being parsed. It also
 *   - strips leading blanks, so an indented line is an ordinary line and never libinih's
 *     multi-line continuation of the previous value (which turns "  threads = 4" under
 *     "prefix = !" into a second value of prefix);
 *   - checks [section] headings as they come, so an unknown one is reported on its own line
 *     even when no key follows it;
 *   - refuses a line longer than libinih's line buffer (ini_max_line, 200 in Debian's build)
 *     instead of letting libinih split it into two lines, so no value is ever cut short.
 * libinih strips blanks around names and values and treats ';' after a blank as the start of a
 * comment ('#' only at the start of a line); that is the behaviour the example file documents.
 *
 * Loading works on a copy, so on any error the caller's settings are left as they were. */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { CFG_SEC_BOT, CFG_SEC_TIMERS, CFG_SEC_RULES, CFG_SEC_MATRIX, CFG_SEC_IRC, CFG_SEC_CONSOLE, CFG_SEC_COUNT };

static const char *const cfg_sections[CFG_SEC_COUNT] = {"bot", "timers", "rules", "matrix", "irc", "console"};
#define CFG_SECTION_LIST "sections: bot, timers, rules, matrix, irc, console"

typedef enum {
    CFG_KIND_TEXT, /* a string into a char array; min..max characters, a character class */
    CFG_KIND_WORD, /* one of words[], stored as text */
    CFG_KIND_INT,  /* a whole number min..max into an int */
} cfg_kind;

typedef enum {
    CFG_CHARS_PRINTABLE, /* anything but control characters */
    CFG_CHARS_NO_BLANKS, /* printable, no spaces */
    CFG_CHARS_NAME,      /* A-Z a-z 0-9 _ . - */
    CFG_CHARS_IRC_NICK,  /* A-Z a-z 0-9 [ ] \ ` _ ^ { | } - (RFC 2812; the first one is checked by the adapter) */
} cfg_chars;

typedef struct {
    int section;
    const char *key;
    cfg_kind kind;
    size_t offset;            /* of the field in cfg */
    size_t size;              /* TEXT and WORD: the field's size in bytes */
    long min, max;            /* INT: the range; TEXT: characters (UTF-8 code points) */
    cfg_chars chars;          /* TEXT */
    const char *const *words; /* WORD: NULL-terminated */
    const char *allowed;      /* what the value must be, completing "must be …" */
} cfg_key;

#define CFG_TEXT(sec, name, field, lo, hi, cls, help)                                                    \
    {sec, name, CFG_KIND_TEXT, offsetof(cfg, field), sizeof(((cfg *)0)->field), lo, hi, cls, NULL, help}
#define CFG_WORD(sec, name, field, list, help)                                                           \
    {sec, name, CFG_KIND_WORD, offsetof(cfg, field), sizeof(((cfg *)0)->field), 0, 0, 0, list, help}
#define CFG_INT(sec, name, field, lo, hi, help)                                                          \
    {sec, name, CFG_KIND_INT, offsetof(cfg, field), 0, lo, hi, 0, NULL, help}

#define CFG_SECONDS "a number of seconds from 0 to 2592000 (30 days; 0 turns it off)"
#define CFG_NAME_CHARS "1 to 32 characters of A-Z a-z 0-9 _ . -"

static const char *const cfg_log_levels[] = {"error", "warn", "info", "debug", NULL};
static const char *const cfg_bools[] = {"true", "false", NULL};
static const char *const cfg_irc_logins[] = {"auto", "sasl", "nickserv", "none", NULL};
static const char *const cfg_irc_replies[] = {"notice", "privmsg", NULL};
static const char *const cfg_levels[] = {"easy", "normal", "expert", NULL};
static const char *const cfg_priorities[] = {"normal", "realtime", NULL};

static const cfg_key cfg_keys[] = {
    CFG_TEXT(CFG_SEC_BOT, "prefix", prefix, 1, 8, CFG_CHARS_NO_BLANKS, "1 to 8 characters without blanks"),
    CFG_TEXT(CFG_SEC_BOT, "database", database, 1, CFG_STR - 1, CFG_CHARS_PRINTABLE,
             "the path of the SQLite file, 1 to 255 characters"),
    CFG_WORD(CFG_SEC_BOT, "log_level", log_level, cfg_log_levels, "one of error, warn, info, debug"),
    CFG_INT(CFG_SEC_BOT, "threads", threads, 1, 64, "a whole number from 1 to 64"),
    CFG_WORD(CFG_SEC_BOT, "loop_priority", loop_priority, cfg_priorities, "normal or realtime"),
    CFG_TEXT(CFG_SEC_BOT, "rules_url", rules_url, 1, CFG_STR - 1, CFG_CHARS_NO_BLANKS,
             "1 to 255 characters without blanks: where the rules are published, like https://example.org/cardroom/"),
    CFG_TEXT(CFG_SEC_BOT, "admins", admins, 0, CFG_STR - 1, CFG_CHARS_PRINTABLE,
             "user ids separated by commas or blanks, up to 255 characters"),
    CFG_INT(CFG_SEC_BOT, "rate_commands", rate_commands, 0, 10000, "a whole number from 0 to 10000 (0: no limit)"),
    CFG_INT(CFG_SEC_BOT, "rate_seconds", rate_seconds, 1, 86400, "a number of seconds from 1 to 86400"),
    CFG_INT(CFG_SEC_BOT, "rate_pause", rate_pause, 1, 86400, "a number of seconds from 1 to 86400"),
    CFG_INT(CFG_SEC_BOT, "tables_per_user", tables_per_user, 0, 1000, "a whole number from 0 to 1000 (0: no cap)"),
    CFG_WORD(CFG_SEC_BOT, "level", level, cfg_levels, "one of easy, normal, expert"),
    CFG_INT(CFG_SEC_BOT, "keep_finished", keep_finished, 0, 315360000,
            "a number of seconds from 0 to 315360000 (ten years; 0 keeps everything)"),
    CFG_INT(CFG_SEC_TIMERS, "remind_after", remind_after, 0, 2592000, CFG_SECONDS),
    CFG_INT(CFG_SEC_TIMERS, "idle_takeover", idle_takeover, 0, 2592000, CFG_SECONDS),
    CFG_INT(CFG_SEC_TIMERS, "leave_grace", leave_grace, 0, 2592000, CFG_SECONDS),
    CFG_INT(CFG_SEC_TIMERS, "table_idle_close", table_idle_close, 0, 2592000, CFG_SECONDS),
    CFG_INT(CFG_SEC_TIMERS, "bot_delay_ms", bot_delay_ms, 0, 60000, "a number of milliseconds from 0 to 60000"),
    CFG_TEXT(CFG_SEC_MATRIX, "homeserver", matrix_homeserver, 0, CFG_STR - 1, CFG_CHARS_NO_BLANKS,
             "the homeserver's address, like https://matrix.example.org"),
    CFG_TEXT(CFG_SEC_MATRIX, "user", matrix_user, 0, CFG_STR - 1, CFG_CHARS_NO_BLANKS,
             "the bot's user id, like @cardroom:example.org"),
    CFG_TEXT(CFG_SEC_MATRIX, "password", matrix_password, 0, CFG_STR - 1, CFG_CHARS_PRINTABLE,
             "the bot account's password, up to 255 characters"),
    CFG_TEXT(CFG_SEC_MATRIX, "access_token", matrix_access_token, 0, CFG_STR - 1, CFG_CHARS_NO_BLANKS,
             "an access token of the bot account, up to 255 characters without blanks"),
    CFG_TEXT(CFG_SEC_MATRIX, "store_key", matrix_store_key, 0, CFG_STR - 1, CFG_CHARS_PRINTABLE,
             "a secret of up to 255 characters"),
    CFG_TEXT(CFG_SEC_MATRIX, "device_name", matrix_device_name, 1, 63, CFG_CHARS_PRINTABLE,
             "1 to 63 characters"),
    CFG_TEXT(CFG_SEC_MATRIX, "invites", matrix_invites, 0, CFG_STR - 1, CFG_CHARS_PRINTABLE,
             "user ids and server names separated by commas or blanks, or *"),
    CFG_INT(CFG_SEC_MATRIX, "sync_timeout", matrix_sync_timeout, 1, 300, "a number of seconds from 1 to 300"),
    CFG_WORD(CFG_SEC_MATRIX, "encrypt_direct_chats", matrix_encrypt_dms, cfg_bools, "true or false"),
    CFG_TEXT(CFG_SEC_IRC, "server", irc_server, 0, 253, CFG_CHARS_NO_BLANKS, "a host name or address, like irc.example.org"),
    CFG_INT(CFG_SEC_IRC, "port", irc_port, 0, 65535, "a port number from 1 to 65535, or 0 for the usual one (6697 with TLS, 6667 without)"),
    CFG_WORD(CFG_SEC_IRC, "tls", irc_tls, cfg_bools, "true or false"),
    CFG_WORD(CFG_SEC_IRC, "tls_verify", irc_tls_verify, cfg_bools, "true or false"),
    CFG_TEXT(CFG_SEC_IRC, "tls_ca", irc_tls_ca, 0, CFG_STR - 1, CFG_CHARS_PRINTABLE, "a file of trusted certificates (PEM)"),
    CFG_TEXT(CFG_SEC_IRC, "nick", irc_nick, 1, 30, CFG_CHARS_IRC_NICK,
             "1 to 30 characters: a letter or one of [ ] \\ ` _ ^ { | } first, then also digits and -"),
    CFG_TEXT(CFG_SEC_IRC, "username", irc_username, 1, 10, CFG_CHARS_NAME, "1 to 10 characters of A-Z a-z 0-9 _ . -"),
    CFG_TEXT(CFG_SEC_IRC, "realname", irc_realname, 1, 100, CFG_CHARS_PRINTABLE, "1 to 100 characters"),
    CFG_TEXT(CFG_SEC_IRC, "account", irc_account, 0, 64, CFG_CHARS_NO_BLANKS, "a services account name without blanks"),
    CFG_TEXT(CFG_SEC_IRC, "password", irc_password, 0, CFG_STR - 1, CFG_CHARS_PRINTABLE,
             "the services account's password (better in CARDROOM_IRC_PASSWORD)"),
    CFG_WORD(CFG_SEC_IRC, "login", irc_login, cfg_irc_logins, "one of auto, sasl, nickserv, none"),
    CFG_TEXT(CFG_SEC_IRC, "channels", irc_channels, 0, CFG_STR - 1, CFG_CHARS_PRINTABLE,
             "channel names (#name) separated by commas or blanks"),
    CFG_TEXT(CFG_SEC_IRC, "invites", irc_invites, 0, CFG_STR - 1, CFG_CHARS_PRINTABLE,
             "nicks or accounts separated by commas or blanks, or *"),
    CFG_WORD(CFG_SEC_IRC, "channel_replies", irc_channel_replies, cfg_irc_replies, "notice or privmsg"),
    CFG_INT(CFG_SEC_IRC, "flood_burst", irc_flood_burst, 1, 1000, "a whole number of lines from 1 to 1000"),
    CFG_INT(CFG_SEC_IRC, "flood_interval_ms", irc_flood_interval_ms, 0, 60000, "a number of milliseconds from 0 to 60000"),
    CFG_INT(CFG_SEC_IRC, "line_bytes", irc_line_bytes, 160, 512, "a number of bytes from 160 to 512"),
    CFG_INT(CFG_SEC_IRC, "ping_interval", irc_ping_interval, 5, 3600, "a number of seconds from 5 to 3600"),
    CFG_INT(CFG_SEC_IRC, "ping_timeout", irc_ping_timeout, 5, 3600, "a number of seconds from 5 to 3600"),
    CFG_TEXT(CFG_SEC_CONSOLE, "user", console_user, 1, 32, CFG_CHARS_NAME, CFG_NAME_CHARS),
    CFG_TEXT(CFG_SEC_CONSOLE, "room", console_room, 1, 32, CFG_CHARS_NAME, CFG_NAME_CHARS),
};
#define CFG_KEY_COUNT (sizeof cfg_keys / sizeof cfg_keys[0])

/* How much of a bad value an error message quotes. */
#define CFG_QUOTE 48

int cfg_log_rank(const cfg *c)
{
    for (int i = 0; cfg_log_levels[i]; i++)
        if (strcmp(c->log_level, cfg_log_levels[i]) == 0) return i;
    return 2;
}

int cfg_is_admin(const cfg *c, const char *user)
{
    size_t n = strlen(user);
    for (const char *p = c->admins; *p;) {
        size_t k = strcspn(p, ", \t");
        if (k == n && k > 0 && (p[0] == '@' ? strncmp(p, user, n) == 0 : strncasecmp(p, user, n) == 0)) return 1;
        p += k;
        p += strspn(p, ", \t");
    }
    return 0;
}

void cfg_defaults(cfg *c)
{
    memset(c, 0, sizeof *c);
    strcpy(c->prefix, "!");
    strcpy(c->database, "cardroom.db");
    strcpy(c->log_level, "info");
    c->threads = 2;
    strcpy(c->loop_priority, "normal");
    strcpy(c->rules_url, "docs/");
    c->rate_commands = 20;
    c->rate_seconds = 60;
    c->rate_pause = 120;
    c->tables_per_user = 3;
    strcpy(c->level, "easy");
    c->keep_finished = 2592000;
    c->remind_after = 120;
    c->idle_takeover = 600;
    c->leave_grace = 120;
    c->table_idle_close = 86400;
    c->bot_delay_ms = 0;
    g304_rules_default(&c->rules);
    strcpy(c->matrix_device_name, "cardroom");
    c->matrix_sync_timeout = 30;
    strcpy(c->matrix_encrypt_dms, "true");
    strcpy(c->irc_tls, "true");
    strcpy(c->irc_tls_verify, "true");
    strcpy(c->irc_nick, "cardroom");
    strcpy(c->irc_username, "cardroom");
    strcpy(c->irc_realname, "cardroom card games");
    strcpy(c->irc_login, "auto");
    strcpy(c->irc_channel_replies, "notice");
    c->irc_flood_burst = 5;
    c->irc_flood_interval_ms = 1000;
    c->irc_line_bytes = 512;
    c->irc_ping_interval = 120;
    c->irc_ping_timeout = 60;
    strcpy(c->console_user, "you");
    strcpy(c->console_room, "room");
}

/* ---- checking and storing one value ---- */

/* Copies at most CFG_QUOTE bytes of s, cut on a UTF-8 boundary, with "..." when cut. */
static const char *cfg_quote(const char *s, char *buf, size_t len)
{
    size_t n = strlen(s);
    if (n <= CFG_QUOTE) return s;
    n = CFG_QUOTE;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    snprintf(buf, len, "%.*s...", (int)n, s);
    return buf;
}

static size_t cfg_utf8_length(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

static int cfg_char_ok(unsigned char ch, cfg_chars chars)
{
    if (ch < 0x20 || ch == 0x7F) return 0;
    switch (chars) {
    case CFG_CHARS_PRINTABLE: return 1;
    case CFG_CHARS_NO_BLANKS: return ch != ' ';
    case CFG_CHARS_NAME:
        return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
               ch == '.' || ch == '-';
    case CFG_CHARS_IRC_NICK:
        return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
               strchr("[]\\`_^{|}", ch) != NULL;
    }
    return 0;
}

/* A decimal number without sign; -1 when it is not one or does not fit an int. */
static int cfg_parse_int(const char *s, long *out)
{
    long v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
        if (v > 2147483647L) return -1;
    }
    *out = v;
    return 0;
}

/* Stores value into the field of k, or says in why what is wrong ("must be …"). */
static int cfg_set_key(cfg *c, const cfg_key *k, const char *value, char *why, size_t whylen)
{
    char q[CFG_QUOTE + 4];
    char *field = (char *)c + k->offset;
    size_t bytes = strlen(value);
    switch (k->kind) {
    case CFG_KIND_TEXT: {
        size_t chars = cfg_utf8_length(value);
        int ok = chars >= (size_t)k->min && chars <= (size_t)k->max;
        for (const char *p = value; ok && *p; p++) ok = cfg_char_ok((unsigned char)*p, k->chars);
        if (!ok) {
            snprintf(why, whylen, "must be %s, not '%s'", k->allowed, cfg_quote(value, q, sizeof q));
            return -1;
        }
        if (bytes >= k->size) { /* few characters, but many bytes each */
            snprintf(why, whylen, "must be at most %zu bytes long; this value has %zu bytes ('%s')", k->size - 1,
                     bytes, cfg_quote(value, q, sizeof q));
            return -1;
        }
        memset(field, 0, k->size);
        memcpy(field, value, bytes);
        return 0;
    }
    case CFG_KIND_WORD:
        for (const char *const *w = k->words; *w; w++) {
            if (strcmp(value, *w) == 0) {
                memset(field, 0, k->size);
                memcpy(field, *w, strlen(*w));
                return 0;
            }
        }
        snprintf(why, whylen, "must be %s, not '%s'", k->allowed, cfg_quote(value, q, sizeof q));
        return -1;
    case CFG_KIND_INT: {
        long v;
        if (cfg_parse_int(value, &v) < 0 || v < k->min || v > k->max) {
            snprintf(why, whylen, "must be %s, not '%s'", k->allowed, cfg_quote(value, q, sizeof q));
            return -1;
        }
        int iv = (int)v;
        memcpy(field, &iv, sizeof iv);
        return 0;
    }
    }
    return -1;
}

static int cfg_is_option(const char *name)
{
    for (const char *const *o = g304_option_names; *o; o++)
        if (strcmp(*o, name) == 0) return 1;
    return 0;
}

/* "keys: a, b, c" for a section. */
static void cfg_key_list(int section, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "keys:");
    const char *sep = " ";
    if (section == CFG_SEC_RULES) {
        for (const char *const *o = g304_option_names; *o && used < len; o++, sep = ", ")
            used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, *o);
        return;
    }
    for (size_t i = 0; i < CFG_KEY_COUNT && used < len; i++) {
        if (cfg_keys[i].section != section) continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, cfg_keys[i].key);
        sep = ", ";
    }
}

/* Sets section/key to value. Returns 0; -1 with why = what the value must be; -2 for an unknown
 * key, with why = the keys of the section. */
static int cfg_set(cfg *c, int section, const char *key, const char *value, char *why, size_t whylen)
{
    if (section == CFG_SEC_RULES) {
        if (!cfg_is_option(key)) return cfg_key_list(section, why, whylen), -2;
        g304_error e = {0};
        if (g304_rules_set(&c->rules, key, value, &e) < 0) return snprintf(why, whylen, "%s", e.msg), -1;
        return 0;
    }
    for (size_t i = 0; i < CFG_KEY_COUNT; i++)
        if (cfg_keys[i].section == section && strcmp(cfg_keys[i].key, key) == 0)
            return cfg_set_key(c, &cfg_keys[i], value, why, whylen);
    cfg_key_list(section, why, whylen);
    return -2;
}

static void cfg_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cfg_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- the environment ---- */

/* CARDROOM_<SECTION>_<KEY> in upper case. */
static void cfg_env_name(int section, const char *key, char *buf, size_t len)
{
    snprintf(buf, len, "CARDROOM_%s_%s", cfg_sections[section], key);
    for (char *p = buf; *p; p++)
        if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
}

/* Applies one variable if it is set and not blank; values lose surrounding blanks, as in the file. */
static int cfg_env_one(cfg *c, int section, const char *key, char *err, size_t errlen)
{
    char name[96], why[CFG_ERR];
    cfg_env_name(section, key, name, sizeof name);
    const char *raw = getenv(name);
    if (!raw) return 0;
    raw += strspn(raw, " \t\r\n");
    size_t n = strlen(raw);
    while (n > 0 && strchr(" \t\r\n", raw[n - 1])) n--;
    if (n == 0) return 0;
    char *value = strndup(raw, n);
    if (!value) {
        cfg_fail(err, errlen, "environment %s: out of memory", name);
        return -1;
    }
    int rc = cfg_set(c, section, key, value, why, sizeof why);
    free(value);
    if (rc < 0) {
        cfg_fail(err, errlen, "environment %s: %s", name, why);
        return -1;
    }
    return 0;
}

static int cfg_env_all(cfg *c, char *err, size_t errlen)
{
    for (size_t i = 0; i < CFG_KEY_COUNT; i++)
        if (cfg_env_one(c, cfg_keys[i].section, cfg_keys[i].key, err, errlen) < 0) return -1;
    for (const char *const *o = g304_option_names; *o; o++)
        if (cfg_env_one(c, CFG_SEC_RULES, *o, err, errlen) < 0) return -1;
    return 0;
}

int cfg_env(cfg *c, char *err, size_t errlen)
{
    cfg work;
    memcpy(&work, c, sizeof work);
    if (err && errlen) err[0] = '\0';
    if (cfg_env_all(&work, err, errlen) < 0) return -1;
    memcpy(c, &work, sizeof work);
    return 0;
}

/* ---- the file ---- */

typedef struct {
    cfg *c;
    const char *path;
    FILE *f;
    int lineno;    /* of the line libinih is parsing */
    int section;   /* CFG_SEC_* of the last heading, -1 before the first */
    int err_line;  /* of our first error, 0 = none; parsing stops there */
    int read_errno;
    char *err;
    size_t errlen;
} cfg_parse;

static int cfg_section_find(const char *name, size_t len)
{
    for (int s = 0; s < CFG_SEC_COUNT; s++)
        if (strlen(cfg_sections[s]) == len && memcmp(cfg_sections[s], name, len) == 0) return s;
    return -1;
}

/* Checks a "[name]" heading (blanks inside the brackets allowed) and makes it current. */
static int cfg_heading(cfg_parse *x, const char *line)
{
    const char *end = strchr(line, ']');
    if (!end) {
        cfg_fail(x->err, x->errlen, "%s:%d: a section heading needs a closing ']', like [bot]", x->path, x->lineno);
        return -1;
    }
    const char *name = line + 1;
    name += strspn(name, " \t");
    while (end > name && (end[-1] == ' ' || end[-1] == '\t')) end--;
    int s = cfg_section_find(name, (size_t)(end - name));
    if (s < 0) {
        char copy[CFG_STR], q[CFG_QUOTE + 4];
        size_t n = (size_t)(end - name);
        snprintf(copy, sizeof copy, "%.*s", (int)(n < sizeof copy ? n : sizeof copy - 1), name);
        cfg_fail(x->err, x->errlen, "%s:%d: unknown section [%s] (" CFG_SECTION_LIST ")", x->path, x->lineno,
                 cfg_quote(copy, q, sizeof q));
        return -1;
    }
    x->section = s;
    return 0;
}

/* Says which key an over-long line was for, if it looks like "key = …" in a known section. */
static void cfg_long_line(cfg_parse *x, const char *line, int limit)
{
    size_t klen = strcspn(line, "=:");
    while (klen > 0 && (line[klen - 1] == ' ' || line[klen - 1] == '\t')) klen--;
    if (x->section >= 0 && line[strcspn(line, "=:")] && klen > 0 && klen < 48) {
        char key[48], var[96];
        memcpy(key, line, klen);
        key[klen] = '\0';
        cfg_env_name(x->section, key, var, sizeof var);
        cfg_fail(x->err, x->errlen,
                 "%s:%d: [%s] %s: the line is longer than %d characters, the most a line may have; "
                 "give a longer value in the environment as %s",
                 x->path, x->lineno, cfg_sections[x->section], key, limit, var);
        return;
    }
    cfg_fail(x->err, x->errlen, "%s:%d: the line is longer than %d characters, the most a line may have", x->path,
             x->lineno, limit);
}

/* libinih's fgets-style reader: one whole line per call (see the top of the file). */
static char *cfg_read_line(char *str, int num, void *stream)
{
    cfg_parse *x = stream;
    if (x->err_line || num < 4) return NULL;
    if (!fgets(str, num, x->f)) {
        if (ferror(x->f)) x->read_errno = errno ? errno : EIO;
        return NULL;
    }
    x->lineno++;
    size_t len = strlen(str);
    if (len == 0 || str[len - 1] != '\n') {
        int ch = len == (size_t)num - 1 ? getc(x->f) : (feof(x->f) ? EOF : 0);
        if (ch == 0) {
            cfg_fail(x->err, x->errlen, "%s:%d: the line holds a NUL byte; the file must be text", x->path, x->lineno);
            x->err_line = x->lineno;
            return NULL;
        }
        if (ch != EOF && ch != '\n') {
            cfg_long_line(x, str + strspn(str, " \t"), num - 2);
            x->err_line = x->lineno;
            return NULL;
        }
    }
    char *start = str;
    if (x->lineno == 1 && strncmp(str, "\xEF\xBB\xBF", 3) == 0) start += 3;
    size_t skip = strspn(start, " \t");
    if (skip) memmove(start, start + skip, strlen(start + skip) + 1);
    if (*start == '[' && cfg_heading(x, start) < 0) {
        x->err_line = x->lineno;
        return NULL;
    }
    return str;
}

#if INI_HANDLER_LINENO
static int cfg_handler(void *user, const char *section, const char *name, const char *value, int lineno)
#else
static int cfg_handler(void *user, const char *section, const char *name, const char *value)
#endif
{
    cfg_parse *x = user;
    char why[CFG_ERR];
    (void)section; /* x->section, checked by the reader, is the same heading */
#if INI_HANDLER_LINENO
    (void)lineno;
#endif
    if (x->err_line) return 0;
    if (x->section < 0) {
        cfg_fail(x->err, x->errlen, "%s:%d: %s: outside any section; put it under its heading (" CFG_SECTION_LIST ")",
                 x->path, x->lineno, name);
        x->err_line = x->lineno;
        return 0;
    }
    int rc = cfg_set(x->c, x->section, name, value ? value : "", why, sizeof why);
    if (rc == 0) return 1;
    if (rc == -2)
        cfg_fail(x->err, x->errlen, "%s:%d: [%s] %s: unknown key (%s)", x->path, x->lineno, cfg_sections[x->section],
                 name, why);
    else
        cfg_fail(x->err, x->errlen, "%s:%d: [%s] %s: %s", x->path, x->lineno, cfg_sections[x->section], name, why);
    x->err_line = x->lineno;
    return 0;
}

int cfg_load(cfg *c, const char *path, char *err, size_t errlen)
{
    cfg work;
    cfg_defaults(&work);
    if (err && errlen) err[0] = '\0';
    cfg_parse x = {.c = &work, .path = path, .section = -1, .err = err, .errlen = errlen};
    x.f = fopen(path, "r");
    if (!x.f) {
        cfg_fail(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = ini_parse_stream(cfg_read_line, &x, cfg_handler, &x);
    fclose(x.f);
    if (x.read_errno) {
        cfg_fail(err, errlen, "cannot read %s: %s", path, strerror(x.read_errno));
        return -1;
    }
    if (rc > 0 && (!x.err_line || rc < x.err_line)) {
        cfg_fail(err, errlen, "%s:%d: not a 'key = value' line", path, rc);
        return -1;
    }
    if (x.err_line) return -1;
    if (rc < 0) {
        cfg_fail(err, errlen, "cannot read %s: out of memory", path);
        return -1;
    }
    if (cfg_env_all(&work, err, errlen) < 0) return -1;
    memcpy(c, &work, sizeof work);
    return 0;
}
