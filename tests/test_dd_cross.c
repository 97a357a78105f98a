/* test_dd_cross.c — the double-dummy solver (engine/dd.h) against a brute-force minimax made of
 * the engine alone, on thousands of random endgames.
 *
 * Positions come from hands played with g304_start()/g304_apply() from fixed seeds: a bidding plan
 * (four-card bids of 160..300, eight-card bids of 250+, Partner Close Caps), a random indicator,
 * open or closed games, play that is partly random and partly biased (a team that keeps the trump
 * closed throws face down, a maker who leads trumps so that R-EXHAUST binds), stopped with one to
 * four tricks left, often in the middle of a trick; some positions follow a Caps call with a random
 * order of the caller's cards (the game then plays that order, R-CAPS-CALL).
 *
 * The oracle searches every line with g304_legal() and g304_apply() on copies of the whole engine
 * state: the points team 0 ends with when team 0 maximises and team 1 minimises them, and whether
 * a team can win every remaining trick. Along every line it also follows the solver's own position
 * (dd_play) and compares it with dd_pos_of() of the engine's state, and dd_legal() with the
 * engine's legal cards, at every node. The solver must agree everywhere: dd_value() at the root
 * and after every legal move, dd_reach() at targets around the value, dd_sweep() for both teams.
 *
 * The same for six-player 304 (R-SIX-…): teams of three, tricks of six cards (four in Partner Close
 * Caps), the sixes in the pack; and one six-player hand played from its first lead to its end by the
 * solver's best moves.
 *
 * Environment: CARDROOM_DD_CROSS_POSITIONS (default 5000; a sixth of it with six players),
 * CARDROOM_DD_CROSS_SEED (default 304). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ai304.h"
#include "dd.h"
#include "deal.h"
#include "g304.h"
#include "test_hands.h"
#include "test_rng.h"

#define MAX_PLIES 400

static int team_of_seat(int seat) { return seat & 1; }

/* The legal cards of the seat to act, as the engine lists them. */
static int engine_cards(const g304_state *st, card_t out[G304_MAX_LEGAL])
{
    g304_action legal[G304_MAX_LEGAL];
    int n = g304_legal(st, st->to_act, legal), k = 0;
    for (int i = 0; i < n; i++)
        if (legal[i].kind == G304_DO_PLAY) out[k++] = legal[i].card;
    return k;
}

/* ---- positions ---- */

typedef struct {
    uint64_t seed;
    int called; /* a Caps call was made */
    g304_state st;
} position;

/* A card the biased player picks: the strong team its strongest, the others their weakest; a
 * closed-keeping team avoids trumps; a maker who may lead trumps does. */
static card_t pick_card(xrng *r, const g304_state *st, const card_t *cand, int k, int strong, int keep_closed,
                        int lead_trumps)
{
    if (rng_chance(r, 30)) return cand[rng_below(r, (uint32_t)k)];
    card_t pick = cand[0];
    int best = -1000;
    for (int i = 0; i < k; i++) {
        card_t c = cand[i];
        int v = card_power(c) + (CARD_SUIT(c) == st->trump ? 20 : 0);
        if (team_of_seat(st->to_act) != strong) v = -v;
        if (keep_closed && !st->trump_open && CARD_SUIT(c) == st->trump) v -= 100;
        if (lead_trumps && st->to_act == st->maker && st->tricks[st->trick_no].n == 0 && CARD_SUIT(c) == st->trump)
            v += 200;
        if (v > best) best = v, pick = c;
    }
    return pick;
}

