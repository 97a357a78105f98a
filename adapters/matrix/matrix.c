/* matrix.c — the Matrix adapter (see matrix.h). */
#include "matrix.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "mx_crypto.h"
#include "mx_e2ee.h"
#include "mx_html.h"
#include "mx_http.h"
#include "mx_sync.h"
#include "netrun.h"

#define NET "matrix"
#define API "/_matrix/client/v3"
#define KEY_TOKEN "matrix:token"
#define KEY_DEVICE "matrix:device"
#define KEY_USER "matrix:user"
#define KEY_DM "matrix:dm:"
#define NS_ENC "matrix.encrypted"    /* store: rooms known to be encrypted (for good) */
#define SEALED "sealed1:"            /* a stored access token sealed with the store key */
#define TOKEN_LABEL "cardroom-access-token-v1"
#define SEND_TIMEOUT_MS 60000L
#define BACKOFF_FIRST_MS 500
#define BACKOFF_MAX_MS 30000
#define THROTTLE_QUIET_MS 30000 /* no 429 and no send held back for this long: no longer limited */
#define THROTTLE_MARGIN_MS 20    /* added to a 429's wait: the server rounds it down to the ms */
#define HTML_MAX 65536
#define CONTENT_MAX 44000 /* an event's content in bytes, room left for Megolm's base64 */
#define LAT_MAX 4096

/* One outbox message on its way. Its wire form (type and body, in room) is decided once and
 * stored in the outbox before the first attempt: every retry, in this run or after a crash,
 * sends exactly that under the same txn id. */
typedef struct send_job {
    void *owner;             /* the mx */
    int64_t id;
    char user[256];          /* private: to this user's direct chat */
    char room[256];          /* where it goes ("" while the direct chat is being made) */
    char *content;           /* the event content in the clear, JSON (NULL: the wire form is known) */
    const char *type;        /* the wire form: m.room.message or m.room.encrypted (NULL: not decided) */
    char *body;              /* ... and the content sent */
    int attempts;
    int64_t not_before;      /* ms: wait until then (a retry); WAITING: until told */
    int running;
    struct send_job *next;
} send_job;

#define WAITING INT64_MAX    /* a job waiting for its room's encryption state or members */
#define WIRE_RETRY_MS 1000   /* a message the store refused (its wire form, or its room key's new
                                state) is tried again after this */

typedef struct {
    const cfg *config;
    const matrix_options *o;
    store *db;
    core *core;
    mx_http *http;
    mx_state *st;
    mx_e2ee *e2ee;
    char me[256], device[256], token[512], filter[128];
    char since[1100];
    int first;               /* the database's very first sync: learn the rooms, replay nothing */
    int full_state;          /* ask for the full state (the first sync after a start) */
    int wire_failing;        /* the store refused a message's wire form (a lock another program
                                holds, a full disk): such messages wait, tried again */
    int synced;              /* this run's first sync answer is read: until then the core's timers
                                and computer players wait, since names and room names are not
                                known yet and would be written as ids into what tables say */
    int sync_running, sync_errors;
    int64_t sync_not_before;
    int64_t sync_arrived_us; /* a sync answer was just handled (latency measurement) */
    int sends_started;
    int notices;             /* the core's notices sent (their txn ids) */
    int sends_running;       /* sends in flight */
    send_job *jobs;          /* oldest first */
    /* the homeserver's rate limit (429 M_LIMIT_EXCEEDED on sending): while it holds, one send
     * at a time, none before send_not_before, and the core merges what waits per room */
    int throttled, throttled_429s;
    int64_t throttled_since, throttled_last, throttled_held, send_not_before;
    int64_t pace_ms;         /* while throttled: the time between two sends the server allows */
    int room_turn;           /* a direct chat waits for its turn: messages wait behind it */
    int room_refused;        /* new rooms refused (429) in a row while throttled */
    int64_t token_at;        /* when the last 429 said the next send is allowed (0: none yet) */
    int sends_since_429;     /* sends that went through since then */
    json_t *creating;        /* user → retry time: direct chats being made */
    json_t *unsure;          /* user → {nonce, after}: a direct chat that may exist (see open_dm) */
    int64_t syncs_started;   /* sync requests made (the one running is number syncs_started) */
    json_t *joining;         /* rooms being joined or declined */
    json_t *asking;          /* room → retry time (-1 running): asking whether it is encrypted */
    uint8_t skey[32];        /* the store key: seals the access token (and the encryption keys) */
    int direct_dirty, direct_running;
    char *gap_body;          /* an answer waiting for the events its gaps skipped */
    size_t gap_len;
    json_t *gaps;            /* room → the skipped events fetched so far */
    int gap_pending, gap_failed;
    int fatal;               /* stop: the exit status (1 a failure, 2 the operator must act) */
    int relogin;             /* the token was refused: log in again */
    /* figures */
    int64_t syncs, events;
    int sends_at_arrival;
    double lat[LAT_MAX];     /* the latest LAT_MAX samples */
    int64_t nlat;
} mx;

/* ---- logging (never a token, password or message body) ---- */

static int log_wanted(const mx *m, core_log_level level) { return (int)level <= cfg_log_rank(m->config); }

static void mlog(mx *m, core_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void mlog(mx *m, core_log_level level, const char *fmt, ...)
{
    if (!log_wanted(m, level)) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    netrun_log(m->o->err, m->config, (int)level, line);
}

static void core_log(void *ctx, core_log_level level, const char *line)
{
    mx *m = ctx;
    if (log_wanted(m, level)) mlog(m, level, "%s", line);
}

/* "M_FORBIDDEN: You are not in the room" from an error answer, for logs. */
static const char *why(const mx_response *r, char *buf, size_t len)
{
    if (r->status == 0) {
        snprintf(buf, len, "%s", r->error ? r->error : "no answer");
        return buf;
    }
    json_t *j = json_loadb(r->body, r->len, 0, NULL);
    json_t *code = json_object_get(j, "errcode"), *text = json_object_get(j, "error");
    if (json_is_string(code))
        snprintf(buf, len, "HTTP %ld %s: %.200s", r->status, json_string_value(code),
                 json_is_string(text) ? json_string_value(text) : "");
    else
        snprintf(buf, len, "HTTP %ld%s", r->status, j ? "" : " (not JSON)");
    json_decref(j);
    return buf;
}

/* How long to wait before attempt number n+1: 429 as the server says (Retry-After or the
 * body's retry_after_ms), else doubling from 0.5 s to 30 s, with ±25 % jitter. */
static int64_t backoff_ms(const mx_response *r, int attempts)
{
    if (r && r->status == 429) {
        long ms = r->retry_after_ms;
        json_t *j = json_loadb(r->body, r->len, 0, NULL);
        json_t *v = json_object_get(j, "retry_after_ms");
        if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < 3600000)
            ms = (long)json_integer_value(v) > ms ? (long)json_integer_value(v) : ms;
        json_decref(j);
        if (ms >= 0) return ms;
    }
    int64_t ms = BACKOFF_FIRST_MS;
    for (int i = 1; i < attempts && ms < BACKOFF_MAX_MS; i++) ms *= 2;
    if (ms > BACKOFF_MAX_MS) ms = BACKOFF_MAX_MS;
    int64_t jitter = (int64_t)randombytes_uniform((uint32_t)(ms / 2 + 1)) - ms / 4;
    return ms + jitter;
}

/* A request with a user or room id attached (making a direct chat, joining). */
typedef struct {
    mx *m;
    char id[256];
} id_req;

static int cancelled(const mx_response *r) { return r->status == 0 && r->error && strcmp(r->error, "cancelled") == 0; }

static int retryable(const mx_response *r) { return r->status == 0 || r->status == 429 || r->status >= 500; }

/* ---- blocking calls (start-up only) ---- */

typedef struct {
    int done;
    long status;
    char *body;
    size_t len;
    long retry_after_ms;
    char why[512];
} call;

static void call_done(void *ctx, const mx_response *r)
{
    call *c = ctx;
    c->done = 1;
    c->status = r->status;
    c->retry_after_ms = r->retry_after_ms;
    c->body = malloc(r->len + 1);
    if (c->body) {
        memcpy(c->body, r->body, r->len);
        c->body[r->len] = 0;
        c->len = r->len;
    }
    why(r, c->why, sizeof c->why);
}

static void call_free(call *c)
{
    if (c->body) sodium_memzero(c->body, c->len);
    free(c->body);
    memset(c, 0, sizeof *c);
}

/* Runs one request to its end; retries network errors, 429 and 5xx until stopped. Returns 0
 * with the answer in c (2xx or 4xx), or -1 when stopped. */
