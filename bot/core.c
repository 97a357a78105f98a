/* core.c — the bot between adapters, tables and the store (see core.h).
 *
 * Tables live in memory as a flat array of slots; the journal in the store is their truth.
 * Everything that changes a table happens inside a store transaction opened by core_batch()
 * or core_tick(), and what a table says (table_out) is written in that same transaction. If
 * the store fails, the core marks itself broken and refuses further work: memory may then be
 * ahead of the store, and only a restart (which rebuilds from the journal) is safe. The room
 * search is linear: a bot hosts hundreds of tables, not millions, and a strcmp per table per
 * event costs far less than the fsync of the transaction around it. */
#include "core.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "command.h"
#include "render.h"
#include "seed.h"
#include "table.h"
#include "workers.h"

#define CORE_MAX_NETS 4
#define FLUSH_CHUNK 256
#define MESSAGE_MAX 8192 /* text bytes one outbox message gathers at most (one Matrix event) */
#define DELIVERED_DELAY_MS 100 /* core_delivered() marks wait at most this long for a transaction */
#define TAKE_CHUNK 64
#define LEADERBOARD_ROWS 10

typedef struct {
    table t;
    int job_pending;
    int64_t job_seq;
    int dirty;
} slot;

/* What a transaction says to one destination (a room, or one person about one room's table),
 * gathered into one outbox message: its lines in the order they were said. A message only for
 * reading (notice) is not gathered with one that is not. */
typedef struct {
    char net[16], room[TABLE_ROOM_MAX], user[TABLE_USER_MAX], mention[TABLE_USER_MAX];
    int notice;
    char *text;
    size_t len, cap;
} said;

struct core {
    core_options o;
    adapter nets[CORE_MAX_NETS];
    int nnets;
    slot **slots;
    int nslots, cslots;
    workers *w;
    caps_solver *judge;
    table_env env;
    const char *env_net;      /* the net whose names the table_env callbacks resolve */
    work_job *held;           /* answers waiting for their thinking pause to pass */
    int nheld, cheld;
    int64_t *delivered;       /* reported by core_delivered(), not yet marked in the store */
    int ndelivered, cdelivered;
    int64_t delivered_since;  /* when the oldest of them was reported (ms) */
    int64_t *inflight;        /* outbox ids an adapter took with ADAPTER_QUEUED */
    int ninflight, cinflight;
    said *said;               /* the open transaction's messages, one per destination */
    int nsaid, csaid;
    int64_t next_deadline;
    int broken;
    core_stats stats;
};

/* ---- small helpers ---- */

