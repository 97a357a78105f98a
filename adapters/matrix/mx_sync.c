/* mx_sync.c — room state and the reading of /sync answers (see mx_sync.h).
 *
 * The state is kept in jansson objects (hash tables):
 *   rooms: { room_id: { "members": { user: {"name": displayname|null, "ms": membership} },
 *                       "pl": power levels content, "creator": user, "name": …, "alias": …,
 *                       "enc": true once m.room.encryption was seen } }
 *     (a room is in it once its whole state was read: its members and encryption are known)
 *   enc: { room_id: true (encrypted, from the store or the homeserver), false (not, as the
 *          homeserver answered in this run) }
 *   dm_user: { user: room }   dm_room: { room: user } */
#include "mx_sync.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MX_ID_MAX 255      /* longer ids are not kept (the core ignores them too) */
#define MX_BATCH_MAX 1024  /* a next_batch token longer than this is refused */

struct mx_state {
    mx_sync_hooks hooks;
    char *me;
    char *server;       /* the part of me after the first ':' */
    char *invites;
    json_t *rooms, *enc, *dm_user, *dm_room;
};

static const char *server_of(const char *id)
{
    const char *c = id ? strchr(id, ':') : NULL;
    return c ? c + 1 : "";
}

mx_state *mx_state_new(const char *me, const char *invites)
{
    mx_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->me = strdup(me);
    s->server = strdup(server_of(me));
    s->invites = strdup(invites ? invites : "");
    s->rooms = json_object();
    s->enc = json_object();
    s->dm_user = json_object();
    s->dm_room = json_object();
    if (!s->me || !s->server || !s->invites || !s->rooms || !s->enc || !s->dm_user || !s->dm_room) {
        mx_state_free(s);
        return NULL;
    }
    return s;
}

void mx_state_free(mx_state *s)
{
    if (!s) return;
    free(s->me);
    free(s->server);
    free(s->invites);
    json_decref(s->rooms);
    json_decref(s->enc);
    json_decref(s->dm_user);
    json_decref(s->dm_room);
    free(s);
}

/* ---- small readers that never trust the shape ---- */

static const char *str_of(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static json_t *obj_of(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_object(v) ? v : NULL;
}

static json_t *arr_of(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_array(v) ? v : NULL;
}

/* A power level: an integer, or (older rooms) a string of digits. */
static int level_of(json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    if (json_is_string(v)) {
        char *end;
        const char *p = json_string_value(v);
        long long x = strtoll(p, &end, 10);
        if (end != p && *end == 0) {
            *out = x;
            return 1;
        }
    }
    return 0;
}

static int id_ok(const char *id) { return id && *id && strlen(id) <= MX_ID_MAX; }

void mx_state_set_hooks(mx_state *s, const mx_sync_hooks *h) { s->hooks = *h; }

int mx_state_encryption(const mx_state *s, const char *room)
{
    json_t *r = obj_of(s->rooms, room ? room : ""), *known = json_object_get(s->enc, room ? room : "");
    if (json_is_true(json_object_get(r, "enc")) || json_is_true(known)) return MX_ENC_YES;
    if (r || json_is_false(known)) return MX_ENC_NO;
    return MX_ENC_UNKNOWN;
}

void mx_state_set_encryption(mx_state *s, const char *room, int encrypted)
{
    if (!id_ok(room) || json_is_true(json_object_get(s->enc, room))) return;
    json_object_set_new(s->enc, room, json_boolean(encrypted));
}

int mx_state_members_known(const mx_state *s, const char *room) { return obj_of(s->rooms, room ? room : "") != NULL; }

/* The room is encrypted: recorded, and the adapter told the first time. */
static void learn_encrypted(mx_state *s, const char *room_id)
{
    if (mx_state_encryption(s, room_id) == MX_ENC_YES) return;
    json_object_set_new(s->enc, room_id, json_true());
    if (s->hooks.encrypted) s->hooks.encrypted(s->hooks.ctx, room_id);
}

/* ---- invites ---- */

int mx_state_invite_allowed(const mx_state *s, const char *user)
{
    if (!id_ok(user)) return 0;
    const char *p = s->invites;
    int any = 0;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != ',' && *p != '\t') p++;
        size_t n = (size_t)(p - w);
        if (!n) continue;
        any = 1;
        if (n == 1 && *w == '*') return 1;
        if (*w == '@') {
            if (strlen(user) == n && memcmp(user, w, n) == 0) return 1;
        } else {
            const char *srv = server_of(user);
            if (strlen(srv) == n && memcmp(srv, w, n) == 0) return 1;
        }
    }
    return !any && strcmp(server_of(user), s->server) == 0;
}