static int call_run(mx *m, const char *method, const char *path, const char *body, call *c, const char *what)
{
    for (int attempt = 1;; attempt++) {
        memset(c, 0, sizeof *c);
        if (mx_http_request(m->http, method, path, body, SEND_TIMEOUT_MS, call_done, c) != 0) return -1;
        while (!c->done) {
            int fds[1] = {netrun_stop_fd()};
            mx_http_wait(m->http, fds, 1, 1000);
            mx_http_work(m->http);
            if (netrun_stopping() && !c->done) continue; /* let the request end; the caller stops */
        }
        mx_response r = {.status = c->status, .body = c->body ? c->body : "", .len = c->len,
                         .retry_after_ms = c->retry_after_ms};
        if (!retryable(&r)) return 0;
        int64_t wait = backoff_ms(&r, attempt);
        mlog(m, CORE_LOG_WARN, "%s: %s; trying again in %.1f s", what, c->why, (double)wait / 1000);
        call_free(c);
        for (int64_t until = netrun_mono_ms() + wait; !netrun_stopping() && netrun_mono_ms() < until;) {
            int fds[1] = {netrun_stop_fd()};
            mx_http_wait(m->http, fds, 1, (int)(until - netrun_mono_ms()));
        }
        if (netrun_stopping()) return -1;
    }
}

/* ---- start: who we are ---- */

static int store_get(mx *m, const char *key, char *buf, size_t len)
{
    int rc = store_position_get(m->db, key, buf, len);
    if (rc < 0) mlog(m, CORE_LOG_ERROR, "store: %s", store_error(m->db));
    if (rc != 0) buf[0] = 0;
    return rc < 0 ? -1 : 0;
}

static int store_put(mx *m, const char *key, const char *value)
{
    if (store_position_set(m->db, key, value) == 0) return 0;
    mlog(m, CORE_LOG_ERROR, "store: %s", store_error(m->db));
    return -1;
}

/* The access token is kept sealed with the store key, like the encryption keys. */
static int token_save(mx *m)
{
    char *sealed = mx_seal(m->skey, TOKEN_LABEL, (const uint8_t *)m->token, strlen(m->token));
    size_t n = sealed ? strlen(SEALED) + strlen(sealed) + 1 : 0;
    char *value = sealed ? malloc(n) : NULL;
    int rc = -1;
    if (value) {
        snprintf(value, n, SEALED "%s", sealed);
        rc = store_put(m, KEY_TOKEN, value);
    }
    free(sealed);
    free(value);
    return rc;
}

/* Reads the stored token into m->token; one stored in the clear by an older cardroom is sealed
 * now. Returns 0 (m->token "" when there is none) or -1. */
static int token_load(mx *m)
{
    char stored[1200];
    if (store_get(m, KEY_TOKEN, stored, sizeof stored)) return -1;
    if (strncmp(stored, SEALED, strlen(SEALED)) != 0) {
        size_t n = strlen(stored);
        if (n >= sizeof m->token) n = 0; /* not a token this bot stored: log in again */
        memcpy(m->token, stored, n);
        m->token[n] = 0;
        sodium_memzero(stored, sizeof stored);
        if (!m->token[0]) return 0;
        if (token_save(m) != 0) return -1;
        mlog(m, CORE_LOG_INFO, "matrix: the stored access token is now sealed with the store key");
        return 0;
    }
    long n = mx_unseal(m->skey, TOKEN_LABEL, stored + strlen(SEALED), (uint8_t *)m->token, sizeof m->token - 1);
    if (n < 0) {
        mlog(m, CORE_LOG_ERROR, "matrix: the access token in the store cannot be read: wrong CARDROOM_MATRIX_STORE_KEY, "
                                "or the store is damaged");
        return -1;
    }
    m->token[n] = 0;
    return 0;
}

/* POST /login with the password (Client-Server API §"Login"), keeping the stored device id. */
static int password_login(mx *m)
{
    const char *pw = m->config->matrix_password;
    if (!*pw) {
        mlog(m, CORE_LOG_ERROR, "matrix: no way to log in: give the bot's password in CARDROOM_MATRIX_PASSWORD "
                                "(or an access token in CARDROOM_MATRIX_ACCESS_TOKEN)");
        return -1;
    }
    json_t *req = json_pack("{s:s, s:{s:s, s:s}, s:s, s:s}", "type", "m.login.password", "identifier", "type",
                            "m.id.user", "user", m->config->matrix_user, "password", pw,
                            "initial_device_display_name", m->config->matrix_device_name);
    if (m->device[0]) json_object_set_new(req, "device_id", json_string(m->device));
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    call c;
    mx_http_set_token(m->http, "");
    int rc = call_run(m, "POST", API "/login", body, &c, "logging in");
    sodium_memzero(body, strlen(body));
    free(body);
    if (rc != 0) return -1;
    json_t *a = c.status == 200 ? json_loadb(c.body, c.len, 0, NULL) : NULL;
    const char *token = json_string_value(json_object_get(a, "access_token"));
    const char *device = json_string_value(json_object_get(a, "device_id"));
    if (!token || !device || strlen(token) >= sizeof m->token || strlen(device) >= sizeof m->device) {
        mlog(m, CORE_LOG_ERROR, "matrix: the homeserver refused the login of %s: %s", m->config->matrix_user,
             c.status == 200 ? "the answer has no access token" : c.why);
        json_decref(a);
        call_free(&c);
        return -1;
    }
    snprintf(m->token, sizeof m->token, "%s", token);
    snprintf(m->device, sizeof m->device, "%s", device);
    json_decref(a);
    call_free(&c);
    if (store_begin(m->db) != 0 || token_save(m) != 0 || store_put(m, KEY_DEVICE, m->device) != 0 ||
        store_commit(m->db) != 0) {
        store_rollback(m->db);
        return -1;
    }
    mx_http_set_token(m->http, m->token);
    mlog(m, CORE_LOG_INFO, "matrix: logged in as %s on device %s", m->config->matrix_user, m->device);
    return 0;
}

/* GET /account/whoami: the token must belong to the configured user. Returns 0, 1 if the
 * token was refused, -1 on failure. */
static int whoami(mx *m)
{
    call c;
    if (call_run(m, "GET", API "/account/whoami", NULL, &c, "checking the access token") != 0) return -1;
    if (c.status == 401) {
        call_free(&c);
        return 1;
    }
    json_t *a = c.status == 200 ? json_loadb(c.body, c.len, 0, NULL) : NULL;
    const char *user = json_string_value(json_object_get(a, "user_id"));
    const char *device = json_string_value(json_object_get(a, "device_id"));
    int rc = 0;
    if (!user || strlen(user) >= sizeof m->me) {
        mlog(m, CORE_LOG_ERROR, "matrix: whoami failed: %s", c.status == 200 ? "no user_id in the answer" : c.why);
        rc = -1;
    } else if (m->config->matrix_user[0] && strcmp(user, m->config->matrix_user) != 0) {
        mlog(m, CORE_LOG_ERROR, "matrix: the access token belongs to %s, not to %s ([matrix] user)", user,
             m->config->matrix_user);
        rc = -1;
    } else {
        snprintf(m->me, sizeof m->me, "%s", user);
        if (device && strlen(device) < sizeof m->device) snprintf(m->device, sizeof m->device, "%s", device);
    }
    json_decref(a);
    call_free(&c);
    return rc;
}

static void e2ee_log(void *ctx, int level, const char *line)
{
    mlog(ctx, (core_log_level)level, "%s", line);
}

static void adopt_dms(mx *m, json_t *root);

static void hook_answer(void *ctx, void *root)
{
    mx *m = ctx;
    mx_e2ee_sync(m->e2ee, root);
    adopt_dms(m, root);
}

static void *hook_decrypt(void *ctx, const char *room, void *event)
{
    mx *m = ctx;
    char err[300];
    json_t *dec = mx_e2ee_decrypt(m->e2ee, room, event, err, sizeof err);
    if (!dec) mlog(m, CORE_LOG_WARN, "matrix: an encrypted message in %s was not read: %s", room, err);
    return dec;
}

/* A room is encrypted: stored at once, for good (the next restart knows it before any sync). */
static void remember_encrypted(mx *m, const char *room)
{
    if (store_kv_put(m->db, NS_ENC, room, "1") != 0) {
        mlog(m, CORE_LOG_ERROR, "store: %s", store_error(m->db));
        m->fatal = 1;
    }
}

static void hook_encrypted(void *ctx, const char *room) { remember_encrypted(ctx, room); }

static int load_encrypted(void *ctx, const char *room, const char *value)
{
    mx *m = ctx;
    (void)value;
    mx_state_set_encryption(m->st, room, MX_ENC_YES);
    return 0;
}

/* A stored direct chat: "!room", "" (forgotten), or "?nonce" (being made when the bot
 * stopped: looked for in the first sync answer before another is made; see open_dm). */
static int load_dm(void *ctx, const char *name, const char *room)
{
    mx *m = ctx;
    const char *user = name + strlen(KEY_DM);
    if (room[0] == '?') json_object_set_new(m->unsure, user, json_pack("{s:s, s:I}", "nonce", room + 1, "after", 0));
    else if (*room) mx_state_set_dm(m->st, user, room);
    return 0;
}

