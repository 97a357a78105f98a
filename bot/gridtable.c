/* gridtable.c — ContractGrid at a table (gridtable.h): options, grids, hands, moves, and the
 * commands that lead to them.
 *
 * Like table.c for 304, every change is a journal entry applied by gridtable_entry(), live and
 * on a rebuild alike; a command is first checked here against a copy of the state so that a
 * refusal says why in words and leaves no entry. Secrets: only the cards. A hand goes to its
 * player privately (the engine's DEALT event has one seat's visibility); a refusal that names
 * cards (must follow, do not hold) goes privately too; the left-out card of the 25-card deck is
 * said only when the engine reports it at the end of the hand. Grids, bids, exclusions and
 * tricks are public. */
#include "gridtable.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aigrid.h"
#include "render.h"
#include "render_grid.h"
#include "seed.h"

#define NAME_MAX_LEN 320
#define LINE_MAX_LEN 512
#define WORDS_MAX 24 /* words read from a grid or mark command (more is an error anyway) */

/* ---- names ---- */

typedef struct {
    char buf[GRID_SEATS][NAME_MAX_LEN];
    const char *names[GRID_SEATS];
} grid_names;

static void names_of(const table *t, const table_env *env, grid_names *n)
{
    for (int s = 0; s < GRID_SEATS; s++) n->names[s] = table_seat_label(t, env, s, n->buf[s], sizeof n->buf[s]);
}

static int hand_in_play(const table *t)
{
    return t->started && !t->over && t->hand_no > 0 && t->g.st.phase != GRID_PHASE_DONE;
}

/* The rules in force: the table's options before the first deal, the match's after. */
static const grid_rules *rules_of(const table *t) { return t->hand_no > 0 ? &t->g.st.match.rules : &t->g.rules; }

/* ---- moves as journal text ---- */

size_t gridtable_action_text(const grid_rules *r, const grid_action *a, char *buf, size_t len)
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

int gridtable_action_parse(const grid_rules *r, const char *text, grid_action *a)
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

/* ---- what the room and the players hear ---- */

/* Public events to the room, the others to each person who may see them. */
static void say_events(const table *t, const table_env *env, const grid_events *ev, table_out *out)
{
    grid_names n;
    char text[RENDER_MAX];
    if (!out) return;
    names_of(t, env, &n);
    for (int i = 0; i < ev->n; i++) {
        const grid_event *e = &ev->ev[i];
        if (e->vis == GRID_VIS_ALL) {
            if (render_grid_event(&t->g.st, e, -1, n.names, text, sizeof text)) table_say(out, NULL, "%s", text);
            continue;
        }
        for (int s = 0; s < GRID_SEATS; s++) {
            if (!t->seat[s].user[0] || !grid_event_visible(e, s)) continue;
            if (render_grid_event(&t->g.st, e, s, n.names, text, sizeof text))
                table_say_private(out, env, t, t->seat[s].user, text);
        }
    }
}

/* After the last trick: the seed, standings, and the end of the game (G-END). */
static void hand_over(table *t, const char *env_prefix, table_out *out)
{
    const grid_match *m = &t->g.st.match;
    char hex[SEED_HEX], chex[SEED_HEX];
    uint8_t commit[SEED_BYTES];
    seed_commitment(t->seed, commit);
    table_say(out, NULL, "Seed of hand %d: %s (check it against the commitment: cardroom verify %s %s; cardroom replay "
              "deals a ContractGrid hand again from its seed)", t->hand_no, seed_hex(t->seed, hex), hex,
              seed_hex(commit, chex));
    for (int s = 0; s < GRID_SEATS && out; s++) {
        const table_seat *p = &t->seat[s];
        if (!p->user[0]) continue;
        store_standing d;
        memset(&d, 0, sizeof d);
        snprintf(d.user, sizeof d.user, "%s", p->user);
        d.hands = 1;
        if (m->over) {
            d.matches = 1;
            d.matches_won = (m->winners >> s) & 1;
        }
        table_add_score(out, &d);
    }
    if (m->over) {
        t->over = 1;
        table_say(out, NULL, "Table %" PRId64 " is closed: the game is over. %snew grid opens a new one.", t->id,
                  env_prefix);
        if (out) out->closed = "finished";
    }
}

