/* console.c — the console adapter (see console.h).
 *
 * One loop: poll standard input and the core's wake-up descriptor, hand each input line to
 * the core as one batch (its line number is the adapter position), let the core apply computer
 * moves and timers, and print the outbox. In script mode a line is read only once the core is
 * idle, and lines up to the stored position are skipped after a restart. A line the core does
 * not take (its store fails) is offered again until it does; the loop waits meanwhile. */
#include "console.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"

#define LINE_MAX_BYTES 8192
#define NET "console"

typedef struct {
    const cfg *config;
    const console_options *o;
    core *core;
    store *db;
    long line_no;
    long skip;          /* lines already handled before a restart */
} console;

static int console_send(void *ctx, const store_msg *m)
{
    console *k = ctx;
    const char *p = m->text;
    for (;;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        if (m->user[0]) fprintf(k->o->out, "[@%s] %.*s\n", m->user, n, p);
        else fprintf(k->o->out, "[#%s] %.*s\n", m->room, n, p);
        if (!nl) break;
        p = nl + 1;
    }
    fflush(k->o->out);
    return ADAPTER_SENT;
}

static void console_notice(void *ctx, const char *room, const char *text)
{
    console *k = ctx;
    fprintf(k->o->out, "[#%s] %s\n", room, text);
    fflush(k->o->out);
}

static void console_log(void *ctx, core_log_level level, const char *line)
{
    console *k = ctx;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if ((int)level <= cfg_log_rank(k->config) && (level <= CORE_LOG_WARN || !k->o->script))
        fprintf(k->o->err, "cardroom: %s: %s\n", names[level], line);
}

/* Milliseconds until the core's next deadline, at most cap. */
static int until_deadline(console *k, int cap)
{
    int64_t deadline = core_next_deadline(k->core);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return deadline == INT64_MAX ? cap : deadline <= now ? 0 : (int)(deadline - now > cap ? cap : deadline - now);
}

/* How long settle() runs the core: once; until it has nothing more to do right now; or until,
 * besides, every commit is durable (before the console stops: the store has written everything,
 * or met its failure and mended it). */
enum { SETTLE_ONCE, SETTLE_IDLE, SETTLE_DURABLE };

/* Runs the core as far as `until` says; while its store fails, until the store works again. */
static void settle(console *k, int until)
{
    for (;;) {
        core_tick(k->core);
        core_flush(k->core);
        int suspended = core_suspended(k->core);
        if (!suspended && (until == SETTLE_ONCE || (core_busy(k->core) == 0 &&
                                                    (until == SETTLE_IDLE || core_all_durable(k->core)))))
            return;
        struct pollfd p = {.fd = core_wake_fd(k->core), .events = POLLIN};
        poll(&p, p.fd >= 0, until_deadline(k, suspended ? 1000 : 50));
    }
}

/* Hands one batch to the core; while the store fails it is kept and offered again. */
static void offer(console *k, const adapter_event *e, int n, const char *pos)
{
    while (core_batch(k->core, NET, e, n, pos) != 0) settle(k, SETTLE_ONCE);
}

static void handle(console *k, const adapter_event *e, int n)
{
    char pos[32];
    snprintf(pos, sizeof pos, "%ld", k->line_no);
    offer(k, e, n, pos);
    settle(k, k->o->script ? SETTLE_IDLE : SETTLE_ONCE);
}

/* "alice> text" (room) or "alice>> text" (private). Returns 0, 1 to skip, -1 malformed. */
static int parse_script_line(char *line, adapter_event *e, const char *room)
{
    if (line[0] == 0 || line[0] == '#') return 1;
    char *gt = strchr(line, '>');
    if (!gt || gt == line) return -1;
    *gt = 0;
    for (char *p = line; *p; p++)
        if (*p == ' ' || *p == '\t') return -1;
    char *text = gt + 1;
    int is_private = *text == '>';
    text += is_private;
    if (*text == ' ') text++;
    *e = (adapter_event){.kind = ADAPTER_MESSAGE, .room = is_private ? NULL : room, .sender = line, .text = text,
                         .is_private = is_private};
    return 0;
}

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
}

static int run_script(console *k)
{
    char line[LINE_MAX_BYTES];
    settle(k, SETTLE_IDLE);
    while (fgets(line, sizeof line, k->o->in)) {
        k->line_no++;
        if (k->line_no <= k->skip) continue;
        chomp(line);
        adapter_event e;
        int rc = parse_script_line(line, &e, k->config->console_room);
        if (rc < 0) {
            fprintf(k->o->err, "cardroom console: line %ld: expected \"USER> TEXT\" or \"USER>> TEXT\"\n", k->line_no);
            return 2;
        }
        handle(k, &e, rc == 0);
    }
    settle(k, SETTLE_DURABLE);
    return 0;
}

