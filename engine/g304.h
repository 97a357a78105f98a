/* g304.h — the 304 rules engine: one hand of 304 as a state machine.
 *
 * The state is a plain struct (no pointers; copy it with memcpy). A hand starts from a
 * deck order (g304_start); every move goes through g304_apply(), which either refuses it
 * (an error code and a message, state unchanged) or applies it and reports game events,
 * each with a visibility: everyone, one seat, or one team. g304_legal() lists the moves a
 * seat may make now; g304_view() gives what a seat may know. Nothing here allocates,
 * prints or keeps globals. Rule ids (R-…) refer to shared/rules/304.md.
 *
 * Four or six players (R-SIX-…): the table option `players` (g304_rules.players, set with
 * g304_rules_set_players()) picks the game. With six, seats are 0..5 in playing order, teams by
 * parity (team 0 = seats 0 2 4), the pack has 36 cards with the sixes, hands and tricks are six,
 * and the second batch and bidding round are two cards and the "six-card round" (the phase and
 * the names keep "bid8"). G304_SEATS and G304_TRICKS keep their four-player meaning (4 seats, 8
 * tricks, also the largest hand); arrays in the state are sized G304_MAX_SEATS. g304_seats(),
 * g304_tricks(), g304_deck_size() and g304_trick_size() read the numbers of a game. */
#ifndef CARDROOM_G304_H
#define CARDROOM_G304_H

#include <stddef.h>
#include <stdint.h>

#include "cards.h"
#include "deal.h"

#define G304_SEATS 4       /* seats of the four-player game */
#define G304_MAX_SEATS 6   /* seats of the six-player game (R-SIX-SEATS), the most */
#define G304_TEAMS 2
#define G304_TRICKS 8      /* tricks of the four-player game; the most cards a hand holds */
#define G304_NO_SEAT 0xFF
#define G304_PCC 0xFFFF    /* bid amount standing for Partner Close Caps (R-B8-PCC), above every number */
#define G304_MAX_BID 300   /* the highest numeric bid: the pack holds 304 points */
#define G304_MAX_EVENTS 48 /* events one g304_apply() can report */
#define G304_MAX_LEGAL 40  /* moves g304_legal() can list (36 cut points with six players) */
#define G304_MSG_MAX 160

/* ---- Options (every *option* of the rules) ---- */
enum { G304_BIDDING_STANDARD = 0, G304_BIDDING_SINGLE = 1 };
enum { G304_OPENER_MAKER = 0, G304_OPENER_DEALER_RIGHT = 1 };
enum { G304_SPOILT_MANUAL = 0, G304_SPOILT_AUTO = 1 };
enum { G304_CAPS_GRACE = 0, G304_CAPS_STRICT = 1, G304_CAPS_OFF = 2 };
enum { G304_SCORING_TRANSFER = 0, G304_SCORING_BANK = 1 };

typedef struct {
    uint8_t cut;            /* R-DEAL: 1 = the dealer's left cuts before the deal (default 0) */
    uint8_t step_above_200; /* R-B4-AMOUNT: 10 (default) or 5 */
    uint8_t bidding;        /* G304_BIDDING_* (R-B4-ORDER, `bidding = single`) */
    uint8_t bid8_opener;    /* G304_OPENER_* (R-B8) */
    uint8_t spoilt;         /* G304_SPOILT_* (R-SPOILT) */
    uint8_t caps;           /* G304_CAPS_* (R-CAPS-GRACE) */
    uint8_t scoring;        /* G304_SCORING_* (R-TRANSFER) */
    uint8_t start_tokens;   /* R-TOKENS: tokens per team at the start of a match (default 11) */
    uint8_t players;        /* 4 (default) or 6 (R-SIX-…); anything else reads as 4 */
} g304_rules;

