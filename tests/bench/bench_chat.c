/* bench_chat.c — what a scripted match costs in chat: lines, messages and time on the wire.
 *
 * A program, not a test. It plays a console script (`USER> TEXT` lines, by default the whole
 * four-person 304 match of tests/matrix/match-seed1.txt; the six-person one is
 * tests/console/six-match.txt, the `chat6` benchmark) through the console adapter with
 * --seed 1 on a database in a temporary directory, then reads back every message the bot
 * queued (the outbox) and the table's journal, and prints per hand (hands = deal entries):
 *   - room lines and private lines, as the console prints them (one per text line);
 *   - messages to the room and privately: what Matrix posts, one event each;
 *   - the lines the IRC adapter would send for the same messages (suits coloured, each text
 *     line split to fit 512 bytes with the bot's prefix: NOTICE to a channel, PRIVMSG to a
 *     nick), and the minutes a hand takes at one line a second (the usual flood limit), room
 *     and private lines together since they share the connection's budget.
 * It does this twice: with the players' private turn notices on (the console's and IRC's
 * default) and off (Matrix's default; each player — all six names the scripts use — says
 * `!notify off` first, and those answers are left out of the counts).
 *
 * Usage: bench_chat [SCRIPT [SEED]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "console.h"
#include "irc_line.h"
#include "store.h"

#ifndef SOURCE_DIR
#error "build with -DSOURCE_DIR=\"/path/to/the/source\""
#endif

#define CHANNEL "#room"

typedef struct {
    long skip;                    /* messages before this id are the set-up's answers */
    long room_msgs, room_lines, room_irc;
    long priv_msgs, priv_lines, priv_irc;
} tally;

static int count_chunk(void *ctx, const char *chunk, size_t len, size_t offset)
{
    (void)chunk, (void)len, (void)offset;
    ++*(long *)ctx;
    return 0;
}

/* Lines the IRC adapter sends for text: coloured suits, split at newlines and to the budget. */
static long irc_lines(const char *text, int private)
{
    char nick[IRC_ASSUME_NICKLEN + 1];
    memset(nick, 'x', IRC_ASSUME_NICKLEN);
    nick[IRC_ASSUME_NICKLEN] = 0;
    size_t need = irc_colour_suits(text, NULL, 0);
    char *coloured = malloc(need + 1);
    if (!coloured) abort();
    irc_colour_suits(text, coloured, need + 1);
    size_t max = irc_budget(NULL, NULL, NULL, private ? "PRIVMSG" : "NOTICE", private ? nick : CHANNEL);
    long n = 0;
    irc_split(coloured, max, count_chunk, &n);
    free(coloured);
    return n;
}

static int count_msg(void *ctx, const store_msg *m)
{
    tally *t = ctx;
    if (m->id <= t->skip) return 0;
    long lines = 1;
    for (const char *p = m->text; *p; p++) lines += *p == '\n';
    long irc = irc_lines(m->text, m->user[0] != 0);
    if (m->user[0]) t->priv_msgs++, t->priv_lines += lines, t->priv_irc += irc;
    else t->room_msgs++, t->room_lines += lines, t->room_irc += irc;
    return 0;
}

static int count_deal(void *ctx, int64_t seq, const char *entry)
{
    (void)seq;
    *(int *)ctx += strncmp(entry, "deal ", 5) == 0;
    return 0;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    rewind(f);
    size_t got = text ? fread(text, 1, (size_t)n, f) : 0;
    fclose(f);
    if (text) text[got] = 0;
    return text;
}

/* Plays prelude + script; fills t and the number of hands dealt. Returns 0, or -1. */
static int play(const char *dir, const char *prelude, const char *script, uint64_t seed, tally *t, int *hands)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/chat.db", dir);
    unlink(path);
    cfg c;
    cfg_defaults(&c);
    c.remind_after = c.idle_takeover = c.table_idle_close = 0;
    size_t plen = strlen(prelude), slen = strlen(script);
    char *input = malloc(plen + slen + 1);
    if (!input) abort();
    memcpy(input, prelude, plen);
    memcpy(input + plen, script, slen + 1);
    FILE *in = fmemopen(input, plen + slen, "r"), *out = fopen("/dev/null", "w");
    console_options o = {.script = 1, .fixed_seed = 1, .seed = seed, .db = path, .in = in, .out = out, .err = stderr};
    int rc = console_run(&c, &o);
    fclose(in);
    fclose(out);
    free(input);
    if (rc != 0) return -1;
    store *s;
    if (store_open(&s, path, err, sizeof err) != 0) {
        fprintf(stderr, "bench_chat: %s\n", err);
        return -1;
    }
    memset(t, 0, sizeof *t);
    for (const char *p = prelude; *p; p++) t->skip += *p == '\n'; /* one answer per set-up line */
    *hands = 0;
    rc = store_outbox_all(s, count_msg, t) || store_journal_each(s, 1, count_deal, hands);
    store_close(s);
    unlink(path);
    snprintf(path, sizeof path, "%s/chat.db-wal", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/chat.db-shm", dir);
    unlink(path);
    return rc ? -1 : 0;
}

static void report(const char *what, const tally *t, int hands)
{
    double h = hands > 0 ? hands : 1;
    printf("%s\n", what);
    printf("  room:    %5ld lines in %5ld messages: %6.1f lines, %6.1f messages per hand\n", t->room_lines,
           t->room_msgs, t->room_lines / h, t->room_msgs / h);
    printf("  private: %5ld lines in %5ld messages: %6.1f lines, %6.1f messages per hand\n", t->priv_lines,
           t->priv_msgs, t->priv_lines / h, t->priv_msgs / h);
    printf("  Matrix events per hand: %.1f\n", (t->room_msgs + t->priv_msgs) / h);
    long irc = t->room_irc + t->priv_irc;
    printf("  IRC lines: %ld room + %ld private = %ld, %.1f per hand: %.2f minutes per hand at 1 line/s\n",
           t->room_irc, t->priv_irc, irc, irc / h, irc / h / 60.0);
}

int main(int argc, char **argv)
{
    const char *script_path = argc > 1 ? argv[1] : SOURCE_DIR "/tests/matrix/match-seed1.txt";
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    char dir[] = "/tmp/bench-chat-XXXXXX";
    char *script = read_all(script_path);
    if (!script || !mkdtemp(dir)) {
        fprintf(stderr, "bench_chat: cannot read %s or make a temporary directory\n", script_path);
        return 1;
    }
    static const char off[] = "alice> !notify off\nbob> !notify off\ncarol> !notify off\ndave> !notify off\n"
                              "erin> !notify off\nfrank> !notify off\n";
    tally on_t, off_t;
    int hands_on, hands_off;
    if (play(dir, "", script, seed, &on_t, &hands_on) != 0 || play(dir, off, script, seed, &off_t, &hands_off) != 0) {
        fprintf(stderr, "bench_chat: the script did not run\n");
        rmdir(dir);
        return 1;
    }
    rmdir(dir);
    printf("%s, --seed %llu: %d hands\n", script_path, (unsigned long long)seed, hands_on);
    report("turn notices on (console, IRC):", &on_t, hands_on);
    report("turn notices off (Matrix):", &off_t, hands_off);
    free(script);
    return 0;
}