static void logf_(core *c, core_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(core *c, core_log_level level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    if (!c->o.log) return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    c->o.log(c->o.log_ctx, level, line);
}

static int64_t now_ms(core *c)
{
    if (c->o.now_ms) return c->o.now_ms(c->o.clock_ctx);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *grow(void *p, int *cap, int need, size_t size)
{
    if (need <= *cap) return p;
    int n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = realloc(p, (size_t)n * size);
    if (!q) abort(); /* out of memory */
    *cap = n;
    return q;
}

static const adapter *net_of(core *c, const char *net)
{
    for (int i = 0; i < c->nnets; i++)
        if (strcmp(c->nets[i].net, net) == 0) return &c->nets[i];
    return NULL;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* ---- the table_env callbacks ---- */

static int env_seed(void *ctx, int64_t table_id, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    core *c = ctx;
    int rc = store_hand_seed(c->o.db, table_id, hand_no, seed);
    if (rc == 0) return 0;
    if (rc < 0) return -1;
    if (c->o.fixed_seed) seed_fixed(c->o.seed, table_id, hand_no, seed);
    else seed_random(seed);
    return store_hand_add(c->o.db, table_id, hand_no, seed);
}

static const char *env_name(void *ctx, const char *room, const char *user, char *buf, size_t len)
{
    core *c = ctx;
    const adapter *a = c->env_net ? net_of(c, c->env_net) : NULL;
    if (a && a->display_name && a->display_name(a->ctx, room, user, buf, len)) return buf;
    snprintf(buf, len, "%s", user);
    return buf;
}

static const char *env_room(void *ctx, const char *room, char *buf, size_t len)
{
    core *c = ctx;
    const adapter *a = c->env_net ? net_of(c, c->env_net) : NULL;
    return a && a->room_name ? a->room_name(a->ctx, room, buf, len) : NULL;
}

/* The store's namespace for a network's !notify choices (key: the user). */
static void notify_ns(const char *net, char *buf, size_t len) { snprintf(buf, len, "notify.%s", net); }

/* Whether user on net wants his hand privately on each turn: his !notify choice, else the
 * network's default. Returns 1, 0, or -1 if the store failed. */
static int wants_notice(core *c, const char *net, const char *user)
{
    char ns[32], *v = NULL;
    const adapter *a = net_of(c, net);
    notify_ns(net, ns, sizeof ns);
    int rc = store_kv_get(c->o.db, ns, user, &v);
    if (rc < 0) return -1;
    int on = rc == 0 ? strcmp(v, "on") == 0 : !(a && a->notify_off);
    free(v);
    return on;
}

static int env_notify(void *ctx, const char *user)
{
    core *c = ctx;
    return c->env_net && wants_notice(c, c->env_net, user) != 0; /* a failed read: no notice, never a crash */
}

static const table_env *env_for(core *c, const char *net)
{
    const adapter *a = net_of(c, net);
    c->env_net = net;
    c->env.private_how = a && a->private_how ? a->private_how : "in a private message";
    return &c->env;
}

/* ---- life ---- */

core *core_new(const core_options *o, char *err, size_t errlen)
{
    core *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->o = *o;
    c->judge = caps_solver_new(0);
    c->w = work_new(o->config->threads);
    if (!c->judge || !c->w) {
        snprintf(err, errlen, "cannot start the worker threads");
        core_free(c);
        return NULL;
    }
    c->env.judge = c->judge;
    c->env.seed = env_seed;
    c->env.display_name = env_name;
    c->env.room_name = env_room;
    c->env.notify = env_notify;
    c->env.ctx = c;
    c->env.prefix = o->config->prefix;
    c->next_deadline = INT64_MAX;
    return c;
}

void core_free(core *c)
{
    if (!c) return;
    work_free(c->w);
    caps_solver_free(c->judge);
    for (int i = 0; i < c->nslots; i++) free(c->slots[i]);
    free(c->slots);
    free(c->held);
    if (c->ndelivered && !c->broken && store_begin(c->o.db) == 0) {
        int rc = 0;
        for (int i = 0; i < c->ndelivered && rc == 0; i++) rc = store_outbox_done(c->o.db, c->delivered[i]);
        if (rc == 0) store_commit(c->o.db);
        else store_rollback(c->o.db);
    }
    free(c->delivered);
    free(c->inflight);
    for (int i = 0; i < c->nsaid; i++) free(c->said[i].text);
    free(c->said);
    free(c);
}

/* Marks the messages core_delivered() reported, inside the caller's transaction. */
static int write_delivered(core *c)
{
    for (int i = 0; i < c->ndelivered; i++)
        if (store_outbox_done(c->o.db, c->delivered[i]) != 0) return -1;
    c->ndelivered = 0;
    return 0;
}

static int is_delivered(const core *c, int64_t id)
{
    for (int i = 0; i < c->ndelivered; i++)
        if (c->delivered[i] == id) return 1;
    return 0;
}

int core_add_adapter(core *c, const adapter *a)
{
    if (c->nnets == CORE_MAX_NETS || net_of(c, a->net)) return -1;
    c->nets[c->nnets++] = *a;
    return 0;
}

/* ---- slots ---- */

static slot *slot_of_room(core *c, const char *net, const char *room)
{
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (!s->t.over && strcmp(s->t.room, room) == 0 && strcmp(s->t.net, net) == 0) return s;
    }
    return NULL;
}

static slot *slot_of_id(core *c, int64_t id)
{
    for (int i = 0; i < c->nslots; i++)
        if (c->slots[i]->t.id == id) return c->slots[i];
    return NULL;
}

/* The table a private message is about: where the sender sits, preferring one where it is his
 * turn, else the most recently created. */
static slot *slot_of_player(core *c, const char *net, const char *user)
{
    slot *best = NULL;
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        int seat = table_seat_of(&s->t, user);
        if (s->t.over || seat < 0 || strcmp(s->t.net, net) != 0) continue;
        if (table_to_act(&s->t) == seat && s->t.started) return s;
        best = s;
    }
    return best;
}

static slot *slot_add(core *c)
{
    slot *s = calloc(1, sizeof *s);
    if (!s) abort();
    c->slots = grow(c->slots, &c->cslots, c->nslots + 1, sizeof *c->slots);
    c->slots[c->nslots++] = s;
    return s;
}

static void slots_sweep(core *c)
{
    int k = 0;
    for (int i = 0; i < c->nslots; i++) {
        if (c->slots[i]->t.over && !c->slots[i]->job_pending) free(c->slots[i]);
        else c->slots[k++] = c->slots[i];
    }
    c->nslots = k;
}

/* ---- writing what happened ----
 * Everything a transaction says to one destination goes out as one message (on Matrix, one
 * event: a homeserver's rate limit counts events): say() gathers the text per destination, in
 * the order it was said, and write_said() queues the messages just before the commit, rooms
 * first. A reader's lines keep their order; what two destinations read is not ordered between
 * them anyway. The player a message mentions is the last one mentioned
 * (the one whose turn it is now). A message never grows past MESSAGE_MAX: the text after that
 * starts another one. */

/* notice: a private message only for reading (store_msg). */
static int say(core *c, const char *net, const char *room, const char *user, const char *mention, int notice,
               const char *text)
{
    room = room ? room : "";
    user = user ? user : "";
    size_t n = strlen(text);
    said *m = NULL;
    for (int i = c->nsaid - 1; i >= 0; i--) { /* the destination's latest message, if it has room */
        said *x = &c->said[i];
        if (strcmp(x->net, net) != 0 || strcmp(x->room, room) != 0 || strcmp(x->user, user) != 0) continue;
        if (x->notice == notice && x->len + 1 + n <= MESSAGE_MAX) m = x;
        break;
    }
    if (!m) {
        c->said = grow(c->said, &c->csaid, c->nsaid + 1, sizeof *c->said);
        m = &c->said[c->nsaid++];
        memset(m, 0, sizeof *m);
        snprintf(m->net, sizeof m->net, "%s", net);
        snprintf(m->room, sizeof m->room, "%s", room);
        snprintf(m->user, sizeof m->user, "%s", user);
        m->notice = notice;
    }
    size_t need = m->len + (m->len ? 1 : 0) + n + 1;
    if (need > m->cap) {
        m->cap = need > 2 * m->cap ? need : 2 * m->cap;
        m->text = realloc(m->text, m->cap);
        if (!m->text) abort();
    }
    if (m->len) m->text[m->len++] = '\n';
    memcpy(m->text + m->len, text, n + 1);
    m->len += n;
    if (mention && *mention) snprintf(m->mention, sizeof m->mention, "%s", mention);
    return 0;
}

static void said_clear(core *c)
{
    for (int i = 0; i < c->nsaid; i++) free(c->said[i].text);
    c->nsaid = 0;
}

/* Queues what the transaction said (inside it): what the rooms are told first, then the
 * private messages, which follow from it (a player's cards after the room's new hand). */
static int write_said(core *c)
{
    int rc = 0;
    for (int private = 0; private < 2; private++)
        for (int i = 0; i < c->nsaid && rc == 0; i++) {
            said *m = &c->said[i];
            if ((m->user[0] != 0) != private) continue;
            rc = store_outbox_add(c->o.db, m->net, m->room, m->user, m->mention, m->notice, m->text, NULL);
            c->stats.messages += rc == 0;
        }
    said_clear(c);
    return rc;
}

static int write_out(core *c, slot *s, table_out *o)
{
    table *t = &s->t;
    int64_t now = now_ms(c);
    for (int i = 0; i < o->nentries; i++) {
        if (store_journal_add(c->o.db, t->id, o->seqs[i], o->entries[i]) != 0) return -1;
        c->stats.moves++;
    }
    for (int i = 0; i < o->nmsgs; i++)
        if (say(c, t->net, t->room, o->msgs[i].user, o->msgs[i].mention, 0, o->msgs[i].text) != 0) return -1;
    for (int i = 0; i < o->nscores; i++)
        if (store_standing_add(c->o.db, t->net, t->room, &o->scores[i].delta) != 0) return -1;
    if (o->nentries) {
        t->touched = now;
        if (store_table_touch(c->o.db, t->id, now / 1000) != 0) return -1;
    }
    if (o->closed && store_table_close(c->o.db, t->id, o->closed, now / 1000) != 0) return -1;
    if (o->nentries || o->nmsgs) s->dirty = 1;
    return 0;
}

static int write_and_clear(core *c, slot *s, table_out *o)
{
    int rc = write_out(c, s, o);
    table_out_clear(o);
    return rc;
}

/* Follow-ups after a table moved: deals and computer Caps calls, then the turn prompt. */
static int settle(core *c, slot *s)
{
    table_out o = {0};
    const table_env *env = env_for(c, s->t.net);
    table_auto(&s->t, env, &o);
    table_prompt(&s->t, env, &o);
    return write_and_clear(c, s, &o);
}

static void schedule(core *c, slot *s)
{
    table *t = &s->t;
    int seat = table_computer_to_act(t);
    if (seat < 0 || (s->job_pending && s->job_seq == t->seq)) return;
    work_job *j = calloc(1, sizeof *j);
    if (!j) abort();
    j->table = t->id;
    j->seq = t->seq;
    j->seat = seat;
    j->seed = mix64((uint64_t)t->id * 0x100000001B3ull ^ (uint64_t)t->seq);
    j->not_before = now_ms(c) + c->o.config->bot_delay_ms;
    j->think = table_computer_question(t, seat, &j->q);
    if (work_submit(c->w, j) == 0) {
        s->job_pending++;
        s->job_seq = t->seq;
    }
    free(j);
}

/* ---- commands the core answers itself ---- */

typedef struct {
    core *c;
    const char *net, *room, *user;
    int is_private;
} asker;

/* Text for the asker as it is: to the room he asked in, or privately. */
static int tell(const asker *q, const char *text)
{
    if (q->is_private || !q->room) return say(q->c, q->net, "", q->user, NULL, 0, text);
    return say(q->c, q->net, q->room, "", NULL, 0, text);
}

static int answer(const asker *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int answer(const asker *q, const char *fmt, ...)
{
    char text[RENDER_MAX * 2], who[TABLE_USER_MAX], line[RENDER_MAX * 2 + TABLE_USER_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (q->is_private || !q->room) return tell(q, text);
    env_for(q->c, q->net);
    snprintf(line, sizeof line, "%s: %s", env_name(q->c, q->room, q->user, who, sizeof who), text);
    return say(q->c, q->net, q->room, "", NULL, 0, line);
}

static int do_new(core *c, const asker *q, const cmd *m)
{
    if (q->is_private || !q->room) return answer(q, "open a table in a room: send %snew 304 there.", c->o.config->prefix);
    int grid = strcmp(m->arg, "grid") == 0;
    if (strcmp(m->arg, "304") != 0 && !grid)
        return answer(q, "the games are 304 and grid (ContractGrid): %snew 304 or %snew grid.", c->o.config->prefix,
                      c->o.config->prefix);
    slot *s = slot_of_room(c, q->net, q->room);
    if (s) return answer(q, "table %" PRId64 " is already open here: %sjoin it, or %sabort it first.", s->t.id,
                         c->o.config->prefix, c->o.config->prefix);
    int64_t id;
    if (store_table_create(c->o.db, q->net, q->room, m->arg, q->user, now_ms(c) / 1000, &id) != 0) return -1;
    s = slot_add(c);
    table_init(&s->t, id, q->net, q->room, q->user);
    table_set_game(&s->t, m->arg, c->o.config);
    s->t.touched = now_ms(c);
    const char *p = c->o.config->prefix;
    char line[768];
    if (grid)
        snprintf(line, sizeof line, "Table %" PRId64 " is open for ContractGrid, three players. %sjoin [1-3] to sit "
                 "down, %sbot [1-3] to add a computer player, %sgrid CONTRACTS...|random to arrange your grid, %sset "
                 "OPTION VALUE to change the rules (%srules), %sstart when three are seated and every grid is set.",
                 id, p, p, p, p, p, p);
    else
        snprintf(line, sizeof line, "Table %" PRId64 " is open for 304. %sjoin [seat] to sit down, %sbot [seat] to "
                 "add a computer player, %sset OPTION VALUE to change the rules (%srules), %sstart when four are seated.",
                 id, p, p, p, p, p);
    return say(c, q->net, q->room, "", NULL, 0, line);
}

/* help: about one command, where asked; the list, privately (for reading only: an IRC NOTICE),
 * with one line in the room when asked there. */
static int do_help(core *c, const asker *q, const cmd *m)
{
    char text[4096];
    const char *p = c->o.config->prefix;
    if (m->arg[0]) {
        if (!cmd_help(m->arg, p, text, sizeof text))
            return answer(q, "there is no command \"%s\": %shelp lists them all.", m->arg, p);
        return tell(q, text);
    }
    if (!q->is_private && q->room && tell(q, cmd_help_line(p, text, sizeof text)) != 0) return -1;
    return say(c, q->net, "", q->user, NULL, 1, cmd_help(NULL, p, text, sizeof text));
}

/* rules: the table's options (the default 304 table's without one) and where to read more,
 * then how to check a deal. */
static int do_rules(core *c, const asker *q, slot *s)
{
    char text[RENDER_MAX];
    const char *p = c->o.config->prefix, *url = c->o.config->rules_url;
    size_t n = s ? table_rules_text(&s->t, p, url, text, sizeof text)
                 : render_rules(&c->o.config->rules, p, url, text, sizeof text);
    snprintf(text + n, sizeof text - n, ". Fair dealing: each hand's seed is committed when it is dealt and shown "
             "when it ends; cardroom verify SEED COMMITMENT checks it.");
    return tell(q, text);
}

/* notify [on|off]: whether the player gets his hand privately on each turn, kept per network. */
static int do_notify(core *c, const asker *q, const cmd *m)
{
    char ns[32];
    const char *p = c->o.config->prefix;
    notify_ns(q->net, ns, sizeof ns);
    if (m->arg[0] && store_kv_put(c->o.db, ns, q->user, m->arg) != 0) return -1;
    int on = wants_notice(c, q->net, q->user);
    if (on < 0) return -1;
    if (on)
        return answer(q, "your turn notices are on: I send you your hand privately when it is your turn (%snotify "
                      "off stops them).", p);
    return answer(q, "your turn notices are off: the room's line names you when it is your turn, and I write to "
                  "you privately only when a card must be sent privately (%snotify on for your hand each turn).", p);
}

typedef struct {
    core *c;
    char *buf;
    size_t len, used;
    int rank;
    const char *room;
} board;

static void board_row(board *b, const store_standing *r, int rank)
{
    char who[TABLE_USER_MAX], num[16] = "";
    if (b->used + 1 >= b->len) return;
    env_name(b->c, b->room, r->user, who, sizeof who);
    if (rank) snprintf(num, sizeof num, "%d. ", rank);
    int k = snprintf(b->buf + b->used, b->len - b->used,
                     "\n%s%s — %d match%s, %d won; as trump maker %d made, %d failed; %d hand%s, tokens %+d", num,
                     who, r->matches, r->matches == 1 ? "" : "es", r->matches_won, r->made, r->failed, r->hands,
                     r->hands == 1 ? "" : "s", r->tokens);
    if (k > 0) b->used += (size_t)k;
    if (b->used >= b->len) b->used = b->len - 1;
}

static int board_fn(void *ctx, const store_standing *row)
{
    board *b = ctx;
    board_row(b, row, ++b->rank);
    return 0;
}

static int do_standings(core *c, const asker *q, slot *s, const cmd *m)
{
    char text[RENDER_MAX * 2];
    const char *room = s ? s->t.room : q->room;
    board b = {c, text, sizeof text, 0, 0, room};
    if (!room) return answer(q, "standings belong to a room: ask there, or while you sit at a table.");
    const table_env *env = env_for(c, q->net); /* also the names board_row() reads */
    if (s) b.used = table_match_text(&s->t, env, text, sizeof text);
    else b.used = (size_t)snprintf(text, sizeof text, "No match is running here.");
    if (m->arg[0]) {
        store_standing row;
        const adapter *a = net_of(c, q->net);
        char who[TABLE_USER_MAX];
        const char *u = a && a->resolve_user ? a->resolve_user(a->ctx, room, m->arg, who, sizeof who) : NULL;
        int rc = store_standing_get(c->o.db, q->net, room, u ? u : m->arg, &row);
        if (rc == 1 && !u && m->arg[0] == '@') rc = store_standing_get(c->o.db, q->net, room, m->arg + 1, &row);
        if (rc < 0) return -1;
        if (rc == 1)
            b.used += (size_t)snprintf(text + b.used, sizeof text - b.used, "\n%s has not played here yet.", m->arg);
        else board_row(&b, &row, 0);
    } else {
        b.used += (size_t)snprintf(text + b.used, sizeof text - b.used, "\nLeaderboard:");
        if (store_standings_top(c->o.db, q->net, room, LEADERBOARD_ROWS, board_fn, &b) < 0) return -1;
        if (b.rank == 0 && b.used < sizeof text)
            snprintf(text + b.used, sizeof text - b.used, " nobody has finished a hand here yet.");
    }
    if (!q->is_private) return say(c, q->net, room, "", NULL, 0, text);
    char named[sizeof text + TABLE_ROOM_MAX + 8], name[TABLE_ROOM_MAX];
    const char *shown = env_room(c, room, name, sizeof name); /* a private answer names its room */
    snprintf(named, sizeof named, "[%s] %s", shown ? shown : room, text);
    return say(c, q->net, "", q->user, NULL, 0, named);
}

static int handle_message(core *c, const char *net, const adapter_event *e)
{
    cmd m;
    asker q = {c, net, e->room, e->sender, e->is_private || !e->room};
    cmd_parse(e->text, strlen(e->text), c->o.config->prefix, q.is_private, &m);
    if (m.kind == CMD_NONE) return 0;
    slot *s = q.is_private ? slot_of_player(c, net, e->sender) : slot_of_room(c, net, e->room);
    switch (m.kind) {
    case CMD_BAD: return answer(&q, "%s", m.err);
    case CMD_NEW: return do_new(c, &q, &m);
    case CMD_HELP: return do_help(c, &q, &m);
    case CMD_RULES: return do_rules(c, &q, s);
    case CMD_NOTIFY: return do_notify(c, &q, &m);
    case CMD_STANDINGS: return do_standings(c, &q, s, &m);
    default: break;
    }
    if (!s) {
        if (m.kind == CMD_PLAY && m.bare) return 0;
        if (!q.is_private && (m.kind == CMD_GRID || m.kind == CMD_EXCLUDE || m.kind == CMD_MARK))
            return answer(&q, "there is no table here: %snew grid opens a ContractGrid table.", c->o.config->prefix);
        if (q.is_private) return answer(&q, "you are not sitting at a table: join one in its room first.");
        return answer(&q, "there is no table here: %snew 304 opens one.", c->o.config->prefix);
    }
    table_out o = {0};
    table_command(&s->t, env_for(c, net), e->sender, e->moderator, q.is_private, &m, &o);
    return write_and_clear(c, s, &o);
}

/* A player who leaves the room leaves an unstarted table, and is away from a running one. */
static int handle_leave(core *c, const char *net, const adapter_event *e)
{
    slot *s = e->room ? slot_of_room(c, net, e->room) : NULL;
    int seat = s ? table_seat_of(&s->t, e->sender) : -1;
    if (seat < 0) return 0;
    table_out o = {0};
    char entry[32], err[256];
    snprintf(entry, sizeof entry, s->t.started ? "away %d" : "leave %d", seat);
    if (!(s->t.started && s->t.seat[seat].away)) table_exec(&s->t, env_for(c, net), entry, &o, err, sizeof err);
    return write_and_clear(c, s, &o);
}

/* ---- batches ---- */

static int fail_store(core *c, const char *what)
{
    logf_(c, CORE_LOG_ERROR, "store failed during %s: %s", what, store_error(c->o.db));
    store_rollback(c->o.db);
    said_clear(c);
    c->broken = 1;
    return -1;
}

static int settle_dirty(core *c)
{
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (!s->dirty) continue;
        if (settle(c, s) != 0) return -1;
    }
    return 0;
}

/* After a commit: computer players asked to move, turn clocks started, timers rescheduled. */
static void after_commit(core *c)
{
    const cfg *k = c->o.config;
    int64_t now = now_ms(c);
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (!s->dirty) continue;
        s->dirty = 0;
        schedule(c, s);
        table_note_turn(&s->t, now);
        int64_t at = table_next_timer(&s->t, (int64_t)k->remind_after * 1000, (int64_t)k->idle_takeover * 1000,
                                      (int64_t)k->table_idle_close * 1000);
        if (at < c->next_deadline) c->next_deadline = at;
    }
    slots_sweep(c);
}

int core_batch(core *c, const char *net, const adapter_event *ev, int n, const char *position)
{
    if (c->broken) return -1;
    if (store_begin(c->o.db) != 0) return fail_store(c, "begin");
    if (write_delivered(c) != 0) return fail_store(c, "marking messages sent");
    for (int i = 0; i < n; i++) {
        int rc = 0;
        if (!ev[i].sender || strlen(ev[i].sender) >= TABLE_USER_MAX || (ev[i].room && strlen(ev[i].room) >= TABLE_ROOM_MAX)) {
            logf_(c, CORE_LOG_WARN, "an event with a user or room name too long for a table was ignored");
            continue;
        }
        if (ev[i].kind == ADAPTER_MESSAGE && ev[i].text) rc = handle_message(c, net, &ev[i]);
        else if (ev[i].kind == ADAPTER_LEAVE) rc = handle_leave(c, net, &ev[i]);
        if (rc != 0) return fail_store(c, "a batch");
    }
    if (settle_dirty(c) != 0) return fail_store(c, "follow-ups");
    if (write_said(c) != 0) return fail_store(c, "queueing messages");
    if (position && store_position_set(c->o.db, net, position) != 0) return fail_store(c, "position");
    if (store_commit(c->o.db) != 0) return fail_store(c, "commit");
    c->stats.batches++;
    after_commit(c);
    return 0;
}

/* ---- computer answers and timers ---- */

static int apply_answer(core *c, const work_job *j)
{
    slot *s = slot_of_id(c, j->table);
    if (!s) return 0;
    if (s->job_pending > 0) s->job_pending--;
    s->dirty = 1; /* re-ask if the answer came too late */
    if (s->t.over) return 0;
    table_out o = {0};
    table_computer_move(&s->t, env_for(c, s->t.net), j->seat, j->seq, &j->q, j->ok, &o); /* !ok: a legal move */
    return write_and_clear(c, s, &o);
}

static int run_timers(core *c, int64_t now)
{
    const cfg *k = c->o.config;
    int64_t next = INT64_MAX;
    for (int i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        table_out o = {0};
        int64_t at = table_timers(&s->t, env_for(c, s->t.net), now, (int64_t)k->remind_after * 1000,
                                  (int64_t)k->idle_takeover * 1000, (int64_t)k->table_idle_close * 1000, &o);
        if (at < next) next = at;
        if (write_and_clear(c, s, &o) != 0) return -1;
    }
    c->next_deadline = next;
    return 0;
}

int core_tick(core *c)
{
    if (c->broken) return -1;
    int64_t now = now_ms(c);
    work_job got[TAKE_CHUNK];
    int n = work_take(c->w, got, TAKE_CHUNK);
    for (int i = 0; i < n; i++) {
        c->held = grow(c->held, &c->cheld, c->nheld + 1, sizeof *c->held);
        c->held[c->nheld++] = got[i];
    }
    int due = 0;
    for (int i = 0; i < c->nheld; i++) due += c->held[i].not_before <= now;
    int marks = c->ndelivered && now - c->delivered_since >= DELIVERED_DELAY_MS;
    if (!due && now < c->next_deadline && !marks) return 0;
    if (store_begin(c->o.db) != 0) return fail_store(c, "begin");
    if (write_delivered(c) != 0) return fail_store(c, "marking messages sent");
    int k = 0, done = 0;
    for (int i = 0; i < c->nheld; i++) {
        if (c->held[i].not_before > now) {
            c->held[k++] = c->held[i];
            continue;
        }
        if (apply_answer(c, &c->held[i]) != 0) return fail_store(c, "a computer move");
        done++;
    }
    c->nheld = k;
    if (run_timers(c, now) != 0) return fail_store(c, "timers");
    for (int i = 0; i < c->nheld; i++)
        if (c->held[i].not_before < c->next_deadline) c->next_deadline = c->held[i].not_before;
    if (settle_dirty(c) != 0) return fail_store(c, "follow-ups");
    if (write_said(c) != 0) return fail_store(c, "queueing messages");
    if (store_commit(c->o.db) != 0) return fail_store(c, "commit");
    c->stats.batches++;
    after_commit(c);
    return done;
}

/* ---- the outbox ---- */

typedef struct {
    int n, cap;
    store_msg *m;
} msg_list;

static int collect_msg(void *ctx, const store_msg *m)
{
    msg_list *l = ctx;
    l->m = grow(l->m, &l->cap, l->n + 1, sizeof *l->m);
    l->m[l->n] = *m;
    l->m[l->n].text = strdup(m->text);
    l->m[l->n].wire = m->wire ? strdup(m->wire) : NULL;
    if (!l->m[l->n].text || (m->wire && !l->m[l->n].wire)) abort();
    l->n++;
    return 0;
}

static int same_dest(const store_msg *a, const store_msg *b)
{
    return strcmp(a->room, b->room) == 0 && strcmp(a->user, b->user) == 0;
}

static int is_inflight(core *c, int64_t id)
{
    for (int i = 0; i < c->ninflight; i++)
        if (c->inflight[i] == id) return 1;
    return 0;
}

static void msg_list_free(msg_list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->m[i].text);
        free(l->m[i].wire);
    }
    free(l->m);
    memset(l, 0, sizeof *l);
}

