/* game304.c — 304 at a table (game304.h): options, deals, moves, what each seat may see, and
 * the words for them, behind the table interface (game.h).
 *
 * Every change is a journal entry applied by entry(), live and on a rebuild alike; a command is
 * first checked against a copy of the state so that a refusal says why in words and leaves no
 * entry. A rebuild skips the moves of hands that are over (rebuild_skips): each deal entry
 * states where they left the match, so a rebuild costs the current hand, not the whole match.
 * Secrets: a refusal that may name cards, the trump or a hand's points goes to the player
 * privately; the indicator, and a play that would go face down, are refused in the room, and
 * the player is told privately on his turn that such a move must be sent privately. The room
 * hears each move as one line that ends with whose turn it is (say_events); turn_said keeps
 * the prompt from saying that turn again.
 *
 * Four or six players (R-SIX-…): the option `players` (journaled as "set players 6", by
 * `!new 304 6` or `!set players 6` before the start) decides the seats, their names (South…,
 * or "seat 1"… for six), the pack cards are read from and the deals; everything else asks the
 * engine for its numbers (g304_seats(), g304_deck_size()). */
#include "game304.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ai304.h"
#include "aiplay.h"
#include "judge.h"
#include "render.h"
#include "seed.h"

_Static_assert(sizeof(game304_state) <= TABLE_GAME_STATE_MAX, "a 304 table's state must fit the table");
_Static_assert(RENDER_MAX <= TABLE_TEXT_MAX, "304's texts must fit a table's line");

#define NAME_MAX_LEN 320
#define DASH " \xE2\x80\x94 " /* " — " between the pieces of a line */

typedef struct {
    int level;          /* the table's level, easy where the searching players do not play */
    aiworld_input in;   /* at easy only in.base is filled */
    g304_action action;
} question304;

_Static_assert(sizeof(question304) <= TABLE_QUESTION_MAX, "a 304 question must fit the table's");

/* A move the Caps judge must search for, judged off the loop: the hand before it and the move;
 * then judge_apply()'s answer — the hand after it and what it said. */
typedef struct {
    g304_state st;
    g304_action a;
    int seat;
    int code;
    g304_events ev;
} judging;

_Static_assert(sizeof(judging) <= TABLE_QUESTION_MAX, "a judged move must fit the table's question");

/* ---- names ---- */

typedef struct {
    char buf[G304_MAX_SEATS][NAME_MAX_LEN];
    const char *names[G304_MAX_SEATS];
} seat_names;

static int nseats(const game304_state *g) { return g304_seats(&g->rules); }

/* The first hand's dealer comes from its seed: its last byte, taken modulo the seats. */
static int first_dealer(const game304_state *g, const uint8_t seed[STORE_SEED_BYTES])
{
    return seed[SEED_BYTES - 1] % nseats(g);
}

static void names_of(const game304_state *g, const game_host *h, seat_names *n)
{
    memset(n->names, 0, sizeof n->names);
    for (int s = 0; s < nseats(g); s++) n->names[s] = h->seat_label(h, s, n->buf[s], sizeof n->buf[s]);
}

/* ---- moves as journal text ---- */

/* The canonical journal text of a move: "bid 160", "play JH", "caps JH 9H". */
static size_t action_text(const g304_action *a, char *buf, size_t len)
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

/* Reads it back, with the cards of the table's pack. Returns 0, or -1. */
static int action_parse(const g304_rules *r, const char *text, g304_action *a)
{
    int pack = g304_deck_size(r);
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
        if (sscanf(rest, " %u", &v) != 1 || v >= (unsigned)pack) return -1;
        return a->amount = (uint16_t)v, 0;
    case G304_DO_TRUMP:
    case G304_DO_PLAY:
        if (sscanf(rest, " %7s", c) != 1 || card_parse_pack(c, strlen(c), pack, &a->card, NULL, 0) != 0) return -1;
        return 0;
    case G304_DO_CAPS:
        while (sscanf(rest, " %7s%n", c, &off) == 1) {
            if (a->n >= G304_TRICKS || card_parse_pack(c, strlen(c), pack, &a->order[a->n], NULL, 0) != 0) return -1;
            a->n++;
            rest += off;
        }
        return 0;
    default: return *rest ? -1 : 0;
    }
}

