/* irc.c — see irc.h. */
#include "irc.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "irc_line.h"
#include "irc_proto.h"
#include "netrun.h"

#define NET "irc"
#define KV_NS "irc"
#define KV_CHANNELS "channels"
#define READ_MAX 16384              /* bytes read per call */
#define LINE_MAX_IN (IRC_MAX_TAG_BYTES + IRC_MAX_MSG_BYTES + 2)
#define WRITE_MAX (256 * 1024)      /* control lines beyond this close the connection */
#define QUEUE_LINES_MAX 4000        /* game lines waiting; beyond, the core keeps the rest */
#define CONNECT_TIMEOUT_MS 20000
#define REGISTER_TIMEOUT_MS 60000
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 300000
#define HINT_EVERY_MS 60000         /* one "how to accept my messages" per player per minute */
#define RECENT_MAX 64
#define LAT_MAX 65536
#define STOP_GRACE_MS 2000
#define ACK_EVERY_MS 2000           /* while lines keep leaving, one acknowledging PING this often */
#define LINE_MIN 16                 /* bytes of text per line, however short [irc] line_bytes is */
#define UP_WAIT_MS 10000            /* the network counts as up this long after registering, joined or not */

enum { C_DOWN = 0, C_CONNECTING, C_TLS, C_UP };

typedef struct qmsg {
    int64_t id;                  /* outbox id; 0 for the adapter's own hints */
    char room[256];
    char user[256];
    int notice;                  /* a private message only for reading: sent as NOTICE */
    char *text;                  /* the text, red suits coloured */
    size_t budget;               /* bytes of text per line the lines are split for */
    char **lines;
    size_t *starts;              /* where each line starts in text */
    int64_t *ends;               /* for each line handed to the socket: its end in the byte stream */
    int n, next;                 /* lines, and the next one to hand to the socket */
    struct qmsg *link;
} qmsg;

typedef struct {
    char nick[IRC_NAME_MAX];
    char room[256];
    int64_t hinted;
} recent;

typedef struct {
    const cfg *config;
    const irc_options *o;
    store *db;
    core *core;
    irc_proto *p;
    int fatal;
    int closing;                 /* the bot is stopping: a closed connection is not reopened */
    /* connection */
    int state, fd;
    SSL_CTX *tls;
    SSL *ssl;
    int tls_want_write;
    struct addrinfo *addrs, *next_addr;
    int64_t state_since, reconnect_at, last_rx;
    int ping_out;                /* a PING of ours waits for any line from the server */
    int attempts;
    int up_told;                 /* the core heard that the network is up (once a start) */
    char rbuf[LINE_MAX_IN + READ_MAX];
    size_t rlen;
    int discarding;
    char *wbuf;
    size_t wlen, wcap;
    int64_t appended;            /* bytes of this connection put in wbuf */
    int64_t confirmed;           /* bytes the server has handled: acknowledged by a PONG */
    int64_t ack_seq, ack_mark, ack_sent; /* the acknowledging PING out (0 none), what it covers, when */
    int64_t acks;                /* acknowledging PINGs sent so far (their numbers) */
    /* flood control */
    double tokens;
    int64_t refill_at;
    /* game lines waiting */
    qmsg *qhead, *qtail;
    int qlines;
    /* the batch being read */
    adapter_event *ev;
    char **strs;
    int nev, cev, nstrs, cstrs;
    /* private messages recently sent, for refusals */
    recent rec[RECENT_MAX];
    int nrec;
    char saved_channels[CFG_STR * 4];
    unsigned saved_version;      /* irc_proto_channels_version() when they were saved */
    /* figures */
    int64_t lines_in, lines_out, msgs_out;
    int64_t conn_lines;          /* lines received on this connection */
    double *lat;
    int nlat;
} irc;

/* ---- logging (never a password or a private message's text) ---- */