/* Merges the run of messages first..last (same destination, never offered) into the first, in
 * the caller's transaction: their lines in order, the last mention. */
static int merge_run(core *c, const msg_list *l, const int *run, int n)
{
    size_t len = 0;
    for (int k = 0; k < n; k++) len += strlen(l->m[run[k]].text) + 1;
    char *text = malloc(len), *p = text;
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    if (!text || !ids) abort();
    const char *mention = "";
    for (int k = 0; k < n; k++) {
        const store_msg *m = &l->m[run[k]];
        size_t t = strlen(m->text);
        if (k) *p++ = '\n';
        memcpy(p, m->text, t);
        p += t;
        if (m->mention[0]) mention = m->mention;
        ids[k] = m->id;
    }
    *p = 0;
    int rc = store_outbox_merge(c->o.db, ids[0], text, mention, ids + 1, n - 1);
    free(text);
    free(ids);
    return rc;
}

/* While the network throttles the bot: per destination, the messages waiting behind its first
 * one have never been offered (only a destination's first message is, and one tried has a wire
 * form or is in flight), so runs of them are merged into one message of at most MESSAGE_MAX
 * bytes, in one transaction before the merged message is first offered. A throttled table then
 * falls behind by one message at most, however much it says. Returns the merges made, or -1. */