/* ---- seats and options ---- */

static void init(void *gs, const cfg *config)
{
    game304_state *g = gs;
    g->rules = config->rules;
    int level = aiplay_level_parse(config->level);
    g->level = (uint8_t)(level < 0 ? AIPLAY_EASY : level);
    g->st.phase = G304_PHASE_DONE;
    g->st.to_act = G304_NO_SEAT;
}

static int seats(const void *gs) { return nseats(gs); }

static const char *seat_name(const void *gs, int seat) { return cmd_seat_name(seat, nseats(gs)); }

static int card_pack(const void *gs) { return g304_deck_size(&((const game304_state *)gs)->rules); }

/* The option `players` (apart from the rules' options: it sets the seats): "4" or "6". */
static int set_players(g304_rules *r, const char *value, g304_error *e)
{
    int players = strcmp(value, "4") == 0 ? 4 : strcmp(value, "6") == 0 ? 6 : 0;
    if (players) return g304_rules_set_players(r, players, e);
    e->code = G304_E_PHASE;
    snprintf(e->msg, sizeof e->msg, "option players is 4 or 6, not %.40s", value);
    return -1;
}

/* Sets option name to value in r, or in *level for the table's own option level (beside the
 * rules). Returns 0, or -1 with the refusal in msg. */
static int set_option(g304_rules *r, uint8_t *level, const char *name, const char *value, char *msg, size_t msg_len)
{
    g304_error e;
    if (strcmp(name, "level") == 0) {
        int l = aiplay_level_parse(value);
        if (l < 0) {
            snprintf(msg, msg_len, "option level is one of easy, normal, expert, not '%.40s'", value);
            return -1;
        }
        *level = (uint8_t)l;
        return 0;
    }
    if ((strcmp(name, "players") == 0 ? set_players(r, value, &e) : g304_rules_set(r, name, value, &e)) != 0) {
        snprintf(msg, msg_len, "%s", e.msg);
        return -1;
    }
    return 0;
}

static int option(const void *gs, const char *name, const char *value, char *canon, size_t canon_len, char *msg,
                  size_t msg_len)
{
    const game304_state *g = gs;
    g304_rules r = g->rules;
    uint8_t level = g->level;
    if (set_option(&r, &level, name, value, msg, msg_len) != 0) return -1;
    if (strcmp(name, "players") == 0) snprintf(canon, canon_len, "%d", g304_seats(&r));
    else if (strcmp(name, "level") == 0) snprintf(canon, canon_len, "%s", aiplay_level_name(level));
    else g304_rules_get(&r, name, canon, canon_len);
    return 0;
}

static size_t rules_text(const void *gs, const char *prefix, const char *rules_url, char *buf, size_t len)
{
    const game304_state *g = gs;
    char level[32];
    snprintf(level, sizeof level, "level=%s", aiplay_level_name(g->level));
    return render_rules(&g->rules, level, prefix, rules_url, buf, len);
}

/* ---- entries ---- */

/* Renders a move's (or a deal's) events: what the room hears on one line — head (the deal's
 * words, or NULL), then the move (render_move), then whose turn it is when the hand goes on,
 * mentioning that player when a person plays the seat — and the private events to each
 * person who may see them. Returns 1 when the room heard the turn. */
static int say_events(const game304_state *g, const game_host *h, const char *head, const g304_events *ev)
{
    seat_names n;
    char text[RENDER_MAX * 2], turn[RENDER_MAX];
    if (!h->talk) return 0;
    names_of(g, h, &n);
    render_move(&g->st, ev, n.names, text, sizeof text);
    int turned = g->st.phase != G304_PHASE_DONE && g->st.to_act != G304_NO_SEAT &&
                 render_turn(&g->st, n.names, turn, sizeof turn) > 0;
    const char *pieces[] = {head, text, turned ? turn : NULL};
    h->say_line(h, turned ? g->st.to_act : -1, pieces, 3);
    for (int i = 0; i < ev->n; i++) {
        const g304_event *e = &ev->ev[i];
        if (e->vis == G304_VIS_ALL) continue;
        for (int k = 0; k < nseats(g); k++) {
            const char *user = h->t->seat[k].user;
            if (!user[0] || !g304_event_visible(e, k)) continue;
            if (render_event(&g->st, e, k, n.names, text, sizeof text)) h->tell(h, user, text);
        }
    }
    return turned;
}