static int start_up(mx *m)
{
    char stored_user[256];
    if (store_get(m, KEY_DEVICE, m->device, sizeof m->device) || store_get(m, KEY_USER, stored_user, sizeof stored_user))
        return -1;
    const char *secret = m->config->matrix_store_key[0] ? m->config->matrix_store_key : "cardroom";
    mx_sha256((const uint8_t *)secret, strlen(secret), m->skey);
    int from_store = 0;
    if (m->config->matrix_access_token[0]) {
        snprintf(m->token, sizeof m->token, "%s", m->config->matrix_access_token);
    } else {
        if (token_load(m) != 0) return -1;
        from_store = m->token[0] != 0;
        if (!from_store && password_login(m) != 0) return -1;
    }
    mx_http_set_token(m->http, m->token);
    int rc = whoami(m);
    if (rc == 1 && from_store) {
        mlog(m, CORE_LOG_WARN, "matrix: the stored access token is no longer valid; logging in again");
        if (password_login(m) != 0) return -1;
        rc = whoami(m);
    }
    if (rc == 1) mlog(m, CORE_LOG_ERROR, "matrix: the homeserver refuses the access token (M_UNKNOWN_TOKEN)");
    if (rc != 0) return -1;
    if (stored_user[0] && strcmp(stored_user, m->me) != 0) {
        mlog(m, CORE_LOG_ERROR, "matrix: this database belongs to %s, not %s: use another database", stored_user, m->me);
        return -1;
    }
    if (!stored_user[0] && store_put(m, KEY_USER, m->me) != 0) return -1;
    m->st = mx_state_new(m->me, m->config->matrix_invites);
    if (!m->st) return -1;

    /* End-to-end encryption: the device's keys, from the store or new. */
    char eerr[512];
    m->e2ee = mx_e2ee_new(m->db, m->me, m->device, m->skey, eerr, sizeof eerr);
    if (!m->e2ee) {
        mlog(m, CORE_LOG_ERROR, "matrix: %s", eerr);
        return -1;
    }
    mx_e2ee_set_log(m->e2ee, e2ee_log, m);
    mx_e2ee_set_password(m->e2ee, m->config->matrix_password);
    mx_sync_hooks hooks = {.answer = hook_answer, .decrypt = hook_decrypt, .encrypted = hook_encrypted, .ctx = m};
    mx_state_set_hooks(m->st, &hooks);
    if (store_kv_each(m->db, NS_ENC, load_encrypted, m) != 0) {
        mlog(m, CORE_LOG_ERROR, "store: %s", store_error(m->db));
        return -1;
    }

    /* The filter (Client-Server API §"Filtering"): room events we read, nothing we do not. */
    char esc[800], path[1024];
    snprintf(path, sizeof path, API "/user/%s/filter", mx_http_escape(m->me, esc, sizeof esc));
    static const char filter[] =
        "{\"presence\":{\"not_types\":[\"*\"]},\"account_data\":{\"types\":[\"m.direct\"]},"
        "\"room\":{\"timeline\":{\"limit\":100},\"ephemeral\":{\"not_types\":[\"*\"]},"
        "\"account_data\":{\"not_types\":[\"*\"]}}}";
    call c;
    if (call_run(m, "POST", path, filter, &c, "making the sync filter") != 0) return -1;
    json_t *a = c.status == 200 ? json_loadb(c.body, c.len, 0, NULL) : NULL;
    const char *id = json_string_value(json_object_get(a, "filter_id"));
    if (id && strlen(id) < sizeof m->filter) snprintf(m->filter, sizeof m->filter, "%s", id);
    else mlog(m, CORE_LOG_WARN, "matrix: no sync filter (%s); syncing without one", c.why);
    json_decref(a);
    call_free(&c);

    /* Direct chats: those we made (the store), then the account's m.direct. */
    if (store_position_each(m->db, KEY_DM, load_dm, m) != 0) return -1;
    snprintf(path, sizeof path, API "/user/%s/account_data/m.direct", esc);
    if (call_run(m, "GET", path, NULL, &c, "reading m.direct") != 0) return -1;
    if (c.status == 200) mx_state_read_direct(m->st, c.body, c.len);
    call_free(&c);

    if (store_get(m, NET, m->since, sizeof m->since)) return -1;
    m->first = m->since[0] == 0;
    m->full_state = 1;
    mlog(m, CORE_LOG_INFO, "matrix: %s on device %s, %s", m->me, m->device,
         m->first ? "first start: old messages are not replayed" : "resuming");
    return 0;
}

/* ---- direct chats ----
 * A direct chat is made once, even across a crash. Before POST /createRoom the store records
 * the intent, "?NONCE" under matrix:dm:USER, and the request carries NONCE in the creation
 * content (org.cardroom.direct). When no answer tells which room was made (none came, a 5xx,
 * or the bot stopped while it was on its way), the user is unsure: no room is made for him
 * until a sync answer has been read from a sync that started after that, and a room the bot
 * is in whose m.room.create carries the nonce is taken as his direct chat. That sync asks for
 * the full state, which holds every room's m.room.create, and does not wait (as a restart's
 * first sync does anyway). */

#define DM_MARK "org.cardroom.direct"
#define DM_NONCE_BYTES 16

typedef struct {
    mx *m;
    char user[256];
    char nonce[2 * DM_NONCE_BYTES + 1];
} dm_req;

static void save_direct(mx *m);
static void throttle(mx *m, int64_t wait, int learn);
static int64_t paced(mx *m, int room);
static void paced_done(mx *m, int turns);

static void direct_saved(void *ctx, const mx_response *r)
{
    mx *m = ctx;
    char buf[300];
    m->direct_running = 0;
    if (r->status != 200 && !cancelled(r)) {
        mlog(m, CORE_LOG_WARN, "matrix: cannot save m.direct: %s", why(r, buf, sizeof buf));
        m->direct_dirty = 1;
    }
}

/* PUT the direct chats we know as m.direct (one request at a time). */
static void save_direct(mx *m)
{
    if (m->direct_running || !m->direct_dirty) return;
    char esc[800], path[1024];
    snprintf(path, sizeof path, API "/user/%s/account_data/m.direct", mx_http_escape(m->me, esc, sizeof esc));
    char *body = mx_state_direct_json(m->st);
    if (body && mx_http_request(m->http, "PUT", path, body, SEND_TIMEOUT_MS, direct_saved, m) == 0) {
        m->direct_running = 1;
        m->direct_dirty = 0;
    }
    free(body);
}

/* Records room as the direct chat with user, in the store too (if the store fails now, the
 * chat is known until the bot stops, and m.direct keeps it beyond). */
static void set_dm(mx *m, const char *user, const char *room)
{
    char key[300];
    mx_state_set_dm(m->st, user, room);
    snprintf(key, sizeof key, KEY_DM "%s", user);
    store_put(m, key, room);
    m->direct_dirty = 1;
}

/* Room is the direct chat the bot made for user (open_dm), encrypted when encrypt_dms asked for
 * it: that is stored before the chat is used. */
static void made_dm(mx *m, const char *user, const char *room)
{
    int encrypted = strcmp(m->config->matrix_encrypt_dms, "true") == 0;
    if (encrypted) remember_encrypted(m, room);
    set_dm(m, user, room);
    mx_state_made_dm(m->st, room, user, encrypted);
}

static void unsure_of(mx *m, const char *user, const char *nonce, int64_t after)
{
    json_object_set_new(m->unsure, user, json_pack("{s:s, s:I}", "nonce", nonce, "after", (json_int_t)after));
}

/* Whether a user waits for a sync that starts now: it asks for the full state, at once. */
static int dm_unsure(const mx *m)
{
    const char *user;
    json_t *u;
    json_object_foreach(m->unsure, user, u) {
        if (json_integer_value(json_object_get(u, "after")) >= m->syncs_started) return 1;
    }
    return 0;
}

/* Every sync answer: rooms made for unsure users are theirs; users still unsure after an
 * answer from a sync started since they became unsure have no such room. */
static void adopt_dms(mx *m, json_t *root)
{
    const char *room_id, *user;
    json_t *room, *u;
    void *next;
    if (json_object_size(m->unsure) == 0) return;
    json_object_foreach(json_object_get(json_object_get(root, "rooms"), "join"), room_id, room) {
        for (int part = 0; part < 2; part++) {
            json_t *events = json_object_get(json_object_get(room, part ? "timeline" : "state"), "events"), *e;
            size_t i;
            json_array_foreach(events, i, e) {
                const char *type = json_string_value(json_object_get(e, "type"));
                const char *nonce = json_string_value(json_object_get(json_object_get(e, "content"), DM_MARK));
                if (!type || strcmp(type, "m.room.create") != 0 || !nonce || strlen(room_id) >= 256) continue;
                json_object_foreach_safe(m->unsure, next, user, u) {
                    if (strcmp(json_string_value(json_object_get(u, "nonce")), nonce) != 0) continue;
                    mlog(m, CORE_LOG_INFO, "matrix: the direct chat with %s made earlier (its answer never came) "
                                           "is taken instead of a new one", user);
                    made_dm(m, user, room_id);
                    json_object_del(m->unsure, user);
                }
            }
        }
    }
    json_object_foreach_safe(m->unsure, next, user, u)
        if (json_integer_value(json_object_get(u, "after")) < m->syncs_started) json_object_del(m->unsure, user);
}