/* A position of a hand for `seats` players (4, or 6: R-SIX-…), or 0 if the plan did not reach one. */
static int gen_position(uint64_t seed, int seats, position *p)
{
    xrng r = {seed};
    memset(p, 0, sizeof *p);
    p->seed = seed;
    g304_rules rules;
    g304_rules_default(&rules);
    cr_assert_eq(g304_rules_set_players(&rules, seats, NULL), 0);
    rules.bid8_opener = rng_chance(&r, 50) ? G304_OPENER_DEALER_RIGHT : G304_OPENER_MAKER;
    rules.caps = rng_chance(&r, 20) ? G304_CAPS_OFF : G304_CAPS_GRACE;
    int dealer = (int)rng_below(&r, (uint32_t)seats), ntricks = g304_tricks(&rules), pack = g304_deck_size(&rules);
    uint8_t dseed[DEAL_SEED_BYTES];
    for (int i = 0; i < DEAL_SEED_BYTES; i++) dseed[i] = (uint8_t)rng_u64(&r);
    card_t deck[CARD_IDS];
    g304_shuffle(dseed, &rules, deck);
    int strong = (int)rng_below(&r, 2), maker4 = (int)rng_below(&r, (uint32_t)seats), team_size = seats / 2;
    if (rng_chance(&r, 40)) { /* the strong team gets the stronger cards, so that it often wins every trick */
        card_t hands[G304_MAX_SEATS][G304_TRICKS];
        int key[CARD_IDS], got[G304_MAX_SEATS] = {0};
        for (int c = 0; c < pack; c++) key[c] = card_power((card_t)c) * 4 + (int)rng_below(&r, 12);
        for (int i = 1; i < pack; i++) /* strongest first */
            for (int j = i; j > 0 && key[deck[j]] > key[deck[j - 1]]; j--) {
                card_t t = deck[j];
                deck[j] = deck[j - 1];
                deck[j - 1] = t;
            }
        for (int i = 0; i < pack; i++) {
            int team = i < pack / 2 ? strong : !strong;
            int seat = team + 2 * (int)rng_below(&r, (uint32_t)team_size);
            while (got[seat] == ntricks) seat = (seat + 2) % seats; /* the next seat of the team */
            hands[seat][got[seat]++] = deck[i];
        }
        for (int s = 0; s < seats; s++)
            for (int i = ntricks - 1; i > 0; i--) {
                int j = (int)rng_below(&r, (uint32_t)i + 1);
                card_t t = hands[s][i];
                hands[s][i] = hands[s][j];
                hands[s][j] = t;
            }
        if (g304_deck_from_hands_of(&rules, (const card_t(*)[G304_TRICKS])hands, dealer, deck) != 0) return 0;
        maker4 = strong + 2 * (int)rng_below(&r, (uint32_t)team_size);
    }
    if (seats == 6 && rng_chance(&r, 20)) { /* the maker holds the six best cards of a suit, so R-EXHAUST binds */
        static const int top[6] = {RANK_J, RANK_9, RANK_A, RANK_T, RANK_K, RANK_Q};
        card_t hands[G304_MAX_SEATS][G304_TRICKS];
        int suit = (int)rng_below(&r, SUIT_COUNT), got[G304_MAX_SEATS] = {0}, seat = 0, turn = (int)rng_below(&r, 6);
        maker4 = (int)rng_below(&r, (uint32_t)seats);
        for (int i = 0; i < 6; i++) hands[maker4][i] = CARD_MAKE(suit, top[(i + turn) % 6]);
        got[maker4] = ntricks;
        for (int i = 0; i < pack; i++) {
            if (CARD_SUIT(deck[i]) == suit && card_power(deck[i]) >= card_power(CARD_MAKE(suit, RANK_Q))) continue;
            while (got[seat] == ntricks) seat++;
            hands[seat][got[seat]++] = deck[i];
        }
        if (g304_deck_from_hands_of(&rules, (const card_t(*)[G304_TRICKS])hands, dealer, deck) != 0) return 0;
    }
    const int16_t tokens[2] = {11, 11};
    g304_state *st = &p->st;
    g304_start(st, &rules, dealer, tokens, deck, NULL);

    int plan = (int)rng_below(&r, 100);
    int a4 = plan < 25 ? 250 + 10 * (int)rng_below(&r, 6) : 160 + 10 * (int)rng_below(&r, 9);
    int bid8_seat = plan >= 60 ? (int)rng_below(&r, (uint32_t)seats) : -1;
    int a8 = plan >= 85 ? G304_PCC : 250 + 10 * (int)rng_below(&r, 6);
    int want_open = rng_chance(&r, 35), keep_closed = rng_chance(&r, 50), lead_trumps = rng_chance(&r, 40);
    if (seats == 6 && rng_chance(&r, 50)) want_open = 0, keep_closed = 1; /* six seats open the trump sooner */
    int left = 1 + (int)rng_below(&r, 3) + (rng_chance(&r, 15) ? 1 : 0);
    if (seats == 6 && left > 2 && rng_chance(&r, 80)) left = 2; /* tricks of six: a brute force that ends */
    int stop_trick = ntricks - left, stop_cards = rng_chance(&r, 40) ? 0 : (int)rng_below(&r, (uint32_t)seats);
    int caps_at = rng_chance(&r, 25) ? (int)rng_below(&r, (uint32_t)seats) : -1;
    int b4 = 0, b8 = 0, opened = 0;
    for (int guard = 0; guard < MAX_PLIES; guard++) {
        if (st->phase == G304_PHASE_DONE) return 0;
        int seat = st->to_act;
        g304_action a;
        if (st->phase == G304_PHASE_PLAY) {
            if (!opened) {
                opened = 1;
                if (want_open && !st->pcc) {
                    a = test_action(G304_DO_OPEN, 0, 0);
                    g304_apply(st, st->maker, &a, NULL, NULL);
                }
            }
            if (st->trick_no == stop_trick && st->tricks[stop_trick].n == stop_cards % g304_trick_size(st)) {
                if (caps_at >= 0 && !p->called) {
                    int caller = -1;
                    for (int k = 0; k < seats && caller < 0; k++)
                        if (g304_may_caps(st, (caps_at + k) % seats)) caller = (caps_at + k) % seats;
                    if (caller < 0) return 1;
                    cardset_t have = g304_cards_of(st, caller);
                    a = test_action(G304_DO_CAPS, 0, 0);
                    for (cardset_t s = have; s; s &= s - 1) a.order[a.n++] = cardset_first(s);
                    for (int i = a.n - 1; i > 0; i--) {
                        int j = (int)rng_below(&r, (uint32_t)i + 1);
                        card_t t = a.order[i];
                        a.order[i] = a.order[j];
                        a.order[j] = t;
                    }
                    if (g304_apply(st, caller, &a, NULL, NULL) != G304_OK) return 0;
                    p->called = 1;
                }
                return st->phase == G304_PHASE_PLAY;
            }
            card_t cand[G304_MAX_LEGAL];
            int k = engine_cards(st, cand);
            if (!k) return 0;
            a = test_action(G304_DO_PLAY, pick_card(&r, st, cand, k, strong, keep_closed, lead_trumps), 0);
        } else if (st->phase == G304_PHASE_BID4) {
            a = seat == maker4 && !b4 ? test_action(G304_DO_BID, 0, a4) : test_action(G304_DO_PASS, 0, 0);
            b4 |= seat == maker4;
        } else if (st->phase == G304_PHASE_BID8) {
            a = seat == bid8_seat && !b8 ? test_action(G304_DO_BID, 0, a8) : test_action(G304_DO_PASS, 0, 0);
            b8 |= seat == bid8_seat;
        } else if (st->phase == G304_PHASE_TRUMP) {
            g304_action legal[G304_MAX_LEGAL];
            int n = g304_legal(st, seat, legal);
            if (!n) return 0;
            a = legal[rng_below(&r, (uint32_t)n)];
        } else {
            return 0;
        }
        if (g304_apply(st, seat, &a, NULL, NULL) != G304_OK) {
            a = test_action(G304_DO_PASS, 0, 0);
            if (g304_apply(st, seat, &a, NULL, NULL) != G304_OK) return 0;
        }
    }
    return 0;
}

