/* grid.h — the ContractGrid rules engine: a match of hands for three players.
 *
 * Same shape as g304.h. The state is a plain struct (no pointers; copy it with memcpy).
 * A match (grid_match: rules, the three grids, marks, scores, history) lives inside the hand
 * state (grid_state); a hand starts from a deck order (grid_start); every move goes through
 * grid_apply(), which either refuses it (an error code and a sentence, state unchanged byte
 * for byte) or applies it and reports game events, each with a visibility: everyone or one
 * seat. grid_legal() lists the moves a seat may make now; grid_view_of() gives what a seat may
 * know. Nothing here allocates, prints or keeps globals. Rule ids (G-…) refer to
 * shared/rules/contractgrid.md.
 *
 * Cards (G-CARDS): the ids of cards.h, 0..31 = suit * 8 + rank with suits S H D C and ranks
 * 7 8 9 T J Q K A; in ContractGrid the rank index is exactly the strength (7 lowest, A
 * highest). The joker is GRID_JOKER (32). Sets of cards are uint64_t masks (grid_set), bit c
 * for card c. The 25-card deck (`deck = 25`) keeps the ranks 9..A of each suit and the joker.
 *
 * Seats (G-SEATS): 0..2, numbered in playing order, so play goes seat → seat+1 (mod 3)
 * (clockwise). The dealer's left is dealer+1: it excludes, bids and leads first.
 *
 * Cells (G-GRID): a grid has `side` × `side` cells (4, or 3 with `small`), named by column
 * letter and row number: a1..d4 (a1..c3). A cell's index is row * side + column, i.e. row
 * by row from a1: a1=0, b1=1, c1=2, d1=3, a2=4, … d4=15 (small: a1=0, b1=1, c1=2, a2=3 … c3=8).
 * A grid is the contract on each cell, in that index order. Sets of cells are uint16_t
 * masks, bit i for cell i.
 *
 * Lines (G-LINES): 4×4: the 4 rows, the 4 columns, the 2 long diagonals a1-d4 and d1-a4 and
 * the 4 short diagonals b1-c2-d3, a2-b3-c4, c1-b2-a3, d2-c3-b4 (14). The 3×3 `small` game has
 * 3 rows, 3 columns and the 2 diagonals a1-c3, c1-a3 (8 lines of three cells). Why: they are
 * the lines of a tic-tac-toe board and every line has three cells, like the short diagonals
 * of the big game; shorter diagonals of two cells would be too cheap to complete. So the
 * most in one small hand is 3 + 3×5 + 8×5 = 58 (with unmarked_point 1).
 *
 * Contracts (G-CONTRACTS): ids GRID_C_ZERO..GRID_C_PLAY in the order of the rules; `small`
 * uses the first nine: zero, one, two, first, second, third, different, soloist, partner
 * (ids 0..8). The rules' "(`zero` … `soloist`)" names only eight; a 3×3 grid needs nine, so
 * "the first nine" wins and partner is the ninth. */
#ifndef CARDROOM_GRID_H
#define CARDROOM_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "cards.h"
#include "deal.h"

#define GRID_SEATS 3
#define GRID_NO_SEAT 0xFF
#define GRID_JOKER ((card_t)32)    /* the joker's card id (G-CARDS) */
#define GRID_CARD_IDS 33           /* card ids 0..32 */
#define GRID_DECK_MAX 33           /* cards in the big deck */
#define GRID_HAND_MAX 11           /* cards per hand (8 with deck 25); also tricks per hand */
#define GRID_MAX_CELLS 16
#define GRID_MAX_LINES 14
#define GRID_CONTRACTS 16
#define GRID_HISTORY_MAX 200       /* hands kept in the score history (older ones are dropped;
                                      the tie-break never needs them, see grid_match.ahead) */