/* ---- Errors ---- */
typedef enum {
    G304_OK = 0,
    G304_E_PHASE,       /* "phase": that move does not belong to this part of the hand */
    G304_E_TURN,        /* "turn": it is someone else's turn */
    G304_E_SEAT,        /* "seat": this seat may not make that move at all */
    G304_E_AMOUNT,      /* "amount": not a valid bid amount (below the minimum, above 300, off the step) */
    G304_E_BID_LOW,     /* "bid_low": not higher than the highest bid */
    G304_E_BID_200,     /* "bid_200": must bid 200 or more (R-B4-200) */
    G304_E_PARTNER_BID, /* "partner_bid": may not bid over partner (R-B4-200 single, R-B8-AMOUNT) */
    G304_E_ONCE,        /* "once": has already spoken (single bidding, eight-card round) */
    G304_E_ASK,         /* "ask": may not ask partner now */
    G304_E_REDEAL,      /* "redeal": a redeal is not allowed (R-REDEAL) */
    G304_E_NOT_HELD,    /* "not_held": the card is not in the hand */
    G304_E_INDICATOR,   /* "indicator": the indicator choice or play breaks R-TRUMP-PICK / R-IND-PLAY */
    G304_E_FOLLOW,      /* "follow": must follow the suit led (R-FOLLOW) */
    G304_E_MAKER_TRUMP, /* "maker_trump": the maker may not play that trump (R-MAKER-VOID) */
    G304_E_LEAD_TRUMP,  /* "lead_trump": no trump lead to trick 1 closed (R-LEAD1-TRUMP) */
    G304_E_EXHAUST,     /* "exhaust": must keep leading trumps (R-EXHAUST) */
    G304_E_OPEN,        /* "open": may not declare an open game now (R-OPEN) */
    G304_E_CAPS,        /* "caps": the Caps call is not allowed or its order is wrong */
    G304_E_SPOILT,      /* "spoilt": spoilt trumps may not be declared now */
    G304_E_CUT,         /* "cut": bad cut point */
    G304_E_OVER,        /* "over": the hand is over */
} g304_code;

typedef struct {
    g304_code code;
    char msg[G304_MSG_MAX]; /* a sentence for the player, e.g. "you must follow ♥: you hold 9♥ 7♥" */
} g304_error;

/* The short name of an error code ("follow"), as used in replay output. */
const char *g304_code_name(g304_code code);

/* ---- Moves ---- */
typedef enum {
    G304_DO_CUT,     /* amount = cut point 0..31 (0..35 with six players; 0 = no cut) */
    G304_DO_BID,     /* amount = points, or G304_PCC */
    G304_DO_PASS,
    G304_DO_PARTNER, /* ask partner to bid (R-B4-PARTNER; not with six players, R-SIX-PARTNER) */
    G304_DO_REDEAL,  /* R-REDEAL */
    G304_DO_TRUMP,   /* card = the indicator */
    G304_DO_OPEN,    /* R-OPEN */
    G304_DO_PLAY,    /* card; face up or face down is decided by the rules (R-FACEDOWN) */
    G304_DO_CAPS,    /* order[0..n-1] = all the caller's remaining cards, in playing order */
    G304_DO_SPOILT,  /* R-SPOILT */
    G304_DO_COUNT
} g304_do;

typedef struct {
    uint8_t kind;   /* g304_do */
    card_t card;    /* TRUMP, PLAY */
    uint16_t amount;/* BID, CUT */
    uint8_t n;      /* CAPS: cards in order */
    card_t order[G304_TRICKS];
} g304_action;

/* The action's word as in replay JSON: "bid", "pass", "partner", … */
const char *g304_do_name(g304_do kind);

/* ---- Phases ---- */
typedef enum {
    G304_PHASE_CUT,   /* "cut": the dealer's left chooses a cut point */
    G304_PHASE_BID4,  /* "bid4": four-card bidding */
    G304_PHASE_TRUMP, /* "trump": the trump maker places the indicator */
    G304_PHASE_BID8,  /* "bid8": the eight-card round (the six-card round with six players, R-SIX-B6) */
    G304_PHASE_PLAY,  /* "play": from the first lead to the last card */
    G304_PHASE_DONE,  /* "done": the hand is over (scored or thrown in) */
} g304_phase;

const char *g304_phase_name(g304_phase p);

/* ---- Events ---- */
enum { G304_VIS_ALL = 0, G304_VIS_SEAT = 1, G304_VIS_TEAM = 2 };

