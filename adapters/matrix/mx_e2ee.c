/* mx_e2ee.c — end-to-end encryption for the Matrix adapter (see mx_e2ee.h).
 *
 * Spec references are to the Client-Server API v1.11, "End-to-End Encryption" (E2EE) and
 * "Send-to-Device messaging". */
#include "mx_e2ee.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mx_crypto.h"
#include "mx_http.h"
#include "mx_megolm.h"
#include "mx_olm.h"

#define OLM_ALG "m.olm.v1.curve25519-aes-sha2"
#define MEGOLM_ALG "m.megolm.v1.aes-sha2"
#define OTK_TARGET 50                       /* keep at least this many one-time keys on the server */
#define ROTATE_MESSAGES 100                 /* E2EE §"m.room.encryption": rotation_period_msgs */
#define ROTATE_MS (7LL * 24 * 3600 * 1000)  /* rotation_period_ms: a week */
#define API "/_matrix/client/v3"
#define STORE_RETRY_MS 1000                 /* what the store refused is tried again after this */

enum { REQ_NONE, REQ_UPLOAD, REQ_QUERY, REQ_CLAIM, REQ_SHARE, REQ_XSIGN, REQ_SIGS, REQ_KINDS };

typedef struct {
    char curve[44];     /* the other device's identity key */
    char id[44];
    mx_olm_session *s;
} olm_sess;

typedef struct {
    char key[800];      /* room|sender_key|session_id */
    char sender[256];   /* the user it came from over Olm */
    mx_megolm_in *s;
} group_in;

/* The room's outbound group session. */
typedef struct {
    char room[256];
    mx_megolm_out *s;
    int64_t created;
    int count;
    json_t *shared;     /* {user: {device: 1}} it was shared with (or is being) */
    json_t *sharing;    /* the to-device request being made: {user: {device: 1}} */
    int stale;          /* members changed: a new session for the next message */
} group_out;

struct mx_e2ee {
    store *db;
    char user[256], device[256];
    uint8_t key[32];
    mx_olm_account *acc;
    char curve[44], ed[44];
    int uploaded;           /* device keys on the server */
    int otk_count;          /* one-time keys on the server (from /sync), -1 unknown */
    int need_fallback;
    int unsaved;            /* the last save of a ratchet failed: said once until one works */
    char error[1024];
    olm_sess *olm;
    int nolm, colm;
    group_in *in;
    int nin, cin;
    group_out *out;
    int nout, cout;
    json_t *devices;        /* {user: {device: {"curve", "ed"}}} verified devices */
    json_t *tracked;        /* {user: true (outdated) / false} */
    json_t *claim;          /* {user: {device: true}} devices to claim a key for */
    json_t *unreachable;    /* {user: {device: true}} devices without keys to claim */
    int inflight[REQ_KINDS]; /* request kind → its id (0 none) */
    int64_t retry_at[REQ_KINDS]; /* after a failure: not before then (ms) */
    int failures[REQ_KINDS];
    /* cross-signing (E2EE §"Cross-signing"): master, self-signing, user-signing seeds */
    uint8_t xseed[3][32];
    char xpub[3][44];
    int xstate;             /* 0 not uploaded, 1 keys uploaded, 2 our device signed too */
    char *password;         /* for the interactive auth of the upload (NULL: no cross-signing) */
    char uia_session[256];
    json_t *query_users;    /* the users of the query in flight */
    json_t *claim_users;    /* the devices of the claim in flight */
    char share_room[256];   /* the room whose key is being shared */
    int next_id;
    mx_e2ee_log_fn log;
    void *log_ctx;
};