/* ---- the oracle ---- */

typedef struct {
    long nodes, mismatches;
    char why[600];
} oracle;

static void note(oracle *o, const char *what)
{
    if (!o->mismatches++) snprintf(o->why, sizeof o->why, "%s", what);
}

/* Whether two positions are the same hand at the same moment (unused array tails aside). */
static int same_pos(const dd_pos *a, const dd_pos *b)
{
    if (a->nseats != b->nseats || a->ntricks != b->ntricks || a->maker != b->maker || a->trump != b->trump ||
        a->pcc != b->pcc || a->bid250 != b->bid250 || a->trump_open != b->trump_open || a->ind_down != b->ind_down ||
        a->exhaust != b->exhaust || a->indicator != b->indicator || a->trick_no != b->trick_no || a->n != b->n ||
        a->facedown != b->facedown || a->to_act != b->to_act || a->caps_seat != b->caps_seat || a->caps_n != b->caps_n)
        return 0;
    for (int t = 0; t < 2; t++)
        if (a->points[t] != b->points[t] || a->tricks[t] != b->tricks[t]) return 0;
    for (int s = 0; s < a->nseats; s++)
        if (a->hand[s] != b->hand[s]) return 0;
    for (int i = 0; i < a->n; i++)
        if (a->card[i] != b->card[i] || a->seat[i] != b->seat[i]) return 0;
    return memcmp(a->caps_order, b->caps_order, a->caps_n) == 0;
}

