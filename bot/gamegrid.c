/* gamegrid.c — ContractGrid at a table (gamegrid.h): options, grids, hands, moves, what each
 * seat may see, and the words for them, behind the table interface (game.h).
 *
 * Every change is a journal entry applied by entry(), live and on a rebuild alike; a command is
 * first checked against a copy of the state so that a refusal says why in words and leaves no
 * entry. Secrets: only the cards. A hand goes to its player privately (the engine's DEALT event
 * has one seat's visibility); a refusal that names cards (must follow, do not hold) goes
 * privately too; the left-out card of the 25-card deck is said only when the engine reports it
 * at the end of the hand. Grids, bids, exclusions and tricks are public. As in 304, the room
 * hears each move as one line that ends with whose turn it is (say_events; turn_said keeps the
 * prompt from saying it again). */
#include "gamegrid.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "aigrid.h"
#include "render.h"
#include "render_grid.h"
#include "seed.h"

_Static_assert(sizeof(gamegrid_state) <= TABLE_GAME_STATE_MAX, "a ContractGrid table's state must fit the table");

#define NAME_MAX_LEN 320
#define DASH " \xE2\x80\x94 " /* " — " between the pieces of a line */
#define WORDS_MAX 24 /* words read from a grid or mark command (more is an error anyway) */

typedef struct {
    aigrid_input in;
    grid_action action;
} questiongrid;

_Static_assert(sizeof(questiongrid) <= TABLE_QUESTION_MAX, "a ContractGrid question must fit the table's");

/* ---- names ---- */

typedef struct {
    char buf[GRID_SEATS][NAME_MAX_LEN];
    const char *names[GRID_SEATS];
} grid_names;

static void names_of(const game_host *h, grid_names *n)
{
    for (int s = 0; s < GRID_SEATS; s++) n->names[s] = h->seat_label(h, s, n->buf[s], sizeof n->buf[s]);
}

static int in_hand(const void *gs)
{
    const gamegrid_state *g = gs;
    return g->hand_no > 0 && g->st.phase != GRID_PHASE_DONE;
}

/* The rules in force: the table's options before the first deal, the match's after. */
static const grid_rules *rules_of(const gamegrid_state *g) { return g->hand_no > 0 ? &g->st.match.rules : &g->rules; }

/* ---- moves as journal text ---- */

/* The canonical journal text of a move: "exclude H", "bid a1 b2 c3 d4", "play JK". */
static size_t action_text(const grid_rules *r, const grid_action *a, char *buf, size_t len)
{
    size_t used;
    char cell[GRID_CELL_TEXT_MAX];
    switch (a->kind) {
    case GRID_DO_EXCLUDE: return (size_t)snprintf(buf, len, "exclude %c", suit_letter(a->suit));
    case GRID_DO_BID:
        used = (size_t)snprintf(buf, len, "bid");
        for (int i = 0; i < a->n && i < GRID_MAX_CELLS && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, " %s", grid_cell_name(r, a->cells[i], cell));
        return used;
    case GRID_DO_PLAY: return (size_t)snprintf(buf, len, "play %s", grid_card_str(a->card));
    default: return (size_t)snprintf(buf, len, "?");
    }
}

/* Splits text into words at blanks and commas; returns how many (at most max). */
static int split_words(const char *text, char words[][32], int max)
{
    int n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (!*p) return n;
        size_t k = strcspn(p, " ,\t");
        if (n == max) return max + 1;
        snprintf(words[n++], 32, "%.*s", (int)(k < 31 ? k : 31), p);
        p += k;
    }
}

/* Reads a move's journal text back. Returns 0, or -1. */
static int action_parse(const grid_rules *r, const char *text, grid_action *a)
{
    char words[GRID_MAX_CELLS + 2][32];
    memset(a, 0, sizeof *a);
    a->card = CARD_NONE;
    int n = split_words(text, words, GRID_MAX_CELLS + 1);
    if (n < 1 || n > GRID_MAX_CELLS + 1) return -1;
    if (strcmp(words[0], "exclude") == 0) {
        int suit;
        if (n != 2 || strlen(words[1]) != 1 || suit_parse(words[1], 1, &suit) != 0) return -1;
        a->kind = GRID_DO_EXCLUDE;
        a->suit = (uint8_t)suit;
        return 0;
    }
    if (strcmp(words[0], "bid") == 0) {
        a->kind = GRID_DO_BID;
        for (int i = 1; i < n; i++) {
            int cell;
            if (grid_cell_parse(r, words[i], strlen(words[i]), &cell, NULL, 0) != 0) return -1;
            a->cells[a->n++] = (uint8_t)cell;
        }
        return 0;
    }
    if (strcmp(words[0], "play") == 0) {
        a->kind = GRID_DO_PLAY;
        return n == 2 && grid_card_parse(words[1], strlen(words[1]), &a->card, NULL, 0) == 0 ? 0 : -1;
    }
    return -1;
}

