/* replay.c — `cardroom replay`: one hand of 304 or ContractGrid as JSON in, the resulting state
 * as JSON out.
 *
 * The input is checked strictly before anything reaches the engine: every key must be known,
 * every value must have the right JSON type and range, every card must parse and the 32 dealt
 * cards (36 with `"players": 6`, whose pack alone has the sixes) must differ. Anything else is malformed and named in one line. Moves the engine
 * refuses are not malformed: they are reported per action and replay goes on with the next.
 * The shapes are fixed by README.md ("cardroom replay"). This input is fuzzed, so every
 * jansson call that can fail is checked and every text we emit is made valid UTF-8. */
#include "replay.h"

#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "deal.h"
#include "g304.h"
#include "grid.h"
#include "judge.h"
#include "option.h"

#define MSG_MAX 256     /* one message: a problem with the input, or an engine refusal */
#define AMOUNT_MAX 1000 /* larger bid numbers are malformed; smaller ones go to the engine */
#define CUT_AT_MAX 40   /* the same for cut points */
#define TOKENS_MAX 1000

/* Where a problem with the input is written (the caller's err buffer). */
typedef struct {
    char *text;
    size_t size;
} problem;

/* Everything the input says before the moves. */
typedef struct {
    g304_rules rules;
    int dealer;
    int16_t tokens[2];
    card_t deck[CARD_IDS];
    const json_t *actions; /* array, or NULL for none */
} replay_input;

static const char *const top_keys[] = {"game",    "rules",       "dealer", "tokens", "hands", "seed",
                                       "actions", "comment",     "description", "name", "expect", NULL};

/* The one field each kind of action takes besides seat, do and the annotations. */
static const char *const kind_field[G304_DO_COUNT] = {
    [G304_DO_CUT] = "at",     [G304_DO_BID] = "amount", [G304_DO_TRUMP] = "card",
    [G304_DO_PLAY] = "card",  [G304_DO_CAPS] = "order",
};

static const char *const end_names[] = {"none", "played", "redeal", "all_pass", "spoilt", "violation"};

/* ---- Text ---- */

/* Length of the valid UTF-8 sequence at s, or 0 if the bytes there are not one. A NUL
 * ends any sequence, so reading stops at the end of the string. */
static size_t utf8_seq_len(const unsigned char *s)
{
    if (s[0] < 0x80) return 1;
    size_t n;
    uint32_t cp, min;
    if ((s[0] & 0xE0) == 0xC0) n = 2, cp = s[0] & 0x1Fu, min = 0x80;
    else if ((s[0] & 0xF0) == 0xE0) n = 3, cp = s[0] & 0x0Fu, min = 0x800;
    else if ((s[0] & 0xF8) == 0xF0) n = 4, cp = s[0] & 0x07u, min = 0x10000;
    else return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

/* Makes s one line of valid UTF-8 in place: control characters and bytes that are not part
 * of a valid sequence (quoted input, or a message cut short mid-character) become '?'. */
static void text_make_line(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = utf8_seq_len(p);
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7F))) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

__attribute__((format(printf, 2, 3))) static int fail(problem *p, const char *fmt, ...)
{
    if (p->text && p->size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->text, p->size, fmt, ap);
        va_end(ap);
        text_make_line(p->text);
    }
    return -1;
}

static int key_in(const char *key, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(key, *list) == 0) return 1;
    return 0;
}

/* ---- Reading values ---- */

static int int_in_range(const json_t *v, long long lo, long long hi, long long *out)
{
    if (!json_is_integer(v)) return 0;
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return 0;
    *out = x;
    return 1;
}

/* A card string of the game's pack; `where` names its place in the input for the message. */
static int read_card(const json_t *v, const g304_rules *r, const char *where, card_t *c, problem *p)
{
    if (!json_is_string(v)) return fail(p, "%s: a card must be a string like \"JS\"", where);
    char why[MSG_MAX];
    if (card_parse_pack(json_string_value(v), json_string_length(v), g304_deck_size(r), c, why, sizeof why) < 0)
        return fail(p, "%s: %s", where, why);
    return 0;
}

static int read_seed(const json_t *v, uint8_t seed[DEAL_SEED_BYTES], problem *p)
{
    const char *s = json_string_value(v), *end = NULL;
    size_t n = 0;
    if (!s || json_string_length(v) != 2 * DEAL_SEED_BYTES ||
        sodium_hex2bin(seed, DEAL_SEED_BYTES, s, 2 * DEAL_SEED_BYTES, NULL, &n, &end) < 0 || n != DEAL_SEED_BYTES)
        return fail(p, "seed must be a string of %d hex digits", 2 * DEAL_SEED_BYTES);
    return 0;
}

/* ---- The top level ---- */

static int check_top_keys(const json_t *root, problem *p)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        if (!key_in(key, top_keys)) return fail(p, "unknown field \"%.40s\"", key);
    }
    return 0;
}

static int read_game(const json_t *root, problem *p)
{
    const json_t *v = json_object_get(root, "game");
    if (!v) return fail(p, "missing \"game\" (it must be \"304\" or \"contractgrid\")");
    if (!json_is_string(v)) return fail(p, "game must be the string \"304\" or \"contractgrid\"");
    if (strcmp(json_string_value(v), "304") != 0)
        return fail(p, "game \"%.40s\" is not supported: only \"304\" or \"contractgrid\"", json_string_value(v));
    return 0;
}

/* An option value as the text g304_rules_set() takes. */
static int option_text(const json_t *v, char *buf, size_t size, const char **text)
{
    if (json_is_string(v)) *text = json_string_value(v);
    else if (json_is_boolean(v)) *text = json_is_true(v) ? "true" : "false";
    else if (json_is_integer(v)) {
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
        *text = buf;
    } else
        return -1;
    return 0;
}

static int read_rules(const json_t *root, g304_rules *rules, problem *p)
{
    g304_rules_default(rules);
    const json_t *obj = json_object_get(root, "rules");
    if (!obj) return 0;
    if (!json_is_object(obj)) return fail(p, "rules must be an object of options");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)obj, name, v) {
        char buf[32];
        const char *text;
        if (option_text(v, buf, sizeof buf, &text) < 0)
            return fail(p, "rules: option \"%.40s\" must be a string, a number or true/false", name);
        g304_error e = {0};
        if (strcmp(name, "players") == 0) { /* the table's size, apart from the play options */
            int n;
            if (option_uint(text, 0, 99, &n) < 0) n = 0;
            if (g304_rules_set_players(rules, n, &e) < 0)
                return fail(p, "rules: option players is 4 or 6, not '%.40s'", text);
            continue;
        }
        if (g304_rules_set(rules, name, text, &e) < 0) return fail(p, "rules: %s", e.msg);
    }
    return 0;
}