static void ilog(irc *r, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void ilog(irc *r, int level, const char *fmt, ...)
{
    if (level > cfg_log_rank(r->config)) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    netrun_log(r->o->err, r->config, level, line);
}

static void core_log(void *ctx, core_log_level level, const char *line) { ilog(ctx, (int)level, "%s", line); }

static void *grow(void *a, int *cap, int need, size_t size)
{
    if (need <= *cap) return a;
    int c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *b = realloc(a, (size_t)c * size);
    if (!b) return NULL;
    *cap = c;
    return b;
}

/* ---- the connection ---- */

static void wbuf_add(irc *r, const char *line)
{
    size_t n = strlen(line);
    if (r->wlen + n + 2 > WRITE_MAX) {
        ilog(r, 0, "irc: the server does not read what the bot writes; reconnecting");
        r->state = C_DOWN; /* closed by the loop */
        return;
    }
    if (r->wlen + n + 2 > r->wcap) {
        size_t c = r->wcap ? r->wcap : 4096;
        while (c < r->wlen + n + 2) c *= 2;
        char *b = realloc(r->wbuf, c);
        if (!b) return;
        r->wbuf = b;
        r->wcap = c;
    }
    memcpy(r->wbuf + r->wlen, line, n);
    memcpy(r->wbuf + r->wlen + n, "\r\n", 2);
    r->wlen += n + 2;
    r->appended += (int64_t)n + 2;
}

static void send_now(void *ctx, const char *line)
{
    irc *r = ctx;
    if (r->state != C_UP) return;
    wbuf_add(r, line);
    if (r->config->irc_flood_interval_ms > 0) r->tokens -= 1; /* the server counts these too */
}

static void requeue_unconfirmed(irc *r);
static void settle_confirmed(irc *r);

/* Closes the connection and plans the next attempt; why is logged at level (0 error, 1 warn,
 * 2 info) with the pause before that attempt. */
static void close_conn_at(irc *r, int level, const char *why)
{
    if (r->ssl) {
        SSL_free(r->ssl);
        r->ssl = NULL;
    }
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    if (r->wbuf) sodium_memzero(r->wbuf, r->wcap); /* it may hold AUTHENTICATE */
    r->wlen = 0;
    requeue_unconfirmed(r);
    r->rlen = 0;
    r->discarding = 0;
    if (r->addrs) freeaddrinfo(r->addrs);
    r->addrs = r->next_addr = NULL;
    r->state = C_DOWN;
    if (netrun_stopping() || r->closing) return;
    int64_t wait = BACKOFF_FIRST_MS;
    for (int i = 0; i < r->attempts && wait < BACKOFF_MAX_MS; i++) wait *= 2;
    if (wait > BACKOFF_MAX_MS) wait = BACKOFF_MAX_MS;
    wait = wait * 3 / 4 + (int64_t)randombytes_uniform((uint32_t)(wait / 2 + 1)); /* ±25 % */
    r->attempts++;
    r->reconnect_at = netrun_mono_ms() + wait;
    ilog(r, level, "irc: %s; connecting again in %.1f s", why, (double)wait / 1000.0);
}

static int server_port(const irc *r)
{
    return r->config->irc_port ? r->config->irc_port : (strcmp(r->config->irc_tls, "true") == 0 ? 6697 : 6667);
}

/* A lost connection is a warning; a failed attempt to connect is told at info level. A plain
 * connection that ends before the server said one line is likely a TLS port: an error, with
 * the setting that fixes it. */
static void close_conn(irc *r, const char *why)
{
    if (r->state == C_UP && !r->tls && r->conn_lines == 0) {
        char more[512];
        snprintf(more, sizeof more, "%s before the server said a word: if port %d is a TLS port, set [irc] tls = true",
                 why, server_port(r));
        close_conn_at(r, 0, more);
    } else close_conn_at(r, r->state == C_UP ? 1 : 2, why);
}

/* TLS that never starts: a plain-text port answers a TLS hello with silence, plain text or a
 * close. The settings that fix it are named: these errors repeat until the operator acts. */
static void close_no_tls(irc *r, const char *what)
{
    char why[512];
    snprintf(why, sizeof why,
             "%s from %s port %d: it may be a plain-text port; set [irc] tls = false for it, or port to the "
             "server's TLS port (often 6697)",
             what, r->config->irc_server, server_port(r));
    close_conn_at(r, 0, why);
}

/* A certificate that does not verify: what is wrong with it and which setting helps. */
static void close_untrusted(irc *r, long v)
{
    char why[600];
    const char *err = X509_verify_cert_error_string(v);
    switch (v) {
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        snprintf(why, sizeof why,
                 "the server's certificate is not trusted (%s): if the server uses its own certificate "
                 "authority or a self-signed certificate, give that certificate (PEM) in [irc] tls_ca "
                 "(tls_verify = false would skip the check, and let anyone in between read the hands)",
                 err);
        break;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        snprintf(why, sizeof why,
                 "the server's certificate is not for %s (%s): set [irc] server to a name the certificate "
                 "holds",
                 r->config->irc_server, err);
        break;
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
        snprintf(why, sizeof why,
                 "the server's certificate is not valid now (%s): its operators must renew it (or check "
                 "this machine's clock); tls_verify = false skips the check",
                 err);
        break;
    default:
        snprintf(why, sizeof why, "the server's certificate is not trusted (%s): see [irc] tls_ca and tls_verify",
                 err);
    }
    close_conn_at(r, 0, why);
}

static const char *tls_error(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    if (!e) return "no details";
    ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

static int resolve(irc *r)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    char port[16];
    snprintf(port, sizeof port, "%d", server_port(r));
    int rc = getaddrinfo(r->config->irc_server, port, &hints, &r->addrs);
    if (rc != 0) {
        r->addrs = NULL;
        char why[300];
        snprintf(why, sizeof why, "cannot resolve %s: %s", r->config->irc_server, gai_strerror(rc));
        close_conn(r, why);
        return -1;
    }
    r->next_addr = r->addrs;
    return 0;
}

/* Starts a non-blocking connect to the next address; -1 when none is left. */
static int connect_next(irc *r)
{
    while (r->next_addr) {
        struct addrinfo *a = r->next_addr;
        r->next_addr = a->ai_next;
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
            r->fd = fd;
            r->state = C_CONNECTING;
            r->state_since = netrun_mono_ms();
            return 0;
        }
        close(fd);
    }
    return -1;
}

static void start_connect(irc *r)
{
    ilog(r, 2, "irc: connecting to %s", r->config->irc_server);
    if (resolve(r) != 0) return;
    if (connect_next(r) != 0) close_conn(r, "cannot connect");
}

static void session_up(irc *r)
{
    r->state = C_UP;
    r->state_since = r->last_rx = netrun_mono_ms();
    r->ping_out = 0;
    r->conn_lines = 0;
    r->tokens = r->config->irc_flood_burst;
    r->refill_at = netrun_mono_ms();
    irc_proto_reset(r->p);
}

static int start_tls(irc *r)
{
    r->ssl = SSL_new(r->tls);
    if (!r->ssl) return -1;
    SSL_set_fd(r->ssl, r->fd);
    SSL_set_mode(r->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    const char *host = r->config->irc_server;
    struct in6_addr a6;
    struct in_addr a4;
    int is_ip = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
    if (!is_ip) SSL_set_tlsext_host_name(r->ssl, host);
    if (strcmp(r->config->irc_tls_verify, "true") == 0) {
        SSL_set_verify(r->ssl, SSL_VERIFY_PEER, NULL);
        if (is_ip) {
            X509_VERIFY_PARAM *vp = SSL_get0_param(r->ssl);
            if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1) return -1;
        } else if (SSL_set1_host(r->ssl, host) != 1) return -1;
    }
    r->state = C_TLS;
    return 0;
}

