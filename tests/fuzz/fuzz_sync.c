/* fuzz_sync.c — libFuzzer target for the reading of Matrix /sync answers (mx_sync_read) and the
 * room state it keeps. The first byte chooses options (skip the timeline, whose invites count),
 * the rest is the answer; it is read twice into the same state, as the second answer of a
 * session would be. Whatever the bytes, an accepted answer must give well-formed events: a
 * sender, text for every message, no room for a private one, ids the core can store; and the
 * state must answer names, direct chats, encryption and whom a text names without crashing. */
#include <jansson.h>
#include <string.h>

#include "fuzz_init.h"
#include "mx_sync.h"

static void check(mx_state *st, const mx_sync_out *o)
{
    char buf[600];
    if (!o->next_batch || !*o->next_batch) abort();
    for (int i = 0; i < o->nev; i++) {
        const adapter_event *e = &o->ev[i];
        if (!e->sender || !*e->sender || strlen(e->sender) > 255) abort();
        if (e->kind == ADAPTER_MESSAGE) {
            if (!e->text) abort();
            if (e->is_private && e->room) abort();
            if (!e->is_private && !e->room) abort();
            /* whoever a message names (!standings NAME, a pill made into an id) is an id */
            char who[300];
            const char *u = mx_state_find_user(st, e->room, e->text, who, sizeof who);
            if (u && (u != who || u[0] != '@' || !strchr(u, ':') || strlen(u) > 255)) abort();
        } else if (e->kind == ADAPTER_JOIN || e->kind == ADAPTER_LEAVE || e->kind == ADAPTER_GONE) {
            if (!e->room || e->is_private) abort();
            if ((e->kind == ADAPTER_GONE) != !strcmp(e->sender, "@cardroom:example.org")) abort(); /* the bot's own */
        } else {
            abort();
        }
        int enc = mx_state_encryption(st, e->room);
        if (enc != MX_ENC_UNKNOWN && enc != MX_ENC_NO && enc != MX_ENC_YES) abort();
        if (enc == MX_ENC_UNKNOWN && e->room && mx_state_members_known(st, e->room)) abort();
        const char *n = mx_state_display_name(st, e->room, e->sender, buf, sizeof buf);
        if (n && strlen(n) >= sizeof buf) abort();
        mx_state_room_name(st, e->room, buf, sizeof buf);
    }
    for (int i = 0; i < o->njoin; i++)
        for (int k = 0; k < o->ndecline; k++)
            if (strcmp(o->join[i], o->decline[k]) == 0) abort(); /* one answer per invite */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static const char *const invites[] = {"", "*", "@alice:example.org, other.org", "example.org"};
    mx_state *st = mx_state_new("@cardroom:example.org", invites[data[0] & 3]);
    if (!st) abort();
    char err[512];
    for (int round = 0; round < 2; round++) {
        mx_sync_out o;
        if (mx_sync_read(st, (const char *)data + 1, size - 1, NULL, round == 0 && (data[0] & 4), &o, err, sizeof err) == 0) {
            check(st, &o);
            mx_sync_done(&o);
        } else if (!err[0]) {
            abort(); /* a refusal says why */
        }
    }
    /* the gaps of the answer are well-formed pairs */
    int ngaps = 0;
    char *gaps = mx_sync_gaps((const char *)data + 1, size - 1, &ngaps);
    if (gaps) {
        json_t *g = json_loads(gaps, 0, NULL);
        if (!json_is_array(g) || (int)json_array_size(g) != ngaps) abort();
        size_t i;
        json_t *pair;
        json_array_foreach(g, i, pair) {
            if (!json_is_string(json_array_get(pair, 0)) || !json_is_string(json_array_get(pair, 1))) abort();
        }
        json_decref(g);
        free(gaps);
    }
    /* the direct chats survive a round trip through m.direct */
    char *direct = mx_state_direct_json(st);
    if (!direct) abort();
    mx_state *copy = mx_state_new("@cardroom:example.org", "");
    mx_state_read_direct(copy, direct, strlen(direct));
    char *again = mx_state_direct_json(copy);
    json_t *a = json_loads(direct, 0, NULL), *b = json_loads(again, 0, NULL);
    if (!a || !b || !json_equal(a, b)) abort();
    json_decref(a);
    json_decref(b);
    free(direct);
    free(again);
    mx_state_free(copy);
    mx_state_free(st);
    return 0;
}