/* ---- seats and options ---- */

static void init(void *gs, const cfg *config)
{
    gamegrid_state *g = gs;
    (void)config; /* ContractGrid's options have no configured defaults */
    grid_rules_default(&g->rules);
    g->st.phase = GRID_PHASE_DONE;
    g->st.to_act = GRID_NO_SEAT;
}

static int seats(const void *gs)
{
    (void)gs;
    return GRID_SEATS;
}

/* seat 1, seat 2, seat 3. */
static const char *seat_name(const void *gs, int seat)
{
    static const char *const words[GRID_SEATS] = {"seat 1", "seat 2", "seat 3"};
    (void)gs;
    return seat >= 0 && seat < GRID_SEATS ? words[seat] : "?";
}

static int option(const void *gs, const char *name, const char *value, char *canon, size_t canon_len, char *msg,
                  size_t msg_len)
{
    grid_rules r = ((const gamegrid_state *)gs)->rules;
    grid_error e;
    if (grid_rules_set(&r, name, value, &e) != 0 || grid_rules_check(&r, &e) != 0) {
        snprintf(msg, msg_len, "%s.", e.msg);
        return -1;
    }
    grid_rules_get(&r, name, canon, canon_len);
    return 0;
}

static size_t rules_text(const void *gs, const char *prefix, const char *rules_url, char *buf, size_t len)
{
    return render_grid_rules(&((const gamegrid_state *)gs)->rules, prefix, rules_url, buf, len);
}

/* A new player at a seat arranges a new grid. */
static void seat_changed(void *gs, int seat)
{
    gamegrid_state *g = gs;
    g->has_grid &= (uint8_t)~(1u << seat);
}

/* ---- what the room and the players hear ---- */

/* Renders a move's (or a deal's) events: what the room hears on one line — head (the deal's
 * words, or NULL), then the move (render_grid_move), then whose turn it is when the hand goes
 * on, mentioning that player when a person plays the seat — and the private events to each
 * person who may see them. Returns 1 when the room heard the turn. */
static int say_events(const gamegrid_state *g, const game_host *h, const char *head, const grid_events *ev)
{
    grid_names n;
    char text[RENDER_MAX * 2], turn[RENDER_MAX];
    if (!h->talk) return 0;
    names_of(h, &n);
    render_grid_move(&g->st, ev, n.names, text, sizeof text);
    int turned = in_hand(g) && g->st.to_act < GRID_SEATS &&
                 render_grid_turn(&g->st, n.names, h->prefix, turn, sizeof turn) > 0;
    const char *pieces[] = {head, text, turned ? turn : NULL};
    h->say_line(h, turned ? g->st.to_act : -1, pieces, 3);
    for (int i = 0; i < ev->n; i++) {
        const grid_event *e = &ev->ev[i];
        if (e->vis == GRID_VIS_ALL) continue;
        for (int k = 0; k < GRID_SEATS; k++) {
            const char *user = h->t->seat[k].user;
            if (!user[0] || !grid_event_visible(e, k)) continue;
            if (render_grid_event(&g->st, e, k, n.names, text, sizeof text)) h->tell(h, user, text);
        }
    }
    return turned;
}

/* After the last trick: the seed, standings, and the end of the game (G-END) with its ranking
 * (the GRID_EV_GAME_OVER of ev). */
static void hand_over(const gamegrid_state *g, const game_host *h, const grid_events *ev)
{
    const grid_match *m = &g->st.match;
    char hex[SEED_HEX], chex[SEED_HEX];
    uint8_t commit[SEED_BYTES];
    seed_commitment(g->seed, commit);
    h->say(h, NULL, "Seed of hand %d" DASH "check it: cardroom verify %s %s", g->hand_no, seed_hex(g->seed, hex),
           seed_hex(commit, chex));
    for (int s = 0; s < GRID_SEATS && h->talk; s++) {
        const table_seat *p = &h->t->seat[s];
        if (!p->user[0]) continue;
        store_standing d;
        memset(&d, 0, sizeof d);
        snprintf(d.user, sizeof d.user, "%s", p->user);
        d.hands = 1;
        if (m->over) {
            d.matches = 1;
            d.matches_won = (m->winners >> s) & 1;
        }
        h->add_score(h, &d);
    }
    if (!m->over) return;
    h->finish(h);
    for (int i = 0; i < ev->n && h->talk; i++)
        if (ev->ev[i].kind == GRID_EV_GAME_OVER) {
            grid_names n;
            char text[RENDER_MAX];
            names_of(h, &n);
            render_grid_event(&g->st, &ev->ev[i], -1, n.names, text, sizeof text);
            h->say(h, NULL, "%s Table %" PRId64 " is closed; %snew grid opens a new one.", text, h->t->id, h->prefix);
        }
}