static void dm_created(void *ctx, const mx_response *r)
{
    dm_req *d = ctx;
    mx *m = d->m;
    char buf[300];
    json_t *a = r->status == 200 ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    const char *room = json_string_value(json_object_get(a, "room_id"));
    paced_done(m, room ? 2 : 0);
    if (room) m->room_refused = 0;
    else if (r->status == 429 && m->throttled) m->room_refused++;
    if (room && strlen(room) < 256) {
        json_object_del(m->creating, d->user);
        made_dm(m, d->user, room);
        mlog(m, CORE_LOG_INFO, "matrix: opened a direct chat with %s", d->user);
    } else if (cancelled(r)) {
        json_object_del(m->creating, d->user);
    } else {
        int64_t wait = backoff_ms(r, 3);
        if (r->status == 429) throttle(m, wait, 0);
        /* a room may have been made all the same: it is looked for before another is */
        if (r->status == 0 || r->status == 200 || r->status >= 500) unsure_of(m, d->user, d->nonce, m->syncs_started);
        mlog(m, r->status == 429 ? CORE_LOG_DEBUG : CORE_LOG_WARN,
             "matrix: cannot open a direct chat with %s: %s; trying again in %.1f s", d->user,
             r->status == 200 ? "no room_id in the answer" : why(r, buf, sizeof buf), (double)wait / 1000);
        /* not running: retried (a 429 sets the pause every such request waits for) */
        json_object_set_new(m->creating, d->user, json_integer(netrun_mono_ms() + wait));
    }
    json_decref(a);
    free(d);
}

/* Starts making the direct chat with user (Client-Server API §"Direct Messaging"), the intent
 * stored first. */
static void open_dm(mx *m, const char *user)
{
    json_t *t = json_object_get(m->creating, user);
    if (t && (json_integer_value(t) < 0 || json_integer_value(t) > netrun_mono_ms())) return; /* running or waiting */
    if (json_object_get(m->unsure, user)) return; /* one may exist: a sync answer tells first */
    int64_t later = paced(m, 1);
    if (later) { /* making a room counts against the rate limit like a message (Synapse's rc_message) */
        json_object_set_new(m->creating, user, json_integer(later == WAITING ? netrun_mono_ms() + 200 : later));
        m->room_turn = 1;
        return;
    }
    m->room_turn = 0;
    dm_req *d = calloc(1, sizeof *d);
    if (!d || strlen(user) >= sizeof d->user) {
        free(d);
        return;
    }
    uint8_t raw[DM_NONCE_BYTES];
    char key[300], intent[sizeof d->nonce + 1];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(d->nonce, sizeof d->nonce, raw, sizeof raw);
    snprintf(intent, sizeof intent, "?%s", d->nonce);
    snprintf(key, sizeof key, KEY_DM "%s", user);
    if (store_put(m, key, intent) != 0) { /* no intent on record, no request: the store is tried again */
        json_object_set_new(m->creating, user, json_integer(netrun_mono_ms() + backoff_ms(NULL, 3)));
        free(d);
        return;
    }
    json_t *req = json_pack("{s:s, s:b, s:[s], s:{s:s}}", "preset", "trusted_private_chat", "is_direct", 1, "invite",
                            user, "creation_content", DM_MARK, d->nonce);
    if (strcmp(m->config->matrix_encrypt_dms, "true") == 0)
        json_object_set_new(req, "initial_state",
                            json_pack("[{s:s, s:s, s:{s:s}}]", "type", "m.room.encryption", "state_key", "",
                                      "content", "algorithm", "m.megolm.v1.aes-sha2"));
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    d->m = m;
    snprintf(d->user, sizeof d->user, "%s", user);
    if (body && mx_http_request(m->http, "POST", API "/createRoom", body, SEND_TIMEOUT_MS, dm_created, d) == 0) {
        json_object_set_new(m->creating, user, json_integer(-1));
        m->sends_running++;
    } else {
        free(d);
    }
    free(body);
}

/* ---- sending ---- */

static void start_job(mx *m, send_job *j);

/* A message is delivered (or dropped for good): the outbox learns it with the next transaction. */
static void mark_sent(mx *m, int64_t id)
{
    if (core_delivered(m->core, id) != 0) m->fatal = 1;
}

static void job_remove(mx *m, send_job *j)
{
    for (send_job **p = &m->jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            break;
        }
    if (j->content) sodium_memzero(j->content, strlen(j->content));
    if (j->body) sodium_memzero(j->body, strlen(j->body));
    free(j->content);
    free(j->body);
    free(j);
}

/* A message refused for good: dropped, with an error in the log. */
static void job_drop(mx *m, send_job *j, const char *why)
{
    mlog(m, CORE_LOG_ERROR, "matrix: message %" PRId64 " to %s refused for good (%s); dropped", j->id,
         j->user[0] ? j->user : j->room, why);
    mark_sent(m, j->id);
    job_remove(m, j);
}

/* The direct chat of a private message refuses it (the bot was removed): a new one is made, and
 * the message decided afresh for it. */
static void job_new_dm(mx *m, send_job *j, const char *why)
{
    mlog(m, CORE_LOG_WARN, "matrix: the direct chat with %s refuses messages (%s); opening a new one", j->user, why);
    char key[300];
    snprintf(key, sizeof key, KEY_DM "%s", j->user);
    mx_state_forget_dm(m->st, j->user);
    if (store_put(m, key, "") != 0) m->fatal = 1;
    j->room[0] = 0;
    j->type = NULL;
    free(j->body);
    j->body = NULL;
    j->not_before = netrun_mono_ms();
}

/* Jobs waiting for room (NULL: any room) may go on at time t. */
static void wake_jobs(mx *m, const char *room, int64_t t)
{
    for (send_job *j = m->jobs; j; j = j->next)
        if (j->not_before == WAITING && (!room || strcmp(j->room, room) == 0)) j->not_before = t;
}

/* The homeserver asked the bot to slow down (429 to a send or a createRoom): no send before it
 * allows one (its limit is per account, so it holds for every room), and said once in the log.
 * Its limit is a bucket that refills at a steady rate: once it is empty, sends are allowed one
 * per refill. Each 429 tells when the next refill comes; two of them, and the sends that went
 * through between them, give the time between refills, which becomes the pace between two sends,
 * so that the bot stops knocking on a closed door. */
static void throttle(mx *m, int64_t wait, int learn)
{
    int64_t now = netrun_mono_ms(), at = now + wait, pace = wait;
    if (learn) { /* a message's 429 */
        if (m->throttled && m->token_at && m->sends_since_429 > 0) pace = (at - m->token_at) / m->sends_since_429;
        m->token_at = at;
        m->sends_since_429 = 0;
    }
    if (pace > m->pace_ms) m->pace_ms = pace; /* a createRoom's wait: at least a refill, up to one */
    if (!m->throttled) {
        mlog(m, CORE_LOG_WARN, "matrix: the homeserver is rate-limiting the bot's messages (HTTP 429): they now go "
                               "one at a time as fast as it allows, and what waits for one room is sent as one "
                               "message; an admin can lift the limit for the bot (README, \"Run on Matrix\")");
        m->throttled = 1;
        m->throttled_since = now;
        m->throttled_429s = 0;
    }
    m->throttled_429s++;
    m->throttled_last = now;
    if (at + THROTTLE_MARGIN_MS > m->send_not_before) m->send_not_before = at + THROTTLE_MARGIN_MS;
}

/* The rate limit is over once, for THROTTLE_QUIET_MS, no 429 came and no send had to wait. */
static void throttle_check(mx *m)
{
    int64_t now = netrun_mono_ms();
    int64_t last = m->throttled_last > m->throttled_held ? m->throttled_last : m->throttled_held;
    if (!m->throttled || now - last < THROTTLE_QUIET_MS) return;
    mlog(m, CORE_LOG_INFO, "matrix: the homeserver no longer rate-limits the bot (%d answers 429 over %.0f s)",
         m->throttled_429s, (double)(m->throttled_last - m->throttled_since) / 1000);
    m->throttled = 0;
    m->pace_ms = m->token_at = 0;
    m->room_refused = 0;
    wake_jobs(m, NULL, now);
}

