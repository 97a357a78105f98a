/* test_scenarios.c — runs the scenario files of both games: tests/scenarios/304/,
 * tests/scenarios/304six/ (six-player 304, the R-SIX- ids) and tests/scenarios/grid/
 * (ContractGrid), each named <RULE-ID>-<NN>-<slug>.json.
 *
 * Each file is a `cardroom replay` input plus annotations, written from shared/rules/304.md
 * (or shared/rules/contractgrid.md) and the README, independently of the engine. For every file (in name order) the test runs
 * replay_run() on the file's text and checks:
 *   - per action: "expect" is "ok", "refused" (any error) or an error code (results[i]);
 *   - top level: "expect" is a subset of the replay output (objects: listed keys recursively;
 *     arrays: same length, element by element; scalars: equal), or {"exit": 2} for malformed
 *     input, optionally with "error_contains" (a substring of the error line);
 *   - "name" equals the file stem.
 * Every mismatch prints the file, the JSON path, the expected and the actual value.
 * A second test per game checks that every rule id (RULE_IDS, SIX_RULE_IDS, GRID_RULE_IDS) has at least
 * one file. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "replay.h"

#ifndef SCENARIO_DIR
#error "SCENARIO_DIR must be defined by the build"
#endif

#define SCEN_SUBDIR SCENARIO_DIR "/304"
#define SIX_SUBDIR SCENARIO_DIR "/304six"
#define GRID_SUBDIR SCENARIO_DIR "/grid"
#define PATH_MAX_LEN 512

/* Rule ids that must each have at least one scenario file. */
static const char *const RULE_IDS[] = {
    "R-CARDS",       "R-SEATS",       "R-NOTATION",     "R-DEAL",         "R-REDEAL",
    "R-NEXTDEAL",    "R-B4-ORDER",    "R-B4-AMOUNT",    "R-B4-200",       "R-B4-PARTNER",
    "R-TRUMP-PICK",  "R-B8",          "R-B8-AMOUNT",    "R-B8-PCC",       "R-B8-RESULT",
    "R-OPEN",        "R-LEAD1",       "R-FOLLOW",       "R-FACEDOWN",     "R-IND-PLAY",
    "R-MAKER-VOID",  "R-LEAD1-TRUMP", "R-REVEAL",       "R-250",          "R-EXHAUST",
    "R-SPOILT",      "R-SPOILT-WRONG", "R-VIOLATION",   "R-CAPS",         "R-CAPS-EXTERNAL",
    "R-PCC",         "R-TOKENS",      "R-TRANSFER",
};

/* The six-player ids of shared/rules/304.md ("Six-player 304"). */
static const char *const SIX_RULE_IDS[] = {
    "R-SIX-CARDS", "R-SIX-SEATS", "R-SIX-DEAL", "R-SIX-PARTNER", "R-SIX-B6", "R-SIX-PCC", "R-SIX-PLAY",
};

/* The ids of shared/rules/contractgrid.md. */
static const char *const GRID_RULE_IDS[] = {
    "G-CARDS", "G-SEATS",  "G-CONTRACTS", "G-GRID",   "G-LINES", "G-DEAL",   "G-TRUMP",
    "G-BIDS",  "G-PLAY",   "G-VALUES",    "G-SCORE",  "G-END",   "G-WINNER",
};

typedef struct {
    char **names;
    size_t n, cap;
} name_list;

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the *.json files of a scenario directory, sorted. */
static name_list list_files(const char *dir)
{
    name_list l = {NULL, 0, 0};
    DIR *d = opendir(dir);
    if (!d)
        return l;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        if (l.n == l.cap) {
            l.cap = l.cap ? l.cap * 2 : 64;
            char **nn = realloc(l.names, l.cap * sizeof *nn);
            if (!nn)
                break;
            l.names = nn;
        }
        l.names[l.n] = strdup(e->d_name);
        if (l.names[l.n])
            l.n++;
    }
    closedir(d);
    if (l.n)
        qsort(l.names, l.n, sizeof *l.names, cmp_names);
    return l;
}

static void free_list(name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = l->cap = 0;
}

static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1024 > cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