/* ---- entries ---- */

static int entry_set(gamegrid_state *g, const game_host *h, const char *rest, char *err, size_t errlen)
{
    char name[64], value[64];
    grid_rules r = g->rules;
    grid_error e;
    if (h->t->started || sscanf(rest, "%63s %63s", name, value) != 2 || grid_rules_set(&r, name, value, &e) != 0 ||
        grid_rules_check(&r, &e) != 0) {
        snprintf(err, errlen, "entry \"set %.50s\" sets no option", rest);
        return -1;
    }
    int resized = grid_cells(&r) != grid_cells(&g->rules);
    g->rules = r;
    if (strcmp(name, "small") == 0)
        h->say(h, NULL, "Option small is now %s: a %dx%d grid of %d contracts, %d cell%s bid a hand, cap %d.", value,
               grid_side(&r), grid_side(&r), grid_contract_count(&r), r.bids, r.bids == 1 ? "" : "s", r.cap);
    else
        h->say(h, NULL, "Option %s is now %s.", name, value);
    if (resized && g->has_grid) {
        g->has_grid = 0;
        h->say(h, NULL, "The grids are now %dx%d: everyone arranges a new one (%s).", grid_side(&r), grid_side(&r),
               "grid CONTRACTS... or grid random");
    }
    return 0;
}

/* Reads a grid from contract names (cell order). Returns 0, or -1 with a sentence in msg. */
static int read_grid(const grid_rules *r, const char *text, uint8_t grid[GRID_MAX_CELLS], char *msg, size_t len)
{
    char words[WORDS_MAX][32];
    int cells = grid_cells(r), n = split_words(text, words, WORDS_MAX);
    grid_error e;
    char last[GRID_CELL_TEXT_MAX];
    memset(grid, 0xFF, GRID_MAX_CELLS);
    for (int i = 0; i < n && i < WORDS_MAX; i++) {
        int c = grid_contract_parse(words[i], strlen(words[i]));
        if (c < 0) {
            snprintf(msg, len, "'%.20s' is not a contract: they are zero, one, two, first, second, third, different, "
                     "soloist, partner%s", words[i], r->small ? "" : ", alltrump, notrump, spades, hearts, diamonds, "
                     "clubs and play");
            return -1;
        }
        if (c >= grid_contract_count(r)) {
            snprintf(msg, len, "%s is not in the small game: its nine contracts are zero, one, two, first, second, "
                     "third, different, soloist and partner", grid_contract_name(c));
            return -1;
        }
        if (i < cells) grid[i] = (uint8_t)c;
    }
    if (n != cells) {
        snprintf(msg, len, "a grid names all %d contracts once, row by row from a1 to %s (you gave %d), or say random",
                 cells, grid_cell_name(r, cells - 1, last), n > WORDS_MAX ? WORDS_MAX : n);
        return -1;
    }
    if (grid_grid_check(r, grid, &e) != 0) {
        snprintf(msg, len, "%s", e.msg);
        return -1;
    }
    return 0;
}

static int entry_grid(gamegrid_state *g, const game_host *h, int seat, const char *rest, char *err, size_t errlen)
{
    uint8_t grid[GRID_MAX_CELLS];
    char msg[GRID_MSG_MAX + 64];
    if (h->t->started || seat < 0 || read_grid(&g->rules, rest, grid, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "entry \"grid %d %.40s\" arranges no grid", seat, rest);
        return -1;
    }
    memcpy(g->grid[seat], grid, sizeof grid);
    g->has_grid |= (uint8_t)(1u << seat);
    if (h->talk) {
        char label[NAME_MAX_LEN], text[RENDER_MAX];
        render_grid_grid(&g->rules, grid, 0, h->seat_label(h, seat, label, sizeof label), text, sizeof text);
        h->say(h, NULL, "%s", text);
    }
    return 0;
}