/* Whether a request the rate limit counts (a message, or a new room) may start now: 0, or when
 * to try again (WAITING: when the one under way ends). While throttled they go one at a time,
 * none before the pause the homeserver asked for. A new room costs two turns on Synapse (the
 * createRoom, then the bot's join in it, each counted; a room made with the second refused is
 * left behind empty), so it waits one pace more, and one more after each refusal (the pace may
 * be learnt short), and messages wait behind it, or they would take every turn it waits for. */
static int64_t paced(mx *m, int room)
{
    int64_t now = netrun_mono_ms(), from = m->send_not_before;
    if (m->throttled && room) from += (1 + m->room_refused) * m->pace_ms;
    if (m->throttled && !room && m->room_turn) return WAITING;
    if (now < from) {
        m->throttled_held = now;
        return from;
    }
    return m->throttled && m->sends_running > 0 ? WAITING : 0;
}

/* Such a request ended, having used turns of the limit (0: refused; 1: a message; 2: a new
 * room, whose creator's join counts too): the next may go, at the pace. Counting both turns of
 * a new room matters: counted once, the pace learnt over the direct chats made at a table's
 * start was twice the server's, and the whole table went at half its speed. */
static void paced_done(mx *m, int turns)
{
    m->sends_running--;
    if (turns && m->throttled) {
        m->sends_since_429 += turns;
        m->send_not_before = netrun_mono_ms() + turns * m->pace_ms + THROTTLE_MARGIN_MS;
    }
    wake_jobs(m, NULL, netrun_mono_ms());
}

static int mx_throttled(void *ctx)
{
    mx *m = ctx;
    return m->throttled;
}

static void job_done(void *ctx, const mx_response *r)
{
    send_job *j = ctx;
    mx *m = j->owner;
    char buf[300];
    j->running = 0;
    json_t *a = r->status == 200 ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    int ok = json_is_string(json_object_get(a, "event_id"));
    json_decref(a);
    paced_done(m, ok ? 1 : 0);
    if (cancelled(r)) return;
    if (ok) {
        mark_sent(m, j->id);
        job_remove(m, j);
        return;
    }
    j->attempts++;
    if (r->status == 401) {
        m->relogin = 1;
        j->not_before = netrun_mono_ms();
        return;
    }
    if (r->status == 200 || retryable(r)) {
        int64_t wait = backoff_ms(r->status == 200 ? NULL : r, j->attempts);
        if (r->status == 429) throttle(m, wait, 1);
        mlog(m, r->status == 200 ? CORE_LOG_ERROR : r->status == 429 ? CORE_LOG_DEBUG : j->attempts > 1 ? CORE_LOG_WARN : CORE_LOG_INFO,
             "matrix: message %" PRId64 " not sent (%s); trying again in %.1f s",
             j->id, r->status == 200 ? "the answer has no event_id" : why(r, buf, sizeof buf), (double)wait / 1000);
        j->not_before = netrun_mono_ms() + wait;
        return;
    }
    if (j->user[0] && r->status == 403) job_new_dm(m, j, why(r, buf, sizeof buf));
    else job_drop(m, j, why(r, buf, sizeof buf));
}

/* The answer to GET /rooms/{room}/state/m.room.encryption/ (Client-Server API §"GET
 * /_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}"): 200 = encrypted, 404
 * M_NOT_FOUND = no such state, not encrypted. Anything else says nothing about it. */
static void encryption_answered(void *ctx, const mx_response *r)
{
    id_req *q = ctx;
    mx *m = q->m;
    char buf[300];
    json_t *a = r->status == 404 ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    const char *code = json_string_value(json_object_get(a, "errcode"));
    int64_t now = netrun_mono_ms(), next = now;
    if (cancelled(r)) {
        json_object_del(m->asking, q->id);
    } else if (r->status == 200) {
        remember_encrypted(m, q->id);
        mx_state_set_encryption(m->st, q->id, MX_ENC_YES);
        json_object_del(m->asking, q->id);
    } else if (r->status == 404 && code && strcmp(code, "M_NOT_FOUND") == 0) {
        mx_state_set_encryption(m->st, q->id, MX_ENC_NO);
        json_object_del(m->asking, q->id);
    } else if (r->status == 401) {
        m->relogin = 1;
        json_object_set_new(m->asking, q->id, json_integer(now));
    } else if (retryable(r) || r->status == 404) {
        next = now + backoff_ms(r, 3);
        mlog(m, CORE_LOG_WARN, "matrix: cannot learn whether %s is encrypted (%s); its messages wait", q->id,
             why(r, buf, sizeof buf));
        json_object_set_new(m->asking, q->id, json_integer(next));
    } else {
        /* the room refuses us (we are not in it): so would it refuse the messages */
        json_object_del(m->asking, q->id);
        why(r, buf, sizeof buf);
        for (send_job *j = m->jobs, *n; j; j = n) {
            n = j->next;
            if (j->running || strcmp(j->room, q->id) != 0) continue;
            if (j->user[0]) job_new_dm(m, j, buf);
            else job_drop(m, j, buf);
        }
    }
    if (!cancelled(r)) wake_jobs(m, q->id, next);
    json_decref(a);
    free(q);
}

/* Asks the homeserver whether room is encrypted (once at a time per room). */
static void ask_encryption(mx *m, const char *room)
{
    json_t *t = json_object_get(m->asking, room);
    if (t && (json_integer_value(t) < 0 || json_integer_value(t) > netrun_mono_ms())) return; /* running or waiting */
    char esc[800], path[1024];
    snprintf(path, sizeof path, API "/rooms/%s/state/m.room.encryption/", mx_http_escape(room, esc, sizeof esc));
    id_req *q = calloc(1, sizeof *q);
    if (!q) return;
    q->m = m;
    snprintf(q->id, sizeof q->id, "%s", room);
    if (mx_http_request(m->http, "GET", path, NULL, SEND_TIMEOUT_MS, encryption_answered, q) == 0)
        json_object_set_new(m->asking, room, json_integer(-1));
    else
        free(q);
}

/* The store refused what must be stored before j is sent (its wire form, or the room's group
 * session after encrypting it): j waits and is tried again every second, encrypted afresh;
 * logged once until a message is stored again. Returns 0 (decide()'s "wait"). */
static int store_refused(mx *m, send_job *j)
{
    if (!m->wire_failing)
        mlog(m, CORE_LOG_ERROR, "matrix: message %" PRId64 ": the store failed: %s; trying again every second", j->id,
             store_error(m->db));
    m->wire_failing = 1;
    j->not_before = netrun_mono_ms() + WIRE_RETRY_MS;
    return 0;
}

/* The wire form of j: what goes into its room, decided once. An encrypted room gets nothing in
 * the clear (E2EE §"Messaging Algorithms"); a room not known to be one way or the other gets
 * nothing until it is; the decision is stored before the first attempt (store first, then act).
 * Returns 1 when decided, 0 to wait, -1 when j was dropped. */
static int decide(mx *m, send_job *j)
{
    char err[300];
    int enc = mx_state_encryption(m->st, j->room);
    if (enc == MX_ENC_UNKNOWN || (enc == MX_ENC_YES && !mx_state_members_known(m->st, j->room))) {
        if (enc == MX_ENC_UNKNOWN) ask_encryption(m, j->room);
        j->not_before = WAITING; /* until the homeserver answers, or the next sync tells the members */
        return 0;
    }
    const char *type = "m.room.message";
    char *body = NULL;
    if (enc == MX_ENC_YES) {
        int n = 0;
        const char **users = mx_state_members(m->st, j->room, &n);
        int rc = mx_e2ee_encrypt(m->e2ee, j->room, users, n, "m.room.message", j->content, &body, err, sizeof err);
        free(users);
        if (rc == 0) {
            j->not_before = netrun_mono_ms() + 50; /* keys are being fetched or shared */
            return 0;
        }
        if (rc == MX_E2EE_UNSAVED) return store_refused(m, j); /* its index is never sent */
        if (rc < 0) {
            mlog(m, CORE_LOG_ERROR, "matrix: message %" PRId64 " cannot be encrypted for %s (%s); dropped", j->id, j->room,
                 err);
            mark_sent(m, j->id);
            job_remove(m, j);
            return -1;
        }
        type = "m.room.encrypted";
    } else {
        body = strdup(j->content);
    }
    json_t *w = json_pack("{s:s, s:s, s:o}", "room", j->room, "type", type, "content", json_loads(body ? body : "", 0, NULL));
    char *wire = json_dumps(w, JSON_COMPACT);
    json_decref(w);
    int stored = wire && store_outbox_wire(m->db, j->id, wire) == 0;
    if (wire) sodium_memzero(wire, strlen(wire));
    free(wire);
    if (!stored) { /* not sent until it is stored; a retry encrypts it afresh (a new message index) */
        if (body) sodium_memzero(body, strlen(body));
        free(body);
        return store_refused(m, j);
    }
    if (m->wire_failing) mlog(m, CORE_LOG_INFO, "matrix: messages are stored before they are sent again");
    m->wire_failing = 0;
    j->type = type;
    j->body = body;
    return 1;
}