/* After a hand: its seed, the standings, and the end of the match. */
static void hand_over(game304_state *g, const game_host *h)
{
    const g304_result *r = &g->st.result;
    char hex[SEED_HEX], chex[SEED_HEX];
    uint8_t commit[SEED_BYTES];
    seed_commitment(g->seed, commit);
    h->say(h, NULL, "Seed of hand %d" DASH "check the deal: cardroom verify %s %s %d%s", g->hand_no,
           seed_hex(g->seed, hex), seed_hex(commit, chex), g->dealer, nseats(g) == 6 ? " --players 6" : "");
    for (int s = 0; s < nseats(g) && h->talk; s++) {
        const table_seat *p = &h->t->seat[s];
        if (!p->user[0]) continue;
        store_standing d;
        memset(&d, 0, sizeof d);
        snprintf(d.user, sizeof d.user, "%s", p->user);
        d.hands = 1;
        d.tokens = r->delta[s & 1];
        if (s == g->st.maker && r->made >= 0) {
            d.made = r->made == 1;
            d.failed = r->made == 0;
        }
        if (r->match_over) {
            d.matches = 1;
            d.matches_won = r->match_winner == (s & 1);
        }
        h->add_score(h, &d);
    }
    g->tokens[0] = g->st.tokens[0];
    g->tokens[1] = g->st.tokens[1];
    g->dealer = r->next_dealer;
    if (r->match_over) h->finish(h);
}

/* The judge's search, on a worker thread (table_search). */
static void judge_search(table_question *q, caps_solver *solver)
{
    judging j;
    memcpy(&j, q->bytes, sizeof j);
    j.code = judge_apply(solver, &j.st, j.seat, &j.a, &j.ev, NULL);
    memcpy(q->bytes, &j, sizeof j);
}

/* A move applied under the Caps judge. Most moves need no search and are judged here; the
 * others go off the loop (h->search), and the move waits for the answer. */
static int entry_move(game304_state *g, const game_host *h, int seat, const char *text, char *err, size_t errlen)
{
    g304_action a;
    g304_events ev;
    g304_error e;
    g304_state before = g->st;
    ev.n = 0;
    if (!h->t->started || g->hand_no == 0 || action_parse(&g->rules, text, &a) != 0) {
        snprintf(err, errlen, "move \"%s\" does not apply here", text);
        return -1;
    }
    g304_code code;
    if (judge_would_search(&g->st, seat, &a)) {
        table_question q;
        judging j;
        memset(&q, 0, sizeof q);
        memset(&j, 0, sizeof j);
        j.st = g->st;
        j.a = a;
        j.seat = seat;
        memcpy(q.bytes, &j, sizeof j);
        if (!h->search(h, &q, judge_search)) return TABLE_WAITS;
        memcpy(&j, q.bytes, sizeof j);
        code = (g304_code)j.code;
        if (code == G304_OK) g->st = j.st, ev = j.ev;
        else g304_apply(&j.st, seat, &a, NULL, &e); /* the refusal in words */
    } else {
        code = judge_apply(h->judge, &g->st, seat, &a, &ev, &e);
    }
    if (code != G304_OK) {
        snprintf(err, errlen, "move \"%s\" by seat %d refused: %s", text, seat, e.msg);
        return -1;
    }
    aiworld_history_note(&g->bidding, &before, seat, &a);
    if (say_events(g, h, NULL, &ev)) g->turn_said = h->t->seq + 1; /* the entry about to be counted */
    if (g->st.phase == G304_PHASE_DONE) hand_over(g, h);
    return 0;
}

/* "deal DEALER TOKENS0 TOKENS1": see game304.h. On a rebuild the moves of the hand before may
 * have been skipped: the entry's dealer and tokens are then taken as they stand. */