static void tls_step(irc *r)
{
    ERR_clear_error();
    int rc = SSL_connect(r->ssl);
    if (rc == 1) {
        ilog(r, 2, "irc: TLS up (%s)", SSL_get_version(r->ssl));
        session_up(r);
        return;
    }
    int e = SSL_get_error(r->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        r->tls_want_write = e == SSL_ERROR_WANT_WRITE;
        return;
    }
    long v = SSL_get_verify_result(r->ssl);
    if (v != X509_V_OK) {
        close_untrusted(r, v);
        return;
    }
    unsigned long err = ERR_peek_error();
    int reason = ERR_GET_REASON(err);
    if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN || reason == SSL_R_WRONG_VERSION_NUMBER ||
        reason == SSL_R_PACKET_LENGTH_TOO_LONG || reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ERR_clear_error();
        close_no_tls(r, e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN ? "the connection closed before TLS started"
                                                                             : "an answer that is not TLS");
        return;
    }
    char buf[256], why[400];
    snprintf(why, sizeof why, "TLS failed: %s", tls_error(buf, sizeof buf));
    close_conn_at(r, 0, why);
}

static void connected_step(irc *r)
{
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
        close(r->fd);
        r->fd = -1;
        if (connect_next(r) == 0) return;
        char why[300];
        snprintf(why, sizeof why, "cannot connect to %s: %s", r->config->irc_server, strerror(err));
        close_conn(r, why);
        return;
    }
    if (r->tls) {
        if (start_tls(r) != 0) {
            close_conn(r, "cannot set up TLS");
            return;
        }
        tls_step(r);
    } else session_up(r);
}

/* Writes what is buffered. */
static void flush_out(irc *r)
{
    while (r->state == C_UP && r->wlen > 0) {
        ssize_t n;
        if (r->ssl) {
            ERR_clear_error();
            int k = SSL_write(r->ssl, r->wbuf, r->wlen > INT32_MAX ? INT32_MAX : (int)r->wlen);
            if (k <= 0) {
                int e = SSL_get_error(r->ssl, k);
                if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
                    r->tls_want_write = e == SSL_ERROR_WANT_WRITE;
                    return;
                }
                close_conn(r, "the connection broke while writing");
                return;
            }
            n = k;
        } else {
            n = send(r->fd, r->wbuf, r->wlen, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
                close_conn(r, "the connection broke while writing");
                return;
            }
        }
        sodium_memzero(r->wbuf, (size_t)n);
        memmove(r->wbuf, r->wbuf + n, r->wlen - (size_t)n);
        r->wlen -= (size_t)n;
    }
}

/* ---- the batch of events from one read ---- */

static char *keep(irc *r, const char *s)
{
    if (!s) return NULL;
    char **b = grow(r->strs, &r->cstrs, r->nstrs + 1, sizeof *r->strs);
    if (!b) return NULL;
    r->strs = b;
    return r->strs[r->nstrs++] = strdup(s);
}

static void on_event(void *ctx, const adapter_event *e)
{
    irc *r = ctx;
    adapter_event *b = grow(r->ev, &r->cev, r->nev + 1, sizeof *r->ev);
    if (!b) return;
    r->ev = b;
    adapter_event c = *e;
    c.room = keep(r, e->room);
    c.sender = keep(r, e->sender);
    c.text = keep(r, e->text);
    c.origin = keep(r, e->origin);
    c.renamed_to = keep(r, e->renamed_to);
    if (!c.sender || (e->text && !c.text) || (e->room && !c.room) || (e->origin && !c.origin) ||
        (e->renamed_to && !c.renamed_to))
        return;
    r->ev[r->nev++] = c;
}

static void batch_clear(irc *r)
{
    for (int i = 0; i < r->nstrs; i++) free(r->strs[i]);
    r->nstrs = 0;
    r->nev = 0;
}

static void save_channels(irc *r);

static void note_lat(irc *r, double us)
{
    if (!r->lat) r->lat = malloc(LAT_MAX * sizeof *r->lat);
    if (r->lat && r->nlat < LAT_MAX) r->lat[r->nlat++] = us;
}

/* Hands the events of one line to the core as one batch (one transaction). */
static void batch_line(irc *r, int64_t started_us)
{
    if (r->nev == 0) return;
    if (core_batch(r->core, NET, r->ev, r->nev, NULL) != 0) {
        ilog(r, 0, "irc: the store failed; stopping");
        r->fatal = 1;
    }
    note_lat(r, (double)(netrun_mono_us() - started_us));
    batch_clear(r);
}

/* Handles every complete line in rbuf. Each line that carries commands is its own batch, as a
 * line typed at the console is: the answer to one player's move is written (a turn prompt
 * included) before the next line is read, however many lines one read brought. */
static void handle_lines(irc *r)
{
    size_t start = 0;
    int nlines = 0;
    for (size_t i = 0; i < r->rlen && !r->fatal; i++) {
        if (r->rbuf[i] != '\n') continue;
        size_t end = i;
        if (end > start && r->rbuf[end - 1] == '\r') end--;
        if (r->discarding) r->discarding = 0;
        else if (end > start) {
            int64_t a = netrun_mono_us();
            r->rbuf[end] = 0;
            if (irc_proto_line(r->p, r->rbuf + start, end - start) != 0)
                ilog(r, 3, "irc: a line from the server was not understood");
            r->lines_in++;
            r->conn_lines++;
            nlines++;
            batch_line(r, a);
        }
        start = i + 1;
    }
    memmove(r->rbuf, r->rbuf + start, r->rlen - start);
    r->rlen -= start;
    if (r->rlen >= LINE_MAX_IN) { /* a line too long for IRC: dropped up to its end */
        r->rlen = 0;
        r->discarding = 1;
    }
    if (nlines) {
        r->last_rx = netrun_mono_ms();
        r->ping_out = 0;
    }
    save_channels(r);
}