static void start_job(mx *m, send_job *j)
{
    if (!j->body) {
        if (!j->room[0]) {
            const char *room = mx_state_dm_room(m->st, j->user);
            if (!room || !*room) {
                open_dm(m, j->user);
                return;
            }
            snprintf(j->room, sizeof j->room, "%s", room);
        }
        if (decide(m, j) <= 0) return;
    }
    int64_t later = paced(m, 0);
    if (later) {
        j->not_before = later;
        return;
    }
    char esc[800], path[1024];
    snprintf(path, sizeof path, API "/rooms/%s/send/%s/cr%" PRId64, mx_http_escape(j->room, esc, sizeof esc), j->type,
             j->id);
    if (mx_http_request(m->http, "PUT", path, j->body, SEND_TIMEOUT_MS, job_done, j) == 0) {
        j->running = 1;
        m->sends_running++;
        m->sends_started++;
    }
}

/* The network's pace (adapter.h): while the homeserver rate-limits the bot's sends, a message
 * costs a turn of its limit (the pace learnt between two sends), or what is left of the wait it
 * asked for when that is longer; otherwise nothing. */
static int64_t mx_pace(void *ctx, const store_msg *msg)
{
    const mx *m = ctx;
    (void)msg;
    if (!m->throttled) return 0;
    int64_t left = m->send_not_before - netrun_mono_ms();
    return left > m->pace_ms ? left : m->pace_ms;
}

static const char *mx_display_name(void *ctx, const char *room, const char *user, char *buf, size_t len)
{
    mx *m = ctx;
    return m->st ? mx_state_display_name(m->st, room, user, buf, len) : NULL;
}

static const char *mx_room_name(void *ctx, const char *room, char *buf, size_t len)
{
    mx *m = ctx;
    return m->st ? mx_state_room_name(m->st, room, buf, len) : NULL;
}

static const char *mx_resolve_user(void *ctx, const char *room, const char *text, char *buf, size_t len)
{
    mx *m = ctx;
    return m->st ? mx_state_find_user(m->st, room, text, buf, len) : NULL;
}

/* The event content of an outbox message (Client-Server API §"m.room.message", m.notice; the
 * player mentioned per §"User and room mentions"). */
static char *content_of(mx *m, const store_msg *msg)
{
    static char html[HTML_MAX];
    char name[512];
    const char *mention = msg->mention[0] ? msg->mention : NULL;
    const char *shown = mention ? mx_display_name(m, msg->room, mention, name, sizeof name) : NULL;
    if (mention && !shown) shown = mention;
    size_t n = mx_html(msg->text, mention, shown, html, sizeof html);
    json_t *c = json_pack("{s:s, s:s}", "msgtype", "m.notice", "body", msg->text);
    if (!c) return NULL;
    if (n < sizeof html) {
        json_object_set_new(c, "format", json_string("org.matrix.custom.html"));
        json_object_set_new(c, "formatted_body", json_string(html));
    }
    json_object_set_new(c, "m.mentions", mention ? json_pack("{s:[s]}", "user_ids", mention) : json_object());
    char *text = json_dumps(c, JSON_COMPACT);
    if (text && strlen(text) > CONTENT_MAX && json_object_get(c, "formatted_body")) {
        /* an event holds 64 KiB, encrypted a third more: a long message goes without its HTML */
        free(text);
        json_object_del(c, "format");
        json_object_del(c, "formatted_body");
        text = json_dumps(c, JSON_COMPACT);
    }
    json_decref(c);
    return text;
}

static void notice_done(void *ctx, const mx_response *r)
{
    (void)ctx;
    (void)r;
}

/* The core's word outside the outbox: one PUT with a txn id of its own ("crn…", never an
 * outbox id), never retried; nothing in the clear into an encrypted room, so none there. */
static void mx_notice(void *ctx, const char *room, const char *text)
{
    mx *m = ctx;
    store_msg msg = {.text = (char *)text};
    if (!m->st || mx_state_encryption(m->st, room) != MX_ENC_NO || strlen(room) >= sizeof msg.room) return;
    snprintf(msg.room, sizeof msg.room, "%s", room);
    char *content = content_of(m, &msg), esc[800], path[1024];
    snprintf(path, sizeof path, API "/rooms/%s/send/m.room.message/crn%" PRId64 "x%d", mx_http_escape(room, esc, sizeof esc),
             netrun_wall_ms(), ++m->notices);
    if (content) mx_http_request(m->http, "PUT", path, content, SEND_TIMEOUT_MS, notice_done, NULL);
    free(content);
}

/* Takes the wire form stored for a message in an earlier attempt. Returns 0, or -1 if it is not
 * one this adapter writes. */
static int job_from_wire(send_job *j, const char *wire)
{
    json_t *w = json_loads(wire, 0, NULL);
    const char *room = json_string_value(json_object_get(w, "room"));
    const char *type = json_string_value(json_object_get(w, "type"));
    json_t *content = json_object_get(w, "content");
    int rc = -1;
    if (room && strlen(room) < sizeof j->room && type && json_is_object(content)) {
        if (strcmp(type, "m.room.encrypted") == 0) j->type = "m.room.encrypted";
        else if (strcmp(type, "m.room.message") == 0) j->type = "m.room.message";
        j->body = j->type ? json_dumps(content, JSON_COMPACT) : NULL;
        if (j->body) {
            snprintf(j->room, sizeof j->room, "%s", room);
            rc = 0;
        }
    }
    json_decref(w);
    return rc;
}

static int mx_send(void *ctx, const store_msg *msg)
{
    mx *m = ctx;
    send_job *j = calloc(1, sizeof *j);
    if (!j) return ADAPTER_LATER;
    if (msg->wire && job_from_wire(j, msg->wire) != 0) {
        mlog(m, CORE_LOG_ERROR, "matrix: message %" PRId64 " has an unreadable wire form in the store; it is not sent",
             msg->id);
        free(j);
        m->fatal = 1;
        return ADAPTER_LATER;
    }
    if (!msg->wire && !(j->content = content_of(m, msg))) {
        free(j);
        return ADAPTER_LATER;
    }
    j->owner = m;
    j->id = msg->id;
    if (msg->user[0]) snprintf(j->user, sizeof j->user, "%s", msg->user);
    else if (!msg->wire) snprintf(j->room, sizeof j->room, "%s", msg->room);
    send_job **tail = &m->jobs;
    while (*tail) tail = &(*tail)->next;
    *tail = j;
    start_job(m, j);
    return ADAPTER_QUEUED;
}

/* ---- sync ---- */

static void join_or_leave(mx *m, const char *room, int join);

/* A bot admin's "!admin leave" (adapter.h). */
static int mx_leave(void *ctx, const char *room)
{
    join_or_leave(ctx, room, 0);
    return 0;
}

static void joined(void *ctx, const mx_response *r)
{
    id_req *q = ctx;
    char buf[300];
    if (r->status != 200 && !cancelled(r))
        mlog(q->m, CORE_LOG_WARN, "matrix: cannot join or leave %s: %s", q->id, why(r, buf, sizeof buf));
    json_object_del(q->m->joining, q->id);
    free(q);
}

static void join_or_leave(mx *m, const char *room, int join)
{
    if (json_object_get(m->joining, room)) return;
    char esc[800], path[1024];
    id_req *copy = calloc(1, sizeof *copy);
    if (!copy) return;
    copy->m = m;
    snprintf(copy->id, sizeof copy->id, "%s", room);
    if (join) snprintf(path, sizeof path, API "/join/%s", mx_http_escape(room, esc, sizeof esc));
    else snprintf(path, sizeof path, API "/rooms/%s/leave", mx_http_escape(room, esc, sizeof esc));
    if (mx_http_request(m->http, "POST", path, "{}", SEND_TIMEOUT_MS, joined, copy) == 0) {
        json_object_set_new(m->joining, room, json_true());
        mlog(m, CORE_LOG_INFO, "matrix: %s %s", join ? "joining" : "leaving", room);
    } else {
        free(copy);
    }
}

/* A sync failed (no answer, an error, an unreadable answer): the same sync again after a pause. */
static void sync_failed(mx *m, const mx_response *r, const char *err)
{
    char buf[300];
    m->sync_running = 0;
    m->sync_errors++;
    int64_t wait = backoff_ms(r, m->sync_errors);
    /* an unreadable answer is the server's fault: an error; a lost connection may just happen once */
    mlog(m, err ? CORE_LOG_ERROR : m->sync_errors > 1 ? CORE_LOG_WARN : CORE_LOG_INFO,
         "matrix: sync failed (%s); trying again in %.1f s", err ? err : why(r, buf, sizeof buf), (double)wait / 1000);
    if (r && r->status != 0 && r->status < 500 && r->status != 429)
        mlog(m, CORE_LOG_ERROR, "matrix: the homeserver refuses to sync: %s", why(r, buf, sizeof buf));
    m->sync_not_before = netrun_mono_ms() + wait;
}

