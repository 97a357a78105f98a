/* aiexec.c — an outside program as a player (interface and protocol in aiexec.h).
 *
 * The program is a child process whose standard input and output are one end of a socket pair (a
 * socket, unlike a pipe, can be written with MSG_NOSIGNAL: a program that quits raises no SIGPIPE in
 * the caller, whatever its signal settings). A request is written whole, then the reply is read
 * with poll() against one deadline, so a program that writes half a line and stops is as late as one
 * that writes nothing. On any failure the child is killed (SIGKILL, by its own pid) and reaped at
 * once, and the next request starts a fresh one: no reply from an earlier request can be taken for a
 * later one. The program leads its own process group, so the kill reaches everything its shell
 * started. The caller's end is close-on-exec, so a program never inherits another's socket.
 *
 * The request is built from the same pieces the other players see: g304_view_of() for the seat,
 * g304_trick_card_for() for every card in the tricks, g304_legal() for the moves, in the shapes of
 * `cardroom replay`'s output (replay_move_json for the moves). The reply is read by replay's own
 * action reader. */
#include "aiexec.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "replay.h"

struct aiexec {
    char *command;
    long limit_ms;
    pid_t pid; /* 0 when not running */
    int fd;    /* our end of the socket pair, -1 when not running */
    long starts;
    size_t have; /* bytes read past the last reply, kept for the next */
    char buf[AIEXEC_LINE_MAX + 1];
};

aiexec *aiexec_new(const char *command, long limit_ms)
{
    aiexec *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->command = strdup(command);
    if (!x->command) {
        free(x);
        return NULL;
    }
    x->limit_ms = limit_ms > 0 ? limit_ms : 1;
    x->fd = -1;
    return x;
}

/* Kills the program (its process group) if it runs, and reaps it. */
static void aiexec_stop(aiexec *x)
{
    if (x->fd >= 0) close(x->fd);
    x->fd = -1;
    if (x->pid > 0) {
        kill(-x->pid, SIGKILL); /* its process group: the shell and whatever it started */
        while (waitpid(x->pid, NULL, 0) < 0 && errno == EINTR) {}
    }
    x->pid = 0;
    x->have = 0;
}

void aiexec_free(aiexec *x)
{
    if (!x) return;
    aiexec_stop(x);
    free(x->command);
    free(x);
}

long aiexec_starts(const aiexec *x) { return x->starts; }

static int aiexec_start(aiexec *x)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(sv[1], STDIN_FILENO); /* dup2 leaves the copies open across exec */
        dup2(sv[1], STDOUT_FILENO);
        signal(SIGPIPE, SIG_DFL);
        execl("/bin/sh", "sh", "-c", x->command, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid); /* also here, so that a kill right after the fork reaches the whole group */
    close(sv[1]);
    x->pid = pid;
    x->fd = sv[0];
    x->have = 0;
    x->starts++;
    return 0;
}

static long aiexec_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int aiexec_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

aiexec_status aiexec_ask(aiexec *x, const char *request, char *reply, size_t len)
{
    if (x->pid == 0 && aiexec_start(x) < 0) return AIEXEC_GONE;
    if (aiexec_write_all(x->fd, request, strlen(request)) < 0 || aiexec_write_all(x->fd, "\n", 1) < 0) {
        aiexec_stop(x);
        return AIEXEC_GONE;
    }
    long deadline = aiexec_now_ms() + x->limit_ms;
    for (;;) {
        char *nl = memchr(x->buf, '\n', x->have);
        if (nl) {
            size_t n = (size_t)(nl - x->buf);
            snprintf(reply, len, "%.*s", (int)n, x->buf);
            x->have -= n + 1;
            memmove(x->buf, nl + 1, x->have);
            return AIEXEC_OK;
        }
        if (x->have >= AIEXEC_LINE_MAX) {
            aiexec_stop(x);
            return AIEXEC_LONG;
        }
        long left = deadline - aiexec_now_ms();
        if (left <= 0) {
            aiexec_stop(x);
            return AIEXEC_SLOW;
        }
        struct pollfd pfd = {.fd = x->fd, .events = POLLIN};
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) continue; /* the deadline check above ends it */
        ssize_t k = r < 0 ? -1 : read(x->fd, x->buf + x->have, AIEXEC_LINE_MAX - x->have);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            aiexec_stop(x);
            return AIEXEC_GONE;
        }
        x->have += (size_t)k;
    }
}

/* ---- the request ---- */

static json_t *aiexec_card(card_t c) { return c < CARD_COUNT ? json_string(card_str(c)) : json_null(); }

static json_t *aiexec_seat(int seat) { return seat >= 0 && seat < G304_SEATS ? json_integer(seat) : json_null(); }

static json_t *aiexec_cards(cardset_t s)
{
    json_t *a = json_array();
    for (; s && a; s &= s - 1)
        if (json_array_append_new(a, aiexec_card(cardset_first(s))) < 0) json_decref(a), a = NULL;
    return a;
}

static int aiexec_put(json_t *array, json_t *item)
{
    return array && item && json_array_append_new(array, item) == 0 ? 0 : (json_decref(item), -1);
}

/* Every trick begun, as the seat sees it: its cards (null where it may not see one) and the points,
 * when it can see them all. */