/* ---- direct chats ---- */

const char *mx_state_dm_room(const mx_state *s, const char *user)
{
    return user ? str_of(s->dm_user, user) : NULL;
}

const char *mx_state_dm_user(const mx_state *s, const char *room)
{
    return room ? str_of(s->dm_room, room) : NULL;
}

void mx_state_set_dm(mx_state *s, const char *user_in, const char *room_in)
{
    char user[MX_ID_MAX + 1], room[MX_ID_MAX + 1];
    if (!id_ok(user_in) || !id_ok(room_in) || strcmp(user_in, s->me) == 0) return;
    snprintf(user, sizeof user, "%s", user_in); /* the strings may belong to the maps */
    snprintf(room, sizeof room, "%s", room_in);
    const char *old = str_of(s->dm_user, user);
    if (old && strcmp(old, room) == 0) return;
    if (old) json_object_del(s->dm_room, old);
    const char *other = str_of(s->dm_room, room); /* the room was another user's chat */
    if (other) json_object_del(s->dm_user, other);
    json_object_set_new(s->dm_user, user, json_string(room));
    json_object_set_new(s->dm_room, room, json_string(user));
}

static void forget_dm_room(mx_state *s, const char *room_in)
{
    char room[MX_ID_MAX + 1], user[MX_ID_MAX + 1];
    const char *u = str_of(s->dm_room, room_in ? room_in : "");
    if (!u) return;
    snprintf(room, sizeof room, "%s", room_in); /* the strings may belong to the maps */
    snprintf(user, sizeof user, "%s", u);
    const char *r = str_of(s->dm_user, user);
    if (r && strcmp(r, room) == 0) json_object_del(s->dm_user, user);
    json_object_del(s->dm_room, room);
}

void mx_state_forget_dm(mx_state *s, const char *user)
{
    const char *room = mx_state_dm_room(s, user);
    if (room) forget_dm_room(s, room);
}

void mx_state_read_direct(mx_state *s, const char *json, size_t len)
{
    json_t *root = json_loadb(json, len, 0, NULL);
    const char *user;
    json_t *rooms;
    if (json_is_object(root))
        json_object_foreach(root, user, rooms) {
            if (!json_is_array(rooms) || json_array_size(rooms) == 0) continue;
            /* the newest chat is listed last */
            json_t *last = json_array_get(rooms, json_array_size(rooms) - 1);
            if (json_is_string(last) && !mx_state_dm_room(s, user)) mx_state_set_dm(s, user, json_string_value(last));
        }
    json_decref(root);
}

