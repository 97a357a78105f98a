/* table.c — the table core (table.h): seats, people and computer players, away and back, the
 * journal and its rebuild, timers, messages and standings, for whatever game the table hosts
 * (game.h).
 *
 * Every change goes through exec_entry() as a journal entry, live or on a rebuild, so a table
 * rebuilt from its journal is the table that was running. The core's own entries are
 *   join SEAT USER [ORIGIN] | bot SEAT | leave SEAT | away SEAT | back SEAT | rename SEAT USER | abort
 * and every other entry is the game's (game->entry). A player who leaves the room is not
 * away at once: his seat waits (gone_at, runtime only) and a timer makes the entry. A table
 * whose players are all away pauses (table_paused, derived from the seats, so a rebuild finds
 * it paused again without an entry of its own). Commands from people are checked first,
 * so that a refusal says why in words and leaves no entry: seats, `set`, `start` and what one
 * may see (`hand`, `table`, `last`) here, asking the game what it alone knows; moves and the
 * game's own commands in game->command, which gives one entry or a refusal. Messages are only
 * collected when an out is given: a rebuild says nothing.
 *
 * A game reaches the core only through the game_host made for each call (host_of): its
 * services are the static host_* functions at the end of the out and names sections below. */
#include "table.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game.h"

#define NAME_MAX_LEN 320

/* ---- out: entries, messages, scores ---- */

static void *grow(void *p, int *cap, int need, size_t size)
{
    if (need <= *cap) return p;
    int n = *cap ? *cap * 2 : 8;
    while (n < need) n *= 2;
    void *q = realloc(p, (size_t)n * size);
    if (!q) abort(); /* out of memory: nothing sensible is left to do */
    *cap = n;
    return q;
}

void table_out_clear(table_out *o)
{
    for (int i = 0; i < o->nentries; i++) free(o->entries[i]);
    for (int i = 0; i < o->nmsgs; i++) free(o->msgs[i].text);
    free(o->entries);
    free(o->seqs);
    free(o->msgs);
    free(o->scores);
    memset(o, 0, sizeof *o);
}

static void out_entry(table_out *o, int64_t seq, const char *entry)
{
    int cap = o->centries;
    o->entries = grow(o->entries, &cap, o->nentries + 1, sizeof *o->entries);
    cap = o->centries;
    o->seqs = grow(o->seqs, &cap, o->nentries + 1, sizeof *o->seqs);
    o->centries = cap;
    o->entries[o->nentries] = strdup(entry);
    if (!o->entries[o->nentries]) abort();
    o->seqs[o->nentries++] = seq;
}

/* Adds text for user ("" = the room). Messages to one destination in one batch are joined
 * into one message, line after line: fewer messages, same order for each reader. head starts
 * a new message (NULL: none); a joined line goes without it. */
static void out_text(table_out *o, const char *user, const char *mention, const char *head, const char *text)
{
    if (!o || !text || !*text) return;
    for (int i = 0; i < o->nmsgs; i++) {
        table_msg *m = &o->msgs[i];
        if (strcmp(m->user, user) != 0) continue;
        size_t a = strlen(m->text), b = strlen(text);
        char *t = realloc(m->text, a + b + 2);
        if (!t) abort();
        t[a] = '\n';
        memcpy(t + a + 1, text, b + 1);
        m->text = t;
        if (!m->mention[0] && mention) snprintf(m->mention, sizeof m->mention, "%s", mention);
        return;
    }
    o->msgs = grow(o->msgs, &o->cmsgs, o->nmsgs + 1, sizeof *o->msgs);
    table_msg *m = &o->msgs[o->nmsgs++];
    snprintf(m->user, sizeof m->user, "%s", user);
    snprintf(m->mention, sizeof m->mention, "%s", mention ? mention : "");
    size_t a = head ? strlen(head) : 0, b = strlen(text);
    m->text = malloc(a + b + 1);
    if (!m->text) abort();
    memcpy(m->text, head ? head : "", a);
    memcpy(m->text + a, text, b + 1);
}

static void out_vroom(table_out *o, const char *mention, const char *fmt, va_list ap)
{
    char line[TABLE_TEXT_MAX];
    if (!o) return;
    vsnprintf(line, sizeof line, fmt, ap);
    out_text(o, "", mention, NULL, line);
}