static json_t *aiexec_tricks(const g304_state *st, int seat)
{
    json_t *all = json_array();
    if (st->phase != G304_PHASE_PLAY && st->phase != G304_PHASE_DONE) return all;
    int last = st->trick_no < G304_TRICKS ? st->trick_no : G304_TRICKS - 1;
    for (int t = 0; t <= last && all; t++) {
        const g304_trick *tr = &st->tricks[t];
        if (tr->n == 0) continue;
        json_t *seats = json_array(), *cards = json_array(), *down = json_array();
        int hidden = 0, bad = 0;
        for (int i = 0; i < tr->n; i++) {
            card_t c = g304_trick_card_for(st, tr, i, seat);
            hidden |= c == CARD_HIDDEN;
            bad |= aiexec_put(seats, json_integer(tr->seat[i])) | aiexec_put(cards, aiexec_card(c)) |
                   aiexec_put(down, json_boolean(tr->facedown >> i & 1));
        }
        json_t *points = tr->winner == G304_NO_SEAT || hidden ? json_null() : json_integer(tr->points);
        json_t *o = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "leader", tr->leader, "seats", seats, "cards", cards,
                              "face_down", down, "winner", aiexec_seat(tr->winner), "points", points);
        if (bad || aiexec_put(all, o) < 0) json_decref(all), all = NULL;
    }
    return all;
}

static json_t *aiexec_bids(const aiworld_history *h)
{
    json_t *a = json_array();
    for (int i = 0; h && i < h->n && a; i++) {
        const aiworld_bid *b = &h->bid[i];
        g304_action m = {.kind = b->kind, .amount = b->amount};
        json_t *o = replay_move_json(&m);
        if (o && (json_object_set_new(o, "seat", json_integer(b->seat)) < 0 ||
                  json_object_set_new(o, "round", json_integer(b->round)) < 0))
            json_decref(o), o = NULL;
        if (aiexec_put(a, o) < 0) json_decref(a), a = NULL;
    }
    return a;
}

char *aiexec_request(const g304_state *st, int seat, const aiworld_history *h)
{
    ai304_input in; /* the view, the legal moves and the points as this seat counts them */
    ai304_input_of(st, seat, &in);
    const g304_view *v = &in.view;
    json_t *legal = json_array(), *hands = json_array(), *sizes = json_array(), *rules = json_object();
    for (int i = 0; i < in.nlegal && legal; i++)
        if (aiexec_put(legal, replay_move_json(&in.legal[i])) < 0) json_decref(legal), legal = NULL;
    for (int s = 0; s < G304_SEATS; s++) {
        cardset_t shown = s == seat ? v->hand : s == v->caps_seat ? v->caps_shown & g304_cards_of(st, s) : 0;
        int known = s == seat || s == v->caps_seat;
        if (aiexec_put(hands, known ? aiexec_cards(shown) : json_null()) < 0) json_decref(hands), hands = NULL;
        if (aiexec_put(sizes, json_integer(v->hand_size[s])) < 0) json_decref(sizes), sizes = NULL;
    }
    for (int i = 0; g304_option_names[i] && rules; i++) {
        char buf[32];
        const char *val = g304_rules_get(&st->rules, g304_option_names[i], buf, sizeof buf);
        if (json_object_set_new(rules, g304_option_names[i], json_string(val ? val : "?")) < 0)
            json_decref(rules), rules = NULL;
    }
    char trump[2] = {v->trump >= 0 ? suit_letter(v->trump) : 0, 0};
    json_t *bid = !v->bid ? json_null() : v->bid == G304_PCC ? json_string("pcc") : json_integer(v->bid);
    json_t *doc = json_pack(
        "{s:i, s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:o, s:o, s:[ii], s:[ii], s:o, s:o}", "seat",
        seat, "phase", g304_phase_name((g304_phase)v->phase), "dealer", v->dealer, "to_act", aiexec_seat(v->to_act),
        "legal", legal ? legal : json_null(), "trump_maker", aiexec_seat(v->maker), "bid", bid, "bidder",
        v->bid ? aiexec_seat(v->bidder) : json_null(), "trump", v->trump >= 0 ? json_string(trump) : json_null(),
        "indicator", aiexec_card(v->indicator), "open", v->trump_open, "hands", hands ? hands : json_null(),
        "hand_sizes", sizes ? sizes : json_null(), "tricks", aiexec_tricks(st, seat), "points",
        in.trick_points[0], in.trick_points[1], "tokens", v->tokens[0], v->tokens[1], "bids", aiexec_bids(h),
        "rules", rules ? rules : json_null());
    char *line = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    return line;
}

/* ---- the reply ---- */

int aiexec_reply(const g304_rules *r, const char *line, size_t len, int seat, g304_action *a, char *err,
                 size_t errlen)
{
    json_error_t je;
    json_t *obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!obj || !json_is_object(obj)) { /* jansson's text may quote the bytes: the position only */
        if (obj) snprintf(err, errlen, "the reply is not a JSON object");
        else snprintf(err, errlen, "the reply is not valid JSON (at byte %d)", je.position);
        json_decref(obj);
        return -1;
    }
    if (!json_object_get(obj, "seat")) json_object_set_new(obj, "seat", json_integer(seat));
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int who = -1, rc = replay_304_action(r, text, strlen(text), &who, a, err, errlen);
    free(text);
    if (rc != 0) return -1;
    if (who != seat) {
        snprintf(err, errlen, "the reply is for seat %d, the request was for seat %d", who, seat);
        return -1;
    }
    return 0;
}
