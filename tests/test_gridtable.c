/* test_gridtable.c — ContractGrid tables (bot/gamegrid.c through bot/table.h): commands,
 * journal entries, what the room and each player read, computer players, and rebuilds.
 *
 * Covers: `new grid`-style tables with three seats; grids (refused with the reason, random,
 * explicit) and options (`set`, `small` clearing the grids); `start` refused until three
 * players and three grids; exclusions in turn with refusals; bids of exactly `bids` cells of
 * one's own grid (and `bid CELL…`); plays with follow refusals explained privately; bare cards
 * only on one's turn, the joker as JK; the hand summary (values, score parts that add up, new
 * marks, the seed); the game's end with its ranking and standings rows; standings with who
 * risks the cap; a table rebuilt from its journal at any point of a game has the same engine
 * state byte for byte and says the same afterwards; and over many games played by computers
 * and people, no card still in a hand ever shows in the room or in another player's messages.
 * The chat parser's ContractGrid forms (JK, joker, bid CELL…) are checked here too. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aigrid.h"
#include "command.h"
#include "config.h"
#include "gamegrid.h"
#include "grid.h"
#include "render_grid.h"
#include "seed.h"
#include "table.h"

TestSuite(gridtable, .timeout = 300);

#define JOKER_TEXT "\xF0\x9F\x83\x8F"

/* ---------------------------------------------------------------------------------------- */
/* The rig: one grid table, a fake environment, and everything it said                     */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    char user[TABLE_USER_MAX]; /* "" = the room */
    char *text;
} said;

typedef struct {
    table t;
    table_env env;
    uint64_t nseed;
    said *msgs;
    int nmsgs, cmsgs;
    int batch_from;       /* first message of the last batch */
    char **entries;
    int nentries, centries;
    store_standing scores[64];
    int nscores;
    const char *closed;
} rig;

static int env_seed(void *ctx, int64_t table_id, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    rig *g = ctx;
    seed_fixed(g->nseed, table_id, hand_no, seed);
    return 0;
}

static rig *rig_new(uint64_t nseed)
{
    rig *g = calloc(1, sizeof *g);
    cr_assert_not_null(g);
    g->nseed = nseed;
    g->env = (table_env){.seed = env_seed, .ctx = g, .prefix = "!", .private_how = "in a private message"};
    cfg conf;
    cfg_defaults(&conf);
    table_init(&g->t, 1, "test", "room", "alice");
    cr_assert_eq(table_set_game(&g->t, "grid", &conf), 0);
    return g;
}

/* The ContractGrid state behind the rig's table. */
static const gamegrid_state *gs_of(const rig *g) { return gamegrid_of(&g->t); }

static void rig_free(rig *g)
{
    for (int i = 0; i < g->nmsgs; i++) free(g->msgs[i].text);
    for (int i = 0; i < g->nentries; i++) free(g->entries[i]);
    free(g->msgs);
    free(g->entries);
    free(g);
}

/* Records what one call produced (every line of a message separately). */
static void rig_take(rig *g, table_out *o)
{
    for (int i = 0; i < o->nentries; i++) {
        if (g->nentries == g->centries) {
            g->centries = g->centries ? 2 * g->centries : 256;
            g->entries = realloc(g->entries, (size_t)g->centries * sizeof *g->entries);
            cr_assert_not_null(g->entries);
        }
        g->entries[g->nentries++] = strdup(o->entries[i]);
    }
    for (int i = 0; i < o->nmsgs; i++) {
        const char *p = o->msgs[i].text;
        for (;;) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            if (g->nmsgs == g->cmsgs) {
                g->cmsgs = g->cmsgs ? 2 * g->cmsgs : 1024;
                g->msgs = realloc(g->msgs, (size_t)g->cmsgs * sizeof *g->msgs);
                cr_assert_not_null(g->msgs);
            }
            said *m = &g->msgs[g->nmsgs++];
            snprintf(m->user, sizeof m->user, "%s", o->msgs[i].user);
            m->text = strndup(p, n);
            if (!nl) break;
            p = nl + 1;
        }
    }
    for (int i = 0; i < o->nscores && g->nscores < 64; i++) g->scores[g->nscores++] = o->scores[i].delta;
    if (o->closed) g->closed = o->closed;
    table_out_clear(o);
}

/* What the core does after a batch: deals, and the turn prompt. */
static void rig_settle(rig *g, table_out *o)
{
    table_auto(&g->t, &g->env, o);
    table_prompt(&g->t, &g->env, o);
    rig_take(g, o);
}

/* A chat message from user (in the room, or privately); returns what table_command said. */
static int rig_say(rig *g, const char *user, int is_private, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int rig_say(rig *g, const char *user, int is_private, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    cmd c;
    table_out o = {0};
    g->batch_from = g->nmsgs;
    cmd_parse(text, strlen(text), "!", is_private, &c);
    cr_assert_neq(c.kind, CMD_BAD, "'%s' does not parse: %s", text, c.err);
    if (c.kind == CMD_NONE) return 0;
    int rc = table_command(&g->t, &g->env, user, NULL, 0, is_private, &c, &o);
    rig_settle(g, &o);
    return rc;
}

/* Lets the computer players move until a person is to act (or the game is over). */
static int rig_computers(rig *g)
{
    int moves = 0;
    for (int guard = 0; guard < 10000; guard++) {
        int s = table_computer_to_act(&g->t);
        if (s < 0) return moves;
        table_question q;
        table_out o = {0};
        table_think think = table_computer_question(&g->t, s, &q);
        cr_assert_eq(think(&q, (uint64_t)g->t.seq * 31 + 7), 1);
        g->batch_from = g->nmsgs;
        cr_assert_eq(table_computer_move(&g->t, &g->env, s, g->t.seq, &q, 1, &o), 1);
        rig_settle(g, &o);
        moves++;
    }
    cr_assert_fail("the computers never stop");
    return moves;
}

/* Index of the first message at or after from, to user ("" room; NULL anyone), containing
 * needle; -1 if none. */
static int said_find(const rig *g, int from, const char *user, const char *needle)
{
    for (int i = from; i < g->nmsgs; i++)
        if ((!user || strcmp(g->msgs[i].user, user) == 0) && strstr(g->msgs[i].text, needle)) return i;
    return -1;
}

static void show_batch(const rig *g, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = g->batch_from; i < g->nmsgs && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "\n    [%s] %s", g->msgs[i].user[0] ? g->msgs[i].user : "#room",
                                 g->msgs[i].text);
}