/* Compares the solver's own position with the engine's at one node of the search. */
static void compare_pos(oracle *o, const g304_state *st, const dd_pos *mine)
{
    dd_pos ref;
    if (st->phase != G304_PHASE_PLAY) return;
    if (dd_pos_of(st, &ref, NULL, 0) != 0) {
        note(o, "dd_pos_of refused a position in play");
        return;
    }
    if (!same_pos(&ref, mine)) note(o, "dd_play left a position unlike the engine's");
    card_t a[G304_MAX_LEGAL], b[G304_TRICKS];
    int na = engine_cards(st, a), nb = dd_legal(mine, b);
    if (na != nb || memcmp(a, b, (size_t)na) != 0) note(o, "dd_legal differs from g304_legal");
}

/* Team 0's final points under best play by both teams, from the engine alone; *sweep[t]: team t can
 * win every remaining trick. */
static int brute(oracle *o, const g304_state *st, const dd_pos *mine, int sweep[2])
{
    o->nodes++;
    compare_pos(o, st, mine);
    if (st->phase == G304_PHASE_DONE) {
        for (int t = 0; t < 2; t++) sweep[t] = 1;
        return st->points[0];
    }
    card_t cand[G304_MAX_LEGAL];
    int k = engine_cards(st, cand);
    int seat = st->to_act, maxi = team_of_seat(seat) == 0;
    int best = maxi ? -1 : 1000;
    int any[2] = {0, 0}, all[2] = {1, 1};
    for (int i = 0; i < k; i++) {
        g304_state child = *st;
        g304_action a = test_action(G304_DO_PLAY, cand[i], 0);
        if (g304_apply(&child, seat, &a, NULL, NULL) != G304_OK) {
            note(o, "the engine refused a card it listed");
            continue;
        }
        dd_pos next = *mine;
        dd_play(&next, cand[i]);
        int sw[2];
        int v = brute(o, &child, &next, sw);
        if (maxi ? v > best : v < best) best = v;
        for (int t = 0; t < 2; t++) {
            int kept = sw[t] && child.team_tricks[!t] == st->team_tricks[!t];
            any[t] |= kept;
            all[t] &= kept;
        }
    }
    for (int t = 0; t < 2; t++) sweep[t] = team_of_seat(seat) == t ? any[t] : all[t];
    return best;
}

/* The position in words, for a mismatch. */
static void describe(const dd_pos *p, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, " [maker %d trump %c%s%s%s%s ind %s, trick %d, to act %d, table:", p->maker,
                                   suit_letter(p->trump), p->trump_open ? " open" : " closed",
                                   p->ind_down ? " ind-down" : "", p->exhaust ? " exhaust" : "", p->pcc ? " pcc" : "",
                                   card_str(p->indicator), p->trick_no, p->to_act);
    for (int i = 0; i < p->n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, " %d:%s%s", p->seat[i], card_str(p->card[i]),
                                 p->facedown >> i & 1 ? "(down)" : "");
    for (int s = 0; s < p->nseats && used < len; s++) {
        used += (size_t)snprintf(buf + used, len - used, "; seat %d:", s);
        for (cardset_t h = p->hand[s]; h && used < len; h &= h - 1)
            used += (size_t)snprintf(buf + used, len - used, " %s", card_str(cardset_first(h)));
    }
    if (used < len && p->caps_n) {
        used += (size_t)snprintf(buf + used, len - used, "; caps by %d:", p->caps_seat);
        for (int i = 0; i < p->caps_n && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, " %s", card_str(p->caps_order[i]));
    }
    if (used < len) snprintf(buf + used, len - used, "; points %d/%d tricks %d/%d]", p->points[0], p->points[1], p->tricks[0], p->tricks[1]);
}

