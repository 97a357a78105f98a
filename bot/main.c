/* main.c — the `cardroom` program: reads the subcommand and runs it.
 *
 * Subcommands: `console` (adapters/console; also what runs with no arguments), `run` (the chat
 * network of the configuration: adapters/matrix or adapters/irc), `replay FILE|-`
 * (bot/replay.c), `solve FILE|-` (bot/solve.c), `arena ...` (bot/arena.c), `verify SEED COMMITMENT
 * [DEALER] [--players 6]` (bot/seed.c), `help` and `--version`.
 * Exit status: 0 done, 1 an I/O or setup failure, 2 bad usage or malformed input. */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "console.h"
#include "irc.h"
#include "matrix.h"
#include "replay.h"
#include "arena.h"
#include "seed.h"
#include "solve.h"

#ifndef CARDROOM_VERSION
#define CARDROOM_VERSION "0.1.0" /* keep in step with project() in meson.build */
#endif

#define REPLAY_INPUT_MAX ((size_t)16 << 20) /* 16 MiB: far beyond any real hand */
#define READ_CHUNK ((size_t)64 << 10)
#define ERR_MAX 512

static const char usage_text[] =
    "usage: cardroom COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  console [--seed N] [--script] [--db PATH] [--config FILE] [--players 6]\n"
    "                  play at a 304 table in the terminal (the default command):\n"
    "                  you against three computer players, or with --players 6 in a\n"
    "                  team of three against three; --script reads\n"
    "                  \"USER> TEXT\" lines (\"USER>> TEXT\" = privately to the bot)\n"
    "  run [--config FILE] [--db PATH] [--seed N] [--net matrix|irc]\n"
    "                  run the bot on the chat network of the configuration until\n"
    "                  stopped (SIGTERM, Ctrl-C): Matrix (the [matrix] section; secrets\n"
    "                  from CARDROOM_MATRIX_PASSWORD or CARDROOM_MATRIX_ACCESS_TOKEN) or\n"
    "                  IRC (the [irc] section; CARDROOM_IRC_PASSWORD); with both\n"
    "                  configured, --net picks one (one process and database each)\n"
    "  replay FILE|-   replay one hand of 304 or ContractGrid given as JSON (- reads\n"
    "                  standard input)\n"
    "                  and print the resulting state as one line of JSON\n"
    "  solve FILE|-    read a hand of 304 in the replay format, every card known, and\n"
    "                  print for the seat to act each legal move with the card points\n"
    "                  each team secures after it under best play (JSON)\n"
    "  arena --a PLAYER --b PLAYER --deals N [--seed S] [--options NAME=VALUE,...]\n"
    "        [--a-partner PLAYER] [--time-limit MS] [--json] [--quiet]\n"
    "                  duplicate matches between computer players (easy, normal,\n"
    "                  expert, random, exec:COMMAND): every deal played both ways,\n"
    "                  A's tokens minus B's per deal with a 95% interval\n"
    "  verify SEED COMMITMENT [DEALER] [--players 6]\n"
    "                  check a hand's revealed seed against the commitment shown when\n"
    "                  it was dealt, and print the deal (DEALER: seat 0-3, default 0;\n"
    "                  --players 6: the six-player deal, DEALER 0-5)\n"
    "  help            show this help (also --help, -h)\n"
    "  --version       print the version\n";

/* Reads all of f into a malloc'd buffer of at most REPLAY_INPUT_MAX bytes. Returns 0, or -1
 * with a message in err. */
static int read_all(FILE *f, char **data, size_t *len, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            size_t want = cap ? 2 * cap : READ_CHUNK;
            if (want > REPLAY_INPUT_MAX + 1) want = REPLAY_INPUT_MAX + 1; /* one byte more tells "too large" */
            char *bigger = realloc(buf, want);
            if (!bigger) {
                free(buf);
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            buf = bigger;
            cap = want;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n > REPLAY_INPUT_MAX) {
            free(buf);
            snprintf(err, errlen, "input is larger than 16 MiB");
            return -1;
        }
        if (got == 0) break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read input: %s", strerror(errno));
        free(buf);
        return -1;
    }
    *data = buf;
    *len = n;
    return 0;
}