static int merge_waiting(core *c, const msg_list *l)
{
    int merges = 0, rc = 0, nrun = 0;
    char *seen = calloc((size_t)l->n + 1, 1);
    int *run = malloc(((size_t)l->n + 1) * sizeof *run);
    if (!seen || !run) abort();
    for (int i = 0; rc == 0 && i < l->n; i++) {
        if (seen[i] || is_delivered(c, l->m[i].id)) continue;
        size_t len = 0;
        nrun = 0;
        for (int j = i + 1; rc == 0 && j <= l->n; j++) { /* i is its destination's first message */
            const store_msg *m = j < l->n ? &l->m[j] : NULL;  /* NULL: the end */
            if (m && (!same_dest(m, &l->m[i]) || is_delivered(c, m->id))) continue;
            if (m) seen[j] = 1;
            int mergeable = m && !m->wire && !is_inflight(c, m->id);
            size_t t = m ? strlen(m->text) : 0;
            if (nrun > 0 && (!mergeable || len + 1 + t > MESSAGE_MAX)) { /* the run ends */
                if (nrun > 1 && merges++ == 0) rc = store_begin(c->o.db);
                if (nrun > 1 && rc == 0) rc = merge_run(c, l, run, nrun);
                nrun = 0;
            }
            if (mergeable) {
                len = nrun ? len + 1 + t : t;
                run[nrun++] = j;
            }
        }
    }
    if (merges) rc = rc == 0 ? store_commit(c->o.db) : (store_rollback(c->o.db), -1);
    free(seen);
    free(run);
    return rc != 0 ? -1 : merges;
}