static int entry_start(const gamegrid_state *g, const game_host *h, char *err, size_t errlen)
{
    const grid_rules *r = &g->rules;
    for (int s = 0; s < GRID_SEATS; s++)
        if (!table_seat_taken(&h->t->seat[s]) || !(g->has_grid >> s & 1)) {
            snprintf(err, errlen, "start with seat %d empty or without a grid", s);
            return -1;
        }
    if (h->t->started) {
        snprintf(err, errlen, "the game has started already");
        return -1;
    }
    h->begin(h);
    h->say(h, NULL, "The game begins: it ends when someone reaches %d point%s or marks his whole grid, and whoever "
           "reaches %d without a complete grid ranks below everyone else; %d cell%s bid a hand.", r->cap,
           r->cap == 1 ? "" : "s", r->cap, r->bids, r->bids == 1 ? "" : "s");
    return 0;
}

/* "deal DEALER S0 S1 S2": see gamegrid.h. */
static int entry_deal(gamegrid_state *g, const game_host *h, const char *args, char *err, size_t errlen)
{
    int dealer, sc[GRID_SEATS];
    grid_match m;
    grid_error e;
    grid_events ev;
    card_t deck[GRID_DECK_MAX];
    char hex[SEED_HEX], label[NAME_MAX_LEN], head[NAME_MAX_LEN + 2 * SEED_HEX];
    uint8_t commit[SEED_BYTES];
    if (sscanf(args, "%d %d %d %d", &dealer, &sc[0], &sc[1], &sc[2]) != 4 || dealer < 0 || dealer >= GRID_SEATS) {
        snprintf(err, errlen, "deal \"%.40s\" names no dealer and scores", args);
        return -1;
    }
    if (!h->t->started || h->t->over || (g->hand_no > 0 && g->st.phase != GRID_PHASE_DONE)) {
        snprintf(err, errlen, "no deal is due");
        return -1;
    }
    if (h->seed(h, g->hand_no + 1, g->seed) != 0) {
        snprintf(err, errlen, "no seed for hand %d", g->hand_no + 1);
        return -1;
    }
    if (g->hand_no == 0) { /* the first dealer comes from the first seed, as in 304 */
        if (grid_match_init(&m, &g->rules, (const uint8_t(*)[GRID_MAX_CELLS])g->grid,
                            g->seed[SEED_BYTES - 1] % GRID_SEATS, &e) != 0) {
            snprintf(err, errlen, "the game cannot start: %s", e.msg);
            return -1;
        }
    } else {
        m = g->st.match;
    }
    if (m.dealer != dealer || m.scores[0] != sc[0] || m.scores[1] != sc[1] || m.scores[2] != sc[2]) {
        snprintf(err, errlen, "deal %d %d %d %d does not follow from the hands before (%d %d %d %d)", dealer, sc[0],
                 sc[1], sc[2], m.dealer, (int)m.scores[0], (int)m.scores[1], (int)m.scores[2]);
        return -1;
    }
    grid_shuffle(g->seed, &m.rules, deck);
    ev.n = 0;
    if (grid_start(&g->st, &m, deck, &ev) != GRID_OK) {
        snprintf(err, errlen, "the game is over: no more hands");
        return -1;
    }
    g->hand_no++;
    seed_commitment(g->seed, commit);
    snprintf(head, sizeof head, "Hand %d" DASH "dealer %s, seed commitment %s", g->hand_no,
             h->seat_label(h, dealer, label, sizeof label), seed_hex(commit, hex));
    if (say_events(g, h, head, &ev)) g->turn_said = h->t->seq + 1;
    return 0;
}

static int entry_move(gamegrid_state *g, const game_host *h, int seat, const char *text, char *err, size_t errlen)
{
    grid_action a;
    grid_events ev;
    grid_error e;
    ev.n = 0;
    if (!h->t->started || g->hand_no == 0 || seat < 0 || action_parse(rules_of(g), text, &a) != 0) {
        snprintf(err, errlen, "move \"%.40s\" does not apply here", text);
        return -1;
    }
    if (grid_apply(&g->st, seat, &a, &ev, &e) != GRID_OK) {
        snprintf(err, errlen, "move \"%.40s\" by seat %d refused: %s", text, seat, e.msg);
        return -1;
    }
    if (say_events(g, h, NULL, &ev)) g->turn_said = h->t->seq + 1; /* the entry about to be counted */
    if (g->st.phase == GRID_PHASE_DONE) hand_over(g, h, &ev);
    return 0;
}