typedef enum {
    G304_EV_CUT,           /* all: seat cut at amount */
    G304_EV_DEALT,         /* seat: cards[] newly dealt to `seat` (a batch: four, or two in the six-player
                              second batch); amount = batch 0 or 1 */
    G304_EV_BID,           /* all: seat bid amount (G304_PCC for Partner Close Caps) */
    G304_EV_PASS,          /* all: seat passed */
    G304_EV_ASK,           /* all: seat asked partner (`other`) to bid */
    G304_EV_REDEAL,        /* all: seat demanded a redeal; the same dealer deals again */
    G304_EV_ALL_PASS,      /* all: everybody passed; no play, the deal passes on */
    G304_EV_MAKER,         /* all: seat won the bidding at amount and will place the indicator */
    G304_EV_INDICATOR,     /* seat (the maker): cards[0] is the indicator now face down */
    G304_EV_PLACED,        /* all: the maker placed the indicator face down */
    G304_EV_RETURNED,      /* all: the old indicator went back to `seat` (cards[0] only in the
                              copy for that seat) */
    G304_EV_OPEN,          /* all: seat declared an open game; cards[0] = indicator, flag = trump suit */
    G304_EV_PLAY,          /* all: seat played cards[0] face up */
    G304_EV_FACEDOWN,      /* all: seat played face down; flag 1 = it is the indicator;
                              cards[0] = CARD_HIDDEN (the player's own copy names the card) */
    G304_EV_INSPECT,       /* seat (the maker): the face-down cards of the trick, cards[] */
    G304_EV_NO_TRUMP,      /* all: no face-down card of the trick was a trump (R-REVEAL) */
    G304_EV_REVEAL,        /* all: a trump was played face down: cards[] turned up, `other` = the
                              indicator, flag = trump suit; the trump is open */
    G304_EV_SHOWN,         /* all: the indicator cards[0] is shown and goes back to the maker's
                              hand; the trump (flag) is open. amount 0: R-250 after trick 1;
                              amount 1: shown with the maker's Caps call */
    G304_EV_TRICK,         /* all: trick number amount won by seat; flag 1 = points known,
                              other = points */
    G304_EV_CAPS,          /* all: seat called Caps with cards[] in that order */
    G304_EV_SPOILT,        /* all: seat declared spoilt trumps; flag 1 = correct */
    G304_EV_CAPS_JUDGED,   /* all, after the hand: Caps was certain for `seat` (G304_NO_SEAT if
                              for nobody) after amount cards (G304_NEVER: never) with the order
                              cards[]; `other` = who called (G304_NO_SEAT: nobody); flag =
                              G304_WRONG_* */
    G304_EV_HAND,          /* all: seat's dealt cards[] shown at the end of the hand */
    G304_EV_RESULT,        /* all: the hand is over; details in the state's result */
} g304_event_kind;

typedef struct {
    uint8_t kind;  /* g304_event_kind */
    uint8_t vis;   /* G304_VIS_* */
    uint8_t to;    /* seat or team for VIS_SEAT / VIS_TEAM */
    uint8_t seat;  /* who acted or whom it concerns */
    uint8_t other; /* a second seat or card, by kind */
    uint8_t flag;
    uint16_t amount;
    uint8_t n;
    card_t cards[G304_TRICKS];
} g304_event;

typedef struct {
    int n;
    g304_event ev[G304_MAX_EVENTS];
} g304_events;

/* Whether an event is delivered to a seat. */
int g304_event_visible(const g304_event *e, int seat);

/* ---- State ---- */
typedef struct {
    card_t card[G304_MAX_SEATS]; /* in playing order from the leader */
    uint8_t seat[G304_MAX_SEATS];/* who played each card */
    uint8_t n;               /* cards played so far */
    uint8_t leader;
    uint8_t facedown;        /* bit i: card i was played face down */
    uint8_t hidden;          /* bit i: card i is still face down for everybody but its player
                                and the maker (not turned up) */
    uint8_t announced;       /* 0 no face-down cards, 1 "no trump", 2 "a trump" (R-REVEAL) */
    uint8_t winner;          /* seat, G304_NO_SEAT while in progress */
    uint16_t points;
} g304_trick;

/* Why a Caps call (or its absence) was wrong (R-CAPS-WRONG). */
enum { G304_WRONG_NONE = 0, G304_WRONG_EARLY, G304_WRONG_LATE, G304_WRONG_MISSING };

/* The Caps judge's findings, written between moves by judge_update() (judge.h); the engine
 * reads them when it scores the hand. A hand nobody judges scores without Wrong Caps. */
