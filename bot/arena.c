/* arena.c — `cardroom arena` (interface and rules of the match in arena.h).
 *
 * One hand is driven here as a table drives it: every move goes through the Caps judge
 * (judge_apply), Caps is called from the judge's record, and each seat's player is asked for its move
 * with only what the seat may know (aiworld_input_of, or the exec request). The decks of deal i come
 * from splitmix64 of (seed, i, shuffle number) fed to g304_shuffle(), so both plays of a deal, and any
 * rerun with the same seed, see the same cards; decisions are seeded the same way.
 *
 * The statistics are plain: the margin per deal, its mean and a 95 % interval from the normal
 * approximation (mean ± 1.96 s/√n), which the duplicate pairing makes narrow. */
#include "arena.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aiexec.h"
#include "aiplay.h"
#include "deal.h"
#include "judge.h"
#include "option.h"

#define ARENA_MAX_SHUFFLES 16 /* a deal thrown in this often scores nothing */
#define ARENA_MAX_MOVES 400   /* far above the longest hand */
#define ARENA_ROLES 3         /* A, B, A's partner */

struct arena {
    arena_options o;
    aiplay *ai;
    aiexec *ex[ARENA_ROLES];
    caps_solver *judge;
    arena_faults faults[ARENA_ROLES];
};

static const char *const arena_role_names[ARENA_ROLES] = {"A", "B", "A's partner"};

static uint64_t arena_mix(uint64_t a, uint64_t b)
{
    uint64_t s = a ^ (b + 0x632BE59BD9B4E019ull) * 0x9E3779B97F4A7C15ull;
    return aiworld_random(&s);
}

int arena_spec_parse(const char *text, arena_spec *spec, char *err, size_t errlen)
{
    memset(spec, 0, sizeof *spec);
    if (strncmp(text, "exec:", 5) == 0) {
        if (!text[5] || strlen(text + 5) >= ARENA_COMMAND_MAX) {
            snprintf(err, errlen, "exec: needs a command (at most %d bytes)", ARENA_COMMAND_MAX - 1);
            return -1;
        }
        spec->kind = ARENA_EXEC;
        snprintf(spec->command, sizeof spec->command, "%s", text + 5);
        return 0;
    }
    if (strcmp(text, "random") == 0) {
        spec->kind = ARENA_RANDOM;
        return 0;
    }
    int level = aiplay_level_parse(text);
    if (level < 0) {
        snprintf(err, errlen, "unknown player \"%.60s\": easy, normal, expert, random or exec:COMMAND", text);
        return -1;
    }
    spec->kind = ARENA_BUILTIN;
    spec->level = level;
    return 0;
}

/* Whether these players can play these rules: 0, or -1 with a sentence in err. */
static int arena_check(const arena_options *o, char *err, size_t errlen)
{
    int exec = o->a.kind == ARENA_EXEC || o->b.kind == ARENA_EXEC || o->a_partner.kind == ARENA_EXEC;
    if (exec && g304_seats(&o->rules) != G304_SEATS) {
        snprintf(err, errlen, "outside players (exec:) play the four-player game only");
        return -1;
    }
    return 0;
}

arena *arena_new(const arena_options *o, char *err, size_t errlen)
{
    if (arena_check(o, err, errlen) != 0) return NULL;
    arena *ar = calloc(1, sizeof *ar);
    if (!ar) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ar->o = *o;
    const arena_spec *specs[ARENA_ROLES] = {&o->a, &o->b, &o->a_partner};
    int searching = 0;
    for (int r = 0; r < ARENA_ROLES; r++) {
        searching |= specs[r]->kind == ARENA_BUILTIN && specs[r]->level != AIPLAY_EASY;
        if (specs[r]->kind == ARENA_EXEC && !(ar->ex[r] = aiexec_new(specs[r]->command, o->limit_ms))) goto oom;
    }
    ar->judge = caps_solver_new(0);
    if (!ar->judge || (searching && !(ar->ai = aiplay_new()))) goto oom;
    return ar;
oom:
    arena_free(ar);
    snprintf(err, errlen, "out of memory");
    return NULL;
}