static int entry(void *gs, const game_host *h, const char *word, int seat, const char *rest, int rebuilding, char *err,
                 size_t errlen)
{
    gamegrid_state *g = gs;
    (void)rebuilding; /* every entry is applied on a rebuild: nothing is restated */
    if (strcmp(word, "set") == 0) return entry_set(g, h, rest, err, errlen);
    if (strcmp(word, "grid") == 0) return entry_grid(g, h, seat, rest, err, errlen);
    if (strcmp(word, "start") == 0) return entry_start(g, h, err, errlen);
    if (strcmp(word, "deal") == 0) return entry_deal(g, h, rest, err, errlen);
    if (strcmp(word, "move") == 0) return entry_move(g, h, seat, rest, err, errlen);
    return 1;
}

/* ---- commands ---- */

/* The journal text of a grid: its contract names in cell order. */
static void grid_text(const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < grid_cells(r) && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", grid_contract_name(grid[i]));
}

/* A `grid random` draw: a shuffle keyed by the table's first seed (BLAKE2b, so nothing of the
 * seed shows) and the journal position, so every draw differs and a fixed --seed repeats. */
static void random_grid(const gamegrid_state *g, const game_host *h, int seat, uint8_t grid[GRID_MAX_CELLS])
{
    uint8_t key[STORE_SEED_BYTES], seed[SEED_BYTES];
    char msg[96];
    int64_t id = h->t->id;
    memset(key, 0, sizeof key);
    if (h->seed(h, 1, key) != 0) memcpy(key, &id, sizeof id);
    int n = snprintf(msg, sizeof msg, "contractgrid random grid %" PRId64 " %d %" PRId64, id, seat, h->t->seq);
    crypto_generichash(seed, sizeof seed, (const unsigned char *)msg, (unsigned long long)n, key, sizeof key);
    grid_random_grid(seed, &g->rules, grid);
    sodium_memzero(key, sizeof key);
}

static int cmd_grid(const gamegrid_state *g, const game_host *h, const char *user, int seat, int is_private,
                    const cmd *c, char *entry_text, size_t len)
{
    uint8_t grid[GRID_MAX_CELLS];
    char msg[GRID_MSG_MAX + 128], text[TABLE_ENTRY_MAX];
    if (seat < 0) {
        h->reply(h, user, is_private, "you are not seated at this table (%sjoin to sit down).", h->prefix);
        return 0;
    }
    if (h->t->started) {
        h->reply(h, user, is_private, "grids are arranged before the game starts; yours is fixed now (%stable shows "
                 "it).", h->prefix);
        return 0;
    }
    if (strcmp(c->arg2, "random") == 0) {
        random_grid(g, h, seat, grid);
    } else if (read_grid(&g->rules, c->arg2, grid, msg, sizeof msg) != 0) {
        h->reply(h, user, is_private, "%s (%shelp grid).", msg, h->prefix);
        return 0;
    }
    grid_text(&g->rules, grid, text, sizeof text);
    snprintf(entry_text, len, "grid %d %s", seat, text);
    return 1;
}

/* Before the start: every person has arranged a grid; the computer players arrange theirs. */
static int start(const void *gs, const game_host *h, const char *user, int is_private)
{
    const gamegrid_state *g = gs;
    char label[NAME_MAX_LEN], missing[3 * NAME_MAX_LEN] = "";
    int nmissing = 0, applied = 0;
    for (int s = 0; s < GRID_SEATS; s++)
        if (h->t->seat[s].user[0] && !(g->has_grid >> s & 1)) {
            size_t used = strlen(missing);
            snprintf(missing + used, sizeof missing - used, "%s%s", nmissing++ ? " and " : "",
                     h->seat_label(h, s, label, sizeof label));
        }
    if (nmissing) {
        h->reply(h, user, is_private, "%s %s not arranged a grid yet: %sgrid random, or %sgrid and the %d contracts "
                 "row by row from a1 (%shelp grid).", missing, nmissing > 1 ? "have" : "has", h->prefix, h->prefix,
                 grid_cells(&g->rules), h->prefix);
        return -1;
    }
    for (int s = 0; s < GRID_SEATS; s++)
        if (!(g->has_grid >> s & 1)) {
            uint8_t grid[GRID_MAX_CELLS];
            char text[TABLE_ENTRY_MAX];
            aigrid_arrange(&g->rules, (uint64_t)h->t->id * 0x9E3779B97F4A7C15ull ^ (uint64_t)(s + 1) << 56 ^
                                          (uint64_t)h->t->seq, grid);
            grid_text(&g->rules, grid, text, sizeof text);
            applied += h->exec(h, "grid %d %s", s, text);
        }
    return applied;
}