static void read_in(irc *r)
{
    for (;;) {
        size_t room = sizeof r->rbuf - r->rlen;
        if (room > READ_MAX) room = READ_MAX;
        ssize_t n;
        if (r->ssl) {
            ERR_clear_error();
            int k = SSL_read(r->ssl, r->rbuf + r->rlen, (int)room);
            if (k <= 0) {
                int e = SSL_get_error(r->ssl, k);
                if (e == SSL_ERROR_WANT_READ) return;
                if (e == SSL_ERROR_WANT_WRITE) {
                    r->tls_want_write = 1;
                    return;
                }
                close_conn(r, e == SSL_ERROR_ZERO_RETURN ? "the server closed the connection" : "the connection broke");
                return;
            }
            n = k;
        } else {
            n = recv(r->fd, r->rbuf + r->rlen, room, 0);
            if (n == 0) {
                close_conn(r, "the server closed the connection");
                return;
            }
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
                close_conn(r, "the connection broke");
                return;
            }
        }
        r->rlen += (size_t)n;
        handle_lines(r);
        if (r->fatal || r->state != C_UP) return;
    }
}

/* ---- the game lines ---- */

static void qmsg_free(qmsg *q)
{
    for (int i = 0; i < q->n; i++) free(q->lines[i]);
    free(q->lines);
    free(q->starts);
    free(q->ends);
    free(q->text);
    free(q);
}

typedef struct {
    char **lines;
    size_t *starts;
    int n, cap;
    size_t base;                 /* where the split text starts in the message */
    int failed;
} split_ctx;

static int add_chunk(void *ctx, const char *chunk, size_t len, size_t offset)
{
    split_ctx *s = ctx;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 4;
        char **lines = realloc(s->lines, (size_t)cap * sizeof *lines);
        if (lines) s->lines = lines;
        size_t *starts = lines ? realloc(s->starts, (size_t)cap * sizeof *starts) : NULL;
        if (!starts) {
            s->failed = 1;
            return 1;
        }
        s->starts = starts;
        s->cap = cap;
    }
    char *line = strndup(chunk, len);
    if (!line) {
        s->failed = 1;
        return 1;
    }
    s->lines[s->n] = line;
    s->starts[s->n++] = s->base + offset;
    return 0;
}

/* (Re)splits q's text into lines of at most budget bytes from line q->next on: the lines before
 * it are on their way already. Returns 0, or -1 out of memory (q unchanged). */
static int split_rest(qmsg *q, size_t budget)
{
    split_ctx s = {.base = q->next < q->n ? q->starts[q->next] : 0};
    irc_split(q->text + s.base, budget, add_chunk, &s);
    int n = q->next + s.n;
    size_t room = (size_t)(n > q->n ? n : q->n > 0 ? q->n : 1); /* never smaller: q stays whole on failure */
    char **lines = s.failed ? NULL : realloc(q->lines, room * sizeof *lines);
    if (lines) q->lines = lines;
    size_t *starts = lines ? realloc(q->starts, room * sizeof *starts) : NULL;
    if (starts) q->starts = starts;
    int64_t *ends = starts ? realloc(q->ends, room * sizeof *ends) : NULL;
    if (!ends) {
        for (int i = 0; i < s.n; i++) free(s.lines[i]);
        free(s.lines);
        free(s.starts);
        return -1;
    }
    q->ends = ends;
    for (int i = q->next; i < q->n; i++) free(q->lines[i]);
    memcpy(q->lines + q->next, s.lines, (size_t)s.n * sizeof *s.lines);
    memcpy(q->starts + q->next, s.starts, (size_t)s.n * sizeof *s.starts);
    q->n = n;
    q->budget = budget;
    free(s.lines);
    free(s.starts);
    return 0;
}

static int private_dest(const qmsg *q) { return q->user[0] != 0; }

static const char *channel_command(const irc *r)
{
    return strcmp(r->config->irc_channel_replies, "privmsg") == 0 ? "PRIVMSG" : "NOTICE";
}

/* The command a message goes out with: to a player PRIVMSG, or NOTICE for one only for reading. */
static const char *command_of(const irc *r, const qmsg *q)
{
    if (private_dest(q)) return q->notice ? "NOTICE" : "PRIVMSG";
    return channel_command(r);
}

/* Where q's lines go now: the channel's name or the player's nick; NULL when out of reach. */
static const char *target_of(const irc *r, const qmsg *q)
{
    return private_dest(q) ? irc_proto_target(r->p, q->user) : irc_proto_channel_name(r->p, q->room);
}

/* Bytes of text per line to target: what IRC's 512 bytes leave with the bot's prefix as the
 * server shows it, less what a shorter [irc] line_bytes takes away. */
static size_t line_budget(const irc *r, const qmsg *q, const char *target)
{
    size_t max = irc_proto_budget(r->p, command_of(r, q), target);
    size_t cut = IRC_MAX_MSG_BYTES - (size_t)r->config->irc_line_bytes;
    return max > cut + LINE_MIN ? max - cut : LINE_MIN;
}

/* Text for room (user "") or privately for user (notice: only for reading), coloured and split
 * for where it goes now (not queued). Returns NULL out of memory. */
static qmsg *qmsg_split(irc *r, int64_t id, const char *room, const char *user, int notice, const char *text)
{
    qmsg *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->id = id;
    q->notice = notice;
    snprintf(q->room, sizeof q->room, "%s", room ? room : "");
    snprintf(q->user, sizeof q->user, "%s", user ? user : "");
    size_t need = irc_colour_suits(text, NULL, 0);
    q->text = malloc(need + 1);
    if (!q->text) {
        free(q);
        return NULL;
    }
    irc_colour_suits(text, q->text, need + 1);
    /* Split for the target and prefix as they are now; pump() splits the rest again if either
     * has changed by the time the lines leave. */
    const char *target = target_of(r, q);
    if (split_rest(q, line_budget(r, q, target ? target : (private_dest(q) ? q->user : q->room))) != 0) {
        qmsg_free(q);
        return NULL;
    }
    return q;
}