static int read_dealer(const json_t *root, int seats, int *dealer, problem *p)
{
    const json_t *v = json_object_get(root, "dealer");
    long long x = 0;
    if (v && !int_in_range(v, 0, seats - 1, &x)) return fail(p, "dealer must be a seat 0..%d", seats - 1);
    *dealer = (int)x;
    return 0;
}

static int read_tokens(const json_t *root, int start_tokens, int16_t tokens[2], problem *p)
{
    const json_t *v = json_object_get(root, "tokens");
    tokens[0] = tokens[1] = (int16_t)start_tokens;
    if (!v) return 0;
    long long t0, t1;
    if (!json_is_array(v) || json_array_size(v) != 2 || !int_in_range(json_array_get(v, 0), 0, TOKENS_MAX, &t0) ||
        !int_in_range(json_array_get(v, 1), 0, TOKENS_MAX, &t1))
        return fail(p, "tokens must be [team 0, team 1], each a number 0..%d", TOKENS_MAX);
    tokens[0] = (int16_t)t0;
    tokens[1] = (int16_t)t1;
    return 0;
}

static int read_hand(const json_t *v, const g304_rules *r, int seat, card_t hand[G304_TRICKS], cardset_t *seen,
                     problem *p)
{
    int size = g304_tricks(r);
    if (!json_is_array(v) || json_array_size(v) != (size_t)size)
        return fail(p, "hands[%d] must be an array of %d cards", seat, size);
    for (int i = 0; i < size; i++) {
        char where[32];
        snprintf(where, sizeof where, "hands[%d][%d]", seat, i);
        if (read_card(json_array_get(v, (size_t)i), r, where, &hand[i], p) < 0) return -1;
        if (*seen & CARDSET_BIT(hand[i])) return fail(p, "hands: card %s appears twice", card_str(hand[i]));
        *seen |= CARDSET_BIT(hand[i]);
    }
    return 0;
}

static int read_hands(const json_t *v, const g304_rules *r, int dealer, card_t deck[CARD_IDS], problem *p)
{
    int seats = g304_seats(r);
    if (!json_is_array(v) || json_array_size(v) != (size_t)seats)
        return fail(p, "hands must be an array of %d hands (one per seat) of %d cards", seats, g304_tricks(r));
    card_t hands[G304_MAX_SEATS][G304_TRICKS];
    cardset_t seen = 0;
    for (int s = 0; s < seats; s++)
        if (read_hand(json_array_get(v, (size_t)s), r, s, hands[s], &seen, p) < 0) return -1;
    if (g304_deck_from_hands_of(r, (const card_t(*)[G304_TRICKS])hands, dealer, deck) < 0)
        return fail(p, "hands: the %d cards are not all different", g304_deck_size(r));
    return 0;
}

static int read_deck(const json_t *root, const g304_rules *r, int dealer, card_t deck[CARD_IDS], problem *p)
{
    const json_t *hands = json_object_get(root, "hands"), *seed = json_object_get(root, "seed");
    if (hands && seed) return fail(p, "give either \"hands\" or \"seed\", not both");
    if (hands) return read_hands(hands, r, dealer, deck, p);
    if (!seed) return fail(p, "missing \"hands\" (or \"seed\")");
    uint8_t bytes[DEAL_SEED_BYTES];
    if (read_seed(seed, bytes, p) < 0) return -1;
    g304_shuffle(bytes, r, deck);
    return 0;
}

static int read_input(const json_t *root, replay_input *in, problem *p)
{
    if (!json_is_object(root)) return fail(p, "the input must be a JSON object");
    if (read_game(root, p) < 0 || check_top_keys(root, p) < 0 || read_rules(root, &in->rules, p) < 0 ||
        read_dealer(root, g304_seats(&in->rules), &in->dealer, p) < 0 ||
        read_tokens(root, in->rules.start_tokens, in->tokens, p) < 0 ||
        read_deck(root, &in->rules, in->dealer, in->deck, p) < 0)
        return -1;
    in->actions = json_object_get(root, "actions");
    if (in->actions && !json_is_array(in->actions)) return fail(p, "actions must be an array");
    return 0;
}

/* ---- Actions ---- */

static int kind_from_name(const char *name)
{
    for (int k = 0; k < G304_DO_COUNT; k++) {
        const char *n = g304_do_name((g304_do)k);
        if (n && strcmp(n, name) == 0) return k;
    }
    return -1;
}

static int is_kind_field(const char *key)
{
    for (int k = 0; k < G304_DO_COUNT; k++)
        if (kind_field[k] && strcmp(kind_field[k], key) == 0) return 1;
    return 0;
}

static int read_kind(const json_t *obj, size_t i, int *kind, problem *p)
{
    const json_t *v = json_object_get(obj, "do");
    if (!v) return fail(p, "action %zu: missing \"do\"", i);
    if (!json_is_string(v)) return fail(p, "action %zu: \"do\" must be a string", i);
    *kind = kind_from_name(json_string_value(v));
    if (*kind < 0) return fail(p, "action %zu: unknown action \"%.40s\"", i, json_string_value(v));
    return 0;
}

static int check_action_keys(const json_t *obj, size_t i, int kind, problem *p)
{
    static const char *const common[] = {"seat", "do", "comment", "expect", NULL};
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (key_in(key, common) || (kind_field[kind] && strcmp(key, kind_field[kind]) == 0)) continue;
        if (is_kind_field(key))
            return fail(p, "action %zu: \"%s\" takes no \"%s\"", i, g304_do_name((g304_do)kind), key);
        return fail(p, "action %zu: unknown field \"%.40s\"", i, key);
    }
    return 0;
}

static int read_amount(const json_t *v, size_t i, g304_action *a, problem *p)
{
    if (json_is_string(v) && strcasecmp(json_string_value(v), "pcc") == 0) {
        a->amount = G304_PCC;
        return 0;
    }
    if (!json_is_integer(v)) return fail(p, "action %zu: amount must be a number or \"pcc\"", i);
    long long x;
    if (!int_in_range(v, 0, AMOUNT_MAX, &x))
        return fail(p, "action %zu: amount %lld is out of range 0..%d", i, (long long)json_integer_value(v),
                    AMOUNT_MAX);
    a->amount = (uint16_t)x;
    return 0;
}