/* Whether a refusal's words are public knowledge: those that name cards go privately. */
static int refusal_is_public(grid_code code) { return code != GRID_E_FOLLOW && code != GRID_E_NOT_HELD; }

static int cmd_move(const gamegrid_state *g, const game_host *h, const char *user, int seat, int is_private,
                    const cmd *c, const grid_action *a, char *entry_text, size_t len)
{
    int quiet = c->kind == CMD_PLAY && c->bare;
    char label[NAME_MAX_LEN], text[TABLE_ENTRY_MAX];
    if (seat < 0 || !h->t->started || g->hand_no == 0) {
        if (!quiet)
            h->reply(h, user, is_private, seat < 0 ? "you are not playing at this table (%sjoin to sit down)."
                                                   : "the game has not started (%sstart).", h->prefix);
        return 0;
    }
    if (quiet && g->st.to_act != seat) return 0; /* a card said on one's own turn is a move, else chat */
    grid_state copy = g->st;
    grid_error e;
    if (grid_apply(&copy, seat, a, NULL, &e) != GRID_OK) {
        if (e.code == GRID_E_TURN && g->st.to_act < GRID_SEATS) {
            h->reply(h, user, is_private, "it is not your turn: %s is to act.",
                     h->seat_label(h, g->st.to_act, label, sizeof label));
        } else if (e.code == GRID_E_SUIT && a->suit < SUIT_COUNT) { /* the engine names seats by number from 0 */
            char free_suits[64] = "";
            for (int s = 0, k = 0; s < SUIT_COUNT; s++)
                if (!(g->st.excluded >> s & 1)) {
                    size_t used = strlen(free_suits);
                    snprintf(free_suits + used, sizeof free_suits - used, "%s%s", k++ ? ", " : "", suit_symbol(s));
                }
            h->reply(h, user, is_private, "%s is already excluded (by %s); you may exclude %s.", suit_symbol(a->suit),
                     h->seat_label(h, g->st.excluder[a->suit], label, sizeof label), free_suits);
        } else if (refusal_is_public(e.code)) {
            h->reply(h, user, is_private, "%s.", e.msg);
        } else {
            h->refuse(h, user, is_private, "%s.", e.msg);
        }
        return 0;
    }
    action_text(rules_of(g), a, text, sizeof text);
    snprintf(entry_text, len, "move %d %s", seat, text);
    return 1;
}

/* mark / bid CELL...: the cells as the player wrote them. */
static int cmd_mark(const gamegrid_state *g, const game_host *h, const char *user, int seat, int is_private,
                    const cmd *c, char *entry_text, size_t len)
{
    char words[WORDS_MAX][32], msg[GRID_MSG_MAX];
    grid_action a;
    const grid_rules *r = rules_of(g);
    memset(&a, 0, sizeof a);
    a.kind = GRID_DO_BID;
    a.card = CARD_NONE;
    int n = split_words(c->arg2, words, WORDS_MAX);
    if (n > GRID_MAX_CELLS) {
        h->reply(h, user, is_private, "bid exactly %d cell%s of your grid, like %smark a1 b2 c3 d4.", r->bids,
                 r->bids == 1 ? "" : "s", h->prefix);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int cell;
        if (grid_cell_parse(r, words[i], strlen(words[i]), &cell, msg, sizeof msg) != 0) {
            h->reply(h, user, is_private, "%s.", msg);
            return 0;
        }
        a.cells[a.n++] = (uint8_t)cell;
    }
    return cmd_move(g, h, user, seat, is_private, c, &a, entry_text, len);
}