#define GRID_MAX_EVENTS 16         /* events one grid_apply() or grid_start() can report */
#define GRID_MAX_LEGAL 12          /* moves grid_legal() can list */
#define GRID_MSG_MAX 160
#define GRID_CARD_TEXT_MAX 16      /* enough for any grid_card_pretty() text and its NUL */
#define GRID_CELL_TEXT_MAX 4       /* "d4" and its NUL */
#define GRID_CAP_MAX 30000         /* the largest `cap` */

typedef uint64_t grid_set;
#define GRID_BIT(c) ((grid_set)1 << (c))
#define GRID_SUIT_SET(suit) ((grid_set)0xFFu << ((suit) * 8)) /* the eight cards of a suit, no joker */

/* ---- Contracts (G-CONTRACTS) ---- */
typedef enum {
    GRID_C_ZERO = 0,  /* "zero": tricks ≡ 0 (mod 3) */
    GRID_C_ONE,       /* "one": tricks ≡ 1 (mod 3) */
    GRID_C_TWO,       /* "two": tricks ≡ 2 (mod 3) */
    GRID_C_FIRST,     /* "first": nobody took more tricks */
    GRID_C_SECOND,    /* "second": exactly one took more and one took fewer */
    GRID_C_THIRD,     /* "third": nobody took fewer */
    GRID_C_DIFFERENT, /* "different": all three took different numbers */
    GRID_C_SOLOIST,   /* "soloist": the other two tied with each other, you differ */
    GRID_C_PARTNER,   /* "partner": you tied with at least one other */
    GRID_C_ALLTRUMP,  /* "alltrump": your tricks hold every trump in play (joker included) */
    GRID_C_NOTRUMP,   /* "notrump": your tricks hold no trump and not the joker */
    GRID_C_SPADES,    /* "spades": at least as many ♠ as of each other suit in your tricks */
    GRID_C_HEARTS,    /* "hearts" */
    GRID_C_DIAMONDS,  /* "diamonds" */
    GRID_C_CLUBS,     /* "clubs" */
    GRID_C_PLAY,      /* "play": always made */
} grid_contract;

/* "zero", "alltrump", …; "?" for a non-contract. */
const char *grid_contract_name(int contract);
/* A contract from its name (case-insensitive, blanks trimmed); -1 if unknown. */
int grid_contract_parse(const char *text, size_t len);

/* ---- Options ---- */
typedef struct {
    uint16_t cap;           /* G-END: the game ends when someone reaches it (default 1000; small 100) */
    uint8_t bids;           /* G-BIDS: cells each player bids per hand (default 4; small 3) */
    uint8_t deck;           /* G-CARDS: 33 (default) or 25 */
    uint8_t unmarked_point; /* G-SCORE step 1: points per value on an unmarked cell (default 1) */
    uint8_t small;          /* 1 = the 3×3 game with the first nine contracts */
} grid_rules;

void grid_rules_default(grid_rules *r);

/* ---- Errors ---- */
typedef enum {
    GRID_OK = 0,
    GRID_E_PHASE,     /* "phase": that move does not belong to this part of the hand */
    GRID_E_TURN,      /* "turn": it is someone else's turn */
    GRID_E_SEAT,      /* "seat": there is no such seat */
    GRID_E_SUIT,      /* "suit": not a suit, or that suit is already excluded (G-TRUMP) */
    GRID_E_CELL,      /* "cell": not a cell of the grid, e.g. "d5 is not a cell" */
    GRID_E_BID_COUNT, /* "bid_count": not exactly `bids` cells (G-BIDS) */
    GRID_E_BID_TWICE, /* "bid_twice": the same cell twice in one bid */
    GRID_E_NOT_HELD,  /* "not_held": the card is not in the hand (or not a card of this deck) */
    GRID_E_FOLLOW,    /* "follow": must follow the suit led (G-PLAY) */
    GRID_E_OVER,      /* "over": the hand is over */
    GRID_E_OPTION,    /* "option": unknown option or bad value (setup only) */
    GRID_E_GRID,      /* "grid": a grid is not every contract exactly once (setup only) */
    GRID_E_CONTRACT,  /* "contract": not a contract name (for callers of grid_contract_parse) */
    GRID_E_PROGRESS,  /* "progress": bad marks, scores or history (setup only) */
    GRID_E_MATCH,     /* "match": the match is over, no further hand (setup only) */
    GRID_E_COUNT
} grid_code;