/* One sync answer (with the events its gaps skipped) becomes one batch. */
static void handle_answer(mx *m, const char *body, size_t len, const char *gaps, int64_t arrived_us)
{
    char err[512];
    mx_sync_out out;
    if (mx_sync_read(m->st, body, len, gaps, m->first, &out, err, sizeof err) != 0) {
        sync_failed(m, NULL, err);
        return;
    }
    m->sync_running = 0;
    m->sends_at_arrival = m->sends_started;
    if (core_batch(m->core, NET, out.ev, out.nev, out.next_batch) != 0) {
        /* the store fails: no sync until it works, then this one again from the same since */
        mlog(m, CORE_LOG_DEBUG, "matrix: a sync answer waits for the store to work again");
        mx_sync_done(&out);
        return;
    }
    snprintf(m->since, sizeof m->since, "%s", out.next_batch);
    for (int i = 0; i < out.njoin; i++) join_or_leave(m, out.join[i], 1);
    for (int i = 0; i < out.ndecline; i++) join_or_leave(m, out.decline[i], 0);
    if (out.direct_changed) {
        /* chats learnt from is_direct invites: keep them across restarts */
        for (int i = 0; i < out.njoin; i++) {
            const char *u = mx_state_dm_user(m->st, out.join[i]);
            if (u) set_dm(m, u, out.join[i]);
        }
        m->direct_dirty = 1;
    }
    if (out.limited)
        mlog(m, CORE_LOG_WARN, "matrix: %d room(s) had more new events than one sync gives; older ones were skipped",
             out.limited);
    if (m->first) mlog(m, CORE_LOG_INFO, "matrix: in %d room(s); listening", mx_state_room_count(m->st));
    m->syncs++;
    m->events += out.events_seen;
    if (out.nev) m->sync_arrived_us = arrived_us;
    m->first = 0;
    m->full_state = 0;
    m->synced = 1;
    m->sync_errors = 0;
    m->sync_not_before = 0;
    wake_jobs(m, NULL, netrun_mono_ms()); /* rooms whose members this answer may have brought */
    mx_sync_done(&out);
}

/* ---- gaps: a limited timeline skipped events; /messages fetches them (Client-Server API
 * §"Syncing": "the client can fill in the gap using GET /rooms/<room_id>/messages") ---- */

#define GAP_PAGES 20

typedef struct {
    mx *m;
    char room[256], to[1100];
    int pages;
} gap_req;

static void gap_request(mx *m, gap_req *g, const char *from);

static void gap_finish(mx *m)
{
    if (--m->gap_pending > 0) return;
    if (m->gap_failed) {
        mx_response r = {.status = 0, .error = "fetching the skipped events failed", .body = "", .retry_after_ms = -1};
        sync_failed(m, &r, NULL);
    } else {
        char *gaps = json_dumps(m->gaps, JSON_COMPACT);
        handle_answer(m, m->gap_body, m->gap_len, gaps, netrun_mono_us());
        free(gaps);
    }
    free(m->gap_body);
    m->gap_body = NULL;
    json_decref(m->gaps);
    m->gaps = NULL;
}

static void gap_done(void *ctx, const mx_response *r)
{
    gap_req *g = ctx;
    mx *m = g->m;
    char buf[300];
    json_t *a = r->status == 200 ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    json_t *chunk = json_object_get(a, "chunk");
    if (!json_is_array(chunk)) {
        if (!(cancelled(r)))
            mlog(m, CORE_LOG_WARN, "matrix: cannot fetch the skipped events of %s: %s", g->room,
                 r->status == 200 ? "no chunk in the answer" : why(r, buf, sizeof buf));
        m->gap_failed = 1;
        json_decref(a);
        free(g);
        gap_finish(m);
        return;
    }
    json_t *have = json_object_get(m->gaps, g->room);
    if (!have) {
        have = json_array();
        json_object_set_new(m->gaps, g->room, have);
    }
    json_array_extend(have, chunk);
    const char *end = json_string_value(json_object_get(a, "end"));
    if (end && json_array_size(chunk) > 0 && ++g->pages < GAP_PAGES && !netrun_stopping()) {
        gap_request(m, g, end);
    } else {
        if (end && json_array_size(chunk) > 0)
            mlog(m, CORE_LOG_WARN, "matrix: %s: more than %d skipped events; the oldest are not read", g->room,
                 GAP_PAGES * 100);
        free(g);
        gap_finish(m);
    }
    json_decref(a);
}

static void gap_request(mx *m, gap_req *g, const char *from)
{
    char esc[800], fesc[2400], tesc[2400], path[6000];
    snprintf(path, sizeof path, API "/rooms/%s/messages?dir=f&limit=100&from=%s&to=%s",
             mx_http_escape(g->room, esc, sizeof esc), mx_http_escape(from, fesc, sizeof fesc),
             mx_http_escape(g->to, tesc, sizeof tesc));
    if (mx_http_request(m->http, "GET", path, NULL, SEND_TIMEOUT_MS, gap_done, g) != 0) {
        m->gap_failed = 1;
        free(g);
        gap_finish(m);
    }
}

/* Starts fetching the gaps of an answer; the answer waits (the sync counts as running). */
static void fill_gaps(mx *m, const mx_response *r, const char *list_json)
{
    json_t *list = json_loads(list_json, 0, NULL);
    m->gap_body = malloc(r->len + 1);
    m->gaps = json_object();
    if (!list || !m->gap_body || !m->gaps) abort();
    memcpy(m->gap_body, r->body, r->len);
    m->gap_body[r->len] = 0;
    m->gap_len = r->len;
    m->gap_failed = 0;
    m->gap_pending = (int)json_array_size(list) + 1; /* +1: held until every request is made */
    m->sync_running = 1;
    size_t i;
    json_t *pair;
    json_array_foreach(list, i, pair) {
        gap_req *g = calloc(1, sizeof *g);
        if (!g) abort();
        g->m = m;
        snprintf(g->room, sizeof g->room, "%s", json_string_value(json_array_get(pair, 0)));
        snprintf(g->to, sizeof g->to, "%s", json_string_value(json_array_get(pair, 1)));
        gap_request(m, g, m->since);
    }
    mlog(m, CORE_LOG_INFO, "matrix: fetching the events skipped in %zu room(s)", json_array_size(list));
    json_decref(list);
    gap_finish(m);
}

static void sync_done(void *ctx, const mx_response *r)
{
    mx *m = ctx;
    int64_t arrived = netrun_mono_us();
    m->sync_running = 0;
    if (cancelled(r)) return;
    if (r->status == 401) {
        m->relogin = 1;
        return;
    }
    if (r->status != 200) {
        sync_failed(m, r, NULL);
        return;
    }
    int gaps = 0;
    char *list = m->first || !m->since[0] ? NULL : mx_sync_gaps(r->body, r->len, &gaps);
    if (gaps > 0) fill_gaps(m, r, list);
    else handle_answer(m, r->body, r->len, NULL, arrived);
    free(list);
}

static void start_sync(mx *m)
{
    char path[2048], esc[1200], fesc[300];
    int full = m->full_state || dm_unsure(m);
    int timeout = m->first || full || m->sync_errors ? 0 : m->config->matrix_sync_timeout * 1000;
    int n = snprintf(path, sizeof path, API "/sync?timeout=%d", timeout);
    if (m->filter[0]) n += snprintf(path + n, sizeof path - (size_t)n, "&filter=%s", mx_http_escape(m->filter, fesc, sizeof fesc));
    if (m->since[0]) n += snprintf(path + n, sizeof path - (size_t)n, "&since=%s", mx_http_escape(m->since, esc, sizeof esc));
    if (full && m->since[0]) snprintf(path + n, sizeof path - (size_t)n, "&full_state=true");
    if (mx_http_request(m->http, "GET", path, NULL, (long)timeout + 30000L, sync_done, m) == 0) {
        m->sync_running = 1;
        m->syncs_started++;
    }
}

/* ---- the loop ---- */

typedef struct {
    mx *m;
    int id;
    const char *what;
} e2ee_req;

/* Whether an answer is the first step of user-interactive authentication (Client-Server API
 * §"User-Interactive Authentication API": 401 with the flows to follow and no errcode), which a
 * request that needs the password is expected to get first. */
static int asks_for_auth(const mx_response *r)
{
    if (r->status != 401) return 0;
    json_t *a = json_loadb(r->body, r->len, 0, NULL);
    int uia = json_is_array(json_object_get(a, "flows")) && !json_object_get(a, "errcode");
    json_decref(a);
    return uia;
}