static int entry_deal(game304_state *g, const game_host *h, const char *args, int rebuilding, char *err,
                      size_t errlen)
{
    card_t deck[CARD_IDS];
    g304_events ev;
    char hex[SEED_HEX], label[NAME_MAX_LEN], head[NAME_MAX_LEN + 2 * SEED_HEX];
    uint8_t commit[SEED_BYTES];
    int dealer, t0, t1;
    if (sscanf(args, "%d %d %d", &dealer, &t0, &t1) != 3 || dealer < 0 || dealer >= nseats(g)) {
        snprintf(err, errlen, "deal \"%.40s\" names no dealer and tokens", args);
        return -1;
    }
    if (!h->t->started || h->t->over || (!rebuilding && g->hand_no > 0 && g->st.phase != G304_PHASE_DONE)) {
        snprintf(err, errlen, "no deal is due");
        return -1;
    }
    if (h->seed(h, g->hand_no + 1, g->seed) != 0) {
        snprintf(err, errlen, "no seed for hand %d", g->hand_no + 1);
        return -1;
    }
    if (g->hand_no == 0) g->dealer = first_dealer(g, g->seed); /* the first dealer is dealt too */
    if (rebuilding) g->dealer = (uint8_t)dealer, g->tokens[0] = (int16_t)t0, g->tokens[1] = (int16_t)t1;
    if (g->dealer != dealer || g->tokens[0] != t0 || g->tokens[1] != t1) {
        snprintf(err, errlen, "deal %d %d %d does not follow from the hands before (%d %d %d)", dealer, t0, t1,
                 g->dealer, g->tokens[0], g->tokens[1]);
        return -1;
    }
    g->hand_no++;
    g->bidding.n = 0;
    g304_shuffle(g->seed, &g->rules, deck);
    ev.n = 0;
    g304_start(&g->st, &g->rules, g->dealer, g->tokens, deck, &ev);
    judge_update(h->judge, &g->st);
    seed_commitment(g->seed, commit);
    snprintf(head, sizeof head, "Hand %d" DASH "dealer %s, seed commitment %s", g->hand_no,
             h->seat_label(h, g->dealer, label, sizeof label), seed_hex(commit, hex));
    if (say_events(g, h, head, &ev)) g->turn_said = h->t->seq + 1;
    return 0;
}

static int entry_set(game304_state *g, const game_host *h, const char *rest, char *err, size_t errlen)
{
    char name[64], value[64], msg[G304_MSG_MAX];
    if (sscanf(rest, "%63s %63s", name, value) != 2 ||
        set_option(&g->rules, &g->level, name, value, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "entry \"set %.56s\" sets no option", rest);
        return -1;
    }
    int players = strcmp(name, "players") == 0;
    if (players && h->talk) {
        char teams[RENDER_MAX];
        render_teams(&g->rules, NULL, teams, sizeof teams);
        h->say(h, NULL, "This table has %s seats now: %s.", nseats(g) == 6 ? "six" : "four", teams);
    } else if (!players) {
        h->say(h, NULL, "Option %s is now %s.", name, value);
    }
    return 0;
}

static int entry_start(game304_state *g, const game_host *h, char *err, size_t errlen)
{
    char teams[RENDER_MAX] = "";
    for (int s = 0; s < nseats(g); s++)
        if (!table_seat_taken(&h->t->seat[s])) {
            snprintf(err, errlen, "start with seat %d empty", s);
            return -1;
        }
    h->begin(h);
    g->tokens[0] = g->tokens[1] = g->rules.start_tokens;
    if (nseats(g) == 6 && h->talk) { /* no compass points: the room hears who plays with whom */
        seat_names n;
        names_of(g, h, &n);
        render_teams(&g->rules, n.names, teams, sizeof teams);
    }
    h->say(h, NULL, "The match begins: %s%seach team has %d token%s, and a team that has none left loses.", teams,
           teams[0] ? "; " : "", g->rules.start_tokens, g->rules.start_tokens == 1 ? "" : "s");
    return 0;
}

static int entry(void *gs, const game_host *h, const char *word, int seat, const char *rest, int rebuilding, char *err,
                 size_t errlen)
{
    game304_state *g = gs;
    if (strcmp(word, "set") == 0 && !h->t->started) return entry_set(g, h, rest, err, errlen);
    if (strcmp(word, "start") == 0 && !h->t->started) return entry_start(g, h, err, errlen);
    if (strcmp(word, "deal") == 0) return entry_deal(g, h, rest, rebuilding, err, errlen);
    if (strcmp(word, "move") == 0) return entry_move(g, h, seat, rest, err, errlen);
    return 1;
}