void arena_free(arena *ar)
{
    if (!ar) return;
    for (int r = 0; r < ARENA_ROLES; r++) aiexec_free(ar->ex[r]);
    aiplay_free(ar->ai);
    caps_solver_free(ar->judge);
    free(ar);
}

const arena_faults *arena_faults_of(const arena *ar, int who) { return &ar->faults[who]; }

/* ---- one decision ---- */

static const arena_spec *arena_spec_of(const arena *ar, int role)
{
    return role == 0 ? &ar->o.a : role == 1 ? &ar->o.b : &ar->o.a_partner;
}

/* The role in a seat when A's team is a_team: A in its first seat, its partner in the other (in both
 * others with six players). */
static int arena_role(int seat, int a_team)
{
    if ((seat & 1) != a_team) return 1;
    return seat == a_team ? 0 : 2;
}

static int arena_random_move(const g304_state *st, int seat, uint64_t seed, g304_action *out)
{
    g304_action legal[G304_MAX_LEGAL];
    int n = g304_legal(st, seat, legal);
    if (n == 0) return -1;
    uint64_t s = seed;
    *out = legal[(aiworld_random(&s) >> 33) % (uint64_t)n];
    return 0;
}

/* Whether the engine accepts a from seat now. */
static int arena_accepts(const g304_state *st, int seat, const g304_action *a)
{
    g304_state copy = *st;
    return g304_apply(&copy, seat, a, NULL, NULL) == G304_OK;
}

/* The move of the seat to act, from its player; a random legal move for a fault. */
static void arena_decide(arena *ar, const g304_state *st, int seat, int role, const aiworld_history *h, uint64_t seed,
                         g304_action *out)
{
    const arena_spec *spec = arena_spec_of(ar, role);
    arena_faults *f = &ar->faults[role];
    if (spec->kind == ARENA_EXEC) {
        char *req = aiexec_request(st, seat, h), reply[AIEXEC_LINE_MAX], why[256];
        aiexec_status s = req ? aiexec_ask(ar->ex[role], req, reply, sizeof reply) : AIEXEC_GONE;
        free(req);
        if (s == AIEXEC_OK && aiexec_reply(&st->rules, reply, strlen(reply), seat, out, why, sizeof why) == 0 &&
            arena_accepts(st, seat, out))
            return;
        if (s == AIEXEC_SLOW) f->slow++;
        else if (s == AIEXEC_GONE) f->gone++;
        else f->wrong++;
    } else if (spec->kind == ARENA_BUILTIN) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        aiworld_input in;
        aiworld_input_of(st, seat, h, &in);
        int rc = aiplay_choose(ar->ai, spec->level, &in, seed, out);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        if (ar->o.observe)
            ar->o.observe(ar->o.observe_ctx, spec->level, st->phase,
                          (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, aiplay_nodes(ar->ai));
        if (rc == 0 && arena_accepts(st, seat, out)) return;
        f->refused++;
    }
    arena_random_move(st, seat, seed, out);
}

/* ---- one hand ---- */

/* R-CAPS-CALL as tables call it for computer players: the first seat for which the judge found Caps
 * certain calls it with the proven order (its cards still held, in that order). */
static int arena_call_caps(arena *ar, g304_state *st)
{
    for (int s = 0; s < g304_seats(&st->rules); s++) {
        if (st->phase != G304_PHASE_PLAY || !g304_caps_open_for(st, s) || st->certain_at[s] == G304_NEVER) continue;
        g304_action a = {.kind = G304_DO_CAPS, .card = CARD_NONE};
        cardset_t held = g304_cards_of(st, s), listed = 0;
        for (int i = 0; i < st->certain_n[s]; i++) {
            card_t c = st->certain_order[s][i];
            if (held & CARDSET_BIT(c)) a.order[a.n++] = c, listed |= CARDSET_BIT(c);
        }
        if (listed == held && a.n && judge_apply(ar->judge, st, s, &a, NULL, NULL) == G304_OK) return 1;
    }
    return 0;
}