typedef struct {
    grid_code code;
    char msg[GRID_MSG_MAX]; /* a sentence for the player, e.g. "you must follow ♥: you hold 9♥ 7♥" */
} grid_error;

/* The short name of an error code ("follow"), as used in replay output. */
const char *grid_code_name(grid_code code);

/* Sets one option from text: ("cap", "500"), ("bids", "3"), ("deck", "25"),
 * ("unmarked_point", "0"), ("small", "true"|"false"|"on"|"off"|"yes"|"no"|"1"|"0").
 * Setting `small` also sets bids and cap to that game's defaults (3 and 100 when on, 4 and
 * 1000 when off), so set it before an explicit cap or bids. Ranges: cap 1..GRID_CAP_MAX,
 * bids 1..16, unmarked_point 0..100. Returns 0, or -1 with code GRID_E_OPTION and a message. */
int grid_rules_set(grid_rules *r, const char *name, const char *value, grid_error *err);
/* The current value of an option as text into buf; NULL for an unknown name. */
const char *grid_rules_get(const grid_rules *r, const char *name, char *buf, size_t len);
/* Whether the options fit together (bids ≤ cells of the grid, deck 33 or 25, …).
 * Returns 0, or -1 with code GRID_E_OPTION and a message. */
int grid_rules_check(const grid_rules *r, grid_error *err);
/* Names of all options, NULL-terminated: cap, bids, deck, unmarked_point, small. */
extern const char *const grid_option_names[];

/* Sizes that follow from the options. */
int grid_side(const grid_rules *r);           /* 4, or 3 with small */
int grid_cells(const grid_rules *r);          /* 16, or 9 */
int grid_contract_count(const grid_rules *r); /* 16, or 9: contracts 0..n-1 are in play */
int grid_deck_size(const grid_rules *r);      /* 33 or 25 */
int grid_hand_size(const grid_rules *r);      /* 11 or 8: cards each, and tricks per hand */
/* The cards of the deck (with the joker). */
grid_set grid_deck_cards(const grid_rules *r);
/* The lines of the grid as cell masks into out (GRID_MAX_LINES); returns how many (14 or 8). */
int grid_lines(const grid_rules *r, uint16_t out[GRID_MAX_LINES]);
/* All cells of the grid as a mask (0xFFFF, or 0x1FF). */
uint16_t grid_all_cells(const grid_rules *r);

/* ---- Card and cell text ---- */
/* Canonical text: "JS", "TH", "JK" (the joker); "??" for a non-card. Static string. */
const char *grid_card_str(card_t c);
/* Text for people: "J♠", "10♥", "🃏". Writes into buf. */
const char *grid_card_pretty(card_t c, char buf[GRID_CARD_TEXT_MAX]);
/* Parses one card: everything card_parse() takes, plus the joker as "JK" (any case), "joker"
 * (any case) or "🃏". Does not check that the card is in a 25-card deck. Returns 0 and sets
 * *out, or -1 with a message in err (may be NULL). */
int grid_card_parse(const char *text, size_t len, card_t *out, char *err, size_t errlen);
/* A cell's name ("b3") into buf; "??" outside the grid. */
const char *grid_cell_name(const grid_rules *r, int cell, char buf[GRID_CELL_TEXT_MAX]);
/* Parses a cell name (any case, blanks trimmed) of this grid. Returns 0 and sets *cell, or
 * a negative number with a message in err (may be NULL): -2 when the text has the shape of a
 * cell name (a letter, then a number) but names no cell of this grid ("d5 is not a cell:
 * cells are a1 to d4"), -1 for any other text. */
