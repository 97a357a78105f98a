/* ratelimit.c — per-person token buckets (see ratelimit.h).
 *
 * Levels are kept in integer units: a command costs window_ms units and the bucket fills by
 * limit units each millisecond, so limit commands per window need no fractions. The keys live
 * in an open-addressing table (linear probing, FNV-1a). Nothing is ever deleted in place: when
 * the table is half full it is rebuilt, and a key whose bucket would be full again by now and
 * which is not paused is left out, since a fresh key is the same. So the table holds the people
 * active in about the last window, whatever the bot's age. */
#include "ratelimit.h"

#include <stdlib.h>
#include <string.h>

#define RL_FIRST_CAP 64

typedef struct {
    char *key;              /* NULL: a free slot */
    int64_t level;          /* units in the bucket as of `at` */
    int64_t at;
    int64_t paused_until;   /* 0: not paused */
} rl_entry;

struct ratelimit {
    rl_entry *slots;
    int cap, count;
};

ratelimit *rl_new(void) { return calloc(1, sizeof(ratelimit)); }

void rl_free(ratelimit *r)
{
    if (!r) return;
    for (int i = 0; i < r->cap; i++) free(r->slots[i].key);
    free(r->slots);
    free(r);
}

int rl_count(const ratelimit *r) { return r->count; }

static uint64_t rl_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int64_t rl_capacity(const rl_settings *s) { return (int64_t)s->limit * s->window_ms; }

/* The bucket as of now: refilled, and full again once a pause is over. */
static void rl_refill(rl_entry *e, int64_t now, const rl_settings *s)
{
    if (e->paused_until && e->paused_until <= now) {
        e->paused_until = 0;
        e->level = rl_capacity(s);
    }
    if (now > e->at) {
        int64_t room = rl_capacity(s) - e->level, gain = (now - e->at) * s->limit;
        e->level += gain < room ? gain : room;
        e->at = now;
    }
}

static rl_entry *rl_find(const ratelimit *r, const char *key)
{
    if (!r->cap) return NULL;
    for (uint64_t i = rl_hash(key) & (uint64_t)(r->cap - 1);; i = (i + 1) & (uint64_t)(r->cap - 1)) {
        rl_entry *e = &r->slots[i];
        if (!e->key || strcmp(e->key, key) == 0) return e;
    }
}

/* Rebuilds the table at least twice as large as the keys worth keeping need. */
static int rl_rebuild(ratelimit *r, int64_t now, const rl_settings *s)
{
    int keep = 0;
    for (int i = 0; i < r->cap; i++) {
        rl_entry *e = &r->slots[i];
        if (!e->key) continue;
        rl_refill(e, now, s);
        if (e->paused_until || e->level < rl_capacity(s)) keep++;
    }
    int cap = RL_FIRST_CAP;
    while (cap < 4 * (keep + 1)) cap *= 2;
    ratelimit fresh = {calloc((size_t)cap, sizeof(rl_entry)), cap, 0};
    if (!fresh.slots) return -1;
    for (int i = 0; i < r->cap; i++) {
        rl_entry *e = &r->slots[i];
        if (!e->key) continue;
        if (!e->paused_until && e->level >= rl_capacity(s)) {
            free(e->key);
            continue;
        }
        *rl_find(&fresh, e->key) = *e;
        fresh.count++;
    }
    free(r->slots);
    *r = fresh;
    return 0;
}

rl_verdict rl_take(ratelimit *r, const char *key, int64_t now, const rl_settings *s)
{
    rl_entry *e = rl_find(r, key);
    if (!e || !e->key) {
        if ((r->count + 1) * 2 > r->cap) {
            if (rl_rebuild(r, now, s) != 0) return RL_OK; /* out of memory: better unlimited than stuck */
            e = rl_find(r, key);
        }
        e->key = strdup(key);
        if (!e->key) return RL_OK;
        e->level = rl_capacity(s);
        e->at = now;
        e->paused_until = 0;
        r->count++;
    }
    if (e->paused_until > now) return RL_QUIET;
    rl_refill(e, now, s);
    if (e->level >= s->window_ms) {
        e->level -= s->window_ms;
        return RL_OK;
    }
    e->paused_until = now + s->pause_ms;
    return RL_WARN;
}
