/* table.c — one table: seats, options, the match, its journal (see table.h); 304 itself here,
 * ContractGrid's own entries and commands in gridtable.c.
 *
 * Every change goes through table_exec() as a journal entry, live or on replay, so a table
 * rebuilt from its journal is the table that was running. The entries are short text lines:
 *   join SEAT USER | bot SEAT | leave SEAT | set OPTION VALUE | start | deal DEALER T0 T1 |
 *   away SEAT | back SEAT | abort | move SEAT ACTION   (ACTION as table_action_text writes it)
 * Commands from people are checked here first (table_command) so that a refusal says why in
 * words and leaves no entry. Messages are only collected when an out is given: a replay says
 * nothing. A ContractGrid table shares the seat, timer and message code; table.c hands it its
 * game entries (set, start, deal, move, grid) and game commands (gridtable.h), and lends it
 * the helpers at the end of this file. */
#include "table.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deal.h"
#include "gridtable.h"
#include "judge.h"
#include "render.h"
#include "seed.h"

#define NAME_MAX_LEN 320
#define LINE_MAX_LEN 512

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
 * into one message, line after line: fewer messages, same order for each reader. */
static void out_text(table_out *o, const char *user, const char *mention, const char *text)
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
    m->text = strdup(text);
    if (!m->text) abort();
}