int grid_cell_parse(const grid_rules *r, const char *text, size_t len, int *cell, char *err, size_t errlen);

/* ---- Cards in play ---- */
/* The suit a card counts as when following and winning: its own suit, the trump suit for the
 * joker (G-PLAY). */
int grid_suit_of(card_t c, int trump);
/* Whether a card is a trump: the joker, or a card of the trump suit. */
int grid_is_trump(card_t c, int trump);
/* Index of the winning card among cards[0..n-1] (cards[0] led): the joker, else the highest
 * trump, else the highest card of the suit led (G-PLAY). */
int grid_trick_winner(const card_t *cards, int n, int trump);
/* Whether `card` may be played from `hand` when `led` was led (CARD_NONE when leading);
 * the joker counts as a trump for following, and a led joker asks for trumps (G-PLAY).
 * Returns GRID_OK, or GRID_E_NOT_HELD / GRID_E_FOLLOW with a message in err (may be NULL). */
grid_code grid_check_card(grid_set hand, card_t led, int trump, card_t card, grid_error *err);

/* ---- Dealing (G-DEAL) ---- */
/* Deck order for a seed: a permutation of the deck's cards (grid_deck_size() of them) drawn
 * with deal_shuffle(), the same way on every machine. */
void grid_shuffle(const uint8_t seed[DEAL_SEED_BYTES], const grid_rules *r, card_t deck[GRID_DECK_MAX]);
/* How a deck order is dealt: the dealer's left (dealer+1) gets deck[0..k-1], the next seat
 * deck[k..2k-1], the dealer deck[2k..3k-1] (k = grid_hand_size()); with deck 25 deck[24] is
 * left out face down. This converts hands by seat (k cards each) and the left-out card
 * (ignored with deck 33) to that order. Returns 0, or -1 if the cards are not all different
 * cards of the deck. */
int grid_deck_from_hands(const grid_rules *r, const card_t hands[GRID_SEATS][GRID_HAND_MAX], card_t left_out,
                         int dealer, card_t deck[GRID_DECK_MAX]);

/* ---- Grids (G-GRID) ---- */
/* Whether grid[0..cells-1] (the contract on each cell, index order) holds every contract
 * in play exactly once. Returns 0, or -1 with code GRID_E_GRID and a message naming the
 * problem ("hearts appears twice (b1 and c4)", "clubs is missing", "contract 20 is not a
 * contract of this game"). */
int grid_grid_check(const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], grid_error *err);
/* Fills a grid deterministically from a seed (the `random` choice): a shuffle of the
 * contracts in play by deal_shuffle(). Cells past grid_cells() are set to 0xFF. */
void grid_random_grid(const uint8_t seed[DEAL_SEED_BYTES], const grid_rules *r, uint8_t grid[GRID_MAX_CELLS]);

/* ---- The match (G-END, G-WINNER) ---- */
typedef struct {
    grid_rules rules;
    uint8_t dealer;                         /* dealer of the coming hand (or of the hand being
                                               played; it moves on when a hand is scored) */
    uint8_t grid[GRID_SEATS][GRID_MAX_CELLS];  /* contract on each cell; 0xFF past the grid */
    uint8_t cell_of[GRID_SEATS][GRID_CONTRACTS];/* the cell of each contract; 0xFF if not in play */
    uint16_t marked[GRID_SEATS];            /* marked cells */
    int32_t scores[GRID_SEATS];             /* totals */
    uint16_t hands;                         /* hands scored in this match (with given history) */
    uint16_t history_n;                     /* entries in history (the latest hands) */
    int16_t history[GRID_HISTORY_MAX][GRID_SEATS]; /* points of each hand, oldest first */
    int8_t ahead[GRID_SEATS][GRID_SEATS];   /* G-WINNER tie-break: ahead[i][j] = 1 if i was ahead
                                               of j at the last moment their scores differed, -1 if
                                               behind, 0 if they never differed */
    uint8_t over;                           /* G-END: the match is over */
    uint8_t winners;                        /* bit s: seat s wins (shared win: several bits) */
    uint8_t place[GRID_SEATS];              /* final rank 1..3 (equal for a shared place); 0 while
                                               the match goes on */
} grid_match;