enum { G304_CALL_UNJUDGED = 0, G304_CALL_CERTAIN, G304_CALL_NOT_CERTAIN, G304_CALL_UNKNOWN };
#define G304_NEVER 0xFF

/* How a hand ended. */
enum {
    G304_END_NONE = 0,  /* still going */
    G304_END_PLAYED,    /* all tricks played (or decided) and scored */
    G304_END_REDEAL,    /* R-REDEAL: thrown in, the same dealer deals again */
    G304_END_ALL_PASS,  /* R-B4-ORDER: no bid, the next dealer deals */
    G304_END_SPOILT,    /* R-SPOILT: correctly declared or automatic; the same dealer deals again */
    G304_END_VIOLATION, /* R-VIOLATION: a wrong spoilt-trumps declaration */
};

typedef struct {
    uint8_t end;          /* G304_END_* */
    int8_t made;          /* 1 made, 0 failed, -1 not played */
    uint8_t caps_seat;    /* who called Caps, G304_NO_SEAT if nobody */
    uint8_t caps_won;     /* the caller's team won every trick */
    uint8_t caps_bonus;   /* tokens added for Caps called before the second-to-last trick (trick 7 of 8,
                             5 of 6: R-CAPS-SCORE, R-SIX-PLAY) */
    uint8_t caps_broken;  /* a card of the stated order could not be played legally */
    uint8_t caps_on_time; /* the call was judged certain and in time (R-CAPS-GRACE) */
    uint8_t wrong_seat;   /* Wrong Caps (R-CAPS-WRONG): the caller or obliged seat, G304_NO_SEAT if none */
    uint8_t wrong_reason; /* G304_WRONG_* */
    uint8_t spoilt_seat;  /* who declared spoilt trumps, G304_NO_SEAT if nobody */
    uint8_t spoilt_ok;    /* the declaration was correct (or it was automatic) */
    uint8_t payer;        /* team that pays, G304_NO_SEAT if nobody */
    int16_t delta[2];     /* change of each team's tokens */
    uint8_t next_dealer;
    uint8_t match_over;
    uint8_t match_winner; /* team, or G304_NO_SEAT */
} g304_result;

typedef struct {
    g304_rules rules;
    uint8_t phase;        /* g304_phase */
    uint8_t dealer;
    uint8_t to_act;       /* seat whose move it is, G304_NO_SEAT when nobody's */
    int16_t tokens[2];    /* per team, before the hand's result is applied; after, once done */
    card_t deck[CARD_IDS];        /* order the cards are dealt in (after the cut); g304_deck_size() used */
    cardset_t dealt[G304_MAX_SEATS];  /* every card dealt to a seat */
    cardset_t first4[G304_MAX_SEATS]; /* its first batch */
    cardset_t hand[G304_MAX_SEATS];   /* cards in hand; the maker's lacks a face-down indicator */

    /* bidding */
    uint16_t bid;         /* highest bid so far (0 none; G304_PCC) */
    uint8_t bidder;       /* who holds it */
    uint8_t bid_round;    /* 4 or 8: the round the highest bid was made in (8 also for the six-card round) */
    uint8_t passes;       /* pass turns in a row (four-card); turns taken (eight-card / six-card) */
    uint8_t turn;         /* whose own turn it is in the bidding (the asker while asked) */
    uint8_t asked;        /* the partner asked to bid, G304_NO_SEAT if none */
    uint8_t spoke;        /* bit s: seat s has had a turn (bid, pass, asked or was asked) */
    uint8_t high200;      /* a bid of 200 or more was made in the four-card round */
    uint16_t bid4;        /* the final four-card bid */
    uint8_t maker4;       /* the four-card trump maker */

    /* trump */
    uint8_t maker;        /* trump maker, G304_NO_SEAT before */
    card_t indicator;     /* CARD_NONE before chosen */
    uint8_t trump;        /* suit of the indicator (valid once chosen) */
    uint8_t ind_down;     /* the indicator lies face down on the table */
    uint8_t trump_open;   /* the trump is known to everybody */
    uint8_t declared_open;/* R-OPEN was declared */
    uint8_t pcc;          /* Partner Close Caps is being played */

    /* play */
    uint8_t trick_no;     /* index of the current trick, 0..7; 8 once all are complete (0..5, 6 with six) */
    uint8_t exhaust;      /* R-EXHAUST: the maker must keep leading trumps from hand */
    uint16_t points[2];   /* card points won per team */
    uint8_t team_tricks[2];
    g304_trick tricks[G304_TRICKS];

    /* Caps (R-CAPS-CALL) */
    uint8_t caps_seat;    /* G304_NO_SEAT if nobody called */
    uint8_t caps_n, caps_next;
    card_t caps_order[G304_TRICKS];
    uint8_t caps_trick;   /* trick index and cards already in it when called */
    uint8_t caps_cards;
    uint8_t caps_broken;

    uint8_t spoilt_seat;  /* who declared spoilt trumps */

    /* Caps judge (R-CAPS-CALL, R-CAPS-WRONG) */
    uint8_t certain_at[G304_MAX_SEATS];  /* cards played in the hand when Caps first became certain
                                            for the seat, G304_NEVER if it has not */
    uint8_t certain_n[G304_MAX_SEATS];
    card_t certain_order[G304_MAX_SEATS][G304_TRICKS]; /* the order that proved it */
    uint8_t call_verdict;            /* G304_CALL_*: the stated order of the Caps call, judged
                                        with the caller's knowledge when he called */
    g304_result result;
} g304_state;

