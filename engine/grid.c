/* grid.c — the ContractGrid rules as a state machine (shared/rules/contractgrid.md).
 *
 * Shaped like g304.c: every move is checked by the same functions that list legal moves, and
 * a move is validated completely before anything in the state changes, so a refused move
 * leaves the state untouched. The match (grids, marks, scores) is part of the hand state and
 * is updated when the last trick is taken. Events go into a fixed buffer; nothing here
 * allocates. Comments cite the rule ids they implement. */
#include "grid.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "option.h"

#define POINTS_BID 5  /* G-SCORE step 2 */
#define POINTS_LINE 5 /* G-SCORE step 3 */

/* ---- small helpers ---- */

static int next_seat(int seat) { return (seat + 1) % GRID_SEATS; }

static grid_code fail(grid_error *err, grid_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static grid_code fail(grid_error *err, grid_code code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int count16(uint16_t s) { return __builtin_popcount(s); }
static int count64(grid_set s) { return __builtin_popcountll(s); }

/* Writes "🃏 A♠ 9♠ K♥" (joker first, then by suit, strongest first) into buf. */
static const char *cards_text(grid_set s, char *buf, size_t len)
{
    size_t used = 0;
    if (!len) return buf;
    buf[0] = 0;
    card_t order[GRID_CARD_IDS];
    int n = 0;
    if (s & GRID_BIT(GRID_JOKER)) order[n++] = GRID_JOKER;
    for (int suit = 0; suit < SUIT_COUNT; suit++)
        for (int r = RANK_COUNT - 1; r >= 0; r--)
            if (s & GRID_BIT(CARD_MAKE(suit, r))) order[n++] = CARD_MAKE(suit, r);
    for (int i = 0; i < n; i++) {
        char one[GRID_CARD_TEXT_MAX];
        int k = snprintf(buf + used, len - used, "%s%s", used ? " " : "", grid_card_pretty(order[i], one));
        if (k < 0 || (size_t)k >= len - used) break;
        used += (size_t)k;
    }
    return buf;
}

static grid_event *emit(grid_events *ev, int kind, int vis, int to, int seat)
{
    if (ev->n >= GRID_MAX_EVENTS) return &ev->ev[GRID_MAX_EVENTS - 1]; /* cannot happen: see GRID_MAX_EVENTS */
    grid_event *e = &ev->ev[ev->n++];
    memset(e, 0, sizeof *e);
    e->kind = (uint8_t)kind;
    e->vis = (uint8_t)vis;
    e->to = (uint8_t)to;
    e->seat = (uint8_t)seat;
    return e;
}

static void event_cards(grid_event *e, grid_set s)
{
    while (s && e->n < GRID_HAND_MAX) {
        e->cards[e->n++] = (card_t)__builtin_ctzll(s);
        s &= s - 1;
    }
}

int grid_event_visible(const grid_event *e, int seat)
{
    switch (e->vis) {
    case GRID_VIS_ALL: return 1;
    case GRID_VIS_SEAT: return e->to == seat;
    }
    return 0;
}

/* ---- names ---- */

static const char *const contract_names[GRID_CONTRACTS] = {
    "zero",    "one",      "two",     "first",  "second", "third",    "different", "soloist",
    "partner", "alltrump", "notrump", "spades", "hearts", "diamonds", "clubs",     "play"};

const char *grid_contract_name(int contract)
{
    return contract >= 0 && contract < GRID_CONTRACTS ? contract_names[contract] : "?";
}

int grid_contract_parse(const char *text, size_t len)
{
    while (len && isspace((unsigned char)*text)) text++, len--;
    while (len && isspace((unsigned char)text[len - 1])) len--;
    for (int c = 0; c < GRID_CONTRACTS; c++)
        if (strlen(contract_names[c]) == len && strncasecmp(text, contract_names[c], len) == 0) return c;
    return -1;
}

static const char *const code_names[GRID_E_COUNT] = {
    [GRID_OK] = "ok",
    [GRID_E_PHASE] = "phase",
    [GRID_E_TURN] = "turn",
    [GRID_E_SEAT] = "seat",
    [GRID_E_SUIT] = "suit",
    [GRID_E_CELL] = "cell",
    [GRID_E_BID_COUNT] = "bid_count",
    [GRID_E_BID_TWICE] = "bid_twice",
    [GRID_E_NOT_HELD] = "not_held",
    [GRID_E_FOLLOW] = "follow",
    [GRID_E_OVER] = "over",
    [GRID_E_OPTION] = "option",
    [GRID_E_GRID] = "grid",
    [GRID_E_CONTRACT] = "contract",
    [GRID_E_PROGRESS] = "progress",
    [GRID_E_MATCH] = "match",
};

const char *grid_code_name(grid_code code) { return (unsigned)code < GRID_E_COUNT ? code_names[code] : "unknown"; }

const char *grid_do_name(grid_do kind)
{
    static const char *const names[GRID_DO_COUNT] = {"exclude", "bid", "play"};
    return (unsigned)kind < GRID_DO_COUNT ? names[kind] : "?";
}

const char *grid_phase_name(grid_phase p)
{
    static const char *const names[] = {"exclude", "bid", "play", "done"};
    return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : "?";
}

/* ---- options ---- */

const char *const grid_option_names[] = {"cap", "bids", "deck", "unmarked_point", "small", NULL};

void grid_rules_default(grid_rules *r)
{
    memset(r, 0, sizeof *r);
    r->cap = 1000;
    r->bids = 4;
    r->deck = 33;
    r->unmarked_point = 1;
}

int grid_rules_set(grid_rules *r, const char *name, const char *value, grid_error *err)
{
    int v;
    if (strcmp(name, "cap") == 0) {
        if (option_uint(value, 1, GRID_CAP_MAX, &v) < 0)
            return fail(err, GRID_E_OPTION, "option cap is a number from 1 to %d, not '%.40s'", GRID_CAP_MAX, value),
                   -1;
        r->cap = (uint16_t)v;
        return 0;
    }
    if (strcmp(name, "bids") == 0) {
        if (option_uint(value, 1, GRID_MAX_CELLS, &v) < 0)
            return fail(err, GRID_E_OPTION, "option bids is a number from 1 to %d, not '%.40s'", GRID_MAX_CELLS,
                        value),
                   -1;
        r->bids = (uint8_t)v;
        return 0;
    }
    if (strcmp(name, "deck") == 0) {
        if (option_uint(value, 25, 33, &v) < 0 || (v != 25 && v != 33))
            return fail(err, GRID_E_OPTION, "option deck is 33 or 25, not '%.40s'", value), -1;
        r->deck = (uint8_t)v;
        return 0;
    }
    if (strcmp(name, "unmarked_point") == 0) {
        if (option_uint(value, 0, 100, &v) < 0)
            return fail(err, GRID_E_OPTION, "option unmarked_point is a number from 0 to 100, not '%.40s'", value),
                   -1;
        r->unmarked_point = (uint8_t)v;
        return 0;
    }
    if (strcmp(name, "small") == 0) {
        int b = option_bool(value);
        if (b < 0) return fail(err, GRID_E_OPTION, "option small is true or false, not '%.40s'", value), -1;
        r->small = (uint8_t)b;
        r->bids = b ? 3 : 4;
        r->cap = b ? 100 : 1000;
        return 0;
    }
    fail(err, GRID_E_OPTION, "unknown option '%.40s' (options: cap, bids, deck, unmarked_point, small)", name);
    return -1;
}

const char *grid_rules_get(const grid_rules *r, const char *name, char *buf, size_t len)
{
    if (strcmp(name, "cap") == 0) return snprintf(buf, len, "%d", r->cap), buf;
    if (strcmp(name, "bids") == 0) return snprintf(buf, len, "%d", r->bids), buf;
    if (strcmp(name, "deck") == 0) return snprintf(buf, len, "%d", r->deck), buf;
    if (strcmp(name, "unmarked_point") == 0) return snprintf(buf, len, "%d", r->unmarked_point), buf;
    if (strcmp(name, "small") == 0) return snprintf(buf, len, "%s", r->small ? "true" : "false"), buf;
    return NULL;
}

int grid_rules_check(const grid_rules *r, grid_error *err)
{
    if (r->deck != 33 && r->deck != 25) return fail(err, GRID_E_OPTION, "option deck is 33 or 25"), -1;
    if (r->cap < 1 || r->cap > GRID_CAP_MAX)
        return fail(err, GRID_E_OPTION, "option cap is a number from 1 to %d", GRID_CAP_MAX), -1;
    if (r->unmarked_point > 100) return fail(err, GRID_E_OPTION, "option unmarked_point is at most 100"), -1;
    if (r->bids < 1 || r->bids > grid_cells(r))
        return fail(err, GRID_E_OPTION, "option bids is a number from 1 to %d (the cells of a %dx%d grid)",
                    grid_cells(r), grid_side(r), grid_side(r)),
               -1;
    return 0;
}

/* ---- sizes and lines (G-GRID, G-LINES) ---- */

int grid_side(const grid_rules *r) { return r->small ? 3 : 4; }
int grid_cells(const grid_rules *r) { return r->small ? 9 : 16; }
int grid_contract_count(const grid_rules *r) { return r->small ? 9 : GRID_CONTRACTS; }
int grid_deck_size(const grid_rules *r) { return r->deck == 25 ? 25 : 33; }
int grid_hand_size(const grid_rules *r) { return r->deck == 25 ? 8 : 11; }
uint16_t grid_all_cells(const grid_rules *r) { return r->small ? 0x1FF : 0xFFFF; }

/* The 25-card deck: ranks 9..A of each suit, and the joker. */
#define DECK25_SET ((grid_set)0xFCFCFCFCull | GRID_BIT(GRID_JOKER))
#define DECK33_SET ((grid_set)0xFFFFFFFFull | GRID_BIT(GRID_JOKER))

grid_set grid_deck_cards(const grid_rules *r) { return r->deck == 25 ? DECK25_SET : DECK33_SET; }

#define C4(col, row) (1u << ((row) * 4 + (col)))
#define C3(col, row) (1u << ((row) * 3 + (col)))
/* Cells as (column, row) from 0: a1 = (0, 0), d4 = (3, 3). */
static const uint16_t lines4[GRID_MAX_LINES] = {
    /* rows */
    0x000F, 0x00F0, 0x0F00, 0xF000,
    /* columns */
    0x1111, 0x2222, 0x4444, 0x8888,
    /* long diagonals a1-d4, d1-a4 */
    C4(0, 0) | C4(1, 1) | C4(2, 2) | C4(3, 3), C4(3, 0) | C4(2, 1) | C4(1, 2) | C4(0, 3),
    /* short diagonals b1-c2-d3, a2-b3-c4, c1-b2-a3, d2-c3-b4 */
    C4(1, 0) | C4(2, 1) | C4(3, 2), C4(0, 1) | C4(1, 2) | C4(2, 3), C4(2, 0) | C4(1, 1) | C4(0, 2),
    C4(3, 1) | C4(2, 2) | C4(1, 3)};
static const uint16_t lines3[8] = {
    0x007, 0x038, 0x1C0,                        /* rows */
    0x049, 0x092, 0x124,                        /* columns */
    C3(0, 0) | C3(1, 1) | C3(2, 2), C3(2, 0) | C3(1, 1) | C3(0, 2)}; /* a1-c3, c1-a3 */

int grid_lines(const grid_rules *r, uint16_t out[GRID_MAX_LINES])
{
    int n = r->small ? 8 : GRID_MAX_LINES;
    memcpy(out, r->small ? lines3 : lines4, (size_t)n * sizeof out[0]);
    return n;
}

/* The most one hand can score (for checking a given history). */
static int max_hand_points(const grid_rules *r)
{
    uint16_t lines[GRID_MAX_LINES];
    return grid_cells(r) * r->unmarked_point + r->bids * POINTS_BID + grid_lines(r, lines) * POINTS_LINE;
}

/* ---- card and cell text ---- */

static const char joker_symbol[] = "\xF0\x9F\x83\x8F"; /* 🃏 U+1F0CF */
static const char variation_selector[] = "\xEF\xB8\x8F";

const char *grid_card_str(card_t c)
{
    if (c == GRID_JOKER) return "JK";
    return card_str(c);
}

const char *grid_card_pretty(card_t c, char buf[GRID_CARD_TEXT_MAX])
{
    if (c == GRID_JOKER) {
        snprintf(buf, GRID_CARD_TEXT_MAX, "%s", joker_symbol);
        return buf;
    }
    return card_pretty(c, buf);
}

/* A short printable prefix of what was given, for a message: ASCII only, so always valid UTF-8. */
static void quote_ascii(const char *text, size_t len, char *shown, size_t size)
{
    size_t j = 0;
    for (size_t i = 0; i < len && j + 1 < size; i++) {
        unsigned char ch = (unsigned char)text[i];
        shown[j++] = (ch >= 0x20 && ch < 0x7F) ? (char)ch : '?';
    }
    shown[j] = 0;
}

static int is_joker_text(const char *text, size_t len)
{
    while (len && isspace((unsigned char)*text)) text++, len--;
    while (len && isspace((unsigned char)text[len - 1])) len--;
    if (len == 2 && strncasecmp(text, "jk", 2) == 0) return 1;
    if (len == 5 && strncasecmp(text, "joker", 5) == 0) return 1;
    if (len >= 4 && memcmp(text, joker_symbol, 4) == 0)
        return len == 4 || (len == 7 && memcmp(text + 4, variation_selector, 3) == 0);
    return 0;
}

int grid_card_parse(const char *text, size_t len, card_t *out, char *err, size_t errlen)
{
    if (is_joker_text(text, len)) {
        *out = GRID_JOKER;
        return 0;
    }
    if (card_parse(text, len, out, NULL, 0) == 0) return 0;
    if (err && errlen) {
        char shown[24];
        quote_ascii(text, len, shown, sizeof shown);
        snprintf(err, errlen,
                 "'%s' is not a card: write rank then suit, like JS, 10h, J\xE2\x99\xA0 or jack of spades, "
                 "or JK for the joker",
                 shown);
    }
    return -1;
}

const char *grid_cell_name(const grid_rules *r, int cell, char buf[GRID_CELL_TEXT_MAX])
{
    int side = grid_side(r);
    if (cell < 0 || cell >= grid_cells(r)) {
        snprintf(buf, GRID_CELL_TEXT_MAX, "??");
        return buf;
    }
    buf[0] = (char)('a' + cell % side);
    buf[1] = (char)('1' + cell / side);
    buf[2] = 0;
    return buf;
}

int grid_cell_parse(const grid_rules *r, const char *text, size_t len, int *cell, char *err, size_t errlen)
{
    int side = grid_side(r);
    char last_col = (char)('a' + side - 1);
    while (len && isspace((unsigned char)*text)) text++, len--;
    while (len && isspace((unsigned char)text[len - 1])) len--;
    int shaped = len >= 2 && len <= 4 && isalpha((unsigned char)text[0]);
    int row = 0;
    for (size_t i = 1; shaped && i < len; i++) {
        if (!isdigit((unsigned char)text[i])) shaped = 0;
        else row = row * 10 + (text[i] - '0');
    }
    if (shaped) {
        int col = tolower((unsigned char)text[0]) - 'a';
        if (col >= 0 && col < side && row >= 1 && row <= side && text[1] != '0') {
            *cell = (row - 1) * side + col;
            return 0;
        }
        if (err && errlen)
            snprintf(err, errlen, "%c%.3s is not a cell: cells are a1 to %c%d", tolower((unsigned char)text[0]),
                     text + 1, last_col, side);
        return -2;
    }
    if (err && errlen) {
        char shown[24];
        quote_ascii(text, len, shown, sizeof shown);
        snprintf(err, errlen, "'%s' is not a cell: cells are a1 to %c%d (column letter, row number)", shown,
                 last_col, side);
    }
    return -1;
}

/* ---- cards in play (G-PLAY) ---- */

int grid_suit_of(card_t c, int trump) { return c == GRID_JOKER ? trump : CARD_SUIT(c); }

int grid_is_trump(card_t c, int trump) { return c == GRID_JOKER || (c < CARD_COUNT && CARD_SUIT(c) == trump); }

int grid_trick_winner(const card_t *cards, int n, int trump)
{
    int led = grid_suit_of(cards[0], trump), best = 0;
    for (int i = 0; i < n; i++) {
        if (cards[i] == GRID_JOKER) return i;
        int bt = grid_is_trump(cards[best], trump), it = grid_is_trump(cards[i], trump);
        if (it && !bt) best = i;
        else if (it == bt && CARD_SUIT(cards[i]) == (bt ? trump : led) && CARD_RANK(cards[i]) > CARD_RANK(cards[best]))
            best = i;
    }
    return best;
}

/* The cards of hand that count as suit `suit` when trump is `trump`. */
static grid_set suit_cards(grid_set hand, int suit, int trump)
{
    grid_set s = hand & GRID_SUIT_SET(suit);
    if (suit == trump) s |= hand & GRID_BIT(GRID_JOKER);
    return s;
}

grid_code grid_check_card(grid_set hand, card_t led, int trump, card_t card, grid_error *err)
{
    char a[GRID_CARD_TEXT_MAX], buf[96];
    if (card >= GRID_CARD_IDS || !(hand & GRID_BIT(card))) {
        if (card >= GRID_CARD_IDS) return fail(err, GRID_E_NOT_HELD, "that is not a card");
        return fail(err, GRID_E_NOT_HELD, "you do not hold %s", grid_card_pretty(card, a));
    }
    if (led == CARD_NONE) return GRID_OK;
    int ls = grid_suit_of(led, trump);
    grid_set follow = suit_cards(hand, ls, trump);
    if (follow && !(follow & GRID_BIT(card))) {
        if (err) cards_text(follow, buf, sizeof buf);
        return fail(err, GRID_E_FOLLOW, "you must follow %s%s: you hold %s", suit_symbol(ls),
                    ls == trump ? " (trump; the joker counts as one)" : "", err ? buf : "");
    }
    return GRID_OK;
}

/* ---- dealing (G-DEAL) ---- */

/* The deck's cards in a fixed order: ids ascending, the joker last. */
static int deck_list(const grid_rules *r, card_t out[GRID_DECK_MAX])
{
    grid_set s = grid_deck_cards(r);
    int n = 0;
    for (; s; s &= s - 1) out[n++] = (card_t)__builtin_ctzll(s);
    return n;
}

void grid_shuffle(const uint8_t seed[DEAL_SEED_BYTES], const grid_rules *r, card_t deck[GRID_DECK_MAX])
{
    card_t cards[GRID_DECK_MAX], idx[GRID_DECK_MAX];
    int n = deck_list(r, cards);
    deal_shuffle(seed, idx, n);
    for (int i = 0; i < n; i++) deck[i] = cards[idx[i]];
    for (int i = n; i < GRID_DECK_MAX; i++) deck[i] = CARD_NONE;
}

int grid_deck_from_hands(const grid_rules *r, const card_t hands[GRID_SEATS][GRID_HAND_MAX], card_t left_out,
                         int dealer, card_t deck[GRID_DECK_MAX])
{
    int k = grid_hand_size(r), n = grid_deck_size(r);
    grid_set in_deck = grid_deck_cards(r), seen = 0;
    for (int i = 0; i < GRID_SEATS; i++) {
        int seat = (dealer + 1 + i) % GRID_SEATS;
        for (int j = 0; j < k; j++) {
            card_t c = hands[seat][j];
            if (c >= GRID_CARD_IDS || !(in_deck & GRID_BIT(c)) || (seen & GRID_BIT(c))) return -1;
            seen |= GRID_BIT(c);
            deck[i * k + j] = c;
        }
    }
    if (n > GRID_SEATS * k) {
        if (left_out >= GRID_CARD_IDS || !(in_deck & GRID_BIT(left_out)) || (seen & GRID_BIT(left_out))) return -1;
        deck[GRID_SEATS * k] = left_out;
    }
    for (int i = n; i < GRID_DECK_MAX; i++) deck[i] = CARD_NONE;
    return 0;
}

/* ---- grids (G-GRID) ---- */

int grid_grid_check(const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], grid_error *err)
{
    int cells = grid_cells(r), nc = grid_contract_count(r);
    int where[GRID_CONTRACTS];
    char a[GRID_CELL_TEXT_MAX], b[GRID_CELL_TEXT_MAX];
    for (int c = 0; c < GRID_CONTRACTS; c++) where[c] = -1;
    for (int i = 0; i < cells; i++) {
        int c = grid[i];
        if (c >= nc) {
            if (c < GRID_CONTRACTS)
                return fail(err, GRID_E_GRID, "%s (on %s) is not a contract of the small game: it has zero to partner",
                            grid_contract_name(c), grid_cell_name(r, i, a)),
                       -1;
            return fail(err, GRID_E_GRID, "the contract on %s is not a contract", grid_cell_name(r, i, a)), -1;
        }
        if (where[c] >= 0)
            return fail(err, GRID_E_GRID, "%s appears twice (%s and %s): each contract goes on the grid once",
                        grid_contract_name(c), grid_cell_name(r, where[c], a), grid_cell_name(r, i, b)),
                   -1;
        where[c] = i;
    }
    for (int c = 0; c < nc; c++)
        if (where[c] < 0) return fail(err, GRID_E_GRID, "%s is missing from the grid", grid_contract_name(c)), -1;
    return 0;
}

void grid_random_grid(const uint8_t seed[DEAL_SEED_BYTES], const grid_rules *r, uint8_t grid[GRID_MAX_CELLS])
{
    card_t order[GRID_MAX_CELLS];
    int n = grid_cells(r);
    deal_shuffle(seed, order, n);
    for (int i = 0; i < GRID_MAX_CELLS; i++) grid[i] = i < n ? order[i] : 0xFF;
}

/* ---- the match (G-END, G-WINNER) ---- */

int grid_match_init(grid_match *m, const grid_rules *r, const uint8_t grids[GRID_SEATS][GRID_MAX_CELLS],
                    int dealer, grid_error *err)
{
    grid_error e;
    if (grid_rules_check(r, err) < 0) return -1;
    if (dealer < 0 || dealer >= GRID_SEATS) return fail(err, GRID_E_SEAT, "there is no seat %d", dealer), -1;
    for (int s = 0; s < GRID_SEATS; s++)
        if (grid_grid_check(r, grids[s], &e) < 0) return fail(err, GRID_E_GRID, "seat %d: %s", s, e.msg), -1;
    memset(m, 0, sizeof *m);
    m->rules = *r;
    m->dealer = (uint8_t)dealer;
    memset(m->cell_of, 0xFF, sizeof m->cell_of);
    memset(m->grid, 0xFF, sizeof m->grid);
    for (int s = 0; s < GRID_SEATS; s++)
        for (int i = 0; i < grid_cells(r); i++) {
            m->grid[s][i] = grids[s][i];
            m->cell_of[s][grids[s][i]] = (uint8_t)i;
        }
    return 0;
}

int grid_match_complete(const grid_match *m, int seat)
{
    uint16_t all = grid_all_cells(&m->rules);
    return (m->marked[seat] & all) == all;
}

/* The G-WINNER tie-break after a moment with these totals. */
static void note_moment(grid_match *m, const int32_t totals[GRID_SEATS])
{
    for (int i = 0; i < GRID_SEATS; i++)
        for (int j = 0; j < GRID_SEATS; j++)
            if (totals[i] != totals[j]) m->ahead[i][j] = totals[i] > totals[j] ? 1 : -1;
}

int grid_match_restore(grid_match *m, const uint16_t marked[GRID_SEATS], const int32_t scores[GRID_SEATS],
                       const int16_t (*history)[GRID_SEATS], int n, grid_error *err)
{
    const grid_rules *r = &m->rules;
    char a[GRID_CELL_TEXT_MAX], b[GRID_CELL_TEXT_MAX];
    int side = grid_side(r), most = max_hand_points(r);
    if (n < 0 || n > GRID_HISTORY_MAX || (n && !history))
        return fail(err, GRID_E_PROGRESS, "the history holds at most %d hands", GRID_HISTORY_MAX), -1;
    for (int s = 0; s < GRID_SEATS; s++) {
        if (marked[s] & ~grid_all_cells(r))
            return fail(err, GRID_E_PROGRESS, "seat %d: marks outside the grid (cells are %s to %s)", s,
                        grid_cell_name(r, 0, a), grid_cell_name(r, side * side - 1, b)),
                   -1;
        if (marked[s] == grid_all_cells(r))
            return fail(err, GRID_E_PROGRESS, "seat %d: a completely marked grid ends the game", s), -1;
        if (scores[s] < 0 || scores[s] >= r->cap)
            return fail(err, GRID_E_PROGRESS, "seat %d: the score must be 0 to %d (the cap ends the game)", s,
                        r->cap - 1),
                   -1;
    }
    int32_t totals[GRID_SEATS];
    for (int s = 0; s < GRID_SEATS; s++) {
        totals[s] = scores[s];
        for (int k = 0; k < n; k++) {
            if (history[k][s] < 0 || history[k][s] > most)
                return fail(err, GRID_E_PROGRESS, "history[%d]: seat %d scored %d: one hand scores 0 to %d", k, s,
                            history[k][s], most),
                       -1;
            totals[s] -= history[k][s];
        }
        if (totals[s] < 0)
            return fail(err, GRID_E_PROGRESS, "seat %d: the history adds up to more than the score %d", s,
                        (int)scores[s]),
                   -1;
    }
    for (int s = 0; s < GRID_SEATS; s++) {
        m->marked[s] = marked[s];
        m->scores[s] = scores[s];
    }
    memset(m->ahead, 0, sizeof m->ahead);
    note_moment(m, totals); /* the scores before the first hand given */
    for (int k = 0; k < n; k++) {
        for (int s = 0; s < GRID_SEATS; s++) totals[s] += history[k][s];
        note_moment(m, totals);
        memcpy(m->history[k], history[k], sizeof m->history[k]);
    }
    note_moment(m, scores);
    m->history_n = (uint16_t)n;
    m->hands = (uint16_t)n;
    m->over = 0;
    m->winners = 0;
    memset(m->place, 0, sizeof m->place);
    return 0;
}

/* Players who reached the cap without a complete grid rank below everyone else (G-WINNER). */
static int capped_out(const grid_match *m, int s) { return m->scores[s] >= m->rules.cap && !grid_match_complete(m, s); }

/* > 0 when i ranks above j, < 0 below, 0 tied throughout (G-WINNER). */
static int rank_cmp(const grid_match *m, int i, int j)
{
    int ci = capped_out(m, i), cj = capped_out(m, j);
    if (ci != cj) return cj - ci;
    if (m->scores[i] != m->scores[j]) return m->scores[i] > m->scores[j] ? 1 : -1;
    return m->ahead[i][j];
}

int grid_match_rank(const grid_match *m, uint8_t place[GRID_SEATS])
{
    int winners = 0;
    for (int i = 0; i < GRID_SEATS; i++) {
        int above = 0;
        for (int j = 0; j < GRID_SEATS; j++)
            if (j != i && rank_cmp(m, j, i) > 0) above++;
        place[i] = (uint8_t)(1 + above);
        if (!above) winners |= 1 << i;
    }
    return winners;
}

/* Adds one hand's points to the match: totals, history, tie-break, G-END. */
static void match_record(grid_match *m, const int16_t pts[GRID_SEATS])
{
    for (int s = 0; s < GRID_SEATS; s++) m->scores[s] += pts[s];
    if (m->history_n == GRID_HISTORY_MAX) {
        memmove(m->history[0], m->history[1], sizeof m->history - sizeof m->history[0]);
        m->history_n--;
    }
    memcpy(m->history[m->history_n++], pts, sizeof m->history[0]);
    if (m->hands < UINT16_MAX) m->hands++;
    note_moment(m, m->scores);
    for (int s = 0; s < GRID_SEATS; s++)
        if (m->scores[s] >= m->rules.cap || grid_match_complete(m, s)) m->over = 1;
    if (m->over) m->winners = (uint8_t)grid_match_rank(m, m->place);
    else m->dealer = (uint8_t)next_seat(m->dealer);
}

/* ---- values and score (G-VALUES, G-SCORE) ---- */

void grid_values(int ncontracts, const uint8_t tricks[GRID_SEATS], const grid_set won[GRID_SEATS], int trump,
                 grid_set in_play, uint16_t values[GRID_SEATS])
{
    grid_set trumps = in_play & (GRID_SUIT_SET(trump) | GRID_BIT(GRID_JOKER));
    for (int s = 0; s < GRID_SEATS; s++) {
        int t = tricks[s], a = tricks[(s + 1) % 3], b = tricks[(s + 2) % 3];
        uint16_t v = 1u << GRID_C_PLAY;
        v |= (uint16_t)(1u << (GRID_C_ZERO + t % 3));
        if (t >= a && t >= b) v |= 1u << GRID_C_FIRST;
        if ((a > t && b < t) || (b > t && a < t)) v |= 1u << GRID_C_SECOND;
        if (t <= a && t <= b) v |= 1u << GRID_C_THIRD;
        if (t != a && t != b && a != b) v |= 1u << GRID_C_DIFFERENT;
        if (a == b && t != a) v |= 1u << GRID_C_SOLOIST;
        if (t == a || t == b) v |= 1u << GRID_C_PARTNER;
        if ((won[s] & trumps) == trumps) v |= 1u << GRID_C_ALLTRUMP;
        if (!(won[s] & (GRID_SUIT_SET(trump) | GRID_BIT(GRID_JOKER)))) v |= 1u << GRID_C_NOTRUMP;
        int count[SUIT_COUNT];
        for (int su = 0; su < SUIT_COUNT; su++) count[su] = count64(won[s] & GRID_SUIT_SET(su));
        for (int su = 0; su < SUIT_COUNT; su++) {
            int most = 1;
            for (int o = 0; o < SUIT_COUNT; o++)
                if (count[o] > count[su]) most = 0;
            if (most) v |= (uint16_t)(1u << (GRID_C_SPADES + su));
        }
        if (ncontracts < GRID_CONTRACTS) v &= (uint16_t)((1u << ncontracts) - 1);
        values[s] = v;
    }
}

int grid_score(const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], uint16_t marked, uint16_t bids,
               uint16_t values, int16_t part[GRID_PARTS], uint16_t *newly)
{
    uint16_t lines[GRID_MAX_LINES], made = 0;
    int nl = grid_lines(r, lines);
    for (int i = 0; i < grid_cells(r); i++)
        if (grid[i] < GRID_CONTRACTS && (values >> grid[i] & 1)) made |= (uint16_t)(1u << i);
    part[GRID_PART_UNMARKED] = (int16_t)(count16(made & ~marked) * r->unmarked_point); /* step 1 */
    part[GRID_PART_BIDS] = (int16_t)(count16(made & bids) * POINTS_BID);               /* step 2 */
    *newly = (uint16_t)(made & bids & ~marked);
    uint16_t after = marked | *newly;
    int full = 0;
    for (int l = 0; l < nl; l++) full += (after & lines[l]) == lines[l];
    part[GRID_PART_LINES] = (int16_t)(full * POINTS_LINE); /* step 3 */
    part[GRID_PART_TOTAL] = (int16_t)(part[0] + part[1] + part[2]);
    return part[GRID_PART_TOTAL];
}