/* Queues text for room (user "") or privately for user (notice: only for reading). Returns 0, or
 * -1 out of memory. */
static int enqueue(irc *r, int64_t id, const char *room, const char *user, int notice, const char *text)
{
    qmsg *q = qmsg_split(r, id, room, user, notice, text);
    if (!q) return -1;
    if (r->qtail) r->qtail->link = q;
    else r->qhead = q;
    r->qtail = q;
    r->qlines += q->n;
    return 0;
}

/* Whether m must wait not to overtake a message of its table produced before it. The core
 * offers a destination's next message only once the one before is delivered (confirmed by the
 * server, here), and meanwhile goes on with other destinations: so while a message of m's room
 * to another destination waits for its confirmation, a message produced between the two may
 * still be held back in the core, and m waits too. A destination the bot cannot reach now (a
 * channel it is not in, a player not on the network) holds nothing up. */
static int behind_earlier(const irc *r, const store_msg *m)
{
    for (const qmsg *q = r->qhead; q; q = q->link)
        if (q->id > 0 && q->id < m->id && !strcmp(q->room, m->room) && strcmp(q->user, m->user) != 0 &&
            target_of(r, q))
            return 1;
    return 0;
}

/* Whether room is one of the channels the bot means to be in. */
static int wanted_room(irc *r, const char *room)
{
    char one[IRC_NAME_MAX], id[IRC_NAME_MAX];
    for (const char *s = r->saved_channels; irc_next_word(&s, "", one, sizeof one);)
        if (!strcmp(irc_proto_room_id(r->p, one, id, sizeof id), room)) return 1;
    return 0;
}

static int irc_send(void *ctx, const store_msg *m)
{
    irc *r = ctx;
    if (r->state != C_UP || !irc_proto_registered(r->p) || r->qlines >= QUEUE_LINES_MAX) return ADAPTER_LATER;
    if (m->user[0]) {
        if (!irc_proto_target(r->p, m->user)) return ADAPTER_LATER; /* not on the network now */
    } else if (!irc_proto_in_channel(r->p, m->room)) {
        if (!wanted_room(r, m->room)) {
            ilog(r, 0, "irc: a message for %s was dropped: the bot is no longer in that channel", m->room);
            return ADAPTER_SENT;
        }
        return ADAPTER_LATER; /* joining */
    }
    if (behind_earlier(r, m)) return ADAPTER_LATER;
    if (enqueue(r, m->id, m->room, m->user, m->notice, m->text) != 0) return ADAPTER_LATER;
    return ADAPTER_QUEUED;
}

static void remember_private(irc *r, const char *nick, const char *room)
{
    if (!room || !room[0]) return;
    for (int i = 0; i < r->nrec; i++)
        if (irc_nick_equal(r->rec[i].nick, nick)) {
            snprintf(r->rec[i].room, sizeof r->rec[i].room, "%s", room);
            return;
        }
    if (r->nrec == RECENT_MAX) memmove(&r->rec[0], &r->rec[1], (RECENT_MAX - 1) * sizeof r->rec[0]), r->nrec--;
    recent *x = &r->rec[r->nrec++];
    memset(x, 0, sizeof *x);
    snprintf(x->nick, sizeof x->nick, "%s", nick);
    snprintf(x->room, sizeof x->room, "%s", room);
}

static void refill(irc *r)
{
    int interval = r->config->irc_flood_interval_ms;
    if (interval <= 0) {
        r->tokens = r->config->irc_flood_burst;
        return;
    }
    int64_t now = netrun_mono_ms();
    if (now > r->refill_at) {
        r->tokens += (double)(now - r->refill_at) / interval;
        if (r->tokens > r->config->irc_flood_burst) r->tokens = r->config->irc_flood_burst;
        r->refill_at = now;
    }
}

/* Messages whose every line the server has handled are delivered: the core marks them done.
 * IRC has no acknowledgements, but a server handles a client's lines in order, so the PONG to a
 * PING sent after some lines proves those lines were handled (relayed or refused). A connection
 * lost before that sends the unconfirmed lines again on the next one (requeue_unconfirmed): a
 * server killed with lines in its buffers loses none of them. */
static void settle_confirmed(irc *r)
{
    qmsg *prev = NULL, *q = r->qhead;
    while (q) {
        qmsg *next = q->link;
        if (q->next == q->n && (q->n == 0 || q->ends[q->n - 1] <= r->confirmed)) {
            if (prev) prev->link = next;
            else r->qhead = next;
            if (r->qtail == q) r->qtail = prev;
            if (q->id > 0) {
                core_delivered(r->core, q->id);
                r->msgs_out++;
            }
            qmsg_free(q);
        } else prev = q;
        q = next;
    }
}

/* The connection is gone: lines handed to it but not confirmed go out again on the next one. */
static void requeue_unconfirmed(irc *r)
{
    for (qmsg *q = r->qhead; q; q = q->link) {
        int first = q->next;
        while (first > 0 && q->ends[first - 1] > r->confirmed) first--;
        r->qlines += q->next - first;
        q->next = first;
    }
    r->appended = r->confirmed = 0;
    r->ack_seq = 0;
}

/* Sends an acknowledging PING when lines wait for confirmation and either nothing more is ready
 * to go or ACK_EVERY_MS passed since the last one. */
static void ask_ack(irc *r)
{
    if (r->state != C_UP || r->ack_seq || r->appended <= r->confirmed) return;
    int more = 0;
    for (qmsg *q = r->qhead; q && !more; q = q->link) more = q->next < q->n;
    int64_t now = netrun_mono_ms();
    if (more && now - r->ack_sent < ACK_EVERY_MS) return;
    r->ack_seq = ++r->acks;
    char line[64];
    snprintf(line, sizeof line, "PING :cardroom-ack-%lld", (long long)r->ack_seq);
    send_now(r, line);
    r->ack_mark = r->appended;
    r->ack_sent = now;
}