/* A move before the last deal belongs to a hand that is over: that deal states where it left
 * the match. */
static void rebuild_skips(char *const *entries, int n, uint8_t *skip)
{
    int last_deal = -1;
    for (int i = 0; i < n; i++)
        if (strncmp(entries[i], "deal ", 5) == 0) last_deal = i;
    for (int i = 0; i < last_deal; i++) skip[i] = strncmp(entries[i], "move ", 5) == 0;
}

/* ---- commands from people ---- */

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

/* Turns a game command into an engine action. Returns 0, or -1 after replying. */
static int action_of(const game304_state *g, const game_host *h, const char *user, int is_private, int seat,
                     const cmd *c, g304_action *a)
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
            render_hand(&g->st, seat, hand, sizeof hand);
            h->refuse(h, user, is_private, "a Caps call lists all your cards in the order you will play them, e.g. "
                      "%scaps J♥ 9♥ …; you hold %s", h->prefix, hand);
            return -1;
        }
        a->n = c->ncards > G304_TRICKS ? G304_TRICKS : c->ncards;
        memcpy(a->order, c->cards, a->n);
        break;
    default: return -1;
    }
    return 0;
}

static int is_facedown_play(const game304_state *g, int seat, const g304_action *a)
{
    g304_state copy = g->st;
    g304_events ev;
    ev.n = 0;
    if (a->kind != G304_DO_PLAY || g304_apply(&copy, seat, a, &ev, NULL) != G304_OK) return 0;
    for (int i = 0; i < ev.n; i++)
        if (ev.ev[i].kind == G304_EV_FACEDOWN && ev.ev[i].seat == seat) return 1;
    return 0;
}

static int cmd_move(const game304_state *g, const game_host *h, const char *user, int seat, int is_private,
                    const cmd *c, char *entry_text, size_t len)
{
    int quiet = c->kind == CMD_PLAY && c->bare;
    if (c->kind == CMD_PLAY && c->joker) { /* 304 has no joker; "JK" alone in the room is chat, as it always was */
        if (!c->bare || is_private)
            h->reply(h, user, is_private, "304 has no joker: a card is rank then suit, like JS, 10h, "
                     "J\xE2\x99\xA0 or jack of spades.");
        return 0;
    }
    if (seat < 0 || !h->t->started || g->hand_no == 0) {
        if (!quiet)
            h->reply(h, user, is_private, seat < 0 ? "you are not playing at this table (%sjoin to sit down)."
                                                   : "the match has not started (%sstart).", h->prefix);
        return 0;
    }
    if (quiet && g->st.to_act != seat) return 0; /* a card said on one's own turn is a move, else chat */
    if (c->kind == CMD_TRUMP && !is_private) {
        h->reply(h, user, 0, "the indicator is secret: send %strump CARD to me privately (%s). Everyone here saw "
                 "this message, so choose your indicator with that in mind.", h->prefix, h->private_how);
        return 0;
    }
    g304_action a;
    if (action_of(g, h, user, is_private, seat, c, &a) != 0) return 0;
    g304_state copy = g->st;
    g304_error e;
    if (g304_apply(&copy, seat, &a, NULL, &e) != G304_OK) {
        if (e.code == G304_E_TURN && g->st.to_act != G304_NO_SEAT) {
            char label[NAME_MAX_LEN];
            h->reply(h, user, is_private, "it is not your turn: %s is to act.",
                     h->seat_label(h, g->st.to_act, label, sizeof label));
        } else if (refusal_is_public(e.code)) {
            h->reply(h, user, is_private, "%s", e.msg);
        } else {
            h->refuse(h, user, is_private, "%s", e.msg);
        }
        return 0;
    }
    if (!is_private && is_facedown_play(g, seat, &a)) {
        h->reply(h, user, 0, "that card would go face down, which is secret: send %splay CARD to me privately (%s).",
                 h->prefix, h->private_how);
        return 0;
    }
    char text[TABLE_ENTRY_MAX];
    action_text(&a, text, sizeof text);
    snprintf(entry_text, len, "move %d %s", seat, text);
    return 1;
}