static int read_order(const json_t *v, const g304_rules *r, size_t i, g304_action *a, problem *p)
{
    size_t n = json_array_size(v);
    if (!json_is_array(v) || n < 1 || n > G304_TRICKS)
        return fail(p, "action %zu: order must be an array of 1 to %d cards", i, G304_TRICKS);
    for (size_t k = 0; k < n; k++) {
        char where[48];
        snprintf(where, sizeof where, "action %zu: order[%zu]", i, k);
        if (read_card(json_array_get(v, k), r, where, &a->order[k], p) < 0) return -1;
    }
    a->n = (uint8_t)n;
    return 0;
}

/* The kind's own field, already known to be present. */
static int read_kind_field(const json_t *v, const g304_rules *r, size_t i, g304_action *a, problem *p)
{
    long long at;
    char where[32];
    switch (a->kind) {
    case G304_DO_CUT:
        if (!int_in_range(v, 0, CUT_AT_MAX, &at)) return fail(p, "action %zu: at must be a number 0..%d", i, CUT_AT_MAX);
        a->amount = (uint16_t)at;
        return 0;
    case G304_DO_BID: return read_amount(v, i, a, p);
    case G304_DO_CAPS: return read_order(v, r, i, a, p);
    default: /* trump, play */
        snprintf(where, sizeof where, "action %zu", i);
        return read_card(v, r, where, &a->card, p);
    }
}

static int read_action(const json_t *obj, const g304_rules *r, size_t i, int *seat, g304_action *a, problem *p)
{
    if (!json_is_object(obj)) return fail(p, "action %zu must be an object", i);
    int kind;
    if (read_kind(obj, i, &kind, p) < 0 || check_action_keys(obj, i, kind, p) < 0) return -1;
    const json_t *sv = json_object_get(obj, "seat");
    long long s;
    if (!sv) return fail(p, "action %zu: missing \"seat\"", i);
    if (!int_in_range(sv, 0, g304_seats(r) - 1, &s)) return fail(p, "action %zu: seat must be 0..%d", i, g304_seats(r) - 1);
    *seat = (int)s;
    memset(a, 0, sizeof *a);
    a->kind = (uint8_t)kind;
    a->card = CARD_NONE;
    if (!kind_field[kind]) return 0;
    const json_t *fv = json_object_get(obj, kind_field[kind]);
    if (!fv) return fail(p, "action %zu: \"%s\" needs \"%s\"", i, g304_do_name((g304_do)kind), kind_field[kind]);
    return read_kind_field(fv, r, i, a, p);
}

/* {"ok":true} or {"ok":false,"error":CODE,"message":TEXT}. */
static json_t *outcome_json(g304_code code, const g304_error *e)
{
    if (code == G304_OK) return json_pack("{s:b}", "ok", 1);
    char msg[G304_MSG_MAX];
    memcpy(msg, e->msg, sizeof msg);
    msg[sizeof msg - 1] = 0;
    text_make_line(msg);
    const char *name = g304_code_name(code);
    return json_pack("{s:b, s:s, s:s}", "ok", 0, "error", name ? name : "unknown", "message", msg);
}

/* Applies every action in order, under the Caps judge; fills results. */
static int run_actions(const json_t *actions, caps_solver *w, g304_state *st, g304_events *last, json_t *results,
                       problem *p)
{
    size_t i;
    json_t *obj;
    json_array_foreach((json_t *)actions, i, obj) {
        int seat = 0;
        g304_action a;
        if (read_action(obj, &st->rules, i, &seat, &a, p) < 0) return -1;
        g304_error e = {0};
        g304_events ev;
        ev.n = 0;
        g304_code code = judge_apply(w, st, seat, &a, &ev, &e);
        if (code == G304_OK) *last = ev;
        if (json_array_append_new(results, outcome_json(code, &e)) < 0) return fail(p, "out of memory");
    }
    return 0;
}

/* ---- Output ---- */

/* A seat, or null for G304_NO_SEAT (a state never holds another value). */
static json_t *seat_json(int seat) { return seat >= 0 && seat < G304_MAX_SEATS ? json_integer(seat) : json_null(); }

static json_t *amount_json(unsigned amount) { return amount == G304_PCC ? json_string("pcc") : json_integer(amount); }

static json_t *card_json(card_t c) { return c < CARD_IDS ? json_string(card_str(c)) : json_null(); }

static json_t *append(json_t *array, json_t *item)
{
    if (array && json_array_append_new(array, item) == 0) return array;
    json_decref(array);
    return NULL;
}

static json_t *cardset_json(cardset_t s)
{
    json_t *a = json_array();
    for (; s && a; s &= s - 1) a = append(a, card_json(cardset_first(s)));
    return a;
}

json_t *replay_move_json(const g304_action *m)
{
    json_t *o = json_pack("{s:s}", "do", g304_do_name((g304_do)m->kind));
    json_t *extra = NULL;
    switch (m->kind) {
    case G304_DO_CUT: extra = json_pack("{s:i}", "at", m->amount); break;
    case G304_DO_BID: extra = json_pack("{s:o}", "amount", amount_json(m->amount)); break;
    case G304_DO_TRUMP:
    case G304_DO_PLAY: extra = json_pack("{s:o}", "card", card_json(m->card)); break;
    default: return o;
    }
    if (!o || !extra || json_object_update(o, extra) < 0) {
        json_decref(o);
        o = NULL;
    }
    json_decref(extra);
    return o;
}

static json_t *legal_json(const g304_state *st)
{
    json_t *a = json_array();
    if (st->to_act >= g304_seats(&st->rules)) return a;
    g304_action moves[G304_MAX_LEGAL];
    int n = g304_legal(st, st->to_act, moves);
    for (int k = 0; k < n && k < G304_MAX_LEGAL && a; k++) a = append(a, replay_move_json(&moves[k]));
    return a;
}

static json_t *trick_json(const g304_trick *t)
{
    json_t *seats = json_array(), *cards = json_array(), *down = json_array();
    int n = t->n < G304_MAX_SEATS ? t->n : G304_MAX_SEATS;
    for (int i = 0; i < n; i++) {
        seats = append(seats, seat_json(t->seat[i]));
        cards = append(cards, card_json(t->card[i]));
        down = append(down, json_boolean(t->facedown >> i & 1));
    }
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:i}", "leader", seat_json(t->leader), "seats", seats, "cards",
                     cards, "face_down", down, "winner", seat_json(t->winner), "points", t->points);
}

static json_t *tricks_json(const g304_state *st)
{
    json_t *a = json_array();
    int tricks = g304_tricks(&st->rules);
    int last = st->trick_no < tricks - 1 ? st->trick_no : tricks - 1;
    for (int t = 0; t <= last && a; t++)
        if (st->tricks[t].n > 0) a = append(a, trick_json(&st->tricks[t]));
    return a;
}