/* ---- Setup ---- */
void g304_rules_default(g304_rules *r);
/* Sets one option from text, e.g. ("caps", "strict"), ("step_above_200", "5"). Names and
 * values are those of shared/rules/304.md. Returns 0, or -1 with a message in err. */
int g304_rules_set(g304_rules *r, const char *name, const char *value, g304_error *err);
/* The current value of an option as text into buf; NULL for an unknown name. */
const char *g304_rules_get(const g304_rules *r, const char *name, char *buf, size_t len);
/* Names of all options, NULL-terminated. `players` is not among them, nor does g304_rules_set()
 * take it: the number of players decides how many seats a table has, so it is set apart. */
extern const char *const g304_option_names[];

/* Sets the number of players: 4 or 6 (R-SIX-…). Returns 0, or -1 with a message in err. */
int g304_rules_set_players(g304_rules *r, int players, g304_error *err);

/* The numbers of a game: seats (4 or 6; teams are always G304_TEAMS, by parity), tricks in a
 * hand and cards per hand (8 or 6), cards in the pack (32 or 36), cards in a trick (4 or 6;
 * in Partner Close Caps 3 or 4: the maker and the opponents, R-PCC, R-SIX-PCC). */
int g304_seats(const g304_rules *r);
int g304_tricks(const g304_rules *r);
int g304_deck_size(const g304_rules *r);
int g304_trick_size(const g304_state *st);

/* The deck order a seed deals (R-SHUFFLE): deal_shuffle() over the g304_deck_size() ids, so a
 * four-player deck is deal_shuffle(seed, deck, 32) exactly, and a six-player deck the same
 * ChaCha20 Fisher–Yates over the 36 ids 0..35 (the sixes are 32..35). */
void g304_shuffle(const uint8_t seed[DEAL_SEED_BYTES], const g304_rules *r, card_t deck[CARD_IDS]);

/* Converts hands by seat (each: first 4 = first batch, then the second batch) to the
 * order a dealer deals them in (four players). Returns 0, or -1 if the 32 cards are not all
 * different. */
int g304_deck_from_hands(const card_t hands[G304_SEATS][G304_TRICKS], int dealer,
                         card_t deck[CARD_COUNT]);

/* The same for the game of the rules: g304_seats() hands of g304_tricks() cards (first 4 = the
 * first batch, then the second: four cards, or two with six players, R-SIX-DEAL), every card
 * of the g304_deck_size() pack once. Returns 0, or -1. */
int g304_deck_from_hands_of(const g304_rules *r, const card_t hands[G304_MAX_SEATS][G304_TRICKS], int dealer,
                            card_t deck[CARD_IDS]);

/* Starts a hand: dealer, tokens of each team, deck order (g304_deck_size(rules) cards). With
 * the `cut` option the hand starts in the cut phase; otherwise the first four cards are dealt
 * and bidding starts. Events (the deal) go to ev, which may be NULL. */