char *mx_state_direct_json(const mx_state *s)
{
    json_t *o = json_object();
    const char *user;
    json_t *room;
    json_object_foreach(s->dm_user, user, room) {
        json_t *a = json_array();
        json_array_append(a, room);
        json_object_set_new(o, user, a);
    }
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* ---- names ---- */

const char *mx_state_display_name(const mx_state *s, const char *room, const char *user, char *buf, size_t len)
{
    json_t *members = obj_of(obj_of(s->rooms, room ? room : ""), "members");
    const char *name = str_of(obj_of(members, user), "name");
    if (!name || !*name) return NULL;
    const char *other;
    json_t *m;
    json_object_foreach(members, other, m) {
        const char *ms = str_of(m, "ms"), *n = str_of(m, "name");
        if (strcmp(other, user) != 0 && n && strcmp(n, name) == 0 && ms && strcmp(ms, "join") == 0) {
            snprintf(buf, len, "%s (%s)", name, user);
            return buf;
        }
    }
    snprintf(buf, len, "%s", name);
    return buf;
}

const char *mx_state_room_name(const mx_state *s, const char *room, char *buf, size_t len)
{
    json_t *r = obj_of(s->rooms, room ? room : "");
    const char *name = str_of(r, "name");
    if (!name || !*name) name = str_of(r, "alias");
    if (!name || !*name) return NULL;
    snprintf(buf, len, "%s", name);
    return buf;
}

/* The user id in a matrix.to link ("https://matrix.to/#/@alice:example.org", percent-encoded
 * or not) into buf; 0 if text is not one. */
static int matrix_to_user(const char *text, size_t n, char *buf, size_t len)
{
    static const char prefix[] = "https://matrix.to/#/";
    if (n < sizeof prefix || strncmp(text, prefix, sizeof prefix - 1) != 0) return 0;
    size_t k = 0;
    for (size_t i = sizeof prefix - 1; i < n && k + 1 < len; i++) {
        unsigned v;
        if (text[i] == '%' && i + 2 < n && sscanf(text + i + 1, "%2x", &v) == 1 && isxdigit((unsigned char)text[i + 1]) &&
            isxdigit((unsigned char)text[i + 2])) {
            buf[k++] = (char)v;
            i += 2;
        } else if (text[i] == '?') {
            break; /* via= parameters */
        } else {
            buf[k++] = text[i];
        }
    }
    buf[k] = 0;
    return buf[0] == '@' && strchr(buf, ':') && !memchr(buf, 0, k) && k <= MX_ID_MAX && strlen(buf) == k;
}

const char *mx_state_find_user(const mx_state *s, const char *room, const char *text, char *buf, size_t len)
{
    if (!text || !*text || len == 0) return NULL;
    size_t n = strlen(text);
    if (matrix_to_user(text, n, buf, len)) return buf;
    if (text[0] == '@' && strchr(text, ':')) {
        if (n > MX_ID_MAX || n >= len) return NULL;
        snprintf(buf, len, "%s", text);
        return buf;
    }
    const char *local = text[0] == '@' ? text + 1 : text;
    json_t *members = obj_of(obj_of(s->rooms, room ? room : ""), "members");
    const char *by_local = NULL, *by_name = NULL, *user;
    int names = 0;
    json_t *m;
    json_object_foreach(members, user, m) {
        const char *colon = strchr(user, ':'), *name = str_of(m, "name");
        if (colon && (size_t)(colon - user - 1) == strlen(local) && strncasecmp(user + 1, local, strlen(local)) == 0)
            by_local = user;
        if (name && strcasecmp(name, text) == 0) {
            by_name = user;
            names++;
        }
    }
    const char *found = by_local ? by_local : names == 1 ? by_name : NULL;
    if (found && strlen(found) < len) {
        snprintf(buf, len, "%s", found);
        return buf;
    }
    if (found || names > 1 || !*local || strpbrk(local, " :@")) return NULL;
    if (snprintf(buf, len, "@%s:%s", local, s->server) >= (int)len) return NULL;
    for (char *p = buf + 1; *p && *p != ':'; p++) *p = (char)tolower((unsigned char)*p);
    return buf;
}

const char **mx_state_members(const mx_state *s, const char *room, int *n)
{
    json_t *members = obj_of(obj_of(s->rooms, room ? room : ""), "members");
    const char **v = malloc((json_object_size(members) + 1) * sizeof *v);
    const char *user;
    json_t *m;
    *n = 0;
    if (!v) return NULL;
    json_object_foreach(members, user, m) {
        const char *ms = str_of(m, "ms");
        if (ms && (strcmp(ms, "join") == 0 || strcmp(ms, "invite") == 0)) v[(*n)++] = user;
    }
    return v;
}

int mx_state_joined(const mx_state *s, const char *room) { return obj_of(s->rooms, room ? room : "") != NULL; }

int mx_state_room_count(const mx_state *s) { return (int)json_object_size(s->rooms); }

/* ---- reading an answer ---- */

static json_t *room_of(mx_state *s, const char *id);

void mx_state_made_dm(mx_state *s, const char *room_id, const char *user, int encrypted)
{
    if (!id_ok(room_id) || !id_ok(user)) return;
    json_t *room = room_of(s, room_id);
    json_t *members = obj_of(room, "members");
    if (!obj_of(members, s->me)) json_object_set_new(members, s->me, json_pack("{s:s}", "ms", "join"));
    if (!obj_of(members, user)) json_object_set_new(members, user, json_pack("{s:s}", "ms", "invite"));
    if (encrypted) {
        json_object_set_new(room, "enc", json_true());
        json_object_set_new(s->enc, room_id, json_true());
    }
    mx_state_set_dm(s, user, room_id);
}

static json_t *room_of(mx_state *s, const char *id)
{
    json_t *r = obj_of(s->rooms, id);
    if (r) return r;
    r = json_pack("{s:{}}", "members");
    json_object_set_new(s->rooms, id, r);
    return r;
}

static void add_event(mx_sync_out *o, adapter_event e)
{
    if (o->nev == o->cev) {
        int cap = o->cev ? 2 * o->cev : 16;
        adapter_event *v = realloc(o->ev, (size_t)cap * sizeof *v);
        if (!v) abort();
        o->ev = v;
        o->cev = cap;
    }
    o->ev[o->nev++] = e;
}

static void add_id(const char ***v, int *n, int *cap, const char *id)
{
    for (int i = 0; i < *n; i++)
        if (strcmp((*v)[i], id) == 0) return;
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 4;
        const char **w = realloc(*v, (size_t)c * sizeof *w);
        if (!w) abort();
        *v = w;
        *cap = c;
    }
    (*v)[(*n)++] = id;
}