/* ---- entries ---- */

static int entry_set(table *t, const char *rest, table_out *out, char *err, size_t errlen)
{
    char name[64], value[64];
    grid_rules r = t->g.rules;
    grid_error e;
    if (t->started || sscanf(rest, "%63s %63s", name, value) != 2 || grid_rules_set(&r, name, value, &e) != 0 ||
        grid_rules_check(&r, &e) != 0) {
        snprintf(err, errlen, "entry \"set %.50s\" sets no option", rest);
        return -1;
    }
    int resized = grid_cells(&r) != grid_cells(&t->g.rules);
    t->g.rules = r;
    if (strcmp(name, "small") == 0)
        table_say(out, NULL, "Option small is now %s: a %dx%d grid of %d contracts, %d bids a hand, cap %d.", value,
                  grid_side(&r), grid_side(&r), grid_contract_count(&r), r.bids, r.cap);
    else
        table_say(out, NULL, "Option %s is now %s.", name, value);
    if (resized && t->g.has_grid) {
        t->g.has_grid = 0;
        table_say(out, NULL, "The grids are now %dx%d: everyone arranges a new one (%s).", grid_side(&r),
                  grid_side(&r), "grid CONTRACTS... or grid random");
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

static int entry_grid(table *t, const table_env *env, int seat, const char *rest, table_out *out, char *err,
                      size_t errlen)
{
    uint8_t grid[GRID_MAX_CELLS];
    char msg[GRID_MSG_MAX + 64];
    if (t->started || seat < 0 || read_grid(&t->g.rules, rest, grid, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "entry \"grid %d %.40s\" arranges no grid", seat, rest);
        return -1;
    }
    memcpy(t->g.grid[seat], grid, sizeof grid);
    t->g.has_grid |= (uint8_t)(1u << seat);
    if (out) {
        char label[NAME_MAX_LEN], text[RENDER_MAX];
        render_grid_grid(&t->g.rules, grid, 0, table_seat_label(t, env, seat, label, sizeof label), text, sizeof text);
        table_say(out, NULL, "%s", text);
    }
    return 0;
}

static int entry_start(table *t, table_out *out, char *err, size_t errlen)
{
    const grid_rules *r = &t->g.rules;
    for (int s = 0; s < GRID_SEATS; s++)
        if (!table_seated(t, s) || !(t->g.has_grid >> s & 1)) {
            snprintf(err, errlen, "start with seat %d empty or without a grid", s);
            return -1;
        }
    if (t->started) {
        snprintf(err, errlen, "the game has started already");
        return -1;
    }
    t->started = 1;
    table_say(out, NULL, "The game begins: it ends when someone reaches %d points or marks his whole grid; "
              "whoever reaches %d without a complete grid ranks below everyone else. %d bids a hand.", r->cap,
              r->cap, r->bids);
    return 0;
}

/* "deal DEALER S0 S1 S2": see gridtable.h. */
static int entry_deal(table *t, const table_env *env, const char *args, table_out *out, char *err, size_t errlen)
{
    int dealer, sc[GRID_SEATS];
    grid_match m;
    grid_error e;
    grid_events ev;
    card_t deck[GRID_DECK_MAX];
    char hex[SEED_HEX], label[NAME_MAX_LEN], first[NAME_MAX_LEN];
    uint8_t commit[SEED_BYTES];
    if (sscanf(args, "%d %d %d %d", &dealer, &sc[0], &sc[1], &sc[2]) != 4 || dealer < 0 || dealer >= GRID_SEATS) {
        snprintf(err, errlen, "deal \"%.40s\" names no dealer and scores", args);
        return -1;
    }
    if (!t->started || t->over || (t->hand_no > 0 && t->g.st.phase != GRID_PHASE_DONE)) {
        snprintf(err, errlen, "no deal is due");
        return -1;
    }
    if (!env->seed || env->seed(env->ctx, t->id, t->hand_no + 1, t->seed) != 0) {
        snprintf(err, errlen, "no seed for hand %d", t->hand_no + 1);
        return -1;
    }
    if (t->hand_no == 0) { /* the first dealer comes from the first seed, as in 304 */
        if (grid_match_init(&m, &t->g.rules, (const uint8_t(*)[GRID_MAX_CELLS])t->g.grid,
                            t->seed[SEED_BYTES - 1] % GRID_SEATS, &e) != 0) {
            snprintf(err, errlen, "the game cannot start: %s", e.msg);
            return -1;
        }
    } else {
        m = t->g.st.match;
    }
    if (m.dealer != dealer || m.scores[0] != sc[0] || m.scores[1] != sc[1] || m.scores[2] != sc[2]) {
        snprintf(err, errlen, "deal %d %d %d %d does not follow from the hands before (%d %d %d %d)", dealer, sc[0],
                 sc[1], sc[2], m.dealer, (int)m.scores[0], (int)m.scores[1], (int)m.scores[2]);
        return -1;
    }
    grid_shuffle(t->seed, &m.rules, deck);
    ev.n = 0;
    if (grid_start(&t->g.st, &m, deck, &ev) != GRID_OK) {
        snprintf(err, errlen, "the game is over: no more hands");
        return -1;
    }
    t->hand_no++;
    t->dealer = (uint8_t)dealer;
    if (out) {
        grid_names n;
        char scores[RENDER_MAX];
        names_of(t, env, &n);
        render_grid_scores(&t->g.st.match, n.names, scores, sizeof scores);
        seed_commitment(t->seed, commit);
        table_say(out, NULL, "Hand %d " "\xE2\x80\x94" " dealer %s; %s excludes first. Scores: %s. Seed commitment: %s",
                  t->hand_no, table_seat_label(t, env, dealer, label, sizeof label),
                  table_seat_label(t, env, t->g.st.to_act, first, sizeof first), scores, seed_hex(commit, hex));
    }
    say_events(t, env, &ev, out);
    return 0;
}

static int entry_move(table *t, const table_env *env, int seat, const char *text, table_out *out, char *err,
                      size_t errlen)
{
    grid_action a;
    grid_events ev;
    grid_error e;
    ev.n = 0;
    if (!t->started || t->hand_no == 0 || seat < 0 || gridtable_action_parse(rules_of(t), text, &a) != 0) {
        snprintf(err, errlen, "move \"%.40s\" does not apply here", text);
        return -1;
    }
    if (grid_apply(&t->g.st, seat, &a, &ev, &e) != GRID_OK) {
        snprintf(err, errlen, "move \"%.40s\" by seat %d refused: %s", text, seat, e.msg);
        return -1;
    }
    say_events(t, env, &ev, out);
    if (t->g.st.phase == GRID_PHASE_DONE) hand_over(t, env->prefix ? env->prefix : "!", out);
    return 0;
}

int gridtable_entry(table *t, const table_env *env, const char *word, int seat, const char *rest, table_out *out,
                    char *err, size_t errlen)
{
    if (strcmp(word, "set") == 0) return entry_set(t, rest, out, err, errlen);
    if (strcmp(word, "grid") == 0) return entry_grid(t, env, seat, rest, out, err, errlen);
    if (strcmp(word, "start") == 0) return entry_start(t, out, err, errlen);
    if (strcmp(word, "deal") == 0) return entry_deal(t, env, rest, out, err, errlen);
    if (strcmp(word, "move") == 0) return entry_move(t, env, seat, rest, out, err, errlen);
    return 1;
}

/* ---- commands ---- */

static int exec_livef(table *t, const table_env *env, table_out *out, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int exec_livef(table *t, const table_env *env, table_out *out, const char *fmt, ...)
{
    char entry[LINE_MAX_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(entry, sizeof entry, fmt, ap);
    va_end(ap);
    return table_exec_live(t, env, out, entry);
}

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
static void random_grid(const table *t, const table_env *env, int seat, uint8_t grid[GRID_MAX_CELLS])
{
    uint8_t key[STORE_SEED_BYTES], seed[SEED_BYTES];
    char msg[96];
    memset(key, 0, sizeof key);
    if (!env->seed || env->seed(env->ctx, t->id, 1, key) != 0) memcpy(key, &t->id, sizeof t->id);
    int n = snprintf(msg, sizeof msg, "contractgrid random grid %" PRId64 " %d %" PRId64, t->id, seat, t->seq);
    crypto_generichash(seed, sizeof seed, (const unsigned char *)msg, (unsigned long long)n, key, sizeof key);
    grid_random_grid(seed, &t->g.rules, grid);
    sodium_memzero(key, sizeof key);
}

static int cmd_grid(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    int seat = table_seat_of(t, user);
    uint8_t grid[GRID_MAX_CELLS];
    char msg[GRID_MSG_MAX + 128], text[LINE_MAX_LEN];
    if (seat < 0) {
        table_reply(out, t, env, user, is_private, "you are not seated at this table (%sjoin to sit down).", env->prefix);
        return 0;
    }
    if (t->started) {
        table_reply(out, t, env, user, is_private, "grids are arranged before the game starts; yours is fixed now "
                    "(%stable shows it).", env->prefix);
        return 0;
    }
    if (strcmp(c->arg2, "random") == 0) {
        random_grid(t, env, seat, grid);
    } else if (read_grid(&t->g.rules, c->arg2, grid, msg, sizeof msg) != 0) {
        table_reply(out, t, env, user, is_private, "%s (%shelp grid).", msg, env->prefix);
        return 0;
    }
    grid_text(&t->g.rules, grid, text, sizeof text);
    return exec_livef(t, env, out, "grid %d %s", seat, text);
}

static int cmd_set(table *t, const table_env *env, const char *user, int moderator, int is_private, const cmd *c,
                   table_out *out)
{
    grid_rules r = t->g.rules;
    grid_error e;
    char value[64], typed[sizeof c->arg2];
    table_option_value(c, typed, sizeof typed);
    if (!table_may_change(t, env, user, moderator, is_private, "game", "set options", out)) return 0;
    if (grid_rules_set(&r, c->arg, typed, &e) != 0 || grid_rules_check(&r, &e) != 0) {
        table_reply(out, t, env, user, is_private, "%s.", e.msg);
        return 0;
    }
    grid_rules_get(&r, c->arg, value, sizeof value);
    return exec_livef(t, env, out, "set %s %s", c->arg, value);
}

static int cmd_start(table *t, const table_env *env, const char *user, int moderator, int is_private, table_out *out)
{
    char label[NAME_MAX_LEN], missing[3 * NAME_MAX_LEN] = "";
    if (!table_may_change(t, env, user, moderator, is_private, "game", "start it", out)) return 0;
    int n = 0, nmissing = 0;
    for (int s = 0; s < GRID_SEATS; s++) n += table_seated(t, s);
    if (n < GRID_SEATS) {
        table_reply(out, t, env, user, is_private, "%d of 3 seats are taken: %sjoin or add computer players with %sbot.",
                    n, env->prefix, env->prefix);
        return 0;
    }
    for (int s = 0; s < GRID_SEATS; s++)
        if (t->seat[s].user[0] && !(t->g.has_grid >> s & 1)) {
            size_t used = strlen(missing);
            snprintf(missing + used, sizeof missing - used, "%s%s", nmissing++ ? " and " : "",
                     table_seat_label(t, env, s, label, sizeof label));
        }
    if (nmissing) {
        table_reply(out, t, env, user, is_private, "%s %s not arranged a grid yet: %sgrid random, or %sgrid and the "
                    "%d contracts row by row from a1 (%shelp grid).", missing, nmissing > 1 ? "have" : "has",
                    env->prefix, env->prefix, grid_cells(&t->g.rules), env->prefix);
        return 0;
    }
    int applied = 0;
    for (int s = 0; s < GRID_SEATS; s++) /* computer players arrange theirs now */
        if (!(t->g.has_grid >> s & 1)) {
            uint8_t grid[GRID_MAX_CELLS];
            char text[LINE_MAX_LEN];
            aigrid_arrange(&t->g.rules, (uint64_t)t->id * 0x9E3779B97F4A7C15ull ^ (uint64_t)(s + 1) << 56 ^
                                            (uint64_t)t->seq, grid);
            grid_text(&t->g.rules, grid, text, sizeof text);
            applied += exec_livef(t, env, out, "grid %d %s", s, text);
        }
    return applied + table_exec_live(t, env, out, "start");
}

/* Whether a refusal's words are public knowledge: those that name cards go privately. */
static int refusal_is_public(grid_code code) { return code != GRID_E_FOLLOW && code != GRID_E_NOT_HELD; }

static int cmd_move(table *t, const table_env *env, const char *user, int is_private, const cmd *c,
                    const grid_action *a, table_out *out)
{
    int seat = table_seat_of(t, user);
    int quiet = c->kind == CMD_PLAY && c->bare;
    char label[NAME_MAX_LEN], text[LINE_MAX_LEN];
    if (seat < 0 || !t->started || t->hand_no == 0) {
        if (!quiet)
            table_reply(out, t, env, user, is_private, seat < 0 ? "you are not playing at this table (%sjoin to sit down)."
                        : "the game has not started (%sstart).", env->prefix);
        return 0;
    }
    if (quiet && t->g.st.to_act != seat) return 0; /* a card said on one's own turn is a move, else chat */
    grid_state copy = t->g.st;
    grid_error e;
    if (grid_apply(&copy, seat, a, NULL, &e) != GRID_OK) {
        if (e.code == GRID_E_TURN && t->g.st.to_act < GRID_SEATS) {
            table_reply(out, t, env, user, is_private, "it is not your turn: %s is to act.",
                        table_seat_label(t, env, t->g.st.to_act, label, sizeof label));
        } else if (e.code == GRID_E_SUIT && a->suit < SUIT_COUNT) { /* the engine names seats by number from 0 */
            char free_suits[64] = "";
            for (int s = 0, k = 0; s < SUIT_COUNT; s++)
                if (!(t->g.st.excluded >> s & 1)) {
                    size_t used = strlen(free_suits);
                    snprintf(free_suits + used, sizeof free_suits - used, "%s%s", k++ ? ", " : "", suit_symbol(s));
                }
            table_reply(out, t, env, user, is_private, "%s is already excluded (by %s); you may exclude %s.",
                        suit_symbol(a->suit), table_seat_label(t, env, t->g.st.excluder[a->suit], label, sizeof label),
                        free_suits);
        } else if (refusal_is_public(e.code)) {
            table_reply(out, t, env, user, is_private, "%s.", e.msg);
        } else {
            char why[GRID_MSG_MAX + 8];
            snprintf(why, sizeof why, "%s.", e.msg);
            table_refuse_privately(out, t, env, user, is_private, why);
        }
        return 0;
    }
    int applied = 0;
    if (t->seat[seat].away) applied += exec_livef(t, env, out, "back %d", seat);
    gridtable_action_text(rules_of(t), a, text, sizeof text);
    return applied + exec_livef(t, env, out, "move %d %s", seat, text);
}

/* mark / bid CELL...: the cells as the player wrote them. */
static int cmd_mark(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    char words[WORDS_MAX][32], msg[GRID_MSG_MAX];
    grid_action a;
    const grid_rules *r = rules_of(t);
    memset(&a, 0, sizeof a);
    a.kind = GRID_DO_BID;
    a.card = CARD_NONE;
    int n = split_words(c->arg2, words, WORDS_MAX);
    if (n > GRID_MAX_CELLS) {
        table_reply(out, t, env, user, is_private, "bid exactly %d cells of your grid, like %smark a1 b2 c3 d4.", r->bids,
                    env->prefix);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int cell;
        if (grid_cell_parse(r, words[i], strlen(words[i]), &cell, msg, sizeof msg) != 0) {
            table_reply(out, t, env, user, is_private, "%s.", msg);
            return 0;
        }
        a.cells[a.n++] = (uint8_t)cell;
    }
    return cmd_move(t, env, user, is_private, c, &a, out);
}

static void cmd_show(table *t, const table_env *env, const char *user, int is_private, const cmd *c, table_out *out)
{
    char text[RENDER_MAX * 2], grid[RENDER_MAX];
    grid_names n;
    int seat = table_seat_of(t, user);
    names_of(t, env, &n);
    if (c->kind == CMD_HAND) {
        if (seat < 0 || !hand_in_play(t)) {
            table_reply(out, t, env, user, is_private, "you hold no cards at this table.");
            return;
        }
        snprintf(text, sizeof text, "Your hand: ");
        render_grid_hand(&t->g.st, seat, text + strlen(text), sizeof text - strlen(text));
        table_say_private(out, env, t, user, text);
        if (!is_private) table_reply(out, t, env, user, 0, "I sent you your hand privately.");
        return;
    }
    size_t used;
    if (c->kind == CMD_LAST) {
        if (!t->started || t->hand_no == 0) snprintf(text, sizeof text, "No hand has been played at this table yet.");
        else render_grid_last(&t->g.st, n.names, text, sizeof text);
    } else {
        const grid_rules *r = rules_of(t);
        if (!t->started || t->hand_no == 0) {
            used = (size_t)snprintf(text, sizeof text, "Table %" PRId64 " (ContractGrid, %s):", t->id,
                                    t->started ? "starting" : "not started");
            for (int s = 0; s < GRID_SEATS && used < sizeof text; s++)
                used += (size_t)snprintf(text + used, sizeof text - used, " %s%s%s", n.names[s],
                                         !table_seated(t, s) ? " (free)" : t->g.has_grid >> s & 1 ? "" : " (no grid yet)",
                                         s < 2 ? "," : ".");
        } else {
            render_grid_table(&t->g.st, is_private ? seat : -1, n.names, text, sizeof text);
        }
        for (int s = 0; s < GRID_SEATS; s++) {
            if (!(t->g.has_grid >> s & 1)) continue;
            used = strlen(text);
            const uint8_t *g = t->hand_no > 0 ? t->g.st.match.grid[s] : t->g.grid[s];
            render_grid_grid(r, g, t->hand_no > 0 ? t->g.st.match.marked[s] : 0, n.names[s], grid, sizeof grid);
            snprintf(text + used, sizeof text - used, "\n%s", grid);
        }
    }
    if (is_private) table_say_private(out, env, t, user, text);
    else table_say(out, NULL, "%s", text);
}

int gridtable_command(table *t, const table_env *env, const char *user, int moderator, int is_private, const cmd *c,
                      table_out *out)
{
    grid_action a;
    memset(&a, 0, sizeof a);
    a.card = CARD_NONE;
    switch (c->kind) {
    case CMD_START: return cmd_start(t, env, user, moderator, is_private, out);
    case CMD_SET: return cmd_set(t, env, user, moderator, is_private, c, out);
    case CMD_GRID: return cmd_grid(t, env, user, is_private, c, out);
    case CMD_EXCLUDE:
        a.kind = GRID_DO_EXCLUDE;
        a.suit = (uint8_t)c->suit;
        return cmd_move(t, env, user, is_private, c, &a, out);
    case CMD_MARK: return cmd_mark(t, env, user, is_private, c, out);
    case CMD_PLAY:
        a.kind = GRID_DO_PLAY;
        a.card = c->joker ? GRID_JOKER : c->card;
        return cmd_move(t, env, user, is_private, c, &a, out);
    case CMD_HAND:
    case CMD_TABLE:
    case CMD_LAST: cmd_show(t, env, user, is_private, c, out); return 0;
    case CMD_BID:
        table_reply(out, t, env, user, is_private, "at ContractGrid you bid cells of your grid: %smark a1 b2 c3 d4 (or "
                    "%sbid a1 b2 c3 d4).", env->prefix, env->prefix);
        return 0;
    case CMD_CUT:
    case CMD_PASS:
    case CMD_PARTNER:
    case CMD_REDEAL:
    case CMD_TRUMP:
    case CMD_OPEN:
    case CMD_CAPS:
    case CMD_SPOILT:
        table_reply(out, t, env, user, is_private, "%s%s belongs to 304; at this ContractGrid table you %sexclude a suit, "
                    "%smark cells and %splay cards (%shelp lists the commands).", env->prefix, c->word, env->prefix,
                    env->prefix, env->prefix, env->prefix);
        return 0;
    default:
        table_reply(out, t, env, user, is_private, "%s%s is not a ContractGrid command (%shelp lists them).", env->prefix,
                    c->word, env->prefix);
        return 0;
    }
}

/* ---- what happens by itself ---- */

int gridtable_auto(table *t, const table_env *env, table_out *out)
{
    if (!t->started || t->over || (t->hand_no > 0 && t->g.st.phase != GRID_PHASE_DONE)) return 0;
    uint8_t seed[STORE_SEED_BYTES];
    const grid_match *m = &t->g.st.match;
    if (t->hand_no == 0) {
        if (!env->seed || env->seed(env->ctx, t->id, 1, seed) != 0) return 0;
        return exec_livef(t, env, out, "deal %d 0 0 0", seed[SEED_BYTES - 1] % GRID_SEATS);
    }
    return exec_livef(t, env, out, "deal %d %d %d %d", m->dealer, (int)m->scores[0], (int)m->scores[1],
                      (int)m->scores[2]);
}

size_t gridtable_turn_text(const table *t, const table_env *env, char *buf, size_t len)
{
    grid_names n;
    if (!hand_in_play(t)) return 0;
    names_of(t, env, &n);
    return render_grid_turn(&t->g.st, n.names, env->prefix, buf, len);
}

size_t gridtable_hand_text(const table *t, int seat, char *buf, size_t len)
{
    return render_grid_hand(&t->g.st, seat, buf, len);
}

void gridtable_prompt(table *t, const table_env *env, table_out *out)
{
    char text[RENDER_MAX * 2 + 128], hand[RENDER_MAX], grid[RENDER_MAX];
    if (t->prompted == t->seq || !hand_in_play(t)) return;
    int s = t->g.st.to_act;
    if (s >= GRID_SEATS || table_computer_plays(t, s)) return;
    t->prompted = t->seq;
    if (gridtable_turn_text(t, env, text, sizeof text)) table_say(out, t->seat[s].user, "%s", text);
    if (t->g.st.phase == GRID_PHASE_EXCLUDE) return; /* the hand was just dealt to him */
    render_grid_hand(&t->g.st, s, hand, sizeof hand);
    if (t->g.st.phase == GRID_PHASE_BID) {
        render_grid_grid(&t->g.st.match.rules, t->g.st.match.grid[s], t->g.st.match.marked[s], NULL, grid,
                         sizeof grid);
        snprintf(text, sizeof text, "Your turn to bid %d cells (%smark CELL...). Your hand: %s\n%s",
                 t->g.st.match.rules.bids, env->prefix, hand, grid);
    } else {
        snprintf(text, sizeof text, "Your turn. Your hand: %s", hand);
    }
    table_say_private(out, env, t, t->seat[s].user, text);
}

int table_computer_move_grid(table *t, const table_env *env, int seat, int64_t seq, const grid_action *a,
                             table_out *out)
{
    char text[LINE_MAX_LEN];
    if (t->game != TABLE_GAME_GRID || seq != t->seq || table_computer_to_act(t) != seat) return 0;
    grid_state copy = t->g.st;
    grid_action act = *a;
    if (grid_apply(&copy, seat, &act, NULL, NULL) != GRID_OK) {
        grid_action legal[GRID_MAX_LEGAL];
        if (grid_legal(&t->g.st, seat, legal) == 0) return 0;
        act = legal[0]; /* a computer player's mistake must not stall the table */
        if (act.kind == GRID_DO_BID) act.n = act.choose;
    }
    gridtable_action_text(rules_of(t), &act, text, sizeof text);
    return exec_livef(t, env, out, "move %d %s", seat, text);
}

size_t gridtable_match_text(const table *t, const table_env *env, char *buf, size_t len)
{
    grid_names n;
    char scores[RENDER_MAX], risk[RENDER_MAX];
    names_of(t, env, &n);
    if (!t->started || t->hand_no == 0)
        return (size_t)snprintf(buf, len, "Table %" PRId64 " (ContractGrid) has not started.", t->id);
    const grid_match *m = &t->g.st.match;
    render_grid_scores(m, n.names, scores, sizeof scores);
    size_t used = (size_t)snprintf(buf, len, "ContractGrid at table %" PRId64 ", hand %d (cap %d): %s.", t->id,
                                   t->hand_no, m->rules.cap, scores);
    if (used < len && render_grid_cap_risk(m, n.names, risk, sizeof risk))
        used += (size_t)snprintf(buf + used, len - used, " %s", risk);
    return used < len ? used : len - 1;
}

size_t gridtable_rules_text(const grid_rules *r, char *buf, size_t len) { return render_grid_rules(r, buf, len); }