static void on_pong(void *ctx, const char *token)
{
    irc *r = ctx;
    long long seq;
    char tail;
    if (sscanf(token, "cardroom-ack-%lld%c", &seq, &tail) != 1 || seq != r->ack_seq) return;
    r->confirmed = r->ack_mark;
    r->ack_seq = 0;
    settle_confirmed(r);
}

/* Hands game lines to the socket while the bucket has tokens. */
static void pump(irc *r)
{
    if (r->state != C_UP || !irc_proto_registered(r->p)) return;
    refill(r);
    while (r->tokens >= 1 && r->wlen < WRITE_MAX / 2) {
        qmsg *q = r->qhead;
        const char *target = NULL;
        for (; q; q = q->link) {
            if (q->next >= q->n) continue; /* all handed over; waiting to be written */
            if (!(target = target_of(r, q))) continue;
            size_t budget = line_budget(r, q, target);
            int before = q->n;
            if (budget != q->budget && split_rest(q, budget) == 0) r->qlines += q->n - before;
            if (q->next < q->n) break;
        }
        if (!q) break;
        char line[IRC_MAX_MSG_BYTES + 64];
        snprintf(line, sizeof line, "%s %s :%s", command_of(r, q), target, q->lines[q->next]);
        wbuf_add(r, line);
        if (r->state != C_UP) return;
        if (private_dest(q)) remember_private(r, target, q->room);
        if (r->config->irc_flood_interval_ms > 0) r->tokens -= 1;
        r->lines_out++;
        r->qlines--;
        q->ends[q->next++] = r->appended;
    }
    settle_confirmed(r); /* empty messages */
    ask_ack(r);
}

/* When the next token is due (INT64_MAX: none needed). */
static int64_t pump_due(irc *r)
{
    if (!r->qhead || r->state != C_UP || r->config->irc_flood_interval_ms <= 0 || r->tokens >= 1) return INT64_MAX;
    return r->refill_at + (int64_t)((1.0 - r->tokens) * r->config->irc_flood_interval_ms) + 1;
}

/* ---- hooks from the session ---- */

static void on_log(void *ctx, int level, const char *text) { ilog(ctx, level, "%s", text); }

static void on_registered(void *ctx)
{
    irc *r = ctx;
    r->attempts = 0;
}

static void on_refused(void *ctx, const char *nick, int why)
{
    irc *r = ctx;
    recent *x = NULL;
    for (int i = 0; i < r->nrec; i++)
        if (irc_nick_equal(r->rec[i].nick, nick)) x = &r->rec[i];
    const char *chan = x ? irc_proto_channel_name(r->p, x->room) : NULL;
    ilog(r, 2, "irc: %s does not accept the bot's private messages (%s)", nick,
         why == IRC_REFUSED_CALLERID ? "+g" : "registered senders only");
    if (!x || !chan) return;
    int64_t now = netrun_mono_ms();
    if (x->hinted && now - x->hinted < HINT_EVERY_MS) return;
    x->hinted = now;
    char text[600];
    const char *me = irc_proto_nick(r->p);
    if (why == IRC_REFUSED_CALLERID)
        snprintf(text, sizeof text,
                 "%s: I cannot send you your cards: you block private messages (user mode +g). "
                 "Type /accept %s (or /mode %s -g), then send me %shand.",
                 nick, me, nick, r->config->prefix);
    else
        snprintf(text, sizeof text,
                 "%s: I cannot send you your cards: you take private messages only from users logged in "
                 "to services. Allow mine (for example /mode %s -R), then send me %shand.",
                 nick, nick, r->config->prefix);
    enqueue(r, 0, x->room, "", 0, text);
}

static void on_fatal(void *ctx, int status, const char *why)
{
    irc *r = ctx;
    ilog(r, 0, "irc: %s", why);
    r->fatal = status;
}

/* ---- channels the bot was invited to: kept in the store ---- */

static void add_saved(void *ctx, const char *channel)
{
    char *list = ctx;
    size_t n = strlen(list), k = strlen(channel);
    if (n + k + 2 >= CFG_STR * 4) return;
    if (n) list[n++] = ' ';
    memcpy(list + n, channel, k + 1);
}

static void save_channels(irc *r)
{
    if (r->saved_version == irc_proto_channels_version(r->p)) return;
    r->saved_version = irc_proto_channels_version(r->p);
    char now[CFG_STR * 4] = "";
    irc_proto_each_channel(r->p, add_saved, now);
    if (!strcmp(now, r->saved_channels)) return;
    snprintf(r->saved_channels, sizeof r->saved_channels, "%s", now);
    if (store_kv_put(r->db, KV_NS, KV_CHANNELS, now) != 0) ilog(r, 1, "irc: could not store the channel list");
}

static void want_list(irc *r, const char *list)
{
    char one[IRC_NAME_MAX];
    for (const char *s = list; irc_next_word(&s, ",", one, sizeof one);)
        if (irc_proto_want_channel(r->p, one) != 0) ilog(r, 1, "irc: \"%s\" is not a channel name; not joined", one);
}

/* ---- the loop ---- */

typedef struct {
    irc *r;
    int missing;
} joined_count;

static void count_missing(void *ctx, const char *channel)
{
    joined_count *j = ctx;
    char id[IRC_NAME_MAX];
    j->missing += !irc_proto_in_channel(j->r->p, irc_proto_room_id(j->r->p, channel, id, sizeof id));
}

/* Once registered and in the wanted channels (or UP_WAIT_MS after registering), the core hears
 * that the network is up with an empty batch: what its tables held for the Caps judge before a
 * restart is done then, with the players' names known again. */
