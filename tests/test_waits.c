/* test_waits.c — moves judged off the event loop: a table whose move waits for the Caps judge
 * on a worker holds what comes after it, and the results are exactly those of the judge on the
 * loop.
 *
 * Random games: tables in four rooms (four computer players, who play a short match to its end
 * at once; one person and three computers; two people and two computers) get random batches of events — the people's legal moves, Caps
 * calls (proven ones and early ones the judge must find wrong), bare cards, private and room
 * questions, a player leaving the room and coming back, passers-by — and between batches the
 * core sometimes runs until nobody thinks (so events often arrive while a table waits). The
 * script is made against the judge on the loop (no worker threads), reading each table as its
 * journal has it, and played again with two worker threads: the journals, the hand seeds, the
 * messages to each destination (room or person) and the standings must be the same byte for
 * byte. Then again with two workers on a file, where the bot "crashes" (the core and store are
 * dropped without waiting for anything) at random moments while events are held for the judge,
 * and restarts from the file: the same results again. Environment: CARDROOM_WAITS_SEEDS (seeds,
 * default 6), CARDROOM_WAITS_BATCHES (batches per seed, default 250).
 *
 * A focused test: one person's move that needs a search waits in the inbox while her next
 * commands, a question from the room, her nick change and what she says under her new name
 * queue behind it, another room's table answers at once meanwhile, and the same messages come
 * out in the same order as without workers. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter.h"
#include "config.h"
#include "core.h"
#include "g304.h"
#include "game304.h"
#include "judge.h"
#include "store.h"
#include "table.h"
#include "test_dirs.h"
#include "test_journal.h"
#include "test_rig.h"

#define NET RIG_NET
#define ROOMS 4
#define MAX_EVENTS 4

TestSuite(waits, .timeout = 600);

/* ---- the bot under test ---- */

/* Timers and limits off: the results depend on the events alone. */
static void rig_start(rig *r, int threads, const char *db)
{
    rig_init(r, threads, db);
    r->conf.rate_commands = r->conf.tables_per_user = 0; /* the limits are not kept across a crash */
    rig_core(r);
}

/* The bot dies: nothing is waited for, and only the file is left. */
static void rig_crash(rig *r, const char *db)
{
    char err[256];
    core_free(r->core);
    store_close(r->db);
    cr_assert_eq(store_open(&r->db, db, err, sizeof err), 0, "%s", err);
    rig_core(r);
}

static int inbox_count_row(void *ctx, const store_inbox *row)
{
    (void)row;
    ++*(int *)ctx;
    return 0;
}

/* Rows waiting in the store's inbox. */
static int inbox_rows(rig *r)
{
    int n = 0;
    cr_assert_eq(store_inbox_each(r->db, inbox_count_row, &n), 0);
    return n;
}

/* ---- what the bot wrote, in a form two runs can be compared in ---- */

typedef struct {
    char **v;
    int n, cap;
} lines;

static void add_line(lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_line(lines *l, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    cr_assert_geq(vasprintf(&s, fmt, ap), 0);
    va_end(ap);
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        cr_assert_not_null(l->v);
    }
    l->v[l->n++] = s;
}