/* ---- a hand ---- */

grid_code grid_start(grid_state *st, const grid_match *m, const card_t deck[GRID_DECK_MAX], grid_events *ev)
{
    grid_events scratch;
    if (!ev) ev = &scratch;
    scratch.n = 0;
    if (m->over) return GRID_E_MATCH;
    grid_match copy = *m; /* m may be &st->match */
    memset(st, 0, sizeof *st);
    st->match = copy;
    const grid_rules *r = &st->match.rules;
    int k = grid_hand_size(r);
    st->dealer = copy.dealer;
    memcpy(st->deck, deck, GRID_DECK_MAX);
    st->left_out = grid_deck_size(r) > GRID_SEATS * k ? deck[GRID_SEATS * k] : CARD_NONE;
    memset(st->excluder, GRID_NO_SEAT, sizeof st->excluder);
    st->trump = 0xFF;
    for (int t = 0; t < GRID_HAND_MAX; t++) st->tricks[t].winner = st->tricks[t].leader = GRID_NO_SEAT;
    for (int i = 0; i < GRID_SEATS; i++) {
        int seat = (st->dealer + 1 + i) % GRID_SEATS;
        grid_set got = 0;
        for (int j = 0; j < k; j++) got |= GRID_BIT(deck[i * k + j]);
        st->dealt[seat] = st->hand[seat] = got;
        grid_event *e = emit(ev, GRID_EV_DEALT, GRID_VIS_SEAT, seat, seat);
        event_cards(e, got);
    }
    st->phase = GRID_PHASE_EXCLUDE;
    st->to_act = (uint8_t)next_seat(st->dealer);
    st->result.next_dealer = GRID_NO_SEAT;
    return GRID_OK;
}

