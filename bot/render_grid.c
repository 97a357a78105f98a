/* render_grid.c — ContractGrid in words (render_grid.h).
 *
 * Built like render.c: every text is appended to one bounded buffer (textbuf); appends after it
 * is full are dropped and a cut never splits a UTF-8 character. Event texts take anything
 * secret from the event itself (a dealt hand goes only to its seat); the state passed in is
 * read for what everybody knows — grids, bids, tricks, the result once the hand is over — and,
 * in a seat's own copy, for that seat's hand. Cards are grid_card_pretty() text ("J♠", "10♥",
 * "🃏"); cells are "b3"; contracts are their short names ("alltrump"). As in render.c, a move
 * is one line for the room (render_grid_move); the end of a hand adds a line per seat and the
 * marks. */
#include "render_grid.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "textbuf.h"

#define RG_DOT " \xC2\xB7 "    /* " · " between groups */
#define RG_DASH "\xE2\x80\x94" /* — */
#define RG_ARROW "\xE2\x86\x92" /* → */
#define RG_CELL_WIDTH 12       /* a grid column: the longest contract name (9) in brackets, and a gap */

/* Ranks from the strongest down (in ContractGrid the rank index is the strength). */
static const char *const rg_rank_text[RANK_COUNT] = {"7", "8", "9", "10", "J", "Q", "K", "A"};

/* ---- small words ---- */

/* Columns a text takes in a monospace font: one per character (suit symbols and letters). */
static size_t rg_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

/* Adds s and pads it with spaces to width columns. */
static void rg_pad(textbuf *o, const char *s, size_t width)
{
    size_t w = rg_width(s);
    tb_add(o, "%s%*s", s, (int)(w < width ? width - w : 0), "");
}

/* ---- small words ---- */

static const char *rg_who(const char *const names[GRID_SEATS], int seat)
{
    return seat >= 0 && seat < GRID_SEATS && names[seat] ? names[seat] : "?";
}

static void rg_card(textbuf *o, card_t c)
{
    char one[GRID_CARD_TEXT_MAX];
    tb_add(o, "%s", grid_card_pretty(c, one));
}

static void rg_suit(textbuf *o, int suit) { tb_add(o, "%s %s", suit_symbol(suit), suit_name(suit)); }

static int rg_count16(uint16_t s) { return __builtin_popcount(s); }

/* "♠ A K 9": the cards of one suit in set, strongest first (no joker). Returns how many. */
static int rg_suit_cards(textbuf *o, grid_set set, int suit)
{
    int n = 0;
    for (int r = RANK_COUNT - 1; r >= 0; r--)
        if (set & GRID_BIT(CARD_MAKE(suit, r))) {
            if (!n) tb_add(o, "%s", suit_symbol(suit));
            tb_add(o, " %s", rg_rank_text[r]);
            n++;
        }
    return n;
}

/* A set of cards grouped by suit; trump (or -1) first with the joker, else the joker first. */
static void rg_set(textbuf *o, grid_set set, int trump)
{
    int groups = 0;
    int joker = (set & GRID_BIT(GRID_JOKER)) != 0;
    if (trump >= 0 && trump < SUIT_COUNT) {
        if (joker || (set & GRID_SUIT_SET(trump))) {
            tb_add(o, "%s", suit_symbol(trump));
            if (joker) tb_add(o, " \xF0\x9F\x83\x8F");
            for (int r = RANK_COUNT - 1; r >= 0; r--)
                if (set & GRID_BIT(CARD_MAKE(trump, r))) tb_add(o, " %s", rg_rank_text[r]);
            tb_add(o, " (trump)");
            groups++;
        }
    } else if (joker) {
        tb_add(o, "\xF0\x9F\x83\x8F");
        groups++;
    }
    for (int suit = 0; suit < SUIT_COUNT; suit++) {
        if (suit == trump || !(set & GRID_SUIT_SET(suit))) continue;
        if (groups++) tb_add(o, RG_DOT);
        rg_suit_cards(o, set, suit);
    }
    if (!groups) tb_add(o, "no cards");
}