/* A state event (in "state" or in the timeline) updates what we know of the room. */
static void apply_state(mx_state *s, const char *room_id, json_t *room, json_t *e)
{
    const char *type = str_of(e, "type"), *key = str_of(e, "state_key");
    json_t *content = obj_of(e, "content");
    if (!type || !key || !content) return;
    if (strcmp(type, "m.room.member") == 0) {
        const char *ms = str_of(content, "membership");
        if (!id_ok(key) || !ms) return;
        json_t *members = obj_of(room, "members");
        const char *name = str_of(content, "displayname");
        json_object_set_new(members, key, json_pack("{s:s?, s:s}", "name", name, "ms", ms));
    } else if (strcmp(type, "m.room.power_levels") == 0 && !*key) {
        json_object_set(room, "pl", content);
    } else if (strcmp(type, "m.room.create") == 0 && !*key) {
        const char *creator = str_of(content, "creator");
        if (!creator) creator = str_of(e, "sender");
        if (creator) json_object_set_new(room, "creator", json_string(creator));
    } else if (strcmp(type, "m.room.name") == 0 && !*key) {
        const char *name = str_of(content, "name");
        json_object_set_new(room, "name", json_string(name && strlen(name) < 256 ? name : ""));
    } else if (strcmp(type, "m.room.encryption") == 0 && !*key) {
        /* once encrypted, always: E2EE §"Enabling end-to-end encryption" */
        if (str_of(content, "algorithm")) {
            learn_encrypted(s, room_id);
            json_object_set_new(room, "enc", json_true());
        }
    } else if (strcmp(type, "m.room.canonical_alias") == 0 && !*key) {
        const char *alias = str_of(content, "alias");
        json_object_set_new(room, "alias", json_string(alias && strlen(alias) < 256 ? alias : ""));
    }
}

/* Whether user may moderate the room: a power level at least the level needed to kick
 * (m.room.power_levels; without that event the creator has 100 and others 0). */
static int is_moderator(json_t *room, const char *user)
{
    json_t *pl = obj_of(room, "pl");
    long long level = 0, need = 50;
    if (!pl) {
        const char *creator = str_of(room, "creator");
        return creator && strcmp(creator, user) == 0;
    }
    if (!level_of(json_object_get(obj_of(pl, "users"), user), &level)) level_of(json_object_get(pl, "users_default"), &level);
    level_of(json_object_get(pl, "kick"), &need);
    return level >= need;
}

/* A reply quotes the message it answers ("> <@bob:x> text" lines, a blank line); the command
 * is what follows (Client-Server API §"Fallbacks for rich replies"). */
static const char *strip_reply(json_t *content, const char *body)
{
    if (!obj_of(obj_of(content, "m.relates_to"), "m.in_reply_to") || strncmp(body, "> ", 2) != 0) return body;
    const char *p = body;
    while (strncmp(p, "> ", 2) == 0 || strncmp(p, ">\n", 2) == 0) {
        const char *nl = strchr(p, '\n');
        if (!nl) return body;
        p = nl + 1;
    }
    if (*p == '\n') p++;
    return p;
}

/* The text of an HTML link from `from` on (after href=): its target, its text with the five
 * entities the bot's HTML uses resolved. Returns the end of the link, or NULL. */