static int command(const void *gs, const game_host *h, const char *user, int seat, int is_private, const cmd *c,
                   char *entry_text, size_t len)
{
    const gamegrid_state *g = gs;
    grid_action a;
    memset(&a, 0, sizeof a);
    a.card = CARD_NONE;
    switch (c->kind) {
    case CMD_GRID: return cmd_grid(g, h, user, seat, is_private, c, entry_text, len);
    case CMD_EXCLUDE:
        a.kind = GRID_DO_EXCLUDE;
        a.suit = (uint8_t)c->suit;
        return cmd_move(g, h, user, seat, is_private, c, &a, entry_text, len);
    case CMD_MARK: return cmd_mark(g, h, user, seat, is_private, c, entry_text, len);
    case CMD_PLAY:
        a.kind = GRID_DO_PLAY;
        a.card = c->joker ? GRID_JOKER : c->card;
        return cmd_move(g, h, user, seat, is_private, c, &a, entry_text, len);
    case CMD_BID:
        h->reply(h, user, is_private, "at ContractGrid you bid cells of your grid: %smark a1 b2 c3 d4 (or %sbid a1 b2 "
                 "c3 d4).", h->prefix, h->prefix);
        return 0;
    case CMD_CUT:
    case CMD_PASS:
    case CMD_PARTNER:
    case CMD_REDEAL:
    case CMD_TRUMP:
    case CMD_OPEN:
    case CMD_CAPS:
    case CMD_SPOILT:
        h->reply(h, user, is_private, "%s%s belongs to 304; at this ContractGrid table you %sexclude a suit, %smark "
                 "cells and %splay cards (%shelp lists the commands).", h->prefix, c->word, h->prefix, h->prefix,
                 h->prefix, h->prefix);
        return 0;
    case CMD_HINT:
    case CMD_REVIEW:
        h->reply(h, user, is_private, "%s%s is for 304 tables: ContractGrid has no computer advice.", h->prefix,
                 c->word);
        return 0;
    default:
        h->reply(h, user, is_private, "%s%s is not a ContractGrid command (%shelp lists them).", h->prefix, c->word,
                 h->prefix);
        return 0;
    }
}

/* ---- what happens by itself ---- */

/* Deals the first and every next hand. */
static int follow_up(const void *gs, const game_host *h)
{
    const gamegrid_state *g = gs;
    if (!h->t->started || h->t->over || in_hand(g)) return 0;
    uint8_t seed[STORE_SEED_BYTES];
    const grid_match *m = &g->st.match;
    if (g->hand_no == 0) {
        if (h->seed(h, 1, seed) != 0) return 0;
        return h->exec(h, "deal %d 0 0 0", seed[SEED_BYTES - 1] % GRID_SEATS);
    }
    return h->exec(h, "deal %d %d %d %d", m->dealer, (int)m->scores[0], (int)m->scores[1], (int)m->scores[2]);
}

/* ---- who acts, and what each one sees ---- */

static int to_act(const void *gs)
{
    const gamegrid_state *g = gs;
    return g->st.to_act >= GRID_SEATS ? -1 : g->st.to_act;
}

static size_t cards(const void *gs, int seat, char *buf, size_t len)
{
    return render_grid_hand(&((const gamegrid_state *)gs)->st, seat, buf, len);
}

static size_t view(const void *gs, const game_host *h, game_view what, int seat, char *buf, size_t len)
{
    const gamegrid_state *g = gs;
    char grid[RENDER_MAX];
    grid_names n;
    size_t used;
    if (what == GAME_VIEW_HAND) {
        if (!in_hand(g)) return 0;
        used = (size_t)snprintf(buf, len, "Your hand: ");
        return used + render_grid_hand(&g->st, seat, buf + used, len - used);
    }
    names_of(h, &n);
    if (what == GAME_VIEW_LAST) {
        if (!h->t->started || g->hand_no == 0)
            return (size_t)snprintf(buf, len, "No hand has been played at this table yet.");
        return render_grid_last(&g->st, n.names, buf, len);
    }
    if (!h->t->started || g->hand_no == 0) {
        used = (size_t)snprintf(buf, len, "Table %" PRId64 " (ContractGrid, %s):", h->t->id,
                                h->t->started ? "starting" : "not started");
        for (int s = 0; s < GRID_SEATS && used < len; s++)
            used += (size_t)snprintf(buf + used, len - used, " %s%s%s", n.names[s],
                                     !table_seat_taken(&h->t->seat[s]) ? " (free)"
                                     : g->has_grid >> s & 1            ? ""
                                                                       : " (no grid yet)",
                                     s < GRID_SEATS - 1 ? "," : ".");
    } else {
        render_grid_table(&g->st, seat, n.names, buf, len);
    }
    for (int s = 0; s < GRID_SEATS; s++) {
        if (!(g->has_grid >> s & 1)) continue;
        used = strlen(buf);
        const uint8_t *cells = g->hand_no > 0 ? g->st.match.grid[s] : g->grid[s];
        render_grid_grid(rules_of(g), cells, g->hand_no > 0 ? g->st.match.marked[s] : 0, n.names[s], grid,
                         sizeof grid);
        snprintf(buf + used, len - used, "\n%s", grid);
    }
    return strlen(buf);
}