/* G-VALUES, G-SCORE, G-END after the last trick. */
static void finish(grid_state *st, grid_events *ev)
{
    grid_match *m = &st->match;
    const grid_rules *r = &m->rules;
    grid_result *res = &st->result;
    grid_set in_play = st->dealt[0] | st->dealt[1] | st->dealt[2];
    if (st->left_out != CARD_NONE) {
        grid_event *e = emit(ev, GRID_EV_LEFT_OUT, GRID_VIS_ALL, 0, GRID_NO_SEAT);
        e->cards[0] = st->left_out;
        e->n = 1;
    }
    memcpy(res->tricks, st->tricks_taken, sizeof res->tricks);
    grid_values(grid_contract_count(r), st->tricks_taken, st->won, st->trump, in_play, res->values);
    int16_t pts[GRID_SEATS];
    for (int s = 0; s < GRID_SEATS; s++) {
        grid_event *e = emit(ev, GRID_EV_VALUES, GRID_VIS_ALL, 0, s);
        e->amount = st->tricks_taken[s];
        e->values = res->values[s];
    }
    for (int s = 0; s < GRID_SEATS; s++) {
        pts[s] = (int16_t)grid_score(r, m->grid[s], m->marked[s], st->bids[s], res->values[s], res->part[s],
                                     &res->newly[s]);
        m->marked[s] |= res->newly[s];
    }
    match_record(m, pts);
    for (int s = 0; s < GRID_SEATS; s++) {
        grid_event *e = emit(ev, GRID_EV_SCORE, GRID_VIS_ALL, 0, s);
        memcpy(e->part, res->part[s], sizeof e->part);
        e->cells = res->newly[s];
        e->score = m->scores[s];
    }
    res->next_dealer = m->over ? GRID_NO_SEAT : m->dealer;
    st->phase = GRID_PHASE_DONE;
    st->to_act = GRID_NO_SEAT;
    emit(ev, GRID_EV_HAND_END, GRID_VIS_ALL, 0, res->next_dealer);
    if (m->over) {
        grid_event *e = emit(ev, GRID_EV_GAME_OVER, GRID_VIS_ALL, 0, GRID_NO_SEAT);
        e->flag = m->winners;
    }
}