static void check_position(oracle *o, dd_solver *w, const position *p)
{
    const g304_state *st = &p->st;
    dd_pos root;
    cr_assert_eq(dd_pos_of(st, &root, NULL, 0), 0);
    int sweep[2];
    int want = brute(o, st, &root, sweep);
    int got = root.points[0] + dd_value(w, &root);
    char buf[480], where[300];
    describe(&root, where, sizeof where);
    if (got != want) {
        snprintf(buf, sizeof buf, "hand %#" PRIx64 ": dd_value gives team 0 %d points, brute force %d%s", p->seed,
                 got, want, where);
        note(o, buf);
    }
    for (int t = 0; t < 2; t++) {
        if (dd_sweep(w, &root, t) != sweep[t]) {
            snprintf(buf, sizeof buf, "hand %#" PRIx64 ": dd_sweep(team %d) is %d, brute force %d%s", p->seed, t,
                     !sweep[t], sweep[t], where);
            note(o, buf);
        }
        int mine = t == 0 ? want - root.points[0] : dd_points_left(&root) - (want - root.points[0]);
        for (int d = -2; d <= 2; d++) {
            int target = mine + d;
            if (dd_reach(w, &root, t, target) != (target <= mine)) {
                snprintf(buf, sizeof buf, "hand %#" PRIx64 ": dd_reach(team %d, %d) wrong; it secures %d%s", p->seed,
                         t, target, mine, where);
                note(o, buf);
            }
        }
    }
    card_t cand[G304_MAX_LEGAL];
    int k = engine_cards(st, cand);
    for (int i = 0; i < k; i++) {
        g304_state child = *st;
        g304_action a = test_action(G304_DO_PLAY, cand[i], 0);
        g304_apply(&child, st->to_act, &a, NULL, NULL);
        dd_pos next = root;
        dd_play(&next, cand[i]);
        int v = brute(o, &child, &next, sweep);
        int dv = child.phase == G304_PHASE_DONE ? next.points[0] : next.points[0] + dd_value(w, &next);
        if (dv != v) {
            snprintf(buf, sizeof buf, "hand %#" PRIx64 ": after %s dd_value gives team 0 %d points, brute force %d%s",
                     p->seed, card_str(cand[i]), dv, v, where);
            note(o, buf);
        }
    }
}

static long env_long(const char *name, long fallback)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : fallback;
}

/* Checks `want` positions of the game of `seats` players from the seed against the brute force;
 * every kind of position must have come up. */
static void cross_check(int seats, long want, uint64_t seed)
{
    dd_solver *w = dd_solver_new(16);
    cr_assert_not_null(w);
    oracle o = {0};
    long done = 0, closed = 0, pcc = 0, exhaust = 0, called = 0, facedown = 0, mid = 0;
    xrng r = {seed};
    for (long tries = 0; done < want && tries < want * 20; tries++) {
        position p;
        if (!gen_position(rng_u64(&r), seats, &p)) continue;
        check_position(&o, w, &p);
        done++;
        closed += !p.st.trump_open;
        pcc += p.st.pcc;
        exhaust += p.st.exhaust;
        called += p.called;
        mid += p.st.tricks[p.st.trick_no].n > 0;
        for (int t = 0; t <= p.st.trick_no && t < G304_TRICKS; t++) facedown += p.st.tricks[t].facedown != 0;
        if (o.mismatches) break;
    }
    cr_log_info("%d players: %ld positions (%ld closed, %ld Partner Close Caps, %ld with R-EXHAUST binding, %ld after "
                "a Caps call, %ld mid-trick; %ld tricks with face-down cards), %ld oracle nodes",
                seats, done, closed, pcc, exhaust, called, mid, facedown, o.nodes);
    cr_assert_eq(o.mismatches, 0, "%s", o.why);
    cr_assert_eq(done, want, "only %ld positions could be made", done);
    cr_assert_gt(closed, want / 20);
    cr_assert_gt(pcc, want / 50);
    cr_assert_gt(exhaust, 0);
    cr_assert_gt(called, want / 50);
    cr_assert_gt(facedown, want / 10);
    cr_assert_gt(mid, want / 10);
    dd_solver_free(w);
}