static void arena_deck(const g304_rules *rules, uint64_t seed, long index, int shuffle, card_t deck[CARD_IDS])
{
    uint8_t bytes[DEAL_SEED_BYTES];
    uint64_t s = arena_mix(arena_mix(seed, (uint64_t)index), (uint64_t)shuffle);
    for (int i = 0; i < DEAL_SEED_BYTES; i += 8) {
        uint64_t x = aiworld_random(&s);
        memcpy(bytes + i, &x, 8);
    }
    g304_shuffle(bytes, rules, deck);
}

/* Plays one hand to its end. Returns 0, or -1 if it did not end. */
static int arena_hand(arena *ar, g304_state *st, int a_team, uint64_t seed)
{
    aiworld_history h = {0};
    int open_asked = 0;
    for (int k = 0; k < ARENA_MAX_MOVES; k++) {
        if (st->phase == G304_PHASE_DONE) return 0;
        if (arena_call_caps(ar, st)) continue;
        uint64_t dseed = arena_mix(seed, (uint64_t)k);
        if (st->phase == G304_PHASE_PLAY && !open_asked && st->trick_no == 0 && st->tricks[0].n == 0) {
            open_asked = 1; /* R-OPEN before the first lead, when the maker does not lead */
            int role = arena_role(st->maker, a_team);
            const arena_spec *spec = arena_spec_of(ar, role);
            g304_action a;
            if (st->maker != st->to_act && spec->kind == ARENA_BUILTIN) {
                aiworld_input in;
                aiworld_input_of(st, st->maker, &h, &in);
                if (aiplay_choose(ar->ai, spec->level, &in, dseed, &a) == 0 && a.kind == G304_DO_OPEN &&
                    judge_apply(ar->judge, st, st->maker, &a, NULL, NULL) == G304_OK)
                    continue;
            }
        }
        int seat = st->to_act;
        if (seat == G304_NO_SEAT) return -1;
        g304_action a;
        arena_decide(ar, st, seat, arena_role(seat, a_team), &h, dseed, &a);
        g304_state before = *st;
        if (judge_apply(ar->judge, st, seat, &a, NULL, NULL) != G304_OK) return -1;
        aiworld_history_note(&h, &before, seat, &a);
    }
    return -1;
}

/* One play of deal `index` with A's team in a_team. */
static int arena_play_once(arena *ar, long index, int a_team, arena_play *p)
{
    memset(p, 0, sizeof *p);
    p->seats = g304_seats(&ar->o.rules);
    p->dealer = (int)(index % p->seats);
    p->a_team = a_team;
    g304_state st;
    for (int k = 0; k < ARENA_MAX_SHUFFLES; k++) {
        card_t deck[CARD_IDS];
        arena_deck(&ar->o.rules, ar->o.seed, index, k, deck);
        if (k == 0) memcpy(p->deck, deck, sizeof deck);
        int16_t tokens[2] = {ar->o.rules.start_tokens, ar->o.rules.start_tokens};
        g304_start(&st, &ar->o.rules, p->dealer, tokens, deck, NULL);
        /* decisions are seeded by the deal and the shuffle, not by who sits where: the same players
         * in the same seats make the same moves in both plays */
        uint64_t seed = arena_mix(arena_mix(ar->o.seed ^ 0x5EED, (uint64_t)index), (uint64_t)k);
        if (arena_hand(ar, &st, a_team, seed) < 0) return -1;
        p->shuffles = k + 1;
        int end = st.result.end;
        if (end != G304_END_REDEAL && end != G304_END_SPOILT) break;
    }
    p->result = st.result;
    p->maker = st.maker;
    p->bid = st.maker == G304_NO_SEAT ? 0 : st.bid;
    p->points[0] = st.points[0];
    p->points[1] = st.points[1];
    p->tokens_a = st.result.delta[a_team];
    p->tokens_b = st.result.delta[!a_team];
    return 0;
}

int arena_play_deal(arena *ar, long index, arena_deal *out)
{
    for (int k = 0; k < 2; k++)
        if (arena_play_once(ar, index, k, &out->play[k]) < 0) return -1;
    out->margin = 0;
    for (int k = 0; k < 2; k++) out->margin += (out->play[k].tokens_a - out->play[k].tokens_b) / 2.0;
    return 0;
}

/* ---- the command ---- */