static int flush_net(core *c, const adapter *a, int *delivered)
{
    msg_list l = {0};
    int rc = store_outbox_pending(c->o.db, a->net, FLUSH_CHUNK, collect_msg, &l);
    if (rc == 0 && a->throttled && a->throttled(a->ctx)) {
        int merges = merge_waiting(c, &l);
        if (merges > 0) {
            logf_(c, CORE_LOG_DEBUG, "%s: %d run(s) of waiting messages merged", a->net, merges);
            msg_list_free(&l);
            rc = store_outbox_pending(c->o.db, a->net, FLUSH_CHUNK, collect_msg, &l);
        }
        if (merges < 0) rc = -1;
    }
    int64_t *done = l.n ? malloc((size_t)l.n * sizeof *done) : NULL;
    int ndone = 0;
    char *blocked = l.n ? calloc((size_t)l.n, 1) : NULL;
    for (int i = 0; rc == 0 && i < l.n; i++) {
        int stop = 0;
        for (int j = 0; j < i && !stop; j++) stop = blocked[j] && same_dest(&l.m[i], &l.m[j]);
        if (is_delivered(c, l.m[i].id)) continue; /* done; the store learns it with the next transaction */
        if (stop || is_inflight(c, l.m[i].id)) {
            blocked[i] = 1;
            continue;
        }
        int r = a->send(a->ctx, &l.m[i]);
        if (r == ADAPTER_SENT) done[ndone++] = l.m[i].id;
        else blocked[i] = 1;
        if (r == ADAPTER_QUEUED) {
            c->inflight = grow(c->inflight, &c->cinflight, c->ninflight + 1, sizeof *c->inflight);
            c->inflight[c->ninflight++] = l.m[i].id;
        }
    }
    if (rc == 0 && ndone) {
        rc = store_begin(c->o.db);
        if (rc == 0) rc = write_delivered(c);
        for (int i = 0; rc == 0 && i < ndone; i++) rc = store_outbox_done(c->o.db, done[i]);
        rc = rc == 0 ? store_commit(c->o.db) : (store_rollback(c->o.db), -1);
    }
    *delivered += ndone;
    int more = rc == 0 && l.n == FLUSH_CHUNK && ndone > 0;
    msg_list_free(&l);
    free(done);
    free(blocked);
    return rc != 0 ? -1 : more;
}