/* "one, first, partner" — the contracts of a value mask; "nothing" for none. */
static void rg_contracts(textbuf *o, uint16_t values, int ncontracts)
{
    int k = 0;
    for (int c = 0; c < ncontracts; c++)
        if (values >> c & 1) tb_add(o, "%s%s", k++ ? ", " : "", grid_contract_name(c));
    if (!k) tb_add(o, "nothing");
}

static void rg_cells(textbuf *o, const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], uint16_t cells)
{
    char name[GRID_CELL_TEXT_MAX];
    int k = 0;
    for (int i = 0; i < grid_cells(r); i++)
        if (cells >> i & 1) tb_add(o, "%s%s (%s)", k++ ? ", " : "", grid_cell_name(r, i, name), grid_contract_name(grid[i]));
    if (!k) tb_add(o, "none");
}

size_t render_grid_cells(const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], uint16_t cells, char *buf,
                         size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    rg_cells(&o, r, grid, cells);
    return tb_end(&o);
}

/* ---- grids ---- */

size_t render_grid_grid(const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], uint16_t marked, const char *who,
                        char *buf, size_t len)
{
    textbuf o;
    int side = grid_side(r);
    tb_start(&o, buf, len);
    if (who) tb_add(&o, "Grid of %s", who);
    else tb_add(&o, "Your grid");
    if (marked) tb_add(&o, " " RG_DASH " %d of %d cells marked, shown [like this]:", rg_count16(marked), grid_cells(r));
    else tb_add(&o, ":");
    tb_add(&o, "\n   ");
    for (int col = 0; col < side; col++) {
        char head[4] = {' ', (char)('a' + col), 0, 0};
        if (col == side - 1) tb_add(&o, "%s", head);
        else rg_pad(&o, head, RG_CELL_WIDTH);
    }
    for (int row = 0; row < side; row++) {
        tb_add(&o, "\n%d  ", row + 1);
        for (int col = 0; col < side; col++) {
            int cell = row * side + col;
            char text[16];
            const char *name = grid_contract_name(grid[cell]);
            if (marked >> cell & 1) snprintf(text, sizeof text, "[%s]", name);
            else snprintf(text, sizeof text, " %s", name);
            if (col == side - 1) tb_add(&o, "%s", text); /* no blanks at the end of a line */
            else rg_pad(&o, text, RG_CELL_WIDTH);
        }
    }
    return tb_end(&o);
}

/* A seat's player without the seat: "alice (seat 1)" → "alice", "computer seat 2" → "computer". */
static void rg_player(textbuf *o, const char *who)
{
    const char *cut = strstr(who, " (seat ");
    if (!cut) cut = strstr(who, " seat ");
    tb_add(o, "%.*s", cut ? (int)(cut - who) : (int)strlen(who), who);
}

size_t render_grid_marks(const grid_match *m, const char *const names[GRID_SEATS], char *buf, size_t len)
{
    textbuf o;
    const grid_rules *r = &m->rules;
    int side = grid_side(r);
    size_t width = (size_t)side * 2 + 4;
    tb_start(&o, buf, len);
    tb_add(&o, "Marked cells (x) of");
    for (int s = 0; s < GRID_SEATS; s++) { /* "seat 1 alice, seat 2 bob and seat 3 computer" */
        tb_add(&o, "%sseat %d ", s == 0 ? " " : s == GRID_SEATS - 1 ? " and " : ", ", s + 1);
        rg_player(&o, rg_who(names, s));
    }
    tb_add(&o, ":");
    for (int s = 0; s < GRID_SEATS; s++) {
        char head[64];
        snprintf(head, sizeof head, "seat %d", s + 1);
        tb_add(&o, s ? "" : "\n   ");
        if (s < GRID_SEATS - 1) rg_pad(&o, head, width);
        else tb_add(&o, "%s", head);
    }
    for (int row = 0; row < side; row++) {
        tb_add(&o, "\n%d  ", row + 1);
        for (int s = 0; s < GRID_SEATS; s++) {
            char cells[32];
            size_t k = 0;
            for (int col = 0; col < side; col++) {
                cells[k++] = (m->marked[s] >> (row * side + col) & 1) ? 'x' : '.';
                cells[k++] = col < side - 1 ? ' ' : 0;
            }
            if (s < GRID_SEATS - 1) rg_pad(&o, cells, width);
            else tb_add(&o, "%s", cells);
        }
    }
    return tb_end(&o);
}