void g304_start(g304_state *st, const g304_rules *rules, int dealer, const int16_t tokens[2],
                const card_t *deck, g304_events *ev);

/* ---- Play ---- */
/* Applies a move by seat. On success returns G304_OK and appends events to ev (which may
 * be NULL). On refusal returns the code, fills err (may be NULL) and leaves st unchanged. */
g304_code g304_apply(g304_state *st, int seat, const g304_action *a, g304_events *ev,
                     g304_error *err);

/* Lists the moves seat may make now into out (up to G304_MAX_LEGAL); returns the count.
 * Covers the moves of the seat to act (bids, pass, partner, redeal, trump, open, play, cut);
 * the declarations anyone may make at any time during play (caps with an order, spoilt) are
 * not listed: g304_may_declare() tells whether they are open. */
int g304_legal(const g304_state *st, int seat, g304_action *out);

/* Whether seat may declare spoilt trumps / call Caps now (a Caps call still needs an order
 * of exactly its remaining cards). */
int g304_may_spoilt(const g304_state *st, int seat);
int g304_may_caps(const g304_state *st, int seat);

/* Cards seat holds now, the face-down indicator included for the maker. */
cardset_t g304_cards_of(const g304_state *st, int seat);

/* Cards played so far in the hand (the Caps judge's clock). */
int g304_cards_played(const g304_state *st);

/* Whether a seat must call Caps now if it is certain: the team has won every trick, no Caps
 * has been called, Caps calls are on (not `caps = off`) and this is not Partner Close Caps. */
int g304_caps_open_for(const g304_state *st, int seat);

/* The next seat in playing order (R-SEATS, R-SIX-SEATS; skips the maker's partner, or both his
 * teammates, in Partner Close Caps). */
int g304_next_seat(const g304_state *st, int seat);

/* Everything that decides whether a player may play a card now (R-FOLLOW, R-FACEDOWN,
 * R-IND-PLAY, R-MAKER-VOID, R-LEAD1-TRUMP, R-EXHAUST). */
typedef struct {
    cardset_t hand;     /* cards in hand, without a face-down indicator */
    card_t indicator;   /* the face-down indicator if this player is the maker and it is down,
                           else CARD_NONE */
    card_t led;         /* the first card of the trick, CARD_NONE when leading */
    uint8_t is_maker, trump, trump_open, trick_no, exhaust;
} g304_card_rules;

/* Whether card may be played in that situation; sets *facedown. */
g304_code g304_check_card(const g304_card_rules *p, card_t card, int *facedown, g304_error *err);

/* Index of the winning card among cards[0..n-1] (cards[0] was led) when `trump` is the trump
 * suit: the highest trump, else the highest card of the suit led (R-FOLLOW). While the trump
 * is closed this gives the same answer, because a trump can then only lie face up in a trick
 * if trump was led, and a face-down trump turns the trick up (R-REVEAL). */
int g304_trick_winner(const card_t *cards, int n, int trump);

/* ---- What a seat may know ---- */
typedef struct {
    uint8_t seat, phase, dealer, to_act;
    uint8_t maker;            /* G304_NO_SEAT before the bidding ends */
    uint16_t bid;             /* highest bid so far */
    uint8_t bidder;
    uint8_t pcc;
    cardset_t hand;           /* own cards (the maker's includes a face-down indicator) */
    card_t indicator;         /* the indicator if this seat may know it, else CARD_NONE */
    int8_t trump;             /* the trump suit if this seat knows it, else -1 */
    uint8_t trump_open;
    uint8_t ind_down;
    uint8_t declared_open;
    uint8_t trick_no;
    uint8_t hand_size[G304_MAX_SEATS];
    uint8_t team_tricks[2];
    int16_t tokens[2];
    g304_trick current;       /* the trick in progress; unseen face-down cards are CARD_HIDDEN */
    g304_trick last;          /* the previous trick (R-LAST), same masking; n = 0 if none */
    uint8_t caps_seat;
    cardset_t caps_shown;     /* the caller's cards shown with a Caps call */
} g304_view;

void g304_view_of(const g304_state *st, int seat, g304_view *v);

/* The card a seat sees at position i of trick t: the card, or CARD_HIDDEN. */
card_t g304_trick_card_for(const g304_state *st, const g304_trick *t, int i, int seat);

#endif