static void elog(mx_e2ee *e, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void elog(mx_e2ee *e, int level, const char *fmt, ...)
{
    if (!e->log) return;
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    e->log(e->log_ctx, level, line);
}

void mx_e2ee_set_log(mx_e2ee *e, mx_e2ee_log_fn fn, void *ctx)
{
    e->log = fn;
    e->log_ctx = ctx;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_is_object(o) ? json_object_get(o, k) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static json_t *jobj(json_t *o, const char *k)
{
    json_t *v = json_is_object(o) ? json_object_get(o, k) : NULL;
    return json_is_object(v) ? v : NULL;
}

static void *grow(void *p, int *cap, int need, size_t size)
{
    if (need <= *cap) return p;
    int c = *cap ? 2 * *cap : 8;
    while (c < need) c *= 2;
    void *q = realloc(p, (size_t)c * size);
    if (!q) abort();
    *cap = c;
    return q;
}

/* Sets {a: {b: v}}. */
static void set2(json_t *o, const char *a, const char *b, json_t *v)
{
    json_t *in = json_object_get(o, a);
    if (!json_is_object(in)) {
        in = json_object();
        json_object_set_new(o, a, in);
    }
    json_object_set_new(in, b, v);
}

static int has2(json_t *o, const char *a, const char *b) { return json_object_get(jobj(o, a), b) != NULL; }

/* ---- persistence ---- */

static int save_account(mx_e2ee *e)
{
    char *p = mx_olm_account_pickle(e->acc, e->key);
    int rc = p ? store_kv_put(e->db, "e2ee", "account", p) : -1;
    if (p) mx_wipe(p, strlen(p));
    free(p);
    if (rc) elog(e, 0, "e2ee: cannot save the account: %s", store_error(e->db));
    return rc;
}

/* After a ratchet's save (what holds back a message): says once that saves fail, and once that
 * they work again, however many messages wait meanwhile. rc: the save's result. */
static int saved(mx_e2ee *e, int rc, const char *what)
{
    if (rc && !e->unsaved) elog(e, 0, "e2ee: cannot save %s; messages wait until the store takes it", what);
    if (!rc && e->unsaved) elog(e, 2, "e2ee: the store takes the keys' state again");
    e->unsaved = rc != 0;
    return rc;
}

/* Returns 0, or -1 when the store refused it (logged). */
static int save_olm(mx_e2ee *e, olm_sess *o)
{
    char k[100], *p = mx_olm_session_pickle(o->s, e->key);
    snprintf(k, sizeof k, "%s|%s", o->curve, o->id);
    int rc = saved(e, !p || store_kv_put(e->db, "olm", k, p) != 0 ? -1 : 0, "an Olm session");
    if (p) mx_wipe(p, strlen(p));
    free(p);
    return rc;
}

static void save_in(mx_e2ee *e, group_in *g)
{
    char *p = mx_megolm_in_pickle(g->s, e->key);
    json_t *v = json_pack("{s:s, s:s}", "pickle", p ? p : "", "sender", g->sender);
    char *text = json_dumps(v, JSON_COMPACT);
    if (!p || !text || store_kv_put(e->db, "megolm.in", g->key, text) != 0)
        elog(e, 0, "e2ee: cannot save a room key");
    json_decref(v);
    free(text);
    free(p);
}

/* Returns 0, or -1 when the store refused it (logged). */
static int save_out(mx_e2ee *e, group_out *g)
{
    char *p = mx_megolm_out_pickle(g->s, e->key);
    json_t *v = json_pack("{s:s, s:I, s:i, s:O, s:b}", "pickle", p ? p : "", "created", (json_int_t)g->created, "count",
                          g->count, "shared", g->shared, "stale", g->stale);
    char *text = json_dumps(v, JSON_COMPACT);
    int rc = saved(e, !p || !text || store_kv_put(e->db, "megolm.out", g->room, text) != 0 ? -1 : 0,
                   "a room's group session");
    json_decref(v);
    if (text) mx_wipe(text, strlen(text));
    free(text);
    if (p) mx_wipe(p, strlen(p));
    free(p);
    return rc;
}

static void save_devices(mx_e2ee *e, const char *user)
{
    char *text = json_dumps(json_object_get(e->devices, user), JSON_COMPACT);
    if (text) store_kv_put(e->db, "devices", user, text);
    free(text);
}

static int load_olm(void *ctx, const char *key, const char *value)
{
    mx_e2ee *e = ctx;
    const char *bar = strchr(key, '|');
    mx_olm_session *s = bar ? mx_olm_session_unpickle(value, e->key) : NULL;
    if (!s) return 0;
    e->olm = grow(e->olm, &e->colm, e->nolm + 1, sizeof *e->olm);
    olm_sess *o = &e->olm[e->nolm++];
    snprintf(o->curve, sizeof o->curve, "%.*s", (int)(bar - key), key);
    mx_olm_session_id(s, o->id);
    o->s = s;
    return 0;
}

static int load_in(void *ctx, const char *key, const char *value)
{
    mx_e2ee *e = ctx;
    json_t *v = json_loads(value, 0, NULL);
    const char *p = jstr(v, "pickle"), *sender = jstr(v, "sender");
    mx_megolm_in *s = p ? mx_megolm_in_unpickle(p, e->key) : NULL;
    if (s && sender) {
        e->in = grow(e->in, &e->cin, e->nin + 1, sizeof *e->in);
        group_in *g = &e->in[e->nin++];
        snprintf(g->key, sizeof g->key, "%s", key);
        snprintf(g->sender, sizeof g->sender, "%s", sender);
        g->s = s;
    } else {
        mx_megolm_in_free(s);
    }
    json_decref(v);
    return 0;
}

static int load_out(void *ctx, const char *room, const char *value)
{
    mx_e2ee *e = ctx;
    json_t *v = json_loads(value, 0, NULL);
    const char *p = jstr(v, "pickle");
    mx_megolm_out *s = p ? mx_megolm_out_unpickle(p, e->key) : NULL;
    if (s) {
        e->out = grow(e->out, &e->cout, e->nout + 1, sizeof *e->out);
        group_out *g = &e->out[e->nout++];
        memset(g, 0, sizeof *g);
        snprintf(g->room, sizeof g->room, "%s", room);
        g->s = s;
        g->created = json_integer_value(json_object_get(v, "created"));
        g->count = (int)json_integer_value(json_object_get(v, "count"));
        g->shared = jobj(v, "shared") ? json_incref(jobj(v, "shared")) : json_object();
        g->stale = json_is_true(json_object_get(v, "stale"));
    }
    json_decref(v);
    return 0;
}

static int load_outdated(void *ctx, const char *user, const char *value)
{
    mx_e2ee *e = ctx;
    (void)value;
    json_object_set_new(e->tracked, user, json_true());
    return 0;
}

static int load_devices(void *ctx, const char *user, const char *value)
{
    mx_e2ee *e = ctx;
    json_t *v = json_loads(value, 0, NULL);
    if (json_is_object(v)) {
        json_object_set_new(e->devices, user, v);
        json_object_set_new(e->tracked, user, json_false());
    } else {
        json_decref(v);
    }
    return 0;
}

static int load_cross(mx_e2ee *e);

/* ---- life ---- */

mx_e2ee *mx_e2ee_new(store *db, const char *user, const char *device, const uint8_t store_key[32], char *err,
                     size_t errlen)
{
    mx_e2ee *e = calloc(1, sizeof *e);
    if (!e || mx_crypto_init() != 0) {
        free(e);
        snprintf(err, errlen, "cannot start the encryption");
        return NULL;
    }
    e->db = db;
    snprintf(e->user, sizeof e->user, "%s", user);
    snprintf(e->device, sizeof e->device, "%s", device);
    memcpy(e->key, store_key, 32);
    e->otk_count = -1;
    e->devices = json_object();
    e->tracked = json_object();
    e->claim = json_object();
    e->unreachable = json_object();
    char *pickle = NULL, *dev = NULL, *up = NULL;
    int rc = store_kv_get(db, "e2ee", "account", &pickle);
    store_kv_get(db, "e2ee", "device", &dev);
    if (rc == 0) {
        e->acc = mx_olm_account_unpickle(pickle, e->key);
        if (!e->acc) {
            snprintf(err, errlen, "the encryption keys in the store cannot be read: wrong CARDROOM_MATRIX_STORE_KEY, "
                                  "or the store is damaged");
            goto fail;
        }
        if (dev && strcmp(dev, device) != 0) {
            snprintf(err, errlen, "the encryption keys in the store belong to device %s, not %s", dev, device);
            goto fail;
        }
    } else if (rc == 1) {
        e->acc = mx_olm_account_new();
        if (!e->acc || save_account(e) != 0 || store_kv_put(db, "e2ee", "device", device) != 0) {
            snprintf(err, errlen, "cannot make or store the encryption keys");
            goto fail;
        }
        e->need_fallback = 1;
    } else {
        snprintf(err, errlen, "store: %s", store_error(db));
        goto fail;
    }
    store_kv_get(db, "e2ee", "uploaded", &up);
    e->uploaded = up && strcmp(up, "1") == 0;
    mx_olm_account_identity(e->acc, e->curve, e->ed);
    if (load_cross(e) != 0) {
        snprintf(err, errlen, "the cross-signing keys in the store cannot be read or made");
        goto fail;
    }
    if (store_kv_each(db, "olm", load_olm, e) != 0 || store_kv_each(db, "megolm.in", load_in, e) != 0 ||
        store_kv_each(db, "megolm.out", load_out, e) != 0 || store_kv_each(db, "devices", load_devices, e) != 0 ||
        store_kv_each(db, "outdated", load_outdated, e) != 0) {
        snprintf(err, errlen, "store: %s", store_error(db));
        goto fail;
    }
    if (pickle) mx_wipe(pickle, strlen(pickle));
    free(pickle);
    free(dev);
    free(up);
    return e;
fail:
    if (pickle) mx_wipe(pickle, strlen(pickle));
    free(pickle);
    free(dev);
    free(up);
    mx_e2ee_free(e);
    return NULL;
}

void mx_e2ee_free(mx_e2ee *e)
{
    if (!e) return;
    mx_olm_account_free(e->acc);
    for (int i = 0; i < e->nolm; i++) mx_olm_session_free(e->olm[i].s);
    for (int i = 0; i < e->nin; i++) mx_megolm_in_free(e->in[i].s);
    for (int i = 0; i < e->nout; i++) {
        mx_megolm_out_free(e->out[i].s);
        json_decref(e->out[i].shared);
        json_decref(e->out[i].sharing);
    }
    free(e->olm);
    free(e->in);
    free(e->out);
    json_decref(e->devices);
    json_decref(e->tracked);
    json_decref(e->claim);
    json_decref(e->unreachable);
    json_decref(e->query_users);
    json_decref(e->claim_users);
    mx_wipe(e->key, sizeof e->key);
    mx_wipe(e->xseed, sizeof e->xseed);
    mx_e2ee_set_password(e, NULL);
    free(e);
}

void mx_e2ee_identity(const mx_e2ee *e, char curve25519[44], char ed25519[44])
{
    memcpy(curve25519, e->curve, 44);
    memcpy(ed25519, e->ed, 44);
}

const char *mx_e2ee_error(const mx_e2ee *e) { return e->error[0] ? e->error : NULL; }

void mx_e2ee_track(mx_e2ee *e, const char *user)
{
    if (!json_object_get(e->tracked, user)) json_object_set_new(e->tracked, user, json_true());
}

/* ---- signing (E2EE §"Signing JSON") ---- */

/* What a signature of obj covers: its canonical JSON without signatures and unsigned
 * (E2EE §"Signing JSON"); malloc'd. */
static char *signing_text(json_t *obj)
{
    json_t *copy = json_deep_copy(obj);
    json_object_del(copy, "signatures");
    json_object_del(copy, "unsigned");
    char *c = mx_canonical_json(copy);
    json_decref(copy);
    return c;
}

/* Adds signatures[user]["ed25519:DEVICE"] to obj. */
static void sign_json(mx_e2ee *e, json_t *obj)
{
    char *c = signing_text(obj), sig[87], kid[300];
    mx_olm_account_sign(e->acc, (const uint8_t *)c, strlen(c), sig);
    snprintf(kid, sizeof kid, "ed25519:%s", e->device);
    json_t *sigs = jobj(obj, "signatures");
    if (!sigs) json_object_set_new(obj, "signatures", sigs = json_object());
    set2(sigs, e->user, kid, json_string(sig));
    free(c);
}

/* Whether obj carries a valid signature by user's key "ed25519:KEYID" = ed (base64). */
static int signed_by(json_t *obj, const char *user, const char *key_id, const char *ed)
{
    uint8_t pub[32], sig[64];
    const char *s = jstr(jobj(jobj(obj, "signatures"), user), key_id);
    if (!s || !ed || mx_b64_decode(ed, strlen(ed), pub, sizeof pub) != 32 ||
        mx_b64_decode(s, strlen(s), sig, sizeof sig) != 64)
        return 0;
    char *c = signing_text(obj);
    int ok = c && mx_ed25519_verify(pub, (const uint8_t *)c, strlen(c), sig);
    free(c);
    return ok;
}

/* ---- requests ---- */

static int start_req(mx_e2ee *e, int kind, mx_e2ee_request *r, const char *method, const char *path, json_t *body,
                     const char *what)
{
    r->id = ++e->next_id;
    r->method = method;
    snprintf(r->path, sizeof r->path, "%s", path);
    r->body = json_dumps(body, JSON_COMPACT);
    r->what = what;
    json_decref(body);
    e->inflight[kind] = r->id;
    return 1;
}

/* The device's keys as uploaded, without signatures. */
static json_t *device_keys(mx_e2ee *e)
{
    char kid[300];
    json_t *dk = json_pack("{s:s, s:s, s:[s, s], s:{}}", "user_id", e->user, "device_id", e->device, "algorithms", OLM_ALG,
                           MEGOLM_ALG, "keys");
    snprintf(kid, sizeof kid, "curve25519:%s", e->device);
    json_object_set_new(json_object_get(dk, "keys"), kid, json_string(e->curve));
    snprintf(kid, sizeof kid, "ed25519:%s", e->device);
    json_object_set_new(json_object_get(dk, "keys"), kid, json_string(e->ed));
    return dk;
}

/* ---- cross-signing (E2EE §"Cross-signing") ----
 * The three seeds are sealed in the store with the store key (mx_seal). */
enum { X_MASTER, X_SELF, X_USER };
static const char *const x_usage[3] = {"master", "self_signing", "user_signing"};
static const char *const x_field[3] = {"master_key", "self_signing_key", "user_signing_key"};

#define X_SEAL_LABEL "cardroom-cross-signing-v1"

static void x_sign(const mx_e2ee *e, int which, json_t *obj)
{
    uint8_t pub[32], sec[64], sig[64];
    mx_ed25519_from_seed(e->xseed[which], pub, sec);
    char *c = signing_text(obj), sigb[90], kid[80];
    mx_ed25519_sign(sec, (const uint8_t *)c, strlen(c), sig);
    mx_wipe(sec, sizeof sec);
    mx_b64_encode(sig, 64, sigb, sizeof sigb);
    snprintf(kid, sizeof kid, "ed25519:%s", e->xpub[which]);
    json_t *sigs = jobj(obj, "signatures");
    if (!sigs) json_object_set_new(obj, "signatures", sigs = json_object());
    set2(sigs, e->user, kid, json_string(sigb));
    free(c);
}

static int load_cross(mx_e2ee *e)
{
    char *v = NULL, *st = NULL;
    uint8_t seeds[96];
    int rc = store_kv_get(e->db, "e2ee", "cross", &v);
    if (rc == 0 && mx_unseal(e->key, X_SEAL_LABEL, v, seeds, sizeof seeds) == 96) {
        memcpy(e->xseed, seeds, 96);
    } else if (rc == 1) {
        mx_random(e->xseed, sizeof e->xseed);
        char *sealed = mx_seal(e->key, X_SEAL_LABEL, &e->xseed[0][0], 96);
        rc = sealed ? store_kv_put(e->db, "e2ee", "cross", sealed) : -1;
        free(sealed);
    } else {
        rc = -1;
    }
    mx_wipe(seeds, sizeof seeds);
    free(v);
    if (rc < 0) return -1;
    for (int i = 0; i < 3; i++) {
        uint8_t pub[32], sec[64];
        mx_ed25519_from_seed(e->xseed[i], pub, sec);
        mx_wipe(sec, sizeof sec);
        mx_b64_encode(pub, 32, e->xpub[i], sizeof e->xpub[i]);
    }
    store_kv_get(e->db, "e2ee", "cross_state", &st);
    e->xstate = st ? atoi(st) : 0;
    free(st);
    return 0;
}

static void save_xstate(mx_e2ee *e)
{
    char v[8];
    snprintf(v, sizeof v, "%d", e->xstate);
    store_kv_put(e->db, "e2ee", "cross_state", v);
}

void mx_e2ee_set_password(mx_e2ee *e, const char *password)
{
    if (e->password) mx_wipe(e->password, strlen(e->password));
    free(e->password);
    e->password = password && *password ? strdup(password) : NULL;
}

/* POST /keys/device_signing/upload, with the password as interactive auth once asked. */
static int make_xsign(mx_e2ee *e, mx_e2ee_request *r)
{
    if (e->xstate != 0 || !e->password) return 0;
    json_t *body = json_object();
    for (int i = 0; i < 3; i++) {
        char kid[80];
        json_t *k = json_pack("{s:s, s:[s], s:{}}", "user_id", e->user, "usage", x_usage[i], "keys");
        snprintf(kid, sizeof kid, "ed25519:%s", e->xpub[i]);
        json_object_set_new(json_object_get(k, "keys"), kid, json_string(e->xpub[i]));
        if (i == X_MASTER) sign_json(e, k);  /* the device vouches for the master key */
        else x_sign(e, X_MASTER, k);         /* the master key signs the other two */
        json_object_set_new(body, x_field[i], k);
    }
    if (e->uia_session[0])
        json_object_set_new(body, "auth", json_pack("{s:s, s:{s:s, s:s}, s:s, s:s}", "type", "m.login.password",
                                                    "identifier", "type", "m.id.user", "user", e->user, "password",
                                                    e->password, "session", e->uia_session));
    int rc = start_req(e, REQ_XSIGN, r, "POST", API "/keys/device_signing/upload", body, "uploading cross-signing keys");
    return rc;
}

/* POST /keys/signatures/upload: the self-signing key signs our device. */
static int make_sigs(mx_e2ee *e, mx_e2ee_request *r)
{
    if (e->xstate != 1) return 0;
    json_t *dk = device_keys(e);
    x_sign(e, X_SELF, dk);
    json_t *body = json_object();
    set2(body, e->user, e->device, dk);
    return start_req(e, REQ_SIGS, r, "POST", API "/keys/signatures/upload", body, "signing the device");
}

static void answer_xsign(mx_e2ee *e, long status, json_t *a)
{
    if (status == 200) {
        e->xstate = 1;
        save_xstate(e);
        e->uia_session[0] = 0;
        elog(e, 2, "e2ee: cross-signing keys uploaded (master %s)", e->xpub[X_MASTER]);
        return;
    }
    const char *session = jstr(a, "session");
    if (status == 401 && session && !e->uia_session[0] && strlen(session) < sizeof e->uia_session) {
        snprintf(e->uia_session, sizeof e->uia_session, "%s", session); /* again, with the password */
        e->retry_at[REQ_XSIGN] = 0;
        e->failures[REQ_XSIGN] = 0;
        return;
    }
    if (status == 401 || (status >= 400 && status < 500 && status != 429)) {
        elog(e, 0, "e2ee: the homeserver refused the cross-signing keys (HTTP %ld%s%s); the bot's device stays "
                   "unverified", status, jstr(a, "errcode") ? ", " : "", jstr(a, "errcode") ? jstr(a, "errcode") : "");
        e->xstate = -1; /* not again in this run */
    }
    e->uia_session[0] = 0;
}

static void answer_sigs(mx_e2ee *e, long status, json_t *a)
{
    if (status != 200) return;
    if (json_object_size(jobj(a, "failures"))) {
        elog(e, 0, "e2ee: the homeserver refused the signature of the bot's device");
        e->xstate = -1;
        return;
    }
    e->xstate = 2;
    save_xstate(e);
    elog(e, 2, "e2ee: the bot's device is signed by its self-signing key");
}

/* POST /keys/upload (E2EE §"Uploading keys"): device keys once, one-time keys to the target,
 * a fallback key when the server has none unused. */
static int make_upload(mx_e2ee *e, mx_e2ee_request *r)
{
    int want_otks = e->otk_count >= 0 && e->otk_count < OTK_TARGET;
    if (e->uploaded && !want_otks && !e->need_fallback) return 0;
    json_t *body = json_object();
    char kid[300];
    if (!e->uploaded) {
        json_t *dk = device_keys(e);
        sign_json(e, dk);
        json_object_set_new(body, "device_keys", dk);
        if (e->otk_count < 0) want_otks = 1; /* a new device: the server has none */
    }
    if (want_otks) {
        size_t have = e->otk_count < 0 ? 0 : (size_t)e->otk_count;
        size_t n = OTK_TARGET * 2 > have ? OTK_TARGET * 2 - have : 0;
        if (n > mx_olm_account_max_otks(e->acc) / 2) n = mx_olm_account_max_otks(e->acc) / 2;
        char *cur = mx_olm_account_otks_json(e->acc);
        json_t *was = json_loads(cur ? cur : "{}", 0, NULL);
        free(cur);
        if (json_object_size(jobj(was, "curve25519")) == 0 && n) mx_olm_account_generate_otks(e->acc, n);
        json_decref(was);
        char *js = mx_olm_account_otks_json(e->acc);
        json_t *all = json_loads(js ? js : "{}", 0, NULL), *otks = json_object();
        free(js);
        const char *id;
        json_t *k;
        json_object_foreach(jobj(all, "curve25519"), id, k) {
            json_t *o = json_pack("{s:O}", "key", k);
            sign_json(e, o);
            snprintf(kid, sizeof kid, "signed_curve25519:%s", id);
            json_object_set_new(otks, kid, o);
        }
        json_decref(all);
        json_object_set_new(body, "one_time_keys", otks);
    }
    if (e->need_fallback) {
        char *fb = mx_olm_account_fallback_json(e->acc);
        json_t *f = json_loads(fb ? fb : "{}", 0, NULL), *fks = json_object();
        free(fb);
        if (json_object_size(jobj(f, "curve25519")) == 0) {
            json_decref(f);
            mx_olm_account_generate_fallback(e->acc);
            fb = mx_olm_account_fallback_json(e->acc);
            f = json_loads(fb ? fb : "{}", 0, NULL);
            free(fb);
        }
        const char *id;
        json_t *k;
        json_object_foreach(jobj(f, "curve25519"), id, k) {
            json_t *o = json_pack("{s:O, s:b}", "key", k, "fallback", 1);
            sign_json(e, o);
            snprintf(kid, sizeof kid, "signed_curve25519:%s", id);
            json_object_set_new(fks, kid, o);
        }
        json_decref(f);
        json_object_set_new(body, "fallback_keys", fks);
    }
    if (save_account(e) != 0) {
        json_decref(body);
        return 0;
    }
    return start_req(e, REQ_UPLOAD, r, "POST", API "/keys/upload", body, "uploading encryption keys");
}

static int make_query(mx_e2ee *e, mx_e2ee_request *r)
{
    json_t *users = json_object();
    const char *u;
    json_t *v;
    json_object_foreach(e->tracked, u, v) {
        if (json_is_true(v) && json_object_size(users) < 100) json_object_set_new(users, u, json_array());
    }
    if (!json_object_size(users)) {
        json_decref(users);
        return 0;
    }
    json_decref(e->query_users);
    e->query_users = json_incref(users);
    return start_req(e, REQ_QUERY, r, "POST", API "/keys/query", json_pack("{s:o, s:i}", "device_keys", users, "timeout", 10000),
                     "asking for devices");
}

static int make_claim(mx_e2ee *e, mx_e2ee_request *r)
{
    if (!json_object_size(e->claim)) return 0;
    json_t *otk = json_object();
    const char *u, *d;
    json_t *devs, *x;
    json_object_foreach(e->claim, u, devs) {
        json_object_foreach(devs, d, x) { set2(otk, u, d, json_string("signed_curve25519")); }
    }
    json_decref(e->claim_users);
    e->claim_users = json_deep_copy(e->claim);
    return start_req(e, REQ_CLAIM, r, "POST", API "/keys/claim", json_pack("{s:o, s:i}", "one_time_keys", otk, "timeout", 10000),
                     "claiming one-time keys");
}

static olm_sess *olm_for(mx_e2ee *e, const char *curve)
{
    for (int i = e->nolm - 1; i >= 0; i--) /* the newest first */
        if (strcmp(e->olm[i].curve, curve) == 0) return &e->olm[i];
    return NULL;
}

static group_out *out_of(mx_e2ee *e, const char *room)
{
    for (int i = 0; i < e->nout; i++)
        if (strcmp(e->out[i].room, room) == 0) return &e->out[i];
    return NULL;
}

/* The Olm-encrypted to-device content carrying payload for one device (E2EE §"m.olm.v1"), or
 * NULL; *unsaved is set when the store refused the Olm session's new state (the message is then
 * not given out, as mx_e2ee_encrypt() does with a room key's index). */
static json_t *olm_wrap(mx_e2ee *e, const char *user, const char *device, json_t *dev, const char *type, json_t *content,
                        int *unsaved)
{
    const char *curve = jstr(dev, "curve"), *ed = jstr(dev, "ed");
    olm_sess *o = curve ? olm_for(e, curve) : NULL;
    if (!o || !ed) return NULL;
    json_t *payload = json_pack("{s:s, s:s, s:{s:s}, s:s, s:{s:s}, s:s, s:O}", "sender", e->user, "sender_device",
                                e->device, "keys", "ed25519", e->ed, "recipient", user, "recipient_keys", "ed25519", ed,
                                "type", type, "content", content);
    (void)device;
    char *plain = json_dumps(payload, JSON_COMPACT), *body = NULL;
    int mtype = 0;
    json_decref(payload);
    if (!plain || mx_olm_encrypt(o->s, (const uint8_t *)plain, strlen(plain), &mtype, &body) != 0) {
        if (plain) mx_wipe(plain, strlen(plain));
        free(plain);
        return NULL;
    }
    mx_wipe(plain, strlen(plain));
    free(plain);
    if (save_olm(e, o) != 0) { /* after a crash the stored session would send this chain index again */
        free(body);
        *unsaved = 1;
        return NULL;
    }
    json_t *c = json_pack("{s:s, s:s, s:{s:{s:i, s:s}}}", "algorithm", OLM_ALG, "sender_key", e->curve, "ciphertext", curve,
                          "type", mtype, "body", body);
    free(body);
    return c;
}

/* PUT /sendToDevice/m.room.encrypted (the room key of one room for the devices not yet given it). */
static int make_share(mx_e2ee *e, mx_e2ee_request *r)
{
    for (int i = 0; i < e->nout; i++) {
        group_out *g = &e->out[i];
        if (!g->sharing || json_object_size(g->sharing) == 0) continue;
        char sid[44];
        mx_megolm_out_id(g->s, sid);
        char *skey = mx_megolm_out_session_key(g->s);
        json_t *content = json_pack("{s:s, s:s, s:s, s:s}", "algorithm", MEGOLM_ALG, "room_id", g->room, "session_id", sid,
                                    "session_key", skey ? skey : "");
        if (skey) mx_wipe(skey, strlen(skey));
        free(skey);
        json_t *messages = json_object();
        const char *u, *d;
        json_t *devs, *x;
        int unsaved = 0;
        json_object_foreach(g->sharing, u, devs) {
            json_object_foreach(devs, d, x) {
                json_t *m = olm_wrap(e, u, d, json_object_get(jobj(e->devices, u), d), "m.room_key", content, &unsaved);
                if (m) set2(messages, u, d, m);
            }
        }
        json_decref(content);
        if (unsaved) { /* nothing goes out that the store does not know: the whole share waits */
            json_decref(messages);
            e->retry_at[REQ_SHARE] = now_ms() + STORE_RETRY_MS;
            return 0;
        }
        /* a stable txn id: the same session for the same devices is the same request, so a
         * retry after a lost answer is not delivered twice (Send-to-Device §"Protocol") */
        char path[700], txn[80], *what = mx_canonical_json(g->sharing);
        uint8_t h[32];
        size_t wl = what ? strlen(what) : 0;
        char *seed = malloc(wl + 64);
        snprintf(seed, wl + 64, "%s|%s", sid, what ? what : "");
        mx_sha256((const uint8_t *)seed, strlen(seed), h);
        free(seed);
        free(what);
        mx_b64_encode(h, 18, txn, sizeof txn);
        for (char *p = txn; *p; p++)
            if (*p == '/' || *p == '+') *p = '_';
        snprintf(path, sizeof path, API "/sendToDevice/m.room.encrypted/crk%s", txn);
        snprintf(e->share_room, sizeof e->share_room, "%s", g->room);
        return start_req(e, REQ_SHARE, r, "PUT", path, json_pack("{s:o}", "messages", messages), "sharing a room key");
    }
    return 0;
}

/* Whether a request of kind may start now: none running, and no failure to wait out. */
static int may(mx_e2ee *e, int kind) { return !e->inflight[kind] && now_ms() >= e->retry_at[kind]; }

int mx_e2ee_next_request(mx_e2ee *e, mx_e2ee_request *r)
{
    memset(r, 0, sizeof *r);
    if (e->error[0]) return 0;
    if (may(e, REQ_UPLOAD) && make_upload(e, r)) return 1;
    if (!e->uploaded) return 0; /* nothing else before our keys are known */
    if (may(e, REQ_QUERY) && !e->inflight[REQ_CLAIM] && make_query(e, r)) return 1;
    if (may(e, REQ_CLAIM) && !e->inflight[REQ_QUERY] && make_claim(e, r)) return 1;
    if (may(e, REQ_SHARE) && !e->inflight[REQ_CLAIM] && make_share(e, r)) return 1;
    if (may(e, REQ_XSIGN) && make_xsign(e, r)) return 1;
    if (may(e, REQ_SIGS) && !e->inflight[REQ_XSIGN] && make_sigs(e, r)) return 1;
    return 0;
}

/* ---- answers ---- */

static void answer_upload(mx_e2ee *e, long status, json_t *a)
{
    if (status == 200) {
        if (!e->uploaded) elog(e, 2, "e2ee: device keys uploaded (curve25519 %s)", e->curve);
        e->uploaded = 1;
        e->need_fallback = 0;
        mx_olm_account_mark_published(e->acc);
        save_account(e);
        store_kv_put(e->db, "e2ee", "uploaded", "1");
        json_t *n = json_object_get(jobj(a, "one_time_key_counts"), "signed_curve25519");
        if (json_is_integer(n)) e->otk_count = (int)json_integer_value(n);
        return;
    }
    if (status == 400 && !e->uploaded) {
        snprintf(e->error, sizeof e->error,
                 "the homeserver holds other encryption keys for device %.100s (%.200s): the bot's encryption state for this "
                 "device was lost; log the bot in as a new device (remove matrix:token and matrix:device from the store)",
                 e->device, jstr(a, "error") ? jstr(a, "error") : "refused");
        elog(e, 0, "e2ee: %s", e->error);
    }
}

/* A device's signed keys (E2EE §"Downloading keys"): they must name the user and device and
 * carry the device's own signature. */
static void answer_query(mx_e2ee *e, long status, json_t *a)
{
    if (status != 200) return;
    const char *u;
    json_t *x;
    json_object_foreach(e->query_users, u, x) {
        json_t *devs = jobj(jobj(a, "device_keys"), u), *known = jobj(e->devices, u), *now;
        if (!devs && known) { /* not answered for (a server not reached): what we knew stands */
            json_object_set_new(e->tracked, u, json_false());
            store_kv_del(e->db, "outdated", u);
            continue;
        }
        now = json_object();
        const char *d;
        json_t *k;
        json_object_foreach(devs, d, k) {
            char ck[300], ek[300];
            snprintf(ck, sizeof ck, "curve25519:%s", d);
            snprintf(ek, sizeof ek, "ed25519:%s", d);
            const char *curve = jstr(jobj(k, "keys"), ck), *ed = jstr(jobj(k, "keys"), ek);
            const char *ku = jstr(k, "user_id"), *kd = jstr(k, "device_id");
            if (!curve || !ed || !ku || !kd || strcmp(ku, u) || strcmp(kd, d) || !signed_by(k, u, ek, ed)) {
                elog(e, 1, "e2ee: the keys of device %s of %s do not verify; it gets no room keys", d, u);
                continue;
            }
            const char *old = jstr(jobj(known, d), "ed");
            if (old && strcmp(old, ed) != 0) {
                elog(e, 1, "e2ee: device %s of %s changed its signing key; it gets no room keys", d, u);
                continue;
            }
            if (strcmp(u, e->user) == 0 && strcmp(d, e->device) == 0) continue; /* ourselves */
            json_object_set_new(now, d, json_pack("{s:s, s:s}", "curve", curve, "ed", ed));
        }
        /* a device that had a room key and is gone (or no longer verifies) must not read what
         * comes next: that room gets a new key. A new device is given the current one, from its
         * current index: it cannot read what came before. */
        for (int k = 0; k < e->nout; k++) {
            const char *d2;
            json_t *x2;
            json_object_foreach(jobj(e->out[k].shared, u), d2, x2) {
                if (!e->out[k].stale && !json_object_get(now, d2)) {
                    e->out[k].stale = 1;
                    save_out(e, &e->out[k]);
                }
            }
        }
        json_object_set_new(e->devices, u, now);
        json_object_set_new(e->tracked, u, json_false());
        json_object_del(e->unreachable, u); /* new devices, new chances */
        save_devices(e, u);
        store_kv_del(e->db, "outdated", u);
    }
}

static void answer_claim(mx_e2ee *e, long status, json_t *a)
{
    if (status != 200) return;
    const char *u, *d;
    json_t *devs, *x;
    json_object_foreach(e->claim_users, u, devs) {
        json_object_foreach(devs, d, x) {
            json_t *keys = jobj(jobj(jobj(a, "one_time_keys"), u), d), *dev = jobj(jobj(e->devices, u), d);
            const char *kid;
            json_t *k;
            int made = 0;
            char ek[300];
            snprintf(ek, sizeof ek, "ed25519:%s", d);
            json_object_foreach(keys, kid, k) {
                const char *key = jstr(k, "key"), *curve = jstr(dev, "curve");
                uint8_t their[32], otk[32];
                if (made || strncmp(kid, "signed_curve25519:", 18) != 0 || !key || !curve ||
                    !signed_by(k, u, ek, jstr(dev, "ed")) || mx_b64_decode(key, strlen(key), otk, 32) != 32 ||
                    mx_b64_decode(curve, strlen(curve), their, 32) != 32)
                    continue;
                mx_olm_session *s = mx_olm_outbound(e->acc, their, otk);
                if (!s) continue;
                e->olm = grow(e->olm, &e->colm, e->nolm + 1, sizeof *e->olm);
                olm_sess *o = &e->olm[e->nolm++];
                snprintf(o->curve, sizeof o->curve, "%s", curve);
                mx_olm_session_id(s, o->id);
                o->s = s;
                save_olm(e, o);
                made = 1;
            }
            if (!made) {
                elog(e, 1, "e2ee: no one-time key for device %s of %s; it gets no room keys for now", d, u);
                set2(e->unreachable, u, d, json_true());
            }
        }
    }
    json_object_foreach(e->claim_users, u, devs) {
        json_object_foreach(devs, d, x) {
            json_t *mine = jobj(e->claim, u);
            if (mine) json_object_del(mine, d);
            if (mine && json_object_size(mine) == 0) json_object_del(e->claim, u);
        }
    }
}

static void answer_share(mx_e2ee *e, long status)
{
    group_out *g = out_of(e, e->share_room);
    if (!g || !g->sharing) return;
    if (status == 200) {
        const char *u, *d;
        json_t *devs, *x;
        json_object_foreach(g->sharing, u, devs) {
            json_object_foreach(devs, d, x) { set2(g->shared, u, d, json_true()); }
        }
        json_decref(g->sharing);
        g->sharing = NULL;
        save_out(e, g);
    } else if (status >= 400 && status < 500 && status != 429) {
        elog(e, 1, "e2ee: the room key of %s could not be shared (HTTP %ld); a new one will be made", g->room, status);
        g->stale = 1;
        json_decref(g->sharing);
        g->sharing = NULL;
    }
}

void mx_e2ee_answer(mx_e2ee *e, int id, long status, const char *body, size_t len)
{
    int kind = REQ_NONE;
    for (int k = 1; k < REQ_KINDS; k++)
        if (e->inflight[k] == id) kind = k;
    if (!kind) return;
    e->inflight[kind] = 0;
    json_t *a = status ? json_loadb(body, len, 0, NULL) : NULL;
    if (status == 200 && !json_is_object(a)) status = 0; /* unreadable: as if no answer */
    if (status == 200) {
        e->failures[kind] = 0;
    } else if ((status != 400 || kind != REQ_UPLOAD) && !(kind == REQ_XSIGN && status == 401)) {
        /* wait before asking again: 1 s doubling to 5 min */
        int64_t wait = 1000;
        for (int i = 0; i < e->failures[kind] && wait < 300000; i++) wait *= 2;
        e->failures[kind]++;
        e->retry_at[kind] = now_ms() + (wait > 300000 ? 300000 : wait);
    }
    switch (kind) {
    case REQ_UPLOAD: answer_upload(e, status, a); break;
    case REQ_QUERY: answer_query(e, status, a); break;
    case REQ_CLAIM: answer_claim(e, status, a); break;
    case REQ_SHARE: answer_share(e, status); break;
    case REQ_XSIGN: answer_xsign(e, status, a); break;
    case REQ_SIGS: answer_sigs(e, status, a); break;
    }
    json_decref(a);
}

/* ---- to-device messages (E2EE §"m.olm.v1.curve25519-aes-sha2", §"m.room_key") ---- */

static void room_key(mx_e2ee *e, const char *sender, const char *sender_key, json_t *content)
{
    const char *alg = jstr(content, "algorithm"), *room = jstr(content, "room_id");
    const char *sid = jstr(content, "session_id"), *skey = jstr(content, "session_key");
    if (!alg || strcmp(alg, MEGOLM_ALG) || !room || !sid || !skey || strlen(room) > 255) return;
    mx_megolm_in *s = mx_megolm_in_new(skey);
    char id[44];
    if (!s) {
        elog(e, 1, "e2ee: a room key from %s does not verify", sender);
        return;
    }
    mx_megolm_in_id(s, id);
    if (strcmp(id, sid) != 0) {
        elog(e, 1, "e2ee: a room key from %s names another session", sender);
        mx_megolm_in_free(s);
        return;
    }
    char key[800];
    snprintf(key, sizeof key, "%s|%s|%s", room, sender_key, sid);
    for (int i = 0; i < e->nin; i++)
        if (strcmp(e->in[i].key, key) == 0) {
            if (mx_megolm_in_first_index(e->in[i].s) <= mx_megolm_in_first_index(s)) {
                mx_megolm_in_free(s); /* we know as much or more already */
                return;
            }
            mx_megolm_in_free(e->in[i].s);
            e->in[i].s = s;
            save_in(e, &e->in[i]);
            return;
        }
    e->in = grow(e->in, &e->cin, e->nin + 1, sizeof *e->in);
    group_in *g = &e->in[e->nin++];
    snprintf(g->key, sizeof g->key, "%s", key);
    snprintf(g->sender, sizeof g->sender, "%s", sender);
    g->s = s;
    save_in(e, g);
    elog(e, 3, "e2ee: room key for %s from %s", room, sender);
}

/* The mark of a to-device message: its sender's key and the hash of its ciphertext. */
static int seen_mark(const char *skey, const char *body, char *out, size_t len)
{
    uint8_t h[32];
    char b[48];
    mx_sha256((const uint8_t *)body, strlen(body), h);
    if (!mx_b64_encode(h, sizeof h, b, sizeof b)) return -1;
    return snprintf(out, len, "%s|%s", skey, b) < (int)len ? 0 : -1;
}

/* A to-device message (Olm, E2EE §"m.olm.v1.curve25519-aes-sha2"). It is read once: what it
 * changes (the Olm session's ratchet, a one-time key used up, the room key it carries) and its
 * mark are stored in the transaction of its sync answer's to-device part, before the core
 * stores the sync position; a crash in between gets the message again after the restart,
 * when its session has moved past it, so its mark makes it skip what is stored already. */
static void to_device(mx_e2ee *e, json_t *ev)
{
    const char *type = jstr(ev, "type"), *sender = jstr(ev, "sender");
    json_t *content = jobj(ev, "content");
    if (!type || strcmp(type, "m.room.encrypted") || !sender || !content) return;
    const char *alg = jstr(content, "algorithm"), *skey = jstr(content, "sender_key");
    json_t *mine = jobj(jobj(content, "ciphertext"), e->curve);
    const char *body = jstr(mine, "body");
    json_t *t = json_object_get(mine, "type");
    uint8_t their[32];
    if (!alg || strcmp(alg, OLM_ALG) || !skey || !body || !json_is_integer(t) ||
        mx_b64_decode(skey, strlen(skey), their, 32) != 32)
        return;
    int mtype = (int)json_integer_value(t);
    char seen_key[100], *seen = NULL;
    if (seen_mark(skey, body, seen_key, sizeof seen_key) != 0) return;
    if (store_kv_get(e->db, "olm.seen", seen_key, &seen) == 0) { /* done before a restart */
        free(seen);
        return;
    }
    uint8_t *plain = NULL;
    size_t plen = 0;
    olm_sess *used = NULL;
    for (int i = e->nolm - 1; i >= 0 && !plain; i--) {
        olm_sess *o = &e->olm[i];
        if (strcmp(o->curve, skey) != 0) continue;
        if (mtype == 0 && !mx_olm_session_matches(o->s, body)) continue;
        if (mx_olm_decrypt(o->s, mtype, body, &plain, &plen) == 0) used = o;
    }
    if (!plain && mtype == 0) {
        mx_olm_session *s = mx_olm_inbound(e->acc, their, body, &plain, &plen);
        if (s) {
            e->olm = grow(e->olm, &e->colm, e->nolm + 1, sizeof *e->olm);
            used = &e->olm[e->nolm++];
            snprintf(used->curve, sizeof used->curve, "%s", skey);
            mx_olm_session_id(s, used->id);
            used->s = s;
            save_account(e); /* its one-time key is used up */
            if (e->otk_count > 0) e->otk_count--;
        }
    }
    if (!plain) {
        elog(e, 1, "e2ee: cannot decrypt a to-device message from %s", sender);
        return;
    }
    save_olm(e, used);
    if (store_kv_put(e->db, "olm.seen", seen_key, "1") != 0) elog(e, 0, "e2ee: cannot save a to-device message as read");
    json_t *p = json_loadb((const char *)plain, plen, 0, NULL);
    mx_wipe(plain, plen);
    free(plain);
    /* the checks of E2EE §"m.olm.v1.curve25519-aes-sha2" */
    const char *ps = jstr(p, "sender"), *pr = jstr(p, "recipient"), *ped = jstr(jobj(p, "recipient_keys"), "ed25519");
    const char *ptype = jstr(p, "type"), *their_ed = jstr(jobj(p, "keys"), "ed25519");
    if (!ps || strcmp(ps, sender) || !pr || strcmp(pr, e->user) || !ped || strcmp(ped, e->ed) || !ptype || !their_ed) {
        elog(e, 1, "e2ee: a to-device message from %s fails the sender/recipient checks", sender);
        json_decref(p);
        return;
    }
    const char *d;
    json_t *dev;
    json_object_foreach(jobj(e->devices, sender), d, dev) {
        const char *c = jstr(dev, "curve"), *ed = jstr(dev, "ed");
        if (c && strcmp(c, skey) == 0 && ed && strcmp(ed, their_ed) != 0) {
            elog(e, 1, "e2ee: a to-device message from %s claims another signing key", sender);
            json_decref(p);
            return;
        }
    }
    if (strcmp(ptype, "m.room_key") == 0) room_key(e, sender, skey, jobj(p, "content"));
    json_decref(p);
}

void mx_e2ee_sync(mx_e2ee *e, json_t *root)
{
    json_t *evs = json_object_get(jobj(root, "to_device"), "events");
    if (json_is_array(evs) && json_array_size(evs) > 0) {
        int tx = store_begin(e->db) == 0; /* each message with all it changes, or none */
        for (size_t i = 0; i < json_array_size(evs); i++) to_device(e, json_array_get(evs, i));
        if (tx && store_commit(e->db) != 0) {
            store_rollback(e->db);
            elog(e, 0, "e2ee: cannot save what to-device messages changed: %s", store_error(e->db));
        }
    }
    json_t *changed = json_object_get(jobj(root, "device_lists"), "changed");
    for (size_t i = 0; json_is_array(changed) && i < json_array_size(changed); i++) {
        const char *u = json_string_value(json_array_get(changed, i));
        if (u && json_object_get(e->tracked, u)) {
            /* asked for again; what changed decides whether the room keys change (answer_query).
             * A change is no reason by itself: Synapse reports every member as changed in the
             * first (full state) sync after each start. */
            json_object_set_new(e->tracked, u, json_true());
            store_kv_put(e->db, "outdated", u, "1"); /* kept: the sync position moves on */
        }
    }
    json_t *n = json_object_get(jobj(root, "device_one_time_keys_count"), "signed_curve25519");
    if (json_is_integer(n)) e->otk_count = (int)json_integer_value(n);
    else if (jobj(root, "device_one_time_keys_count")) e->otk_count = 0;
    json_t *fb = json_object_get(root, "device_unused_fallback_key_types");
    if (json_is_array(fb)) {
        int have = 0;
        for (size_t i = 0; i < json_array_size(fb); i++)
            have |= json_is_string(json_array_get(fb, i)) && strcmp(json_string_value(json_array_get(fb, i)), "signed_curve25519") == 0;
        if (!have) e->need_fallback = 1;
    }
}

/* ---- room events (E2EE §"m.megolm.v1.aes-sha2") ---- */

json_t *mx_e2ee_decrypt(mx_e2ee *e, const char *room, json_t *event, char *err, size_t errlen)
{
    json_t *c = jobj(event, "content");
    const char *alg = jstr(c, "algorithm"), *skey = jstr(c, "sender_key"), *sid = jstr(c, "session_id");
    const char *ct = jstr(c, "ciphertext"), *sender = jstr(event, "sender"), *eid = jstr(event, "event_id");
    if (!alg || strcmp(alg, MEGOLM_ALG) || !skey || !sid || !ct || !sender) {
        snprintf(err, errlen, "not a Megolm event");
        return NULL;
    }
    char key[800];
    snprintf(key, sizeof key, "%s|%s|%s", room, skey, sid);
    group_in *g = NULL;
    for (int i = 0; i < e->nin && !g; i++)
        if (strcmp(e->in[i].key, key) == 0) g = &e->in[i];
    if (!g) {
        snprintf(err, errlen, "no room key for session %s from %s", sid, sender);
        return NULL;
    }
    if (strcmp(g->sender, sender) != 0) {
        snprintf(err, errlen, "a room key of %s used by %s", g->sender, sender);
        return NULL;
    }
    uint8_t *plain = NULL;
    size_t plen = 0;
    uint32_t index = 0;
    if (mx_megolm_decrypt(g->s, ct, &plain, &plen, &index) != 0) {
        snprintf(err, errlen, "the ciphertext of %s does not decrypt", sender);
        return NULL;
    }
    json_t *p = json_loadb((const char *)plain, plen, 0, NULL);
    free(plain);
    const char *proom = jstr(p, "room_id");
    if (!jstr(p, "type") || !jobj(p, "content") || !proom || strcmp(proom, room) != 0) {
        snprintf(err, errlen, "the decrypted event of %s is for another room or malformed", sender);
        json_decref(p);
        return NULL;
    }
    char seen_key[100], *seen = NULL;
    snprintf(seen_key, sizeof seen_key, "%s|%u", sid, index);
    int rc = store_kv_get(e->db, "megolm.seen", seen_key, &seen);
    if (rc == 0 && (!eid || strcmp(seen, eid) != 0)) {
        snprintf(err, errlen, "a replayed message index %u of session %s", index, sid);
        free(seen);
        json_decref(p);
        return NULL;
    }
    free(seen);
    if (rc == 1 && eid) store_kv_put(e->db, "megolm.seen", seen_key, eid);
    return p;
}

/* ---- sending ---- */

static group_out *fresh_out(mx_e2ee *e, const char *room)
{
    group_out *g = out_of(e, room);
    if (!g) {
        e->out = grow(e->out, &e->cout, e->nout + 1, sizeof *e->out);
        g = &e->out[e->nout++];
        memset(g, 0, sizeof *g);
        snprintf(g->room, sizeof g->room, "%s", room);
    } else {
        mx_megolm_out_free(g->s);
        json_decref(g->shared);
        json_decref(g->sharing);
    }
    g->s = mx_megolm_out_new();
    g->created = now_ms();
    g->count = 0;
    g->shared = json_object();
    g->sharing = NULL;
    g->stale = 0;
    if (!g->s) abort();
    save_out(e, g);
    return g;
}

int mx_e2ee_encrypt(mx_e2ee *e, const char *room, const char *const *users, int n, const char *type,
                    const char *content, char **out, char *err, size_t errlen)
{
    *out = NULL;
    if (e->error[0]) {
        snprintf(err, errlen, "%s", e->error);
        return -1;
    }
    if (!e->uploaded) return 0;
    int waiting = 0;
    for (int i = 0; i < n; i++) {
        mx_e2ee_track(e, users[i]);
        if (json_is_true(json_object_get(e->tracked, users[i]))) waiting = 1;
    }
    if (waiting) return 0; /* their devices are being asked for */
    group_out *g = out_of(e, room);
    if (g && g->sharing) return 0;
    /* rotation: a count, an age, a device that had the key is gone (stale), or someone who had
     * it is no longer a member; a new member or device gets the current key (E2EE §"Sending an
     * encrypted message event": the session is shared from its current index) */
    int rotate = !g || g->stale || g->count >= ROTATE_MESSAGES || now_ms() - g->created > ROTATE_MS;
    if (g && !rotate) {
        const char *u;
        json_t *x;
        json_object_foreach(g->shared, u, x) {
            int member = 0;
            for (int i = 0; i < n && !member; i++) member = strcmp(users[i], u) == 0;
            if (!member) rotate = 1;
        }
    }
    if (rotate) g = fresh_out(e, room);
    /* every verified device of every member gets the key */
    json_t *todo = json_object();
    int claim = 0;
    for (int i = 0; i < n; i++) {
        const char *d;
        json_t *dev;
        json_object_foreach(jobj(e->devices, users[i]), d, dev) {
            if (has2(g->shared, users[i], d) || has2(e->unreachable, users[i], d)) continue;
            if (!olm_for(e, jstr(dev, "curve") ? jstr(dev, "curve") : "")) {
                set2(e->claim, users[i], d, json_true());
                claim = 1;
                continue;
            }
            set2(todo, users[i], d, json_true());
        }
    }
    if (claim) {
        json_decref(todo);
        return 0;
    }
    if (json_object_size(todo)) {
        g->sharing = todo;
        return 0;
    }
    json_decref(todo);
    json_t *c = json_loads(content, 0, NULL);
    json_t *payload = json_pack("{s:s, s:o, s:s}", "type", type, "content", c ? c : json_object(), "room_id", room);
    char *plain = json_dumps(payload, JSON_COMPACT);
    json_decref(payload);
    char *ct = plain ? mx_megolm_encrypt(g->s, (const uint8_t *)plain, strlen(plain)) : NULL;
    free(plain);
    if (!ct) {
        snprintf(err, errlen, "cannot encrypt");
        return -1;
    }
    g->count++;
    /* The ratchet moved on. Its new state is stored before the message may go out: after a crash
     * the stored state must be past every index that was sent, or a restarted bot would use an
     * index again. If the store refuses, the message is not given out: its index stays unused
     * whatever the store ends up holding, and the caller tries again later (the next index). */
    if (save_out(e, g) != 0) {
        mx_wipe(ct, strlen(ct));
        free(ct);
        snprintf(err, errlen, "the store refused the room's group session");
        return MX_E2EE_UNSAVED;
    }
    char sid[44];
    mx_megolm_out_id(g->s, sid);
    json_t *enc = json_pack("{s:s, s:s, s:s, s:s, s:s}", "algorithm", MEGOLM_ALG, "sender_key", e->curve, "ciphertext", ct,
                            "session_id", sid, "device_id", e->device);
    free(ct);
    *out = json_dumps(enc, JSON_COMPACT);
    json_decref(enc);
    return *out ? 1 : -1;
}