Test(dd_cross, solver_agrees_with_brute_force)
{
    cross_check(4, env_long("CARDROOM_DD_CROSS_POSITIONS", 5000), (uint64_t)env_long("CARDROOM_DD_CROSS_SEED", 304));
}

/* Six-player 304 (R-SIX-…): six seats in teams of three, tricks of six cards (four in Partner Close
 * Caps, both teammates out), the sixes in the pack. */
Test(dd_cross, six_players_agree_with_brute_force)
{
    cross_check(6, env_long("CARDROOM_DD_CROSS_POSITIONS", 5000) / 6,
                (uint64_t)env_long("CARDROOM_DD_CROSS_SEED", 304) + 6);
}

/* A search stopped by its node budget answers DD_UNKNOWN and leaves the table sound: the same solver
 * then gives the exact answers a fresh one gives. */
Test(dd_cross, budget_stops_without_harm)
{
    dd_solver *w = dd_solver_new(14), *fresh = dd_solver_new(14);
    cr_assert(w && fresh);
    xrng r = {99};
    int positions = 0, stopped = 0;
    for (int tries = 0; positions < 200 && tries < 5000; tries++) {
        position p;
        if (!gen_position(rng_u64(&r), tries % 2 ? 6 : 4, &p)) continue;
        dd_pos root;
        cr_assert_eq(dd_pos_of(&p.st, &root, NULL, 0), 0);
        positions++;
        for (long budget = 3; budget < 3000; budget *= 7) {
            dd_solver_budget(w, budget);
            int v = dd_value(w, &root), s = dd_sweep(w, &root, 0), k = dd_reach(w, &root, 1, 40);
            stopped += (v == DD_UNKNOWN) + (s == DD_UNKNOWN) + (k == DD_UNKNOWN);
            dd_solver_budget(w, 0);
            cr_assert(v == DD_UNKNOWN || v == dd_value(fresh, &root));
            cr_assert(s == DD_UNKNOWN || s == dd_sweep(fresh, &root, 0));
            cr_assert(k == DD_UNKNOWN || k == dd_reach(fresh, &root, 1, 40));
        }
        cr_assert_eq(dd_value(w, &root), dd_value(fresh, &root));
        cr_assert_eq(dd_sweep(w, &root, 1), dd_sweep(fresh, &root, 1));
    }
    cr_assert_eq(positions, 200);
    cr_assert_gt(stopped, 100);
    dd_solver_free(w);
    dd_solver_free(fresh);
}

/* A trick start of a four-player hand with three to five tricks left: bidding by the heuristic player,
 * then random legal cards. 0 if the hand ended before. */
static int gen_trick_start(uint64_t seed, dd_pos *out)
{
    xrng r = {seed};
    g304_rules rules;
    g304_rules_default(&rules);
    uint8_t dseed[DEAL_SEED_BYTES];
    for (int i = 0; i < DEAL_SEED_BYTES; i++) dseed[i] = (uint8_t)rng_u64(&r);
    card_t deck[CARD_IDS];
    g304_shuffle(dseed, &rules, deck);
    const int16_t tokens[2] = {11, 11};
    g304_state st;
    g304_start(&st, &rules, (int)rng_below(&r, 4), tokens, deck, NULL);
    int stop = 3 + (int)rng_below(&r, 3);
    for (int ply = 0; ply < 200 && st.phase != G304_PHASE_DONE; ply++) {
        g304_action a;
        if (st.phase == G304_PHASE_PLAY) {
            if (st.trick_no == stop && st.tricks[stop].n == 0)
                return dd_pos_of(&st, out, NULL, 0) == 0 && out->caps_seat == G304_NO_SEAT;
            card_t cand[G304_MAX_LEGAL];
            int k = engine_cards(&st, cand);
            if (!k) return 0;
            a = test_action(G304_DO_PLAY, cand[rng_below(&r, (uint32_t)k)], 0);
        } else {
            ai304_input in;
            ai304_input_of(&st, st.to_act, &in);
            if (ai304_choose(&in, rng_u64(&r), &a) != 0) return 0;
        }
        if (g304_apply(&st, st.to_act, &a, NULL, NULL) != G304_OK) return 0;
    }
    return 0;
}