static const char *html_link(const char *from, char *href, size_t hlen, char *text, size_t tlen)
{
    char quote = *from;
    if (quote != '"' && quote != '\'') return NULL;
    const char *end = strchr(from + 1, quote), *gt = end ? strchr(end, '>') : NULL;
    const char *close = gt ? strstr(gt, "</a>") : NULL;
    if (!close || (size_t)(end - from - 1) >= hlen) return NULL;
    snprintf(href, hlen, "%.*s", (int)(end - from - 1), from + 1);
    static const char *const ents[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}};
    size_t k = 0;
    for (const char *p = gt + 1; p < close && k + 1 < tlen;) {
        size_t e = 0;
        while (e < 5 && strncmp(p, ents[e][0], strlen(ents[e][0])) != 0) e++;
        if (e < 5) {
            text[k++] = ents[e][1][0];
            p += strlen(ents[e][0]);
        } else {
            text[k++] = *p++;
        }
    }
    text[k] = 0;
    return close + 4;
}

/* The body with each pilled name (Client-Server API §"User and room mentions": a link to
 * https://matrix.to/#/@user:server in formatted_body) replaced by the user id, in order; the
 * body itself when it has none. A rewritten body is kept in o until mx_sync_done(). */
static const char *unpill(mx_sync_out *o, json_t *content, const char *body)
{
    const char *html = str_of(content, "formatted_body"), *fmt = str_of(content, "format");
    if (!html || !fmt || strcmp(fmt, "org.matrix.custom.html") != 0 || !strstr(html, "https://matrix.to/#/") ||
        strlen(body) > 4096)
        return body;
    char out[4096 + 8 * (MX_ID_MAX + 1)], href[1024], name[512], user[MX_ID_MAX + 1];
    size_t used = 0;
    const char *rest = body, *p = html;
    int pills = 0;
    while ((p = strstr(p, "href=")) && pills < 8) {
        p = html_link(p + 5, href, sizeof href, name, sizeof name);
        if (!p) break;
        const char *at = name[0] && matrix_to_user(href, strlen(href), user, sizeof user) ? strstr(rest, name) : NULL;
        if (!at) continue;
        used += (size_t)snprintf(out + used, sizeof out - used, "%.*s%s", (int)(at - rest), rest, user);
        rest = at + strlen(name);
        pills++;
    }
    if (!pills) return body;
    snprintf(out + used, sizeof out - used, "%s", rest);
    if (!o->keep) o->keep = json_array();
    json_t *kept = json_string(out);
    if (!kept) return body;
    json_array_append_new(o->keep, kept);
    return json_string_value(kept);
}

/* The index of the timeline event in which the bot joined the room (-1: none): what came
 * before it happened before the bot was there. */
static int own_join(mx_state *s, json_t *events)
{
    int at = -1;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        const char *type = str_of(e, "type"), *key = str_of(e, "state_key");
        if (!type || !key || strcmp(type, "m.room.member") != 0 || strcmp(key, s->me) != 0) continue;
        const char *ms = str_of(obj_of(e, "content"), "membership");
        const char *before = str_of(obj_of(obj_of(e, "unsigned"), "prev_content"), "membership");
        if (ms && strcmp(ms, "join") == 0 && !(before && strcmp(before, "join") == 0)) at = (int)i;
    }
    return at;
}