static void lines_free(lines *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int collect_msg(void *ctx, const store_msg *m)
{
    add_line(ctx, "%s|%s\t%s\t%s", m->room, m->user, m->mention, m->text);
    return 0;
}

static int cmp_dest(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    size_t nx = strcspn(x, "\t"), ny = strcspn(y, "\t");
    int c = strncmp(x, y, nx < ny ? nx : ny);
    return c ? c : nx < ny ? -1 : nx > ny;
}

static int collect_standing(void *ctx, const store_standing *s)
{
    add_line(ctx, "standing %s %d %d %d %d %d %d", s->user, s->matches, s->matches_won, s->made, s->failed,
             s->tokens, s->hands);
    return 0;
}

/* Journals and seeds of tables 1..ntables, every message per destination in the order queued,
 * the standings of every room, the tables still open. */
static void results(rig *r, int ntables, lines *out)
{
    memset(out, 0, sizeof *out);
    for (int id = 1; id <= ntables; id++) {
        journal_entries e = journal_read(r->db, id);
        for (int k = 0; k < e.n; k++) add_line(out, "table %d entry %d: %s", id, k + 1, e.v[k]);
        journal_free(&e);
        uint8_t seed[STORE_SEED_BYTES];
        for (int h = 1; store_hand_seed(r->db, id, h, seed) == 0; h++)
            add_line(out, "table %d hand %d seed %02x%02x%02x%02x", id, h, seed[0], seed[1], seed[2], seed[3]);
    }
    lines msgs = {0};
    rig_outbox_each(r, collect_msg, &msgs);
    /* Stable by destination: insertion sort keeps each destination's order (lists are short). */
    for (int i = 1; i < msgs.n; i++)
        for (int j = i; j > 0 && cmp_dest(&msgs.v[j - 1], &msgs.v[j]) > 0; j--) {
            char *t = msgs.v[j];
            msgs.v[j] = msgs.v[j - 1];
            msgs.v[j - 1] = t;
        }
    for (int i = 0; i < msgs.n; i++) add_line(out, "to %s", msgs.v[i]);
    lines_free(&msgs);
    char room[16];
    for (int k = 0; k < ROOMS; k++) {
        snprintf(room, sizeof room, "r%d", k);
        cr_assert_geq(store_standings_top(r->db, NET, room, 0, collect_standing, out), 0);
        add_line(out, "room %s open table %" PRId64, room, core_table_of(r->core, NET, room));
    }
    cr_assert_eq(inbox_rows(r), 0, "nothing is left in the inbox");
}

static void expect_same(const lines *got, const lines *want, const char *what)
{
    int n = got->n < want->n ? got->n : want->n;
    for (int i = 0; i < n; i++)
        cr_assert_str_eq(got->v[i], want->v[i], "%s: line %d differs:\n  got      %s\n  expected %s", what, i + 1,
                         got->v[i], want->v[i]);
    cr_assert_eq(got->n, want->n, "%s: %d lines, the judge on the loop wrote %d", what, got->n, want->n);
}

/* ---- the script: batches of events and where the core runs until idle ---- */

typedef struct {
    adapter_event ev[MAX_EVENTS];
    char text[MAX_EVENTS][160];
    char user[MAX_EVENTS][16];
    int n;
    int idle_after;
} step;

typedef struct {
    step *s;
    int n, cap;
    int ntables;
} script;

static step *script_add(script *sc)
{
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? 2 * sc->cap : 256;
        sc->s = realloc(sc->s, (size_t)sc->cap * sizeof *sc->s);
        cr_assert_not_null(sc->s);
    }
    step *st = &sc->s[sc->n++];
    memset(st, 0, sizeof *st);
    return st;
}

static const char *const room_names[ROOMS] = {"r0", "r1", "r2", "r3"};

static void ev_set(step *st, adapter_event_kind kind, int room, const char *user, int is_private, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void ev_set(step *st, adapter_event_kind kind, int room, const char *user, int is_private, const char *fmt, ...)
{
    int i = st->n++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->text[i], sizeof st->text[i], fmt, ap);
    va_end(ap);
    snprintf(st->user[i], sizeof st->user[i], "%s", user);
    st->ev[i] = (adapter_event){.kind = kind, .room = is_private ? NULL : room_names[room], .sender = st->user[i],
                                .text = st->text[i], .is_private = is_private};
}

/* Plays a step (its events point into it: the pointers are set again, since steps move in
 * memory as the script grows). */
static void play(rig *r, step *st)
{
    for (int i = 0; i < st->n; i++) {
        st->ev[i].sender = st->user[i];
        st->ev[i].text = st->ev[i].kind == ADAPTER_LEAVE ? NULL : st->text[i];
    }
    if (st->n) rig_batch(r, st->ev, st->n);
    if (st->idle_after) rig_idle(r);
}

/* ---- the script's author: reads each table from its journal, judging on this thread ---- */

