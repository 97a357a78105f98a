/* test_replay.c — `cardroom replay` input checking and output shape (README "cardroom replay"):
 * malformed inputs are refused with one line naming the problem; well-formed ones give every
 * output key in order, refused moves are reported and annotations are ignored. The rules of
 * play themselves are tested by the scenario files. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

/* Dealer 0: seat 1 (dealer's right) speaks first and holds JS QS KS AS in its first batch. */
#define HANDS                                                                                                     \
    "\"hands\":[[\"7S\",\"8S\",\"9S\",\"TS\",\"7H\",\"8H\",\"9H\",\"TH\"],"                                       \
    "[\"JS\",\"QS\",\"KS\",\"AS\",\"JH\",\"QH\",\"KH\",\"AH\"],"                                                  \
    "[\"7D\",\"8D\",\"9D\",\"TD\",\"7C\",\"8C\",\"9C\",\"TC\"],"                                                  \
    "[\"JD\",\"QD\",\"KD\",\"AD\",\"JC\",\"QC\",\"KC\",\"AC\"]]"
#define GAME "{\"game\":\"304\"," HANDS
#define SEED "\"seed\":\"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\""

static void init_sodium(void) { cr_assert_geq(sodium_init(), 0); }

TestSuite(replay, .init = init_sodium);

typedef struct {
    const char *name;
    const char *input;
    const char *want; /* part of the message */
} bad_case;