static json_t *hands_json(const g304_state *st)
{
    json_t *a = json_array();
    for (int s = 0; s < g304_seats(&st->rules) && a; s++) a = append(a, cardset_json(st->hand[s]));
    return a;
}

static json_t *caps_json(const g304_result *r)
{
    if (r->caps_seat == G304_NO_SEAT) return json_null();
    return json_pack("{s:o, s:b, s:i, s:b, s:b}", "seat", seat_json(r->caps_seat), "on_time", r->caps_on_time,
                     "bonus", r->caps_bonus, "won", r->caps_won, "broken", r->caps_broken);
}

static json_t *wrong_caps_json(const g304_result *r)
{
    static const char *const reasons[] = {"none", "early", "late", "missing"};
    if (r->wrong_seat == G304_NO_SEAT || r->wrong_reason >= sizeof reasons / sizeof *reasons) return json_null();
    return json_pack("{s:o, s:s}", "seat", seat_json(r->wrong_seat), "reason", reasons[r->wrong_reason]);
}

/* The judge's account of the hand in words (the G304_EV_CAPS_JUDGED event), or null. */
static json_t *caps_text_json(const g304_state *st, const g304_events *ev)
{
    static const char *const names[G304_MAX_SEATS] = {"seat 0", "seat 1", "seat 2", "seat 3", "seat 4", "seat 5"};
    for (int i = 0; i < ev->n; i++) {
        if (ev->ev[i].kind != G304_EV_CAPS_JUDGED) continue;
        char buf[320];
        judge_describe(st, &ev->ev[i], names, buf, sizeof buf);
        return json_string(buf);
    }
    return json_null();
}

/* For each seat, the order that makes Caps certain for it now; null if none; "unknown" if the
 * search ran out of budget. */
static json_t *caps_now_json(caps_solver *w, const g304_state *st)
{
    json_t *a = json_array();
    for (int s = 0; s < g304_seats(&st->rules) && a; s++) {
        card_t order[G304_TRICKS];
        int n = 0;
        caps_verdict v = g304_caps_open_for(st, s) ? caps_check(w, st, s, NULL, 0, order, &n) : CAPS_NOT_CERTAIN;
        json_t *item = json_null();
        if (v == CAPS_UNKNOWN) {
            item = json_string("unknown");
        } else if (v == CAPS_CERTAIN) {
            item = json_array();
            for (int i = 0; i < n && item; i++) item = append(item, card_json(order[i]));
        }
        a = append(a, item);
    }
    return a;
}

static json_t *spoilt_json(const g304_result *r)
{
    if (r->spoilt_seat == G304_NO_SEAT && r->end != G304_END_SPOILT) return json_null();
    if (r->spoilt_seat == G304_NO_SEAT) return json_pack("{s:n, s:b}", "seat", "correct", 1); /* spoilt = auto */
    return json_pack("{s:o, s:b}", "seat", seat_json(r->spoilt_seat), "correct", r->spoilt_ok);
}

static json_t *result_json(const g304_state *st, const g304_events *ev)
{
    const g304_result *r = &st->result;
    if (r->end == G304_END_NONE) return json_null();
    const char *end = r->end < sizeof end_names / sizeof *end_names ? end_names[r->end] : "unknown";
    json_t *made = r->made < 0 ? json_null() : json_boolean(r->made);
    json_t *winner = r->match_winner < 2 ? json_integer(r->match_winner) : json_null();
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:[ii], s:[ii], s:i, s:b, s:o}", "end", end, "made", made,
                     "caps", caps_json(r), "wrong_caps", wrong_caps_json(r), "caps_text", caps_text_json(st, ev),
                     "spoilt", spoilt_json(r), "tokens", st->tokens[0], st->tokens[1], "change", r->delta[0],
                     r->delta[1], "next_dealer", r->next_dealer, "match_over", r->match_over, "winner", winner);
}

static json_t *state_json(caps_solver *w, const g304_state *st, const g304_events *ev, json_t *results)
{
    char trump[2] = {suit_letter(st->trump), 0};
    const char *phase = g304_phase_name((g304_phase)st->phase);
    json_t *bid = st->bid ? amount_json(st->bid) : json_null();
    return json_pack("{s:o, s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:s?, s:o, s:b, s:o, s:o, s:[ii], s:[ii], s:o, s:o}",
                     "results", results, "phase", phase ? phase : "unknown", "dealer", st->dealer, "to_act",
                     seat_json(st->to_act), "legal", legal_json(st), "trump_maker", seat_json(st->maker), "bid", bid,
                     "bidder", st->bid ? seat_json(st->bidder) : json_null(), "trump",
                     st->trump_open ? trump : NULL, "indicator", card_json(st->indicator), "open", st->trump_open,
                     "hands", hands_json(st), "tricks", tricks_json(st), "points", st->points[0], st->points[1],
                     "tokens", st->tokens[0], st->tokens[1], "caps_now", caps_now_json(w, st), "result",
                     result_json(st, ev));
}

/* Replays a checked input; on success *out holds the output document. */
static int replay_input_run(const replay_input *in, char **out, problem *p)
{
    g304_state st;
    g304_events last; /* the events of the last action, for the judge's account */
    g304_start(&st, &in->rules, in->dealer, in->tokens, in->deck, NULL);
    last.n = 0;
    caps_solver *w = caps_solver_new(0);
    json_t *results = json_array();
    if (!results || !w) {
        json_decref(results);
        caps_solver_free(w);
        return fail(p, "out of memory");
    }
    if (in->actions && run_actions(in->actions, w, &st, &last, results, p) < 0) {
        json_decref(results);
        caps_solver_free(w);
        return -1;
    }
    json_t *doc = state_json(w, &st, &last, results); /* takes results, even on failure */
    caps_solver_free(w);
    *out = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    return *out ? 0 : fail(p, "out of memory");
}

/* ---- ContractGrid ({"game":"contractgrid"}) ----
 *
 * The same envelope as 304, read just as strictly. Input: rules, dealer, hands (or seed), the
 * left-out card (deck 25), grids (contract names row by row from a1: a1 b1 c1 d1 a2 …),
 * optional marks, scores and history of a match in progress, and the actions exclude / bid /
 * play. A bid naming a cell outside the grid ("d5") is the player's mistake, not malformed
 * input: it is reported as a refusal ("cell") like the engine's own. */

static const char *const grid_top_keys[] = {"game",    "rules",   "dealer",  "hands",       "left_out",
                                            "seed",    "grids",   "marked",  "scores",      "history",
                                            "actions", "comment", "description", "name",    "expect", NULL};

/* The one field each kind of action takes besides seat, do and the annotations. */
static const char *const grid_kind_field[GRID_DO_COUNT] = {
    [GRID_DO_EXCLUDE] = "suit", [GRID_DO_BID] = "cells", [GRID_DO_PLAY] = "card"};