/* ---- checking moves ---- */

static grid_code check_phase(const grid_state *st, int kind, grid_error *err)
{
    static const char *const when[GRID_DO_COUNT] = {
        [GRID_DO_EXCLUDE] = "suits are excluded at the start of the hand, before the bids",
        [GRID_DO_BID] = "the bids come after the exclusions and before the first card",
        [GRID_DO_PLAY] = "cards are played after the exclusions and the bids",
    };
    static const uint8_t phase_of[GRID_DO_COUNT] = {GRID_PHASE_EXCLUDE, GRID_PHASE_BID, GRID_PHASE_PLAY};
    if (st->phase == GRID_PHASE_DONE) return fail(err, GRID_E_OVER, "the hand is over");
    if (kind < 0 || kind >= GRID_DO_COUNT) return fail(err, GRID_E_PHASE, "unknown move");
    if (st->phase != phase_of[kind]) return fail(err, GRID_E_PHASE, "%s", when[kind]);
    return GRID_OK;
}

/* G-TRUMP */
static grid_code check_exclude(const grid_state *st, int suit, grid_error *err)
{
    if (suit < 0 || suit >= SUIT_COUNT) return fail(err, GRID_E_SUIT, "that is not a suit: name spades, hearts, diamonds or clubs");
    if (st->excluded & (1 << suit))
        return fail(err, GRID_E_SUIT, "that suit is already excluded: seat %d excluded %s", st->excluder[suit],
                    suit_symbol(suit));
    return GRID_OK;
}