/* The last batch said needle to user ("" the room). */
static void expect_said(const rig *g, const char *user, const char *needle)
{
    char shown[8192];
    show_batch(g, shown, sizeof shown);
    cr_expect_geq(said_find(g, g->batch_from, user, needle), 0, "expected [%s] '%s', got:%s", user[0] ? user : "#room",
                  needle, shown);
}

static void expect_silent(const rig *g, const char *what)
{
    char shown[8192];
    show_batch(g, shown, sizeof shown);
    cr_expect_eq(g->nmsgs, g->batch_from, "%s: expected no answer, got:%s", what, shown);
}

static const char *const people[GRID_SEATS] = {"alice", "bob", "carol"};

/* Three people seated with random grids (not started). */
static void three_people(rig *g)
{
    for (int s = 0; s < GRID_SEATS; s++) {
        rig_say(g, people[s], 0, "!join %d", s + 1);
        rig_say(g, people[s], 0, "!grid random");
    }
}

/* The move text a person would send for a grid action. */
static void move_text(const grid_rules *r, const grid_action *a, char *buf, size_t len)
{
    char cell[GRID_CELL_TEXT_MAX];
    size_t used;
    switch (a->kind) {
    case GRID_DO_EXCLUDE: snprintf(buf, len, "!exclude %s", suit_name(a->suit)); break;
    case GRID_DO_BID:
        used = (size_t)snprintf(buf, len, "!mark");
        for (int i = 0; i < a->n && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, " %s", grid_cell_name(r, a->cells[i], cell));
        break;
    default: snprintf(buf, len, "!play %s", grid_card_str(a->card)); break;
    }
}

/* The person to act makes the computer player's choice, in the room. */
static void person_moves(rig *g, uint64_t seed)
{
    int s = table_to_act(&g->t);
    cr_assert_geq(s, 0);
    aigrid_input in;
    grid_action a;
    char text[256];
    aigrid_input_of(&gs_of(g)->st, s, &in);
    cr_assert_eq(aigrid_choose(&in, seed, &a), 0);
    move_text(&gs_of(g)->st.match.rules, &a, text, sizeof text);
    int before = g->nentries;
    rig_say(g, g->t.seat[s].user, 0, "%s", text);
    cr_assert_gt(g->nentries, before, "%s's '%s' was not taken", g->t.seat[s].user, text);
}

/* ---------------------------------------------------------------------------------------- */
/* Seats, grids, options, start                                                             */
/* ---------------------------------------------------------------------------------------- */

Test(gridtable, seats_grids_and_start)
{
    rig *g = rig_new(1);
    rig_say(g, "alice", 0, "!join");
    expect_said(g, "", "alice (seat 1) sits down.");
    rig_say(g, "bob", 0, "!join 4");
    expect_said(g, "", "bob: a ContractGrid table has seats 1 to 3");
    rig_say(g, "bob", 0, "!join 1");
    expect_said(g, "", "bob: seat 1 is taken.");
    rig_say(g, "bob", 0, "!join 3");
    expect_said(g, "", "bob (seat 3) sits down.");
    rig_say(g, "alice", 0, "!start");
    expect_said(g, "", "alice: 2 of 3 seats are taken");
    rig_say(g, "carol", 0, "!join");
    expect_said(g, "", "carol (seat 2) sits down.");
    rig_say(g, "dave", 0, "!join");
    expect_said(g, "", "dave: the table is full.");
    rig_say(g, "dave", 0, "!grid random");
    expect_said(g, "", "dave: you are not seated at this table");

    /* bad grids are refused with the reason */
    rig_say(g, "alice", 0, "!grid zero one");
    expect_said(g, "", "alice: a grid names all 16 contracts once, row by row from a1 to d4 (you gave 2)");
    rig_say(g, "alice", 0, "!grid zero one two first second third different soloist partner alltrump notrump "
                           "spades hearts diamonds clubs clubs");
    expect_said(g, "", "clubs appears twice");
    rig_say(g, "alice", 0, "!grid zero one two first second third different soloist partner alltrump notrump "
                           "spades hearts diamonds clubs bogus");
    expect_said(g, "", "'bogus' is not a contract");
    cr_assert_eq(g->nentries, 3, "refusals leave no entry");

    /* an explicit grid, shown as a table */
    rig_say(g, "alice", 0, "!grid zero one two first second third different soloist partner alltrump notrump "
                           "spades hearts diamonds clubs play");
    expect_said(g, "", "Grid of alice (seat 1):");
    expect_said(g, "", "1   zero        one         two         first");
    expect_said(g, "", "4   hearts      diamonds    clubs       play");
    cr_assert_str_eq(g->entries[g->nentries - 1], "grid 0 zero one two first second third different soloist partner "
                                                  "alltrump notrump spades hearts diamonds clubs play");
    rig_say(g, "alice", 0, "!start");
    expect_said(g, "", "carol (seat 2) and bob (seat 3) have not arranged a grid yet");
    /* a random grid is a valid grid, written out in the journal */
    rig_say(g, "bob", 0, "!grid random");
    expect_said(g, "", "Grid of bob (seat 3):");
    cr_assert_eq(strncmp(g->entries[g->nentries - 1], "grid 2 ", 7), 0);
    cr_assert(gs_of(g)->has_grid == 5);
    /* a computer player replaces carol and arranges its own grid at the start */
    rig_say(g, "carol", 0, "!leave");
    rig_say(g, "alice", 0, "!bot 2");
    expect_said(g, "", "computer seat 2 sits down.");
    rig_say(g, "alice", 0, "!grid random");
    cr_assert_eq(gs_of(g)->has_grid, 5);
    rig_say(g, "alice", 0, "!start");
    expect_said(g, "", "Grid of computer seat 2:");
    expect_said(g, "", "The game begins");
    expect_said(g, "", "Hand 1 \xE2\x80\x94 dealer");
    for (int s = 0; s < GRID_SEATS; s++)
        if (g->t.seat[s].user[0]) expect_said(g, g->t.seat[s].user, "Your cards: ");
    cr_assert(g->t.started && gs_of(g)->hand_no == 1);
    rig_say(g, "alice", 0, "!grid random");
    expect_said(g, "", "alice: grids are arranged before the game starts");
    rig_say(g, "alice", 0, "!set cap 50");
    expect_said(g, "", "alice: options are set before the game starts.");
    rig_free(g);
}