/* Reads the whole input named by path ("-" = standard input). */
static int read_input_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    if (strcmp(path, "-") == 0) return read_all(stdin, data, len, err, errlen);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = read_all(f, data, len, err, errlen);
    fclose(f);
    return rc;
}

/* A command that reads one JSON document (FILE or - for standard input) and prints one line of JSON:
 * replay and solve. */
typedef int (*json_command)(const char *in, size_t len, char **out, char *err, size_t errlen);

static int cmd_json(const char *name, json_command run, int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cardroom %s FILE|-\n", name);
        return 2;
    }
    char err[ERR_MAX], *in = NULL, *out = NULL;
    size_t len = 0;
    if (read_input_file(argv[2], &in, &len, err, sizeof err) < 0) {
        fprintf(stderr, "cardroom %s: %s\n", name, err);
        return 2;
    }
    int rc = run(in, len, &out, err, sizeof err);
    free(in);
    if (rc != 0) {
        fprintf(stderr, "cardroom %s: %s\n", name, err);
        return 2;
    }
    int bad = puts(out) == EOF || fflush(stdout) != 0;
    free(out);
    if (bad) {
        fprintf(stderr, "cardroom %s: cannot write the output: %s\n", name, strerror(errno));
        return 1;
    }
    return 0;
}

/* A small whole number given on the command line, or -1. */
static int small_number(const char *text)
{
    char *end;
    long v = strtol(text, &end, 10);
    return *end || end == text || v < 0 || v > 99 ? -1 : (int)v;
}

/* `--players N` at argv[i]: reads N into *players and returns the arguments it took (2), or 0
 * when argv[i] is not that option. */
static int players_option(int argc, char **argv, int i, int *players)
{
    if (strcmp(argv[i], "--players") != 0 || i + 1 >= argc) return 0;
    *players = small_number(argv[i + 1]);
    return 2;
}

static int cmd_verify(int argc, char **argv)
{
    char text[4096];
    const char *pos[3] = {NULL, NULL, "0"};
    int npos = 0, players = 4;
    for (int i = 2; i < argc; i++) {
        int took = players_option(argc, argv, i, &players);
        if (took) i += took - 1;
        else if (npos < 3) pos[npos++] = argv[i];
        else npos = 4;
    }
    if (npos < 2 || npos > 3) {
        fputs("usage: cardroom verify SEED COMMITMENT [DEALER] [--players 6]\n", stderr);
        return 2;
    }
    int rc = seed_verify(pos[0], pos[1], small_number(pos[2]), players, text, sizeof text);
    if (rc < 0) {
        fprintf(stderr, "cardroom verify: %s\n", text);
        return 2;
    }
    fputs(text, stdout);
    return rc;
}

/* Loads the configuration: --config FILE, else $CARDROOM_CONFIG, else the defaults (plus the
 * environment either way). */
static int load_config(cfg *c, const char *path)
{
    char err[ERR_MAX];
    cfg_defaults(c);
    if (!path) path = getenv("CARDROOM_CONFIG");
    int rc = path && *path ? cfg_load(c, path, err, sizeof err) : cfg_env(c, err, sizeof err);
    if (rc != 0) fprintf(stderr, "cardroom: %s\n", err);
    return rc;
}

/* The options console and run share. Returns 0, or 2 after a message. */
typedef struct {
    int script, fixed_seed, players;
    uint64_t seed;
    const char *db, *config;
    const char *net;  /* run: --net matrix|irc */
} run_args;

static int parse_args(const char *cmd, int allow_script, int argc, char **argv, int first, run_args *r)
{
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (allow_script && strcmp(a, "--script") == 0) {
            r->script = 1;
        } else if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            r->seed = strtoull(argv[++i], &end, 10);
            if (*end || errno || argv[i][0] == '-' || end == argv[i]) {
                fprintf(stderr, "cardroom %s: --seed takes a whole number, not \"%s\"\n", cmd, argv[i]);
                return 2;
            }
            r->fixed_seed = 1;
        } else if (strcmp(a, "--db") == 0 && i + 1 < argc) {
            r->db = argv[++i];
        } else if (strcmp(a, "--config") == 0 && i + 1 < argc) {
            r->config = argv[++i];
        } else if (allow_script && players_option(argc, argv, i, &r->players)) {
            if (r->players != 4 && r->players != 6) {
                fprintf(stderr, "cardroom %s: --players takes 4 or 6, not \"%s\"\n", cmd, argv[i + 1]);
                return 2;
            }
            i++;
        } else if (!allow_script && strcmp(a, "--net") == 0 && i + 1 < argc) {
            r->net = argv[++i];
            if (strcmp(r->net, "matrix") != 0 && strcmp(r->net, "irc") != 0) {
                fprintf(stderr, "cardroom %s: --net takes matrix or irc, not \"%s\"\n", cmd, r->net);
                return 2;
            }
        } else {
            fprintf(stderr, "cardroom %s: unknown option \"%s\" (cardroom help shows the usage)\n", cmd, a);
            return 2;
        }
    }
    return 0;
}