/* G-BIDS: exactly `bids` distinct cells of the player's own grid. */
static grid_code check_bid(const grid_state *st, const grid_action *a, uint16_t *cells, grid_error *err)
{
    const grid_rules *r = &st->match.rules;
    char name[GRID_CELL_TEXT_MAX], last[GRID_CELL_TEXT_MAX];
    uint16_t set = 0;
    int n = a->n <= GRID_MAX_CELLS ? a->n : GRID_MAX_CELLS;
    for (int i = 0; i < n; i++) {
        int c = a->cells[i];
        if (c >= grid_cells(r))
            return fail(err, GRID_E_CELL, "cell number %d is not a cell: cells are a1 to %s", c,
                        grid_cell_name(r, grid_cells(r) - 1, last));
        if (set & (1u << c)) return fail(err, GRID_E_BID_TWICE, "you bid %s twice", grid_cell_name(r, c, name));
        set |= (uint16_t)(1u << c);
    }
    if (a->n != r->bids)
        return fail(err, GRID_E_BID_COUNT, "bid exactly %d cell%s of your grid (you gave %d)", r->bids,
                    r->bids == 1 ? "" : "s", a->n);
    *cells = set;
    return GRID_OK;
}

/* G-PLAY */
static grid_code check_play(const grid_state *st, int seat, card_t card, grid_error *err)
{
    const grid_trick *t = &st->tricks[st->trick_no];
    if (card < GRID_CARD_IDS && !(grid_deck_cards(&st->match.rules) & GRID_BIT(card))) {
        char a[GRID_CARD_TEXT_MAX];
        return fail(err, GRID_E_NOT_HELD, "%s is not in the 25-card deck", grid_card_pretty(card, a));
    }
    return grid_check_card(st->hand[seat], t->n ? t->card[0] : CARD_NONE, st->trump, card, err);
}

