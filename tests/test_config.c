/* test_config.c — the bot's settings (bot/config.c): defaults, the documented example file,
 * every key, every kind of error with its file:line and key, the environment over the file,
 * [rules] through the engine, and values too long for their field. Files are written into a
 * fresh mkdtemp directory per test; CARDROOM_* variables are cleared before each test. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#ifdef SOURCE_DIR
#define EXAMPLE_INI SOURCE_DIR "/config/cardroom.example.ini"
#else
#define EXAMPLE_INI "config/cardroom.example.ini"
#endif

extern char **environ;

static char tmpdir[64];
static char paths[8][128];
static int npaths;

static void clear_cardroom_env(void)
{
    for (;;) {
        char name[128] = "";
        for (char **e = environ; *e; e++) {
            if (strncmp(*e, "CARDROOM_", 9) == 0) {
                size_t n = strcspn(*e, "=");
                snprintf(name, sizeof name, "%.*s", (int)n, *e);
                break;
            }
        }
        if (!name[0]) return;
        unsetenv(name);
    }
}

static void setup(void)
{
    clear_cardroom_env();
    strcpy(tmpdir, "/tmp/cfgtest.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
    npaths = 0;
}

static void teardown(void)
{
    for (int i = 0; i < npaths; i++) unlink(paths[i]);
    rmdir(tmpdir);
}

/* Writes text (exactly, any bytes) to a new file in the test's directory; returns its path. */
static const char *write_file_n(const char *name, const char *text, size_t len)
{
    cr_assert_lt(npaths, 8);
    char *path = paths[npaths++];
    snprintf(path, sizeof paths[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(text, 1, len, f), len);
    fclose(f);
    return path;
}

static const char *write_file(const char *name, const char *text)
{
    return write_file_n(name, text, strlen(text));
}

static void load_ok(cfg *c, const char *path)
{
    char err[CFG_ERR] = "";
    int rc = cfg_load(c, path, err, sizeof err);
    cr_assert_eq(rc, 0, "cfg_load(%s) failed: %s", path, err);
}

/* Loads text and expects exactly "PATH:" + want (want starts with the line number). */
static void load_fails(const char *text, const char *want)
{
    const char *path = write_file("bad.ini", text);
    char err[CFG_ERR] = "", full[CFG_ERR + 200];
    cfg c;
    cfg_defaults(&c);
    cr_assert_eq(cfg_load(&c, path, err, sizeof err), -1, "accepted:\n%s", text);
    snprintf(full, sizeof full, "%s:%s", path, want);
    cr_expect_str_eq(err, full, "got:  %s\nwant: %s\nfor:\n%s", err, full, text);
    unlink(path);
    npaths--;
}

static void env_fails(const char *want)
{
    char err[CFG_ERR] = "";
    cfg c;
    cfg_defaults(&c);
    cr_assert_eq(cfg_env(&c, err, sizeof err), -1);
    cr_expect_str_eq(err, want);
}

TestSuite(config, .init = setup, .fini = teardown);

Test(config, defaults)
{
    cfg c;
    cfg_defaults(&c);
    cr_expect_str_eq(c.prefix, "!");
    cr_expect_str_eq(c.database, "cardroom.db");
    cr_expect_str_eq(c.log_level, "info");
    cr_expect_eq(c.threads, 2);
    cr_expect_str_eq(c.loop_priority, "normal");
    cr_expect_str_eq(c.rules_url, "docs/");
    cr_expect_str_eq(c.admins, "");
    cr_expect_eq(c.rate_commands, 20);
    cr_expect_eq(c.rate_seconds, 60);
    cr_expect_eq(c.rate_pause, 120);
    cr_expect_eq(c.tables_per_user, 3);
    cr_expect_str_eq(c.level, "easy");
    cr_expect_eq(c.keep_finished, 2592000);
    cr_expect_eq(c.remind_after, 120);
    cr_expect_eq(c.idle_takeover, 600);
    cr_expect_eq(c.leave_grace, 120);
    cr_expect_eq(c.table_idle_close, 86400);
    cr_expect_eq(c.bot_delay_ms, 0);
    cr_expect_str_eq(c.console_user, "you");
    cr_expect_str_eq(c.console_room, "room");
    g304_rules r;
    g304_rules_default(&r);
    cr_expect_eq(memcmp(&c.rules, &r, sizeof r), 0);
}

Test(config, defaults_zero_everything_first)
{
    cfg dirty, clean;
    memset(&dirty, 0xAA, sizeof dirty);
    memset(&clean, 0, sizeof clean);
    cfg_defaults(&dirty);
    cfg_defaults(&clean);
    cr_expect_eq(memcmp(&dirty, &clean, sizeof dirty), 0, "cfg_defaults left old bytes behind");
}

Test(config, example_file_is_the_defaults)
{
    cfg loaded, want;
    memset(&loaded, 0x55, sizeof loaded);
    memset(&want, 0, sizeof want);
    cfg_defaults(&want);
    load_ok(&loaded, EXAMPLE_INI);
    cr_expect_eq(memcmp(&loaded, &want, sizeof want), 0, "loading %s does not give the defaults", EXAMPLE_INI);
}

Test(config, example_file_names_every_key)
{
    /* Each key appears as "key = " in its section of the example, so the example is complete. */
    FILE *f = fopen(EXAMPLE_INI, "r");
    cr_assert_not_null(f);
    char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    static const char *const keys[] = {"[bot]", "prefix = ", "database = ", "log_level = ", "threads = ", "loop_priority = ",
                                       "rules_url = ",
                                       "\nadmins =\n", "rate_commands = ", "rate_seconds = ", "rate_pause = ",
                                       "tables_per_user = ", "level = ", "keep_finished = ", "[timers]", "remind_after = ",
                                       "idle_takeover = ", "leave_grace = ", "table_idle_close = ",
                                       "bot_delay_ms = ", "[rules]", "[console]", "user = ", "room = "};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_expect_not_null(strstr(text, keys[i]), "example lacks %s", keys[i]);
    for (const char *const *o = g304_option_names; *o; o++) {
        char line[64];
        snprintf(line, sizeof line, "\n%s = ", *o);
        cr_expect_not_null(strstr(text, line), "example lacks rules option %s", *o);
    }
}

Test(config, every_key)
{
    const char *path = write_file("all.ini",
                                  "; all keys\n"
                                  "[bot]\n"
                                  "prefix = .cr\n"
                                  "database = /var/lib/cardroom/state.db\n"
                                  "log_level = debug\n"
                                  "threads = 64\n"
                                  "loop_priority = realtime\n"
                                  "rules_url = https://cards.example.org/rules/\n"
                                  "admins = @root:example.org, $a:oper bob\n"
                                  "rate_commands = 0\n"
                                  "rate_seconds = 86400\n"
                                  "rate_pause = 1\n"
                                  "tables_per_user = 1000\n"
                                  "level = expert\n"
                                  "keep_finished = 0\n"
                                  "[timers]\n"
                                  "remind_after = 0\n"
                                  "idle_takeover = 2592000\n"
                                  "leave_grace = 30\n"
                                  "table_idle_close = 3600\n"
                                  "bot_delay_ms = 60000\n"
                                  "[rules]\n"
                                  "cut = true\n"
                                  "step_above_200 = 5\n"
                                  "bidding = single\n"
                                  "bid8_opener = dealer_right\n"
                                  "spoilt = auto\n"
                                  "caps = strict\n"
                                  "scoring = bank\n"
                                  "start_tokens = 20\n"
                                  "[console]\n"
                                  "user = alice.b-c_9\n"
                                  "room = Lobby\n");
    cfg c;
    load_ok(&c, path);
    cr_expect_str_eq(c.prefix, ".cr");
    cr_expect_str_eq(c.database, "/var/lib/cardroom/state.db");
    cr_expect_str_eq(c.log_level, "debug");
    cr_expect_eq(c.threads, 64);
    cr_expect_str_eq(c.loop_priority, "realtime");
    cr_expect_str_eq(c.rules_url, "https://cards.example.org/rules/");
    cr_expect_str_eq(c.admins, "@root:example.org, $a:oper bob");
    cr_expect_eq(c.rate_commands, 0);
    cr_expect_eq(c.rate_seconds, 86400);
    cr_expect_eq(c.rate_pause, 1);
    cr_expect_eq(c.tables_per_user, 1000);
    cr_expect_str_eq(c.level, "expert");
    cr_expect_eq(c.keep_finished, 0);
    cr_expect_eq(c.remind_after, 0);
    cr_expect_eq(c.idle_takeover, 2592000);
    cr_expect_eq(c.leave_grace, 30);
    cr_expect_eq(c.table_idle_close, 3600);
    cr_expect_eq(c.bot_delay_ms, 60000);
    cr_expect_eq(c.rules.cut, 1);
    cr_expect_eq(c.rules.step_above_200, 5);
    cr_expect_eq(c.rules.bidding, G304_BIDDING_SINGLE);
    cr_expect_eq(c.rules.bid8_opener, G304_OPENER_DEALER_RIGHT);
    cr_expect_eq(c.rules.spoilt, G304_SPOILT_AUTO);
    cr_expect_eq(c.rules.caps, G304_CAPS_STRICT);
    cr_expect_eq(c.rules.scoring, G304_SCORING_BANK);
    cr_expect_eq(c.rules.start_tokens, 20);
    cr_expect_str_eq(c.console_user, "alice.b-c_9");
    cr_expect_str_eq(c.console_room, "Lobby");
}

Test(config, empty_file_and_partial_file_keep_defaults)
{
    cfg c, want;
    cfg_defaults(&want);
    load_ok(&c, write_file("empty.ini", ""));
    cr_expect_eq(memcmp(&c, &want, sizeof c), 0);
    load_ok(&c, write_file("part.ini", "[timers]\nremind_after = 30\n"));
    want.remind_after = 30;
    cr_expect_eq(memcmp(&c, &want, sizeof c), 0);
}

Test(config, load_starts_from_defaults)
{
    cfg c;
    cfg_defaults(&c);
    c.threads = 9;
    strcpy(c.prefix, "??");
    load_ok(&c, write_file("p.ini", "[bot]\nlog_level = warn\n"));
    cr_expect_eq(c.threads, 2);
    cr_expect_str_eq(c.prefix, "!");
    cr_expect_str_eq(c.log_level, "warn");
}

Test(config, missing_file)
{
    char err[CFG_ERR], want[300];
    snprintf(want, sizeof want, "cannot open %s/nope.ini: No such file or directory", tmpdir);
    char path[128];
    snprintf(path, sizeof path, "%s/nope.ini", tmpdir);
    cfg c;
    cr_assert_eq(cfg_load(&c, path, err, sizeof err), -1);
    cr_expect_str_eq(err, want);
}

Test(config, directory_is_not_a_file)
{
    char err[CFG_ERR];
    cfg c;
    cr_assert_eq(cfg_load(&c, tmpdir, err, sizeof err), -1);
    cr_expect(strstr(err, tmpdir) && (strstr(err, "cannot read") || strstr(err, "cannot open")), "%s", err);
}

Test(config, bad_numbers)
{
    load_fails("[timers]\nremind_after = soon\n",
               "2: [timers] remind_after: must be a number of seconds from 0 to 2592000 (30 days; 0 turns it off), "
               "not 'soon'");
    load_fails("# c\n\n[timers]\n; c\nidle_takeover = 2592001\n",
               "5: [timers] idle_takeover: must be a number of seconds from 0 to 2592000 (30 days; 0 turns it off), "
               "not '2592001'");
    load_fails("[timers]\ntable_idle_close = -1\n",
               "2: [timers] table_idle_close: must be a number of seconds from 0 to 2592000 (30 days; 0 turns it "
               "off), not '-1'");
    load_fails("[timers]\nbot_delay_ms = 60001\n",
               "2: [timers] bot_delay_ms: must be a number of milliseconds from 0 to 60000, not '60001'");
    load_fails("[timers]\nbot_delay_ms = 1.5\n",
               "2: [timers] bot_delay_ms: must be a number of milliseconds from 0 to 60000, not '1.5'");
    load_fails("[bot]\nthreads = 0\n", "2: [bot] threads: must be a whole number from 1 to 64, not '0'");
    load_fails("[bot]\nloop_priority = high\n", "2: [bot] loop_priority: must be normal or realtime, not 'high'");
    load_fails("[bot]\nrules_url = my rules\n", "2: [bot] rules_url: must be 1 to 255 characters without blanks: where "
               "the rules are published, like https://example.org/cardroom/, not 'my rules'");
    load_fails("[bot]\nthreads = 65\n", "2: [bot] threads: must be a whole number from 1 to 64, not '65'");
    load_fails("[bot]\nthreads = 99999999999999999999\n",
               "2: [bot] threads: must be a whole number from 1 to 64, not '99999999999999999999'");
    load_fails("[bot]\nthreads =\n", "2: [bot] threads: must be a whole number from 1 to 64, not ''");
    load_fails("[bot]\nrate_commands = -1\n",
               "2: [bot] rate_commands: must be a whole number from 0 to 10000 (0: no limit), not '-1'");
    load_fails("[bot]\nrate_seconds = 0\n", "2: [bot] rate_seconds: must be a number of seconds from 1 to 86400, not '0'");
    load_fails("[bot]\nrate_pause = 86401\n",
               "2: [bot] rate_pause: must be a number of seconds from 1 to 86400, not '86401'");
    load_fails("[bot]\ntables_per_user = many\n",
               "2: [bot] tables_per_user: must be a whole number from 0 to 1000 (0: no cap), not 'many'");
    load_fails("[bot]\nkeep_finished = 315360001\n",
               "2: [bot] keep_finished: must be a number of seconds from 0 to 315360000 (ten years; 0 keeps "
               "everything), not '315360001'");
    load_fails("[bot]\nkeep_finished = -1\n",
               "2: [bot] keep_finished: must be a number of seconds from 0 to 315360000 (ten years; 0 keeps "
               "everything), not '-1'");
}

Test(config, bad_texts)
{
    load_fails("[bot]\nprefix = a b\n", "2: [bot] prefix: must be 1 to 8 characters without blanks, not 'a b'");
    load_fails("[bot]\nprefix = 123456789\n",
               "2: [bot] prefix: must be 1 to 8 characters without blanks, not '123456789'");
    load_fails("[bot]\nprefix =\n", "2: [bot] prefix: must be 1 to 8 characters without blanks, not ''");
    load_fails("[bot]\ndatabase =\n",
               "2: [bot] database: must be the path of the SQLite file, 1 to 255 characters, not ''");
    load_fails("[bot]\nlog_level = verbose\n",
               "2: [bot] log_level: must be one of error, warn, info, debug, not 'verbose'");
    load_fails("[bot]\nlog_level = INFO\n", "2: [bot] log_level: must be one of error, warn, info, debug, not 'INFO'");
    load_fails("[bot]\nlevel = strong\n", "2: [bot] level: must be one of easy, normal, expert, not 'strong'");
    load_fails("[console]\nuser = al ice\n",
               "2: [console] user: must be 1 to 32 characters of A-Z a-z 0-9 _ . -, not 'al ice'");
    load_fails("[console]\nroom = #room\n",
               "2: [console] room: must be 1 to 32 characters of A-Z a-z 0-9 _ . -, not '#room'");
    load_fails("[console]\nuser = abcdefghijabcdefghijabcdefghijabc\n",
               "2: [console] user: must be 1 to 32 characters of A-Z a-z 0-9 _ . -, not "
               "'abcdefghijabcdefghijabcdefghijabc'");
}

Test(config, utf8_prefix_counts_characters)
{
    cfg c;
    load_ok(&c, write_file("u.ini", "[bot]\nprefix = \xE2\x99\xA0\xE2\x99\xA5\n")); /* ♠♥: 2 characters */
    cr_expect_str_eq(c.prefix, "\xE2\x99\xA0\xE2\x99\xA5");
    /* Eight characters but 24 bytes: more than the field holds. */
    load_fails("[bot]\nprefix = \xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0"
               "\xE2\x99\xA0\n",
               "2: [bot] prefix: must be at most 15 bytes long; this value has 24 bytes ('"
               "\xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0\xE2\x99\xA0\xE2\x99"
               "\xA0')");
}

Test(config, unknown_section)
{
    load_fails("[bot]\nprefix = !\n[foo]\nx = 1\n", "3: unknown section [foo] (sections: bot, timers, rules, matrix, irc, console)");
    /* Reported on its own line even with no key under it. */
    load_fails("[foo]\n", "1: unknown section [foo] (sections: bot, timers, rules, matrix, irc, console)");
    load_fails("[Bot]\nprefix = !\n", "1: unknown section [Bot] (sections: bot, timers, rules, matrix, irc, console)");
    load_fails("[bot\nprefix = !\n", "1: a section heading needs a closing ']', like [bot]");
}

Test(config, blanks_inside_heading)
{
    cfg c;
    load_ok(&c, write_file("h.ini", "  [ timers ]  ; comment\nremind_after = 5\n"));
    cr_expect_eq(c.remind_after, 5);
}

Test(config, unknown_key)
{
    load_fails("[timers]\nremind = 5\n",
               "2: [timers] remind: unknown key (keys: remind_after, idle_takeover, leave_grace, table_idle_close, "
               "bot_delay_ms)");
    load_fails("[bot]\nPrefix = !\n", "2: [bot] Prefix: unknown key (keys: prefix, database, log_level, threads, loop_priority, "
               "rules_url, admins, rate_commands, rate_seconds, rate_pause, tables_per_user, level, keep_finished)");
    load_fails("[console]\nseed = 1\n", "2: [console] seed: unknown key (keys: user, room)");
    load_fails("[rules]\ncap = off\n",
               "2: [rules] cap: unknown key (keys: cut, step_above_200, bidding, bid8_opener, spoilt, caps, scoring, "
               "start_tokens)");
}

Test(config, key_outside_section)
{
    load_fails("# settings\nprefix = !\n[bot]\n",
               "2: prefix: outside any section; put it under its heading (sections: bot, timers, rules, matrix, irc, console)");
}

Test(config, syntax_errors)
{
    load_fails("[bot]\nprefix = !\nthis is not a setting\n", "3: not a 'key = value' line");
    load_fails("[bot]\n\n\nthreads\n", "4: not a 'key = value' line");
    /* The first error wins, whichever kind it is. */
    load_fails("[bot]\nnonsense\nthreads = 0\n", "2: not a 'key = value' line");
    load_fails("[bot]\nthreads = 0\nnonsense\n", "2: [bot] threads: must be a whole number from 1 to 64, not '0'");
}

Test(config, duplicate_key_last_wins)
{
    cfg c;
    load_ok(&c, write_file("d.ini", "[bot]\nthreads = 3\nthreads = 5\n[timers]\n[bot]\nthreads = 7\n"));
    cr_expect_eq(c.threads, 7);
}

Test(config, comments_and_blanks)
{
    cfg c;
    load_ok(&c, write_file("c.ini", "[bot]\n"
                                    "prefix =   #   ; '#' is a value, ' ;' starts a comment\n"
                                    "database = a;b.db\n"
                                    "# whole-line comment\n"
                                    "; whole-line comment\n"
                                    "log_level = warn ; inline\n"
                                    "threads: 4\n"));
    cr_expect_str_eq(c.prefix, "#");
    cr_expect_str_eq(c.database, "a;b.db");
    cr_expect_str_eq(c.log_level, "warn");
    cr_expect_eq(c.threads, 4);
    load_fails("[bot]\nlog_level = warn # not a comment\n",
               "2: [bot] log_level: must be one of error, warn, info, debug, not 'warn # not a comment'");
}

Test(config, indented_lines_are_ordinary_lines)
{
    /* libinih alone would take the indented line as a second value of prefix. */
    cfg c;
    load_ok(&c, write_file("i.ini", "[bot]\n  prefix = %\n    threads = 4\n\t[timers]\n\tremind_after = 9\n"));
    cr_expect_str_eq(c.prefix, "%");
    cr_expect_eq(c.threads, 4);
    cr_expect_eq(c.remind_after, 9);
}

Test(config, crlf_and_bom)
{
    cfg c;
    load_ok(&c, write_file("w.ini", "\xEF\xBB\xBF[bot]\r\nthreads = 6\r\nprefix = ?\r\n"));
    cr_expect_eq(c.threads, 6);
    cr_expect_str_eq(c.prefix, "?");
    load_fails("\xEF\xBB\xBF[bot]\r\n\r\nthreads = x\r\n",
               "3: [bot] threads: must be a whole number from 1 to 64, not 'x'");
}

Test(config, nul_byte)
{
    const char *path = write_file_n("z.ini", "[bot]\nthr\0eads = 2\n", 19);
    char err[CFG_ERR], want[300];
    cfg c;
    cr_assert_eq(cfg_load(&c, path, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:2: the line holds a NUL byte; the file must be text", path);
    cr_expect_str_eq(err, want);
}

Test(config, failure_changes_nothing)
{
    cfg c, before;
    cfg_defaults(&c);
    c.threads = 33;
    memcpy(&before, &c, sizeof c);
    char err[CFG_ERR];
    const char *path = write_file("f.ini", "[bot]\nprefix = >\ndatabase = x.db\nthreads = 100\n");
    cr_assert_eq(cfg_load(&c, path, err, sizeof err), -1);
    cr_expect_eq(memcmp(&c, &before, sizeof c), 0);
    setenv("CARDROOM_BOT_PREFIX", ">", 1);
    setenv("CARDROOM_BOT_THREADS", "0", 1);
    cr_assert_eq(cfg_env(&c, err, sizeof err), -1);
    cr_expect_eq(memcmp(&c, &before, sizeof c), 0);
}

Test(config, null_error_buffer)
{
    cfg c;
    cr_expect_eq(cfg_load(&c, write_file("n.ini", "[x]\n"), NULL, 0), -1);
    cr_expect_eq(cfg_load(&c, "/nonexistent/cardroom.ini", NULL, 0), -1);
}

Test(config, rules_options)
{
    cfg c;
    load_ok(&c, write_file("r.ini", "[rules]\ncaps = strict\nbidding = single\n"));
    cr_expect_eq(c.rules.caps, G304_CAPS_STRICT);
    cr_expect_eq(c.rules.bidding, G304_BIDDING_SINGLE);
    cr_expect_eq(c.rules.step_above_200, 10);
    load_ok(&c, write_file("r2.ini", "[rules]\ncaps = off\n"));
    cr_expect_eq(c.rules.caps, G304_CAPS_OFF);
}

Test(config, bad_rules_value_carries_engine_message)
{
    g304_rules r;
    g304_rules_default(&r);
    g304_error e = {0};
    cr_assert_eq(g304_rules_set(&r, "caps", "sometimes", &e), -1);
    char want[CFG_ERR];
    snprintf(want, sizeof want, "2: [rules] caps: %s", e.msg);
    load_fails("[rules]\ncaps = sometimes\n", want);
    cr_assert_eq(g304_rules_set(&r, "step_above_200", "7", &e), -1);
    snprintf(want, sizeof want, "3: [rules] step_above_200: %s", e.msg);
    load_fails("[rules]\ncut = true\nstep_above_200 = 7\n", want);
}

Test(config, environment_over_file)
{
    const char *path = write_file("e.ini", "[bot]\nprefix = .\nthreads = 3\n[timers]\nremind_after = 60\n");
    setenv("CARDROOM_TIMERS_REMIND_AFTER", "45", 1);
    setenv("CARDROOM_BOT_PREFIX", "  ?? ", 1); /* blanks around the value go */
    setenv("CARDROOM_RULES_CAPS", "off", 1);
    setenv("CARDROOM_RULES_STEP_ABOVE_200", "5", 1);
    setenv("CARDROOM_CONSOLE_USER", "bob", 1);
    setenv("CARDROOM_BOT_DATABASE", "", 1); /* empty: as if unset */
    cfg c;
    load_ok(&c, path);
    cr_expect_eq(c.remind_after, 45);
    cr_expect_str_eq(c.prefix, "??");
    cr_expect_eq(c.threads, 3);
    cr_expect_eq(c.rules.caps, G304_CAPS_OFF);
    cr_expect_eq(c.rules.step_above_200, 5);
    cr_expect_str_eq(c.console_user, "bob");
    cr_expect_str_eq(c.database, "cardroom.db");
}

Test(config, environment_alone)
{
    cfg c, want;
    cfg_defaults(&c);
    cfg_defaults(&want);
    char err[CFG_ERR] = "x";
    cr_assert_eq(cfg_env(&c, err, sizeof err), 0, "%s", err);
    cr_expect_eq(memcmp(&c, &want, sizeof c), 0);
    setenv("CARDROOM_BOT_LOG_LEVEL", "debug", 1);
    setenv("CARDROOM_TIMERS_BOT_DELAY_MS", "250", 1);
    setenv("CARDROOM_CONSOLE_ROOM", "kitchen", 1);
    setenv("CARDROOM_RULES_START_TOKENS", "5", 1);
    cr_assert_eq(cfg_env(&c, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(c.log_level, "debug");
    cr_expect_eq(c.bot_delay_ms, 250);
    cr_expect_str_eq(c.console_room, "kitchen");
    cr_expect_eq(c.rules.start_tokens, 5);
    /* cfg_env keeps what the caller already had. */
    c.threads = 12;
    cr_assert_eq(cfg_env(&c, err, sizeof err), 0, "%s", err);
    cr_expect_eq(c.threads, 12);
}

Test(config, environment_errors)
{
    setenv("CARDROOM_TIMERS_REMIND_AFTER", "soon", 1);
    env_fails("environment CARDROOM_TIMERS_REMIND_AFTER: must be a number of seconds from 0 to 2592000 (30 days; 0 "
              "turns it off), not 'soon'");
    unsetenv("CARDROOM_TIMERS_REMIND_AFTER");
    setenv("CARDROOM_BOT_PREFIX", "a b", 1);
    env_fails("environment CARDROOM_BOT_PREFIX: must be 1 to 8 characters without blanks, not 'a b'");
    unsetenv("CARDROOM_BOT_PREFIX");

    g304_rules r;
    g304_rules_default(&r);
    g304_error e = {0};
    cr_assert_eq(g304_rules_set(&r, "bidding", "double", &e), -1);
    char want[CFG_ERR];
    snprintf(want, sizeof want, "environment CARDROOM_RULES_BIDDING: %s", e.msg);
    setenv("CARDROOM_RULES_BIDDING", "double", 1);
    env_fails(want);

    /* cfg_load reports the environment too, after a good file. */
    char err[CFG_ERR];
    cfg c;
    cr_assert_eq(cfg_load(&c, write_file("ok.ini", "[bot]\n"), err, sizeof err), -1);
    cr_expect_str_eq(err, want);
}

Test(config, long_values_refused_not_cut)
{
    char value[512], text[600], want[CFG_ERR];
    cfg c;

    /* The environment: 255 bytes fit the database field, 256 do not. */
    memset(value, 'd', 255);
    value[255] = '\0';
    setenv("CARDROOM_BOT_DATABASE", value, 1);
    cfg_defaults(&c);
    char err[CFG_ERR];
    cr_assert_eq(cfg_env(&c, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(c.database, value);
    value[255] = 'd';
    value[256] = '\0';
    setenv("CARDROOM_BOT_DATABASE", value, 1);
    cr_assert_eq(cfg_env(&c, err, sizeof err), -1);
    cr_expect_str_eq(err, "environment CARDROOM_BOT_DATABASE: must be the path of the SQLite file, 1 to 255 "
                          "characters, not 'dddddddddddddddddddddddddddddddddddddddddddddddd...'");
    memset(value, 'd', 399);
    value[399] = '\0';
    setenv("CARDROOM_BOT_DATABASE", value, 1);
    cr_assert_eq(cfg_env(&c, err, sizeof err), -1);
    cr_expect_str_eq(err, "environment CARDROOM_BOT_DATABASE: must be the path of the SQLite file, 1 to 255 "
                          "characters, not 'dddddddddddddddddddddddddddddddddddddddddddddddd...'");
    /* 200 characters fit the count but not the field's 255 bytes. */
    value[0] = '\0';
    for (int i = 0; i < 200; i++) strcat(value, "\xC3\xA9"); /* é */
    setenv("CARDROOM_BOT_DATABASE", value, 1);
    cr_assert_eq(cfg_env(&c, err, sizeof err), -1);
    cr_expect(strstr(err, "environment CARDROOM_BOT_DATABASE: must be at most 255 bytes long; this value has 400 "
                          "bytes") == err, "%s", err);
    cr_expect_eq(strlen(c.database), 255, "a refused value changed the field");
    unsetenv("CARDROOM_BOT_DATABASE");

    /* The file: a line of 198 characters is read whole, also with CRLF. */
    memset(value, 'p', 187);
    value[187] = '\0';
    snprintf(text, sizeof text, "[bot]\ndatabase = %s\r\n", value); /* 11 + 187 = 198 */
    load_ok(&c, write_file("l.ini", text));
    cr_expect_str_eq(c.database, value);

    /* A longer line is refused, naming the key and the variable to use instead. */
    memset(value, 'p', 250);
    value[250] = '\0';
    snprintf(text, sizeof text, "[bot]\ndatabase = %s\nthreads = 3\n", value);
    load_fails(text, "2: [bot] database: the line is longer than 198 characters, the most a line may have; give a "
                     "longer value in the environment as CARDROOM_BOT_DATABASE");
    snprintf(text, sizeof text, "[bot]\n# %s\n", value);
    load_fails(text, "2: the line is longer than 198 characters, the most a line may have");
    snprintf(want, sizeof want, "3: [console] user: must be 1 to 32 characters of A-Z a-z 0-9 _ . -, not '%.48s...'",
             value);
    snprintf(text, sizeof text, "[console]\n\nuser = %.150s\n", value);
    load_fails(text, want);
}

Test(config, admins)
{
    cfg c;
    cfg_defaults(&c);
    cr_expect_not(cfg_is_admin(&c, "@root:example.org"), "nobody by default");
    cr_expect_not(cfg_is_admin(&c, ""));
    snprintf(c.admins, sizeof c.admins, " @root:example.org,$a:oper  Bob ,");
    cr_expect(cfg_is_admin(&c, "@root:example.org"));
    cr_expect_not(cfg_is_admin(&c, "@Root:example.org"), "a Matrix user id matches exactly");
    cr_expect_not(cfg_is_admin(&c, "@root:example.or"));
    cr_expect_not(cfg_is_admin(&c, "@root:example.org2"));
    cr_expect(cfg_is_admin(&c, "$a:oper"));
    cr_expect(cfg_is_admin(&c, "$a:OPER"), "IRC names in any case");
    cr_expect(cfg_is_admin(&c, "bob"));
    cr_expect_not(cfg_is_admin(&c, "bo"));
    cr_expect_not(cfg_is_admin(&c, ""), "an empty name is nobody");
    cr_expect_not(cfg_is_admin(&c, "$a:oper Bob"), "one entry at a time");
}
