/* test_solve.c — `cardroom solve` (bot/solve.h) on positions whose value is worked out by hand, and its
 * refusals.
 *
 * Each file in tests/scenarios/solve/ is replay input with an "expect" object: the seat to act, the
 * value (the final card points of both teams under best play), the team that can still win every
 * trick, and every legal move with its points, whether the bid is made and its Caps team. The files'
 * descriptions tell how the numbers follow from the cards. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "solve.h"
#include "test_file.h"

/* Every field of want must be in got with an equal value. */
static void expect_fields(const char *file, const json_t *want, const json_t *got)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)want, key, v) {
        json_t *g = json_object_get(got, key);
        char *ws = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY), *gs = g ? json_dumps(g, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        cr_expect(g && json_equal(v, g), "%s: %s is %s, expected %s", file, key, gs ? gs : "missing", ws);
        free(ws);
        free(gs);
    }
}

Test(solve, hand_worked_positions)
{
    const char *dir = SCENARIO_DIR "/solve";
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        char *in = test_read_file(path, &len), *out = NULL, err[256];
        int rc = solve_run(in, len, &out, err, sizeof err);
        cr_assert_eq(rc, 0, "%s: %s", e->d_name, err);
        json_t *doc = json_loads(in, 0, NULL), *want = json_object_get(doc, "expect");
        json_t *got = json_loads(out, 0, NULL);
        cr_assert_not_null(want, "%s has no expect", e->d_name);
        cr_assert_not_null(got, "%s: the output is not JSON", e->d_name);
        expect_fields(e->d_name, want, got);
        json_decref(got);
        json_decref(doc);
        free(in);
        free(out);
        files++;
    }
    closedir(d);
    cr_assert_geq(files, 4);
}

static void expect_refused(const char *input, const char *words)
{
    char *out = NULL, err[256] = "";
    int rc = solve_run(input, strlen(input), &out, err, sizeof err);
    cr_expect_eq(rc, 2, "accepted: %s", input);
    cr_expect_null(out);
    cr_expect(strstr(err, words) != NULL, "message \"%s\" lacks \"%s\"", err, words);
}

#define HANDS                                                                                                  \
    "\"hands\":[[\"JH\",\"KH\",\"JD\",\"KD\",\"9S\",\"JC\",\"JS\",\"8C\"],[\"9H\",\"QH\",\"9D\",\"QD\",\"AS\"," \
    "\"TC\",\"7S\",\"9C\"],[\"AH\",\"8H\",\"AD\",\"8D\",\"TS\",\"QC\",\"AC\",\"KC\"],[\"TH\",\"7H\",\"TD\","     \
    "\"7D\",\"KS\",\"7C\",\"8S\",\"QS\"]]"

Test(solve, refusals)
{
    expect_refused("{\"game\":\"304\",\"dealer\":3," HANDS "}", "not in play (phase bid4)");
    expect_refused("{\"game\":\"304\",\"dealer\":3," HANDS ",\"actions\":[{\"seat\":0,\"do\":\"bid\",\"amount\":160},"
                   "{\"seat\":2,\"do\":\"pass\"}]}",
                   "action 1 was refused (turn)");
    expect_refused("{\"game\":\"304\",\"dealer\":3}", "missing \"hands\"");
    expect_refused("{\"game\":\"contractgrid\"}", "304 only");
    expect_refused("{\"game\":", "not valid JSON");
    expect_refused("", "not valid JSON");
}

/* The command line: a position from standard input, and exit status 2 for a refusal. */
Test(solve, command_line)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s solve - < %s/solve/solve-01-throw-the-ace.json", CARDROOM_BIN, SCENARIO_DIR);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char line[4096] = "";
    cr_assert_not_null(fgets(line, sizeof line, p));
    cr_assert_eq(pclose(p), 0);
    cr_assert(strstr(line, "\"value\":[279,25]") != NULL, "%s", line);
    snprintf(cmd, sizeof cmd, "echo '{\"game\":\"304\"}' | %s solve - 2>/dev/null", CARDROOM_BIN);
    int st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
}