typedef struct {
    rig *r;
    caps_solver *judge;
    table t[ROOMS];   /* each room's table as its journal has it */
    int seen[ROOMS];  /* journal entries applied to it */
    uint64_t rng;
} author;

static uint64_t rnd(author *a)
{
    uint64_t z = (a->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int author_seed(void *ctx, int64_t id, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    author *a = ctx;
    return store_hand_seed(a->r->db, id, hand_no, seed) == 0 ? 0 : -1;
}

/* Brings the author's copy of each table up to its journal. */
static void author_read(author *a)
{
    table_env env = {.judge = a->judge, .seed = author_seed, .ctx = a, .prefix = "!", .private_how = ""};
    char err[256];
    for (int k = 0; k < ROOMS; k++) {
        journal_entries e = journal_read(a->r->db, a->t[k].id);
        for (; a->seen[k] < e.n; a->seen[k]++)
            cr_assert_eq(table_exec(&a->t[k], &env, e.v[a->seen[k]], NULL, err, sizeof err), 0, "%s", err);
        journal_free(&e);
    }
}

/* People: r1 has p1 at South; r2 has p2 at South; r3 has p3 at South and q3 at North. */
static int person_of(int room, int which, const char **user)
{
    static const char *const people[ROOMS][2] = {{NULL, NULL}, {"p1", NULL}, {"p2", NULL}, {"p3", "q3"}};
    *user = people[room][which];
    return which ? 2 : 0;
}

/* The move m of the person at seat as a command (privately when private, and always for the
 * indicator; a card that would go face down said in the room is refused, as it should be). */
static void move_event(step *st, int k, const char *user, const g304_action *m, int private)
{
    char text[64];
    switch (m->kind) {
    case G304_DO_BID: snprintf(text, sizeof text, m->amount == G304_PCC ? "bid pcc" : "bid %d", m->amount); break;
    case G304_DO_TRUMP: snprintf(text, sizeof text, "trump %s", card_str(m->card)); break;
    case G304_DO_PLAY: snprintf(text, sizeof text, "play %s", card_str(m->card)); break;
    case G304_DO_CUT: snprintf(text, sizeof text, "cut %d", m->amount); break;
    default: snprintf(text, sizeof text, "%s", g304_do_name(m->kind)); break;
    }
    int secret = m->kind == G304_DO_TRUMP;
    ev_set(st, ADAPTER_MESSAGE, k, user, secret || private, "%s%s", secret ? "" : "!", text);
}

/* A Caps call for seat: the judge's proven order when it has one, else the cards in a random
 * order (a call the judge must find early or wrong). */
static void caps_text(author *a, const g304_state *st, int seat, char *buf, size_t len)
{
    card_t order[G304_TRICKS];
    int n = 0;
    cardset_t held = g304_cards_of(st, seat);
    if (st->certain_at[seat] != G304_NEVER) {
        for (int i = 0; i < st->certain_n[seat]; i++)
            if (held & CARDSET_BIT(st->certain_order[seat][i])) order[n++] = st->certain_order[seat][i];
    } else {
        for (int c = 0; c < CARD_COUNT; c++)
            if (held & CARDSET_BIT(c)) order[n++] = (card_t)c;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(rnd(a) % (uint64_t)(i + 1));
            card_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    size_t used = (size_t)snprintf(buf, len, "!caps");
    for (int i = 0; i < n && used < len; i++) used += (size_t)snprintf(buf + used, len - used, " %s", card_str(order[i]));
}

/* One person's move or question in room k, or a passer-by's. */
static void author_event(author *a, step *st, int k)
{
    const char *user;
    int seat = person_of(k, (int)(rnd(a) % 2), &user);
    if (!user) seat = person_of(k, 0, &user);
    const g304_state *s = &game304_of(&a->t[k])->st;
    int roll = (int)(rnd(a) % 100);
    if (!user || roll >= 92) {
        static const char *const asks[] = {"!table", "!last", "!standings", "!help caps", "!rules"};
        ev_set(st, ADAPTER_MESSAGE, k, "walker", 0, "%s", asks[rnd(a) % 5]);
        return;
    }
    if (a->t[k].seat[seat].away && roll < 50) {
        ev_set(st, ADAPTER_MESSAGE, k, user, 0, "%s", "!back");
        return;
    }
    if (roll < 70 && game304_of(&a->t[k])->hand_no > 0 && s->phase != G304_PHASE_DONE) {
        g304_action legal[G304_MAX_LEGAL];
        if (s->phase == G304_PHASE_PLAY && g304_may_caps(s, seat) &&
            (s->certain_at[seat] != G304_NEVER || rnd(a) % 12 == 0)) {
            char text[160];
            caps_text(a, s, seat, text, sizeof text);
            ev_set(st, ADAPTER_MESSAGE, k, user, 0, "%s", text);
            return;
        }
        int n = s->to_act == seat ? g304_legal(s, seat, legal) : 0;
        if (n > 0) {
            g304_action m = legal[rnd(a) % (uint64_t)n];
            for (int i = 0; i < n && m.kind == G304_DO_BID && rnd(a) % 4; i++) /* mostly pass, else bid low */
                if (legal[i].kind == G304_DO_PASS || (legal[i].kind == G304_DO_BID && legal[i].amount < m.amount))
                    m = legal[i];
            move_event(st, k, user, &m, rnd(a) % 3 == 0);
            return;
        }
    }
    if (roll < 78) {
        ev_set(st, ADAPTER_MESSAGE, k, user, (int)(rnd(a) % 2), "%s", card_str((card_t)(rnd(a) % CARD_COUNT)));
    } else if (roll < 90) {
        static const char *const asks[] = {"!table", "!last", "!hand", "!standings"};
        int priv = (int)(rnd(a) % 2);
        ev_set(st, ADAPTER_MESSAGE, k, user, priv, "%s", asks[rnd(a) % 4] + priv);
    } else {
        ev_set(st, ADAPTER_LEAVE, k, user, 0, "%s", "");
    }
}

/* A new 304 table in room k (after one is over, when nothing waits: table ids must come in
 * the same order in every run). The computers' room plays a short match. */
static void author_open(author *a, script *sc, int k)
{
    static const char *const seats[ROOMS][4] = {{"bot", "bot", "bot", "bot"},
                                                {"join", "bot", "bot", "bot"},
                                                {"join", "bot", "bot", "bot"},
                                                {"join", "bot", "join", "bot"}};
    step *st = script_add(sc);
    const char *user;
    ev_set(st, ADAPTER_MESSAGE, k, "host", 0, "!new 304");
    if (k == 0) ev_set(st, ADAPTER_MESSAGE, k, "host", 0, "!set start_tokens 2");
    st = script_add(sc);
    for (int s = 0; s < 4; s++) {
        person_of(k, s == 2, &user);
        ev_set(st, ADAPTER_MESSAGE, k, strcmp(seats[k][s], "join") == 0 ? user : "host", 0, "!%s %d", seats[k][s],
               s + 1);
    }
    st = script_add(sc);
    ev_set(st, ADAPTER_MESSAGE, k, "host", 0, "!start");
    st->idle_after = 1;
    sc->ntables++;
    table_init(&a->t[k], sc->ntables, NET, room_names[k], "host");
    cr_assert_eq(table_set_game(&a->t[k], "304", &a->r->conf), 0);
    a->seen[k] = 0;
}

/* Writes the script while playing it with the judge on the loop; want gets the results. */
static void author_run(uint64_t seed, int nbatches, script *sc, lines *want)
{
    rig r;
    author a;
    memset(&a, 0, sizeof a);
    memset(sc, 0, sizeof *sc);
    rig_start(&r, 0, ":memory:");
    a.r = &r;
    a.rng = seed;
    a.judge = caps_solver_new(0);
    cr_assert_not_null(a.judge);
    for (int k = 0; k < ROOMS; k++) author_open(&a, sc, k);
    for (int i = 0; i < sc->n; i++) play(&r, &sc->s[i]);
    for (int b = 0; b < nbatches; b++) {
        author_read(&a);
        for (int k = 1; k < ROOMS; k++) /* the people's rooms get a new table */
            if (a.t[k].over && sc->s[sc->n - 1].idle_after) {
                int from = sc->n;
                author_open(&a, sc, k);
                for (int i = from; i < sc->n; i++) play(&r, &sc->s[i]);
                author_read(&a);
            }
        step *st = script_add(sc);
        int n = 1 + (int)(rnd(&a) % 3);
        for (int i = 0; i < n; i++) author_event(&a, st, (int)(rnd(&a) % ROOMS));
        st->idle_after = rnd(&a) % 2 == 0 || b == nbatches - 1;
        play(&r, st);
    }
    results(&r, sc->ntables, want);
    rig_stop(&r);
    caps_solver_free(a.judge);
}

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

/* Writes a script for seed against the judge on the loop and plays it again with two workers,
 * in memory, or on the file db with a crash at every other moment something waits (counted
 * in *crashes, with the rows held then in *held); the results must be the same. */
static void replay(uint64_t seed, int nbatches, const char *db, int *crashes, int *held_at_crash)
{
    script sc;
    lines want, got;
    rig r;
    author_run(seed, nbatches, &sc, &want);
    rig_start(&r, 2, db ? db : ":memory:");
    for (int i = 0, moments = 0; i < sc.n; i++) {
        play(&r, &sc.s[i]);
        int held = db ? inbox_rows(&r) : 0;
        if (held && ++moments % 2) {
            rig_crash(&r, db);
            ++*crashes;
            *held_at_crash += held;
        }
    }
    rig_idle(&r);
    results(&r, sc.ntables, &got);
    rig_stop(&r);
    char what[64];
    snprintf(what, sizeof what, "seed %" PRIu64 ", two workers%s", seed, db ? ", crashes" : "");
    expect_same(&got, &want, what);
    lines_free(&got);
    lines_free(&want);
    free(sc.s);
}

Test(waits, same_results_with_the_judge_on_workers)
{
    int seeds = env_int("CARDROOM_WAITS_SEEDS", 6), nbatches = env_int("CARDROOM_WAITS_BATCHES", 250), none = 0;
    for (int k = 0; k < seeds; k++) replay(304 + (uint64_t)k, nbatches, NULL, &none, &none);
}

Test(waits, a_crash_while_moves_wait_loses_and_repeats_nothing)
{
    int seeds = env_int("CARDROOM_WAITS_SEEDS", 6), nbatches = env_int("CARDROOM_WAITS_BATCHES", 250);
    int crashes = 0, held_at_crash = 0;
    /* In memory when the system has a RAM file system: a crash is dropping the core, not the
     * machine, and every commit's sync would only slow the test down. */
    char dir[64], path[96];
    snprintf(dir, sizeof dir, "%s/cardroom-waits-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    for (int k = 0; k < seeds; k++) {
        snprintf(path, sizeof path, "%s/bot-%d.db", dir, k);
        replay(404 + (uint64_t)k, nbatches, path, &crashes, &held_at_crash);
        for (const char *ext = ""; ext; ext = *ext ? (strcmp(ext, "-wal") == 0 ? "-shm" : NULL) : "-wal") {
            char f[128];
            snprintf(f, sizeof f, "%s%s", path, ext);
            unlink(f);
        }
    }
    rmdir(dir);
    cr_expect_geq(crashes, seeds, "only %d crashes landed while something waited", crashes);
    cr_expect_gt(held_at_crash, crashes, "the crashes found events and follow-ups held");
}

/* ---- a move that waits, and what comes after it ---- */

static int journal_length(rig *r, int64_t id)
{
    journal_entries e = journal_read(r->db, id);
    int n = e.n;
    journal_free(&e);
    return n;
}

/* Plays step st on both bots: without workers and with two. */
static void both(rig *r0, rig *r2, step *st)
{
    play(r0, st);
    play(r2, st);
}

Test(waits, a_waiting_move_holds_what_comes_after_it)
{
    rig r0, r2;
    author a;
    script sc = {0};
    memset(&a, 0, sizeof a);
    rig_start(&r0, 0, ":memory:");
    rig_start(&r2, 2, ":memory:");
    a.r = &r0;
    a.judge = caps_solver_new(0);
    cr_assert_not_null(a.judge);
    author_open(&a, &sc, 1);
    author_open(&a, &sc, 2);
    for (int i = 0; i < sc.n; i++) both(&r0, &r2, &sc.s[i]);

    /* p1 (South in r1) plays on until a move of hers needs the judge's search. */
    g304_action m;
    const g304_state *s = NULL;
    int guard = 0;
    for (;; guard++) {
        cr_assert_lt(guard, 400, "no move of p1 needed a search");
        author_read(&a);
        s = &game304_of(&a.t[1])->st;
        cr_assert(!a.t[1].over && s->to_act == 0, "p1 is not to act");
        g304_action legal[G304_MAX_LEGAL];
        int n = g304_legal(s, 0, legal);
        cr_assert_gt(n, 0);
        m = legal[0];
        for (int i = 0; i < n; i++)
            if (legal[i].kind == G304_DO_PASS || legal[i].kind == G304_DO_PLAY) m = legal[i];
        if (judge_would_search(s, 0, &m)) break;
        step st = {0};
        move_event(&st, 1, "p1", &m, m.kind == G304_DO_PLAY); /* a card that goes face down is sent privately */
        st.idle_after = 1;
        both(&r0, &r2, &st);
    }

    /* With two workers the move waits in the inbox, with the follow-ups after it. */
    int before = journal_length(&r2, 1);
    step st = {0};
    move_event(&st, 1, "p1", &m, m.kind == G304_DO_PLAY); /* a card that goes face down is sent privately */
    both(&r0, &r2, &st);
    cr_expect_eq(journal_length(&r0, 1), before + 1, "without workers the move is applied at once");
    cr_expect_eq(journal_length(&r2, 1), before, "with workers it waits for the judge");
    int held = inbox_rows(&r2);
    cr_expect_eq(held, 2, "the move and the follow-ups after its batch are held (%d rows)", held);
    cr_expect_gt(core_busy(r2.core), 0);

    /* Her next commands and a passer-by's question queue behind it. */
    int hand_to_p1 = rig_heard(&r2, "", "p1").n, to_r1 = rig_heard(&r2, "r1", "").n;
    memset(&st, 0, sizeof st);
    ev_set(&st, ADAPTER_MESSAGE, 1, "p1", 1, "hand");
    ev_set(&st, ADAPTER_MESSAGE, 1, "walker", 0, "!table");
    ev_set(&st, ADAPTER_MESSAGE, 1, "p1", 0, "!last");
    both(&r0, &r2, &st);
    cr_expect_eq(inbox_rows(&r2), held + 4, "three events and their batch's follow-ups wait behind the move");
    cr_expect_eq(rig_heard(&r2, "", "p1").n, hand_to_p1, "her hand waits for the move");
    cr_expect_eq(rig_heard(&r2, "r1", "").n, to_r1, "so does the table for the room");
    cr_expect_eq(journal_length(&r2, 1), before);

    /* She changes her nick: that waits too, and what she says under her new name comes after it. */
    adapter_event rename = {.kind = ADAPTER_RENAME, .room = "r1", .sender = "p1", .renamed_to = "p1b"};
    rig_batch(&r0, &rename, 1);
    rig_batch(&r2, &rename, 1);
    cr_expect_eq(inbox_rows(&r2), held + 6, "the nick change and its batch's follow-ups wait too");
    memset(&st, 0, sizeof st);
    ev_set(&st, ADAPTER_MESSAGE, 1, "p1b", 1, "table");
    both(&r0, &r2, &st);
    cr_expect_eq(inbox_rows(&r2), held + 8, "her words under the new name wait behind the nick change");
    cr_expect_eq(rig_heard(&r2, "", "p1b").n, 0);

    /* Another room's table answers at once meanwhile. */
    int to_r2 = rig_heard(&r2, "r2", "").n;
    memset(&st, 0, sizeof st);
    ev_set(&st, ADAPTER_MESSAGE, 2, "walker", 0, "!table");
    both(&r0, &r2, &st);
    cr_expect_eq(rig_heard(&r2, "r2", "").n, to_r2 + 1, "r2 is not held up by r1");

    /* Once the judge has answered, everything is as without workers, in the same order. */
    rig_idle(&r0);
    rig_idle(&r2);
    cr_expect_eq(journal_length(&r2, 1), journal_length(&r0, 1));
    journal_entries e = journal_read(r2.db, 1);
    int renamed = 0;
    for (int i = 0; i < e.n; i++) renamed += strcmp(e.v[i], "rename 0 p1b") == 0;
    cr_expect_eq(renamed, 1, "her seat followed her nick");
    journal_free(&e);
    lines want, got;
    results(&r0, sc.ntables, &want);
    results(&r2, sc.ntables, &got);
    expect_same(&got, &want, "a waiting move");
    lines_free(&want);
    lines_free(&got);
    rig_stop(&r0);
    rig_stop(&r2);
    caps_solver_free(a.judge);
    free(sc.s);
}

/* ---- a review asked after the match's end ---- */

static void say_in(rig *r, const char *room, const char *user, const char *text)
{
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = room, .sender = user, .text = text};
    rig_batch(r, &e, 1);
}

typedef struct {
    const char *room;
    lines *out;
} room_lines;

static int collect_room(void *ctx, const store_msg *m)
{
    room_lines *w = ctx;
    if (strcmp(m->room, w->room) == 0 && !m->user[0]) add_line(w->out, "%s", m->text);
    return 0;
}

/* Everything said in room, message by message. */
static void said_in(rig *r, const char *room, lines *out)
{
    room_lines w = {room, out};
    memset(out, 0, sizeof *out);
    rig_outbox_each(r, collect_room, &w);
}

/* A match of four computer players in room, or a ContractGrid game of three, played to its end
 * at once (one token a team; a cap of 30). */
static void ended_match(rig *r, const char *room, const char *game)
{
    int grid = strcmp(game, "grid") == 0;
    say_in(r, room, "host", grid ? "!new grid" : "!new 304");
    for (int k = 0; k < (grid ? 3 : 4); k++) say_in(r, room, "host", "!bot");
    say_in(r, room, "host", grid ? "!set cap 30" : "!set start_tokens 1");
    say_in(r, room, "host", "!start");
    rig_idle(r);
    cr_assert_eq(core_table_of(r->core, NET, room), 0, "the %s match in %s did not end", game, room);
}

/* The finished table's journal rebuilds to a table whose match is over, which takes no seat
 * change, no abort and no second review. */
static void expect_finished_journal(rig *r, int64_t id)
{
    journal_entries e = journal_read(r->db, id);
    table *t = malloc(sizeof *t);
    caps_solver *judge = caps_solver_new(0);
    cr_assert(t && judge);
    author seeds = {.r = r};
    table_env env = {.judge = judge, .seed = author_seed, .ctx = &seeds, .prefix = "!", .private_how = "privately"};
    char err[256];
    int reviews = 0;
    for (int k = 0; k < e.n; k++) reviews += strcmp(e.v[k], "review") == 0;
    cr_expect_eq(reviews, 1, "table %" PRId64 " has %d review entries", id, reviews);
    cr_expect_str_eq(e.v[e.n - 1], "review", "the review comes after the match's end");
    table_init(t, id, NET, "r0", "host");
    cr_assert_eq(table_set_game(t, "304", &r->conf), 0);
    cr_assert_eq(table_replay(t, &env, e.v, e.n, err, sizeof err), 0, "%s", err);
    cr_expect(t->over && t->finished, "the journal does not end a finished match");
    static const char *const refused[] = {"join 0 eve", "leave 0", "abort", "review"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        cr_expect_neq(table_exec(t, &env, refused[i], NULL, err, sizeof err), 0, "\"%s\" applied after the end",
                      refused[i]);
    cr_expect_eq(t->seq, e.n);
    caps_solver_free(judge);
    free(t);
    journal_free(&e);
}

/* The review of r0's last hand asked after the match's end, with two workers: its search goes
 * to a worker while the asker's message waits in the inbox, the room's next commands (the
 * review asked again, a new table) wait behind it, and other rooms are answered at once;
 * with db, the bot crashes while they wait and does them at its restart. What it wrote, as
 * results() has it, goes to out. */
static void review_after_the_end(const char *db, lines *out)
{
    rig r;
    lines r0;
    rig_start(&r, 2, db ? db : ":memory:");
    ended_match(&r, "r0", "304");
    ended_match(&r, "r1", "grid");
    int before = rig_heard(&r, "r0", "").n;
    say_in(&r, "r0", "walker", "!review");
    cr_expect_eq(inbox_rows(&r), 1, "the asker's message waits in the inbox while the review is searched");
    cr_expect_gt(core_busy(r.core), 0);
    adapter_event later[] = {{.kind = ADAPTER_MESSAGE, .room = "r0", .sender = "runner", .text = "!review"},
                             {.kind = ADAPTER_MESSAGE, .room = "r0", .sender = "host", .text = "!new 304"},
                             {.kind = ADAPTER_MESSAGE, .room = "r3", .sender = "walker", .text = "!review"},
                             {.kind = ADAPTER_MESSAGE, .room = "r1", .sender = "walker", .text = "!review"}};
    rig_batch(&r, later, 4);
    cr_expect_eq(inbox_rows(&r), 3, "the room's next commands wait behind the review");
    cr_expect_eq(rig_heard(&r, "r0", "").n, before, "the room heard something before the review");
    cr_expect_str_eq(rig_heard(&r, "r3", "").last, "walker: there is no table here: !new 304 opens one.");
    cr_expect_str_eq(rig_heard(&r, "r1", "").last, "walker: !review is for 304 tables: ContractGrid has no computer "
                                                   "advice.");
    if (db) {
        rig_crash(&r, db);
        cr_expect_eq(inbox_rows(&r), 0, "the restart did what waited");
    }
    rig_idle(&r);
    said_in(&r, "r0", &r0);
    cr_assert_eq(r0.n, before + 3, "the review, asked again, the new table: %d messages, want %d", r0.n, before + 3);
    int no = 0;
    cr_assert_eq(sscanf(r0.v[before], "Review of hand %d, double dummy", &no), 1, "%s", r0.v[before]);
    char want[96];
    snprintf(want, sizeof want, "runner: the review of hand %d was posted above.", no);
    cr_expect_str_eq(r0.v[before + 1], want);
    cr_expect(strncmp(r0.v[before + 2], "Table 3 is open for 304.", 24) == 0, "%s", r0.v[before + 2]);
    lines_free(&r0);
    say_in(&r, "r0", "walker", "!review");
    cr_expect_str_eq(rig_heard(&r, "r0", "").last, "walker: no hand has finished yet at this table.");
    expect_finished_journal(&r, 1);
    char *kv = NULL;
    cr_expect_eq(store_kv_get(r.db, "ended." NET, "r0", &kv), 1, "the finished table is still named: %s", kv);
    free(kv);
    results(&r, 3, out);
    rig_stop(&r);
}

Test(waits, a_review_after_the_end_waits_on_a_worker_and_survives_a_crash)
{
    lines plain, crashed;
    review_after_the_end(NULL, &plain);
    char *dir = temp_dir("waits"), path[256];
    snprintf(path, sizeof path, "%s/bot.db", dir);
    review_after_the_end(path, &crashed);
    expect_same(&crashed, &plain, "a review after the end, a crash while it waits");
    lines_free(&plain);
    lines_free(&crashed);
    temp_dir_remove(dir);
}