static const bad_case bad_cases[] = {
    {"not JSON", "hello", "not valid JSON"},
    {"empty", "", "not valid JSON"},
    {"truncated", "{\"game\":\"304\",\"hands\":[[\"JS\"", "not valid JSON"},
    {"trailing garbage", GAME "} x", "not valid JSON"},
    {"NUL in a string", GAME ",\"name\":\"a\\u0000b\"}", "not valid JSON"},
    {"duplicate key", GAME ",\"dealer\":0,\"dealer\":1}", "duplicate"},
    {"not an object", "[1,2]", "JSON object"},
    {"game poker", "{\"game\":\"poker\"," HANDS "}", "\"poker\""},
    {"game a number", "{\"game\":304," HANDS "}", "game"},
    {"missing game", "{" HANDS "}", "missing \"game\""},
    {"missing hands", "{\"game\":\"304\"}", "missing \"hands\""},
    {"hands and seed", GAME "," SEED "}", "not both"},
    {"hands not 4", "{\"game\":\"304\",\"hands\":[[],[],[]]}", "hands must be"},
    {"7 cards",
     "{\"game\":\"304\",\"hands\":[[\"7S\",\"8S\",\"9S\",\"TS\",\"7H\",\"8H\",\"9H\",\"TH\"],"
     "[\"JS\",\"QS\",\"KS\",\"AS\",\"JH\",\"QH\",\"KH\",\"AH\"],"
     "[\"7D\",\"8D\",\"9D\",\"TD\",\"7C\",\"8C\",\"9C\"],"
     "[\"JD\",\"QD\",\"KD\",\"AD\",\"JC\",\"QC\",\"KC\",\"AC\"]]}",
     "hands[2]"},
    {"duplicate card",
     "{\"game\":\"304\",\"hands\":[[\"7S\",\"8S\",\"9S\",\"TS\",\"7H\",\"8H\",\"9H\",\"TH\"],"
     "[\"JS\",\"QS\",\"KS\",\"AS\",\"JH\",\"QH\",\"KH\",\"AH\"],"
     "[\"7D\",\"8D\",\"9D\",\"TD\",\"7C\",\"8C\",\"9C\",\"TC\"],"
     "[\"JD\",\"QD\",\"KD\",\"AD\",\"JC\",\"QC\",\"KC\",\"j\xE2\x99\xA0\"]]}",
     "hands: card JS appears twice"},
    {"card ZZ in hands",
     "{\"game\":\"304\",\"hands\":[[\"7S\",\"8S\",\"9S\",\"TS\",\"7H\",\"8H\",\"9H\",\"TH\"],"
     "[\"JS\",\"QS\",\"KS\",\"AS\",\"ZZ\",\"QH\",\"KH\",\"AH\"],"
     "[\"7D\",\"8D\",\"9D\",\"TD\",\"7C\",\"8C\",\"9C\",\"TC\"],"
     "[\"JD\",\"QD\",\"KD\",\"AD\",\"JC\",\"QC\",\"KC\",\"AC\"]]}",
     "hands[1][4]: 'ZZ' is not a card"},
    {"card a number",
     "{\"game\":\"304\",\"hands\":[[7,\"8S\",\"9S\",\"TS\",\"7H\",\"8H\",\"9H\",\"TH\"],"
     "[\"JS\",\"QS\",\"KS\",\"AS\",\"JH\",\"QH\",\"KH\",\"AH\"],"
     "[\"7D\",\"8D\",\"9D\",\"TD\",\"7C\",\"8C\",\"9C\",\"TC\"],"
     "[\"JD\",\"QD\",\"KD\",\"AD\",\"JC\",\"QC\",\"KC\",\"AC\"]]}",
     "hands[0][0]"},
    {"seed too short", "{\"game\":\"304\",\"seed\":\"00ff\"}", "seed"},
    {"seed not hex", "{\"game\":\"304\",\"seed\":\"0g0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"}",
     "seed"},
    {"unknown top-level field", GAME ",\"foo\":1}", "unknown field \"foo\""},
    {"dealer 4", GAME ",\"dealer\":4}", "dealer"},
    {"dealer a string", GAME ",\"dealer\":\"0\"}", "dealer"},
    {"tokens of three", GAME ",\"tokens\":[1,2,3]}", "tokens"},
    {"tokens too many", GAME ",\"tokens\":[11,1001]}", "tokens"},
    {"tokens negative", GAME ",\"tokens\":[-1,11]}", "tokens"},
    {"rules not an object", GAME ",\"rules\":[]}", "rules"},
    {"unknown rule option", GAME ",\"rules\":{\"jokers\":\"yes\"}}", "rules: "},
    {"bad option value", GAME ",\"rules\":{\"caps\":\"sometimes\"}}", "rules: "},
    {"bad option number", GAME ",\"rules\":{\"step_above_200\":7}}", "rules: "},
    {"option of wrong type", GAME ",\"rules\":{\"caps\":[1]}}", "rules: option \"caps\""},
    {"actions not an array", GAME ",\"actions\":{}}", "actions must be an array"},
    {"action not an object", GAME ",\"actions\":[3]}", "action 0 must be an object"},
    {"unknown action", GAME ",\"actions\":[{\"seat\":1,\"do\":\"pass\"},{\"seat\":1,\"do\":\"jump\"}]}",
     "action 1: unknown action \"jump\""},
    {"do not a string", GAME ",\"actions\":[{\"seat\":1,\"do\":1}]}", "action 0: \"do\""},
    {"action missing do", GAME ",\"actions\":[{\"seat\":1}]}", "action 0: missing \"do\""},
    {"action missing seat", GAME ",\"actions\":[{\"do\":\"pass\"}]}", "action 0: missing \"seat\""},
    {"seat 4", GAME ",\"actions\":[{\"seat\":4,\"do\":\"pass\"}]}", "action 0: seat"},
    {"seat negative", GAME ",\"actions\":[{\"seat\":-1,\"do\":\"pass\"}]}", "action 0: seat"},
    {"seat a string", GAME ",\"actions\":[{\"seat\":\"1\",\"do\":\"pass\"}]}", "action 0: seat"},
    {"unknown action field", GAME ",\"actions\":[{\"seat\":1,\"do\":\"pass\",\"foo\":2}]}",
     "action 0: unknown field \"foo\""},
    {"field of another kind", GAME ",\"actions\":[{\"seat\":1,\"do\":\"pass\",\"amount\":160}]}", "action 0: \"pass\""},
    {"bid without amount", GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\"}]}", "action 0: \"bid\" needs \"amount\""},
    {"bid amount an object", GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":{}}]}", "action 0: amount"},
    {"bid amount a fraction", GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":160.5}]}", "action 0: amount"},
    {"bid amount a word", GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":\"lots\"}]}", "action 0: amount"},
    {"bid amount too large", GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":5000}]}", "out of range"},
    {"bid amount huge", GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":99999999999999999999}]}",
     "not valid JSON"},
    {"play card ZZ", GAME ",\"actions\":[{\"seat\":1,\"do\":\"play\",\"card\":\"ZZ\"}]}", "action 0: 'ZZ' is not a card"},
    {"play without card", GAME ",\"actions\":[{\"seat\":1,\"do\":\"play\"}]}", "needs \"card\""},
    {"trump card a number", GAME ",\"actions\":[{\"seat\":1,\"do\":\"trump\",\"card\":12}]}", "action 0: a card"},
    {"cut at 41", GAME ",\"actions\":[{\"seat\":3,\"do\":\"cut\",\"at\":41}]}", "action 0: at"},
    {"caps order not an array", GAME ",\"actions\":[{\"seat\":1,\"do\":\"caps\",\"order\":\"JS\"}]}", "action 0: order"},
    {"caps order empty", GAME ",\"actions\":[{\"seat\":1,\"do\":\"caps\",\"order\":[]}]}", "action 0: order"},
    {"caps order bad card", GAME ",\"actions\":[{\"seat\":1,\"do\":\"caps\",\"order\":[\"JS\",\"XX\"]}]}",
     "action 0: order[1]: 'XX'"},
    {"malformed after good actions",
     GAME ",\"actions\":[{\"seat\":1,\"do\":\"pass\"},{\"seat\":2,\"do\":\"pass\"},{\"seat\":3,\"do\":\"pass\",\"x\":1}]}",
     "action 2: unknown field \"x\""},
    {"key with a newline", GAME ",\"fo\\no\":1}", "unknown field \"fo?o\""},
};