typedef struct {
    grid_state st;
    const json_t *actions;
} grid_input;

static int is_contractgrid(const json_t *root)
{
    const json_t *g = json_object_get(root, "game");
    return json_is_object(root) && json_is_string(g) && strcmp(json_string_value(g), "contractgrid") == 0;
}

static int grid_check_top_keys(const json_t *root, problem *p)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        if (!key_in(key, grid_top_keys)) return fail(p, "unknown field \"%.40s\"", key);
    }
    return 0;
}

static int grid_set_option(grid_rules *r, const char *name, const json_t *v, problem *p)
{
    char buf[32];
    const char *text;
    if (option_text(v, buf, sizeof buf, &text) < 0)
        return fail(p, "rules: option \"%.40s\" must be a string, a number or true/false", name);
    grid_error e = {0};
    if (grid_rules_set(r, name, text, &e) < 0) return fail(p, "rules: %s", e.msg);
    return 0;
}

/* `small` first: it sets bids and cap to its own defaults, which explicit values then override. */
static int grid_read_rules(const json_t *root, grid_rules *r, problem *p)
{
    grid_rules_default(r);
    const json_t *obj = json_object_get(root, "rules");
    if (obj) {
        if (!json_is_object(obj)) return fail(p, "rules must be an object of options");
        const json_t *small = json_object_get(obj, "small");
        if (small && grid_set_option(r, "small", small, p) < 0) return -1;
        const char *name;
        json_t *v;
        json_object_foreach((json_t *)obj, name, v) {
            if (strcmp(name, "small") != 0 && grid_set_option(r, name, v, p) < 0) return -1;
        }
    }
    grid_error e = {0};
    if (grid_rules_check(r, &e) < 0) return fail(p, "rules: %s", e.msg);
    return 0;
}

/* A card of the deck; `where` names its place in the input. */
static int grid_read_card(const json_t *v, const char *where, card_t *c, problem *p)
{
    if (!json_is_string(v)) return fail(p, "%s: a card must be a string like \"JS\" or \"JK\"", where);
    char why[MSG_MAX];
    if (grid_card_parse(json_string_value(v), json_string_length(v), c, why, sizeof why) < 0)
        return fail(p, "%s: %s", where, why);
    return 0;
}

static int grid_read_hands(const json_t *root, const grid_rules *r, int dealer, card_t deck[GRID_DECK_MAX],
                           problem *p)
{
    const json_t *v = json_object_get(root, "hands"), *lo = json_object_get(root, "left_out");
    int k = grid_hand_size(r);
    grid_set in_deck = grid_deck_cards(r), seen = 0;
    card_t hands[GRID_SEATS][GRID_HAND_MAX];
    char where[48];
    if (!json_is_array(v) || json_array_size(v) != GRID_SEATS)
        return fail(p, "hands must be an array of %d hands (one per seat) of %d cards", GRID_SEATS, k);
    for (int s = 0; s < GRID_SEATS; s++) {
        const json_t *h = json_array_get(v, (size_t)s);
        if (!json_is_array(h) || json_array_size(h) != (size_t)k)
            return fail(p, "hands[%d] must be an array of %d cards (deck %d)", s, k, grid_deck_size(r));
        for (int i = 0; i < k; i++) {
            snprintf(where, sizeof where, "hands[%d][%d]", s, i);
            card_t c;
            if (grid_read_card(json_array_get(h, (size_t)i), where, &c, p) < 0) return -1;
            if (!(in_deck & GRID_BIT(c)))
                return fail(p, "%s: %s is not in the %d-card deck", where, grid_card_str(c), grid_deck_size(r));
            if (seen & GRID_BIT(c)) return fail(p, "hands: card %s appears twice", grid_card_str(c));
            seen |= GRID_BIT(c);
            hands[s][i] = c;
        }
    }
    card_t left = CARD_NONE;
    if (lo && grid_deck_size(r) == GRID_SEATS * k) return fail(p, "left_out is only for deck 25");
    if (grid_deck_size(r) > GRID_SEATS * k) {
        left = (card_t)__builtin_ctzll(in_deck & ~seen); /* the one card nobody holds */
        if (lo) {
            card_t c;
            if (grid_read_card(lo, "left_out", &c, p) < 0) return -1;
            if (c != left) return fail(p, "left_out: %s is not the card missing from the hands (%s)", grid_card_str(c),
                                       grid_card_str(left));
        }
    }
    if (grid_deck_from_hands(r, (const card_t(*)[GRID_HAND_MAX])hands, left, dealer, deck) < 0)
        return fail(p, "hands: the cards are not all different cards of the deck");
    return 0;
}

static int grid_read_deck(const json_t *root, const grid_rules *r, int dealer, card_t deck[GRID_DECK_MAX], problem *p)
{
    const json_t *hands = json_object_get(root, "hands"), *seed = json_object_get(root, "seed");
    if (hands && seed) return fail(p, "give either \"hands\" or \"seed\", not both");
    if (hands) return grid_read_hands(root, r, dealer, deck, p);
    if (!seed) return fail(p, "missing \"hands\" (or \"seed\")");
    if (json_object_get(root, "left_out")) return fail(p, "left_out goes with \"hands\", not with \"seed\"");
    uint8_t bytes[DEAL_SEED_BYTES];
    if (read_seed(seed, bytes, p) < 0) return -1;
    grid_shuffle(bytes, r, deck);
    return 0;
}

static int grid_read_grids(const json_t *root, const grid_rules *r, uint8_t grids[GRID_SEATS][GRID_MAX_CELLS],
                           problem *p)
{
    const json_t *v = json_object_get(root, "grids");
    int cells = grid_cells(r);
    if (!v) return fail(p, "missing \"grids\" (each seat's %d contracts, row by row from a1)", cells);
    if (!json_is_array(v) || json_array_size(v) != GRID_SEATS)
        return fail(p, "grids must be an array of %d grids (one per seat)", GRID_SEATS);
    for (int s = 0; s < GRID_SEATS; s++) {
        const json_t *g = json_array_get(v, (size_t)s);
        if (!json_is_array(g) || json_array_size(g) != (size_t)cells)
            return fail(p, "grids[%d] must be an array of %d contract names, row by row from a1", s, cells);
        memset(grids[s], 0xFF, GRID_MAX_CELLS);
        for (int i = 0; i < cells; i++) {
            const json_t *c = json_array_get(g, (size_t)i);
            int k = json_is_string(c) ? grid_contract_parse(json_string_value(c), json_string_length(c)) : -1;
            if (!json_is_string(c)) return fail(p, "grids[%d][%d]: a contract must be a name like \"zero\"", s, i);
            if (k < 0) return fail(p, "grids[%d][%d]: \"%.40s\" is not a contract", s, i, json_string_value(c));
            grids[s][i] = (uint8_t)k;
        }
        grid_error e = {0};
        if (grid_grid_check(r, grids[s], &e) < 0) return fail(p, "grids[%d]: %s", s, e.msg);
    }
    return 0;
}