static void read_timeline_event(mx_state *s, const char *room_id, json_t *room, json_t *e, int keep, mx_sync_out *o)
{
    const char *type = str_of(e, "type"), *sender = str_of(e, "sender");
    json_t *content = obj_of(e, "content");
    o->events_seen++;
    if (!type || !id_ok(sender) || !content) return;
    if (str_of(e, "state_key")) {
        const char *key = str_of(e, "state_key");
        const char *before = str_of(obj_of(obj_of(room, "members"), key), "ms");
        char was[16] = "";
        if (before) snprintf(was, sizeof was, "%s", before);
        apply_state(s, room_id, room, e);
        if (!keep || strcmp(type, "m.room.member") != 0 || !id_ok(key) || strcmp(key, s->me) == 0) return;
        const char *ms = str_of(content, "membership");
        if (!ms) return;
        int joined = strcmp(ms, "join") == 0, gone = strcmp(ms, "leave") == 0 || strcmp(ms, "ban") == 0;
        const char *dm = mx_state_dm_user(s, room_id);
        if (joined && strcmp(was, "join") != 0 && !dm)
            add_event(o, (adapter_event){.kind = ADAPTER_JOIN, .room = room_id, .sender = key});
        if (gone && strcmp(was, "join") == 0) {
            if (dm && strcmp(dm, key) == 0) forget_dm_room(s, room_id); /* a new chat is made when needed */
            else if (!dm) add_event(o, (adapter_event){.kind = ADAPTER_LEAVE, .room = room_id, .sender = key});
        }
        return;
    }
    if (keep && strcmp(type, "m.room.encrypted") == 0 && strcmp(sender, s->me) != 0 && s->hooks.decrypt) {
        json_t *dec = s->hooks.decrypt(s->hooks.ctx, room_id, e);
        const char *dtype = str_of(dec, "type");
        json_t *dcontent = obj_of(dec, "content");
        if (dtype && dcontent) {
            json_t *plain = json_copy(e); /* the same event, with the decrypted type and content */
            json_object_set(plain, "type", json_object_get(dec, "type"));
            json_object_set(plain, "content", dcontent);
            if (!o->keep) o->keep = json_array();
            json_array_append_new(o->keep, plain);
            o->events_seen--;
            read_timeline_event(s, room_id, room, plain, keep, o);
        }
        json_decref(dec);
        return;
    }
    if (!keep || strcmp(type, "m.room.message") != 0 || strcmp(sender, s->me) == 0) return;
    const char *msgtype = str_of(content, "msgtype"), *body = str_of(content, "body");
    const char *rel = str_of(obj_of(content, "m.relates_to"), "rel_type");
    if (!msgtype || strcmp(msgtype, "m.text") != 0 || !body) return; /* notices (other bots), emotes, files */
    if (rel && strcmp(rel, "m.replace") == 0) return;                 /* edits */
    const char *dm = mx_state_dm_user(s, room_id);
    adapter_event ev = {.kind = ADAPTER_MESSAGE, .room = dm ? NULL : room_id, .sender = sender,
                        .text = unpill(o, content, strip_reply(content, body)), .is_private = dm != NULL};
    ev.moderator = !dm && is_moderator(room, sender);
    add_event(o, ev);
}

static void read_joined(mx_state *s, const char *room_id, json_t *jr, json_t *gap, int skip_timeline, mx_sync_out *o)
{
    json_t *room = room_of(s, room_id);
    json_t *state = arr_of(obj_of(jr, "state"), "events");
    for (size_t i = 0; i < json_array_size(state); i++) apply_state(s, room_id, room, json_array_get(state, i));
    json_t *tl = obj_of(jr, "timeline");
    json_t *events = arr_of(tl, "events");
    json_t *all = json_array(); /* the skipped events, then the timeline */
    if (json_is_array(gap)) json_array_extend(all, gap);
    else if (json_is_true(json_object_get(tl, "limited")) && !skip_timeline) o->limited++;
    if (events) json_array_extend(all, events);
    int from = own_join(s, all) + 1;
    for (size_t i = 0; i < json_array_size(all); i++)
        read_timeline_event(s, room_id, room, json_array_get(all, i), !skip_timeline && (int)i >= from, o);
    json_decref(all);
}

static void read_invite(mx_state *s, const char *room_id, json_t *ir, mx_sync_out *o)
{
    json_t *events = arr_of(obj_of(ir, "invite_state"), "events");
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        const char *type = str_of(e, "type"), *key = str_of(e, "state_key"), *sender = str_of(e, "sender");
        json_t *content = obj_of(e, "content");
        const char *ms = str_of(content, "membership");
        if (!type || strcmp(type, "m.room.member") != 0 || !key || strcmp(key, s->me) != 0 || !ms ||
            strcmp(ms, "invite") != 0)
            continue;
        if (!mx_state_invite_allowed(s, sender)) {
            add_id(&o->decline, &o->ndecline, &o->cdecline, room_id);
            return;
        }
        add_id(&o->join, &o->njoin, &o->cjoin, room_id);
        for (size_t k = 0; k < json_array_size(events); k++) { /* stripped state may say it already */
            json_t *st = json_array_get(events, k);
            const char *kind = str_of(st, "type"), *skey = str_of(st, "state_key");
            if (kind && strcmp(kind, "m.room.encryption") == 0 && skey && !*skey && str_of(obj_of(st, "content"), "algorithm"))
                learn_encrypted(s, room_id);
        }
        if (json_is_true(json_object_get(content, "is_direct"))) {
            mx_state_set_dm(s, sender, room_id);
            o->direct_changed = 1;
        }
        return;
    }
}