int core_flush(core *c)
{
    int delivered = 0;
    if (c->broken) return -1;
    for (int i = 0; i < c->nnets; i++) {
        int more;
        do {
            more = flush_net(c, &c->nets[i], &delivered);
            if (more < 0) {
                logf_(c, CORE_LOG_ERROR, "store failed while sending: %s", store_error(c->o.db));
                c->broken = 1;
                return -1;
            }
        } while (more);
    }
    return delivered;
}

int core_sent_many(core *c, const int64_t *ids, int n)
{
    if (n <= 0) return 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < c->ninflight; i++)
            if (c->inflight[i] == ids[k]) c->inflight[i] = c->inflight[--c->ninflight];
    if (store_begin(c->o.db) != 0) return fail_store(c, "marking messages sent");
    for (int k = 0; k < n; k++)
        if (store_outbox_done(c->o.db, ids[k]) != 0) return fail_store(c, "marking messages sent");
    if (store_commit(c->o.db) != 0) return fail_store(c, "marking messages sent");
    return 0;
}

int core_sent(core *c, int64_t id) { return core_sent_many(c, &id, 1); }

int core_delivered(core *c, int64_t id)
{
    if (c->broken) return -1;
    for (int i = 0; i < c->ninflight; i++)
        if (c->inflight[i] == id) c->inflight[i] = c->inflight[--c->ninflight];
    if (c->ndelivered == 0) c->delivered_since = now_ms(c);
    c->delivered = grow(c->delivered, &c->cdelivered, c->ndelivered + 1, sizeof *c->delivered);
    c->delivered[c->ndelivered++] = id;
    return 0;
}