/* A twin of p by ranks: a card of a hand swapped for a card of its suit already played, with no card in
 * play between the two in power, so that every suit keeps its holders by rank; of the same points (a 7
 * for an 8) or of other points. 0 if p has none. */
static int make_twin(const dd_pos *p, dd_pos *q, int same_points, xrng *r)
{
    cardset_t in_play = p->ind_down ? CARDSET_BIT(p->indicator) : 0;
    for (int s = 0; s < p->nseats; s++) in_play |= p->hand[s];
    struct {
        int seat;
        card_t from, to;
    } cand[64];
    int n = 0;
    for (int s = 0; s < p->nseats; s++)
        for (cardset_t h = p->hand[s]; h; h &= h - 1) {
            card_t c = (card_t)__builtin_ctzll(h);
            for (int rank = 0; rank < RANK_COUNT; rank++) {
                card_t o = CARD_MAKE(CARD_SUIT(c), rank);
                if (in_play & CARDSET_BIT(o) || (card_points(o) == card_points(c)) != same_points) continue;
                int lo = card_power(c) < card_power(o) ? card_power(c) : card_power(o);
                int hi = card_power(c) + card_power(o) - lo, between = 0;
                for (cardset_t t = in_play & CARDSET_SUIT(CARD_SUIT(c)); t; t &= t - 1) {
                    int pw = card_power((card_t)__builtin_ctzll(t));
                    between |= pw > lo && pw < hi;
                }
                if (!between && n < 64) cand[n].seat = s, cand[n].from = c, cand[n++].to = o;
            }
        }
    if (!n) return 0;
    int i = (int)rng_below(r, (uint32_t)n);
    *q = *p;
    q->hand[cand[i].seat] = (p->hand[cand[i].seat] & ~CARDSET_BIT(cand[i].from)) | CARDSET_BIT(cand[i].to);
    return 1;
}

/* The table is keyed by ranks (dd.c): a twin of a position solved before, with the same holders by rank,
 * is answered from the table, exactly as a fresh solver answers it, and after every move too. With
 * the same points the first position's value is the twin's, so the table alone answers it; with
 * other points the bounds are shifted and the search goes on where they do not settle it. */
Test(dd_cross, twins_by_ranks_are_answered_from_the_table)
{
    dd_solver *w = dd_solver_new(16), *fresh = dd_solver_new(16);
    cr_assert(w && fresh);
    xrng r = {17};
    int twins[2] = {0, 0}, from_table = 0;
    long nodes_twin = 0, nodes_fresh = 0;
    for (int tries = 0; (twins[0] < 100 || twins[1] < 100) && tries < 5000; tries++) {
        dd_pos a;
        if (!gen_trick_start(rng_u64(&r), &a)) continue;
        for (int same = 0; same < 2; same++) {
            dd_pos b;
            if (twins[same] >= 100 || !make_twin(&a, &b, same, &r)) continue;
            twins[same]++;
            dd_solver_clear(w);
            dd_solver_clear(fresh);
            dd_value(w, &a);
            long before = dd_nodes(w), fresh_before = dd_nodes(fresh);
            int got = dd_value(w, &b), want = dd_value(fresh, &b);
            cr_assert_eq(got, want, "a twin by ranks: %d points from the table, %d from a fresh solver", got, want);
            if (same) {
                nodes_twin += dd_nodes(w) - before;
                nodes_fresh += dd_nodes(fresh) - fresh_before;
                from_table += dd_nodes(w) - before <= 4;
            }
            card_t moves[G304_TRICKS];
            int k = dd_legal(&b, moves);
            for (int i = 0; i < k; i++) {
                dd_pos y = b;
                dd_play(&y, moves[i]);
                cr_assert_eq(y.points[0] + dd_value(w, &y), y.points[0] + dd_value(fresh, &y), "after %s",
                             card_str(moves[i]));
            }
        }
    }
    cr_log_info("twins: %d of the same points (%d answered in at most four nodes; %ld nodes against %ld fresh), "
                "%d of other points",
                twins[1], from_table, nodes_twin, nodes_fresh, twins[0]);
    cr_assert_eq(twins[0], 100);
    cr_assert_eq(twins[1], 100);
    cr_assert_eq(from_table, twins[1], "every twin of the same points is answered from the table");
    cr_assert_lt(nodes_twin * 20, nodes_fresh);
    dd_solver_free(w);
    dd_solver_free(fresh);
}