/* A cell name of the grid; `where` names its place in the input. */
static int grid_read_cell(const json_t *v, const grid_rules *r, const char *where, int *cell, problem *p)
{
    char why[MSG_MAX];
    if (!json_is_string(v)) return fail(p, "%s: a cell must be a string like \"b3\"", where);
    if (grid_cell_parse(r, json_string_value(v), json_string_length(v), cell, why, sizeof why) < 0)
        return fail(p, "%s: %s", where, why);
    return 0;
}

static int grid_read_progress(const json_t *root, grid_match *m, problem *p)
{
    const json_t *mv = json_object_get(root, "marked"), *sv = json_object_get(root, "scores"),
                 *hv = json_object_get(root, "history");
    uint16_t marked[GRID_SEATS] = {0};
    int32_t scores[GRID_SEATS] = {0};
    int16_t history[GRID_HISTORY_MAX][GRID_SEATS];
    char where[48];
    if (mv) {
        if (!json_is_array(mv) || json_array_size(mv) != GRID_SEATS)
            return fail(p, "marked must be an array of %d arrays of cells (one per seat)", GRID_SEATS);
        for (int s = 0; s < GRID_SEATS; s++) {
            const json_t *a = json_array_get(mv, (size_t)s);
            if (!json_is_array(a) || json_array_size(a) > GRID_MAX_CELLS)
                return fail(p, "marked[%d] must be an array of cells", s);
            for (size_t i = 0; i < json_array_size(a); i++) {
                int c;
                snprintf(where, sizeof where, "marked[%d][%zu]", s, i);
                if (grid_read_cell(json_array_get(a, i), &m->rules, where, &c, p) < 0) return -1;
                if (marked[s] >> c & 1) return fail(p, "%s: the cell is listed twice", where);
                marked[s] |= (uint16_t)(1u << c);
            }
        }
    }
    if (sv) {
        long long x;
        if (!json_is_array(sv) || json_array_size(sv) != GRID_SEATS)
            return fail(p, "scores must be [seat 0, seat 1, seat 2]");
        for (int s = 0; s < GRID_SEATS; s++) {
            if (!int_in_range(json_array_get(sv, (size_t)s), 0, GRID_CAP_MAX, &x))
                return fail(p, "scores[%d] must be a number 0..%d", s, GRID_CAP_MAX);
            scores[s] = (int32_t)x;
        }
    }
    size_t n = 0;
    if (hv) {
        if (!json_is_array(hv) || json_array_size(hv) > GRID_HISTORY_MAX)
            return fail(p, "history must be an array of at most %d hands, each [p0, p1, p2]", GRID_HISTORY_MAX);
        n = json_array_size(hv);
        for (size_t k = 0; k < n; k++) {
            const json_t *h = json_array_get(hv, k);
            if (!json_is_array(h) || json_array_size(h) != GRID_SEATS)
                return fail(p, "history[%zu] must be [p0, p1, p2]: the points of each seat in that hand", k);
            for (int s = 0; s < GRID_SEATS; s++) {
                long long x;
                if (!int_in_range(json_array_get(h, (size_t)s), 0, INT16_MAX, &x))
                    return fail(p, "history[%zu][%d] must be a number 0 or more", k, s);
                history[k][s] = (int16_t)x;
            }
        }
    }
    grid_error e = {0};
    if (grid_match_restore(m, marked, scores, (const int16_t(*)[GRID_SEATS])history, (int)n, &e) < 0)
        return fail(p, "%s", e.msg);
    return 0;
}

static int grid_read_input(const json_t *root, grid_input *in, problem *p)
{
    grid_rules r;
    int dealer;
    card_t deck[GRID_DECK_MAX];
    uint8_t grids[GRID_SEATS][GRID_MAX_CELLS];
    grid_match m;
    const json_t *dv = json_object_get(root, "dealer");
    long long x = 0;
    if (grid_check_top_keys(root, p) < 0 || grid_read_rules(root, &r, p) < 0) return -1;
    if (dv && !int_in_range(dv, 0, GRID_SEATS - 1, &x)) return fail(p, "dealer must be a seat 0..2");
    dealer = (int)x;
    if (grid_read_deck(root, &r, dealer, deck, p) < 0 || grid_read_grids(root, &r, grids, p) < 0) return -1;
    grid_error e = {0};
    if (grid_match_init(&m, &r, (const uint8_t(*)[GRID_MAX_CELLS])grids, dealer, &e) < 0) return fail(p, "%s", e.msg);
    if (grid_read_progress(root, &m, p) < 0) return -1;
    grid_start(&in->st, &m, deck, NULL);
    in->actions = json_object_get(root, "actions");
    if (in->actions && !json_is_array(in->actions)) return fail(p, "actions must be an array");
    return 0;
}

/* ---- ContractGrid actions ---- */

static int grid_is_kind_field(const char *key)
{
    for (int k = 0; k < GRID_DO_COUNT; k++)
        if (strcmp(grid_kind_field[k], key) == 0) return 1;
    return 0;
}

/* Reads one action. *refusal gets a "cell" refusal message when a bid names a cell outside the
 * grid (the move is then reported as refused without reaching the engine). */