Test(gridtable, options)
{
    rig *g = rig_new(2);
    three_people(g);
    rig_say(g, "alice", 0, "!set cap 60");
    expect_said(g, "", "Option cap is now 60.");
    rig_say(g, "alice", 0, "!set deck 24");
    expect_said(g, "", "alice: option deck is 33 or 25");
    rig_say(g, "erin", 0, "!set cap 70");
    expect_said(g, "", "erin: only players at the table");
    rig_say(g, "bob", 0, "!set small true");
    expect_said(g, "", "Option small is now true: a 3x3 grid of 9 contracts, 3 cells bid a hand, cap 100.");
    expect_said(g, "", "The grids are now 3x3: everyone arranges a new one");
    cr_assert_eq(gs_of(g)->has_grid, 0);
    rig_say(g, "bob", 0, "!set bids 12");
    expect_said(g, "", "bob: option bids is a number from 1 to 9");
    rig_say(g, "bob", 0, "!grid random");
    expect_said(g, "", "Grid of bob (seat 2):");
    expect_said(g, "", "3   ");
    cr_expect_lt(said_find(g, g->batch_from, "", "4   "), 0, "a 3x3 grid has no fourth row");
    rig_say(g, "bob", 0, "!grid zero one two first second third different soloist alltrump");
    expect_said(g, "", "alltrump is not in the small game");
    rig_say(g, "carol", 0, "!rules");
    rig_free(g);

    char text[4096];
    g = rig_new(1);
    cr_assert_gt(table_rules_text(&g->t, "!", "docs/", text, sizeof text), 0);
    rig_free(g);
    cr_assert_str_eq(text, "ContractGrid for three players, each with a grid of contracts; this table's options: "
                           "cap=1000, bids=4, deck=33, unmarked_point=1, small=false (!set OPTION VALUE changes one "
                           "before the start).\nThe rules in full: docs/contractgrid.md");
}

/* ---------------------------------------------------------------------------------------- */
/* A hand                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static rig *started(uint64_t nseed)
{
    rig *g = rig_new(nseed);
    three_people(g);
    rig_say(g, "alice", 0, "!start");
    cr_assert(g->t.started && gs_of(g)->hand_no == 1);
    return g;
}

static const char *user_at(const rig *g, int s) { return g->t.seat[s].user; }

Test(gridtable, exclusions_in_turn)
{
    rig *g = started(3);
    int first = table_to_act(&g->t), second = (first + 1) % 3, third = (first + 2) % 3;
    cr_assert_eq(first, (gs_of(g)->st.dealer + 1) % 3, "the dealer's left excludes first");
    char want[256];
    expect_said(g, "", "to exclude a suit: !exclude \xE2\x99\xA0, \xE2\x99\xA5, \xE2\x99\xA6 or \xE2\x99\xA3");
    rig_say(g, user_at(g, second), 0, "!exclude hearts");
    snprintf(want, sizeof want, "%s: it is not your turn: %s (seat %d) is to act.", user_at(g, second),
             user_at(g, first), first + 1);
    expect_said(g, "", want);
    rig_say(g, user_at(g, first), 0, "!play JS");
    expect_said(g, "", "cards are played after the exclusions and the bids");
    rig_say(g, user_at(g, first), 0, "!mark a1 b1 c1 d1");
    expect_said(g, "", "the bids come after the exclusions");
    rig_say(g, user_at(g, first), 0, "!exclude hearts");
    snprintf(want, sizeof want, "%s (seat %d) excludes \xE2\x99\xA5 hearts \xE2\x80\x94 %s (seat %d) to exclude a suit: "
             "!exclude \xE2\x99\xA0, \xE2\x99\xA6 or \xE2\x99\xA3", user_at(g, first), first + 1, user_at(g, second),
             second + 1);
    expect_said(g, "", want);
    snprintf(want, sizeof want, "move %d exclude H", first);
    cr_assert_str_eq(g->entries[g->nentries - 1], want);
    rig_say(g, user_at(g, second), 0, "!exclude H");
    snprintf(want, sizeof want, "\xE2\x99\xA5 is already excluded (by %s (seat %d)); you may exclude \xE2\x99\xA0, "
             "\xE2\x99\xA6, \xE2\x99\xA3.", user_at(g, first), first + 1);
    expect_said(g, "", want);
    rig_say(g, user_at(g, second), 1, "exclude spades"); /* privately works too */
    rig_say(g, user_at(g, third), 0, "!exclude \xE2\x99\xA3");
    expect_said(g, "", "excludes \xE2\x99\xA3 clubs \xE2\x80\x94 trump is \xE2\x99\xA6 diamonds, the suit nobody excluded");
    cr_assert_eq(gs_of(g)->st.trump, SUIT_D);
    cr_assert_eq(gs_of(g)->st.phase, GRID_PHASE_BID);
    expect_said(g, "", "to bid 4 cells of the grid: !mark CELL...");
    expect_said(g, user_at(g, first), "Your turn to bid 4 cells");
    expect_said(g, user_at(g, first), "Your grid:");
    rig_free(g);
}

Test(gridtable, bids_exactly_and_from_ones_own_grid)
{
    rig *g = started(4);
    for (int i = 0; i < 3; i++) person_moves(g, (uint64_t)i);
    cr_assert_eq(gs_of(g)->st.phase, GRID_PHASE_BID);
    int s = table_to_act(&g->t);
    const char *u = user_at(g, s);
    char want[512], cells[256];
    rig_say(g, u, 0, "!mark a1 b2 c3");
    expect_said(g, "", "bid exactly 4 cells of your grid (you gave 3)");
    rig_say(g, u, 0, "!mark a1 b2 c3 d5");
    expect_said(g, "", "d5 is not a cell: cells are a1 to d4");
    rig_say(g, u, 0, "!mark a1 b2 c3 a1");
    expect_said(g, "", "you bid a1 twice");
    rig_say(g, user_at(g, (s + 1) % 3), 0, "!mark a1 b2 c3 d4");
    expect_said(g, "", "it is not your turn");
    rig_say(g, u, 0, "!bid 160");
    expect_said(g, "", "at ContractGrid you bid cells of your grid");
    rig_say(g, u, 0, "!pass");
    expect_said(g, "", "!pass belongs to 304");
    int before = g->nentries;
    rig_say(g, u, 0, "!bid a1 B2 c3, d4"); /* "bid CELL…" is mark */
    cr_assert_eq(g->nentries, before + 1);
    snprintf(want, sizeof want, "move %d bid a1 b2 c3 d4", s);
    cr_assert_str_eq(g->entries[g->nentries - 1], want);
    render_grid_cells(&gs_of(g)->st.match.rules, gs_of(g)->st.match.grid[s], 0x8421, cells, sizeof cells);
    snprintf(want, sizeof want, "%s (seat %d) bids %s \xE2\x80\x94 ", u, s + 1, cells);
    expect_said(g, "", want);
    rig_free(g);
}