/* Starts a match: options (checked), the three grids (checked), the first dealer; no marks,
 * scores 0. Returns 0, or -1 with GRID_E_OPTION / GRID_E_GRID and a message ("seat 1: …"). */
int grid_match_init(grid_match *m, const grid_rules *r, const uint8_t grids[GRID_SEATS][GRID_MAX_CELLS],
                    int dealer, grid_error *err);
/* Restores a match in progress (for replay and storage): marks, total scores, and the points
 * of the previous hands (n of them, oldest first; may be 0 / NULL) from which the G-WINNER
 * tie-break is rebuilt: the scores after hand k are scores minus the points of the hands after
 * k. Checks: marks inside the grid and no grid completely marked, scores 0..cap-1 (a match
 * with either would already be over), each history entry between 0 and the most one hand can score, history no
 * longer than the scores allow (no total below 0 after any hand) and at most
 * GRID_HISTORY_MAX entries. Returns 0, or -1 with GRID_E_PROGRESS and a message. */
int grid_match_restore(grid_match *m, const uint16_t marked[GRID_SEATS], const int32_t scores[GRID_SEATS],
                       const int16_t (*history)[GRID_SEATS], int n, grid_error *err);
/* Whether a player's grid is completely marked. */
int grid_match_complete(const grid_match *m, int seat);
/* G-WINNER: fills place[s] 1..3 for the match as it stands (as if it ended now) and returns
 * the mask of seats in first place. */
int grid_match_rank(const grid_match *m, uint8_t place[GRID_SEATS]);

/* ---- Moves ---- */
typedef enum {
    GRID_DO_EXCLUDE, /* suit = the suit this player does not want as trump (G-TRUMP) */
    GRID_DO_BID,     /* cells[0..n-1] = the cells bid (G-BIDS) */
    GRID_DO_PLAY,    /* card (G-PLAY) */
    GRID_DO_COUNT
} grid_do;

typedef struct {
    uint8_t kind;  /* grid_do */
    card_t card;   /* PLAY */
    uint8_t suit;  /* EXCLUDE: SUIT_S..SUIT_C */
    uint8_t n;     /* BID: cells given */
    uint8_t choose;/* only in grid_legal()'s BID entry: how many of cells[] to choose */
    uint8_t cells[GRID_MAX_CELLS];
} grid_action;

/* The action's word as in replay JSON: "exclude", "bid", "play". */
const char *grid_do_name(grid_do kind);

/* ---- Phases ---- */
typedef enum {
    GRID_PHASE_EXCLUDE, /* "exclude": each names a suit he does not want as trump (G-TRUMP) */
    GRID_PHASE_BID,     /* "bid": each chooses his bids (G-BIDS) */
    GRID_PHASE_PLAY,    /* "play": the tricks (G-PLAY) */
    GRID_PHASE_DONE,    /* "done": the hand is scored (G-VALUES, G-SCORE, G-END) */
} grid_phase;

const char *grid_phase_name(grid_phase p);

/* ---- Events ---- */
enum { GRID_VIS_ALL = 0, GRID_VIS_SEAT = 1 };