static void out_room(table_out *o, const char *mention, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void out_room(table_out *o, const char *mention, const char *fmt, ...)
{
    char line[RENDER_MAX];
    va_list ap;
    if (!o) return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    out_text(o, "", mention, line);
}

/* A private message names the room and table it belongs to. */
static void out_private(table_out *o, const table_env *env, const table *t, const char *user, const char *text)
{
    char line[2 * RENDER_MAX + TABLE_ROOM_MAX + 64], room[TABLE_ROOM_MAX];
    const char *label = t->room;
    if (!o || !user[0]) return;
    if (env && env->room_name && env->room_name(env->ctx, t->room, room, sizeof room)) label = room;
    snprintf(line, sizeof line, "[%s · table %" PRId64 "] %s", label, t->id, text);
    out_text(o, user, NULL, line);
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

static int is_grid(const table *t) { return t->game == TABLE_GAME_GRID; }

/* Seats at the table: four for 304, three for ContractGrid. */
static int nseats(const table *t) { return is_grid(t) ? GRID_SEATS : G304_SEATS; }

/* A seat's name: South, East, North, West (304); seat 1, seat 2, seat 3 (ContractGrid). */
static const char *seat_word(const table *t, int s)
{
    static const char *const grid_words[GRID_SEATS] = {"seat 1", "seat 2", "seat 3"};
    if (is_grid(t)) return s >= 0 && s < GRID_SEATS ? grid_words[s] : "?";
    return cmd_seat_name(s);
}

/* "alice (South)", "computer (East)", "alice (South, away)"; "alice (seat 1)" at ContractGrid. */
static const char *seat_label(const table *t, const table_env *env, int s, char *buf, size_t len)
{
    char who[TABLE_USER_MAX];
    const table_seat *p = &t->seat[s];
    if (p->user[0])
        snprintf(buf, len, "%s (%s%s)", user_name(env, t, p->user, who, sizeof who), seat_word(t, s),
                 p->away ? ", away" : "");
    else if (p->bot)
        snprintf(buf, len, "computer (%s)", seat_word(t, s));
    else
        snprintf(buf, len, "%s", seat_word(t, s));
    return buf;
}

typedef struct {
    char buf[G304_SEATS][NAME_MAX_LEN];
    const char *names[G304_SEATS];
} seat_names;

static void names_of(const table *t, const table_env *env, seat_names *n)
{
    for (int s = 0; s < G304_SEATS; s++)
        n->names[s] = s < nseats(t) ? seat_label(t, env, s, n->buf[s], sizeof n->buf[s]) : "";
}

int table_seat_of(const table *t, const char *user)
{
    for (int s = 0; s < nseats(t); s++)
        if (t->seat[s].user[0] && strcmp(t->seat[s].user, user) == 0) return s;
    return -1;
}

static int seated(const table_seat *p) { return p->user[0] || p->bot; }

static int computer_plays(const table_seat *p) { return p->bot || p->away || !p->user[0]; }

/* A hand is being played: someone may be to act. */
static int hand_in_play(const table *t)
{
    if (is_grid(t)) return t->started && !t->over && t->hand_no > 0 && t->g.st.phase != GRID_PHASE_DONE;
    return t->started && !t->over && t->hand_no > 0 && t->st.phase != G304_PHASE_DONE;
}

/* The engine's seat to act (G304_NO_SEAT = GRID_NO_SEAT when nobody's). */
static int engine_to_act(const table *t) { return is_grid(t) ? t->g.st.to_act : t->st.to_act; }

void table_init(table *t, int64_t id, const char *net, const char *room, const char *creator,
                const g304_rules *defaults)
{
    memset(t, 0, sizeof *t);
    t->id = id;
    snprintf(t->net, sizeof t->net, "%s", net);
    snprintf(t->room, sizeof t->room, "%s", room);
    snprintf(t->creator, sizeof t->creator, "%s", creator);
    t->rules = *defaults;
    t->st.phase = G304_PHASE_DONE;
    t->st.to_act = G304_NO_SEAT;
    t->turn_seat = G304_NO_SEAT;
}

int table_set_game(table *t, const char *game)
{
    if (strcmp(game, "304") == 0) {
        t->game = TABLE_GAME_304;
        return 0;
    }
    if (strcmp(game, "grid") != 0) return -1;
    t->game = TABLE_GAME_GRID;
    grid_rules_default(&t->g.rules);
    t->g.st.phase = GRID_PHASE_DONE;
    t->g.st.to_act = GRID_NO_SEAT;
    return 0;
}

/* ---- actions as journal text ---- */

size_t table_action_text(const g304_action *a, char *buf, size_t len)
{
    size_t used;
    switch (a->kind) {
    case G304_DO_BID:
        if (a->amount == G304_PCC) return (size_t)snprintf(buf, len, "bid pcc");
        return (size_t)snprintf(buf, len, "bid %u", (unsigned)a->amount);
    case G304_DO_CUT: return (size_t)snprintf(buf, len, "cut %u", (unsigned)a->amount);
    case G304_DO_TRUMP:
    case G304_DO_PLAY:
        return (size_t)snprintf(buf, len, "%s %s", g304_do_name(a->kind), card_str(a->card));
    case G304_DO_CAPS:
        used = (size_t)snprintf(buf, len, "caps");
        for (int i = 0; i < a->n && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, " %s", card_str(a->order[i]));
        return used;
    default: return (size_t)snprintf(buf, len, "%s", g304_do_name(a->kind));
    }
}

int table_action_parse(const char *text, g304_action *a)
{
    char word[16];
    int off = 0;
    memset(a, 0, sizeof *a);
    a->card = CARD_NONE;
    if (sscanf(text, "%15s%n", word, &off) != 1) return -1;
    const char *rest = text + off;
    int kind = -1;
    for (int k = 0; k < G304_DO_COUNT; k++)
        if (strcmp(word, g304_do_name((g304_do)k)) == 0) kind = k;
    if (kind < 0) return -1;
    a->kind = (uint8_t)kind;
    unsigned v;
    char c[8];
    switch (kind) {
    case G304_DO_BID:
        if (strcmp(rest, " pcc") == 0) return a->amount = G304_PCC, 0;
        if (sscanf(rest, " %u", &v) != 1 || v > G304_MAX_BID) return -1;
        return a->amount = (uint16_t)v, 0;
    case G304_DO_CUT:
        if (sscanf(rest, " %u", &v) != 1 || v >= CARD_COUNT) return -1;
        return a->amount = (uint16_t)v, 0;
    case G304_DO_TRUMP:
    case G304_DO_PLAY:
        if (sscanf(rest, " %7s", c) != 1 || card_parse(c, strlen(c), &a->card, NULL, 0) != 0) return -1;
        return 0;
    case G304_DO_CAPS:
        while (sscanf(rest, " %7s%n", c, &off) == 1) {
            if (a->n >= G304_TRICKS || card_parse(c, strlen(c), &a->order[a->n], NULL, 0) != 0) return -1;
            a->n++;
            rest += off;
        }
        return 0;
    default: return *rest ? -1 : 0;
    }
}

/* ---- applying entries ---- */

/* Renders events: the public ones to the room, the rest to each human seat that may see them. */
static void say_events(const table *t, const table_env *env, const g304_events *ev, table_out *out)
{
    seat_names n;
    char text[RENDER_MAX];
    if (!out) return;
    names_of(t, env, &n);
    for (int i = 0; i < ev->n; i++) {
        const g304_event *e = &ev->ev[i];
        if (e->vis == G304_VIS_ALL) {
            if (render_event(&t->st, e, -1, n.names, text, sizeof text)) out_room(out, NULL, "%s", text);
            continue;
        }
        for (int s = 0; s < G304_SEATS; s++) {
            if (!t->seat[s].user[0] || !g304_event_visible(e, s)) continue;
            if (render_event(&t->st, e, s, n.names, text, sizeof text)) out_private(out, env, t, t->seat[s].user, text);
        }
    }
}

static void hand_over(table *t, table_out *out)
{
    const g304_result *r = &t->st.result;
    char hex[SEED_HEX], chex[SEED_HEX];
    uint8_t commit[SEED_BYTES];
    seed_commitment(t->seed, commit);
    out_room(out, NULL, "Seed of hand %d: %s (check the deal: cardroom verify %s %s)", t->hand_no,
             seed_hex(t->seed, hex), hex, seed_hex(commit, chex));
    for (int s = 0; s < G304_SEATS && out; s++) {
        const table_seat *p = &t->seat[s];
        if (!p->user[0]) continue;
        store_standing d;
        memset(&d, 0, sizeof d);
        snprintf(d.user, sizeof d.user, "%s", p->user);
        d.hands = 1;
        d.tokens = r->delta[s & 1];
        if (s == t->st.maker && r->made >= 0) {
            d.made = r->made == 1;
            d.failed = r->made == 0;
        }
        if (r->match_over) {
            d.matches = 1;
            d.matches_won = r->match_winner == (s & 1);
        }
        out_score(out, &d);
    }
    t->tokens[0] = t->st.tokens[0];
    t->tokens[1] = t->st.tokens[1];
    t->dealer = r->next_dealer;
    if (r->match_over) {
        t->over = 1;
        if (out) out->closed = "finished";
    }
}

static int exec_move(table *t, const table_env *env, int seat, const char *text, table_out *out,
                     char *err, size_t errlen)
{
    g304_action a;
    g304_events ev;
    g304_error e;
    ev.n = 0;
    if (!t->started || t->hand_no == 0 || table_action_parse(text, &a) != 0) {
        snprintf(err, errlen, "move \"%s\" does not apply here", text);
        return -1;
    }
    if (judge_apply(env->judge, &t->st, seat, &a, &ev, &e) != G304_OK) {
        snprintf(err, errlen, "move \"%s\" by seat %d refused: %s", text, seat, e.msg);
        return -1;
    }
    say_events(t, env, &ev, out);
    if (t->st.phase == G304_PHASE_DONE) hand_over(t, out);
    return 0;
}

/* "deal DEALER TOKENS0 TOKENS1": the next hand, with the dealer and tokens it starts from. They
 * follow from the hands before; the entry states them so that a rebuild may skip the moves of
 * finished hands (table_replay) and so that a damaged journal shows. */
static int exec_deal(table *t, const table_env *env, const char *args, int skipped, table_out *out, char *err,
                     size_t errlen)
{
    card_t deck[CARD_COUNT];
    g304_events ev;
    char hex[SEED_HEX], label[NAME_MAX_LEN];
    uint8_t commit[SEED_BYTES];
    int dealer, t0, t1;
    if (sscanf(args, "%d %d %d", &dealer, &t0, &t1) != 3 || dealer < 0 || dealer >= G304_SEATS) {
        snprintf(err, errlen, "deal \"%.40s\" names no dealer and tokens", args);
        return -1;
    }
    if (!t->started || t->over || (!skipped && t->hand_no > 0 && t->st.phase != G304_PHASE_DONE)) {
        snprintf(err, errlen, "no deal is due");
        return -1;
    }
    if (!env->seed || env->seed(env->ctx, t->id, t->hand_no + 1, t->seed) != 0) {
        snprintf(err, errlen, "no seed for hand %d", t->hand_no + 1);
        return -1;
    }
    if (t->hand_no == 0) t->dealer = t->seed[SEED_BYTES - 1] & 3; /* the first dealer is dealt too */
    if (skipped) t->dealer = (uint8_t)dealer, t->tokens[0] = (int16_t)t0, t->tokens[1] = (int16_t)t1;
    if (t->dealer != dealer || t->tokens[0] != t0 || t->tokens[1] != t1) {
        snprintf(err, errlen, "deal %d %d %d does not follow from the hands before (%d %d %d)", dealer, t0, t1,
                 t->dealer, t->tokens[0], t->tokens[1]);
        return -1;
    }
    t->hand_no++;
    deal_shuffle(t->seed, deck, CARD_COUNT);
    ev.n = 0;
    g304_start(&t->st, &t->rules, t->dealer, t->tokens, deck, &ev);
    judge_update(env->judge, &t->st);
    seed_commitment(t->seed, commit);
    out_room(out, NULL, "Hand %d — dealer %s. Tokens: South–North %d, East–West %d. Seed commitment: %s",
             t->hand_no, seat_label(t, env, t->dealer, label, sizeof label), t->tokens[0], t->tokens[1],
             seed_hex(commit, hex));
    say_events(t, env, &ev, out);
    return 0;
}

static int parse_seat(const table *t, const char *s, int *seat)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v >= nseats(t)) return -1;
    *seat = (int)v;
    return 0;
}