typedef struct {
    long hands_maker, made, failed, points_maker, points_defending, hands_defending, caps, wrong_caps;
} arena_side;

typedef struct {
    long deals, thrown, no_bid;
    double sum, sumsq;
    arena_side side[2]; /* A's team, B's team */
} arena_totals;

static void arena_count(arena_totals *t, const arena_play *p)
{
    const g304_result *r = &p->result;
    t->thrown += p->shuffles - 1;
    if (p->maker == G304_NO_SEAT || r->made < 0) {
        t->no_bid++;
        return;
    }
    int mt = p->maker & 1;
    for (int team = 0; team < 2; team++) {
        arena_side *s = &t->side[team == p->a_team ? 0 : 1];
        if (team == mt) {
            s->hands_maker++;
            s->points_maker += p->points[team];
            if (r->made) s->made++;
            else s->failed++;
        } else {
            s->hands_defending++;
            s->points_defending += p->points[team];
        }
        if (r->caps_seat != G304_NO_SEAT && (r->caps_seat & 1) == team && r->caps_won && r->wrong_seat == G304_NO_SEAT)
            s->caps++;
        if (r->wrong_seat != G304_NO_SEAT && (r->wrong_seat & 1) == team) s->wrong_caps++;
    }
}

static const char *arena_end_name(int end)
{
    static const char *const names[] = {"none", "played", "redeal", "all_pass", "spoilt", "violation"};
    return end >= 0 && end < 6 ? names[end] : "?";
}

static void arena_print_deal(FILE *out, long index, const arena_deal *d, int json)
{
    if (json) {
        fprintf(out, "{\"deal\":%ld,\"margin\":%.1f,\"plays\":[", index, d->margin);
        for (int k = 0; k < 2; k++) {
            const arena_play *p = &d->play[k];
            fprintf(out, "%s{\"a_seats\":[%d,%d", k ? "," : "", p->a_team, p->a_team + 2);
            if (p->seats == 6) fprintf(out, ",%d", p->a_team + 4);
            fprintf(out, "],\"dealer\":%d,\"end\":\"%s\",\"maker\":", p->dealer, arena_end_name(p->result.end));
            if (p->maker == G304_NO_SEAT) fprintf(out, "null,\"bid\":null");
            else if (p->bid == G304_PCC) fprintf(out, "%d,\"bid\":\"pcc\"", p->maker);
            else fprintf(out, "%d,\"bid\":%d", p->maker, p->bid);
            fprintf(out, ",\"made\":%s,\"points\":[%d,%d],\"tokens_a\":%d,\"tokens_b\":%d}",
                    p->result.made < 0 ? "null" : p->result.made ? "true" : "false", p->points[0], p->points[1],
                    p->tokens_a, p->tokens_b);
        }
        fprintf(out, "]}\n");
        return;
    }
    fprintf(out, "deal %ld (dealer %d):", index + 1, d->play[0].dealer);
    for (int k = 0; k < 2; k++) {
        const arena_play *p = &d->play[k];
        fprintf(out, " %s A at %d/%d", k ? " |" : "", p->a_team, p->a_team + 2);
        if (p->seats == 6) fprintf(out, "/%d", p->a_team + 4);
        fputc(':', out);
        if (p->maker == G304_NO_SEAT || p->result.made < 0) fprintf(out, " %s", arena_end_name(p->result.end));
        else if (p->bid == G304_PCC)
            fprintf(out, " %s PCC %s", (p->maker & 1) == p->a_team ? "A" : "B", p->result.made ? "made" : "failed");
        else
            fprintf(out, " %s %d %s, %d-%d", (p->maker & 1) == p->a_team ? "A" : "B", p->bid,
                    p->result.made ? "made" : "failed", p->points[p->a_team], p->points[!p->a_team]);
        fprintf(out, ", A %+d B %+d", p->tokens_a, p->tokens_b);
    }
    fprintf(out, " | A-B %+.1f\n", d->margin);
}

static double arena_mean(long sum, long n) { return n ? (double)sum / n : 0; }