static int grid_read_action(const json_t *obj, size_t i, const grid_rules *r, int *seat, grid_action *a,
                            char *refusal, size_t rlen, problem *p)
{
    static const char *const common[] = {"seat", "do", "comment", "expect", NULL};
    if (!json_is_object(obj)) return fail(p, "action %zu must be an object", i);
    const json_t *dv = json_object_get(obj, "do");
    if (!dv) return fail(p, "action %zu: missing \"do\"", i);
    if (!json_is_string(dv)) return fail(p, "action %zu: \"do\" must be a string", i);
    int kind = -1;
    for (int k = 0; k < GRID_DO_COUNT; k++)
        if (strcmp(json_string_value(dv), grid_do_name((grid_do)k)) == 0) kind = k;
    if (kind < 0)
        return fail(p, "action %zu: unknown action \"%.40s\" (exclude, bid, play)", i, json_string_value(dv));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (key_in(key, common) || strcmp(key, grid_kind_field[kind]) == 0) continue;
        if (grid_is_kind_field(key)) return fail(p, "action %zu: \"%s\" takes no \"%s\"", i, grid_do_name(kind), key);
        return fail(p, "action %zu: unknown field \"%.40s\"", i, key);
    }
    const json_t *sv = json_object_get(obj, "seat");
    long long s;
    if (!sv) return fail(p, "action %zu: missing \"seat\"", i);
    if (!int_in_range(sv, 0, GRID_SEATS - 1, &s)) return fail(p, "action %zu: seat must be 0..2", i);
    *seat = (int)s;
    memset(a, 0, sizeof *a);
    a->kind = (uint8_t)kind;
    a->card = CARD_NONE;
    const json_t *fv = json_object_get(obj, grid_kind_field[kind]);
    if (!fv) return fail(p, "action %zu: \"%s\" needs \"%s\"", i, grid_do_name(kind), grid_kind_field[kind]);
    char where[48];
    snprintf(where, sizeof where, "action %zu", i);
    if (kind == GRID_DO_PLAY) return grid_read_card(fv, where, &a->card, p);
    if (kind == GRID_DO_EXCLUDE) {
        int suit;
        if (!json_is_string(fv) || suit_parse(json_string_value(fv), json_string_length(fv), &suit) < 0)
            return fail(p, "action %zu: suit must be a suit like \"H\", \"hearts\" or \"\xE2\x99\xA5\"", i);
        a->suit = (uint8_t)suit;
        return 0;
    }
    if (!json_is_array(fv) || json_array_size(fv) > GRID_MAX_CELLS)
        return fail(p, "action %zu: cells must be an array of at most %d cell names", i, GRID_MAX_CELLS);
    for (size_t k = 0; k < json_array_size(fv); k++) {
        const json_t *c = json_array_get(fv, k);
        int cell;
        char why[MSG_MAX];
        if (!json_is_string(c)) return fail(p, "action %zu: cells[%zu] must be a cell name like \"b3\"", i, k);
        int rc = grid_cell_parse(r, json_string_value(c), json_string_length(c), &cell, why, sizeof why);
        if (rc == -2) {
            if (!refusal[0]) snprintf(refusal, rlen, "%.120s", why);
            continue;
        }
        if (rc < 0) return fail(p, "action %zu: cells[%zu]: %s", i, k, why);
        a->cells[a->n++] = (uint8_t)cell;
    }
    return 0;
}