static int exec_entry(table *t, const table_env *env, const char *entry, int skipped, table_out *out, char *err,
                      size_t errlen)
{
    char word[16], label[NAME_MAX_LEN];
    int off = 0, seat = -1, rc = 0;
    if (t->over || sscanf(entry, "%15s%n", word, &off) != 1) {
        snprintf(err, errlen, "entry \"%.60s\" does not apply to a closed table", entry);
        return -1;
    }
    const char *rest = entry + off;
    while (*rest == ' ') rest++;
    int with_seat = strcmp(word, "join") == 0 || strcmp(word, "bot") == 0 || strcmp(word, "leave") == 0 ||
                    strcmp(word, "away") == 0 || strcmp(word, "back") == 0 || strcmp(word, "move") == 0 ||
                    (is_grid(t) && strcmp(word, "grid") == 0);
    if (with_seat) {
        if (parse_seat(t, rest, &seat) != 0) {
            snprintf(err, errlen, "entry \"%.60s\" names no seat", entry);
            return -1;
        }
        rest += 1;
        while (*rest == ' ') rest++;
    }
    table_seat *p = seat >= 0 ? &t->seat[seat] : NULL;
    int grid_own = is_grid(t) ? gridtable_entry(t, env, word, seat, rest, out, err, errlen) : 1;
    if (grid_own < 0) return -1;
    if (is_grid(t) && seat >= 0 && !t->started &&
        (!strcmp(word, "join") || !strcmp(word, "bot") || !strcmp(word, "leave")))
        t->g.has_grid &= (uint8_t)~(1u << seat); /* ContractGrid: a new player arranges a new grid */
    if (grid_own == 0) {
        /* a ContractGrid entry, applied by gridtable_entry() */
    } else if (strcmp(word, "join") == 0 && *rest) {
        int was_bot = p->bot;
        snprintf(p->user, sizeof p->user, "%s", rest);
        p->bot = p->away = 0;
        if (out) {
            seat_label(t, env, seat, label, sizeof label);
            if (t->started && was_bot) out_room(out, NULL, "%s takes over from the computer player.", label);
            else out_room(out, NULL, "%s sits down.", label);
            if (hand_in_play(t)) {
                char hand[RENDER_MAX + 32], cards[RENDER_MAX];
                if (is_grid(t)) gridtable_hand_text(t, seat, cards, sizeof cards);
                else render_hand(&t->st, seat, cards, sizeof cards);
                snprintf(hand, sizeof hand, "You now play %s. Your hand: %s", seat_word(t, seat), cards);
                out_private(out, env, t, p->user, hand);
            }
        }
    } else if (strcmp(word, "bot") == 0) {
        p->user[0] = 0;
        p->bot = 1;
        p->away = 0;
        if (out) out_room(out, NULL, "A computer player sits down as %s.", seat_word(t, seat));
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
    } else if (strcmp(word, "set") == 0 && !t->started) {
        char name[64], value[64];
        g304_error e;
        if (sscanf(rest, "%63s %63s", name, value) != 2 || g304_rules_set(&t->rules, name, value, &e) != 0) {
            snprintf(err, errlen, "entry \"%.60s\" sets no option", entry);
            return -1;
        }
        if (out) out_room(out, NULL, "Option %s is now %s.", name, value);
    } else if (strcmp(word, "start") == 0 && !t->started) {
        for (int s = 0; s < G304_SEATS; s++)
            if (!seated(&t->seat[s])) {
                snprintf(err, errlen, "start with seat %d empty", s);
                return -1;
            }
        t->started = 1;
        t->tokens[0] = t->tokens[1] = t->rules.start_tokens;
        if (out) out_room(out, NULL, "The match begins: first team to win all the tokens (%d each).",
                          t->rules.start_tokens);
    } else if (strcmp(word, "deal") == 0) {
        rc = exec_deal(t, env, rest, skipped, out, err, errlen);
    } else if (strcmp(word, "abort") == 0) {
        t->over = 1;
        if (out) {
            out_room(out, NULL, "The table is closed.");
            out->closed = "aborted";
        }
    } else if (strcmp(word, "move") == 0) {
        rc = exec_move(t, env, seat, rest, out, err, errlen);
    } else {
        snprintf(err, errlen, "entry \"%.60s\" does not apply", entry);
        return -1;
    }
    if (rc != 0) return rc;
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
    int last_deal = -1;
    for (int i = 0; i < n; i++)
        if (strncmp(entries[i], "deal ", 5) == 0) last_deal = i;
    if (is_grid(t)) last_deal = -1; /* ContractGrid moves are cheap: every hand is replayed, so the
                                        match (its history and tie-break too) is rebuilt exactly */
    for (int i = 0; i < n; i++) {
        int finished_hand = i < last_deal;
        if (finished_hand && strncmp(entries[i], "move ", 5) == 0) {
            t->seq++; /* a move of a hand that is over: the next deal states where it left things */
            continue;
        }
        int is_deal = strncmp(entries[i], "deal ", 5) == 0; /* the hand before may have been skipped */
        if (exec_entry(t, env, entries[i], is_deal, NULL, err, errlen) != 0) return i + 1;
    }
    return 0;
}