static int command(const void *gs, const game_host *h, const char *user, int seat, int is_private, const cmd *c,
                   char *entry_text, size_t len)
{
    switch (c->kind) {
    case CMD_CUT:
    case CMD_BID:
    case CMD_PASS:
    case CMD_PARTNER:
    case CMD_REDEAL:
    case CMD_TRUMP:
    case CMD_OPEN:
    case CMD_PLAY:
    case CMD_CAPS:
    case CMD_SPOILT: return cmd_move(gs, h, user, seat, is_private, c, entry_text, len);
    case CMD_MARK:
        if (strcmp(c->word, "bid") == 0) { /* "bid a1 …": what the parser said of it before ContractGrid */
            h->reply(h, user, is_private, "a bid is a number like 160 (or 60), or pcc: %sbid 160", h->prefix);
            return 0;
        }
        /* fall through */
    case CMD_GRID:
    case CMD_EXCLUDE:
        h->reply(h, user, is_private, "%s%s is a ContractGrid command, and this table plays 304 (%shelp lists "
                 "the commands).", h->prefix, c->word, h->prefix);
        return 0;
    default:
        h->reply(h, user, is_private, "%s%s is not a 304 command (%shelp lists them).", h->prefix, c->word, h->prefix);
        return 0;
    }
}

/* ---- what happens by itself ---- */

/* The order to call Caps with for a computer seat, from the judge's record: the cards it still
 * holds, in the proven order. Returns the count, or 0 if the record does not cover them. */
static int caps_order_for(const game304_state *g, int s, card_t order[G304_TRICKS])
{
    cardset_t held = g304_cards_of(&g->st, s), listed = 0;
    int n = 0;
    for (int i = 0; i < g->st.certain_n[s]; i++) {
        card_t c = g->st.certain_order[s][i];
        if (held & CARDSET_BIT(c)) order[n++] = c, listed |= CARDSET_BIT(c);
    }
    return n > 0 && listed == held ? n : 0;
}

/* Deals the first and every next hand; calls Caps for computer seats once the judge finds it
 * certain for them. */
static int follow_up(const void *gs, const game_host *h)
{
    const game304_state *g = gs;
    int added = 0;
    for (int guard = 0; guard < 8 && h->t->started && !h->t->over; guard++) {
        if (g->hand_no == 0 || g->st.phase == G304_PHASE_DONE) {
            uint8_t seed[STORE_SEED_BYTES];
            int dealer = g->dealer;
            if (g->hand_no == 0) { /* the first dealer comes from the first seed */
                if (h->seed(h, 1, seed) != 0) break;
                dealer = first_dealer(g, seed);
            }
            if (!h->exec(h, "deal %d %d %d", dealer, g->tokens[0], g->tokens[1])) break;
            added++;
            continue;
        }
        int called = 0;
        for (int s = 0; s < nseats(g) && !called; s++) {
            card_t order[G304_TRICKS];
            int n;
            if (!table_seat_computer(&h->t->seat[s]) || g->st.phase != G304_PHASE_PLAY ||
                !g304_caps_open_for(&g->st, s) || g->st.certain_at[s] == G304_NEVER ||
                (n = caps_order_for(g, s, order)) == 0)
                continue;
            g304_action a = {.kind = G304_DO_CAPS, .card = CARD_NONE, .n = (uint8_t)n};
            memcpy(a.order, order, (size_t)n);
            char text[TABLE_ENTRY_MAX];
            action_text(&a, text, sizeof text);
            called = h->exec(h, "move %d %s", s, text);
        }
        if (!called) break;
        added++;
    }
    return added;
}

/* ---- who acts, and what each one sees ---- */

static int in_hand(const void *gs)
{
    const game304_state *g = gs;
    return g->hand_no > 0 && g->st.phase != G304_PHASE_DONE;
}

static int to_act(const void *gs)
{
    const game304_state *g = gs;
    return g->st.to_act == G304_NO_SEAT ? -1 : g->st.to_act;
}