/* With no open table, the terminal user gets one against three computer players (or, with
 * --players 6, with two of five against three); with one (a game from an earlier run), the
 * table and the user's hand are shown again. */
static void open_default_table(console *k)
{
    static const char *const fresh[] = {"new 304", "join 1", "bot", "bot", "bot", "start"};
    static const char *const fresh6[] = {"new 304 6", "join 1", "bot", "bot", "bot", "bot", "bot", "start"};
    static const char *const again[] = {"table", "hand"};
    int resume = core_table_of(k->core, NET, k->config->console_room) != 0, six = k->o->players == 6;
    const char *const *words = resume ? again : six ? fresh6 : fresh;
    int n = resume ? 2 : six ? 8 : 6;
    adapter_event e[8];
    char text[8][64];
    for (int i = 0; i < n; i++) {
        snprintf(text[i], sizeof text[i], "%s%s", k->config->prefix, words[i]);
        e[i] = (adapter_event){.kind = ADAPTER_MESSAGE, .room = k->config->console_room,
                               .sender = k->config->console_user, .text = text[i], .moderator = 1};
    }
    offer(k, e, n, NULL);
}

static void interactive_line(console *k, char *line)
{
    char text[LINE_MAX_BYTES + 16];
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = k->config->console_room, .sender = k->config->console_user,
                       .text = text, .moderator = 1};
    chomp(line);
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) return;
    if (strncmp(p, "/msg ", 5) == 0) {
        e.is_private = 1;
        e.room = NULL;
        snprintf(text, sizeof text, "%s", p + 5);
    } else if (strncmp(p, k->config->prefix, strlen(k->config->prefix)) == 0) {
        snprintf(text, sizeof text, "%s", p);
    } else {
        snprintf(text, sizeof text, "%s%s", k->config->prefix, p);
    }
    offer(k, &e, 1, NULL);
}

static int run_interactive(console *k)
{
    char line[LINE_MAX_BYTES];
    fprintf(k->o->out, "cardroom console — you are %s in %s. Type help for the commands; secrets go with /msg "
            "(e.g. /msg trump 7H). Ctrl-D quits; the game is saved.\n", k->config->console_user, k->config->console_room);
    settle(k, SETTLE_IDLE);
    open_default_table(k);
    settle(k, SETTLE_IDLE);
    for (;;) {
        struct pollfd p[2] = {{.fd = fileno(k->o->in), .events = POLLIN}, {.fd = core_wake_fd(k->core), .events = POLLIN}};
        if (poll(p, p[1].fd >= 0 ? 2 : 1, until_deadline(k, 1000)) < 0 && errno != EINTR) return 1;
        if (p[0].revents & (POLLIN | POLLHUP)) {
            if (!fgets(line, sizeof line, k->o->in)) break;
            interactive_line(k, line);
            settle(k, SETTLE_IDLE); /* the computer players answer before the next line */
        }
        settle(k, SETTLE_ONCE);
    }
    settle(k, SETTLE_DURABLE);
    return 0;
}

static const char *console_name(void *ctx, const char *room, const char *user, char *buf, size_t len)
{
    (void)ctx;
    (void)room;
    snprintf(buf, len, "%s", user);
    return buf;
}

int console_run(const cfg *config, const console_options *o)
{
    console k = {config, o, NULL, NULL, 0, 0};
    char err[512], pos[32];
    const char *path = o->db ? o->db : o->script ? ":memory:" : config->database;
    int held = store_open_exclusive(&k.db, path, err, sizeof err);
    if (held != 0) {
        fprintf(o->err, "cardroom: %s\n", err);
        return held > 0 ? 3 : 1;
    }
    cfg unlimited = *config; /* whoever types here runs the bot: no rate limit */
    unlimited.rate_commands = 0;
    core_options co = {.config = &unlimited, .db = k.db, .log = console_log, .log_ctx = &k,
                       .fixed_seed = o->fixed_seed, .seed = o->seed, .retry_ms = o->retry_ms};
    k.core = core_new(&co, err, sizeof err);
    adapter a = {.net = NET, .ctx = &k, .send = console_send, .display_name = console_name, .private_how = "with /msg",
                 .notice = console_notice};
    int rc = 1;
    if (!k.core || core_add_adapter(k.core, &a) != 0) {
        fprintf(o->err, "cardroom: %s\n", k.core ? "cannot add the console" : err);
        goto done;
    }
    if (o->script && store_position_get(k.db, NET, pos, sizeof pos) == 0) k.skip = strtol(pos, NULL, 10);
    /* The console is up at once: an empty batch has the core do what its tables held for the
     * Caps judge before a restart. */
    if (core_restore(k.core) < 0) goto done;
    offer(&k, NULL, 0, NULL);
    rc = o->script ? run_script(&k) : run_interactive(&k);
done:
    core_free(k.core);
    store_close(k.db);
    return rc;
}