typedef enum {
    GRID_EV_DEALT,    /* seat: cards[] dealt to `seat` (only that seat gets it) */
    GRID_EV_EXCLUDE,  /* all: seat excluded `suit` */
    GRID_EV_TRUMP,    /* all: `suit` is trump (after the third exclusion) */
    GRID_EV_BID,      /* all: seat bid `cells` */
    GRID_EV_PLAY,     /* all: seat played cards[0] */
    GRID_EV_TRICK,    /* all: trick number `amount` (0-based) won by seat; cards[] = the trick */
    GRID_EV_LEFT_OUT, /* all, at the end of a hand with deck 25: cards[0] was left out */
    GRID_EV_VALUES,   /* all, at the end: seat took `amount` tricks and made `values` */
    GRID_EV_SCORE,    /* all, at the end: seat scored part[] = unmarked, bids, lines, total;
                         `cells` newly marked; `score` = the new total */
    GRID_EV_HAND_END, /* all: the hand is scored; `seat` = the next dealer (G-END) or
                         GRID_NO_SEAT if the match is over */
    GRID_EV_GAME_OVER,/* all: the match is over (G-END); `flag` = mask of the winners (G-WINNER) */
} grid_event_kind;

enum { GRID_PART_UNMARKED = 0, GRID_PART_BIDS, GRID_PART_LINES, GRID_PART_TOTAL, GRID_PARTS };

typedef struct {
    uint8_t kind;   /* grid_event_kind */
    uint8_t vis;    /* GRID_VIS_* */
    uint8_t to;     /* the seat for GRID_VIS_SEAT */
    uint8_t seat;   /* who acted or whom it concerns */
    uint8_t suit;   /* EXCLUDE, TRUMP */
    uint8_t flag;   /* GAME_OVER: winners mask */
    uint8_t n;      /* cards in cards[] */
    uint16_t amount;/* TRICK: trick number; VALUES: tricks taken */
    uint16_t cells; /* BID: the cells bid; SCORE: cells newly marked */
    uint16_t values;/* VALUES: bit c = contract c made */
    int16_t part[GRID_PARTS]; /* SCORE */
    int32_t score;  /* SCORE: the player's total after the hand */
    card_t cards[GRID_HAND_MAX];
} grid_event;

typedef struct {
    int n;
    grid_event ev[GRID_MAX_EVENTS];
} grid_events;

/* Whether an event is delivered to a seat. */
int grid_event_visible(const grid_event *e, int seat);

/* ---- State ---- */
typedef struct {
    card_t card[GRID_SEATS]; /* in playing order from the leader */
    uint8_t seat[GRID_SEATS];/* who played each card */
    uint8_t n;               /* cards played so far */
    uint8_t leader;
    uint8_t winner;          /* seat, GRID_NO_SEAT while in progress */
} grid_trick;

/* One hand's outcome (G-VALUES, G-SCORE), valid in GRID_PHASE_DONE. */
typedef struct {
    uint8_t tricks[GRID_SEATS];            /* tricks taken */
    uint16_t values[GRID_SEATS];           /* bit c = contract c made (only contracts in play) */
    int16_t part[GRID_SEATS][GRID_PARTS];  /* unmarked, bids, lines, total */
    uint16_t newly[GRID_SEATS];            /* cells marked by this hand */
    uint8_t next_dealer;
} grid_result;

typedef struct {
    grid_match match;     /* rules, grids, marks, scores; updated when the hand is scored */
    uint8_t phase;        /* grid_phase */
    uint8_t dealer;       /* this hand's dealer */
    uint8_t to_act;       /* seat whose move it is, GRID_NO_SEAT when nobody's */
    card_t deck[GRID_DECK_MAX]; /* the deal order (grid_deck_from_hands) */
    grid_set dealt[GRID_SEATS]; /* every card dealt to a seat */
    grid_set hand[GRID_SEATS];  /* cards in hand */
    grid_set won[GRID_SEATS];   /* cards in the seat's tricks */
    card_t left_out;      /* deck 25: the card nobody holds; CARD_NONE with deck 33 */

    /* exclusions (G-TRUMP) */
    uint8_t excluded;     /* bit suit: suit named */
    uint8_t excluder[SUIT_COUNT]; /* who named each suit, GRID_NO_SEAT */
    uint8_t trump;        /* the trump suit once three are excluded, else 0xFF */

    /* bids (G-BIDS) */
    uint16_t bids[GRID_SEATS];
    uint8_t bid_done;     /* bit s: seat s has bid */

    /* play (G-PLAY) */
    uint8_t trick_no;     /* index of the current trick; = hand size once all are complete */
    uint8_t tricks_taken[GRID_SEATS];
    grid_trick tricks[GRID_HAND_MAX];

    grid_result result;
} grid_state;

