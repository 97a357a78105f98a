/* arena.h — `cardroom arena`: duplicate matches between 304 players, to measure their strength.
 *
 * Every deal is played twice with the same cards and the same dealer: team A (player A and its partner)
 * sits in seats 0 and 2 the first time and in seats 1 and 3 the second, team B in the others, so the
 * luck of the cards cancels out. The six-player game (rules.players = 6, R-SIX-…) is played the same
 * way with teams of three: A and two partners in seats 0, 2, 4, then 1, 3, 5. A deal's margin is the mean over its two plays of A's tokens won
 * minus B's. A hand thrown in (R-REDEAL, spoilt trumps) is dealt again from the next deck of the
 * deal's own sequence, the same in both plays; an all-pass hand scores nothing. Every hand starts with
 * the rules' start tokens. Caps is called for every seat at the first moment the game's judge finds it
 * certain for that seat, as tables do for computer players.
 *
 * A player is `easy`, `normal`, `expert` (bot/aiplay.h), `random` (a uniformly random legal move) or
 * `exec:COMMAND` (bot/aiexec.h). A built-in player whose move the engine refuses, or an outside
 * player that answers wrongly, late or not at all, loses that decision to a random legal move; the
 * totals count each kind. Outside players play the four-player game only (the exec protocol's
 * requests name four seats). */
#ifndef CARDROOM_ARENA_H
#define CARDROOM_ARENA_H

#include <stdint.h>
#include <stdio.h>

#include "g304.h"

#define ARENA_COMMAND_MAX 1024

enum { ARENA_BUILTIN = 0, ARENA_RANDOM, ARENA_EXEC };

typedef struct {
    int kind;
    int level; /* ARENA_BUILTIN: an aiplay_level */
    char command[ARENA_COMMAND_MAX];
} arena_spec;

/* Reads a PLAYER argument. Returns 0, or -1 with a sentence in err. */
int arena_spec_parse(const char *text, arena_spec *spec, char *err, size_t errlen);

typedef struct {
    arena_spec a, b, a_partner; /* a_partner: A's partner, by default A itself */
    uint64_t seed;
    g304_rules rules;
    long limit_ms; /* time limit per decision of an outside player */
    /* Called after each decision of a built-in player, with its thread CPU time in seconds and the
     * search nodes it spent (may be NULL): benchmarks time the players this way. */
    void (*observe)(void *ctx, int level, int phase, double seconds, long nodes);
    void *observe_ctx;
} arena_options;

/* Faults of one player: decisions lost to a random legal move, by cause. */
typedef struct {
    long wrong, slow, gone, refused;
} arena_faults;

/* One play of a deal. */
typedef struct {
    card_t deck[CARD_IDS];   /* the first deck dealt (g304_deck_size() cards) */
    int seats;               /* 4, or 6 (R-SIX-…) */
    int dealer;
    int a_team;              /* the team A and its partner form (0: seats 0 and 2, and 4 with six) */
    int shuffles;            /* decks dealt: 1 + hands thrown in */
    g304_result result;      /* of the last hand */
    int maker, bid;          /* G304_NO_SEAT and 0 when nobody bid */
    int points[2];           /* card points of teams 0 and 1 */
    int tokens_a, tokens_b;  /* A's and B's token change */
} arena_play;

typedef struct {
    arena_play play[2];
    double margin; /* mean over the two plays of A's token change minus B's */
} arena_deal;

typedef struct arena arena;

/* An arena for these players. NULL with a sentence in err when a player cannot be set up. */
arena *arena_new(const arena_options *o, char *err, size_t errlen);
void arena_free(arena *ar);

/* Plays deal number `index` both ways. Returns 0, or -1 when a hand could not be finished. */
int arena_play_deal(arena *ar, long index, arena_deal *out);

/* Faults so far of player A (0), B (1) and A's partner (2). */
const arena_faults *arena_faults_of(const arena *ar, int who);

/* The command line: `cardroom arena --a PLAYER --b PLAYER --deals N ...` (README.md). Returns the
 * exit status. */
int arena_main(int argc, char **argv, FILE *out, FILE *err);

#endif
