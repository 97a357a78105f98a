/* irc_proto.c — see irc_proto.h. */
#include "irc_proto.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "irc_line.h"

#define MAX_USERS 4096        /* users known without a shared channel are dropped beyond this */
#define NICK_RETRY_MS 60000   /* how often to try for the configured nick while on another */
#define SASL_CHUNK 400        /* AUTHENTICATE payloads are sent in pieces of 400 bytes */
#define CAPS_MAX 2048

typedef struct {
    char nick[IRC_NAME_MAX];
    char account[IRC_NAME_MAX]; /* "" none (or not known) */
    char origin[IRC_NAME_MAX];  /* "user@host" last seen in his prefix; "" not known */
    int nchans;                 /* channels shared with the bot */
} user;

typedef struct {
    char nick[IRC_NAME_MAX];
    char modes[16];             /* prefix modes ("o", "ov") */
} member;

typedef struct {
    char name[IRC_NAME_MAX];    /* as the server spells it */
    char id[IRC_NAME_MAX];      /* lower-cased */
    member *m;
    int n, cap;
} channel;

struct irc_proto {
    irc_proto_config c;
    char *nick0, *username, *realname, *account, *password, *invites;
    irc_proto_hooks h;
    char (*want)[IRC_NAME_MAX];
    int nwant, cwant;
    channel *ch;
    int nch, cch;
    user *u;
    int nu, cu;
    char nick[IRC_NAME_MAX];
    int registered, alt;
    char offered[CAPS_MAX], acked[CAPS_MAX];
    int cap_done, sasl_busy, logged_in;
    char prefix_modes[16], prefix_syms[16];
    char chanmodes[4][64];
    int64_t last_nick_try;
    int casemap;                /* MAP_*, from ISUPPORT CASEMAPPING (rfc1459 until told) */
    char self_user[IRC_NAME_MAX], self_host[IRC_NAME_MAX]; /* the bot's prefix; "" not known */
    unsigned want_version;      /* changes with the list of wanted channels */
};

static void reset_state(irc_proto *p);

/* ---- small helpers ---- */