Test(replay, malformed_inputs)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        const bad_case *c = &bad_cases[i];
        char err[256] = "", *out = (char *)"untouched";
        int rc = replay_run(c->input, strlen(c->input), &out, err, sizeof err);
        cr_expect_eq(rc, 2, "%s: returned %d", c->name, rc);
        cr_expect_null(out, "%s: output set on failure", c->name);
        cr_expect(strstr(err, c->want) != NULL, "%s: message \"%s\" lacks \"%s\"", c->name, err, c->want);
        cr_expect(strchr(err, '\n') == NULL, "%s: message has more than one line", c->name);
        if (rc == 0) free(out);
    }
}

Test(replay, error_buffer_may_be_small_or_absent)
{
    char tiny[6];
    char *out = NULL;
    cr_expect_eq(replay_run("{}", 2, &out, tiny, sizeof tiny), 2);
    cr_expect_lt(strlen(tiny), sizeof tiny);
    cr_expect_eq(replay_run("{}", 2, &out, NULL, 0), 2);
    cr_expect_eq(replay_run(NULL, 0, &out, NULL, 0), 2);
}

/* Runs a well-formed input and returns the parsed output. */
static json_t *replay_ok(const char *input)
{
    char err[256] = "", *out = NULL;
    int rc = replay_run(input, strlen(input), &out, err, sizeof err);
    cr_assert_eq(rc, 0, "replay refused: %s", err);
    cr_assert_not_null(out);
    cr_expect(strchr(out, '\n') == NULL, "output is one line");
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    cr_assert_not_null(doc, "output is not JSON: %s\n%s", je.text, out);
    free(out);
    return doc;
}

static json_int_t int_at(const json_t *doc, const char *key)
{
    const json_t *v = json_object_get(doc, key);
    cr_assert(json_is_integer(v), "\"%s\" is not an integer", key);
    return json_integer_value(v);
}

static const char *str_at(const json_t *doc, const char *key)
{
    const json_t *v = json_object_get(doc, key);
    cr_assert(json_is_string(v), "\"%s\" is not a string", key);
    return json_string_value(v);
}

Test(replay, output_keys_in_order)
{
    static const char *const keys[] = {"results", "phase",  "dealer", "to_act", "legal", "trump_maker",
                                       "bid",     "bidder", "trump",  "indicator", "open", "hands",
                                       "tricks",  "points", "tokens", "caps_now", "result"};
    json_t *doc = replay_ok(GAME "}");
    size_t k = 0;
    for (void *it = json_object_iter(doc); it; it = json_object_iter_next(doc, it), k++) {
        cr_assert_lt(k, sizeof keys / sizeof *keys, "extra key %s", json_object_iter_key(it));
        cr_expect_str_eq(json_object_iter_key(it), keys[k]);
    }
    cr_expect_eq(k, sizeof keys / sizeof *keys);
    json_decref(doc);
}