static void e2ee_done(void *ctx, const mx_response *r)
{
    e2ee_req *q = ctx;
    char buf[300];
    if (!cancelled(r)) {
        if (asks_for_auth(r))
            mlog(q->m, CORE_LOG_INFO, "matrix: %s: the homeserver asks for the account's password (interactive "
                                      "authentication); sending it", q->what);
        else if (r->status != 200)
            mlog(q->m, CORE_LOG_WARN, "matrix: %s failed: %s", q->what, why(r, buf, sizeof buf));
        mx_e2ee_answer(q->m->e2ee, q->id, r->status, r->body, r->len);
    }
    free(q);
}

/* The requests the encryption wants made (keys, devices, room keys). */
static void e2ee_requests(mx *m)
{
    mx_e2ee_request r;
    while (m->e2ee && mx_e2ee_next_request(m->e2ee, &r)) {
        e2ee_req *q = calloc(1, sizeof *q);
        if (!q) abort();
        q->m = m;
        q->id = r.id;
        q->what = r.what;
        mlog(m, CORE_LOG_DEBUG, "matrix: %s", r.what);
        if (mx_http_request(m->http, r.method, r.path, r.body, SEND_TIMEOUT_MS, e2ee_done, q) != 0) {
            mx_e2ee_answer(m->e2ee, r.id, 0, "", 0);
            free(q);
        }
        free(r.body);
    }
    const char *problem = m->e2ee ? mx_e2ee_error(m->e2ee) : NULL;
    if (problem) {
        mlog(m, CORE_LOG_ERROR, "matrix: %s", problem);
        m->fatal = 2; /* restarting cannot mend it (the service unit does not restart on 2) */
    }
}

static void start_due(mx *m)
{
    int64_t now = netrun_mono_ms();
    e2ee_requests(m);
    for (send_job *j = m->jobs, *next; j; j = next) {
        next = j->next; /* start_job may remove j */
        if (!j->running && j->not_before <= now) start_job(m, j);
    }
    save_direct(m);
    e2ee_requests(m); /* what the sends just asked for */
}

static int64_t next_due(mx *m)
{
    int64_t t = INT64_MAX;
    for (send_job *j = m->jobs; j; j = j->next) /* those without a room wait for their direct chat */
        if (!j->running && j->room[0] && j->not_before < t) t = j->not_before;
    const char *u;
    json_t *v;
    json_object_foreach(m->creating, u, v) {
        if (json_integer_value(v) >= 0 && json_integer_value(v) < t) t = json_integer_value(v);
    }
    if (!m->sync_running && !core_suspended(m->core) && m->sync_not_before < t) t = m->sync_not_before;
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(mx *m)
{
    int n = m->nlat < LAT_MAX ? (int)m->nlat : LAT_MAX;
    if (n == 0) {
        mlog(m, CORE_LOG_INFO, "matrix: %" PRId64 " sync answers, %" PRId64 " events", m->syncs, m->events);
        return;
    }
    qsort(m->lat, (size_t)n, sizeof m->lat[0], cmp_double);
    mlog(m, CORE_LOG_INFO,
         "matrix: %" PRId64 " sync answers, %" PRId64 " events; sync answer to first send: p50 %.3f ms, p99 %.3f ms "
         "(%d samples)",
         m->syncs, m->events, m->lat[n / 2], m->lat[(n * 99) / 100], n);
}

static int relogin(mx *m)
{
    m->relogin = 0;
    if (m->config->matrix_access_token[0] || !m->config->matrix_password[0]) {
        mlog(m, CORE_LOG_ERROR, "matrix: the homeserver no longer accepts the bot's access token; give a new one");
        return -1;
    }
    mlog(m, CORE_LOG_WARN, "matrix: the access token was refused; logging in again");
    return password_login(m);
}

/* After the transfers moved: the replies to a sync answer just handled leave at once (timed
 * from the answer's arrival: the bot's own latency). */
static void after_work(mx *m)
{
    while (m->sync_arrived_us) {
        {
            int64_t arrived = m->sync_arrived_us;
            m->sync_arrived_us = 0;
            core_flush(m->core);
            mx_http_push(m->http); /* the new requests leave now; what finished waits a moment */
            if (m->sends_started > m->sends_at_arrival)
                m->lat[m->nlat++ % LAT_MAX] = (double)(netrun_mono_us() - arrived) / 1000.0;
        }
    }
}

static int loop(mx *m)
{
    while (!netrun_stopping() && !m->fatal) {
        if (m->relogin && relogin(m) != 0) return 1;
        if (!m->sync_running && !core_suspended(m->core) && netrun_mono_ms() >= m->sync_not_before) start_sync(m);
        throttle_check(m);
        start_due(m);
        /* a failing store suspends the core, which tries it again itself (before the first sync
         * answer too: no sync starts while it fails) */
        int ticks = m->synced || core_suspended(m->core);
        if (ticks) core_tick(m->core);
        core_flush(m->core);
        mx_http_work(m->http);
        after_work(m);
        int64_t now = netrun_mono_ms(), due = next_due(m), deadline = ticks ? core_next_deadline(m->core) : INT64_MAX;
        int64_t wait = 1000;
        if (due != INT64_MAX && due - now < wait) wait = due - now;
        if (deadline != INT64_MAX && deadline - netrun_wall_ms() < wait) wait = deadline - netrun_wall_ms();
        int fds[2] = {netrun_stop_fd(), core_wake_fd(m->core)}; /* the core's wake-ups only once it ticks */
        mx_http_wait(m->http, fds, ticks ? 2 : 1, wait < 0 ? 0 : (int)wait);
        mx_http_work(m->http);
        after_work(m);
    }
    return m->fatal;
}

int matrix_run(const cfg *config, const matrix_options *o)
{
    mx m = {.config = config, .o = o};
    char err[512];
    int rc = 1;
    if (strncmp(config->matrix_homeserver, "https://", 8) != 0 && strncmp(config->matrix_homeserver, "http://", 7) != 0) {
        mlog(&m, CORE_LOG_ERROR, "[matrix] homeserver: must be an address like https://matrix.example.org");
        return 2;
    }
    if (config->matrix_user[0] != '@' || !strchr(config->matrix_user, ':')) {
        mlog(&m, CORE_LOG_ERROR, "[matrix] user: must be the bot's full user id, like @cardroom:example.org");
        return 2;
    }
    if (netrun_stop_init() != 0) return 1;
    const char *path = o->db ? o->db : config->database;
    int held = store_open_exclusive(&m.db, path, err, sizeof err);
    if (held != 0) {
        mlog(&m, CORE_LOG_ERROR, "%s", err);
        rc = held > 0 ? 3 : 1;
        goto done;
    }
    if (strcmp(path, ":memory:") != 0) chmod(path, 0600); /* it holds the bot's access token */
    m.http = mx_http_new(config->matrix_homeserver, err, sizeof err);
    m.creating = json_object();
    m.unsure = json_object();
    m.joining = json_object();
    m.asking = json_object();
    if (!m.http || !m.creating || !m.unsure || !m.joining || !m.asking) {
        mlog(&m, CORE_LOG_ERROR, "%s", m.http ? "out of memory" : err);
        goto done;
    }
    if (start_up(&m) != 0) {
        rc = netrun_stopping() ? 0 : 1;
        goto done;
    }
    core_options co = {.config = config, .db = m.db, .log = core_log, .log_ctx = &m, .fixed_seed = o->fixed_seed,
                       .seed = o->seed};
    m.core = core_new(&co, err, sizeof err);
    adapter a = {.net = NET, .ctx = &m, .send = mx_send, .display_name = mx_display_name, .room_name = mx_room_name,
                 .resolve_user = mx_resolve_user, .private_how = "in your direct chat with me",
                 .throttled = mx_throttled, .notify_off = 1, .pace_ms = mx_pace, .notice = mx_notice,
                 .leave = mx_leave};
    if (!m.core || core_add_adapter(m.core, &a) != 0) {
        mlog(&m, CORE_LOG_ERROR, "%s", m.core ? "cannot add the Matrix adapter" : err);
        goto done;
    }
    if (core_restore(m.core) < 0) goto done;
    rc = loop(&m);
    if (rc == 0) after_work(&m);
    report(&m);
done:
    mx_http_free(m.http); /* cancels what is running; unsent messages stay in the outbox */
    while (m.jobs) job_remove(&m, m.jobs);
    core_free(m.core);
    mx_state_free(m.st);
    mx_e2ee_free(m.e2ee);
    json_decref(m.creating);
    json_decref(m.unsure);
    json_decref(m.joining);
    json_decref(m.asking);
    json_decref(m.gaps);
    free(m.gap_body);
    store_close(m.db);
    sodium_memzero(m.token, sizeof m.token);
    sodium_memzero(m.skey, sizeof m.skey);
    netrun_stop_close();
    return rc;
}