/* ---- hands ---- */

size_t render_grid_hand(const grid_state *st, int seat, char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    if (seat < 0 || seat >= GRID_SEATS) return 0;
    rg_set(&o, st->hand[seat], st->trump < SUIT_COUNT ? st->trump : -1);
    return tb_end(&o);
}

/* ---- events ---- */

static void ev_dealt(textbuf *o, const grid_state *st, const grid_event *e)
{
    grid_set set = 0;
    for (int i = 0; i < e->n; i++) set |= GRID_BIT(e->cards[i]);
    (void)st;
    tb_add(o, "Your cards: ");
    rg_set(o, set, -1);
}

/* "scores 3 for unmarked values + 10 for bids + 0 for lines = 13, total 13; bids made: …" */
static void ev_score(textbuf *o, const grid_state *st, const grid_event *e)
{
    const grid_match *m = &st->match;
    const grid_rules *r = &m->rules;
    int s = e->seat;
    uint16_t made = 0, bids = st->bids[s];
    for (int i = 0; i < grid_cells(r); i++)
        if (m->grid[s][i] < GRID_CONTRACTS && (st->result.values[s] >> m->grid[s][i] & 1)) made |= (uint16_t)(1u << i);
    tb_add(o, "scores %d for unmarked values + %d for bids + %d for lines = %d, total %d; bids made: ",
           e->part[GRID_PART_UNMARKED], e->part[GRID_PART_BIDS], e->part[GRID_PART_LINES], e->part[GRID_PART_TOTAL],
           (int)e->score);
    rg_cells(o, r, m->grid[s], bids & made);
    if (bids & ~made) {
        tb_add(o, "; missed: ");
        rg_cells(o, r, m->grid[s], bids & ~made);
    }
    if (e->cells) {
        tb_add(o, "; newly marked: ");
        rg_cells(o, r, m->grid[s], e->cells);
    }
}

static void ev_values(textbuf *o, const grid_state *st, const grid_event *e, const char *const names[])
{
    tb_add(o, "%s took %d trick%s and made ", rg_who(names, e->seat), e->amount, e->amount == 1 ? "" : "s");
    rg_contracts(o, e->values, grid_contract_count(&st->match.rules));
}

static void ev_game_over(textbuf *o, const grid_state *st, const grid_event *e, const char *const names[])
{
    const grid_match *m = &st->match;
    tb_add(o, "Game over after %d hand%s:", m->hands, m->hands == 1 ? "" : "s");
    for (int place = 1, k = 0; place <= GRID_SEATS; place++)
        for (int s = 0; s < GRID_SEATS; s++) {
            if (m->place[s] != place) continue;
            tb_add(o, "%s %d. %s %d", k++ ? ";" : "", place, rg_who(names, s), (int)m->scores[s]);
            if (grid_match_complete(m, s)) tb_add(o, " (complete grid)");
            else if (m->scores[s] >= m->rules.cap) tb_add(o, " (reached the cap without a complete grid)");
        }
    int k = 0, n = __builtin_popcount(e->flag);
    tb_add(o, " " RG_DASH " ");
    for (int s = 0; s < GRID_SEATS; s++)
        if (e->flag >> s & 1) tb_add(o, "%s%s", k++ ? (k == n ? " and " : ", ") : "", rg_who(names, s));
    tb_add(o, n > 1 ? " share the win!" : " wins the game!");
}

/* "trick 3 to bob (seat 2), tricks by seat: 1, 1, 1": counted from the tricks up to this one. */
static void ev_trick(textbuf *o, const grid_state *st, const grid_event *e, const char *const names[])
{
    tb_add(o, "trick %d to %s, tricks by seat:", e->amount + 1, rg_who(names, e->seat));
    for (int s = 0; s < GRID_SEATS; s++) {
        int k = 0;
        for (int t = 0; t <= e->amount && t < GRID_HAND_MAX; t++) k += st->tricks[t].winner == s;
        tb_add(o, "%s %d", s ? "," : "", k);
    }
}