static grid_code check_move(const grid_state *st, int seat, const grid_action *a, uint16_t *cells, grid_error *err)
{
    grid_code c = check_phase(st, a->kind, err);
    if (c) return c;
    if (seat != st->to_act) return fail(err, GRID_E_TURN, "it is not your turn: seat %d is to act", st->to_act);
    switch (a->kind) {
    case GRID_DO_EXCLUDE: return check_exclude(st, a->suit, err);
    case GRID_DO_BID: return check_bid(st, a, cells, err);
    case GRID_DO_PLAY: return check_play(st, seat, a->card, err);
    }
    return fail(err, GRID_E_PHASE, "unknown move");
}

/* ---- applying moves ---- */

static void apply_exclude(grid_state *st, int seat, int suit, grid_events *ev)
{
    st->excluded |= (uint8_t)(1 << suit);
    st->excluder[suit] = (uint8_t)seat;
    grid_event *e = emit(ev, GRID_EV_EXCLUDE, GRID_VIS_ALL, 0, seat);
    e->suit = (uint8_t)suit;
    if (count16(st->excluded) < SUIT_COUNT - 1) {
        st->to_act = (uint8_t)next_seat(seat);
        return;
    }
    st->trump = (uint8_t)__builtin_ctz(~st->excluded & 0xF); /* the one suit left */
    e = emit(ev, GRID_EV_TRUMP, GRID_VIS_ALL, 0, GRID_NO_SEAT);
    e->suit = st->trump;
    st->phase = GRID_PHASE_BID;
    st->to_act = (uint8_t)next_seat(st->dealer);
}