static size_t cards(const void *gs, int seat, char *buf, size_t len)
{
    return render_hand(&((const game304_state *)gs)->st, seat, buf, len);
}

static size_t view(const void *gs, const game_host *h, game_view what, int seat, char *buf, size_t len)
{
    const game304_state *g = gs;
    seat_names n;
    if (len > RENDER_MAX) len = RENDER_MAX; /* one message, as 304 always said it */
    if (what == GAME_VIEW_HAND) {
        if (g->hand_no == 0) return 0;
        size_t used = (size_t)snprintf(buf, len, "Your hand: ");
        return used + render_hand(&g->st, seat, buf + used, len - used);
    }
    names_of(g, h, &n);
    if (!h->t->started || g->hand_no == 0) {
        size_t used = (size_t)snprintf(buf, len, "Table %" PRId64 " (not started):", h->t->id);
        for (int s = 0; s < nseats(g) && used < len; s++)
            used += (size_t)snprintf(buf + used, len - used, " %s%s", n.names[s], s < nseats(g) - 1 ? "," : ".");
        if (nseats(g) == 6 && used < len) { /* six seats have no compass points to tell the teams by */
            used += (size_t)snprintf(buf + used, len - used, " Teams: ");
            if (used < len) used += render_teams(&g->rules, NULL, buf + used, len - used);
            if (used < len) used += (size_t)snprintf(buf + used, len - used, ".");
        }
        return used < len ? used : len - 1;
    }
    if (what == GAME_VIEW_TABLE) return render_table(&g->st, seat, n.names, buf, len);
    return render_last(&g->st, seat, n.names, buf, len);
}

/* The suit the seat cannot follow when every card it may play would go face down (a closed
 * game), else -1. */
static int facedown_suit(const game304_state *g, int seat)
{
    g304_action legal[G304_MAX_LEGAL];
    const g304_trick *t = &g->st.tricks[g->st.trick_no];
    int n = g->st.phase == G304_PHASE_PLAY && t->n > 0 ? g304_legal(&g->st, seat, legal) : 0, down = 0;
    for (int i = 0; i < n; i++) down += legal[i].kind == G304_DO_PLAY && is_facedown_play(g, seat, &legal[i]);
    return down > 0 ? CARD_SUIT(t->card[0]) : -1;
}

/* The turn to a player whose move was not on the room's last line: the room hears it (with a
 * mention). Privately, in play and when placing the indicator, the player gets the hand if he
 * wants turn notices (!notify), and always when the move must be sent privately: the
 * indicator, or a card that would go face down — said in the room it would show the card.
 * The redeal a weak four-card hand may ask for is said to him alone, always. */
static void prompt(const void *gs, const game_host *h, int s)
{
    const game304_state *g = gs;
    char text[2 * RENDER_MAX], hand[RENDER_MAX], why[RENDER_MAX] = "";
    const char *user = h->t->seat[s].user;
    seat_names n;
    if (g->turn_said != h->t->seq) {
        names_of(g, h, &n);
        if (render_turn(&g->st, n.names, text, sizeof text)) h->say(h, user, "%s", text);
    }
    int suit = facedown_suit(g, s);
    if (g->st.phase == G304_PHASE_TRUMP)
        snprintf(why, sizeof why, " Choose the indicator: send %strump CARD privately (%s).", h->prefix,
                 h->private_how);
    else if (suit >= 0)
        snprintf(why, sizeof why, " You cannot follow %s, so your card goes face down: send %splay CARD privately "
                 "(%s).", suit_symbol(suit), h->prefix, h->private_how);
    if ((g->st.phase == G304_PHASE_PLAY || g->st.phase == G304_PHASE_TRUMP) && (why[0] || h->notify(h, user))) {
        render_hand(&g->st, s, hand, sizeof hand);
        snprintf(text, sizeof text, "Your turn.%s Your hand: %s", why, hand);
        h->tell(h, user, text);
    }
    g304_action legal[G304_MAX_LEGAL];
    int nlegal = g->st.phase == G304_PHASE_BID4 ? g304_legal(&g->st, s, legal) : 0;
    for (int i = 0; i < nlegal; i++)
        if (legal[i].kind == G304_DO_REDEAL) {
            snprintf(text, sizeof text, "Your four cards are worth %d points: you may ask for a redeal (%sredeal) "
                     "before you bid or pass.", cardset_points(g->st.hand[s]), h->prefix);
            h->tell(h, user, text);
        }
}