/* Whether the text has "limited" set to true anywhere: most answers do not, and then they need
 * not be parsed twice. */
static int says_limited(const char *p, size_t len)
{
    static const char key[] = "\"limited\"";
    const char *end = p + len;
    while ((p = memmem(p, (size_t)(end - p), key, sizeof key - 1))) {
        p += sizeof key - 1;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
        if (p < end && *p == ':') p++;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
        if (end - p >= 4 && memcmp(p, "true", 4) == 0) return 1;
    }
    return 0;
}

char *mx_sync_gaps(const char *body, size_t len, int *count)
{
    *count = 0;
    if (!says_limited(body, len)) return strdup("[]");
    json_t *root = json_loadb(body, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return NULL;
    }
    json_t *list = json_array();
    const char *id;
    json_t *r;
    json_object_foreach(obj_of(obj_of(root, "rooms"), "join"), id, r) {
        json_t *tl = obj_of(r, "timeline");
        const char *prev = str_of(tl, "prev_batch");
        if (id_ok(id) && json_is_true(json_object_get(tl, "limited")) && prev && *prev && strlen(prev) <= MX_BATCH_MAX) {
            json_array_append_new(list, json_pack("[s, s]", id, prev));
            (*count)++;
        }
    }
    char *text = json_dumps(list, JSON_COMPACT);
    json_decref(list);
    json_decref(root);
    return text;
}

int mx_sync_read(mx_state *s, const char *body, size_t len, const char *gaps_json, int skip_timeline, mx_sync_out *o,
                 char *err, size_t errlen)
{
    json_error_t jerr;
    memset(o, 0, sizeof *o);
    json_t *root = json_loadb(body, len, 0, &jerr);
    if (!root) {
        snprintf(err, errlen, "the sync answer is not JSON (%s at byte %d)", jerr.text, jerr.position);
        return -1;
    }
    const char *next = str_of(root, "next_batch");
    if (!json_is_object(root) || !next || !*next || strlen(next) > MX_BATCH_MAX) {
        snprintf(err, errlen, "the sync answer has no usable next_batch");
        json_decref(root);
        return -1;
    }
    o->root = root;
    o->next_batch = next;
    if (s->hooks.answer) s->hooks.answer(s->hooks.ctx, root);
    json_t *gaps = gaps_json ? json_loads(gaps_json, 0, NULL) : NULL;
    json_t *ad = arr_of(obj_of(root, "account_data"), "events");
    for (size_t i = 0; i < json_array_size(ad); i++) {
        json_t *e = json_array_get(ad, i);
        const char *type = str_of(e, "type");
        json_t *content = obj_of(e, "content");
        if (!type || strcmp(type, "m.direct") != 0 || !content) continue;
        const char *user;
        json_t *rooms;
        json_object_foreach(content, user, rooms) {
            json_t *last = json_is_array(rooms) ? json_array_get(rooms, json_array_size(rooms) - 1) : NULL;
            if (json_is_string(last)) mx_state_set_dm(s, user, json_string_value(last));
        }
    }
    json_t *rooms = obj_of(root, "rooms");
    const char *id;
    json_t *r;
    json_object_foreach(obj_of(rooms, "join"), id, r) {
        if (id_ok(id) && json_is_object(r)) read_joined(s, id, r, json_object_get(gaps, id), skip_timeline, o);
    }
    json_object_foreach(obj_of(rooms, "invite"), id, r) {
        if (id_ok(id) && json_is_object(r) && !mx_state_joined(s, id)) read_invite(s, id, r, o);
    }
    json_object_foreach(obj_of(rooms, "leave"), id, r) {
        if (!id_ok(id)) continue;
        json_object_del(s->rooms, id);
        if (json_is_false(json_object_get(s->enc, id))) json_object_del(s->enc, id); /* known again on return */
        if (mx_state_dm_user(s, id)) {
            forget_dm_room(s, id);
            o->direct_changed = 1;
        } else {
            add_event(o, (adapter_event){.kind = ADAPTER_GONE, .room = id, .sender = s->me}); /* left, kicked or banned */
        }
    }
    o->gaps = gaps; /* the events hold strings of it */
    return 0;
}

void mx_sync_done(mx_sync_out *o)
{
    free(o->ev);
    free(o->join);
    free(o->decline);
    json_decref(o->root);
    json_decref(o->gaps);
    json_decref(o->keep);
    memset(o, 0, sizeof *o);
}