Test(replay, start_of_hand)
{
    for (int dealer = 0; dealer < 4; dealer++) {
        char input[1024];
        snprintf(input, sizeof input, GAME ",\"dealer\":%d}", dealer);
        json_t *doc = replay_ok(input);
        cr_expect_str_eq(str_at(doc, "phase"), "bid4");
        cr_expect_eq(int_at(doc, "dealer"), dealer);
        cr_expect_eq(int_at(doc, "to_act"), (dealer + 1) % 4);
        cr_expect_eq(json_array_size(json_object_get(doc, "results")), 0u);
        cr_expect(json_is_null(json_object_get(doc, "trump_maker")));
        cr_expect(json_is_null(json_object_get(doc, "bid")));
        cr_expect(json_is_null(json_object_get(doc, "bidder")));
        cr_expect(json_is_null(json_object_get(doc, "trump")));
        cr_expect(json_is_null(json_object_get(doc, "indicator")));
        cr_expect(json_is_false(json_object_get(doc, "open")));
        cr_expect(json_is_null(json_object_get(doc, "result")));
        cr_expect_eq(json_array_size(json_object_get(doc, "tricks")), 0u);
        const json_t *hands = json_object_get(doc, "hands");
        cr_assert_eq(json_array_size(hands), 4u);
        for (size_t s = 0; s < 4; s++) cr_expect_eq(json_array_size(json_array_get(hands, s)), 4u, "seat %zu", s);
        const json_t *tokens = json_object_get(doc, "tokens");
        cr_expect_eq(json_integer_value(json_array_get(tokens, 0)), 11);
        cr_expect_eq(json_integer_value(json_array_get(tokens, 1)), 11);
        json_decref(doc);
    }
}

Test(replay, hands_in_card_order)
{
    json_t *doc = replay_ok(GAME "}");
    const json_t *seat1 = json_array_get(json_object_get(doc, "hands"), 1);
    static const char *const want[] = {"JS", "QS", "KS", "AS"};
    for (size_t i = 0; i < 4; i++) cr_expect_str_eq(json_string_value(json_array_get(seat1, i)), want[i]);
    json_decref(doc);
}

Test(replay, legal_bids_at_start)
{
    json_t *doc = replay_ok(GAME "}");
    const json_t *legal = json_object_get(doc, "legal");
    cr_assert_gt(json_array_size(legal), 1u);
    const json_t *first = json_array_get(legal, 0);
    cr_expect_str_eq(json_string_value(json_object_get(first, "do")), "bid");
    cr_expect_eq(json_integer_value(json_object_get(first, "amount")), 160);
    int passes = 0;
    size_t i;
    json_t *m;
    json_array_foreach(legal, i, m) passes += strcmp(json_string_value(json_object_get(m, "do")), "pass") == 0;
    cr_expect_eq(passes, 1);
    json_decref(doc);
}

Test(replay, tokens_and_rules)
{
    json_t *doc = replay_ok(GAME ",\"rules\":{\"start_tokens\":5,\"cut\":false,\"caps\":\"strict\"}}");
    const json_t *tokens = json_object_get(doc, "tokens");
    cr_expect_eq(json_integer_value(json_array_get(tokens, 0)), 5, "default tokens follow start_tokens");
    json_decref(doc);
    doc = replay_ok(GAME ",\"rules\":{\"start_tokens\":5},\"tokens\":[3,19]}");
    tokens = json_object_get(doc, "tokens");
    cr_expect_eq(json_integer_value(json_array_get(tokens, 0)), 3);
    cr_expect_eq(json_integer_value(json_array_get(tokens, 1)), 19);
    json_decref(doc);
}

Test(replay, cut_option_starts_with_cut)
{
    json_t *doc = replay_ok(GAME ",\"rules\":{\"cut\":true}}");
    cr_expect_str_eq(str_at(doc, "phase"), "cut");
    cr_expect_eq(int_at(doc, "to_act"), 3, "dealer's left cuts");
    json_decref(doc);
}

Test(replay, refused_action_reported)
{
    /* Seat 0 is the dealer: it is seat 1's turn. Replay goes on after the refusal. */
    json_t *doc = replay_ok(GAME ",\"actions\":[{\"seat\":0,\"do\":\"bid\",\"amount\":160},"
                                 "{\"seat\":1,\"do\":\"bid\",\"amount\":160}]}");
    const json_t *results = json_object_get(doc, "results");
    cr_assert_eq(json_array_size(results), 2u);
    const json_t *r0 = json_array_get(results, 0), *r1 = json_array_get(results, 1);
    cr_expect(json_is_false(json_object_get(r0, "ok")));
    cr_expect_str_eq(str_at(r0, "error"), "turn");
    cr_expect_gt(strlen(str_at(r0, "message")), 0u);
    cr_expect_eq(json_object_size(r0), 3u);
    cr_expect(json_is_true(json_object_get(r1, "ok")));
    cr_expect_eq(json_object_size(r1), 1u);
    cr_expect_eq(int_at(doc, "bid"), 160);
    cr_expect_eq(int_at(doc, "bidder"), 1);
    cr_expect_eq(int_at(doc, "to_act"), 2);
    json_decref(doc);
}