size_t render_grid_event(const grid_state *st, const grid_event *e, int viewer, const char *const names[GRID_SEATS],
                         char *buf, size_t len)
{
    textbuf o;
    const grid_match *m = &st->match;
    const char *who = rg_who(names, e->seat);
    tb_start(&o, buf, len);
    if (e->vis == GRID_VIS_SEAT && e->to != viewer) return 0;
    switch (e->kind) {
    case GRID_EV_DEALT:
        if (viewer >= 0) ev_dealt(&o, st, e);
        break;
    case GRID_EV_EXCLUDE:
        tb_add(&o, "%s excludes ", who);
        rg_suit(&o, e->suit);
        break;
    case GRID_EV_TRUMP:
        tb_add(&o, "trump is ");
        rg_suit(&o, e->suit);
        tb_add(&o, ", the suit nobody excluded (the joker is the highest trump)");
        break;
    case GRID_EV_BID:
        tb_add(&o, "%s bids ", who);
        rg_cells(&o, &m->rules, m->grid[e->seat], e->cells);
        break;
    case GRID_EV_PLAY:
        tb_add(&o, "%s plays ", who);
        rg_card(&o, e->cards[0]);
        break;
    case GRID_EV_TRICK: ev_trick(&o, st, e, names); break;
    case GRID_EV_LEFT_OUT:
        tb_add(&o, "the card left out of the deal was ");
        rg_card(&o, e->cards[0]);
        break;
    case GRID_EV_VALUES: ev_values(&o, st, e, names); break;
    case GRID_EV_SCORE:
        tb_add(&o, "%s ", who);
        ev_score(&o, st, e);
        break;
    case GRID_EV_HAND_END: return render_grid_marks(m, names, buf, len);
    case GRID_EV_GAME_OVER: ev_game_over(&o, st, e, names); break;
    }
    return tb_end(&o);
}

/* The pieces of the move on the first line; at the end of a hand, each seat's tricks, contracts
 * and score on a line of its own, then the marks. The end of the game is for the caller. */
size_t render_grid_move(const grid_state *st, const grid_events *ev, const char *const names[GRID_SEATS], char *buf,
                        size_t len)
{
    textbuf o;
    char piece[2048];
    int pieces = 0;
    tb_start(&o, buf, len);
    for (int i = 0; i < ev->n; i++) {
        const grid_event *e = &ev->ev[i];
        if (e->vis != GRID_VIS_ALL || e->kind == GRID_EV_SCORE || e->kind == GRID_EV_GAME_OVER) continue;
        if (!render_grid_event(st, e, -1, names, piece, sizeof piece)) continue;
        int own_line = e->kind == GRID_EV_VALUES || e->kind == GRID_EV_HAND_END;
        tb_add(&o, "%s%s", !pieces++ ? "" : own_line ? "\n" : " " RG_DASH " ", piece);
        for (int k = 0; e->kind == GRID_EV_VALUES && k < ev->n; k++) /* the seat's score on its line */
            if (ev->ev[k].kind == GRID_EV_SCORE && ev->ev[k].seat == e->seat) {
                tb_add(&o, " " RG_DASH " ");
                ev_score(&o, st, &ev->ev[k]);
            }
    }
    return tb_end(&o);
}

/* ---- turns and the table ---- */

/* "♠, ♥ or ♣": the suits still free to exclude. */
static void rg_free_suits(textbuf *o, uint8_t excluded)
{
    int n = 0, k = 0;
    for (int s = 0; s < SUIT_COUNT; s++) n += !(excluded >> s & 1);
    for (int s = 0; s < SUIT_COUNT; s++)
        if (!(excluded >> s & 1)) tb_add(o, "%s%s", k++ ? (k == n ? " or " : ", ") : "", suit_symbol(s));
}