/* Executes an entry made live; a refusal here is a bug, reported to the room rather than lost. */
static int exec_live(table *t, const table_env *env, table_out *out, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int exec_live(table *t, const table_env *env, table_out *out, const char *fmt, ...)
{
    char entry[LINE_MAX_LEN], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(entry, sizeof entry, fmt, ap);
    va_end(ap);
    if (table_exec(t, env, entry, out, err, sizeof err) == 0) return 1;
    out_room(out, NULL, "Internal error: %s", err);
    return 0;
}

/* ---- commands from people ---- */

static void reply(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void reply(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                  const char *fmt, ...)
{
    char text[RENDER_MAX], who[TABLE_USER_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (is_private) out_private(out, env, t, user, text);
    else out_room(out, NULL, "%s: %s", user_name(env, t, user, who, sizeof who), text);
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

static int cmd_join(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    int mine = table_seat_of(t, user);
    if (mine >= 0) {
        reply(out, t, env, user, is_private, "you already sit at %s.", seat_word(t, mine));
        return 0;
    }
    if (c->seat >= nseats(t)) {
        reply(out, t, env, user, is_private, "a ContractGrid table has seats 1 to 3: %sjoin 1, %sjoin 2 or %sjoin 3.",
              env->prefix, env->prefix, env->prefix);
        return 0;
    }
    int s = free_seat(t, c->seat, 0);
    if (s < 0) {
        if (c->seat >= 0) reply(out, t, env, user, is_private, "%s is taken.", seat_word(t, c->seat));
        else reply(out, t, env, user, is_private, t->started ? "no seat is free: the match is under way." : "the table is full.");
        return 0;
    }
    return exec_live(t, env, out, "join %d %s", s, user);
}

static int cmd_bot(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    if (t->started) {
        reply(out, t, env, user, is_private, "the match has started; computer players are added before %sstart.", env->prefix);
        return 0;
    }
    if (c->seat >= nseats(t)) {
        reply(out, t, env, user, is_private, "a ContractGrid table has seats 1 to 3: %sbot 1, %sbot 2 or %sbot 3.",
              env->prefix, env->prefix, env->prefix);
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
    return moderator || strcmp(t->creator, user) == 0 || table_seat_of(t, user) >= 0;
}

static int cmd_set(table *t, const table_env *env, const char *user, int moderator, int is_private, const cmd *c,
                   table_out *out)
{
    g304_rules r = t->rules;
    g304_error e;
    char value[64], typed[sizeof c->arg2];
    table_option_value(c, typed, sizeof typed);
    if (!table_may_change(t, env, user, moderator, is_private, "match", "set options", out)) return 0;
    if (g304_rules_set(&r, c->arg, typed, &e) != 0) {
        reply(out, t, env, user, is_private, "%s", e.msg);
        return 0;
    }
    g304_rules_get(&r, c->arg, value, sizeof value);
    return exec_live(t, env, out, "set %s %s", c->arg, value);
}

static int cmd_start(table *t, const table_env *env, const char *user, int moderator, int is_private, table_out *out)
{
    if (!table_may_change(t, env, user, moderator, is_private, "match", "start it", out)) return 0;
    int n = 0;
    for (int s = 0; s < G304_SEATS; s++) n += seated(&t->seat[s]);
    if (n < G304_SEATS) {
        reply(out, t, env, user, is_private, "%d of 4 seats are taken: %sjoin or add computer players with %sbot.", n,
              env->prefix, env->prefix);
        return 0;
    }
    return exec_live(t, env, out, "start");
}

/* Whether a refusal's words are public knowledge. The others may name the player's cards, the
 * trump or a hand's points ("you must follow ♥: you hold 9♥ 7♥"), so for a command given in the
 * room they go to the player privately and the room only hears that it was refused. */
static int refusal_is_public(g304_code code)
{
    switch (code) {
    case G304_E_PHASE: case G304_E_TURN: case G304_E_SEAT: case G304_E_AMOUNT: case G304_E_BID_LOW:
    case G304_E_BID_200: case G304_E_PARTNER_BID: case G304_E_ONCE: case G304_E_ASK: case G304_E_OPEN:
    case G304_E_SPOILT: case G304_E_CUT: case G304_E_OVER:
        return 1;
    default:
        return 0;
    }
}

static void refuse_privately(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                             const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void refuse_privately(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                             const char *fmt, ...)
{
    char text[RENDER_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    out_private(out, env, t, user, text);
    if (!is_private) reply(out, t, env, user, 0, "not allowed; I sent you the reason privately.");
}

/* Turns a game command into an engine action. Returns 0, or -1 after replying. */
static int action_of(const table *t, const table_env *env, const char *user, int is_private, int seat, const cmd *c,
                     g304_action *a, table_out *out)
{
    memset(a, 0, sizeof *a);
    a->card = c->card;
    a->amount = c->amount;
    switch (c->kind) {
    case CMD_CUT: a->kind = G304_DO_CUT; break;
    case CMD_BID: a->kind = G304_DO_BID; break;
    case CMD_PASS: a->kind = G304_DO_PASS; break;
    case CMD_PARTNER: a->kind = G304_DO_PARTNER; break;
    case CMD_REDEAL: a->kind = G304_DO_REDEAL; break;
    case CMD_TRUMP: a->kind = G304_DO_TRUMP; break;
    case CMD_OPEN: a->kind = G304_DO_OPEN; break;
    case CMD_PLAY: a->kind = G304_DO_PLAY; break;
    case CMD_SPOILT: a->kind = G304_DO_SPOILT; break;
    case CMD_CAPS:
        a->kind = G304_DO_CAPS;
        if (c->ncards == 0) {
            char hand[RENDER_MAX];
            render_hand(&t->st, seat, hand, sizeof hand);
            refuse_privately(out, t, env, user, is_private, "a Caps call lists all your cards in the order you will "
                             "play them, e.g. %scaps J♥ 9♥ …; you hold %s", env->prefix, hand);
            return -1;
        }
        a->n = c->ncards > G304_TRICKS ? G304_TRICKS : c->ncards;
        memcpy(a->order, c->cards, a->n);
        break;
    default: return -1;
    }
    return 0;
}

static int is_facedown_play(const table *t, int seat, const g304_action *a)
{
    g304_state copy = t->st;
    g304_events ev;
    ev.n = 0;
    if (a->kind != G304_DO_PLAY || g304_apply(&copy, seat, a, &ev, NULL) != G304_OK) return 0;
    for (int i = 0; i < ev.n; i++)
        if (ev.ev[i].kind == G304_EV_FACEDOWN && ev.ev[i].seat == seat) return 1;
    return 0;
}

static int cmd_move(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    int seat = table_seat_of(t, user);
    int quiet = c->kind == CMD_PLAY && c->bare;
    if (c->kind == CMD_PLAY && c->joker) { /* 304 has no joker; "JK" alone in the room is chat, as it always was */
        if (!c->bare || is_private)
            reply(out, t, env, user, is_private, "304 has no joker: a card is rank then suit, like JS, 10h, "
                  "J\xE2\x99\xA0 or jack of spades.");
        return 0;
    }
    if (seat < 0 || !t->started || t->hand_no == 0) {
        if (!quiet)
            reply(out, t, env, user, is_private, seat < 0 ? "you are not playing at this table (%sjoin to sit down)."
                                                          : "the match has not started (%sstart).", env->prefix);
        return 0;
    }
    if (quiet && t->st.to_act != seat) return 0; /* a card said on one's own turn is a move, else chat */
    if (c->kind == CMD_TRUMP && !is_private) {
        reply(out, t, env, user, 0, "the indicator is secret: send %strump CARD to me privately (%s). "
              "Everyone here saw this message, so choose your indicator with that in mind.", env->prefix, env->private_how);
        return 0;
    }
    g304_action a;
    if (action_of(t, env, user, is_private, seat, c, &a, out) != 0) return 0;
    g304_state copy = t->st;
    g304_error e;
    if (g304_apply(&copy, seat, &a, NULL, &e) != G304_OK) {
        if (e.code == G304_E_TURN && t->st.to_act != G304_NO_SEAT) {
            char label[NAME_MAX_LEN];
            reply(out, t, env, user, is_private, "it is not your turn: %s is to act.",
                  seat_label(t, env, t->st.to_act, label, sizeof label));
        } else if (refusal_is_public(e.code)) {
            reply(out, t, env, user, is_private, "%s", e.msg);
        } else {
            refuse_privately(out, t, env, user, is_private, "%s", e.msg);
        }
        return 0;
    }
    if (!is_private && is_facedown_play(t, seat, &a)) {
        reply(out, t, env, user, 0, "that card would go face down, which is secret: send %splay CARD to me privately (%s).",
              env->prefix, env->private_how);
        return 0;
    }
    int applied = 0;
    if (t->seat[seat].away) applied += exec_live(t, env, out, "back %d", seat);
    char text[LINE_MAX_LEN];
    table_action_text(&a, text, sizeof text);
    return applied + exec_live(t, env, out, "move %d %s", seat, text);
}

static void cmd_show(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    char text[RENDER_MAX];
    seat_names n;
    int seat = table_seat_of(t, user);
    names_of(t, env, &n);
    if (c->kind == CMD_HAND) {
        if (seat < 0 || !t->started || t->hand_no == 0) {
            reply(out, t, env, user, is_private, "you hold no cards at this table.");
            return;
        }
        render_hand(&t->st, seat, text, sizeof text);
        out_private(out, env, t, user, text);
        if (!is_private) reply(out, t, env, user, 0, "I sent you your hand privately.");
        return;
    }
    int viewer = is_private ? seat : -1;
    if (!t->started || t->hand_no == 0) {
        size_t used = (size_t)snprintf(text, sizeof text, "Table %" PRId64 " (not started):", t->id);
        for (int s = 0; s < G304_SEATS && used < sizeof text; s++)
            used += (size_t)snprintf(text + used, sizeof text - used, " %s%s", n.names[s], s < 3 ? "," : ".");
    } else if (c->kind == CMD_TABLE) {
        render_table(&t->st, viewer, n.names, text, sizeof text);
    } else {
        render_last(&t->st, viewer, n.names, text, sizeof text);
    }
    if (is_private) out_private(out, env, t, user, text);
    else out_room(out, NULL, "%s", text);
}

int table_command(table *t, const table_env *env, const char *user, int moderator, int is_private, const cmd *c,
                  table_out *out)
{
    int seat = table_seat_of(t, user);
    int shared = c->kind == CMD_JOIN || c->kind == CMD_BOT || c->kind == CMD_LEAVE || c->kind == CMD_BACK ||
                 c->kind == CMD_ABORT;
    if (is_grid(t) && !shared) return gridtable_command(t, env, user, moderator, is_private, c, out);
    switch (c->kind) {
    case CMD_JOIN: return cmd_join(t, env, user, is_private, c, out);
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
    case CMD_START: return cmd_start(t, env, user, moderator, is_private, out);
    case CMD_ABORT:
        if (!moderator && strcmp(user, t->creator) != 0) {
            reply(out, t, env, user, is_private, "only the table's creator or a room moderator may abort it.");
            return 0;
        }
        return exec_live(t, env, out, "abort");
    case CMD_SET: return cmd_set(t, env, user, moderator, is_private, c, out);
    case CMD_HAND:
    case CMD_TABLE:
    case CMD_LAST: cmd_show(t, env, user, is_private, c, out); return 0;
    case CMD_CUT:
    case CMD_BID:
    case CMD_PASS:
    case CMD_PARTNER:
    case CMD_REDEAL:
    case CMD_TRUMP:
    case CMD_OPEN:
    case CMD_PLAY:
    case CMD_CAPS:
    case CMD_SPOILT: return cmd_move(t, env, user, is_private, c, out);
    case CMD_MARK:
        if (strcmp(c->word, "bid") == 0) { /* "bid a1 …": what the parser said of it before ContractGrid */
            reply(out, t, env, user, is_private, "a bid is a number like 160 (or 60), or pcc: %sbid 160", env->prefix);
            return 0;
        }
        /* fall through */
    case CMD_GRID:
    case CMD_EXCLUDE:
        reply(out, t, env, user, is_private, "%s%s is a ContractGrid command, and this table plays 304 (%shelp lists "
              "the commands).", env->prefix, c->word, env->prefix);
        return 0;
    default:
        reply(out, t, env, user, is_private, "%s%s is not a 304 command (%shelp lists them).", env->prefix, c->word,
              env->prefix);
        return 0;
    }
}

/* ---- what happens by itself ---- */

/* The order to call Caps with for a computer seat, from the judge's record: the cards it still
 * holds, in the proven order. Returns the count, or 0 if the record does not cover them. */
static int caps_order_for(const table *t, int s, card_t order[G304_TRICKS])
{
    cardset_t held = g304_cards_of(&t->st, s), listed = 0;
    int n = 0;
    for (int i = 0; i < t->st.certain_n[s]; i++) {
        card_t c = t->st.certain_order[s][i];
        if (held & CARDSET_BIT(c)) order[n++] = c, listed |= CARDSET_BIT(c);
    }
    return n > 0 && listed == held ? n : 0;
}

int table_auto(table *t, const table_env *env, table_out *out)
{
    int added = 0;
    if (is_grid(t)) return gridtable_auto(t, env, out);
    for (int guard = 0; guard < 8 && t->started && !t->over; guard++) {
        if (t->hand_no == 0 || t->st.phase == G304_PHASE_DONE) {
            uint8_t seed[STORE_SEED_BYTES];
            int dealer = t->dealer;
            if (t->hand_no == 0) { /* the first dealer comes from the first seed */
                if (!env->seed || env->seed(env->ctx, t->id, 1, seed) != 0) break;
                dealer = seed[SEED_BYTES - 1] & 3;
            }
            if (!exec_live(t, env, out, "deal %d %d %d", dealer, t->tokens[0], t->tokens[1])) break;
            added++;
            continue;
        }
        int called = 0;
        for (int s = 0; s < G304_SEATS && !called; s++) {
            card_t order[G304_TRICKS];
            int n;
            if (!computer_plays(&t->seat[s]) || t->st.phase != G304_PHASE_PLAY || !g304_caps_open_for(&t->st, s) ||
                t->st.certain_at[s] == G304_NEVER || (n = caps_order_for(t, s, order)) == 0)
                continue;
            g304_action a = {.kind = G304_DO_CAPS, .card = CARD_NONE, .n = (uint8_t)n};
            memcpy(a.order, order, (size_t)n);
            char text[LINE_MAX_LEN];
            table_action_text(&a, text, sizeof text);
            called = exec_live(t, env, out, "move %d %s", s, text);
        }
        if (!called) break;
        added++;
    }
    return added;
}

int table_computer_to_act(const table *t)
{
    if (!hand_in_play(t)) return -1;
    int s = engine_to_act(t);
    if (s == G304_NO_SEAT || !computer_plays(&t->seat[s])) return -1;
    return s;
}

int table_to_act(const table *t)
{
    int s = engine_to_act(t);
    return s == G304_NO_SEAT ? -1 : s;
}

int table_computer_move(table *t, const table_env *env, int seat, int64_t seq, const g304_action *a, table_out *out)
{
    char text[LINE_MAX_LEN];
    if (is_grid(t) || seq != t->seq || table_computer_to_act(t) != seat) return 0;
    g304_state copy = t->st;
    g304_action act = *a;
    if (g304_apply(&copy, seat, &act, NULL, NULL) != G304_OK) {
        g304_action legal[G304_MAX_LEGAL];
        if (g304_legal(&t->st, seat, legal) == 0) return 0;
        act = legal[0]; /* a computer player's mistake must not stall the table */
    }
    table_action_text(&act, text, sizeof text);
    return exec_live(t, env, out, "move %d %s", seat, text);
}

/* ---- timers ---- */

static int human_to_act(const table *t)
{
    int s = hand_in_play(t) ? engine_to_act(t) : G304_NO_SEAT;
    return s != G304_NO_SEAT && !computer_plays(&t->seat[s]) ? s : -1;
}

void table_note_turn(table *t, int64_t now)
{
    int s = human_to_act(t);
    uint8_t key = s < 0 ? G304_NO_SEAT : (uint8_t)s;
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
    table_note_turn(t, now);
    int s = human_to_act(t);
    if (s >= 0 && idle_ms > 0 && now - t->turn_since >= idle_ms) {
        exec_live(t, env, out, "away %d", s);
        table_note_turn(t, now);
    } else if (s >= 0 && remind_ms > 0 && !t->reminded && now - t->turn_since >= remind_ms) {
        char text[RENDER_MAX];
        seat_names n;
        names_of(t, env, &n);
        size_t said = is_grid(t) ? gridtable_turn_text(t, env, text, sizeof text) : render_turn(&t->st, n.names, text, sizeof text);
        if (said) out_room(out, t->seat[s].user, "Reminder — %s", text);
        t->reminded = 1;
    }
    return table_next_timer(t, remind_ms, idle_ms, close_ms);
}

size_t table_match_text(const table *t, const table_env *env, char *buf, size_t len)
{
    seat_names n;
    if (is_grid(t)) return gridtable_match_text(t, env, buf, len);
    names_of(t, env, &n);
    if (!t->started || t->hand_no == 0)
        return (size_t)snprintf(buf, len, "Table %" PRId64 " has not started.", t->id);
    int16_t tok[2] = {t->tokens[0], t->tokens[1]};
    if (t->st.phase == G304_PHASE_DONE) tok[0] = t->st.tokens[0], tok[1] = t->st.tokens[1];
    return (size_t)snprintf(buf, len, "Match at table %" PRId64 ", hand %d: %s & %s %d tokens, %s & %s %d tokens.",
                            t->id, t->hand_no, n.names[0], n.names[2], tok[0], n.names[1], n.names[3], tok[1]);
}

void table_prompt(table *t, const table_env *env, table_out *out)
{
    char text[RENDER_MAX + 32], hand[RENDER_MAX];
    seat_names n;
    if (is_grid(t)) {
        gridtable_prompt(t, env, out);
        return;
    }
    if (t->prompted == t->seq || !hand_in_play(t)) return;
    int s = t->st.to_act;
    if (s == G304_NO_SEAT || computer_plays(&t->seat[s])) return;
    t->prompted = t->seq;
    names_of(t, env, &n);
    if (render_turn(&t->st, n.names, text, sizeof text)) out_room(out, t->seat[s].user, "%s", text);
    if (t->st.phase == G304_PHASE_PLAY || t->st.phase == G304_PHASE_TRUMP) {
        render_hand(&t->st, s, hand, sizeof hand);
        snprintf(text, sizeof text, "Your turn. Your hand: %s", hand);
        out_private(out, env, t, t->seat[s].user, text);
    }
    g304_action legal[G304_MAX_LEGAL];
    int nlegal = t->st.phase == G304_PHASE_BID4 ? g304_legal(&t->st, s, legal) : 0;
    for (int i = 0; i < nlegal; i++)
        if (legal[i].kind == G304_DO_REDEAL) {
            snprintf(text, sizeof text, "Your four cards are worth %d points: you may ask for a redeal (%sredeal) "
                     "before you bid or pass.", cardset_points(t->st.hand[s]), env->prefix);
            out_private(out, env, t, t->seat[s].user, text);
        }
}

size_t table_rules_text(const table *t, char *buf, size_t len)
{
    if (is_grid(t)) return gridtable_rules_text(&t->g.rules, buf, len);
    return render_rules(&t->rules, buf, len);
}

/* ---- helpers lent to gridtable.c (gridtable.h) ---- */

void table_say(table_out *o, const char *mention, const char *fmt, ...)
{
    char line[RENDER_MAX];
    va_list ap;
    if (!o) return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    out_text(o, "", mention, line);
}

void table_say_private(table_out *o, const table_env *env, const table *t, const char *user, const char *text)
{
    out_private(o, env, t, user, text);
}

void table_reply(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                 const char *fmt, ...)
{
    char text[RENDER_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    reply(out, t, env, user, is_private, "%s", text);
}

void table_refuse_privately(table_out *out, const table *t, const table_env *env, const char *user, int is_private,
                            const char *text)
{
    refuse_privately(out, t, env, user, is_private, "%s", text);
}

int table_exec_live(table *t, const table_env *env, table_out *out, const char *entry)
{
    return exec_live(t, env, out, "%s", entry);
}

const char *table_seat_label(const table *t, const table_env *env, int s, char *buf, size_t len)
{
    return seat_label(t, env, s, buf, len);
}

const char *table_seat_word(const table *t, int s) { return seat_word(t, s); }

void table_add_score(table_out *o, const store_standing *d) { out_score(o, d); }

int table_may_manage(const table *t, const char *user, int moderator) { return may_manage(t, user, moderator); }

int table_may_change(table *t, const table_env *env, const char *user, int moderator, int is_private,
                     const char *game, const char *doing, table_out *out)
{
    if (t->started) {
        if (!strcmp(doing, "start it")) reply(out, t, env, user, is_private, "the %s is already under way.", game);
        else reply(out, t, env, user, is_private, "options are set before the %s starts.", game);
        return 0;
    }
    if (!may_manage(t, user, moderator)) {
        reply(out, t, env, user, is_private, "only players at the table, its creator or a moderator may %s.", doing);
        return 0;
    }
    return 1;
}

void table_option_value(const cmd *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s", c->arg2);
    for (char *p = buf; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
}

int table_computer_plays(const table *t, int s) { return computer_plays(&t->seat[s]); }

int table_seated(const table *t, int s) { return seated(&t->seat[s]); }