static int tell_up(irc *r)
{
    if (r->up_told || r->state != C_UP || !irc_proto_registered(r->p)) return 0;
    joined_count j = {r, 0};
    irc_proto_each_channel(r->p, count_missing, &j);
    if (j.missing && netrun_mono_ms() - r->state_since < UP_WAIT_MS) return 0;
    r->up_told = 1;
    return core_batch(r->core, NET, NULL, 0, NULL);
}

static void keepalive(irc *r)
{
    int64_t now = netrun_mono_ms();
    if (r->state == C_CONNECTING || r->state == C_TLS) {
        if (now - r->state_since <= CONNECT_TIMEOUT_MS) return;
        if (r->state == C_TLS) {
            char what[64];
            snprintf(what, sizeof what, "no TLS answer in %d s", CONNECT_TIMEOUT_MS / 1000);
            close_no_tls(r, what);
        } else close_conn(r, "the connection timed out");
        return;
    }
    if (r->state != C_UP) return;
    if (!irc_proto_registered(r->p) && now - r->state_since > REGISTER_TIMEOUT_MS) {
        close_conn(r, "the server did not finish registration in time");
        return;
    }
    if (r->ack_seq && now - r->ack_sent > ((int64_t)r->config->irc_ping_interval + r->config->irc_ping_timeout) * 1000) {
        close_conn(r, "the server does not answer");
        return;
    }
    int64_t silent = now - r->last_rx;
    int64_t interval = (int64_t)r->config->irc_ping_interval * 1000;
    if (silent > interval + (int64_t)r->config->irc_ping_timeout * 1000) {
        close_conn(r, "the server stopped answering");
        return;
    }
    if (silent > interval && !r->ping_out) {
        char line[64];
        snprintf(line, sizeof line, "PING :cardroom-%lld", (long long)now);
        wbuf_add(r, line);
        r->ping_out = 1;
    }
    irc_proto_tick(r->p, now);
}

static int64_t next_wake(irc *r)
{
    int64_t now = netrun_mono_ms(), at = now + 1000;
    if (r->state == C_DOWN && r->reconnect_at < at) at = r->reconnect_at;
    int64_t p = pump_due(r);
    if (p < at) at = p;
    if (r->state == C_UP) {
        int64_t ping = r->last_rx + (int64_t)r->config->irc_ping_interval * 1000;
        if (ping > now && ping < at) at = ping;
    }
    int64_t deadline = core_next_deadline(r->core);
    if (deadline != INT64_MAX) {
        int64_t d = now + (deadline - netrun_wall_ms());
        if (d < at) at = d;
    }
    return at;
}

static int loop(irc *r)
{
    while (!netrun_stopping() && !r->fatal) {
        if (r->state == C_DOWN && r->fd < 0 && netrun_mono_ms() >= r->reconnect_at) start_connect(r);
        if (r->state == C_DOWN && r->fd >= 0) close_conn(r, "the connection was dropped");
        if (core_tick(r->core) < 0 || core_flush(r->core) < 0) return 1;
        pump(r);
        flush_out(r);
        keepalive(r);
        if (tell_up(r) != 0) return 1;
        if (r->state == C_DOWN && r->fd >= 0) close_conn(r, "the connection was dropped");
        int64_t wait = next_wake(r) - netrun_mono_ms();
        if (wait < 0) wait = 0;
        struct pollfd fds[3];
        int n = 0;
        fds[n++] = (struct pollfd){.fd = netrun_stop_fd(), .events = POLLIN};
        int wfd = core_wake_fd(r->core);
        if (wfd >= 0) fds[n++] = (struct pollfd){.fd = wfd, .events = POLLIN};
        int sock = -1;
        if (r->fd >= 0) {
            short ev = 0;
            if (r->state == C_CONNECTING) ev = POLLOUT;
            else {
                ev = POLLIN;
                if (r->wlen > 0 || r->tls_want_write) ev |= POLLOUT;
            }
            sock = n;
            fds[n++] = (struct pollfd){.fd = r->fd, .events = ev};
        }
        if (poll(fds, (nfds_t)n, (int)wait) < 0 && errno != EINTR) return 1;
        if (sock >= 0 && fds[sock].revents) {
            r->tls_want_write = 0;
            if (r->state == C_CONNECTING) connected_step(r);
            else if (r->state == C_TLS) tls_step(r);
            else if (r->state == C_UP) {
                if (fds[sock].revents & (POLLIN | POLLHUP | POLLERR)) read_in(r);
                flush_out(r);
            }
        }
        if (r->ssl && r->state == C_UP && SSL_pending(r->ssl) > 0) read_in(r);
    }
    return r->fatal;
}

static void report(irc *r)
{
    double p50 = 0, p99 = 0;
    if (r->nlat > 0) {
        for (int i = 1; i < r->nlat; i++) { /* insertion sort is fine for the figures at exit */
            double v = r->lat[i];
            int j = i - 1;
            while (j >= 0 && r->lat[j] > v) r->lat[j + 1] = r->lat[j], j--;
            r->lat[j + 1] = v;
        }
        p50 = r->lat[r->nlat / 2];
        p99 = r->lat[(r->nlat * 99) / 100 < r->nlat ? (r->nlat * 99) / 100 : r->nlat - 1];
    }
    ilog(r, 2,
         "irc: %lld lines in, %lld lines out (%lld messages); time per command line p50 %.0f us, p99 %.0f us (%d samples)",
         (long long)r->lines_in, (long long)r->lines_out, (long long)r->msgs_out, p50, p99, r->nlat);
}

static void goodbye(irc *r)
{
    if (r->state != C_UP) return;
    wbuf_add(r, "QUIT :cardroom is stopping");
    int64_t until = netrun_mono_ms() + STOP_GRACE_MS;
    while (r->state == C_UP && r->wlen > 0 && netrun_mono_ms() < until) {
        struct pollfd pf = {.fd = r->fd, .events = POLLOUT};
        poll(&pf, 1, 100);
        flush_out(r);
    }
}