Test(replay, engine_refuses_odd_amounts)
{
    json_t *doc = replay_ok(GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":165},"
                                 "{\"seat\":1,\"do\":\"bid\",\"amount\":1000}]}");
    const json_t *results = json_object_get(doc, "results");
    for (size_t i = 0; i < 2; i++) {
        const json_t *r = json_array_get(results, i);
        cr_expect(json_is_false(json_object_get(r, "ok")), "result %zu", i);
        cr_expect_str_eq(str_at(r, "error"), "amount");
    }
    cr_expect(json_is_null(json_object_get(doc, "bid")));
    json_decref(doc);
}

Test(replay, annotations_ignored)
{
    json_t *plain = replay_ok(GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":\"PCC\"}]}");
    json_t *noted = replay_ok(GAME ",\"comment\":\"c\",\"description\":[1,2],\"name\":{\"x\":1},\"expect\":{\"phase\":\"x\"},"
                                   "\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":\"pcc\",\"comment\":\"why\","
                                   "\"expect\":{\"ok\":true}}]}");
    cr_expect(json_equal(plain, noted), "annotations changed the output");
    json_decref(plain);
    json_decref(noted);
}

Test(replay, bidding_to_trump_and_beyond)
{
    json_t *doc = replay_ok(GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":160},{\"seat\":2,\"do\":\"pass\"},"
                                 "{\"seat\":3,\"do\":\"pass\"},{\"seat\":0,\"do\":\"pass\"}]}");
    cr_expect_str_eq(str_at(doc, "phase"), "trump");
    cr_expect_eq(int_at(doc, "to_act"), 1);
    cr_expect_eq(int_at(doc, "trump_maker"), 1);
    const json_t *legal = json_object_get(doc, "legal");
    cr_expect_eq(json_array_size(legal), 4u, "any of the four cards may be the indicator");
    cr_expect_str_eq(str_at(json_array_get(legal, 0), "do"), "trump");
    cr_expect_str_eq(str_at(json_array_get(legal, 0), "card"), "JS");
    json_decref(doc);

    doc = replay_ok(GAME ",\"actions\":[{\"seat\":1,\"do\":\"bid\",\"amount\":160},{\"seat\":2,\"do\":\"pass\"},"
                         "{\"seat\":3,\"do\":\"pass\"},{\"seat\":0,\"do\":\"pass\"},"
                         "{\"seat\":1,\"do\":\"trump\",\"card\":\"q\xE2\x99\xA0\"}]}");
    cr_expect_str_eq(str_at(doc, "phase"), "bid8");
    cr_expect_str_eq(str_at(doc, "indicator"), "QS");
    cr_expect(json_is_null(json_object_get(doc, "trump")), "the trump stays secret");
    const json_t *hands = json_object_get(doc, "hands");
    cr_expect_eq(json_array_size(json_array_get(hands, 1)), 7u, "the indicator lies on the table");
    cr_expect_eq(json_array_size(json_array_get(hands, 0)), 8u);
    json_decref(doc);
}

Test(replay, seed_deals)
{
    json_t *a = replay_ok("{\"game\":\"304\"," SEED "}");
    json_t *b = replay_ok("{\"game\":\"304\"," SEED "}");
    cr_expect(json_equal(a, b));
    /* Seed bytes 0..31 put KD KS 8S AD on top (test_deal.c): the first batch of seat 1,
     * the dealer's right; hands are listed in card order. */
    const json_t *seat1 = json_array_get(json_object_get(a, "hands"), 1);
    static const char *const want[] = {"8S", "KS", "KD", "AD"};
    cr_assert_eq(json_array_size(seat1), 4u);
    for (size_t i = 0; i < 4; i++) cr_expect_str_eq(json_string_value(json_array_get(seat1, i)), want[i]);
    json_decref(a);
    json_decref(b);
}