/* ---- restoring ---- */

typedef struct {
    int n, cap;
    store_table *rows;
} table_list;

static int collect_table(void *ctx, const store_table *t)
{
    table_list *l = ctx;
    l->rows = grow(l->rows, &l->cap, l->n + 1, sizeof *l->rows);
    l->rows[l->n++] = *t;
    return 0;
}

typedef struct {
    int n, cap;
    char **entries;
} entry_list;

static int collect_entry(void *ctx, int64_t seq, const char *entry)
{
    entry_list *l = ctx;
    (void)seq;
    l->entries = grow(l->entries, &l->cap, l->n + 1, sizeof *l->entries);
    l->entries[l->n] = strdup(entry);
    if (!l->entries[l->n]) abort();
    l->n++;
    return 0;
}

static int restore_one(core *c, const store_table *row)
{
    entry_list l = {0};
    char err[256];
    int rc = store_journal_each(c->o.db, row->id, collect_entry, &l);
    slot *s = rc == 0 ? slot_add(c) : NULL;
    if (s) table_init(&s->t, row->id, row->net, row->room, row->creator);
    int bad = 0;
    if (s && table_set_game(&s->t, row->game, c->o.config) != 0) {
        snprintf(err, sizeof err, "the game \"%s\" is unknown", row->game);
        bad = 1;
    } else if (s) {
        bad = table_replay(&s->t, env_for(c, row->net), l.entries, l.n, err, sizeof err);
    }
    if (bad) {
        logf_(c, CORE_LOG_ERROR, "table %" PRId64 " cannot be rebuilt at journal entry %d: %s; it stays closed",
              row->id, bad, err);
        s->t.over = 1;
    }
    if (s) {
        s->t.touched = now_ms(c);
        s->t.prompted = s->t.seq;
        s->dirty = 1;
    }
    for (int i = 0; i < l.n; i++) free(l.entries[i]);
    free(l.entries);
    return rc;
}