static json_t *grid_outcome_json(grid_code code, const char *message)
{
    if (code == GRID_OK) return json_pack("{s:b}", "ok", 1);
    char msg[GRID_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", message);
    text_make_line(msg);
    return json_pack("{s:b, s:s, s:s}", "ok", 0, "error", grid_code_name(code), "message", msg);
}

static int grid_run_actions(const json_t *actions, grid_state *st, json_t *results, problem *p)
{
    size_t i;
    json_t *obj;
    json_array_foreach((json_t *)actions, i, obj) {
        int seat = 0;
        grid_action a;
        char refusal[GRID_MSG_MAX] = "";
        if (grid_read_action(obj, i, &st->match.rules, &seat, &a, refusal, sizeof refusal, p) < 0) return -1;
        grid_error e = {0};
        grid_code code;
        if (refusal[0]) {
            code = GRID_E_CELL;
            snprintf(e.msg, sizeof e.msg, "%s", refusal);
        } else {
            code = grid_apply(st, seat, &a, NULL, &e);
        }
        if (json_array_append_new(results, grid_outcome_json(code, e.msg)) < 0) return fail(p, "out of memory");
    }
    return 0;
}

/* ---- ContractGrid output ---- */

static json_t *grid_card_json(card_t c) { return c < GRID_CARD_IDS ? json_string(grid_card_str(c)) : json_null(); }

static json_t *grid_suit_json(int suit)
{
    char s[2] = {suit_letter(suit), 0};
    return suit >= 0 && suit < SUIT_COUNT ? json_string(s) : json_null();
}

/* Cards in card order (♠ ♥ ♦ ♣, 7 to A), the joker last. */
static json_t *grid_cards_json(grid_set s)
{
    json_t *a = json_array();
    for (; s && a; s &= s - 1) a = append(a, grid_card_json((card_t)__builtin_ctzll(s)));
    return a;
}

/* Cells in index order (row by row from a1). */
static json_t *grid_cells_json(const grid_rules *r, uint16_t cells)
{
    json_t *a = json_array();
    char name[GRID_CELL_TEXT_MAX];
    for (int c = 0; c < GRID_MAX_CELLS && a; c++)
        if (cells >> c & 1) a = append(a, json_string(grid_cell_name(r, c, name)));
    return a;
}

static json_t *grid_move_json(const grid_rules *r, const grid_action *m)
{
    switch (m->kind) {
    case GRID_DO_EXCLUDE: return json_pack("{s:s, s:o}", "do", "exclude", "suit", grid_suit_json(m->suit));
    case GRID_DO_BID: {
        uint16_t cells = 0;
        for (int i = 0; i < m->n; i++) cells |= (uint16_t)(1u << m->cells[i]);
        return json_pack("{s:s, s:i, s:o}", "do", "bid", "choose", m->choose, "cells", grid_cells_json(r, cells));
    }
    default: return json_pack("{s:s, s:o}", "do", "play", "card", grid_card_json(m->card));
    }
}

static json_t *grid_legal_json(const grid_state *st)
{
    json_t *a = json_array();
    if (st->to_act >= GRID_SEATS) return a;
    grid_action moves[GRID_MAX_LEGAL];
    int n = grid_legal(st, st->to_act, moves);
    for (int k = 0; k < n && a; k++) a = append(a, grid_move_json(&st->match.rules, &moves[k]));
    return a;
}

static json_t *grid_tricks_json(const grid_state *st)
{
    json_t *a = json_array();
    for (int t = 0; t < GRID_HAND_MAX && a; t++) {
        const grid_trick *tr = &st->tricks[t];
        if (tr->n == 0) continue;
        json_t *seats = json_array(), *cards = json_array();
        for (int i = 0; i < tr->n && i < GRID_SEATS; i++) {
            seats = append(seats, seat_json(tr->seat[i]));
            cards = append(cards, grid_card_json(tr->card[i]));
        }
        a = append(a, json_pack("{s:o, s:o, s:o, s:o}", "leader", seat_json(tr->leader), "seats", seats, "cards",
                                cards, "winner", seat_json(tr->winner)));
    }
    return a;
}

static json_t *grid_values_json(uint16_t values)
{
    json_t *a = json_array();
    for (int c = 0; c < GRID_CONTRACTS && a; c++)
        if (values >> c & 1) a = append(a, json_string(grid_contract_name(c)));
    return a;
}

static json_t *grid_player_json(const grid_state *st, int s)
{
    const grid_match *m = &st->match;
    const grid_rules *r = &m->rules;
    int done = st->phase == GRID_PHASE_DONE;
    int excluded = -1;
    for (int su = 0; su < SUIT_COUNT; su++)
        if (st->excluder[su] == s) excluded = su;
    json_t *points = done ? json_pack("{s:i, s:i, s:i, s:i}", "unmarked", st->result.part[s][GRID_PART_UNMARKED],
                                      "bids", st->result.part[s][GRID_PART_BIDS], "lines",
                                      st->result.part[s][GRID_PART_LINES], "total",
                                      st->result.part[s][GRID_PART_TOTAL])
                          : json_null();
    return json_pack("{s:i, s:o, s:o, s:o, s:i, s:o, s:o, s:i, s:o, s:o}", "seat", s, "excluded",
                     grid_suit_json(excluded), "bid", st->bid_done >> s & 1 ? grid_cells_json(r, st->bids[s]) : json_null(),
                     "hand", grid_cards_json(st->hand[s]), "tricks", st->tricks_taken[s], "values",
                     done ? grid_values_json(st->result.values[s]) : json_null(), "points", points, "score",
                     (int)m->scores[s], "marked", grid_cells_json(r, m->marked[s]), "newly_marked",
                     done ? grid_cells_json(r, st->result.newly[s]) : json_null());
}

static json_t *grid_rules_json(const grid_rules *r)
{
    return json_pack("{s:i, s:i, s:i, s:i, s:b}", "cap", r->cap, "bids", r->bids, "deck", r->deck, "unmarked_point",
                     r->unmarked_point, "small", r->small);
}

static json_t *grid_state_json(const grid_state *st, json_t *results)
{
    const grid_match *m = &st->match;
    json_t *players = json_array(), *history = json_array(), *winners = json_null(), *places = json_null();
    for (int s = 0; s < GRID_SEATS && players; s++) players = append(players, grid_player_json(st, s));
    for (int k = 0; k < m->history_n && history; k++)
        history = append(history, json_pack("[iii]", m->history[k][0], m->history[k][1], m->history[k][2]));
    if (m->over) {
        winners = json_array();
        places = json_pack("[iii]", m->place[0], m->place[1], m->place[2]);
        for (int s = 0; s < GRID_SEATS && winners; s++)
            if (m->winners >> s & 1) winners = append(winners, json_integer(s));
    }
    int done = st->phase == GRID_PHASE_DONE;
    return json_pack("{s:o, s:s, s:o, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:[iii], s:o, s:o, s:b, s:o, s:o}",
                     "results", results, "phase", grid_phase_name((grid_phase)st->phase), "rules",
                     grid_rules_json(&m->rules), "dealer", st->dealer, "to_act", seat_json(st->to_act), "legal",
                     grid_legal_json(st), "trump", grid_suit_json(st->trump < SUIT_COUNT ? st->trump : -1),
                     "left_out", grid_card_json(st->left_out), "tricks", grid_tricks_json(st), "players", players,
                     "scores", (int)m->scores[0], (int)m->scores[1], (int)m->scores[2], "history", history,
                     "next_dealer", done && !m->over ? seat_json(m->dealer) : json_null(), "game_over", m->over,
                     "winner", winners, "places", places);
}

static int grid_replay(const json_t *root, char **out, problem *p)
{
    grid_input in;
    memset(&in, 0, sizeof in);
    if (grid_read_input(root, &in, p) < 0) return -1;
    json_t *results = json_array();
    if (!results) return fail(p, "out of memory");
    if (in.actions && grid_run_actions(in.actions, &in.st, results, p) < 0) {
        json_decref(results);
        return -1;
    }
    json_t *doc = grid_state_json(&in.st, results); /* takes results, even on failure */
    *out = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    return *out ? 0 : fail(p, "out of memory");
}

int replay_run(const char *in, size_t len, char **out, char *err, size_t errlen)
{
    problem p = {err, errlen};
    char *doc = NULL;
    if (err && errlen) err[0] = 0;
    if (!in) in = "", len = 0;
    json_error_t je;
    json_t *root = json_loadb(in, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        fail(&p, "not valid JSON (line %d, column %d): %s", je.line, je.column, je.text);
    } else {
        replay_input input;
        if (is_contractgrid(root)) grid_replay(root, &doc, &p);
        else if (read_input(root, &input, &p) == 0) replay_input_run(&input, &doc, &p);
        json_decref(root);
    }
    if (out) *out = doc;
    else free(doc);
    return doc ? 0 : 2;
}

int replay_304_position(const char *in, size_t len, g304_state *st, char *err, size_t errlen)
{
    problem p = {err, errlen};
    if (err && errlen) err[0] = 0;
    if (!in) in = "", len = 0;
    json_error_t je;
    json_t *root = json_loadb(in, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return fail(&p, "not valid JSON (line %d, column %d): %s", je.line, je.column, je.text), 2;
    replay_input input;
    caps_solver *w = NULL;
    json_t *results = NULL;
    int rc = 2;
    if (is_contractgrid(root)) {
        fail(&p, "this reads hands of 304 only, not ContractGrid");
        goto done;
    }
    if (read_input(root, &input, &p) < 0) goto done;
    g304_events last;
    g304_start(st, &input.rules, input.dealer, input.tokens, input.deck, NULL);
    w = caps_solver_new(0);
    results = json_array();
    if (!w || !results) {
        fail(&p, "out of memory");
        goto done;
    }
    if (input.actions && run_actions(input.actions, w, st, &last, results, &p) < 0) goto done;
    size_t i;
    json_t *r;
    json_array_foreach(results, i, r) {
        if (json_is_true(json_object_get(r, "ok"))) continue;
        fail(&p, "action %zu was refused (%s): %s", i, json_string_value(json_object_get(r, "error")),
             json_string_value(json_object_get(r, "message")));
        goto done;
    }
    rc = 0;
done:
    json_decref(results);
    caps_solver_free(w);
    json_decref(root);
    return rc;
}

int replay_304_action(const g304_rules *r, const char *text, size_t len, int *seat, g304_action *a, char *err,
                      size_t errlen)
{
    problem p = {err, errlen};
    if (err && errlen) err[0] = 0;
    json_error_t je;
    json_t *obj = json_loadb(text ? text : "", text ? len : 0, JSON_REJECT_DUPLICATES, &je);
    if (!obj) return fail(&p, "not valid JSON (column %d): %s", je.column, je.text), 2;
    int rc = read_action(obj, r, 0, seat, a, &p) < 0 ? 2 : 0;
    json_decref(obj);
    return rc;
}