Test(replay, result_shape_after_all_pass)
{
    static const char *const keys[] = {"end",    "made",   "caps",        "wrong_caps", "caps_text", "spoilt",
                                       "tokens", "change", "next_dealer", "match_over", "winner"};
    json_t *doc = replay_ok(GAME ",\"actions\":[{\"seat\":1,\"do\":\"pass\"},{\"seat\":2,\"do\":\"pass\"},"
                                 "{\"seat\":3,\"do\":\"pass\"},{\"seat\":0,\"do\":\"pass\"}]}");
    cr_expect_str_eq(str_at(doc, "phase"), "done");
    cr_expect(json_is_null(json_object_get(doc, "to_act")));
    cr_expect_eq(json_array_size(json_object_get(doc, "legal")), 0u);
    const json_t *r = json_object_get(doc, "result");
    cr_assert(json_is_object(r));
    size_t k = 0;
    for (void *it = json_object_iter((json_t *)r); it; it = json_object_iter_next((json_t *)r, it), k++) {
        cr_assert_lt(k, sizeof keys / sizeof *keys, "extra result key %s", json_object_iter_key(it));
        cr_expect_str_eq(json_object_iter_key(it), keys[k]);
    }
    cr_expect_eq(k, sizeof keys / sizeof *keys);
    cr_expect_str_eq(str_at(r, "end"), "all_pass");
    cr_expect(json_is_null(json_object_get(r, "made")));
    cr_expect(json_is_null(json_object_get(r, "caps")));
    cr_expect(json_is_null(json_object_get(r, "wrong_caps")));
    cr_expect(json_is_null(json_object_get(r, "caps_text")));
    cr_expect(json_is_null(json_object_get(r, "spoilt")));
    cr_expect(json_is_null(json_object_get(r, "winner")));
    cr_expect(json_is_false(json_object_get(r, "match_over")));
    cr_expect_eq(int_at(r, "next_dealer"), 1);
    json_decref(doc);
}

/* Seat 1 makes spades trump; seats 0 and 2 (the opponents) hold no spade. */
#define SPOILT_GAME                                                                                               \
    "{\"game\":\"304\",\"hands\":[[\"7D\",\"8D\",\"9D\",\"TD\",\"7C\",\"8C\",\"9C\",\"TC\"],"                     \
    "[\"JS\",\"QS\",\"KS\",\"AS\",\"JH\",\"QH\",\"KH\",\"AH\"],"                                                  \
    "[\"JD\",\"QD\",\"KD\",\"AD\",\"JC\",\"QC\",\"KC\",\"AC\"],"                                                  \
    "[\"7S\",\"8S\",\"9S\",\"TS\",\"7H\",\"8H\",\"9H\",\"TH\"]]"
#define TO_PLAY                                                                                                   \
    "{\"seat\":1,\"do\":\"bid\",\"amount\":160},{\"seat\":2,\"do\":\"pass\"},{\"seat\":3,\"do\":\"pass\"},"       \
    "{\"seat\":0,\"do\":\"pass\"},{\"seat\":1,\"do\":\"trump\",\"card\":\"QS\"},{\"seat\":1,\"do\":\"pass\"},"     \
    "{\"seat\":2,\"do\":\"pass\"},{\"seat\":3,\"do\":\"pass\"},{\"seat\":0,\"do\":\"pass\"}"

Test(replay, spoilt_declared_and_automatic)
{
    json_t *doc = replay_ok(SPOILT_GAME ",\"actions\":[" TO_PLAY ",{\"seat\":0,\"do\":\"spoilt\"}]}");
    const json_t *spoilt = json_object_get(json_object_get(doc, "result"), "spoilt");
    cr_expect_eq(int_at(spoilt, "seat"), 0);
    cr_expect(json_is_true(json_object_get(spoilt, "correct")));
    json_decref(doc);

    doc = replay_ok(SPOILT_GAME ",\"rules\":{\"spoilt\":\"auto\"},\"actions\":[" TO_PLAY "]}");
    const json_t *r = json_object_get(doc, "result");
    cr_assert(json_is_object(r), "spoilt = auto voids the hand when the eight-card round ends");
    cr_expect_str_eq(str_at(r, "end"), "spoilt");
    spoilt = json_object_get(r, "spoilt");
    cr_expect(json_is_null(json_object_get(spoilt, "seat")));
    cr_expect(json_is_true(json_object_get(spoilt, "correct")));
    json_decref(doc);
}