int core_restore(core *c)
{
    table_list l = {0};
    int rc = store_tables_open(c->o.db, collect_table, &l);
    for (int i = 0; rc == 0 && i < l.n; i++) rc = restore_one(c, &l.rows[i]);
    free(l.rows);
    if (rc != 0) {
        logf_(c, CORE_LOG_ERROR, "cannot read the tables: %s", store_error(c->o.db));
        return -1;
    }
    after_commit(c);
    logf_(c, CORE_LOG_INFO, "%d open table%s restored", c->nslots, c->nslots == 1 ? "" : "s");
    return c->nslots;
}

/* ---- small queries ---- */

int core_busy(core *c) { return work_pending(c->w) + c->nheld; }

int core_wake_fd(core *c) { return work_wake_fd(c->w); }

int64_t core_next_deadline(core *c)
{
    int64_t next = c->next_deadline;
    for (int i = 0; i < c->nheld; i++)
        if (c->held[i].not_before < next) next = c->held[i].not_before;
    if (c->ndelivered && c->delivered_since + DELIVERED_DELAY_MS < next) next = c->delivered_since + DELIVERED_DELAY_MS;
    return next;
}

void core_stats_of(core *c, core_stats *s)
{
    *s = c->stats;
    s->tables = c->nslots;
}

int64_t core_table_of(core *c, const char *net, const char *room)
{
    slot *s = slot_of_room(c, net, room);
    return s ? s->t.id : 0;
}