static size_t turn_text(const void *gs, const game_host *h, char *buf, size_t len)
{
    seat_names n;
    names_of(gs, h, &n);
    return render_turn(&((const game304_state *)gs)->st, n.names, buf, len);
}

static size_t match_text(const void *gs, const game_host *h, char *buf, size_t len)
{
    const game304_state *g = gs;
    seat_names n;
    char team[2][RENDER_MAX];
    names_of(g, h, &n);
    if (!h->t->started || g->hand_no == 0)
        return (size_t)snprintf(buf, len, "Table %" PRId64 " has not started.", h->t->id);
    int16_t tok[2] = {g->tokens[0], g->tokens[1]};
    if (g->st.phase == G304_PHASE_DONE) tok[0] = g->st.tokens[0], tok[1] = g->st.tokens[1];
    for (int k = 0; k < 2; k++) render_team_names(&g->rules, n.names, k, team[k], sizeof team[k]);
    return (size_t)snprintf(buf, len, "Match at table %" PRId64 ", hand %d: %s %d token%s, %s %d token%s.", h->t->id,
                            g->hand_no, team[0], tok[0], tok[0] == 1 ? "" : "s", team[1], tok[1], tok[1] == 1 ? "" : "s");
}

/* ---- the computer player (aiplay: ai304 at easy) ---- */

/* The seat's knowledge at the table's level (aiplay.h), four or six players alike. */
static void ask(const void *gs, int seat, table_question *q)
{
    const game304_state *g = gs;
    question304 x;
    memset(&x, 0, sizeof x);
    x.level = g->level;
    if (x.level == AIPLAY_EASY) ai304_input_of(&g->st, seat, &x.in.base);
    else aiworld_input_of(&g->st, seat, &g->bidding, &x.in);
    memcpy(q->bytes, &x, sizeof x);
}

/* On a worker thread. The searching levels' work space (the solver's table, a few MiB) is made
 * for each decision, which clears it anyway; without it the easy player answers. */
static int think(table_question *q, uint64_t seed)
{
    question304 x;
    memcpy(&x, q->bytes, sizeof x);
    aiplay *p = x.level == AIPLAY_EASY ? NULL : aiplay_new();
    int ok = aiplay_choose(p, x.level, &x.in, seed, &x.action) == 0;
    aiplay_free(p);
    memcpy(q->bytes, &x, sizeof x);
    return ok;
}

static int answer(const void *gs, int seat, const table_question *q, int ok, char *entry_text, size_t len)
{
    const game304_state *g = gs;
    question304 x;
    char text[TABLE_ENTRY_MAX];
    memcpy(&x, q->bytes, sizeof x);
    g304_action act = x.action;
    if (!ok) act.kind = G304_DO_COUNT; /* no choice: a legal move below */
    g304_state copy = g->st;
    if (g304_apply(&copy, seat, &act, NULL, NULL) != G304_OK) {
        g304_action legal[G304_MAX_LEGAL];
        if (g304_legal(&g->st, seat, legal) == 0) return 0;
        act = legal[0]; /* a computer player's mistake must not stall the table */
    }
    action_text(&act, text, sizeof text);
    snprintf(entry_text, len, "move %d %s", seat, text);
    return 1;
}

static const char *const seat_entries[] = {"move", NULL};

const table_game game304 = {
    .name = "304",
    .title = "304",
    .match = "match",
    .seat_entries = seat_entries,
    .init = init,
    .seats = seats,
    .seat_name = seat_name,
    .card_pack = card_pack,
    .option = option,
    .rules_text = rules_text,
    .entry = entry,
    .rebuild_skips = rebuild_skips,
    .command = command,
    .follow_up = follow_up,
    .in_hand = in_hand,
    .to_act = to_act,
    .cards = cards,
    .view = view,
    .prompt = prompt,
    .turn_text = turn_text,
    .match_text = match_text,
    .ask = ask,
    .think = think,
    .answer = answer,
};