Test(replay, caps_result)
{
    /* Seat 1 holds the four best spades and hearts and calls Caps before the first lead;
     * the others play their lowest legal cards. */
    json_t *doc = replay_ok(
        "{\"game\":\"304\",\"hands\":[[\"7S\",\"8S\",\"QS\",\"KS\",\"7H\",\"8H\",\"QH\",\"KH\"],"
        "[\"JS\",\"9S\",\"AS\",\"TS\",\"JH\",\"9H\",\"AH\",\"TH\"],"
        "[\"7D\",\"8D\",\"9D\",\"TD\",\"JD\",\"QD\",\"KD\",\"AD\"],"
        "[\"7C\",\"8C\",\"9C\",\"TC\",\"JC\",\"QC\",\"KC\",\"AC\"]],\"actions\":["
        "{\"seat\":1,\"do\":\"bid\",\"amount\":160},{\"seat\":2,\"do\":\"pass\"},{\"seat\":3,\"do\":\"pass\"},"
        "{\"seat\":0,\"do\":\"pass\"},{\"seat\":1,\"do\":\"trump\",\"card\":\"TS\"},{\"seat\":1,\"do\":\"pass\"},"
        "{\"seat\":2,\"do\":\"pass\"},{\"seat\":3,\"do\":\"pass\"},{\"seat\":0,\"do\":\"pass\"},"
        "{\"seat\":1,\"do\":\"caps\",\"order\":[\"JH\",\"9H\",\"AH\",\"TH\",\"JS\",\"9S\",\"AS\",\"TS\"]},"
        "{\"seat\":2,\"do\":\"play\",\"card\":\"7D\"},{\"seat\":3,\"do\":\"play\",\"card\":\"7C\"},"
        "{\"seat\":0,\"do\":\"play\",\"card\":\"7H\"},{\"seat\":2,\"do\":\"play\",\"card\":\"8D\"},"
        "{\"seat\":3,\"do\":\"play\",\"card\":\"8C\"},{\"seat\":0,\"do\":\"play\",\"card\":\"8H\"},"
        "{\"seat\":2,\"do\":\"play\",\"card\":\"9D\"},{\"seat\":3,\"do\":\"play\",\"card\":\"9C\"},"
        "{\"seat\":0,\"do\":\"play\",\"card\":\"QH\"},{\"seat\":2,\"do\":\"play\",\"card\":\"TD\"},"
        "{\"seat\":3,\"do\":\"play\",\"card\":\"TC\"},{\"seat\":0,\"do\":\"play\",\"card\":\"KH\"},"
        "{\"seat\":2,\"do\":\"play\",\"card\":\"JD\"},{\"seat\":3,\"do\":\"play\",\"card\":\"JC\"},"
        "{\"seat\":0,\"do\":\"play\",\"card\":\"7S\"},{\"seat\":2,\"do\":\"play\",\"card\":\"QD\"},"
        "{\"seat\":3,\"do\":\"play\",\"card\":\"QC\"},{\"seat\":0,\"do\":\"play\",\"card\":\"8S\"},"
        "{\"seat\":2,\"do\":\"play\",\"card\":\"KD\"},{\"seat\":3,\"do\":\"play\",\"card\":\"KC\"},"
        "{\"seat\":0,\"do\":\"play\",\"card\":\"QS\"},{\"seat\":2,\"do\":\"play\",\"card\":\"AD\"},"
        "{\"seat\":3,\"do\":\"play\",\"card\":\"AC\"},{\"seat\":0,\"do\":\"play\",\"card\":\"KS\"}]}");
    const json_t *results = json_object_get(doc, "results");
    size_t i;
    json_t *res;
    json_array_foreach(results, i, res) cr_expect(json_is_true(json_object_get(res, "ok")), "action %zu refused", i);
    cr_expect_eq(json_array_size(json_object_get(doc, "tricks")), 8u);
    const json_t *r = json_object_get(doc, "result");
    cr_assert(json_is_object(r));
    cr_expect_str_eq(str_at(r, "end"), "played");
    cr_expect(json_is_true(json_object_get(r, "made")));
    const json_t *caps = json_object_get(r, "caps");
    cr_assert(json_is_object(caps));
    cr_expect_eq(int_at(caps, "seat"), 1);
    cr_expect(json_is_true(json_object_get(caps, "won")));
    cr_expect(json_is_integer(json_object_get(caps, "bonus")));
    cr_expect(json_is_false(json_object_get(caps, "broken")));
    const json_t *points = json_object_get(doc, "points");
    cr_expect_eq(json_integer_value(json_array_get(points, 1)), 304);
    json_decref(doc);
}