/* A position the solver does not take: a hand not in play. Hands in play of both games are taken,
 * with the game's seats and tricks. */
Test(dd_cross, refusals)
{
    for (int seats = 4; seats <= 6; seats += 2) {
        position p;
        xrng r = {5};
        while (!gen_position(rng_u64(&r), seats, &p)) {}
        dd_pos d;
        char err[160];
        g304_state st = p.st;
        st.phase = G304_PHASE_BID8;
        cr_assert_eq(dd_pos_of(&st, &d, err, sizeof err), -1);
        cr_assert(strstr(err, "not in play (phase bid8)") != NULL, "%s", err);
        cr_assert_eq(dd_pos_of(&p.st, &d, err, sizeof err), 0);
        cr_assert_eq(d.nseats, seats);
        cr_assert_eq(d.ntricks, seats == 6 ? 6 : 8);
    }
}

/* A six-player hand from its deal to its end, every card chosen by the solver's own best move: the
 * solver's position follows the engine's at every card, and the points its value promised at the
 * first lead are what team 0 ends with (both teams play the solver's best moves). */
Test(dd_cross, six_players_whole_hand)
{
    g304_rules rules;
    g304_rules_default(&rules);
    cr_assert_eq(g304_rules_set_players(&rules, 6, NULL), 0);
    dd_solver *w = dd_solver_new(18);
    cr_assert_not_null(w);
    const int16_t tokens[2] = {11, 11};
    int hands = 0;
    for (uint8_t n = 1; n < 60 && hands < 3; n++) {
        uint8_t seed[DEAL_SEED_BYTES] = {n};
        card_t deck[CARD_IDS];
        g304_state st;
        g304_shuffle(seed, &rules, deck);
        g304_start(&st, &rules, n % 6, tokens, deck, NULL);
        for (int ply = 0; ply < 80 && st.phase != G304_PHASE_PLAY && st.phase != G304_PHASE_DONE; ply++) {
            ai304_input in;
            g304_action a;
            int seat = st.to_act;
            ai304_input_of(&st, seat, &in);
            cr_assert_eq(ai304_choose(&in, n, &a), 0);
            cr_assert_eq(g304_apply(&st, seat, &a, NULL, NULL), G304_OK);
        }
        if (st.phase != G304_PHASE_PLAY) continue;
        dd_pos pos;
        cr_assert_eq(dd_pos_of(&st, &pos, NULL, 0), 0);
        int promised = pos.points[0] + dd_value(w, &pos);
        while (st.phase == G304_PHASE_PLAY) {
            card_t cand[G304_TRICKS];
            int k = dd_legal(&pos, cand), maxi = team_of_seat(pos.to_act) == 0, best = -1;
            cr_assert_gt(k, 0);
            card_t pick = cand[0];
            for (int i = 0; i < k; i++) {
                dd_pos y = pos;
                dd_play(&y, cand[i]);
                int v = y.trick_no < y.ntricks ? y.points[0] + dd_value(w, &y) : y.points[0];
                if (best < 0 || (maxi ? v > best : v < best)) best = v, pick = cand[i];
            }
            cr_assert_eq(best, promised, "the value changed under best play");
            g304_action a = test_action(G304_DO_PLAY, pick, 0);
            cr_assert_eq(g304_apply(&st, st.to_act, &a, NULL, NULL), G304_OK);
            dd_play(&pos, pick);
            if (st.phase != G304_PHASE_PLAY) break;
            dd_pos ref;
            cr_assert_eq(dd_pos_of(&st, &ref, NULL, 0), 0);
            cr_assert(same_pos(&ref, &pos), "dd_play left a position unlike the engine's");
        }
        cr_assert_eq(st.trick_no, 6, "the hand ended before its sixth trick");
        cr_assert_eq(st.points[0], promised);
        hands++;
    }
    cr_assert_eq(hands, 3, "too few six-player hands reached the play");
    dd_solver_free(w);
}