size_t render_grid_turn(const grid_state *st, const char *const names[GRID_SEATS], const char *prefix, char *buf,
                        size_t len)
{
    textbuf o;
    int s = st->to_act;
    tb_start(&o, buf, len);
    if (s >= GRID_SEATS || st->phase == GRID_PHASE_DONE) return 0;
    const char *who = rg_who(names, s);
    switch (st->phase) {
    case GRID_PHASE_EXCLUDE:
        tb_add(&o, "%s to exclude a suit: %sexclude ", who, prefix);
        rg_free_suits(&o, st->excluded);
        break;
    case GRID_PHASE_BID:
        tb_add(&o, "%s to bid %d cell%s of the grid: %smark CELL...", who, st->match.rules.bids,
               st->match.rules.bids == 1 ? "" : "s", prefix);
        break;
    case GRID_PHASE_PLAY: {
        const grid_trick *t = &st->tricks[st->trick_no];
        if (t->n == 0)
            tb_add(&o, "%s to lead", who);
        else
            tb_add(&o, "%s to play, %s led", who, suit_symbol(grid_suit_of(t->card[0], st->trump)));
        break;
    }
    }
    return tb_end(&o);
}

size_t render_grid_scores(const grid_match *m, const char *const names[GRID_SEATS], char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    for (int s = 0; s < GRID_SEATS; s++)
        tb_add(&o, "%s%s %d (%d/%d marked)", s ? RG_DOT : "", rg_who(names, s), (int)m->scores[s],
               rg_count16(m->marked[s]), grid_cells(&m->rules));
    return tb_end(&o);
}

static void rg_trick(textbuf *o, const grid_trick *t, const char *const names[])
{
    for (int i = 0; i < t->n; i++) {
        if (i) tb_add(o, ", ");
        rg_card(o, t->card[i]);
        tb_add(o, " (%s)", rg_who(names, t->seat[i]));
    }
}

size_t render_grid_table(const grid_state *st, int viewer, const char *const names[GRID_SEATS], char *buf,
                         size_t len)
{
    textbuf o;
    const grid_match *m = &st->match;
    tb_start(&o, buf, len);
    tb_add(&o, "Hand %d, dealer %s.", m->hands + (st->phase != GRID_PHASE_DONE), rg_who(names, st->dealer));
    if (st->trump < SUIT_COUNT) {
        tb_add(&o, " Trump: ");
        rg_suit(&o, st->trump);
        tb_add(&o, ".");
    }
    if (st->excluded) {
        tb_add(&o, " Excluded:");
        int k = 0;
        for (int su = 0; su < SUIT_COUNT; su++)
            if (st->excluded >> su & 1)
                tb_add(&o, "%s %s by %s", k++ ? "," : "", suit_symbol(su), rg_who(names, st->excluder[su]));
        tb_add(&o, ".");
    }
    for (int s = 0; s < GRID_SEATS; s++)
        if (st->bid_done >> s & 1) {
            tb_add(&o, "\nBids of %s: ", rg_who(names, s));
            rg_cells(&o, &m->rules, m->grid[s], st->bids[s]);
        }
    if (st->phase == GRID_PHASE_PLAY || st->phase == GRID_PHASE_DONE) {
        tb_add(&o, "\nTricks taken:");
        for (int s = 0; s < GRID_SEATS; s++) tb_add(&o, "%s %s %d", s ? "," : "", rg_who(names, s), st->tricks_taken[s]);
        tb_add(&o, ".");
    }
    if (st->phase == GRID_PHASE_PLAY && st->tricks[st->trick_no].n) {
        tb_add(&o, "\nOn the table: ");
        rg_trick(&o, &st->tricks[st->trick_no], names);
    }
    tb_add(&o, "\nScores: ");
    char scores[512];
    render_grid_scores(m, names, scores, sizeof scores);
    tb_add(&o, "%s (cap %d).", scores, m->rules.cap);
    if (st->phase != GRID_PHASE_DONE && st->to_act < GRID_SEATS) tb_add(&o, "\nTo act: %s.", rg_who(names, st->to_act));
    if (viewer >= 0 && viewer < GRID_SEATS && st->phase != GRID_PHASE_DONE) {
        tb_add(&o, "\nYour hand: ");
        rg_set(&o, st->hand[viewer], st->trump < SUIT_COUNT ? st->trump : -1);
    }
    return tb_end(&o);
}