static void plog(irc_proto *p, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void plog(irc_proto *p, int level, const char *fmt, ...)
{
    if (!p->h.log) return;
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    p->h.log(p->h.ctx, level, buf);
}

static void say(irc_proto *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(irc_proto *p, const char *fmt, ...)
{
    char buf[IRC_MAX_MSG_BYTES + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= IRC_MAX_MSG_BYTES - 2) return; /* never cut a protocol line */
    if (p->h.send_now) p->h.send_now(p->h.ctx, buf);
    sodium_memzero(buf, sizeof buf);
}

enum { MAP_RFC1459 = 0, MAP_ASCII, MAP_STRICT };

static char fold_char(int map, char ch)
{
    if (ch >= 'A' && ch <= 'Z') return (char)(ch - 'A' + 'a');
    if (map == MAP_ASCII) return ch;
    if (map == MAP_STRICT && ch == '~') return ch;
    switch (ch) {
    case '[': return '{';
    case ']': return '}';
    case '\\': return '|';
    case '~': return '^';
    default: return ch;
    }
}

static const char *fold_map(int map, const char *s, char *buf, size_t len)
{
    size_t i = 0;
    for (; s[i] && i + 1 < len; i++) buf[i] = fold_char(map, s[i]);
    buf[i] = 0;
    return buf;
}

#define fold(s, buf, len) fold_map(p->casemap, (s), (buf), (len))

/* Nick or channel equality under the server's CASEMAPPING. */
static int same_map(int map, const char *a, const char *b)
{
    if (!a || !b) return 0;
    for (; *a && *b; a++, b++)
        if (fold_char(map, *a) != fold_char(map, *b)) return 0;
    return *a == *b;
}

#define same(a, b) same_map(p->casemap, (a), (b))

static int fits(const char *s) { return s && s[0] && strlen(s) < IRC_NAME_MAX; }

/* A nick as a server may send it: never '$' or ':' (so it cannot pass for "$a:" ids), nor
 * anything that separates names on IRC or starts a channel. */
static int nick_ok(const char *s)
{
    if (!fits(s) || irc_is_channel(s)) return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || strchr("$:!@,*?", *s)) return 0;
    return 1;
}

static void *grow(void *a, int *cap, int need, size_t size)
{
    if (need <= *cap) return a;
    int c = *cap ? *cap * 2 : 8;
    while (c < need) c *= 2;
    void *b = realloc(a, (size_t)c * size);
    if (!b) return NULL;
    *cap = c;
    return b;
}

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

/* Whether word occurs in the blank- or comma-separated list (case-insensitive, rfc1459). */
static int in_list(const irc_proto *p, const char *list, const char *word)
{
    if (!word || !*word) return 0;
    char one[IRC_NAME_MAX], a[IRC_NAME_MAX], b[IRC_NAME_MAX];
    fold(word, b, sizeof b);
    for (const char *s = list; irc_next_word(&s, ",", one, sizeof one);)
        if (strcmp(fold(one, a, sizeof a), b) == 0) return 1;
    return 0;
}

/* Whether cap (a bare name) is in the space-separated caps list (entries may carry =value). */
static const char *cap_in(const char *list, const char *cap)
{
    size_t cl = strlen(cap);
    for (const char *s = list; *s;) {
        while (*s == ' ') s++;
        const char *e = s;
        while (*e && *e != ' ') e++;
        const char *eq = memchr(s, '=', (size_t)(e - s));
        size_t nl = (size_t)((eq ? eq : e) - s);
        if (nl == cl && strncmp(s, cap, cl) == 0) return s;
        s = e;
    }
    return NULL;
}

static void cap_add(char *list, const char *cap)
{
    size_t n = strlen(list), cl = strlen(cap);
    if (n + cl + 2 >= CAPS_MAX || cap_in(list, cap)) return;
    if (n) list[n++] = ' ';
    memcpy(list + n, cap, cl + 1);
}

static void cap_remove(char *list, const char *cap)
{
    const char *at = cap_in(list, cap);
    if (!at) return;
    char *s = (char *)at, *e = s;
    while (*e && *e != ' ') e++;
    while (*e == ' ') e++;
    memmove(s, e, strlen(e) + 1);
    size_t n = strlen(list);
    while (n && list[n - 1] == ' ') list[--n] = 0;
}

/* ---- users and channels ---- */

static user *user_find(const irc_proto *p, const char *nick)
{
    for (int i = 0; i < p->nu; i++)
        if (same(p->u[i].nick, nick)) return &p->u[i];
    return NULL;
}

static void user_drop_loose(irc_proto *p)
{
    int j = 0;
    for (int i = 0; i < p->nu; i++)
        if (p->u[i].nchans > 0) p->u[j++] = p->u[i];
    p->nu = j;
}

static user *user_get(irc_proto *p, const char *nick)
{
    user *u = user_find(p, nick);
    if (u || !nick_ok(nick)) return u;
    if (p->nu >= MAX_USERS) user_drop_loose(p);
    if (p->nu >= MAX_USERS) return NULL;
    user *b = grow(p->u, &p->cu, p->nu + 1, sizeof *p->u);
    if (!b) return NULL;
    p->u = b;
    u = &p->u[p->nu++];
    memset(u, 0, sizeof *u);
    snprintf(u->nick, sizeof u->nick, "%s", nick);
    return u;
}

static void user_remove(irc_proto *p, const char *nick)
{
    user *u = user_find(p, nick);
    if (!u) return;
    *u = p->u[--p->nu];
}

static void user_set_account(user *u, const char *account)
{
    if (!u) return;
    int ok = fits(account) && strcmp(account, "*") != 0;
    for (const char *s = account; ok && *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7F) ok = 0;
    if (!ok) u->account[0] = 0;
    else snprintf(u->account, sizeof u->account, "%s", account);
}

static channel *chan_find(irc_proto *p, const char *name)
{
    char id[IRC_NAME_MAX];
    fold(name, id, sizeof id);
    for (int i = 0; i < p->nch; i++)
        if (!strcmp(p->ch[i].id, id)) return &p->ch[i];
    return NULL;
}

static member *member_find(const irc_proto *p, const channel *c, const char *nick)
{
    for (int i = 0; i < c->n; i++)
        if (same(c->m[i].nick, nick)) return &c->m[i];
    return NULL;
}

static member *member_add(irc_proto *p, channel *c, const char *nick)
{
    member *m = member_find(p, c, nick);
    if (m || !fits(nick)) return m;
    member *b = grow(c->m, &c->cap, c->n + 1, sizeof *c->m);
    if (!b) return NULL;
    c->m = b;
    m = &c->m[c->n++];
    memset(m, 0, sizeof *m);
    snprintf(m->nick, sizeof m->nick, "%s", nick);
    user *u = user_get(p, nick);
    if (u) u->nchans++;
    return m;
}

static void member_remove(irc_proto *p, channel *c, const char *nick)
{
    member *m = member_find(p, c, nick);
    if (!m) return;
    *m = c->m[--c->n];
    user *u = user_find(p, nick);
    if (u && --u->nchans <= 0) user_remove(p, nick);
}

static void chan_free(channel *c) { free(c->m); }

static void chan_remove(irc_proto *p, channel *c)
{
    while (c->n > 0) member_remove(p, c, c->m[c->n - 1].nick);
    chan_free(c);
    *c = p->ch[--p->nch];
}

/* ---- identity ---- */

static const char *id_of(const irc_proto *p, const char *nick, char *buf, size_t len)
{
    const user *u = user_find(p, nick);
    if (u && u->account[0]) {
        char acc[IRC_NAME_MAX];
        size_t i = 0;
        for (; u->account[i] && i + 1 < sizeof acc; i++) {
            char ch = u->account[i];
            acc[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
        }
        acc[i] = 0;
        snprintf(buf, len, "$a:%s", acc);
        return buf;
    }
    return fold(nick, buf, len);
}

const char *irc_proto_user_id(const irc_proto *p, const char *nick, char *buf, size_t len)
{
    return id_of(p, nick, buf, len);
}

/* Where nick connects from, for events: "" when his identity is an account, or not known. */
static const char *origin_of(const irc_proto *p, const char *nick)
{
    const user *u = user_find(p, nick);
    return u && !u->account[0] ? u->origin : "";
}

/* "user@host" into buf, or "" when a part is missing or it does not fit. */
static void join_origin(char *buf, size_t len, const char *user, const char *host)
{
    int n = user && host && user[0] && host[0] ? snprintf(buf, len, "%s@%s", user, host) : -1;
    if (n < 0 || (size_t)n >= len) buf[0] = 0;
}

/* Remembers where the sender of m connects from, as its prefix shows it. */
static void note_origin(irc_proto *p, const irc_msg *m)
{
    user *u = m->nick && m->user && m->host ? user_find(p, m->nick) : NULL;
    if (u) join_origin(u->origin, sizeof u->origin, m->user, m->host);
}

/* What the server showed of the bot's own prefix (its JOIN, 396, WHOIS): the split budget. */
static void note_self(irc_proto *p, const char *user, const char *host)
{
    if (user && fits(user)) snprintf(p->self_user, sizeof p->self_user, "%s", user);
    if (host && fits(host)) snprintf(p->self_host, sizeof p->self_host, "%s", host);
}

size_t irc_proto_budget(const irc_proto *p, const char *command, const char *target)
{
    /* the longer of the nick now and the configured one, which the bot may take back */
    const char *nick = strlen(p->nick0) > strlen(p->nick) ? p->nick0 : p->nick;
    return irc_budget(nick, p->self_user[0] ? p->self_user : NULL, p->self_host[0] ? p->self_host : NULL,
                      command, target);
}

const char *irc_proto_target(const irc_proto *p, const char *userid)
{
    if (!userid) return NULL;
    if (!strncmp(userid, "$a:", 3)) {
        for (int i = 0; i < p->nu; i++)
            if (p->u[i].account[0] && strcasecmp(p->u[i].account, userid + 3) == 0) return p->u[i].nick;
        return NULL;
    }
    for (int i = 0; i < p->nu; i++)
        if (same(p->u[i].nick, userid)) return p->u[i].nick;
    return userid; /* not seen in this session: the nick itself */
}

const char *irc_proto_display(const irc_proto *p, const char *userid, char *buf, size_t len)
{
    if (!strncmp(userid, "$a:", 3)) {
        for (int i = 0; i < p->nu; i++)
            if (p->u[i].account[0] && strcasecmp(p->u[i].account, userid + 3) == 0) {
                snprintf(buf, len, "%s", p->u[i].nick);
                return buf;
            }
        snprintf(buf, len, "%s", userid + 3);
        return buf;
    }
    for (int i = 0; i < p->nu; i++)
        if (same(p->u[i].nick, userid)) {
            snprintf(buf, len, "%s", p->u[i].nick);
            return buf;
        }
    snprintf(buf, len, "%s", userid);
    return buf;
}

const char *irc_proto_room_id(const irc_proto *p, const char *channel, char *buf, size_t len)
{
    return fold(channel, buf, len);
}

int irc_proto_in_channel(const irc_proto *p, const char *room)
{
    for (int i = 0; i < p->nch; i++)
        if (!strcmp(p->ch[i].id, room)) return 1;
    return 0;
}

const char *irc_proto_channel_name(const irc_proto *p, const char *room)
{
    for (int i = 0; i < p->nch; i++)
        if (!strcmp(p->ch[i].id, room)) return p->ch[i].name;
    return NULL;
}

int irc_proto_registered(const irc_proto *p) { return p->registered; }
const char *irc_proto_nick(const irc_proto *p) { return p->nick; }
int irc_proto_has_cap(const irc_proto *p, const char *cap) { return cap_in(p->acked, cap) != NULL; }
int irc_proto_logged_in(const irc_proto *p) { return p->logged_in; }

/* A moderator holds a prefix mode at or above halfop ('h'), or any mode before 'h' in PREFIX. */
static int is_moderator(const irc_proto *p, const member *m)
{
    if (!m) return 0;
    const char *h = strchr(p->prefix_modes, 'h');
    const char *o = strchr(p->prefix_modes, 'o');
    const char *limit = h ? h : o;
    if (!limit) return 0;
    for (const char *x = m->modes; *x; x++) {
        const char *at = strchr(p->prefix_modes, *x);
        if (at && at <= limit) return 1;
    }
    return 0;
}

/* ---- life cycle ---- */

irc_proto *irc_proto_new(const irc_proto_config *c, const irc_proto_hooks *h)
{
    irc_proto *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->c = *c;
    p->h = *h;
    p->nick0 = dup_or_empty(c->nick);
    p->username = dup_or_empty(c->username && *c->username ? c->username : c->nick);
    p->realname = dup_or_empty(c->realname && *c->realname ? c->realname : c->nick);
    p->account = dup_or_empty(c->account && *c->account ? c->account : c->nick);
    p->password = dup_or_empty(c->password);
    p->invites = dup_or_empty(c->invites);
    if (!p->nick0 || !p->username || !p->realname || !p->account || !p->password || !p->invites) {
        irc_proto_free(p);
        return NULL;
    }
    reset_state(p);
    return p;
}

void irc_proto_free(irc_proto *p)
{
    if (!p) return;
    for (int i = 0; i < p->nch; i++) chan_free(&p->ch[i]);
    free(p->ch);
    free(p->u);
    free(p->want);
    if (p->password) sodium_memzero(p->password, strlen(p->password));
    free(p->nick0);
    free(p->username);
    free(p->realname);
    free(p->account);
    free(p->password);
    free(p->invites);
    free(p);
}

int irc_proto_want_channel(irc_proto *p, const char *name)
{
    if (!irc_is_channel(name) || !fits(name)) return -1;
    for (int i = 0; i < p->nwant; i++)
        if (same(p->want[i], name)) return 0;
    void *b = grow(p->want, &p->cwant, p->nwant + 1, sizeof *p->want);
    if (!b) return -1;
    p->want = b;
    snprintf(p->want[p->nwant++], IRC_NAME_MAX, "%s", name);
    p->want_version++;
    if (p->registered) say(p, "JOIN %s", name);
    return 0;
}

static void unwant(irc_proto *p, const char *name)
{
    for (int i = 0; i < p->nwant; i++)
        if (same(p->want[i], name)) {
            memmove(p->want[i], p->want[i + 1], (size_t)(p->nwant - i - 1) * sizeof *p->want);
            p->nwant--;
            p->want_version++;
            return;
        }
}

int irc_proto_part(irc_proto *p, const char *name)
{
    if (!irc_is_channel(name) || !fits(name)) return -1;
    channel *c = chan_find(p, name);
    unwant(p, c ? c->name : name);
    if (p->registered && c) say(p, "PART %s", c->name);
    return 0;
}

unsigned irc_proto_channels_version(const irc_proto *p) { return p->want_version; }

void irc_proto_each_channel(irc_proto *p, void (*fn)(void *ctx, const char *channel), void *ctx)
{
    for (int i = 0; i < p->nwant; i++) fn(ctx, p->want[i]);
}

static void reset_state(irc_proto *p)
{
    for (int i = 0; i < p->nch; i++) chan_free(&p->ch[i]);
    p->nch = 0;
    p->nu = 0;
    snprintf(p->nick, sizeof p->nick, "%s", p->nick0);
    p->registered = 0;
    p->alt = 0;
    p->offered[0] = p->acked[0] = 0;
    p->cap_done = 0;
    p->sasl_busy = 0;
    p->logged_in = 0;
    strcpy(p->prefix_modes, "ov");
    strcpy(p->prefix_syms, "@+");
    strcpy(p->chanmodes[0], "beI");
    strcpy(p->chanmodes[1], "k");
    strcpy(p->chanmodes[2], "l");
    strcpy(p->chanmodes[3], "imnpst");
    p->last_nick_try = 0;
    p->casemap = MAP_RFC1459;
    p->self_user[0] = p->self_host[0] = 0;
}

void irc_proto_reset(irc_proto *p)
{
    reset_state(p);
    say(p, "CAP LS 302");
    say(p, "NICK %s", p->nick);
    say(p, "USER %s 0 * :%s", p->username, p->realname);
}

/* ---- registration ---- */

static int wants_sasl(const irc_proto *p)
{
    return p->password[0] && (p->c.login == IRC_LOGIN_AUTO || p->c.login == IRC_LOGIN_SASL);
}

static void cap_end(irc_proto *p)
{
    if (p->cap_done) return;
    p->cap_done = 1;
    say(p, "CAP END");
}

static void caps_request(irc_proto *p)
{
    static const char *const wanted[] = {"account-tag",  "extended-join", "account-notify",    "message-tags",
                                         "server-time",  "multi-prefix",  "userhost-in-names", "cap-notify",
                                         NULL};
    char req[CAPS_MAX] = "";
    for (int i = 0; wanted[i]; i++)
        if (cap_in(p->offered, wanted[i])) cap_add(req, wanted[i]);
    const char *sasl = cap_in(p->offered, "sasl");
    if (wants_sasl(p)) {
        int plain = 0;
        if (sasl) {
            const char *eq = sasl + 4;
            if (*eq != '=') plain = 1; /* 3.1 servers list no mechanisms */
            else {
                for (const char *s = eq + 1; *s && *s != ' ';) {
                    const char *e = s;
                    while (*e && *e != ' ' && *e != ',') e++;
                    if (e - s == 5 && !strncasecmp(s, "PLAIN", 5)) plain = 1;
                    s = *e == ',' ? e + 1 : e;
                }
            }
        }
        if (plain) cap_add(req, "sasl");
        else if (p->c.login == IRC_LOGIN_SASL) {
            if (p->h.fatal)
                p->h.fatal(p->h.ctx, 2, "the server does not offer SASL PLAIN, and [irc] login = sasl asks for it");
            return;
        }
    }
    if (req[0]) say(p, "CAP REQ :%s", req);
    else cap_end(p);
}

static void sasl_send_payload(irc_proto *p)
{
    size_t al = strlen(p->account), pl = strlen(p->password);
    size_t raw_len = al * 2 + 2 + pl;
    unsigned char *raw = malloc(raw_len);
    size_t b64_len = sodium_base64_ENCODED_LEN(raw_len, sodium_base64_VARIANT_ORIGINAL);
    char *b64 = malloc(b64_len);
    if (!raw || !b64) {
        free(raw);
        free(b64);
        say(p, "AUTHENTICATE *");
        return;
    }
    memcpy(raw, p->account, al);
    raw[al] = 0;
    memcpy(raw + al + 1, p->account, al);
    raw[2 * al + 1] = 0;
    memcpy(raw + 2 * al + 2, p->password, pl);
    sodium_bin2base64(b64, b64_len, raw, raw_len, sodium_base64_VARIANT_ORIGINAL);
    size_t n = strlen(b64), off = 0;
    for (;;) {
        size_t k = n - off > SASL_CHUNK ? SASL_CHUNK : n - off;
        char line[SASL_CHUNK + 20];
        snprintf(line, sizeof line, "AUTHENTICATE %.*s", (int)k, b64 + off);
        if (p->h.send_now) p->h.send_now(p->h.ctx, line);
        sodium_memzero(line, sizeof line);
        off += k;
        if (k < SASL_CHUNK) break;
        if (off == n) {
            say(p, "AUTHENTICATE +");
            break;
        }
    }
    sodium_memzero(raw, raw_len);
    sodium_memzero(b64, b64_len);
    free(raw);
    free(b64);
}

static void sasl_failed(irc_proto *p, const char *why)
{
    p->sasl_busy = 0;
    if (p->c.login == IRC_LOGIN_SASL) {
        char msg[256];
        snprintf(msg, sizeof msg, "SASL login as %s refused (%s): check [irc] account and password", p->account, why);
        if (p->h.fatal) p->h.fatal(p->h.ctx, 2, msg);
        return;
    }
    plog(p, 0, "irc: SASL login as %s refused (%s); going on without the account", p->account, why);
    cap_end(p);
}

static void on_cap(irc_proto *p, const irc_msg *m)
{
    if (m->nparams < 3) return;
    const char *sub = m->params[1];
    int more = m->nparams >= 4 && !strcmp(m->params[2], "*");
    const char *list = m->params[m->nparams - 1];
    if (!strcasecmp(sub, "LS")) {
        char one[256];
        for (const char *s = list; irc_next_word(&s, "", one, sizeof one);) cap_add(p->offered, one);
        if (!more && !p->cap_done && !p->registered) caps_request(p);
    } else if (!strcasecmp(sub, "ACK")) {
        int sasl = 0;
        char one[256];
        for (const char *s = list; irc_next_word(&s, "", one, sizeof one);) {
            if (one[0] == '-') cap_remove(p->acked, one + 1);
            else {
                cap_add(p->acked, one);
                if (!strcmp(one, "sasl")) sasl = 1;
            }
        }
        if (sasl && !p->registered) {
            p->sasl_busy = 1;
            say(p, "AUTHENTICATE PLAIN");
        } else if (!p->sasl_busy) cap_end(p);
    } else if (!strcasecmp(sub, "NAK")) {
        if (p->c.login == IRC_LOGIN_SASL && wants_sasl(p) && !p->registered) {
            if (p->h.fatal) p->h.fatal(p->h.ctx, 2, "the server refused the SASL capability");
            return;
        }
        cap_end(p);
    } else if (!strcasecmp(sub, "DEL")) {
        char one[256];
        for (const char *s = list; irc_next_word(&s, "", one, sizeof one);) {
            cap_remove(p->acked, one);
            cap_remove(p->offered, one);
        }
    } else if (!strcasecmp(sub, "NEW")) {
        char req[CAPS_MAX] = "";
        static const char *const wanted[] = {"account-tag", "extended-join", "account-notify",    "message-tags",
                                             "server-time", "multi-prefix",  "userhost-in-names", NULL};
        char one[256];
        for (const char *s = list; irc_next_word(&s, "", one, sizeof one);) {
            cap_add(p->offered, one);
            one[strcspn(one, "=")] = 0;
            for (int i = 0; wanted[i]; i++)
                if (!strcmp(one, wanted[i]) && !cap_in(p->acked, one)) cap_add(req, one);
        }
        if (req[0]) say(p, "CAP REQ :%s", req);
    }
}

static void next_nick(irc_proto *p)
{
    p->alt++;
    size_t base = strlen(p->nick0);
    if (base > 25) base = 25;
    if (p->alt == 1) snprintf(p->nick, sizeof p->nick, "%.*s_", (int)base, p->nick0);
    else snprintf(p->nick, sizeof p->nick, "%.*s%d", (int)base, p->nick0, p->alt - 1);
    say(p, "NICK %s", p->nick);
}

static void join_all(irc_proto *p)
{
    /* One JOIN per channel keeps every line short whatever the names. */
    for (int i = 0; i < p->nwant; i++) say(p, "JOIN %s", p->want[i]);
}

static void on_welcome(irc_proto *p, const irc_msg *m)
{
    if (m->nparams >= 1 && fits(m->params[0])) snprintf(p->nick, sizeof p->nick, "%s", m->params[0]);
    p->registered = 1;
    p->sasl_busy = 0;
    if (p->password[0] && !p->logged_in &&
        (p->c.login == IRC_LOGIN_NICKSERV || (p->c.login == IRC_LOGIN_AUTO && !cap_in(p->acked, "sasl")))) {
        say(p, "PRIVMSG NickServ :IDENTIFY %s %s", p->account, p->password);
        plog(p, 2, "irc: identifying to NickServ as %s", p->account);
    }
    plog(p, 2, "irc: registered as %s", p->nick);
    /* The bot's prefix counts in every line it sends: its JOIN echo shows it, and without a
     * channel to join, WHOIS of itself does. */
    if (p->nwant == 0) say(p, "WHOIS %s", p->nick);
    join_all(p);
    if (p->h.registered) p->h.registered(p->h.ctx);
}

static void on_isupport(irc_proto *p, const irc_msg *m)
{
    for (int i = 1; i + 1 < m->nparams; i++) {
        const char *t = m->params[i];
        if (!strncmp(t, "PREFIX=(", 8)) {
            const char *close = strchr(t + 8, ')');
            if (!close) continue;
            size_t nm = (size_t)(close - (t + 8)), ns = strlen(close + 1);
            if (nm != ns || nm >= sizeof p->prefix_modes) continue;
            memcpy(p->prefix_modes, t + 8, nm);
            p->prefix_modes[nm] = 0;
            memcpy(p->prefix_syms, close + 1, ns + 1);
        } else if (!strncmp(t, "CASEMAPPING=", 12)) {
            const char *v = t + 12;
            p->casemap = !strcmp(v, "ascii") ? MAP_ASCII : !strcmp(v, "strict-rfc1459") ? MAP_STRICT : MAP_RFC1459;
        } else if (!strncmp(t, "CHANMODES=", 10)) {
            const char *s = t + 10;
            for (int k = 0; k < 4; k++) {
                const char *e = strchr(s, ',');
                size_t n = e ? (size_t)(e - s) : strlen(s);
                if (n >= sizeof p->chanmodes[k]) n = sizeof p->chanmodes[k] - 1;
                memcpy(p->chanmodes[k], s, n);
                p->chanmodes[k][n] = 0;
                if (!e) {
                    for (int j = k + 1; j < 4; j++) p->chanmodes[j][0] = 0;
                    break;
                }
                s = e + 1;
            }
        }
    }
}

/* ---- events ---- */

static void emit(irc_proto *p, const adapter_event *e)
{
    if (p->h.event) p->h.event(p->h.ctx, e);
}

/* An event about nick in channel c (NULL: a private message), with his identity and origin. */
static void emit_about(irc_proto *p, adapter_event_kind kind, const channel *c, const char *nick, const char *text)
{
    char id[IRC_ID_MAX];
    id_of(p, nick, id, sizeof id);
    adapter_event e = {.kind = kind, .room = c ? c->id : NULL, .sender = id, .text = text, .is_private = !c,
                       .origin = origin_of(p, nick)};
    if (c && kind == ADAPTER_MESSAGE) e.moderator = is_moderator(p, member_find(p, c, nick));
    emit(p, &e);
}

/* Removes mIRC formatting (bold, colours, italics, underline, reverse, reset, monospace). */
static void strip_formatting(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        unsigned char ch = (unsigned char)*r;
        if (ch == 0x03) {
            r++;
            for (int k = 0; k < 2 && *r >= '0' && *r <= '9'; k++) r++;
            if (*r == ',' && r[1] >= '0' && r[1] <= '9') {
                r++;
                for (int k = 0; k < 2 && *r >= '0' && *r <= '9'; k++) r++;
            }
        } else if (ch == 0x04) { /* hex colour */
            r++;
            for (int k = 0; k < 6 && ((*r >= '0' && *r <= '9') || (*r >= 'a' && *r <= 'f') || (*r >= 'A' && *r <= 'F')); k++) r++;
        } else if (ch == 0x02 || ch == 0x0F || ch == 0x11 || ch == 0x16 || ch == 0x1D || ch == 0x1E || ch == 0x1F) {
            r++;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
}

static void on_privmsg(irc_proto *p, irc_msg *m)
{
    if (m->nparams < 2 || !nick_ok(m->nick)) return;
    if (same(m->nick, p->nick)) return; /* our own echo */
    const char *target = m->params[0];
    char *text = (char *)m->params[1];
    if (text[0] == 0x01) return; /* CTCP (ACTION, VERSION…): not a command */
    int is_chan = irc_is_channel(target);
    channel *c = is_chan ? chan_find(p, target) : NULL;
    if (is_chan && !c) return;
    if (!is_chan && !same(target, p->nick)) return;
    user *u = user_get(p, m->nick);
    if (u && cap_in(p->acked, "account-tag")) user_set_account(u, irc_tag_get(m, "account"));
    note_origin(p, m);
    text[irc_utf8_uncut(text, strlen(text))] = 0; /* a line the server cut in a character */
    strip_formatting(text);
    emit_about(p, ADAPTER_MESSAGE, c, m->nick, text);
}

static void on_join(irc_proto *p, const irc_msg *m)
{
    if (m->nparams < 1 || !nick_ok(m->nick)) return;
    const char *name = m->params[0];
    if (!irc_is_channel(name) || !fits(name)) return;
    channel *c = chan_find(p, name);
    if (same(m->nick, p->nick)) {
        if (!c) {
            channel *b = grow(p->ch, &p->cch, p->nch + 1, sizeof *p->ch);
            if (!b) return;
            p->ch = b;
            c = &p->ch[p->nch++];
            memset(c, 0, sizeof *c);
            snprintf(c->name, sizeof c->name, "%s", name);
            fold(name, c->id, sizeof c->id);
            plog(p, 2, "irc: joined %s", name);
        }
        note_self(p, m->user, m->host);
        return;
    }
    if (!c || member_find(p, c, m->nick)) return;
    member_add(p, c, m->nick);
    if (cap_in(p->acked, "extended-join") && m->nparams >= 2) user_set_account(user_find(p, m->nick), m->params[1]);
    note_origin(p, m);
    emit_about(p, ADAPTER_JOIN, c, m->nick, NULL);
}

/* PART (m is the leaver's line) or KICK (m NULL: the line is the kicker's). */
static void on_part(irc_proto *p, const irc_msg *m, const char *chan, const char *nick, int kicked)
{
    channel *c = chan_find(p, chan);
    if (!c) return;
    if (same(nick, p->nick)) {
        plog(p, kicked ? 1 : 2, "irc: %s %s", kicked ? "kicked from" : "left", c->name);
        if (kicked) unwant(p, c->name);
        emit_about(p, ADAPTER_GONE, c, p->nick, NULL);
        chan_remove(p, c);
        return;
    }
    if (!member_find(p, c, nick)) return;
    if (m) note_origin(p, m);
    emit_about(p, ADAPTER_LEAVE, c, nick, NULL);
    member_remove(p, c, nick);
}

static void on_quit(irc_proto *p, const irc_msg *m)
{
    note_origin(p, m);
    for (int i = 0; i < p->nch; i++)
        if (member_find(p, &p->ch[i], m->nick)) {
            emit_about(p, ADAPTER_LEAVE, &p->ch[i], m->nick, NULL);
            member_remove(p, &p->ch[i], m->nick);
        }
    user_remove(p, m->nick);
}

static void on_nick(irc_proto *p, const irc_msg *m)
{
    const char *old = m->nick, *new = m->params[0];
    if (!nick_ok(old) || !nick_ok(new)) return; /* a prefix without a nick names nobody */
    if (same(old, p->nick)) {
        snprintf(p->nick, sizeof p->nick, "%s", new);
        plog(p, 2, "irc: now known as %s", new);
        return;
    }
    user *stale = same(old, new) ? NULL : user_find(p, new);
    if (stale && stale->nchans == 0) user_remove(p, new); /* whoever had the nick before, unseen since */
    note_origin(p, m);
    char was[IRC_ID_MAX], now[IRC_ID_MAX];
    id_of(p, old, was, sizeof was);
    user *u = user_find(p, old);
    if (u) snprintf(u->nick, sizeof u->nick, "%s", new);
    for (int i = 0; i < p->nch; i++) {
        member *mm = member_find(p, &p->ch[i], old);
        if (mm) snprintf(mm->nick, sizeof mm->nick, "%s", new);
    }
    /* A player known by his nick is now another id: each shared channel hears of it. */
    id_of(p, new, now, sizeof now);
    if (!strcmp(was, now)) return;
    for (int i = 0; i < p->nch; i++)
        if (member_find(p, &p->ch[i], new)) {
            adapter_event e = {.kind = ADAPTER_RENAME, .room = p->ch[i].id, .sender = was, .renamed_to = now,
                               .origin = origin_of(p, new)};
            emit(p, &e);
        }
}

/* 396 RPL_HOSTHIDDEN: "nick host :is now your displayed host" (some servers give user@host). */
static void on_host_hidden(irc_proto *p, const irc_msg *m)
{
    if (m->nparams < 3) return;
    char both[IRC_NAME_MAX];
    snprintf(both, sizeof both, "%s", m->params[1]);
    char *at = strchr(both, '@');
    if (at) *at = 0;
    note_self(p, at ? both : NULL, at ? at + 1 : both);
}

static void on_names(irc_proto *p, const irc_msg *m)
{
    if (m->nparams < 4) return;
    channel *c = chan_find(p, m->params[2]);
    if (!c) return;
    char list[IRC_MAX_MSG_BYTES];
    snprintf(list, sizeof list, "%s", m->params[3]);
    for (char *s = list; *s;) {
        while (*s == ' ') s++;
        char *e = s;
        while (*e && *e != ' ') e++;
        char save = *e;
        *e = 0;
        char modes[16] = "";
        size_t nm = 0;
        while (*s && strchr(p->prefix_syms, *s)) {
            const char *at = strchr(p->prefix_syms, *s);
            if (nm + 1 < sizeof modes) modes[nm++] = p->prefix_modes[at - p->prefix_syms];
            s++;
        }
        modes[nm] = 0;
        char *bang = strchr(s, '!'); /* userhost-in-names: nick!user@host */
        char *at = bang ? strchr(bang + 1, '@') : NULL;
        if (bang) *bang = 0;
        if (at) *at = 0;
        if (nick_ok(s) && !same(s, p->nick)) {
            member *mm = member_add(p, c, s);
            if (mm) snprintf(mm->modes, sizeof mm->modes, "%s", modes);
            user *u = at ? user_find(p, s) : NULL;
            if (u) join_origin(u->origin, sizeof u->origin, bang + 1, at + 1);
        }
        *e = save;
        s = e;
    }
}

static void on_mode(irc_proto *p, const irc_msg *m)
{
    if (m->nparams < 2 || !irc_is_channel(m->params[0])) return;
    channel *c = chan_find(p, m->params[0]);
    if (!c) return;
    int add = 1, arg = 2;
    for (const char *s = m->params[1]; *s; s++) {
        if (*s == '+') add = 1;
        else if (*s == '-') add = 0;
        else if (strchr(p->prefix_modes, *s)) {
            if (arg >= m->nparams) return;
            member *mm = member_find(p, c, m->params[arg++]);
            if (!mm) continue;
            char *at = strchr(mm->modes, *s);
            size_t n = strlen(mm->modes);
            if (add && !at && n + 1 < sizeof mm->modes) {
                mm->modes[n] = *s;
                mm->modes[n + 1] = 0;
            } else if (!add && at) memmove(at, at + 1, strlen(at));
        } else if (strchr(p->chanmodes[0], *s) || strchr(p->chanmodes[1], *s) || (add && strchr(p->chanmodes[2], *s))) {
            arg++;
        }
    }
}

static void on_invite(irc_proto *p, const irc_msg *m)
{
    if (m->nparams < 2 || !m->nick || !same(m->params[0], p->nick)) return;
    const char *chan = m->params[1];
    if (!irc_is_channel(chan)) return;
    user *u = user_find(p, m->nick);
    if (u && cap_in(p->acked, "account-tag")) user_set_account(u, irc_tag_get(m, "account"));
    const char *account = u && u->account[0] ? u->account : irc_tag_get(m, "account");
    /* On a network with accounts only a listed account counts; elsewhere a listed nick. */
    int ok = !strcmp(p->invites, "*") ||
             (cap_in(p->acked, "account-tag") ? (account && in_list(p, p->invites, account)) : in_list(p, p->invites, m->nick));
    if (!ok) {
        plog(p, 2, "irc: an invite to %s from %s was not followed ([irc] invites)", chan, m->nick);
        return;
    }
    plog(p, 2, "irc: invited to %s by %s", chan, m->nick);
    irc_proto_want_channel(p, chan);
}

/* The last parameter of m ("" when it has none). */
static const char *last_param(const irc_msg *m) { return m->nparams > 0 ? m->params[m->nparams - 1] : ""; }

int irc_proto_line(irc_proto *p, char *line, size_t len)
{
    irc_msg m;
    if (irc_parse_len(line, len, &m) != 0) return -1;
    const char *cmd = m.command;
    if (!strcasecmp(cmd, "PING")) {
        say(p, "PONG :%s", last_param(&m));
    } else if (!strcasecmp(cmd, "PONG")) {
        if (m.nparams >= 1 && p->h.pong) p->h.pong(p->h.ctx, last_param(&m));
    } else if (!strcasecmp(cmd, "PRIVMSG")) {
        on_privmsg(p, &m);
    } else if (!strcasecmp(cmd, "NOTICE")) {
        /* Never answered (RFC 2812); NickServ's notices are logged at debug level. */
        if (m.nick && !strcasecmp(m.nick, "NickServ") && m.nparams >= 2) plog(p, 3, "irc: NickServ: %s", m.params[1]);
    } else if (!strcasecmp(cmd, "CAP")) {
        on_cap(p, &m);
    } else if (!strcasecmp(cmd, "AUTHENTICATE")) {
        if (p->sasl_busy && m.nparams >= 1 && !strcmp(m.params[0], "+")) sasl_send_payload(p);
    } else if (!strcmp(cmd, "900")) {
        p->logged_in = 1;
        plog(p, 2, "irc: logged in to the account %s", m.nparams >= 3 ? m.params[2] : p->account);
    } else if (!strcmp(cmd, "901")) {
        p->logged_in = 0;
    } else if (!strcmp(cmd, "903")) {
        p->sasl_busy = 0;
        p->logged_in = 1;
        cap_end(p);
    } else if (!strcmp(cmd, "904") || !strcmp(cmd, "905") || !strcmp(cmd, "906") || !strcmp(cmd, "902")) {
        sasl_failed(p, cmd);
    } else if (!strcmp(cmd, "907")) {
        p->sasl_busy = 0;
        cap_end(p);
    } else if (!strcmp(cmd, "908")) {
        /* the mechanisms the server has; 904 follows */
    } else if (!strcmp(cmd, "001")) {
        on_welcome(p, &m);
    } else if (!strcmp(cmd, "005")) {
        on_isupport(p, &m);
    } else if (!strcmp(cmd, "433") || !strcmp(cmd, "437")) {
        if (!p->registered) next_nick(p);
        else plog(p, 3, "irc: the nick %s is still taken", p->nick0);
    } else if (!strcmp(cmd, "432")) {
        if (!p->registered) {
            char msg[200];
            snprintf(msg, sizeof msg, "the server refuses the nick %s: set another [irc] nick", p->nick);
            if (p->h.fatal) p->h.fatal(p->h.ctx, 2, msg);
        }
    } else if (!strcasecmp(cmd, "JOIN")) {
        on_join(p, &m);
    } else if (!strcasecmp(cmd, "PART")) {
        if (m.nick && m.nparams >= 1) on_part(p, &m, m.params[0], m.nick, 0);
    } else if (!strcasecmp(cmd, "KICK")) {
        if (m.nparams >= 2) on_part(p, NULL, m.params[0], m.params[1], 1);
    } else if (!strcasecmp(cmd, "QUIT")) {
        if (m.nick) on_quit(p, &m);
    } else if (!strcasecmp(cmd, "NICK")) {
        if (m.nick && m.nparams >= 1) on_nick(p, &m);
    } else if (!strcmp(cmd, "396")) {
        on_host_hidden(p, &m);
    } else if (!strcmp(cmd, "311")) {
        if (m.nparams >= 4 && same(m.params[1], p->nick)) note_self(p, m.params[2], m.params[3]);
    } else if (!strcasecmp(cmd, "ACCOUNT")) {
        if (m.nick && m.nparams >= 1) user_set_account(user_find(p, m.nick), m.params[0]);
    } else if (!strcmp(cmd, "353")) {
        on_names(p, &m);
    } else if (!strcasecmp(cmd, "MODE")) {
        on_mode(p, &m);
    } else if (!strcasecmp(cmd, "INVITE")) {
        on_invite(p, &m);
    } else if (!strcmp(cmd, "716") || !strcmp(cmd, "717")) {
        if (m.nparams >= 2 && p->h.refused) p->h.refused(p->h.ctx, m.params[1], IRC_REFUSED_CALLERID);
    } else if (!strcmp(cmd, "486")) {
        if (m.nparams >= 3 && !irc_is_channel(m.params[1]) && p->h.refused)
            p->h.refused(p->h.ctx, m.params[1], IRC_REFUSED_REGONLY);
    } else if (!strcmp(cmd, "471") || !strcmp(cmd, "473") || !strcmp(cmd, "474") || !strcmp(cmd, "475") ||
               !strcmp(cmd, "403") || !strcmp(cmd, "405") || !strcmp(cmd, "477")) {
        plog(p, 1, "irc: cannot join %s: %s", m.nparams >= 2 ? m.params[1] : "?", last_param(&m));
    } else if (!strcmp(cmd, "404")) {
        plog(p, 1, "irc: cannot speak in %s: %s", m.nparams >= 2 ? m.params[1] : "?", last_param(&m));
    } else if (!strcmp(cmd, "401")) {
        plog(p, 2, "irc: %s is not on the network; a message to them was lost", m.nparams >= 2 ? m.params[1] : "?");
    } else if (!strcasecmp(cmd, "ERROR")) {
        plog(p, 1, "irc: the server closes the connection: %s", m.nparams ? m.params[0] : "");
    }
    return 0;
}

void irc_proto_tick(irc_proto *p, int64_t now_ms)
{
    if (!p->registered || same(p->nick, p->nick0)) return;
    if (p->last_nick_try && now_ms - p->last_nick_try < NICK_RETRY_MS) return;
    p->last_nick_try = now_ms;
    say(p, "NICK %s", p->nick0);
}
