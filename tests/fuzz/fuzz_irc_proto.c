/* fuzz_irc_proto.c — libFuzzer target for the IRC session machine (adapters/irc/irc_proto.h).
 *
 * The input is what a server sends: lines split at '\n' (a '\r' before it dropped), fed to
 * one session that has the caps, SASL and channels of a real one (the first lines of every
 * run register it). Whatever the lines, the promises must hold: every line the machine asks
 * to send is a valid IRC line under 512 bytes without CR or LF, and never shows the password
 * outside AUTHENTICATE/IDENTIFY; every event names a sender that is a lower-cased nick or
 * "$a:" account, a room that is a joined channel's lower-cased name (or none for a private
 * message), an origin that is "" for an account and otherwise "" or user@host, and for a
 * RENAME a new id other than the old; the ids, targets, names and the line budget the sending
 * side asks for stay consistent. */
#include <string.h>

#include "fuzz_init.h"
#include "irc_line.h"
#include "irc_proto.h"

#define CHECK(x)             \
    do {                     \
        if (!(x)) abort();   \
    } while (0)

#define PASSWORD "fuzz-secret-pw"

static irc_proto *P;

static void h_send(void *ctx, const char *line)
{
    (void)ctx;
    size_t n = strlen(line);
    CHECK(n > 0 && n <= IRC_MAX_MSG_BYTES - 2);
    CHECK(!strchr(line, '\r') && !strchr(line, '\n'));
    if (strstr(line, PASSWORD)) CHECK(!strncmp(line, "PRIVMSG NickServ :IDENTIFY ", 27) || !strncmp(line, "PONG ", 5));
    char copy[IRC_MAX_MSG_BYTES];
    memcpy(copy, line, n + 1);
    irc_msg m;
    CHECK(irc_parse(copy, &m) == 0);
}

static int lower_nick(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if ((*s >= 'A' && *s <= 'Z') || *s == ' ') return 0;
    return 1;
}

static int valid_id(const char *s)
{
    if (!s || !s[0]) return 0;
    return !strncmp(s, "$a:", 3) ? s[3] != 0 : lower_nick(s);
}

static void h_event(void *ctx, const adapter_event *e)
{
    (void)ctx;
    CHECK(valid_id(e->sender));
    CHECK(e->origin);
    if (!strncmp(e->sender, "$a:", 3) || !e->origin[0]) CHECK(!e->origin[0]);
    else CHECK(strchr(e->origin, '@') && !strchr(e->origin, ' ') && e->origin[0] != '@');
    if (e->kind == ADAPTER_MESSAGE) {
        CHECK(e->text != NULL);
        CHECK(e->is_private ? e->room == NULL : (e->room && irc_proto_in_channel(P, e->room)));
    } else {
        CHECK(e->kind == ADAPTER_LEAVE || e->kind == ADAPTER_JOIN || e->kind == ADAPTER_RENAME ||
              e->kind == ADAPTER_GONE);
        CHECK(e->room && irc_proto_in_channel(P, e->room) && !e->text);
    }
    if (e->kind == ADAPTER_RENAME) CHECK(valid_id(e->renamed_to) && strcmp(e->renamed_to, e->sender) != 0);
    else CHECK(e->renamed_to == NULL);
    if (e->room) {
        char id[IRC_NAME_MAX];
        CHECK(!strcmp(irc_proto_room_id(P, e->room, id, sizeof id), e->room));
        CHECK(irc_proto_channel_name(P, e->room) != NULL);
    }
    char buf[IRC_NAME_MAX + 8];
    CHECK(irc_proto_display(P, e->sender, buf, sizeof buf) == buf);
    irc_proto_target(P, e->sender);
}

static void h_refused(void *ctx, const char *nick, int why)
{
    (void)ctx;
    CHECK(nick && (why == IRC_REFUSED_CALLERID || why == IRC_REFUSED_REGONLY));
}

static void h_fatal(void *ctx, int status, const char *why)
{
    (void)ctx;
    CHECK(status == 2 && why && why[0]);
}

static void feed(const char *s)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    irc_proto_line(P, buf, strlen(buf));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    irc_proto_config c = {.nick = "cardroom", .username = "cr", .realname = "cards", .account = "bot",
                          .password = PASSWORD, .login = IRC_LOGIN_AUTO, .invites = "alice bob"};
    irc_proto_hooks h = {.send_now = h_send, .event = h_event, .refused = h_refused, .fatal = h_fatal};
    P = irc_proto_new(&c, &h);
    CHECK(P);
    irc_proto_want_channel(P, "#cards");
    irc_proto_reset(P);
    feed(":s CAP * LS :sasl account-tag extended-join account-notify multi-prefix");
    feed(":s CAP * ACK :sasl account-tag extended-join account-notify multi-prefix");
    feed("AUTHENTICATE +");
    feed(":s 903 cardroom :ok");
    feed(":s 001 cardroom :hi");
    feed(":cardroom!u@h JOIN #cards * :x");
    char *buf = malloc(size + 1);
    CHECK(buf);
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n') continue;
        size_t end = i;
        if (end > start && data[end - 1] == '\r') end--;
        memcpy(buf, data + start, end - start);
        buf[end - start] = 0;
        if (!memchr(buf, 0, end - start)) irc_proto_line(P, buf, end - start);
        start = i + 1;
        irc_proto_tick(P, (int64_t)i * 1000);
        size_t budget = irc_proto_budget(P, "PRIVMSG", "#cards");
        CHECK(budget > 0 && budget <= irc_budget(irc_proto_nick(P), "", "", "PRIVMSG", "#cards"));
    }
    free(buf);
    irc_proto_free(P);
    P = NULL;
    return 0;
}