static int cmd_console(int argc, char **argv, int first)
{
    run_args r = {0};
    if (parse_args("console", 1, argc, argv, first, &r) != 0) return 2;
    if (r.script && r.players) {
        fputs("cardroom console: --players is for the table the console opens for you; a script opens its own "
              "(alice> !new 304 6)\n", stderr);
        return 2;
    }
    console_options o = {.script = r.script, .fixed_seed = r.fixed_seed, .seed = r.seed, .players = r.players,
                         .db = r.db, .in = stdin, .out = stdout, .err = stderr};
    cfg c;
    if (load_config(&c, r.config) != 0) return 2;
    return console_run(&c, &o);
}

/* The bot on the chat networks of the configuration. */
static int cmd_run(int argc, char **argv)
{
    run_args r = {0};
    if (parse_args("run", 0, argc, argv, 2, &r) != 0) return 2;
    cfg c;
    if (load_config(&c, r.config) != 0) return 2;
    int matrix = c.matrix_homeserver[0] != 0, irc = c.irc_server[0] != 0;
    if (r.net) {
        matrix = strcmp(r.net, "matrix") == 0 && matrix;
        irc = strcmp(r.net, "irc") == 0 && irc;
        if (!matrix && !irc) {
            fprintf(stderr, "cardroom run: --net %s: that network is not configured: set [%s] %s in the configuration\n",
                    r.net, r.net, strcmp(r.net, "irc") == 0 ? "server" : "homeserver");
            return 2;
        }
    }
    if (!matrix && !irc) {
        fputs("cardroom run: no chat network is configured: set [matrix] homeserver or [irc] server in the "
              "configuration (see \"Run on Matrix\" and \"Run on IRC\" in README.md), or play in the terminal "
              "with cardroom console\n", stderr);
        return 2;
    }
    if (matrix && irc) {
        fputs("cardroom run: both [matrix] and [irc] are configured: run one process per network, "
              "cardroom run --net matrix and cardroom run --net irc, each with its own database (--db)\n", stderr);
        return 2;
    }
    if (irc) {
        irc_options io = {.db = r.db, .fixed_seed = r.fixed_seed, .seed = r.seed, .err = stderr};
        return irc_run(&c, &io);
    }
    matrix_options o = {.db = r.db, .fixed_seed = r.fixed_seed, .seed = r.seed, .err = stderr};
    return matrix_run(&c, &o);
}

int main(int argc, char **argv)
{
    if (sodium_init() < 0) {
        fputs("cardroom: cannot initialise libsodium\n", stderr);
        return 1;
    }
    if (argc < 2) return cmd_console(argc, argv, 1);
    const char *cmd = argv[1];
    if (strcmp(cmd, "console") == 0) return cmd_console(argc, argv, 2);
    if (strcmp(cmd, "run") == 0) return cmd_run(argc, argv);
    if (strcmp(cmd, "replay") == 0) return cmd_json("replay", replay_run, argc, argv);
    if (strcmp(cmd, "solve") == 0) return cmd_json("solve", solve_run, argc, argv);
    if (strcmp(cmd, "arena") == 0) return arena_main(argc, argv, stdout, stderr);
    if (strcmp(cmd, "verify") == 0) return cmd_verify(argc, argv);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        puts("cardroom " CARDROOM_VERSION);
        return 0;
    }
    fprintf(stderr, "cardroom: unknown command \"%s\" (see cardroom help)\n", cmd);
    return 2;
}