static void arena_print_totals(FILE *out, const arena_totals *t, const arena_faults *faults, double seconds, int json)
{
    double n = (double)t->deals, mean = n ? t->sum / n : 0;
    double var = n > 1 ? (t->sumsq - n * mean * mean) / (n - 1) : 0;
    double half = n > 1 ? 1.96 * sqrt(var > 0 ? var : 0) / sqrt(n) : 0;
    if (json) {
        fprintf(out, "{\"deals\":%ld,\"margin\":%.4f,\"ci95\":[%.4f,%.4f],\"deals_per_second\":%.3f", t->deals, mean,
                mean - half, mean + half, seconds > 0 ? n / seconds : 0);
        for (int s = 0; s < 2; s++) {
            const arena_side *x = &t->side[s];
            fprintf(out,
                    ",\"%s\":{\"maker\":%ld,\"made\":%ld,\"failed\":%ld,\"points_as_maker\":%.1f,"
                    "\"points_defending\":%.1f,\"caps\":%ld,\"wrong_caps\":%ld}",
                    s ? "b" : "a", x->hands_maker, x->made, x->failed, arena_mean(x->points_maker, x->hands_maker),
                    arena_mean(x->points_defending, x->hands_defending), x->caps, x->wrong_caps);
        }
        fprintf(out, ",\"faults\":{");
        for (int r = 0; r < ARENA_ROLES; r++) {
            const arena_faults *f = &faults[r];
            fprintf(out, "%s\"%s\":{\"wrong\":%ld,\"slow\":%ld,\"gone\":%ld,\"refused\":%ld}", r ? "," : "",
                    r == 0 ? "a" : r == 1 ? "b" : "a_partner", f->wrong, f->slow, f->gone, f->refused);
        }
        fprintf(out, "}}\n");
        return;
    }
    fprintf(out, "\n%ld deals (%ld hands), %.1f s, %.2f deals/s\n", t->deals, 2 * t->deals, seconds,
            seconds > 0 ? n / seconds : 0);
    fprintf(out, "A - B, tokens per deal: %+.3f, 95%% interval %+.3f .. %+.3f\n", mean, mean - half, mean + half);
    fprintf(out, "hands thrown in and dealt again: %ld; hands with no bid: %ld\n", t->thrown, t->no_bid);
    for (int s = 0; s < 2; s++) {
        const arena_side *x = &t->side[s];
        fprintf(out,
                "%s's team: maker in %ld hands, %ld made, %ld failed; card points %.1f as maker, %.1f defending; "
                "Caps %ld, wrong Caps %ld\n",
                s ? "B" : "A", x->hands_maker, x->made, x->failed, arena_mean(x->points_maker, x->hands_maker),
                arena_mean(x->points_defending, x->hands_defending), x->caps, x->wrong_caps);
    }
    for (int r = 0; r < ARENA_ROLES; r++) {
        const arena_faults *f = &faults[r];
        if (f->wrong + f->slow + f->gone + f->refused)
            fprintf(out, "%s lost decisions to a random move: %ld wrong, %ld slow, %ld ended, %ld refused\n",
                    arena_role_names[r], f->wrong, f->slow, f->gone, f->refused);
    }
}

/* A worker's record on its pipe: a deal, or (index -1) its faults at the end. */
typedef struct {
    long index;
    arena_deal deal;
    arena_faults faults[ARENA_ROLES];
} arena_record;