static void apply_bid(grid_state *st, int seat, uint16_t cells, grid_events *ev)
{
    st->bids[seat] = cells;
    st->bid_done |= (uint8_t)(1 << seat);
    grid_event *e = emit(ev, GRID_EV_BID, GRID_VIS_ALL, 0, seat);
    e->cells = cells;
    if (st->bid_done != (1 << GRID_SEATS) - 1) {
        st->to_act = (uint8_t)next_seat(seat);
        return;
    }
    st->phase = GRID_PHASE_PLAY;
    st->to_act = st->tricks[0].leader = (uint8_t)next_seat(st->dealer);
}

static void apply_play(grid_state *st, int seat, card_t card, grid_events *ev)
{
    grid_trick *t = &st->tricks[st->trick_no];
    t->card[t->n] = card;
    t->seat[t->n] = (uint8_t)seat;
    t->n++;
    st->hand[seat] &= ~GRID_BIT(card);
    grid_event *e = emit(ev, GRID_EV_PLAY, GRID_VIS_ALL, 0, seat);
    e->cards[0] = card;
    e->n = 1;
    if (t->n < GRID_SEATS) {
        st->to_act = (uint8_t)next_seat(seat);
        return;
    }
    int w = t->seat[grid_trick_winner(t->card, t->n, st->trump)];
    t->winner = (uint8_t)w;
    for (int i = 0; i < t->n; i++) st->won[w] |= GRID_BIT(t->card[i]);
    st->tricks_taken[w]++;
    e = emit(ev, GRID_EV_TRICK, GRID_VIS_ALL, 0, w);
    e->amount = st->trick_no;
    memcpy(e->cards, t->card, GRID_SEATS);
    e->n = GRID_SEATS;
    st->trick_no++;
    if (st->trick_no >= grid_hand_size(&st->match.rules)) {
        finish(st, ev);
        return;
    }
    st->tricks[st->trick_no].leader = (uint8_t)w;
    st->to_act = (uint8_t)w;
}