static size_t turn_text(const void *gs, const game_host *h, char *buf, size_t len)
{
    const gamegrid_state *g = gs;
    grid_names n;
    if (!in_hand(g)) return 0;
    names_of(h, &n);
    return render_grid_turn(&g->st, n.names, h->prefix, buf, len);
}

/* Whose turn it is, to the room unless the line of the move before said it; privately, to a
 * player who wants turn notices (!notify), the hand (and the grid when bidding). */
static void prompt(const void *gs, const game_host *h, int s)
{
    const gamegrid_state *g = gs;
    char text[RENDER_MAX * 2 + 128], hand[RENDER_MAX], grid[RENDER_MAX];
    const char *user = h->t->seat[s].user;
    if (g->turn_said != h->t->seq && turn_text(g, h, text, sizeof text)) h->say(h, user, "%s", text);
    if (g->st.phase == GRID_PHASE_EXCLUDE || !h->notify(h, user)) return; /* the hand was just dealt to him */
    render_grid_hand(&g->st, s, hand, sizeof hand);
    if (g->st.phase == GRID_PHASE_BID) {
        render_grid_grid(&g->st.match.rules, g->st.match.grid[s], g->st.match.marked[s], NULL, grid, sizeof grid);
        snprintf(text, sizeof text, "Your turn to bid %d cell%s (%smark CELL...). Your hand: %s\n%s",
                 g->st.match.rules.bids, g->st.match.rules.bids == 1 ? "" : "s", h->prefix, hand, grid);
    } else {
        snprintf(text, sizeof text, "Your turn. Your hand: %s", hand);
    }
    h->tell(h, user, text);
}

/* The game so far for `standings`: hand, scores, marks, and who risks the cap. */
static size_t match_text(const void *gs, const game_host *h, char *buf, size_t len)
{
    const gamegrid_state *g = gs;
    grid_names n;
    char scores[RENDER_MAX], risk[RENDER_MAX];
    names_of(h, &n);
    if (!h->t->started || g->hand_no == 0)
        return (size_t)snprintf(buf, len, "Table %" PRId64 " (ContractGrid) has not started.", h->t->id);
    const grid_match *m = &g->st.match;
    render_grid_scores(m, n.names, scores, sizeof scores);
    size_t used = (size_t)snprintf(buf, len, "ContractGrid at table %" PRId64 ", hand %d (cap %d): %s.", h->t->id,
                                   g->hand_no, m->rules.cap, scores);
    if (used < len && render_grid_cap_risk(m, n.names, risk, sizeof risk))
        used += (size_t)snprintf(buf + used, len - used, " %s", risk);
    return used < len ? used : len - 1;
}

/* ---- the computer player (aigrid) ---- */

static void ask(const void *gs, int seat, table_question *q)
{
    questiongrid x;
    memset(&x, 0, sizeof x);
    aigrid_input_of(&((const gamegrid_state *)gs)->st, seat, &x.in);
    memcpy(q->bytes, &x, sizeof x);
}

static int think(table_question *q, uint64_t seed)
{
    questiongrid x;
    memcpy(&x, q->bytes, sizeof x);
    int ok = aigrid_choose(&x.in, seed, &x.action) == 0;
    memcpy(q->bytes, &x, sizeof x);
    return ok;
}

static int answer(const void *gs, int seat, const table_question *q, int ok, char *entry_text, size_t len)
{
    const gamegrid_state *g = gs;
    questiongrid x;
    char text[TABLE_ENTRY_MAX];
    memcpy(&x, q->bytes, sizeof x);
    grid_action act = x.action;
    if (!ok) act.kind = GRID_DO_COUNT; /* no choice: a legal move below */
    grid_state copy = g->st;
    if (grid_apply(&copy, seat, &act, NULL, NULL) != GRID_OK) {
        grid_action legal[GRID_MAX_LEGAL];
        if (grid_legal(&g->st, seat, legal) == 0) return 0;
        act = legal[0]; /* a computer player's mistake must not stall the table */
        if (act.kind == GRID_DO_BID) act.n = act.choose;
    }
    action_text(rules_of(g), &act, text, sizeof text);
    snprintf(entry_text, len, "move %d %s", seat, text);
    return 1;
}

static const char *const seat_entries[] = {"move", "grid", NULL};

const table_game gamegrid = {
    .name = "grid",
    .title = "ContractGrid",
    .match = "game",
    .seat_entries = seat_entries,
    .init = init,
    .seats = seats,
    .seat_name = seat_name,
    .option = option,
    .rules_text = rules_text,
    .entry = entry,
    .seat_changed = seat_changed,
    .start = start,
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