/* ---- Hands ---- */
/* Starts a hand of the match m (copied into st; st and &st->match may be the same) with
 * m->dealer dealing the deck order (grid_shuffle or grid_deck_from_hands). The hand starts in
 * the exclude phase with the dealer's left to act. Events (one GRID_EV_DEALT per seat) go to
 * ev, which may be NULL. Returns GRID_OK, or GRID_E_MATCH if the match is over. After a hand
 * is done, call it again with &st->match for the next hand (the dealer has moved on). */
grid_code grid_start(grid_state *st, const grid_match *m, const card_t deck[GRID_DECK_MAX], grid_events *ev);

/* Applies a move by seat. On success returns GRID_OK and appends events to ev (which may
 * be NULL). On refusal returns the code, fills err (may be NULL) and leaves st unchanged. */
grid_code grid_apply(grid_state *st, int seat, const grid_action *a, grid_events *ev, grid_error *err);

/* Lists the moves seat may make now into out (up to GRID_MAX_LEGAL); returns the count (0
 * when it is not this seat's turn). Exclude: one entry per suit still free. Bid: ONE entry
 * with kind GRID_DO_BID, cells[0..n-1] = every cell that may be bid and choose = the number
 * of them to bid (any `choose` distinct cells of the list are a legal bid). Play: one entry
 * per playable card. */
int grid_legal(const grid_state *st, int seat, grid_action *out);

/* The values (G-VALUES) of each seat for given tricks taken, cards won, trump suit and the
 * cards in play (dealt; alltrump asks for every trump of this set, so a trump left out of a
 * 25-card deal is not needed). Only contracts 0..ncontracts-1 are considered. */
void grid_values(int ncontracts, const uint8_t tricks[GRID_SEATS], const grid_set won[GRID_SEATS], int trump,
                 grid_set in_play, uint16_t values[GRID_SEATS]);

/* G-SCORE for one player: values made, cells bid, the grid (cell → contract) and its marks
 * before the hand. Fills part[] and *newly; returns the total. */
int grid_score(const grid_rules *r, const uint8_t grid[GRID_MAX_CELLS], uint16_t marked, uint16_t bids,
               uint16_t values, int16_t part[GRID_PARTS], uint16_t *newly);

/* ---- What a seat may know ---- */
typedef struct {
    uint8_t seat, phase, dealer, to_act;
    grid_set hand;            /* own cards */
    uint8_t hand_size[GRID_SEATS];
    int8_t trump;             /* the trump suit once known to all, else -1 */
    uint8_t excluded;         /* bit suit: suit named */
    uint8_t excluder[SUIT_COUNT];
    uint16_t bids[GRID_SEATS];/* public once made */
    uint8_t bid_done;
    uint8_t trick_no;
    uint8_t tricks_taken[GRID_SEATS];
    grid_set won[GRID_SEATS]; /* cards in each seat's tricks (all played face up) */
    grid_set played;          /* every card played so far */
    grid_trick current;       /* the trick in progress (n = 0 if none) */
    grid_trick last;          /* the previous complete trick; n = 0 if none */
    card_t left_out;          /* deck 25: only once the hand is over, else CARD_NONE */
    grid_match match;         /* grids, marks, scores, history: all public */
    grid_result result;       /* valid in GRID_PHASE_DONE, else zero */
} grid_view;

void grid_view_of(const grid_state *st, int seat, grid_view *v);

#endif