static void out_room(table_out *o, const char *mention, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void out_room(table_out *o, const char *mention, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    out_vroom(o, mention, fmt, ap);
    va_end(ap);
}

/* A private message names the room and table it belongs to, once at its start. */
static void out_private(table_out *o, const table_env *env, const table *t, const char *user, const char *text)
{
    char head[TABLE_ROOM_MAX + 64], room[TABLE_ROOM_MAX];
    const char *label = t->room;
    int seat = user[0] ? table_seat_of(t, user, NULL) : -1;
    if (!o || !user[0] || (seat >= 0 && t->absent[seat])) return; /* the name may be another's now */
    if (env && env->room_name && env->room_name(env->ctx, t->room, room, sizeof room)) label = room;
    snprintf(head, sizeof head, "[%s · table %" PRId64 "] ", label, t->id);
    out_text(o, user, NULL, head, text);
}

static void out_score(table_out *o, const store_standing *d)
{
    if (!o) return;
    o->scores = grow(o->scores, &o->cscores, o->nscores + 1, sizeof *o->scores);
    o->scores[o->nscores++].delta = *d;
}

/* ---- names ---- */

static const char *user_name(const table_env *env, const table *t, const char *user, char *buf, size_t len)
{
    if (env && env->display_name && env->display_name(env->ctx, t->room, user, buf, len)) return buf;
    snprintf(buf, len, "%s", user);
    return buf;
}

/* Seats at the table, as its game and options have it (none before it has a game). */
static int nseats(const table *t) { return t->game ? t->game->seats(t->game_state.bytes) : 0; }

static const char *seat_word(const table *t, int s) { return t->game->seat_name(t->game_state.bytes, s); }

/* "alice (South)", "computer East", "alice (South, away)"; "alice (seat 1)" and "computer seat 2"
 * at ContractGrid: the computer players are told apart by their seats. */
static const char *seat_label(const table *t, const table_env *env, int s, char *buf, size_t len)
{
    char who[TABLE_USER_MAX];
    const table_seat *p = &t->seat[s];
    if (p->user[0])
        snprintf(buf, len, "%s (%s%s)", user_name(env, t, p->user, who, sizeof who), seat_word(t, s),
                 p->away ? ", away" : "");
    else if (p->bot)
        snprintf(buf, len, "computer %s", seat_word(t, s));
    else
        snprintf(buf, len, "%s", seat_word(t, s));
    return buf;
}

int table_seat_of(const table *t, const char *user, const char *origin)
{
    for (int s = 0; s < nseats(t); s++) {
        const table_seat *p = &t->seat[s];
        if (!p->user[0] || strcmp(p->user, user) != 0) continue;
        if (!origin || !origin[0] || !p->origin[0] || strcmp(p->origin, origin) == 0) return s;
    }
    return -1;
}

int table_card_pack(const table *t)
{
    return t->game && t->game->card_pack ? t->game->card_pack(t->game_state.bytes) : CARD_COUNT;
}

/* A hand is being played: someone may be to act. */
static int hand_in_play(const table *t)
{
    return t->started && !t->over && t->game->in_hand(t->game_state.bytes);
}

void table_init(table *t, int64_t id, const char *net, const char *room, const char *creator)
{
    memset(t, 0, sizeof *t);
    t->id = id;
    snprintf(t->net, sizeof t->net, "%s", net);
    snprintf(t->room, sizeof t->room, "%s", room);
    snprintf(t->creator, sizeof t->creator, "%s", creator);
    t->turn_seat = TABLE_NO_SEAT;
}

int table_set_game(table *t, const char *game, const cfg *config)
{
    const table_game *g = game_find(game);
    if (!g) return -1;
    t->game = g;
    memset(&t->game_state, 0, sizeof t->game_state);
    g->init(t->game_state.bytes, config);
    return 0;
}

/* ---- the host: what a game may ask of the core during one call ---- */

typedef struct {
    game_host h; /* first: the services find the rest from it */
    table *t;
    const table_env *env;
    table_out *out;
    int rebuilding; /* searches run at once */
} host;

static int exec_live(table *t, const table_env *env, table_out *out, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reply(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void vreply(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                   const char *fmt, va_list ap);
static void vrefuse_privately(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                              const char *fmt, va_list ap);

static void host_say(const game_host *h, const char *mention, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    out_vroom(((const host *)h)->out, mention, fmt, ap);
    va_end(ap);
}

static void host_say_line(const game_host *h, int to_act, const char *const *pieces, int n)
{
    static const char dash[] = " \xE2\x80\x94 ";
    const host *x = (const host *)h;
    size_t len = 0, used = 0;
    if (!x->out) return;
    for (int i = 0; i < n; i++) len += pieces[i] ? strlen(pieces[i]) + sizeof dash : 0;
    char *line = malloc(len + 1);
    if (!line) abort();
    line[0] = 0;
    for (int i = 0; i < n; i++)
        if (pieces[i] && pieces[i][0])
            used += (size_t)snprintf(line + used, len + 1 - used, "%s%s", used ? dash : "", pieces[i]);
    const table_seat *p = to_act >= 0 && to_act < nseats(x->t) ? &x->t->seat[to_act] : NULL;
    out_text(x->out, "", p && !table_seat_computer(p) ? p->user : NULL, NULL, line);
    free(line);
}

static void host_tell(const game_host *h, const char *user, const char *text)
{
    const host *x = (const host *)h;
    out_private(x->out, x->env, x->t, user, text);
}

static void host_reply(const game_host *h, const char *user, int is_private, const char *fmt, ...)
{
    const host *x = (const host *)h;
    va_list ap;
    va_start(ap, fmt);
    vreply(x->out, x->t, x->env, user, is_private, fmt, ap);
    va_end(ap);
}

static void host_refuse(const game_host *h, const char *user, int is_private, const char *fmt, ...)
{
    const host *x = (const host *)h;
    va_list ap;
    va_start(ap, fmt);
    vrefuse_privately(x->out, x->t, x->env, user, is_private, fmt, ap);
    va_end(ap);
}

static const char *host_seat_label(const game_host *h, int s, char *buf, size_t len)
{
    const host *x = (const host *)h;
    return seat_label(x->t, x->env, s, buf, len);
}

static int host_search(const game_host *h, table_question *q, table_search fn)
{
    const host *x = (const host *)h;
    if (!x->rebuilding && x->env->search) return x->env->search(x->env->ctx, x->t, q, fn);
    fn(q, x->env->judge);
    return 1;
}

static int host_notify(const game_host *h, const char *user)
{
    const host *x = (const host *)h;
    return !x->env->notify || x->env->notify(x->env->ctx, user);
}

static int host_seed(const game_host *h, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    const host *x = (const host *)h;
    if (!x->env->seed) return -1;
    return x->env->seed(x->env->ctx, x->t->id, hand_no, seed);
}

static int host_exec(const game_host *h, const char *fmt, ...)
{
    const host *x = (const host *)h;
    char entry[TABLE_ENTRY_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(entry, sizeof entry, fmt, ap);
    va_end(ap);
    return exec_live(x->t, x->env, x->out, "%s", entry);
}

static void host_add_score(const game_host *h, const store_standing *d) { out_score(((const host *)h)->out, d); }

static void host_begin(const game_host *h) { ((const host *)h)->t->started = 1; }

static void host_finish(const game_host *h)
{
    const host *x = (const host *)h;
    x->t->over = x->t->finished = 1;
    if (x->out) x->out->closed = "finished";
}

static void host_of(host *x, table *t, const table_env *env, table_out *out)
{
    x->h = (game_host){.t = t, .prefix = env->prefix, .private_how = env->private_how, .judge = env->judge,
                       .talk = out != NULL, .say = host_say, .say_line = host_say_line, .tell = host_tell,
                       .reply = host_reply, .refuse = host_refuse, .seat_label = host_seat_label,
                       .notify = host_notify, .search = host_search, .seed = host_seed, .exec = host_exec,
                       .add_score = host_add_score, .begin = host_begin, .finish = host_finish};
    x->t = t;
    x->env = env;
    x->out = out;
    x->rebuilding = 0;
}

/* ---- applying entries ---- */

static int parse_seat(const table *t, const char *s, int *seat)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v >= nseats(t)) return -1;
    *seat = (int)v;
    return 0;
}

static int is_word(const char *word, const char *const *words)
{
    for (int i = 0; words && words[i]; i++)
        if (strcmp(word, words[i]) == 0) return 1;
    return 0;
}

static const char *const seat_entries[] = {"join", "bot", "leave", "away", "back", "rename", NULL};

/* The core's own entries for seat. Returns 0 when applied, 1 when the entry does not apply. */
static int exec_seat_entry(table *t, const table_env *env, const char *word, int seat, const char *rest,
                           table_out *out)
{
    char label[NAME_MAX_LEN];
    table_seat *p = &t->seat[seat];
    int before_start = !t->started;
    if (strcmp(word, "join") == 0 && *rest) {
        int was_bot = p->bot;
        size_t len = strcspn(rest, " "); /* "USER" or "USER ORIGIN" */
        snprintf(p->user, sizeof p->user, "%.*s", (int)len, rest);
        snprintf(p->origin, sizeof p->origin, "%s", rest[len] ? rest + len + 1 : "");
        p->bot = p->away = 0;
        if (out) {
            seat_label(t, env, seat, label, sizeof label);
            if (t->started && was_bot) out_room(out, NULL, "%s takes over from the computer player.", label);
            else out_room(out, NULL, "%s sits down.", label);
            if (hand_in_play(t)) {
                char hand[TABLE_TEXT_MAX + 32], cards[TABLE_TEXT_MAX];
                t->game->cards(t->game_state.bytes, seat, cards, sizeof cards);
                snprintf(hand, sizeof hand, "You now play %s. Your hand: %s", seat_word(t, seat), cards);
                out_private(out, env, t, p->user, hand);
            }
        }
    } else if (strcmp(word, "bot") == 0) {
        p->user[0] = 0;
        p->bot = 1;
        p->away = 0;
        if (out) out_room(out, NULL, "%s sits down.", seat_label(t, env, seat, label, sizeof label));
    } else if (strcmp(word, "leave") == 0) {
        if (out) seat_label(t, env, seat, label, sizeof label);
        p->user[0] = 0;
        p->away = 0;
        p->bot = t->started;
        if (out)
            out_room(out, NULL, t->started ? "%s leaves; a computer player takes the seat." : "%s leaves.", label);
    } else if (strcmp(word, "away") == 0 && p->user[0]) {
        if (out) seat_label(t, env, seat, label, sizeof label);
        p->away = 1;
        if (out)
            out_room(out, NULL, "%s is away: a computer player plays for them until they say %sback.", label,
                     env->prefix);
    } else if (strcmp(word, "back") == 0 && p->away) {
        p->away = 0;
        if (out) out_room(out, NULL, "%s is back.", seat_label(t, env, seat, label, sizeof label));
    } else if (strcmp(word, "rename") == 0 && p->user[0] && *rest) {
        /* the same player: nothing to say, and a turn of his goes on as it was (no new prompt,
         * the same clock); seq moves past this entry next */
        snprintf(p->user, sizeof p->user, "%s", rest);
        if (t->prompted == t->seq) t->prompted++;
        if (t->turn_seq == t->seq) t->turn_seq++;
    } else {
        return 1;
    }
    t->gone_at[seat] = 0; /* whoever sits here now has not left the room */
    t->absent[seat] = 0;
    if (before_start && t->game->seat_changed && (!strcmp(word, "join") || !strcmp(word, "bot") || !strcmp(word, "leave")))
        t->game->seat_changed(t->game_state.bytes, seat);
    return 0;
}

/* Whether entry word applies to a closed table: only to one whose match was played to its end,
 * and only a game's own entry (the game takes those that speak of the finished match and
 * refuses the rest); nothing after an abort. */
static int applies_after_end(const table *t, const char *word)
{
    return t->finished && !is_word(word, seat_entries) && strcmp(word, "abort") != 0;
}

static int exec_entry(table *t, const table_env *env, const char *entry, int rebuilding, table_out *out, char *err,
                      size_t errlen)
{
    char word[16];
    int off = 0, seat = -1, rc;
    if (!t->game || sscanf(entry, "%15s%n", word, &off) != 1 || (t->over && !applies_after_end(t, word))) {
        snprintf(err, errlen, "entry \"%.60s\" does not apply to a closed table", entry);
        return -1;
    }
    const char *rest = entry + off;
    while (*rest == ' ') rest++;
    int own = is_word(word, seat_entries);
    if (own || is_word(word, t->game->seat_entries)) {
        if (parse_seat(t, rest, &seat) != 0) {
            snprintf(err, errlen, "entry \"%.60s\" names no seat", entry);
            return -1;
        }
        rest += 1;
        while (*rest == ' ') rest++;
    }
    if (own) {
        rc = exec_seat_entry(t, env, word, seat, rest, out);
    } else if (strcmp(word, "abort") == 0) {
        t->over = 1;
        if (out) {
            out_room(out, NULL, "The table is closed.");
            out->closed = "aborted";
        }
        rc = 0;
    } else {
        host x;
        host_of(&x, t, env, out);
        x.rebuilding = rebuilding;
        rc = t->game->entry(t->game_state.bytes, &x.h, word, seat, rest, rebuilding, err, errlen);
        if (rc < 0 || rc == TABLE_WAITS) return rc;
    }
    if (rc != 0) {
        snprintf(err, errlen, "entry \"%.60s\" does not apply", entry);
        return -1;
    }
    t->seq++;
    if (out) out_entry(out, t->seq, entry);
    return 0;
}

int table_exec(table *t, const table_env *env, const char *entry, table_out *out, char *err, size_t errlen)
{
    return exec_entry(t, env, entry, 0, out, err, errlen);
}

int table_replay(table *t, const table_env *env, char *const *entries, int n, char *err, size_t errlen)
{
    uint8_t *skip = NULL;
    int bad = 0;
    if (t->game && t->game->rebuild_skips && n > 0) {
        skip = calloc((size_t)n, 1);
        if (!skip) abort();
        t->game->rebuild_skips(entries, n, skip);
    }
    for (int i = 0; i < n && !bad; i++) {
        if (skip && skip[i]) {
            t->seq++; /* restated by a later entry */
            continue;
        }
        if (exec_entry(t, env, entries[i], 1, NULL, err, errlen) != 0) bad = i + 1;
    }
    free(skip);
    t->pause_told = (uint8_t)table_paused(t); /* the room heard it before the restart */
    return bad;
}

/* Executes an entry made live; a refusal here is a bug, reported to the room rather than lost.
 * An entry that waits for a search is not applied (the caller undoes the whole call). */
static int exec_live(table *t, const table_env *env, table_out *out, const char *fmt, ...)
{
    char entry[TABLE_ENTRY_MAX], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(entry, sizeof entry, fmt, ap);
    va_end(ap);
    int rc = table_exec(t, env, entry, out, err, sizeof err);
    if (rc == 0) return 1;
    if (rc != TABLE_WAITS) out_room(out, NULL, "Internal error: %s", err);
    return 0;
}

/* ---- commands from people ---- */

static void vreply(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                   const char *fmt, va_list ap)
{
    char text[TABLE_TEXT_MAX], who[TABLE_USER_MAX];
    vsnprintf(text, sizeof text, fmt, ap);
    if (is_private) out_private(out, env, t, user, text);
    else out_room(out, NULL, "%s: %s", user_name(env, t, user, who, sizeof who), text);
}

static void reply(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreply(out, t, env, user, is_private, fmt, ap);
    va_end(ap);
}

static void vrefuse_privately(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                              const char *fmt, va_list ap)
{
    char text[TABLE_TEXT_MAX];
    vsnprintf(text, sizeof text, fmt, ap);
    out_private(out, env, t, user, text);
    if (!is_private) reply(out, t, env, user, 0, "not allowed; I sent you the reason privately.");
}

static int free_seat(const table *t, int want, int for_bot)
{
    for (int k = 0; k < nseats(t); k++) {
        int s = want >= 0 ? want : k;
        const table_seat *p = &t->seat[s];
        int ok = t->started ? (!for_bot && p->bot && !p->user[0]) : (!p->user[0] && (!p->bot || (!for_bot && want >= 0)));
        if (ok) return s;
        if (want >= 0) return -1;
    }
    return -1;
}

/* "a ContractGrid table has seats 1 to 3: !join 1, !join 2 or !join 3." */
static void reply_seats(table *t, const table_env *env, const char *user, int is_private, const char *what,
                        table_out *out)
{
    char list[256];
    size_t used = 0;
    int n = nseats(t);
    list[0] = 0;
    for (int s = 1; s <= n && used < sizeof list; s++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s%s %d", s == 1 ? "" : s == n ? " or " : ", ",
                                 env->prefix, what, s);
    reply(out, t, env, user, is_private, "a %s table has seats 1 to %d: %s.", t->game->title, n, list);
}

static int cmd_join(table *t, const table_env *env, const char *user, const char *origin, int is_private, const cmd *c,
                    table_out *out)
{
    int mine = table_seat_of(t, user, NULL);
    if (mine >= 0) {
        reply(out, t, env, user, is_private, "you already sit at %s.", seat_word(t, mine));
        return 0;
    }
    if (c->seat >= nseats(t)) {
        reply_seats(t, env, user, is_private, "join", out);
        return 0;
    }
    int s = free_seat(t, c->seat, 0);
    if (s < 0) {
        if (c->seat >= 0) reply(out, t, env, user, is_private, "%s is taken.", seat_word(t, c->seat));
        else reply(out, t, env, user, is_private, t->started ? "no seat is free: the match is under way." : "the table is full.");
        return 0;
    }
    if (origin && origin[0]) return exec_live(t, env, out, "join %d %s %s", s, user, origin);
    return exec_live(t, env, out, "join %d %s", s, user);
}

static int cmd_bot(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    if (t->started) {
        reply(out, t, env, user, is_private, "the match has started; computer players are added before %sstart.", env->prefix);
        return 0;
    }
    if (c->seat >= nseats(t)) {
        reply_seats(t, env, user, is_private, "bot", out);
        return 0;
    }
    int s = free_seat(t, c->seat, 1);
    if (s < 0) {
        reply(out, t, env, user, is_private, c->seat >= 0 ? "%s is taken." : "the table is full.", seat_word(t, c->seat));
        return 0;
    }
    return exec_live(t, env, out, "bot %d", s);
}

static int may_manage(const table *t, const char *user, int moderator)
{
    return moderator || strcmp(t->creator, user) == 0 || table_seat_of(t, user, NULL) >= 0;
}

/* The checks `set` and `start` share: before the start, by someone who may manage the table.
 * Returns 1 to go on, or 0 after telling user why not (doing: "set options", "start it"). */
static int may_change(table *t, const table_env *env, const char *user, int moderator, int is_private,
                      const char *doing, table_out *out)
{
    if (t->started) {
        if (!strcmp(doing, "start it")) reply(out, t, env, user, is_private, "the %s is already under way.", t->game->match);
        else reply(out, t, env, user, is_private, "options are set before the %s starts.", t->game->match);
        return 0;
    }
    if (!may_manage(t, user, moderator)) {
        reply(out, t, env, user, is_private, "only players at the table, its creator or a moderator may %s.", doing);
        return 0;
    }
    return 1;
}

/* The seats the table would have after `set NAME VALUE` (an option may change how many: 304's
 * players): the entry applied, silently, to a copy of the table. */
static int seats_after_set(const table *t, const table_env *env, const char *name, const char *value)
{
    table copy = *t;
    host x;
    char rest[2 * 64 + 2], err[128];
    snprintf(rest, sizeof rest, "%s %s", name, value);
    host_of(&x, &copy, env, NULL);
    if (copy.game->entry(copy.game_state.bytes, &x.h, "set", -1, rest, 0, err, sizeof err) != 0) return nseats(t);
    return nseats(&copy);
}

static int cmd_set(table *t, const table_env *env, const char *user, int moderator, int is_private, const cmd *c,
                   table_out *out)
{
    char value[64], msg[TABLE_TEXT_MAX], typed[sizeof c->arg2];
    snprintf(typed, sizeof typed, "%s", c->arg2); /* option values are lower case */
    for (char *p = typed; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    if (!may_change(t, env, user, moderator, is_private, "set options", out)) return 0;
    if (t->game->option(t->game_state.bytes, c->arg, typed, value, sizeof value, msg, sizeof msg) != 0) {
        reply(out, t, env, user, is_private, "%s", msg);
        return 0;
    }
    int keep = seats_after_set(t, env, c->arg, value);
    for (int s = keep; s < nseats(t); s++)
        if (table_seat_taken(&t->seat[s])) {
            char label[NAME_MAX_LEN];
            reply(out, t, env, user, is_private, "%s sits at a seat the table would no longer have: with %s %s it has "
                  "seats 1 to %d, so seats %d %s %d must be empty first.", seat_label(t, env, s, label, sizeof label),
                  c->arg, value, keep, keep + 1, keep + 2 == nseats(t) ? "and" : "to", nseats(t));
            return 0;
        }
    return exec_live(t, env, out, "set %s %s", c->arg, value);
}

static int cmd_start(table *t, const table_env *env, const char *user, int moderator, int is_private, table_out *out)
{
    if (!may_change(t, env, user, moderator, is_private, "start it", out)) return 0;
    int n = 0, seats = nseats(t), applied = 0;
    for (int s = 0; s < seats; s++) n += table_seat_taken(&t->seat[s]);
    if (n < seats) {
        reply(out, t, env, user, is_private, "%d of %d seats %s taken: %sjoin or add computer players with %sbot.", n,
              seats, n == 1 ? "is" : "are", env->prefix, env->prefix);
        return 0;
    }
    if (t->game->start) {
        host x;
        host_of(&x, t, env, out);
        applied = t->game->start(t->game_state.bytes, &x.h, user, is_private);
        if (applied < 0) return 0;
    }
    return applied + exec_live(t, env, out, "start");
}

static void cmd_show(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    char text[2 * TABLE_TEXT_MAX];
    host x;
    int seat = table_seat_of(t, user, NULL);
    host_of(&x, t, env, out);
    if (c->kind == CMD_HAND) {
        if (seat < 0 || !t->game->view(t->game_state.bytes, &x.h, GAME_VIEW_HAND, seat, text, sizeof text)) {
            reply(out, t, env, user, is_private, "you hold no cards at this table.");
            return;
        }
        out_private(out, env, t, user, text);
        if (!is_private) reply(out, t, env, user, 0, "I sent you your hand privately.");
        return;
    }
    t->game->view(t->game_state.bytes, &x.h, c->kind == CMD_TABLE ? GAME_VIEW_TABLE : GAME_VIEW_LAST,
                  is_private ? seat : -1, text, sizeof text);
    if (is_private) out_private(out, env, t, user, text);
    else out_room(out, NULL, "%s", text);
}

/* A game command: one entry, after "back" if the player was away (acting ends it). */
static int cmd_game(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    char entry[TABLE_ENTRY_MAX];
    host x;
    int seat = table_seat_of(t, user, NULL), applied = 0;
    host_of(&x, t, env, out);
    if (!t->game->command(t->game_state.bytes, &x.h, user, seat, is_private, c, entry, sizeof entry)) return 0;
    if (seat >= 0 && t->seat[seat].away && !t->over) applied += exec_live(t, env, out, "back %d", seat);
    return applied + exec_live(t, env, out, "%s", entry);
}

int table_command(table *t, const table_env *env, const char *user, const char *origin, int moderator,
                  int is_private, const cmd *c, table_out *out)
{
    int seat = table_seat_of(t, user, NULL);
    if (!t->game) return 0;
    if (seat >= 0 && table_seat_of(t, user, origin) < 0) { /* another client under a seated name */
        if (!is_private && (c->kind == CMD_TABLE || c->kind == CMD_LAST)) {
            cmd_show(t, env, user, 0, c, out); /* what the whole room sees */
            return 0;
        }
        reply(out, t, env, user, is_private,
              "you are not the %s who sits at %s: that player sat down from another address. Use another nick to play.",
              user, seat_word(t, seat));
        return 0;
    }
    switch (c->kind) {
    case CMD_JOIN: return cmd_join(t, env, user, origin, is_private, c, out);
    case CMD_BOT: return cmd_bot(t, env, user, is_private, c, out);
    case CMD_LEAVE:
        if (seat < 0) {
            reply(out, t, env, user, is_private, "you are not seated at this table.");
            return 0;
        }
        return exec_live(t, env, out, "leave %d", seat);
    case CMD_BACK:
        if (seat < 0 || !t->seat[seat].away) {
            reply(out, t, env, user, is_private, seat < 0 ? "you are not seated at this table." : "you are not away.");
            return 0;
        }
        return exec_live(t, env, out, "back %d", seat);
    case CMD_ABORT:
        if (!moderator && strcmp(user, t->creator) != 0) {
            reply(out, t, env, user, is_private, "only the table's creator or a room moderator may abort it.");
            return 0;
        }
        return exec_live(t, env, out, "abort");
    case CMD_SET: return cmd_set(t, env, user, moderator, is_private, c, out);
    case CMD_START: return cmd_start(t, env, user, moderator, is_private, out);
    case CMD_HAND:
    case CMD_TABLE:
    case CMD_LAST: cmd_show(t, env, user, is_private, c, out); return 0;
    default: return cmd_game(t, env, user, is_private, c, out);
    }
}

/* ---- what happens by itself ---- */

int table_auto(table *t, const table_env *env, table_out *out)
{
    host x;
    if (!t->started || t->over || table_paused(t)) return 0;
    host_of(&x, t, env, out);
    return t->game->follow_up(t->game_state.bytes, &x.h);
}

int table_to_act(const table *t) { return t->game ? t->game->to_act(t->game_state.bytes) : -1; }

int table_computer_to_act(const table *t)
{
    if (!hand_in_play(t) || table_paused(t)) return -1;
    int s = table_to_act(t);
    if (s < 0 || !table_seat_computer(&t->seat[s])) return -1;
    return s;
}

table_think table_computer_question(const table *t, int seat, table_question *q)
{
    t->game->ask(t->game_state.bytes, seat, q);
    return t->game->think;
}

int table_computer_move(table *t, const table_env *env, int seat, int64_t seq, const table_question *q, int ok,
                        table_out *out)
{
    char entry[TABLE_ENTRY_MAX];
    if (seq != t->seq || table_computer_to_act(t) != seat) return 0;
    if (!t->game->answer(t->game_state.bytes, seat, q, ok, entry, sizeof entry)) return 0;
    return exec_live(t, env, out, "%s", entry);
}

/* ---- people who are not here ---- */

int table_paused(const table *t)
{
    int away = 0;
    if (!t->started || t->over) return 0;
    for (int s = 0; s < nseats(t); s++) {
        if (!table_seat_computer(&t->seat[s])) return 0;
        away |= t->seat[s].away;
    }
    return away;
}

/* Says once that the table pauses; said again only after it went on in between. */
static void tell_pause(table *t, const table_env *env, table_out *out)
{
    int paused = table_paused(t);
    if (paused && !t->pause_told)
        out_room(out, NULL, "Table %" PRId64 " pauses: all its players are away. It goes on when one of them says %sback.",
                 t->id, env->prefix);
    t->pause_told = (uint8_t)paused;
}

/* The player of seat has left the room for good: he leaves an unstarted table, and is away
 * from a running one. */
static void seat_gone(table *t, const table_env *env, int seat, table_out *out)
{
    t->gone_at[seat] = 0;
    if (!t->started) exec_live(t, env, out, "leave %d", seat);
    else if (!t->seat[seat].away) exec_live(t, env, out, "away %d", seat);
}

int table_player_left(table *t, const table_env *env, const char *user, const char *origin, int64_t now,
                      int64_t grace_ms, table_out *out)
{
    int seat = table_seat_of(t, user, origin);
    if (seat < 0 || t->over) return -1;
    if (grace_ms <= 0) seat_gone(t, env, seat, out);
    else if (!t->gone_at[seat] && !t->seat[seat].away) t->gone_at[seat] = now + grace_ms;
    t->absent[seat] = 1;
    return seat;
}

void table_player_seen(table *t, const char *user, const char *origin)
{
    int seat = table_seat_of(t, user, origin);
    if (seat >= 0) t->gone_at[seat] = t->absent[seat] = 0;
}

int table_player_renamed(table *t, const table_env *env, const char *user, const char *origin,
                         const char *renamed_to, table_out *out)
{
    int seat = table_seat_of(t, user, origin);
    if (seat < 0 || t->over || !renamed_to[0] || strchr(renamed_to, ' ') || !strcmp(user, renamed_to)) return 0;
    if (table_seat_of(t, renamed_to, NULL) >= 0) return 0; /* the name is another seat's: his stays */
    return exec_live(t, env, out, "rename %d %s", seat, renamed_to);
}

void table_prompt(table *t, const table_env *env, table_out *out)
{
    host x;
    tell_pause(t, env, out);
    if (t->prompted == t->seq || !hand_in_play(t)) return;
    int s = table_to_act(t);
    if (s < 0 || table_seat_computer(&t->seat[s])) return;
    t->prompted = t->seq;
    host_of(&x, t, env, out);
    t->game->prompt(t->game_state.bytes, &x.h, s);
}

/* ---- timers ---- */

static int human_to_act(const table *t)
{
    int s = hand_in_play(t) ? table_to_act(t) : -1;
    return s >= 0 && !table_seat_computer(&t->seat[s]) ? s : -1;
}

void table_note_turn(table *t, int64_t now)
{
    int s = human_to_act(t);
    uint8_t key = s < 0 ? TABLE_NO_SEAT : (uint8_t)s;
    if (key == t->turn_seat && t->turn_seq == t->seq) return;
    t->turn_since = now;
    t->reminded = 0;
    t->turn_seat = key;
    t->turn_seq = t->seq;
}

int64_t table_next_timer(const table *t, int64_t remind_ms, int64_t idle_ms, int64_t close_ms)
{
    int64_t next = INT64_MAX;
    if (t->over) return next;
    if (close_ms > 0) next = t->touched + close_ms;
    for (int s = 0; s < nseats(t); s++)
        if (t->gone_at[s] && t->gone_at[s] < next) next = t->gone_at[s];
    if (human_to_act(t) < 0) return next;
    if (remind_ms > 0 && !t->reminded && t->turn_since + remind_ms < next) next = t->turn_since + remind_ms;
    if (idle_ms > 0 && t->turn_since + idle_ms < next) next = t->turn_since + idle_ms;
    return next;
}

int64_t table_timers(table *t, const table_env *env, int64_t now, int64_t remind_ms, int64_t idle_ms,
                     int64_t close_ms, table_out *out)
{
    if (t->over) return INT64_MAX;
    if (close_ms > 0 && now - t->touched >= close_ms) {
        out_room(out, NULL, "Table %" PRId64 " closes: nobody played for a long time.", t->id);
        exec_live(t, env, out, "abort");
        if (out) out->closed = "idle";
        return INT64_MAX;
    }
    for (int s = 0; s < nseats(t); s++)
        if (t->gone_at[s] && now >= t->gone_at[s]) seat_gone(t, env, s, out);
    table_note_turn(t, now);
    int s = human_to_act(t);
    if (s >= 0 && idle_ms > 0 && now - t->turn_since >= idle_ms) {
        exec_live(t, env, out, "away %d", s);
        table_note_turn(t, now);
    } else if (s >= 0 && remind_ms > 0 && !t->reminded && now - t->turn_since >= remind_ms) {
        char text[TABLE_TEXT_MAX];
        host x;
        host_of(&x, t, env, out);
        if (t->game->turn_text(t->game_state.bytes, &x.h, text, sizeof text))
            out_room(out, t->seat[s].user, "Reminder — %s", text);
        t->reminded = 1;
    }
    return table_next_timer(t, remind_ms, idle_ms, close_ms);
}

size_t table_match_text(const table *t, const table_env *env, char *buf, size_t len)
{
    host x;
    host_of(&x, (table *)t, env, NULL); /* match_text only reads: it asks the host for seat labels */
    return t->game->match_text(t->game_state.bytes, &x.h, buf, len);
}

size_t table_rules_text(const table *t, const char *prefix, const char *rules_url, char *buf, size_t len)
{
    return t->game->rules_text(t->game_state.bytes, prefix, rules_url, buf, len);
}