grid_code grid_apply(grid_state *st, int seat, const grid_action *a, grid_events *ev, grid_error *err)
{
    grid_events scratch;
    if (!ev) ev = &scratch, scratch.n = 0;
    if (seat < 0 || seat >= GRID_SEATS) return fail(err, GRID_E_SEAT, "there is no seat %d", seat);
    uint16_t cells = 0;
    grid_code c = check_move(st, seat, a, &cells, err);
    if (c) return c;
    if (err) err->code = GRID_OK, err->msg[0] = 0;
    switch (a->kind) {
    case GRID_DO_EXCLUDE: apply_exclude(st, seat, a->suit, ev); break;
    case GRID_DO_BID: apply_bid(st, seat, cells, ev); break;
    case GRID_DO_PLAY: apply_play(st, seat, a->card, ev); break;
    }
    return GRID_OK;
}

/* ---- legal moves ---- */

int grid_legal(const grid_state *st, int seat, grid_action *out)
{
    int n = 0;
    if (seat < 0 || seat >= GRID_SEATS || seat != st->to_act || st->phase == GRID_PHASE_DONE) return 0;
    switch (st->phase) {
    case GRID_PHASE_EXCLUDE:
        for (int s = 0; s < SUIT_COUNT; s++)
            if (check_exclude(st, s, NULL) == GRID_OK) {
                memset(&out[n], 0, sizeof out[n]);
                out[n].kind = GRID_DO_EXCLUDE;
                out[n].card = CARD_NONE;
                out[n++].suit = (uint8_t)s;
            }
        break;
    case GRID_PHASE_BID:
        memset(&out[0], 0, sizeof out[0]);
        out[0].kind = GRID_DO_BID;
        out[0].card = CARD_NONE;
        out[0].choose = st->match.rules.bids;
        for (int c = 0; c < grid_cells(&st->match.rules); c++) out[0].cells[out[0].n++] = (uint8_t)c;
        n = 1;
        break;
    case GRID_PHASE_PLAY:
        for (grid_set h = st->hand[seat]; h && n < GRID_MAX_LEGAL; h &= h - 1) {
            card_t c = (card_t)__builtin_ctzll(h);
            if (check_play(st, seat, c, NULL) != GRID_OK) continue;
            memset(&out[n], 0, sizeof out[n]);
            out[n].kind = GRID_DO_PLAY;
            out[n++].card = c;
        }
        break;
    }
    return n;
}

/* ---- what a seat may know ---- */

void grid_view_of(const grid_state *st, int seat, grid_view *v)
{
    memset(v, 0, sizeof *v);
    v->seat = (uint8_t)seat;
    v->phase = st->phase;
    v->dealer = st->dealer;
    v->to_act = st->to_act;
    v->hand = seat >= 0 && seat < GRID_SEATS ? st->hand[seat] : 0;
    for (int s = 0; s < GRID_SEATS; s++) {
        v->hand_size[s] = (uint8_t)count64(st->hand[s]);
        v->bids[s] = st->bids[s];
        v->tricks_taken[s] = st->tricks_taken[s];
        v->won[s] = st->won[s];
        v->played |= st->dealt[s] & ~st->hand[s];
    }
    v->trump = st->trump < SUIT_COUNT ? (int8_t)st->trump : -1;
    v->excluded = st->excluded;
    memcpy(v->excluder, st->excluder, sizeof v->excluder);
    v->bid_done = st->bid_done;
    v->trick_no = st->trick_no;
    v->current.winner = v->last.winner = GRID_NO_SEAT;
    v->current.leader = v->last.leader = GRID_NO_SEAT;
    int k = grid_hand_size(&st->match.rules);
    if (st->phase == GRID_PHASE_PLAY && st->trick_no < k) v->current = st->tricks[st->trick_no];
    if (st->trick_no > 0) v->last = st->tricks[st->trick_no - 1];
    v->left_out = st->phase == GRID_PHASE_DONE ? st->left_out : CARD_NONE;
    v->match = st->match;
    if (st->phase == GRID_PHASE_DONE) v->result = st->result;
}