static int setup_tls(irc *r)
{
    if (strcmp(r->config->irc_tls, "true") != 0) return 0;
    r->tls = SSL_CTX_new(TLS_client_method());
    if (!r->tls) return -1;
    SSL_CTX_set_min_proto_version(r->tls, TLS1_2_VERSION);
    if (strcmp(r->config->irc_tls_verify, "true") != 0) {
        ilog(r, 1, "irc: [irc] tls_verify = false: the server's certificate is not checked");
        return 0;
    }
    if (r->config->irc_tls_ca[0]) {
        if (SSL_CTX_load_verify_locations(r->tls, r->config->irc_tls_ca, NULL) != 1) {
            fprintf(r->o->err, "cardroom: [irc] tls_ca: cannot read certificates from %s\n", r->config->irc_tls_ca);
            return -2;
        }
    } else if (SSL_CTX_set_default_verify_paths(r->tls) != 1) return -1;
    return 0;
}

/* The network's pace (adapter.h): the lines m splits into, one per flood interval. */
static int64_t irc_pace(void *ctx, const store_msg *m)
{
    irc *r = ctx;
    if (r->config->irc_flood_interval_ms <= 0) return 0;
    qmsg *q = qmsg_split(r, m->id, m->room, m->user, m->notice, m->text);
    int64_t lines = q ? q->n : 1;
    if (q) qmsg_free(q);
    return lines * r->config->irc_flood_interval_ms;
}

static const char *irc_display_name(void *ctx, const char *room, const char *user, char *buf, size_t len)
{
    (void)room;
    irc *r = ctx;
    return irc_proto_display(r->p, user, buf, len);
}

static int irc_leave(void *ctx, const char *room) { return irc_proto_part(((irc *)ctx)->p, room); }

static const char *irc_room_name(void *ctx, const char *room, char *buf, size_t len)
{
    irc *r = ctx;
    const char *name = irc_proto_channel_name(r->p, room);
    snprintf(buf, len, "%s", name ? name : room);
    return buf;
}

int irc_run(const cfg *config, const irc_options *o)
{
    irc r = {.config = config, .o = o, .fd = -1};
    char err[512];
    int rc = 1;
    const char *nick = config->irc_nick;
    if ((nick[0] >= '0' && nick[0] <= '9') || nick[0] == '-') {
        fprintf(o->err, "cardroom: [irc] nick: must not start with a digit or -\n");
        return 2;
    }
    if (!strcmp(config->irc_login, "sasl") && !config->irc_password[0]) {
        fprintf(o->err, "cardroom: [irc] login = sasl needs a password (CARDROOM_IRC_PASSWORD)\n");
        return 2;
    }
    if (netrun_stop_init() != 0) return 1;
    int t = setup_tls(&r);
    if (t != 0) {
        if (t == -1) fprintf(o->err, "cardroom: cannot set up TLS: %s\n", tls_error(err, sizeof err));
        rc = t == -2 ? 2 : 1;
        goto done;
    }
    const char *path = o->db ? o->db : config->database;
    if (store_open(&r.db, path, err, sizeof err) != 0) {
        fprintf(o->err, "cardroom: %s\n", err);
        goto done;
    }
    if (strcmp(path, ":memory:") != 0) chmod(path, 0600);
    static const char *const logins[] = {"auto", "sasl", "nickserv", "none"};
    int login = IRC_LOGIN_AUTO;
    for (int i = 0; i < 4; i++)
        if (!strcmp(config->irc_login, logins[i])) login = i;
    irc_proto_config pc = {.nick = config->irc_nick, .username = config->irc_username, .realname = config->irc_realname,
                           .account = config->irc_account, .password = config->irc_password, .login = login,
                           .invites = config->irc_invites};
    irc_proto_hooks h = {.ctx = &r, .send_now = send_now, .event = on_event, .log = on_log,
                         .registered = on_registered, .refused = on_refused, .pong = on_pong,
                         .fatal = on_fatal};
    r.p = irc_proto_new(&pc, &h);
    if (!r.p) goto done;
    want_list(&r, config->irc_channels);
    char *stored = NULL;
    if (store_kv_get(r.db, KV_NS, KV_CHANNELS, &stored) == 0) {
        want_list(&r, stored);
        free(stored);
    }
    save_channels(&r);
    core_options co = {.config = config, .db = r.db, .log = core_log, .log_ctx = &r, .fixed_seed = o->fixed_seed,
                       .seed = o->seed};
    r.core = core_new(&co, err, sizeof err);
    char how[200];
    snprintf(how, sizeof how, "with /msg %s", config->irc_nick);
    adapter a = {.net = NET, .ctx = &r, .send = irc_send, .display_name = irc_display_name,
                 .room_name = irc_room_name, .private_how = how, .pace_ms = irc_pace, .leave = irc_leave};
    if (!r.core || core_add_adapter(r.core, &a) != 0) {
        fprintf(o->err, "cardroom: %s\n", r.core ? "cannot add the IRC adapter" : err);
        goto done;
    }
    if (core_restore(r.core) < 0) goto done;
    rc = loop(&r);
    if (rc == 0) goodbye(&r);
    report(&r);
done:
    if (r.fd >= 0 || r.ssl) {
        r.closing = 1; /* no reconnect from close_conn */
        close_conn(&r, "stopping");
    }
    if (r.addrs) freeaddrinfo(r.addrs);
    while (r.qhead) {
        qmsg *q = r.qhead;
        r.qhead = q->link;
        qmsg_free(q);
    }
    batch_clear(&r);
    free(r.ev);
    free(r.strs);
    free(r.wbuf);
    free(r.lat);
    core_free(r.core);
    irc_proto_free(r.p);
    store_close(r.db);
    SSL_CTX_free(r.tls);
    netrun_stop_close();
    return rc;
}