/* Prints one mismatch: file, path, expected, got. */
static void report(const char *file, const char *path, const json_t *exp, const json_t *got)
{
    char *es = exp ? json_dumps(exp, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    char *gs = got ? json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    fprintf(stderr, "%s: %s: expected %s, got %s\n", file, path[0] ? path : "(top)",
            es ? es : "(nothing)", gs ? gs : "(missing)");
    free(es);
    free(gs);
}

static void report_text(const char *file, const char *path, const char *exp, const char *got)
{
    fprintf(stderr, "%s: %s: expected %s, got %s\n", file, path, exp, got);
}

/* Numbers compare by value (an integer 1 equals a real 1.0). */
static int scalar_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

/* Compares expected (a subset) with got; returns the number of mismatches. */
static int match(const char *file, const char *path, const json_t *exp, const json_t *got)
{
    char sub[PATH_MAX_LEN];
    if (json_is_object(exp)) {
        if (!json_is_object(got)) {
            report(file, path, exp, got);
            return 1;
        }
        int bad = 0;
        const char *key;
        json_t *ev;
        json_object_foreach((json_t *)exp, key, ev) {
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
            bad += match(file, sub, ev, json_object_get(got, key));
        }
        return bad;
    }
    if (json_is_array(exp)) {
        if (!json_is_array(got) || json_array_size(got) != json_array_size(exp)) {
            report(file, path, exp, got);
            return 1;
        }
        int bad = 0;
        for (size_t i = 0; i < json_array_size(exp); i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            bad += match(file, sub, json_array_get(exp, i), json_array_get(got, i));
        }
        return bad;
    }
    if (!got || !scalar_equal(exp, got)) {
        report(file, path, exp, got);
        return 1;
    }
    return 0;
}

/* Checks the per-action "expect" annotations against results[]. */
static int check_actions(const char *file, const json_t *scen, const json_t *out)
{
    const json_t *acts = json_object_get(scen, "actions");
    const json_t *res = json_object_get(out, "results");
    if (!json_is_array(acts))
        return 0;
    if (!json_is_array(res) || json_array_size(res) != json_array_size(acts)) {
        report_text(file, "results", "one result per action", "a different count");
        return 1;
    }
    int bad = 0;
    char path[PATH_MAX_LEN];
    for (size_t i = 0; i < json_array_size(acts); i++) {
        const json_t *exp = json_object_get(json_array_get(acts, i), "expect");
        if (!exp)
            continue;
        const json_t *r = json_array_get(res, i);
        int ok = json_is_true(json_object_get(r, "ok"));
        const char *err = json_string_value(json_object_get(r, "error"));
        const char *want = json_string_value(exp);
        snprintf(path, sizeof path, "actions[%zu]", i);
        if (!want) {
            report_text(file, path, "a string expect", "something else");
            bad++;
        } else if (strcmp(want, "ok") == 0) {
            if (!ok) {
                const char *msg = json_string_value(json_object_get(r, "message"));
                fprintf(stderr, "%s: %s: expected ok, got %s (%s)\n", file, path,
                        err ? err : "?", msg ? msg : "");
                bad++;
            }
        } else if (strcmp(want, "refused") == 0) {
            if (ok) {
                report_text(file, path, "refused", "ok");
                bad++;
            }
        } else if (ok || !err || strcmp(err, want) != 0) {
            report_text(file, path, want, ok ? "ok" : (err ? err : "(no code)"));
            bad++;
        }
    }
    return bad;
}

/* Runs one scenario file; returns the number of mismatches (0 = pass). */
static int run_file(const char *dir, const char *fname)
{
    char path[PATH_MAX_LEN];
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    size_t len = 0;
    char *text = read_text(path, &len);
    if (!text) {
        fprintf(stderr, "%s: cannot read the file\n", fname);
        return 1;
    }
    json_error_t jerr;
    json_t *scen = json_loadb(text, len, 0, &jerr);
    if (!json_is_object(scen)) {
        fprintf(stderr, "%s: the scenario is not a JSON object: %s (line %d)\n", fname, jerr.text,
                jerr.line);
        json_decref(scen);
        free(text);
        return 1;
    }
    int bad = 0;
    char stem[PATH_MAX_LEN];
    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(fname) - 5), fname);
    const char *name = json_string_value(json_object_get(scen, "name"));
    if (!name || strcmp(name, stem) != 0) {
        report_text(fname, "name", stem, name ? name : "(missing)");
        bad++;
    }
    const json_t *expect = json_object_get(scen, "expect");
    const json_t *want_exit = json_object_get(expect, "exit");

    char *out = NULL;
    char err[512] = "";
    int rc = replay_run(text, len, &out, err, sizeof err);

    if (json_is_integer(want_exit)) {
        if (rc != json_integer_value(want_exit)) {
            fprintf(stderr, "%s: exit: expected %lld, got %d\n", fname,
                    (long long)json_integer_value(want_exit), rc);
            bad++;
        }
        const char *contains = json_string_value(json_object_get(expect, "error_contains"));
        if (contains && !strstr(err, contains)) {
            report_text(fname, "error_contains", contains, err);
            bad++;
        }
    } else if (rc != 0) {
        fprintf(stderr, "%s: exit: expected 0, got %d (%s)\n", fname, rc, err);
        bad++;
    } else {
        json_t *got = out ? json_loads(out, 0, &jerr) : NULL;
        if (!json_is_object(got)) {
            fprintf(stderr, "%s: replay output is not a JSON object\n", fname);
            bad++;
        } else {
            bad += check_actions(fname, scen, got);
            if (expect)
                bad += match(fname, "", expect, got);
        }
        json_decref(got);
    }
    free(out);
    json_decref(scen);
    free(text);
    return bad;
}