/* Reads (writing == 0) or writes all n bytes of buf. Returns 0, or -1 at an error or the end. */
static int arena_transfer(int fd, void *buf, size_t n, int writing)
{
    char *p = buf;
    while (n) {
        ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* A worker: deals first, first + step, ... to fd, then its faults. Exit status 0 or 1. */
static int arena_worker(const arena_options *o, long deals, long first, long step, int fd)
{
    char why[256];
    arena *ar = arena_new(o, why, sizeof why);
    if (!ar) return 1;
    arena_record r;
    memset(&r, 0, sizeof r);
    for (long i = first; i < deals; i += step) {
        r.index = i;
        if (arena_play_deal(ar, i, &r.deal) < 0 || arena_transfer(fd, &r, sizeof r, 1) < 0) {
            arena_free(ar);
            return 1;
        }
    }
    r.index = -1;
    memcpy(r.faults, ar->faults, sizeof r.faults);
    arena_free(ar);
    return arena_transfer(fd, &r, sizeof r, 1) < 0;
}

static void arena_add(arena_totals *t, const arena_deal *d)
{
    t->deals++;
    t->sum += d->margin;
    t->sumsq += d->margin * d->margin;
    for (int k = 0; k < 2; k++) arena_count(t, &d->play[k]);
}

/* Plays the deals on `jobs` worker processes (deal i on worker i mod jobs) and prints them in order
 * as they complete. */
static int arena_run(const arena_options *o, long deals, int jobs, arena_totals *t, arena_faults *faults, int json,
                     int quiet, FILE *out, FILE *err)
{
    if (jobs > deals) jobs = (int)deals;
    int fds[64];
    pid_t pids[64];
    arena_deal *done = calloc((size_t)deals, sizeof *done);
    char *have = calloc((size_t)deals, 1);
    int rc = 0, open = 0;
    memset(faults, 0, sizeof(arena_faults) * ARENA_ROLES);
    if (!done || !have) rc = 1;
    for (int j = 0; j < jobs && !rc; j++) {
        int pfd[2];
        if (pipe(pfd) < 0) {
            rc = 1;
            break;
        }
        fflush(out);
        fflush(err);
        pids[j] = fork();
        if (pids[j] == 0) {
            close(pfd[0]);
            for (int k = 0; k < j; k++) close(fds[k]);
            _exit(arena_worker(o, deals, j, jobs, pfd[1]));
        }
        close(pfd[1]);
        if (pids[j] < 0) {
            close(pfd[0]);
            rc = 1;
            break;
        }
        fds[open++] = pfd[0];
    }
    long next = 0;
    int live = open;
    while (live > 0 && !rc) {
        struct pollfd pfd[64];
        for (int j = 0; j < open; j++) pfd[j] = (struct pollfd){.fd = fds[j], .events = fds[j] >= 0 ? POLLIN : 0};
        if (poll(pfd, (nfds_t)open, -1) < 0) {
            if (errno == EINTR) continue;
            rc = 1;
            break;
        }
        for (int j = 0; j < open && !rc; j++) {
            if (fds[j] < 0 || !(pfd[j].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            arena_record r;
            if (arena_transfer(fds[j], &r, sizeof r, 0) < 0 || r.index >= deals) {
                rc = 1;
                break;
            }
            if (r.index < 0) {
                for (int k = 0; k < ARENA_ROLES; k++) {
                    faults[k].wrong += r.faults[k].wrong;
                    faults[k].slow += r.faults[k].slow;
                    faults[k].gone += r.faults[k].gone;
                    faults[k].refused += r.faults[k].refused;
                }
                close(fds[j]);
                fds[j] = -1;
                live--;
                continue;
            }
            done[r.index] = r.deal;
            have[r.index] = 1;
            for (; next < deals && have[next]; next++) {
                arena_add(t, &done[next]);
                if (!quiet) arena_print_deal(out, next, &done[next], json);
                fflush(out);
            }
        }
    }
    for (int j = 0; j < open; j++) {
        int status = 0;
        if (fds[j] >= 0) close(fds[j]);
        if (rc) kill(pids[j], SIGKILL);
        if (waitpid(pids[j], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
    }
    if (!rc && next < deals) rc = 1;
    if (rc) fprintf(err, "cardroom arena: the deals could not all be played (deal %ld)\n", next + 1);
    free(done);
    free(have);
    return rc;
}

static const char arena_usage[] =
    "usage: cardroom arena --a PLAYER --b PLAYER --deals N [--seed S] [--options NAME=VALUE,...]\n"
    "                      [--a-partner PLAYER] [--time-limit MS] [--jobs N] [--json] [--quiet]\n"
    "PLAYER: easy, normal, expert, random or exec:COMMAND\n";

static int arena_number(const char *text, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* --options "caps=strict,scoring=bank", and players=6 for the six-player game (R-SIX-…) */
static int arena_options_parse(const char *text, g304_rules *r, char *err, size_t errlen)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            snprintf(err, errlen, "--options takes NAME=VALUE pairs, not \"%.60s\"", item);
            return -1;
        }
        *eq = 0;
        g304_error e;
        if (strcmp(item, "players") == 0) { /* the number of seats, apart from the play options */
            int n;
            if (option_uint(eq + 1, 0, 99, &n) < 0 || g304_rules_set_players(r, n, &e) < 0) {
                snprintf(err, errlen, "option players is 4 or 6, not \"%.40s\"", eq + 1);
                return -1;
            }
            continue;
        }
        if (g304_rules_set(r, item, eq + 1, &e) < 0) {
            snprintf(err, errlen, "%s", e.msg);
            return -1;
        }
    }
    return 0;
}

int arena_main(int argc, char **argv, FILE *out, FILE *err)
{
    arena_options o;
    memset(&o, 0, sizeof o);
    g304_rules_default(&o.rules);
    o.seed = 1;
    o.limit_ms = 5000;
    long long deals = 0, v, jobs = 1;
    int have_a = 0, have_b = 0, have_partner = 0, json = 0, quiet = 0;
    char why[256];
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(arg, "--json") == 0) json = 1;
        else if (strcmp(arg, "--quiet") == 0) quiet = 1;
        else if (!val) bad = 1;
        else if (strcmp(arg, "--a") == 0) bad = arena_spec_parse(val, &o.a, why, sizeof why), have_a = 1, i++;
        else if (strcmp(arg, "--b") == 0) bad = arena_spec_parse(val, &o.b, why, sizeof why), have_b = 1, i++;
        else if (strcmp(arg, "--a-partner") == 0)
            bad = arena_spec_parse(val, &o.a_partner, why, sizeof why), have_partner = 1, i++;
        else if (strcmp(arg, "--deals") == 0) bad = arena_number(val, 1, 100000000, &deals), i++;
        else if (strcmp(arg, "--seed") == 0) bad = arena_number(val, 0, INT64_MAX, &v), o.seed = (uint64_t)v, i++;
        else if (strcmp(arg, "--jobs") == 0) bad = arena_number(val, 1, 64, &jobs), i++;
        else if (strcmp(arg, "--time-limit") == 0) bad = arena_number(val, 1, 3600000, &v), o.limit_ms = (long)v, i++;
        else if (strcmp(arg, "--options") == 0) bad = arena_options_parse(val, &o.rules, why, sizeof why), i++;
        else {
            fprintf(err, "cardroom arena: unknown option \"%s\"\n%s", arg, arena_usage);
            return 2;
        }
        if (bad) {
            fprintf(err, "cardroom arena: bad %s%s%s\n%s", arg, why[0] ? ": " : "", why, arena_usage);
            return 2;
        }
        why[0] = 0;
    }
    if (!have_a || !have_b || !deals) {
        fprintf(err, "cardroom arena: --a, --b and --deals are needed\n%s", arena_usage);
        return 2;
    }
    if (!have_partner) o.a_partner = o.a;
    if (arena_check(&o, why, sizeof why) != 0) {
        fprintf(err, "cardroom arena: %s\n", why);
        return 2;
    }
    o.rules.cut = 0; /* a cut would only rotate the same random deck */
    arena_totals t;
    memset(&t, 0, sizeof t);
    arena_faults faults[ARENA_ROLES];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = arena_run(&o, deals, jobs, &t, faults, json, quiet, out, err);
    if (rc != 0) return rc;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (!json) {
        char names[3][ARENA_COMMAND_MAX + 8];
        const arena_spec *specs[3] = {&o.a, &o.b, &o.a_partner};
        for (int r = 0; r < 3; r++)
            snprintf(names[r], sizeof names[r], "%s%s", specs[r]->kind == ARENA_EXEC ? "exec:" : "",
                     specs[r]->kind == ARENA_EXEC ? specs[r]->command
                     : specs[r]->kind == ARENA_RANDOM ? "random"
                                                     : aiplay_level_name(specs[r]->level));
        fprintf(out, "%sA = %s (partner %s), B = %s, seed %llu", quiet ? "" : "\n", names[0], names[2], names[1],
                (unsigned long long)o.seed);
    }
    arena_print_totals(out, &t, faults, seconds, json);
    return 0;
}