/* Counts in the words: one cell, one trick. */
Test(gridtable, one_cell_is_singular)
{
    rig *g = rig_new(4);
    three_people(g);
    rig_say(g, "alice", 0, "!set bids 1");
    rig_say(g, "alice", 0, "!start");
    expect_said(g, "", "; 1 cell bid a hand.");
    for (int i = 0; i < 3; i++) person_moves(g, (uint64_t)i);
    expect_said(g, "", "to bid 1 cell of the grid: !mark CELL...");
    int s = table_to_act(&g->t);
    rig_say(g, user_at(g, s), 0, "!mark a1 b2");
    expect_said(g, "", "bid exactly 1 cell of your grid (you gave 2)");
    rig_free(g);
}

/* Plays the hand up to a position where the person to act holds the suit led and another
 * card; returns that other card, or CARD_NONE if the hand ended first. */
static card_t until_follow_choice(rig *g)
{
    for (int guard = 0; guard < 100 && gs_of(g)->st.phase != GRID_PHASE_DONE; guard++) {
        const grid_state *st = &gs_of(g)->st;
        int s = st->to_act;
        if (st->phase == GRID_PHASE_PLAY && st->tricks[st->trick_no].n > 0) {
            for (grid_set h = st->hand[s]; h; h &= h - 1) {
                card_t c = (card_t)__builtin_ctzll(h);
                if (grid_check_card(st->hand[s], st->tricks[st->trick_no].card[0], st->trump, c, NULL) == GRID_E_FOLLOW)
                    return c;
            }
        }
        person_moves(g, (uint64_t)guard);
    }
    return CARD_NONE;
}

Test(gridtable, plays_refusals_and_bare_cards)
{
    for (uint64_t seed = 10; seed < 20; seed++) {
        rig *g = started(seed);
        card_t wrong = until_follow_choice(g);
        if (wrong == CARD_NONE) {
            rig_free(g);
            continue;
        }
        int s = table_to_act(&g->t), other = (s + 1) % 3;
        const char *u = user_at(g, s);
        char want[256], one[GRID_CARD_TEXT_MAX];
        /* the reason names cards: it goes privately, the room only hears of a refusal */
        rig_say(g, u, 0, "!play %s", grid_card_str(wrong));
        snprintf(want, sizeof want, "%s: not allowed; I sent you the reason privately.", u);
        expect_said(g, "", want);
        expect_said(g, u, "you must follow");
        cr_assert_lt(said_find(g, g->batch_from, "", "must follow"), 0);
        /* a card the player does not hold: privately too */
        card_t absent = CARD_NONE;
        for (card_t c = 0; c < CARD_COUNT && absent == CARD_NONE; c++)
            if (!(gs_of(g)->st.hand[s] & GRID_BIT(c)) && !(gs_of(g)->st.hand[other] & GRID_BIT(c))) absent = c;
        if (absent != CARD_NONE) {
            rig_say(g, u, 0, "!play %s", grid_card_str(absent));
            expect_said(g, u, "you do not hold");
        }
        /* a bare card from someone whose turn it is not: chat, no answer */
        card_t theirs = (card_t)__builtin_ctzll(gs_of(g)->st.hand[other]);
        rig_say(g, user_at(g, other), 0, "%s", theirs == GRID_JOKER ? "JK" : grid_card_str(theirs));
        expect_silent(g, "a bare card out of turn");
        /* a bare legal card on one's own turn is the move */
        grid_action legal[GRID_MAX_LEGAL];
        cr_assert_gt(grid_legal(&gs_of(g)->st, s, legal), 0);
        int before = g->nentries;
        rig_say(g, u, 0, "%s", legal[0].card == GRID_JOKER ? "joker" : grid_card_str(legal[0].card));
        cr_assert_eq(g->nentries, before + 1, "the bare card was not played");
        snprintf(want, sizeof want, "%s (seat %d) plays %s \xE2\x80\x94 ", u, s + 1, grid_card_pretty(legal[0].card, one));
        expect_said(g, "", want);
        rig_free(g);
        return;
    }
    cr_assert_fail("no deal gave a follow refusal");
}