/* Runs every file of a directory; returns the number of failed files. */
static int run_dir(const char *dir)
{
    name_list l = list_files(dir);
    cr_assert(l.n > 0, "no scenario files in %s", dir);
    int failed = 0;
    for (size_t i = 0; i < l.n; i++)
        if (run_file(dir, l.names[i]) != 0) {
            fprintf(stderr, "FAIL %s\n", l.names[i]);
            failed++;
        }
    fprintf(stderr, "scenarios in %s: %zu files, %d failed\n", dir, l.n, failed);
    free_list(&l);
    return failed;
}

Test(scenarios, all_files)
{
    int failed = run_dir(SCEN_SUBDIR);
    cr_assert(failed == 0, "304 scenarios: %d failed", failed);
}

Test(scenarios, six_player_files)
{
    int failed = run_dir(SIX_SUBDIR);
    cr_assert(failed == 0, "six-player 304 scenarios: %d failed", failed);
}

Test(scenarios, grid_files)
{
    int failed = run_dir(GRID_SUBDIR);
    cr_assert(failed == 0, "ContractGrid scenarios: %d failed", failed);
}

/* A file belongs to rule id R when its name is "R-<digits>-…". */
static int file_has_id(const char *fname, const char *id)
{
    size_t k = strlen(id);
    if (strncmp(fname, id, k) != 0 || fname[k] != '-')
        return 0;
    const char *p = fname + k + 1;
    if (*p < '0' || *p > '9')
        return 0;
    while (*p >= '0' && *p <= '9')
        p++;
    return *p == '-';
}

/* Counts the rule ids without a file in dir. */
static int missing_ids(const char *dir, const char *const *ids, size_t n_ids)
{
    name_list l = list_files(dir);
    int missing = 0;
    for (size_t r = 0; r < n_ids; r++) {
        int found = 0;
        for (size_t i = 0; i < l.n && !found; i++)
            found = file_has_id(l.names[i], ids[r]);
        if (!found) {
            fprintf(stderr, "no scenario file for %s\n", ids[r]);
            missing++;
        }
    }
    free_list(&l);
    return missing;
}

Test(scenarios, every_rule_has_a_file)
{
    int missing = missing_ids(SCEN_SUBDIR, RULE_IDS, sizeof RULE_IDS / sizeof RULE_IDS[0]);
    cr_assert(missing == 0, "%d rule ids without a scenario file", missing);
}

Test(scenarios, every_six_rule_has_a_file)
{
    int missing = missing_ids(SIX_SUBDIR, SIX_RULE_IDS, sizeof SIX_RULE_IDS / sizeof SIX_RULE_IDS[0]);
    cr_assert(missing == 0, "%d six-player rule ids without a scenario file", missing);
}

Test(scenarios, every_grid_rule_has_a_file)
{
    int missing = missing_ids(GRID_SUBDIR, GRID_RULE_IDS, sizeof GRID_RULE_IDS / sizeof GRID_RULE_IDS[0]);
    cr_assert(missing == 0, "%d ContractGrid rule ids without a scenario file", missing);
}