size_t render_grid_last(const grid_state *st, const char *const names[GRID_SEATS], char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    if (st->trick_no == 0) {
        tb_add(&o, "No trick has been taken in this hand yet.");
        return tb_end(&o);
    }
    const grid_trick *t = &st->tricks[st->trick_no - 1];
    tb_add(&o, "Last trick (%d) to %s: ", st->trick_no, rg_who(names, t->winner));
    rg_trick(&o, t, names);
    tb_add(&o, ".");
    return tb_end(&o);
}

/* ---- the cap (G-END, G-WINNER) ---- */

/* The most lines one hand could complete for a grid with these marks and `bids` cells bid:
 * every choice of bids cells among the unmarked ones is tried (at most C(16, 4) = 1820). */
static int rg_most_lines(const grid_rules *r, uint16_t marked)
{
    uint16_t lines[GRID_MAX_LINES];
    int nl = grid_lines(r, lines), cells = grid_cells(r), best = 0, k = r->bids;
    int free_cells[GRID_MAX_CELLS], nf = 0;
    for (int i = 0; i < cells; i++)
        if (!(marked >> i & 1)) free_cells[nf++] = i;
    if (k > nf) k = nf;
    int idx[GRID_MAX_CELLS];
    for (int i = 0; i < k; i++) idx[i] = i;
    for (;;) {
        uint16_t after = marked;
        for (int i = 0; i < k; i++) after |= (uint16_t)(1u << free_cells[idx[i]]);
        int full = 0;
        for (int l = 0; l < nl; l++) full += (after & lines[l]) == lines[l];
        if (full > best) best = full;
        int i = k - 1; /* the next combination */
        while (i >= 0 && idx[i] == nf - k + i) i--;
        if (i < 0) break;
        idx[i]++;
        for (int j = i + 1; j < k; j++) idx[j] = idx[j - 1] + 1;
    }
    return best;
}

size_t render_grid_cap_risk(const grid_match *m, const char *const names[GRID_SEATS], char *buf, size_t len)
{
    textbuf o;
    const grid_rules *r = &m->rules;
    tb_start(&o, buf, len);
    for (int s = 0; s < GRID_SEATS; s++) {
        if (grid_match_complete(m, s)) continue;
        int unmarked = grid_cells(r) - rg_count16(m->marked[s]);
        int most = unmarked * r->unmarked_point + r->bids * 5 + rg_most_lines(r, m->marked[s]) * 5;
        if (m->scores[s] + most < r->cap) continue;
        if (o.used) tb_add(&o, " ");
        if (m->scores[s] >= r->cap)
            tb_add(&o, "%s has reached the cap of %d without a complete grid: ranks last.", rg_who(names, s), r->cap);
        else
            tb_add(&o, "At risk: %s has %d of the cap %d with %d of %d cells marked, and one hand can bring up to %d "
                   "more; reaching the cap without a complete grid ranks below everyone.", rg_who(names, s),
                   (int)m->scores[s], r->cap, grid_cells(r) - unmarked, grid_cells(r), most);
    }
    return tb_end(&o);
}

/* ---- rules ---- */

size_t render_grid_rules(const grid_rules *r, const char *prefix, const char *rules_url, char *buf, size_t len)
{
    textbuf o;
    tb_start(&o, buf, len);
    tb_add(&o, "ContractGrid for three players, each with a grid of contracts; this table's options:");
    for (int i = 0; grid_option_names[i]; i++) {
        char value[32];
        const char *v = grid_rules_get(r, grid_option_names[i], value, sizeof value);
        tb_add(&o, "%s %s=%s", i ? "," : "", grid_option_names[i], v ? v : "?");
    }
    tb_add(&o, " (%sset OPTION VALUE changes one before the start).\nThe rules in full: %scontractgrid.md", prefix,
           rules_url);
    return tb_end(&o);
}