Test(gridtable, the_joker_by_name)
{
    /* JK, joker and the symbol after !play; a bare JK or joker; the symbol alone is chat */
    static const struct {
        const char *text;
        int opt;
        cmd_kind kind;
        int joker, bare;
    } rows[] = {
        {"!play JK", 0, CMD_PLAY, 1, 0},      {"!play joker", 0, CMD_PLAY, 1, 0},
        {"!play " JOKER_TEXT, 0, CMD_PLAY, 1, 0}, {"JK", 0, CMD_PLAY, 1, 1},
        {"Joker", 0, CMD_PLAY, 1, 1},         {JOKER_TEXT, 0, CMD_NONE, 0, 0},
        {"!JK", 0, CMD_PLAY, 1, 0},           {"!play JS", 0, CMD_PLAY, 0, 0},
        {"!trump JK", 0, CMD_BAD, 0, 0},      {"!bid a1 b2 c3 d4", 0, CMD_MARK, 0, 0},
        {"bid a1 b2", 1, CMD_MARK, 0, 0},     {"!bid abc", 0, CMD_BAD, 0, 0},
        {"!bid 160", 0, CMD_BID, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cmd c;
        cmd_parse(rows[i].text, strlen(rows[i].text), "!", rows[i].opt, &c);
        cr_expect_eq(c.kind, rows[i].kind, "'%s': kind %d, want %d (%s)", rows[i].text, c.kind, rows[i].kind, c.err);
        if (c.kind != CMD_PLAY) continue;
        cr_expect_eq(c.joker, rows[i].joker, "'%s': joker", rows[i].text);
        cr_expect_eq(c.bare, rows[i].bare, "'%s': bare", rows[i].text);
        cr_expect_lt(c.card, CARD_COUNT, "'%s': the card is still a card id", rows[i].text);
    }
    cmd c;
    cmd_parse("!bid a1 B2", 10, "!", 0, &c);
    cr_expect_str_eq(c.arg2, "a1 b2");
    cr_expect_str_eq(c.word, "bid");
}

Test(gridtable, hand_summary_adds_up)
{
    rig *g = started(5);
    while (gs_of(g)->hand_no == 1) person_moves(g, (uint64_t)g->t.seq);
    /* the state after hand 1 is gone (hand 2 dealt); the summary is in the room */
    const grid_match *m = &gs_of(g)->st.match;
    cr_assert_eq(m->hands, 1);
    int total = 0;
    for (int s = 0; s < GRID_SEATS; s++) {
        char want[128];
        snprintf(want, sizeof want, "%s (seat %d) took ", people[s], s + 1); /* tricks, contracts and score: one line */
        int at = said_find(g, 0, "", want);
        cr_assert_geq(at, 0, "no values line for %s", people[s]);
        int u, b, l, sum, tot;
        const char *p = strstr(g->msgs[at].text, " \xE2\x80\x94 scores ");
        cr_assert_not_null(p, "%s", g->msgs[at].text);
        cr_assert_eq(sscanf(p, " \xE2\x80\x94 scores %d for unmarked values + %d for bids + %d for lines = %d, total %d;",
                            &u, &b, &l, &sum, &tot), 5, "%s", g->msgs[at].text);
        cr_expect_eq(u + b + l, sum, "%s", g->msgs[at].text);
        cr_expect_eq(tot, m->scores[s], "%s", g->msgs[at].text);
        cr_expect_eq(sum, m->history[0][s]);
        cr_expect_eq(b % 5, 0);
        total += sum;
    }
    cr_assert_geq(said_find(g, 0, "", "Marked cells (x) of seat 1 alice, seat 2 bob and seat 3 carol:"), 0);
    cr_assert_geq(said_find(g, 0, "", "Seed of hand 1 \xE2\x80\x94 check it: cardroom verify "), 0);
    char head[128];
    snprintf(head, sizeof head, "Hand 2 \xE2\x80\x94 dealer %s (seat %d), seed commitment ", people[m->dealer],
             m->dealer + 1);
    cr_assert_geq(said_find(g, 0, "", head), 0, "no '%s'", head);
    /* standings: one hand for each person */
    int hands = 0;
    for (int i = 0; i < g->nscores; i++) hands += g->scores[i].hands;
    cr_assert_eq(hands, 3);
    (void)total;
    rig_free(g);
}

/* ---------------------------------------------------------------------------------------- */
/* The end of the game, standings, the cap                                                  */
/* ---------------------------------------------------------------------------------------- */

Test(gridtable, game_end_winner_and_standings)
{
    rig *g = rig_new(6);
    three_people(g);
    rig_say(g, "carol", 0, "!set cap 60");
    rig_say(g, "alice", 0, "!start");
    int checked_risk = 0;
    for (int guard = 0; guard < 2000 && !g->t.over; guard++) {
        if (!checked_risk && gs_of(g)->hand_no >= 2 && gs_of(g)->st.phase == GRID_PHASE_EXCLUDE) {
            char text[4096];
            table_match_text(&g->t, &g->env, text, sizeof text);
            cr_assert(strstr(text, "ContractGrid at table 1, hand "), "%s", text);
            cr_assert(strstr(text, "(cap 60)"), "%s", text);
            cr_assert(strstr(text, "At risk: "), "with cap 60 someone risks it after a hand: %s", text);
            cr_assert(strstr(text, "reaching the cap without a complete grid ranks below everyone"), "%s", text);
            checked_risk = 1;
        }
        person_moves(g, (uint64_t)guard);
    }
    cr_assert(g->t.over, "the game did not end");
    cr_assert_str_eq(g->closed, "finished");
    const grid_match *m = &gs_of(g)->st.match;
    cr_assert(m->over);
    int at = said_find(g, 0, "", "Game over after ");
    cr_assert_geq(at, 0);
    const char *line = g->msgs[at].text;
    int nwin = 0;
    for (int s = 0; s < GRID_SEATS; s++) {
        char who[64];
        snprintf(who, sizeof who, "%d. %s (seat %d) %d", m->place[s], people[s], s + 1, (int)m->scores[s]);
        cr_expect(strstr(line, who), "ranking lacks '%s': %s", who, line);
        nwin += m->winners >> s & 1;
    }
    cr_expect(strstr(line, nwin > 1 ? "share the win!" : "wins the game!"), "%s", line);
    cr_expect(strstr(line, " Table 1 is closed; !new grid opens a new one."), "%s", line);
    /* standings: every person played every hand; one match; the winners won it */
    for (int s = 0; s < GRID_SEATS; s++) {
        int hands = 0, matches = 0, won = 0;
        for (int i = 0; i < g->nscores; i++) {
            if (strcmp(g->scores[i].user, people[s]) != 0) continue;
            hands += g->scores[i].hands;
            matches += g->scores[i].matches;
            won += g->scores[i].matches_won;
            cr_expect_eq(g->scores[i].tokens, 0);
            cr_expect_eq(g->scores[i].made + g->scores[i].failed, 0);
        }
        cr_expect_eq(hands, gs_of(g)->hand_no);
        cr_expect_eq(matches, 1);
        cr_expect_eq(won, m->winners >> s & 1);
    }
    /* nothing more is taken */
    table_out o = {0};
    char err[256];
    cr_assert_neq(table_exec(&g->t, &g->env, "abort", &o, err, sizeof err), 0);
    table_out_clear(&o);
    rig_free(g);
}

Test(gridtable, cap_risk_in_words)
{
    grid_rules r;
    grid_match m;
    grid_error e;
    uint8_t grids[GRID_SEATS][GRID_MAX_CELLS], bytes[DEAL_SEED_BYTES] = {1};
    grid_rules_default(&r);
    for (int s = 0; s < GRID_SEATS; s++) {
        bytes[0] = (uint8_t)s;
        grid_random_grid(bytes, &r, grids[s]);
    }
    cr_assert_eq(grid_match_init(&m, &r, (const uint8_t(*)[GRID_MAX_CELLS])grids, 0, &e), 0);
    uint16_t marked[GRID_SEATS] = {0x0FFF, 0x0001, 0};
    int32_t scores[GRID_SEATS] = {990, 500, 0};
    cr_assert_eq(grid_match_restore(&m, marked, scores, NULL, 0, &e), 0, "%s", e.msg);
    const char *names[GRID_SEATS] = {"alice (seat 1)", "bob (seat 2)", "carol (seat 3)"};
    char text[2048];
    cr_assert_gt(render_grid_cap_risk(&m, names, text, sizeof text), 0);
    cr_assert(strstr(text, "At risk: alice (seat 1) has 990 of the cap 1000 with 12 of 16 cells marked"), "%s", text);
    cr_assert_null(strstr(text, "bob"), "%s", text);
    scores[0] = 100;
    cr_assert_eq(grid_match_restore(&m, marked, scores, NULL, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(render_grid_cap_risk(&m, names, text, sizeof text), 0, "%s", text);
}

/* ---------------------------------------------------------------------------------------- */
/* Rebuilds                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* What a table says (room and private lines, in order) when the given entries are applied. */
static void outputs_of(table *t, const table_env *env, char *const *entries, int n, char **text)
{
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    cr_assert_not_null(f);
    for (int i = 0; i < n; i++) {
        table_out o = {0};
        char err[256];
        cr_assert_eq(table_exec(t, env, entries[i], &o, err, sizeof err), 0, "'%s': %s", entries[i], err);
        for (int k = 0; k < o.nmsgs; k++) fprintf(f, "[%s] %s\n", o.msgs[k].user, o.msgs[k].text);
        table_out_clear(&o);
    }
    fclose(f);
}

Test(gridtable, rebuild_from_the_journal_is_exact)
{
    for (uint64_t seed = 30; seed < 33; seed++) {
        rig *g = rig_new(seed);
        rig_say(g, "alice", 0, "!join");
        rig_say(g, "alice", 0, "!grid random");
        rig_say(g, "alice", 0, "!bot");
        rig_say(g, "alice", 0, "!bot");
        if (seed == 31) rig_say(g, "alice", 0, "!set deck 25");
        if (seed == 32) rig_say(g, "alice", 0, "!set small true"), rig_say(g, "alice", 0, "!grid random");
        rig_say(g, "alice", 0, "!set cap 80");
        rig_say(g, "alice", 0, "!start");
        for (int guard = 0; guard < 3000 && !g->t.over; guard++) {
            rig_computers(g);
            if (!g->t.over) person_moves(g, (uint64_t)guard);
        }
        cr_assert(g->t.over);
        int n = g->nentries;
        /* rebuild at many points; the rebuilt table must equal the live one there and go on alike */
        rig *live = rig_new(seed);
        for (int cut = 0; cut < n; cut++) {
            table_out o = {0};
            char err[256];
            cr_assert_eq(table_exec(&live->t, &live->env, g->entries[cut], &o, err, sizeof err), 0, "%s", err);
            table_out_clear(&o);
            if (cut % 7 != 3 && cut != n - 2) continue;
            rig *re = rig_new(seed);
            cr_assert_eq(table_replay(&re->t, &re->env, g->entries, cut + 1, err, sizeof err), 0, "%s", err);
            cr_assert_eq(memcmp(&gs_of(re)->st, &gs_of(live)->st, sizeof gs_of(re)->st), 0,
                         "engine state differs after entry %d (%s)", cut + 1, g->entries[cut]);
            cr_assert_eq(memcmp(gs_of(re)->grid, gs_of(live)->grid, sizeof gs_of(re)->grid), 0);
            cr_assert_eq(gs_of(re)->has_grid, gs_of(live)->has_grid);
            cr_assert_eq(re->t.seq, live->t.seq);
            cr_assert_eq(gs_of(re)->hand_no, gs_of(live)->hand_no);
            cr_assert_eq(memcmp(re->t.seat, live->t.seat, sizeof re->t.seat), 0);
            /* the same next entries say the same things */
            int more = n - cut - 1 < 12 ? n - cut - 1 : 12;
            table copy = live->t;
            char *a = NULL, *b = NULL;
            outputs_of(&copy, &live->env, g->entries + cut + 1, more, &a);
            outputs_of(&re->t, &re->env, g->entries + cut + 1, more, &b);
            cr_assert_str_eq(a, b, "output after a rebuild at entry %d differs", cut + 1);
            free(a);
            free(b);
            rig_free(re);
        }
        rig_free(live);
        rig_free(g);
    }
}

Test(gridtable, damaged_journal_is_refused)
{
    rig *g = started(40);
    person_moves(g, 1);
    char *bad[64];
    int n = 0;
    for (int i = 0; i < g->nentries && n < 60; i++) bad[n++] = g->entries[i];
    char deal[64], err[256];
    int k = -1;
    for (int i = 0; i < n; i++)
        if (strncmp(bad[i], "deal ", 5) == 0) k = i;
    cr_assert_geq(k, 0);
    snprintf(deal, sizeof deal, "deal %d 5 0 0", gs_of(g)->st.dealer);
    bad[k] = deal;
    rig *re = rig_new(40);
    cr_assert_eq(table_replay(&re->t, &re->env, bad, n, err, sizeof err), k + 1);
    cr_assert(strstr(err, "does not follow"), "%s", err);
    rig_free(re);
    rig_free(g);
}

/* ---------------------------------------------------------------------------------------- */
/* Secrets                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static int rank_at(const char *p, int *rank, int *len)
{
    static const char *const ranks[RANK_COUNT] = {"7", "8", "9", "10", "J", "Q", "K", "A"};
    for (int r = RANK_COUNT - 1; r >= 0; r--) {
        size_t k = strlen(ranks[r]);
        if (strncmp(p, ranks[r], k) == 0) {
            char after = p[k];
            if (after == 0 || after == ' ' || after == ')' || after == ',' || after == '.') return *rank = r, *len = (int)k, 1;
        }
    }
    return 0;
}

/* Every card a text names: "J♠", "10♥", the joker symbol, and "♠ A K 9" groups. */
static grid_set cards_named(const char *text)
{
    grid_set set = 0;
    char one[GRID_CARD_TEXT_MAX];
    for (card_t c = 0; c < CARD_COUNT; c++)
        if (strstr(text, grid_card_pretty(c, one))) set |= GRID_BIT(c);
    if (strstr(text, JOKER_TEXT)) set |= GRID_BIT(GRID_JOKER);
    for (int suit = 0; suit < SUIT_COUNT; suit++) {
        const char *sym = suit_symbol(suit);
        size_t k = strlen(sym);
        for (const char *p = strstr(text, sym); p; p = strstr(p + k, sym)) {
            const char *q = p + k;
            int rank, len;
            for (;;) {
                if (strncmp(q, " " JOKER_TEXT, 5) == 0) {
                    q += 5;
                    continue;
                }
                if (q[0] != ' ' || !rank_at(q + 1, &rank, &len)) break;
                set |= GRID_BIT(CARD_MAKE(suit, rank));
                q += 1 + len;
            }
        }
    }
    return set;
}

typedef struct {
    int hand_no;
    grid_set hands[GRID_SEATS]; /* before the batch */
    card_t left_out;
    int phase;
} snapshot;

static void snap(const rig *g, snapshot *s)
{
    s->hand_no = gs_of(g)->hand_no;
    for (int i = 0; i < GRID_SEATS; i++) s->hands[i] = gs_of(g)->hand_no ? gs_of(g)->st.hand[i] : 0;
    s->left_out = gs_of(g)->hand_no && gs_of(g)->st.phase != GRID_PHASE_DONE ? gs_of(g)->st.left_out : CARD_NONE;
    s->phase = gs_of(g)->st.phase;
}

typedef struct {
    int checked, leaks;
    char first[512];
} leak_report;

static void leak(leak_report *r, const char *to, const char *text, grid_set bad)
{
    if (!r->leaks++) snprintf(r->first, sizeof r->first, "[%s] %s (secret cards %#llx)", to, text, (unsigned long long)bad);
}

/* Checks the messages of the last batch. A card is secret from a reader when it was in
 * another seat's hand (or left out) both before and after the batch: played cards are public,
 * and a batch that ends a hand and deals the next only has its new hands checked ("Your
 * cards" must go to their owner). */
static void check_batch(const rig *g, const snapshot *before, leak_report *r)
{
    snapshot after;
    snap(g, &after);
    int boundary = after.hand_no != before->hand_no;
    for (int i = g->batch_from; i < g->nmsgs; i++) {
        const said *m = &g->msgs[i];
        grid_set named = cards_named(m->text);
        int reader = -1;
        for (int s = 0; s < GRID_SEATS; s++)
            if (m->user[0] && strcmp(g->t.seat[s].user, m->user) == 0) reader = s;
        r->checked++;
        if (strstr(m->text, "Your cards: ")) {
            if (reader < 0 || named != gs_of(g)->st.dealt[reader]) leak(r, m->user, m->text, named);
            continue;
        }
        if (boundary) continue;
        grid_set secret = 0;
        for (int s = 0; s < GRID_SEATS; s++)
            if (s != reader) secret |= before->hands[s] & after.hands[s];
        if (before->left_out != CARD_NONE && after.left_out != CARD_NONE) secret |= GRID_BIT(after.left_out);
        if (named & secret) leak(r, m->user[0] ? m->user : "#room", m->text, named & secret);
    }
}

/* One random game: people with the computer's or random choices, commands in the room or
 * privately, and the questions people ask. */
static void secret_game(uint64_t seed, leak_report *r)
{
    rig *g = rig_new(seed);
    uint64_t x = seed * 7919 + 1;
    int humans = 1 + (int)(seed % 3);
    for (int s = 0; s < GRID_SEATS; s++) {
        if (s < humans) {
            rig_say(g, people[s], 0, "!join %d", s + 1);
            rig_say(g, people[s], 0, "!grid random");
        } else {
            rig_say(g, "alice", 0, "!bot %d", s + 1);
        }
    }
    if (seed % 2) rig_say(g, "alice", 0, "!set deck 25");
    if (seed % 5 == 0) rig_say(g, "alice", 0, "!set small true"), rig_say(g, "alice", 0, "!grid random");
    if (seed % 5 == 0)
        for (int s = 1; s < humans; s++) rig_say(g, people[s], 0, "!grid random");
    rig_say(g, "alice", 0, "!set cap 70");
    rig_say(g, "alice", 0, "!start");
    cr_assert(g->t.started, "seed %llu did not start", (unsigned long long)seed);
    for (int guard = 0; guard < 5000 && !g->t.over; guard++) {
        snapshot before;
        snap(g, &before);
        int s = table_to_act(&g->t);
        if (s >= 0 && table_computer_to_act(&g->t) == s) {
            table_question q;
            table_out o = {0};
            table_think think = table_computer_question(&g->t, s, &q);
            cr_assert_eq(think(&q, x), 1);
            g->batch_from = g->nmsgs;
            table_computer_move(&g->t, &g->env, s, g->t.seq, &q, 1, &o);
            rig_settle(g, &o);
            check_batch(g, &before, r);
            continue;
        }
        uint64_t roll = (x = x * 6364136223846793005ull + 1442695040888963407ull) >> 33;
        const char *u = s >= 0 ? g->t.seat[s].user : "alice";
        int asker = (int)(roll % (uint64_t)humans);
        switch (roll % 11) {
        case 0: rig_say(g, people[asker], (int)(roll >> 8 & 1), "!hand"); break;
        case 1: rig_say(g, people[asker], (int)(roll >> 8 & 1), "!table"); break;
        case 2: rig_say(g, people[asker], (int)(roll >> 8 & 1), "!last"); break;
        case 3: { /* a wrong card, in the room */
            grid_set h = s >= 0 ? gs_of(g)->st.hand[s] : 0;
            if (h) rig_say(g, u, 0, "!play %s", grid_card_str((card_t)(63 - __builtin_clzll(h))));
            break;
        }
        case 4: rig_say(g, people[asker], 0, "!standings"); break;
        default: {
            grid_action a;
            char text[256];
            aigrid_input in;
            aigrid_input_of(&gs_of(g)->st, s, &in);
            cr_assert_eq(aigrid_choose(&in, roll, &a), 0);
            move_text(&gs_of(g)->st.match.rules, &a, text, sizeof text);
            rig_say(g, u, (int)(roll >> 9 & 1), "%s", text);
            break;
        }
        }
        check_batch(g, &before, r);
    }
    cr_assert(g->t.over, "seed %llu: the game did not end", (unsigned long long)seed);
    rig_free(g);
}

Test(gridtable, no_card_is_ever_shown_to_the_wrong_reader)
{
    leak_report r = {0};
    for (uint64_t seed = 100; seed < 300; seed++) secret_game(seed, &r);
    cr_assert_eq(r.leaks, 0, "%d leaks, first: %s", r.leaks, r.first);
    cr_assert_gt(r.checked, 50000);
    cr_log_info("gridtable: %d messages checked", r.checked);
}

Test(gridtable, the_leak_checker_finds_a_leak)
{
    rig *g = started(50);
    person_moves(g, 1);
    snapshot before;
    snap(g, &before);
    g->batch_from = g->nmsgs;
    int s = 0;
    card_t c = (card_t)__builtin_ctzll(gs_of(g)->st.hand[s] & ~GRID_BIT(GRID_JOKER));
    table_out o = {.nmsgs = 1, .cmsgs = 1, .msgs = calloc(1, sizeof(table_msg))};
    char text[128], one[GRID_CARD_TEXT_MAX];
    cr_assert_not_null(o.msgs);
    snprintf(text, sizeof text, "alice holds %s", grid_card_pretty(c, one));
    o.msgs[0].text = strdup(text); /* a line for the room */
    rig_take(g, &o);
    leak_report r = {0};
    check_batch(g, &before, &r);
    cr_assert_geq(r.leaks, 1, "the leak in the room was not found");
    cr_assert_eq(cards_named("\xE2\x99\xA0 A K 10 \xC2\xB7 \xE2\x99\xA5 " JOKER_TEXT " 9"),
                 GRID_BIT(CARD_MAKE(SUIT_S, RANK_A)) | GRID_BIT(CARD_MAKE(SUIT_S, RANK_K)) |
                     GRID_BIT(CARD_MAKE(SUIT_S, RANK_T)) | GRID_BIT(CARD_MAKE(SUIT_H, RANK_9)) | GRID_BIT(GRID_JOKER));
    rig_free(g);
}

/* ---------------------------------------------------------------------------------------- */
/* Through the core: computer players on the workers, timers, a restart                     */
/* ---------------------------------------------------------------------------------------- */

#include "adapter.h"
#include "core.h"
#include "test_durable.h"

typedef struct {
    int n;
    char *text[4096];
    char user[4096][256];
    int64_t now;
} mem_net;

static int mem_send(void *ctx, const store_msg *m)
{
    mem_net *net = ctx;
    if (net->n < 4096) {
        net->text[net->n] = strdup(m->text);
        snprintf(net->user[net->n], sizeof net->user[net->n], "%s", m->user);
        net->n++;
    }
    return ADAPTER_SENT;
}

static int64_t mem_clock(void *ctx) { return ((mem_net *)ctx)->now; }

static core *core_up(cfg *conf, store *db, mem_net *net)
{
    char err[256];
    core_options o = {.config = conf, .db = db, .now_ms = mem_clock, .clock_ctx = net, .fixed_seed = 1, .seed = 9};
    core *c = core_new(&o, err, sizeof err);
    cr_assert_not_null(c, "%s", err);
    adapter a = {.net = "mem", .ctx = net, .send = mem_send, .private_how = "in a private message"};
    cr_assert_eq(core_add_adapter(c, &a), 0);
    return c;
}

static void core_say(core *c, const char *user, const char *text)
{
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = "!room", .sender = user, .text = text};
    cr_assert_eq(core_batch(c, "mem", &e, 1, NULL), 0);
    flush_durable(c);
}

static void core_settle(core *c)
{
    for (int guard = 0; guard < 100000 && core_busy(c) > 0; guard++) {
        cr_assert_geq(core_tick(c), 0);
        flush_durable(c);
    }
}

static int net_find(const mem_net *net, int from, const char *needle)
{
    for (int i = from; i < net->n; i++)
        if (strstr(net->text[i], needle)) return i;
    return -1;
}

Test(gridtable, core_computers_timers_and_restart)
{
    char err[256], path[] = "/tmp/cardroom-gridtable-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    unlink(path);
    cfg conf;
    cfg_defaults(&conf);
    conf.threads = 0;
    conf.remind_after = 60;
    conf.idle_takeover = 300;
    conf.table_idle_close = 0;
    store *db;
    cr_assert_eq(store_open(&db, path, err, sizeof err), 0, "%s", err);
    mem_net *net = calloc(1, sizeof *net);
    net->now = 1700000000000;
    core *c = core_up(&conf, db, net);
    core_say(c, "alice", "!new grid");
    cr_assert_geq(net_find(net, 0, "Table 1 is open for ContractGrid"), 0);
    core_say(c, "alice", "!join");
    core_say(c, "alice", "!grid random");
    core_say(c, "alice", "!bot");
    core_say(c, "alice", "!bot");
    core_say(c, "alice", "!start");
    core_settle(c);
    cr_assert_geq(net_find(net, 0, "The game begins"), 0);
    /* the computers moved until alice's turn */
    int at = net_find(net, 0, "alice (seat 1) to ");
    cr_assert_geq(at, 0, "alice was never asked to act");
    /* a reminder after remind_after, then she is away after idle_takeover: with nobody else
     * to play, the table pauses until she is back */
    int before = net->n;
    net->now += 61 * 1000;
    cr_assert_geq(core_tick(c), 0);
    flush_durable(c);
    cr_assert_geq(net_find(net, before, "Reminder \xE2\x80\x94 alice (seat 1) to "), 0, "no reminder");
    before = net->n;
    net->now += 300 * 1000;
    for (int i = 0; i < 4; i++) {
        cr_assert_geq(core_tick(c), 0);
        flush_durable(c);
    }
    cr_assert_geq(net_find(net, before, "alice (seat 1) is away"), 0, "no takeover");
    cr_assert_geq(net_find(net, before, "Table 1 pauses: all its players are away."), 0, "no pause");
    cr_assert_lt(net_find(net, before, "alice (seat 1, away) "), 0, "a computer played her seat while paused");
    cr_assert_eq(core_busy(c), 0);
    cr_assert_eq(core_table_of(c, "mem", "!room"), 1);
    core_say(c, "alice", "!back");
    core_settle(c);
    /* a restart rebuilds the table from the store, and the game goes on */
    int64_t id = core_table_of(c, "mem", "!room");
    cr_assert_eq(id, 1);
    core_free(c);
    store_close(db);
    cr_assert_eq(store_open(&db, path, err, sizeof err), 0, "%s", err);
    c = core_up(&conf, db, net);
    cr_assert_eq(core_restore(c), 1);
    cr_assert_eq(core_table_of(c, "mem", "!room"), 1);
    before = net->n;
    core_say(c, "alice", "!table");
    cr_assert_geq(net_find(net, before, "Grid of alice (seat 1)"), 0);
    core_say(c, "alice", "!standings");
    cr_assert_geq(net_find(net, before, "ContractGrid at table 1, hand "), 0);
    core_say(c, "alice", "!rules");
    cr_assert_geq(net_find(net, before, "ContractGrid for three players"), 0);
    /* everything else to the computers: alice leaves, the game runs to its end */
    core_say(c, "alice", "!leave");
    core_settle(c);
    cr_assert_geq(net_find(net, before, "Game over after "), 0, "the computers did not finish the game");
    cr_assert_eq(core_table_of(c, "mem", "!room"), 0, "the table is closed");
    core_say(c, "bob", "!grid random");
    cr_assert_geq(net_find(net, net->n - 1, "!new grid opens a ContractGrid table"), 0);
    core_free(c);
    store_close(db);
    for (int i = 0; i < net->n; i++) free(net->text[i]);
    free(net);
    unlink(path);
    char side[sizeof path + 8];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}
