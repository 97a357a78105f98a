/* test_irc_proto.c — the IRC session machine (adapters/irc/irc_proto.h) line by line.
 *
 * Each test plays the server: it feeds the lines a server sends and checks what the machine
 * asks to write (registration, CAP negotiation, SASL PLAIN, NickServ, JOIN, PONG, NICK), the
 * chat events it hands the core (who sent what, where, as which identity, moderator or not)
 * and the refusals and fatal errors it reports. */
#include <criterion/criterion.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irc_line.h"
#include "irc_proto.h"

TestSuite(irc_proto, .timeout = 30);

#define MAXREC 64

typedef struct {
    char sent[MAXREC][600];
    int nsent;
    struct {
        int kind;
        char room[128], sender[140], text[600], origin[140], renamed_to[140];
        int is_private, moderator;
    } ev[MAXREC];
    int nev;
    char refused[MAXREC][128];
    int refused_why[MAXREC];
    int nrefused;
    int fatal;
    char fatal_why[300];
    int registered;
    char logs[MAXREC][600];
    int nlogs;
} rec;

static void h_send(void *ctx, const char *line)
{
    rec *r = ctx;
    if (r->nsent < MAXREC) snprintf(r->sent[r->nsent++], sizeof r->sent[0], "%s", line);
}

static void h_event(void *ctx, const adapter_event *e)
{
    rec *r = ctx;
    if (r->nev >= MAXREC) return;
    r->ev[r->nev].kind = e->kind;
    snprintf(r->ev[r->nev].room, sizeof r->ev[0].room, "%s", e->room ? e->room : "(null)");
    snprintf(r->ev[r->nev].sender, sizeof r->ev[0].sender, "%s", e->sender);
    snprintf(r->ev[r->nev].text, sizeof r->ev[0].text, "%s", e->text ? e->text : "");
    snprintf(r->ev[r->nev].origin, sizeof r->ev[0].origin, "%s", e->origin ? e->origin : "(null)");
    snprintf(r->ev[r->nev].renamed_to, sizeof r->ev[0].renamed_to, "%s", e->renamed_to ? e->renamed_to : "(null)");
    r->ev[r->nev].is_private = e->is_private;
    r->ev[r->nev].moderator = e->moderator;
    r->nev++;
}

static void h_log(void *ctx, int level, const char *text)
{
    (void)level;
    rec *r = ctx;
    if (r->nlogs < MAXREC) snprintf(r->logs[r->nlogs++], sizeof r->logs[0], "%s", text);
}

static void h_registered(void *ctx) { ((rec *)ctx)->registered++; }

static void h_refused(void *ctx, const char *nick, int why)
{
    rec *r = ctx;
    if (r->nrefused >= MAXREC) return;
    snprintf(r->refused[r->nrefused], sizeof r->refused[0], "%s", nick);
    r->refused_why[r->nrefused++] = why;
}

static void h_fatal(void *ctx, int status, const char *why)
{
    rec *r = ctx;
    r->fatal = status;
    snprintf(r->fatal_why, sizeof r->fatal_why, "%s", why);
}

static rec R;

static void count_channel(void *ctx, const char *ch)
{
    (void)ch;
    (*(int *)ctx)++;
}

static irc_proto *make(const char *password, int login, const char *invites)
{
    memset(&R, 0, sizeof R);
    irc_proto_config c = {.nick = "cardroom", .username = "cr", .realname = "cardroom card games",
                          .account = "cardbot", .password = password, .login = login, .invites = invites};
    irc_proto_hooks h = {.ctx = &R, .send_now = h_send, .event = h_event, .log = h_log,
                         .registered = h_registered, .refused = h_refused, .fatal = h_fatal};
    irc_proto *p = irc_proto_new(&c, &h);
    cr_assert_not_null(p);
    cr_assert_eq(R.nsent, 0, "nothing is said before a connection is up");
    return p;
}

static void feed(irc_proto *p, const char *line)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", line);
    irc_proto_line(p, buf, strlen(buf));
}

static void expect_sent(int from, const char *const *lines)
{
    int n = 0;
    while (lines[n]) n++;
    cr_assert_eq(R.nsent - from, n, "expected %d lines, got %d (first: \"%s\")", n, R.nsent - from,
                 R.nsent > from ? R.sent[from] : "");
    for (int i = 0; i < n; i++) cr_assert_str_eq(R.sent[from + i], lines[i]);
}

/* A session up to 001 without caps or login. */
static irc_proto *registered(const char *invites)
{
    irc_proto *p = make("", IRC_LOGIN_AUTO, invites);
    irc_proto_want_channel(p, "#Cards");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :multi-prefix");
    feed(p, ":irc.test CAP cardroom ACK :multi-prefix");
    feed(p, ":irc.test 001 cardroom :Welcome");
    feed(p, ":irc.test 005 cardroom PREFIX=(qaohv)~&@%+ CHANMODES=beI,k,l,imnpst :are supported");
    feed(p, ":cardroom!cr@host JOIN #Cards");
    feed(p, ":irc.test 353 cardroom = #Cards :cardroom @Alice +bob %carol dave ~Owner");
    return p;
}

Test(irc_proto, registration_without_caps)
{
    irc_proto *p = make("", IRC_LOGIN_AUTO, "");
    irc_proto_want_channel(p, "#cards");
    irc_proto_want_channel(p, "#304");
    irc_proto_reset(p);
    expect_sent(0, (const char *[]){"CAP LS 302", "NICK cardroom", "USER cr 0 * :cardroom card games", NULL});
    /* A server without CAP answers 001 straight away. */
    feed(p, ":irc.test 001 cardroom :Welcome to the test net");
    expect_sent(3, (const char *[]){"JOIN #cards", "JOIN #304", NULL});
    cr_assert_eq(R.registered, 1);
    cr_assert(irc_proto_registered(p));
    feed(p, "PING :irc.test");
    cr_assert_str_eq(R.sent[R.nsent - 1], "PONG :irc.test");
    irc_proto_free(p);
}

Test(irc_proto, caps_are_negotiated_over_several_ls_lines)
{
    irc_proto *p = make("", IRC_LOGIN_AUTO, "");
    irc_proto_reset(p);
    int at = R.nsent;
    feed(p, ":irc.test CAP * LS * :account-tag away-notify extended-join");
    cr_assert_eq(R.nsent, at, "no request before the last LS line");
    feed(p, ":irc.test CAP * LS :server-time sasl=PLAIN,EXTERNAL multi-prefix batch");
    /* sasl is not asked for without a password. */
    expect_sent(at, (const char *[]){"CAP REQ :account-tag extended-join server-time multi-prefix", NULL});
    feed(p, ":irc.test CAP * ACK :account-tag extended-join server-time multi-prefix");
    cr_assert_str_eq(R.sent[R.nsent - 1], "CAP END");
    cr_assert(irc_proto_has_cap(p, "account-tag"));
    cr_assert(!irc_proto_has_cap(p, "batch"));
    feed(p, ":irc.test CAP * DEL :account-tag");
    cr_assert(!irc_proto_has_cap(p, "account-tag"));
    feed(p, ":irc.test CAP * NEW :account-tag echo-message");
    cr_assert_str_eq(R.sent[R.nsent - 1], "CAP REQ :account-tag");
    irc_proto_free(p);
}

Test(irc_proto, sasl_plain_login)
{
    irc_proto *p = make("s3cret pw", IRC_LOGIN_AUTO, "");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :sasl=EXTERNAL,PLAIN account-notify");
    cr_assert_str_eq(R.sent[R.nsent - 1], "CAP REQ :account-notify sasl");
    feed(p, ":irc.test CAP * ACK :account-notify sasl");
    cr_assert_str_eq(R.sent[R.nsent - 1], "AUTHENTICATE PLAIN");
    feed(p, "AUTHENTICATE +");
    /* base64("cardbot\0cardbot\0s3cret pw") */
    const char raw[] = "cardbot\0cardbot\0s3cret pw";
    char b64[128];
    sodium_bin2base64(b64, sizeof b64, (const unsigned char *)raw, sizeof raw - 1, sodium_base64_VARIANT_ORIGINAL);
    char want[200];
    snprintf(want, sizeof want, "AUTHENTICATE %s", b64);
    cr_assert_str_eq(R.sent[R.nsent - 1], want);
    int before = R.nsent;
    feed(p, ":irc.test 900 cardroom cardroom!cr@host cardbot :You are now logged in as cardbot");
    feed(p, ":irc.test 903 cardroom :SASL authentication successful");
    expect_sent(before, (const char *[]){"CAP END", NULL});
    cr_assert(irc_proto_logged_in(p));
    feed(p, ":irc.test 001 cardroom :Welcome");
    for (int i = before; i < R.nsent; i++) cr_assert_null(strstr(R.sent[i], "NickServ"), "no NickServ after SASL");
    for (int i = 0; i < R.nlogs; i++) cr_assert_null(strstr(R.logs[i], "s3cret"), "the password is never logged");
    irc_proto_free(p);
}

Test(irc_proto, sasl_payload_of_400_bytes_ends_with_plus)
{
    /* account "cardbot" twice + 2 NULs = 16 bytes; 300 - 16 = 284 bytes of password make 300
     * raw bytes, exactly 400 base64 characters. */
    char pw[285];
    memset(pw, 'p', 284);
    pw[284] = 0;
    irc_proto *p = make(pw, IRC_LOGIN_SASL, "");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :sasl");
    feed(p, ":irc.test CAP * ACK :sasl");
    int at = R.nsent;
    feed(p, "AUTHENTICATE +");
    cr_assert_eq(R.nsent - at, 2);
    cr_assert_eq(strlen(R.sent[at]), strlen("AUTHENTICATE ") + 400);
    cr_assert_str_eq(R.sent[at + 1], "AUTHENTICATE +");
    irc_proto_free(p);
}

Test(irc_proto, sasl_refused)
{
    /* auto: logged, and the bot goes on without the account. */
    irc_proto *p = make("wrong", IRC_LOGIN_AUTO, "");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :sasl");
    feed(p, ":irc.test CAP * ACK :sasl");
    feed(p, "AUTHENTICATE +");
    feed(p, ":irc.test 904 cardroom :SASL authentication failed");
    cr_assert_eq(R.fatal, 0);
    cr_assert_str_eq(R.sent[R.nsent - 1], "CAP END");
    irc_proto_free(p);
    /* sasl: the operator must act (exit status 2). */
    p = make("wrong", IRC_LOGIN_SASL, "");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :sasl");
    feed(p, ":irc.test CAP * ACK :sasl");
    feed(p, "AUTHENTICATE +");
    feed(p, ":irc.test 904 cardroom :SASL authentication failed");
    cr_assert_eq(R.fatal, 2);
    cr_assert(strstr(R.fatal_why, "SASL login as cardbot refused"), "%s", R.fatal_why);
    irc_proto_free(p);
    /* sasl asked for, but not offered (or without PLAIN). */
    p = make("pw", IRC_LOGIN_SASL, "");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :sasl=EXTERNAL multi-prefix");
    cr_assert_eq(R.fatal, 2);
    irc_proto_free(p);
}

Test(irc_proto, nickserv_when_there_is_no_sasl)
{
    irc_proto *p = make("pw here", IRC_LOGIN_AUTO, "");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :multi-prefix");
    feed(p, ":irc.test CAP * ACK :multi-prefix");
    int at = R.nsent;
    feed(p, ":irc.test 001 cardroom :Welcome");
    /* No channel to join: WHOIS of itself shows the bot its own prefix. */
    expect_sent(at, (const char *[]){"PRIVMSG NickServ :IDENTIFY cardbot pw here", "WHOIS cardroom", NULL});
    irc_proto_free(p);
    /* login = none never sends the password. */
    p = make("pw here", IRC_LOGIN_NONE, "");
    irc_proto_reset(p);
    feed(p, ":irc.test 001 cardroom :Welcome");
    for (int i = 0; i < R.nsent; i++) cr_assert_null(strstr(R.sent[i], "pw here"));
    irc_proto_free(p);
}

Test(irc_proto, nick_in_use)
{
    irc_proto *p = make("", IRC_LOGIN_AUTO, "");
    irc_proto_reset(p);
    feed(p, ":irc.test 433 * cardroom :Nickname is already in use");
    cr_assert_str_eq(R.sent[R.nsent - 1], "NICK cardroom_");
    feed(p, ":irc.test 433 * cardroom_ :Nickname is already in use");
    cr_assert_str_eq(R.sent[R.nsent - 1], "NICK cardroom1");
    feed(p, ":irc.test 001 cardroom1 :Welcome");
    cr_assert_str_eq(irc_proto_nick(p), "cardroom1");
    int at = R.nsent;
    irc_proto_tick(p, 1000000);
    expect_sent(at, (const char *[]){"NICK cardroom", NULL});
    irc_proto_tick(p, 1000000 + 5000);
    cr_assert_eq(R.nsent, at + 1, "not again within a minute");
    feed(p, ":cardroom1!cr@host NICK :cardroom");
    cr_assert_str_eq(irc_proto_nick(p), "cardroom");
    irc_proto_tick(p, 1000000 + 120000);
    cr_assert_eq(R.nsent, at + 1, "nothing to regain");
    irc_proto_free(p);
    /* An erroneous nick is the operator's to mend. */
    p = make("", IRC_LOGIN_AUTO, "");
    irc_proto_reset(p);
    feed(p, ":irc.test 432 * cardroom :Erroneous nickname");
    cr_assert_eq(R.fatal, 2);
    irc_proto_free(p);
}

Test(irc_proto, messages_and_identity_by_nick)
{
    irc_proto *p = registered("");
    feed(p, ":Alice!a@h PRIVMSG #CARDS :!new 304");
    feed(p, ":bob!b@h PRIVMSG cardroom :!hand");
    feed(p, ":[Dave]!d@h PRIVMSG #cards :\x02!join\x02 \x03" "04,01" "2\x0f");
    cr_assert_eq(R.nev, 3);
    cr_assert_str_eq(R.ev[0].room, "#cards");
    cr_assert_str_eq(R.ev[0].sender, "alice");
    cr_assert_str_eq(R.ev[0].text, "!new 304");
    cr_assert_eq(R.ev[0].is_private, 0);
    cr_assert_eq(R.ev[0].moderator, 1, "@ is a channel operator");
    cr_assert_str_eq(R.ev[1].room, "(null)");
    cr_assert_eq(R.ev[1].is_private, 1);
    cr_assert_str_eq(R.ev[1].sender, "bob");
    cr_assert_str_eq(R.ev[2].sender, "{dave}", "rfc1459 casemapping");
    cr_assert_str_eq(R.ev[2].text, "!join 2", "formatting is stripped");
    char buf[64];
    cr_assert_str_eq(irc_proto_display(p, "alice", buf, sizeof buf), "Alice");
    cr_assert_str_eq(irc_proto_target(p, "alice"), "Alice");
    cr_assert_str_eq(irc_proto_target(p, "zed"), "zed", "an unseen nick is tried as it is");
    cr_assert_str_eq(irc_proto_room_id(p, "#Ca[r]ds", buf, sizeof buf), "#ca{r}ds");
    irc_proto_free(p);
}

Test(irc_proto, ascii_casemapping)
{
    irc_proto *p = registered("");
    feed(p, ":irc.test 005 cardroom CASEMAPPING=ascii :are supported");
    feed(p, ":[Dave]!d@h PRIVMSG #cards :!join");
    cr_assert_str_eq(R.ev[0].sender, "[dave]", "under ascii, [ and { are different letters");
    char buf[64];
    cr_assert_str_eq(irc_proto_room_id(p, "#Ca[r]ds", buf, sizeof buf), "#ca[r]ds");
    irc_proto_free(p);
}

Test(irc_proto, ignored_lines)
{
    irc_proto *p = registered("");
    feed(p, ":Alice!a@h PRIVMSG #cards :\x01" "ACTION waves\x01");
    feed(p, ":Alice!a@h NOTICE #cards :!new 304");
    feed(p, ":cardroom!cr@h PRIVMSG #cards :!new 304");
    feed(p, ":Alice!a@h PRIVMSG #elsewhere :!new 304");
    feed(p, ":Alice!a@h PRIVMSG someoneelse :!new 304");
    feed(p, "");
    feed(p, ":::: :::");
    /* Numerics and commands without the parameters they should have are logged or ignored. */
    feed(p, ":irc.test 475");
    feed(p, ":irc.test 404");
    feed(p, ":irc.test 716 cardroom");
    feed(p, "PING");
    feed(p, ":irc.test PONG");
    cr_assert_eq(R.nev, 0);
    cr_assert_eq(R.nrefused, 0);
    irc_proto_free(p);
}

Test(irc_proto, moderators_follow_modes)
{
    irc_proto *p = registered("");
    feed(p, ":bob!b@h PRIVMSG #cards :x");
    feed(p, ":carol!c@h PRIVMSG #cards :x");
    feed(p, ":Owner!o@h PRIVMSG #cards :x");
    cr_assert_eq(R.ev[0].moderator, 0, "+ is voice only");
    cr_assert_eq(R.ev[1].moderator, 1, "% halfop");
    cr_assert_eq(R.ev[2].moderator, 1, "~ owner");
    feed(p, ":Alice!a@h MODE #cards +o-o+l bob Alice 10");
    feed(p, ":bob!b@h PRIVMSG #cards :x");
    feed(p, ":Alice!a@h PRIVMSG #cards :x");
    cr_assert_eq(R.ev[3].moderator, 1);
    cr_assert_eq(R.ev[4].moderator, 0);
    feed(p, ":Alice!a@h MODE #cards +b-v *!*@spam bob");
    feed(p, ":bob!b@h PRIVMSG #cards :x");
    cr_assert_eq(R.ev[5].moderator, 1, "a ban's argument is not taken for a nick");
    irc_proto_free(p);
}

Test(irc_proto, accounts_from_tags_join_and_notify)
{
    irc_proto *p = make("", IRC_LOGIN_AUTO, "");
    irc_proto_want_channel(p, "#cards");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :account-tag extended-join account-notify");
    feed(p, ":irc.test CAP * ACK :account-tag extended-join account-notify");
    feed(p, ":irc.test 001 cardroom :Welcome");
    feed(p, ":cardroom!cr@h JOIN #cards * :cardroom card games");
    feed(p, ":Bob!b@h JOIN #cards BobAcct :Bob");
    char buf[160];
    cr_assert_str_eq(irc_proto_user_id(p, "bob", buf, sizeof buf), "$a:bobacct");
    cr_assert_eq(R.ev[0].kind, ADAPTER_JOIN);
    cr_assert_str_eq(R.ev[0].sender, "$a:bobacct");
    cr_assert_str_eq(R.ev[0].origin, "", "the account decides: no origin");
    feed(p, "@account=BobAcct :Bob!b@h PRIVMSG #cards :!join");
    cr_assert_str_eq(R.ev[1].sender, "$a:bobacct");
    cr_assert_str_eq(R.ev[1].origin, "");
    /* A nick change keeps the identity (no RENAME); private messages follow the new nick. */
    feed(p, ":Bob!b@h NICK :Robert");
    cr_assert_eq(R.nev, 2);
    feed(p, "@account=BobAcct :Robert!b@h PRIVMSG #cards :!hand");
    cr_assert_str_eq(R.ev[2].sender, "$a:bobacct");
    cr_assert_str_eq(irc_proto_target(p, "$a:bobacct"), "Robert");
    cr_assert_str_eq(irc_proto_display(p, "$a:bobacct", buf, sizeof buf), "Robert");
    /* Someone else taking the nick "bob" without the account is a different player. */
    feed(p, ":bob!x@other JOIN #cards * :impostor");
    feed(p, ":bob!x@other PRIVMSG #cards :!play JS");
    cr_assert_str_eq(R.ev[4].sender, "bob");
    cr_assert_str_eq(R.ev[4].origin, "x@other");
    /* A message without the tag means logged out (account-tag is acknowledged). */
    feed(p, ":Robert!b@h PRIVMSG #cards :!hand");
    cr_assert_str_eq(R.ev[5].sender, "robert");
    cr_assert_str_eq(R.ev[5].origin, "b@h");
    feed(p, ":Robert!b@h ACCOUNT BobAcct");
    cr_assert_str_eq(irc_proto_user_id(p, "Robert", buf, sizeof buf), "$a:bobacct");
    feed(p, ":Robert!b@h ACCOUNT *");
    cr_assert_str_eq(irc_proto_user_id(p, "Robert", buf, sizeof buf), "robert");
    cr_assert_null(irc_proto_target(p, "$a:bobacct"), "nobody is logged in to it now");
    cr_assert_str_eq(irc_proto_display(p, "$a:bobacct", buf, sizeof buf), "bobacct");
    irc_proto_free(p);
}

Test(irc_proto, leaving)
{
    irc_proto *p = registered("");
    feed(p, ":Alice!a@h PART #cards :bye");
    feed(p, ":Alice2!a@h PART #cards :not a member");
    feed(p, ":Owner!o@h KICK #cards bob :out");
    feed(p, ":carol!c@h QUIT :Ping timeout");
    cr_assert_eq(R.nev, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(R.ev[i].kind, ADAPTER_LEAVE);
        cr_assert_str_eq(R.ev[i].room, "#cards");
    }
    cr_assert_str_eq(R.ev[0].sender, "alice");
    cr_assert_str_eq(R.ev[1].sender, "bob");
    cr_assert_str_eq(R.ev[2].sender, "carol");
    cr_assert(irc_proto_in_channel(p, "#cards"));
    feed(p, ":Owner!o@h KICK #Cards cardroom :go away");
    cr_assert(!irc_proto_in_channel(p, "#cards"));
    cr_assert_eq(R.nev, 4);
    cr_assert_eq(R.ev[3].kind, ADAPTER_GONE, "the core hears that the bot is no longer there");
    cr_assert_str_eq(R.ev[3].room, "#cards");
    int wanted = 0;
    irc_proto_each_channel(p, count_channel, &wanted);
    cr_assert_eq(wanted, 0, "kicked: not rejoined after a reconnect");
    irc_proto_free(p);
}

Test(irc_proto, parting_for_good)
{
    irc_proto *p = registered("");
    int from = R.nsent;
    cr_assert_eq(irc_proto_part(p, "#nochannel-here"), 0, "a channel the bot is not in is only forgotten");
    cr_assert_eq(irc_proto_part(p, "cards"), -1, "not a channel name");
    cr_assert_eq(irc_proto_part(p, "#cards"), 0, "the room id");
    static const char *const part[] = {"PART #Cards", NULL};
    expect_sent(from, part);
    int wanted = 0;
    irc_proto_each_channel(p, count_channel, &wanted);
    cr_assert_eq(wanted, 0, "not rejoined after a reconnect");
    cr_assert(irc_proto_in_channel(p, "#cards"), "in it until the server says so");
    feed(p, ":cardroom!cr@host PART #Cards :bye");
    cr_assert(!irc_proto_in_channel(p, "#cards"));
    cr_assert_eq(R.nev, 1);
    cr_assert_eq(R.ev[0].kind, ADAPTER_GONE);
    cr_assert_str_eq(R.ev[0].room, "#cards");
    cr_assert_str_eq(R.ev[0].sender, "cardroom");
    irc_proto_free(p);
}

Test(irc_proto, refused_private_messages)
{
    irc_proto *p = registered("");
    feed(p, ":irc.test 716 cardroom Alice :is in +g mode (server-side ignore)");
    feed(p, ":irc.test 717 cardroom Alice :has been informed that you messaged them.");
    feed(p, ":irc.test 486 cardroom bob :You must be identified to message bob");
    feed(p, ":irc.test 486 cardroom :You must identify to a registered nick to private message");
    cr_assert_eq(R.nrefused, 3);
    cr_assert_str_eq(R.refused[0], "Alice");
    cr_assert_eq(R.refused_why[0], IRC_REFUSED_CALLERID);
    cr_assert_eq(R.refused_why[1], IRC_REFUSED_CALLERID);
    cr_assert_str_eq(R.refused[2], "bob");
    cr_assert_eq(R.refused_why[2], IRC_REFUSED_REGONLY);
    irc_proto_free(p);
}

Test(irc_proto, invites)
{
    irc_proto *p = registered("alice, dave");
    unsigned v = irc_proto_channels_version(p);
    int at = R.nsent;
    feed(p, ":Alice!a@h INVITE cardroom #poker");
    feed(p, ":bob!b@h INVITE cardroom #bobs");
    feed(p, ":dave!d@h INVITE someoneelse #daves");
    expect_sent(at, (const char *[]){"JOIN #poker", NULL});
    int wanted = 0;
    irc_proto_each_channel(p, count_channel, &wanted);
    cr_assert_eq(wanted, 2);
    cr_assert_neq(irc_proto_channels_version(p), v, "the list changed: it must be saved again");
    v = irc_proto_channels_version(p);
    feed(p, ":bob!b@h INVITE cardroom #bobs");
    cr_assert_eq(irc_proto_channels_version(p), v, "nothing changed");
    irc_proto_free(p);
    /* With accounts on the network, only a listed account counts, not a nick. */
    p = make("", IRC_LOGIN_AUTO, "alice");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :account-tag");
    feed(p, ":irc.test CAP * ACK :account-tag");
    feed(p, ":irc.test 001 cardroom :Welcome");
    at = R.nsent;
    feed(p, ":alice!a@h INVITE cardroom #fake");
    cr_assert_eq(R.nsent, at);
    feed(p, "@account=alice :Al!a@h INVITE cardroom #real");
    expect_sent(at, (const char *[]){"JOIN #real", NULL});
    irc_proto_free(p);
}

Test(irc_proto, reconnect_forgets_the_session_but_not_the_channels)
{
    irc_proto *p = registered("");
    cr_assert(irc_proto_in_channel(p, "#cards"));
    irc_proto_reset(p);
    cr_assert(!irc_proto_registered(p));
    cr_assert(!irc_proto_in_channel(p, "#cards"));
    int at = R.nsent - 3;
    expect_sent(at, (const char *[]){"CAP LS 302", "NICK cardroom", "USER cr 0 * :cardroom card games", NULL});
    at = R.nsent;
    feed(p, ":irc.test 001 cardroom :Welcome back");
    expect_sent(at, (const char *[]){"JOIN #Cards", NULL});
    cr_assert_eq(R.registered, 2);
    irc_proto_free(p);
}

Test(irc_proto, origins_of_users_known_by_nick)
{
    irc_proto *p = registered("");
    feed(p, ":Alice!a@home.example PRIVMSG #cards :!join");
    feed(p, ":bob!b@bob.host PRIVMSG cardroom :!hand");
    feed(p, ":eve!e@eve.host JOIN #Cards");
    feed(p, ":cardroom!cr@host JOIN #Cards");  /* the bot's own echo: no event */
    feed(p, ":Owner!o@h KICK #cards eve :out"); /* eve's origin as last seen */
    feed(p, ":Owner!o@h KICK #cards dave :out"); /* dave never showed his */
    feed(p, ":Alice!a2@elsewhere PART #cards"); /* as this line shows it */
    feed(p, ":bob!b@bob.host QUIT :bye");
    cr_assert_eq(R.nev, 7);
    static const struct {
        int kind;
        const char *sender, *origin;
    } want[] = {
        {ADAPTER_MESSAGE, "alice", "a@home.example"}, {ADAPTER_MESSAGE, "bob", "b@bob.host"},
        {ADAPTER_JOIN, "eve", "e@eve.host"},          {ADAPTER_LEAVE, "eve", "e@eve.host"},
        {ADAPTER_LEAVE, "dave", ""},                  {ADAPTER_LEAVE, "alice", "a2@elsewhere"},
        {ADAPTER_LEAVE, "bob", "b@bob.host"},
    };
    for (int i = 0; i < 7; i++) {
        cr_assert_eq(R.ev[i].kind, want[i].kind, "event %d", i);
        cr_assert_str_eq(R.ev[i].sender, want[i].sender, "event %d", i);
        cr_assert_str_eq(R.ev[i].origin, want[i].origin, "event %d", i);
        cr_assert_str_eq(R.ev[i].renamed_to, "(null)");
    }
    cr_assert_str_eq(R.ev[1].room, "(null)");
    cr_assert_str_eq(R.ev[2].room, "#cards");
    irc_proto_free(p);
    /* With userhost-in-names, the origins of the members already there come with NAMES. */
    p = make("", IRC_LOGIN_AUTO, "");
    irc_proto_want_channel(p, "#cards");
    irc_proto_reset(p);
    feed(p, ":irc.test CAP * LS :userhost-in-names");
    cr_assert_str_eq(R.sent[R.nsent - 1], "CAP REQ :userhost-in-names");
    feed(p, ":irc.test CAP * ACK :userhost-in-names");
    feed(p, ":irc.test 001 cardroom :Welcome");
    feed(p, ":cardroom!cr@host JOIN #cards");
    feed(p, ":irc.test 353 cardroom = #cards :cardroom!cr@host @carol!c@carol.example dave!d");
    feed(p, ":Owner!o@h KICK #cards carol :out");
    feed(p, ":Owner!o@h KICK #cards dave :out");
    cr_assert_eq(R.nev, 2);
    cr_assert_str_eq(R.ev[0].origin, "c@carol.example");
    cr_assert_str_eq(R.ev[1].origin, "", "dave!d has no host: not an origin");
    irc_proto_free(p);
}

Test(irc_proto, nick_changes_seen_in_shared_channels)
{
    irc_proto *p = registered("");
    irc_proto_want_channel(p, "#304");
    feed(p, ":cardroom!cr@host JOIN #304");
    feed(p, ":irc.test 353 cardroom = #304 :cardroom Alice");
    feed(p, ":Alice!a@h NICK :Alicia");
    cr_assert_eq(R.nev, 2, "one RENAME per channel shared with her");
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(R.ev[i].kind, ADAPTER_RENAME);
        cr_assert_str_eq(R.ev[i].sender, "alice");
        cr_assert_str_eq(R.ev[i].renamed_to, "alicia");
        cr_assert_str_eq(R.ev[i].origin, "a@h");
    }
    cr_assert(!strcmp(R.ev[0].room, "#cards") || !strcmp(R.ev[1].room, "#cards"));
    cr_assert(!strcmp(R.ev[0].room, "#304") || !strcmp(R.ev[1].room, "#304"));
    feed(p, ":Alicia!a@h NICK :ALICIA");     /* the same id under casemapping */
    feed(p, ":cardroom!cr@host NICK :cards"); /* the bot itself */
    cr_assert_eq(R.nev, 2);
    feed(p, ":carol!c@h NICK :carla");       /* only in #cards */
    cr_assert_eq(R.nev, 3);
    cr_assert_str_eq(R.ev[2].room, "#cards");
    cr_assert_str_eq(R.ev[2].sender, "carol");
    cr_assert_str_eq(R.ev[2].renamed_to, "carla");
    /* Someone else takes the old nick: same id, another origin. */
    feed(p, ":alice!x@evil.example PRIVMSG cards :!hand");
    cr_assert_str_eq(R.ev[3].sender, "alice");
    cr_assert_str_eq(R.ev[3].origin, "x@evil.example");
    /* A member renames to a nick the bot last saw on someone else (a private message): the
     * old record is not taken for him. */
    feed(p, ":zed!z@old.example PRIVMSG cards :hi");
    feed(p, ":yan!y@yan.example JOIN #cards");
    feed(p, ":yan!y@yan.example NICK :zed");
    cr_assert_eq(R.ev[6].kind, ADAPTER_RENAME);
    cr_assert_str_eq(R.ev[6].renamed_to, "zed");
    cr_assert_str_eq(R.ev[6].origin, "y@yan.example");
    feed(p, ":Owner!o@h KICK #cards zed :out");
    cr_assert_str_eq(R.ev[7].origin, "y@yan.example");
    irc_proto_free(p);
}

Test(irc_proto, nick_from_a_prefix_without_a_nick_names_nobody)
{
    irc_proto *p = registered("");
    feed(p, ":irc.test 353 cardroom = #cards :cardroom c");
    feed(p, ":@ NICK c");
    feed(p, ":@!u@h NICK :d");
    cr_assert_eq(R.nev, 0, "no rename from a sender that is no nick");
    feed(p, ":c!c@h NICK :e");
    cr_assert_eq(R.nev, 1);
    cr_assert_str_eq(R.ev[0].sender, "c");
    irc_proto_free(p);
}

Test(irc_proto, own_prefix_sets_the_budget)
{
    irc_proto *p = make("", IRC_LOGIN_AUTO, "");
    irc_proto_want_channel(p, "#cards");
    irc_proto_reset(p);
    size_t unknown = irc_budget("cardroom", NULL, NULL, "PRIVMSG", "#cards");
    cr_assert_eq(irc_proto_budget(p, "PRIVMSG", "#cards"), unknown, "the longest prefix until shown");
    feed(p, ":irc.test 001 cardroom :Welcome");
    feed(p, ":cardroom!~cr@bot.example.org JOIN #cards");
    cr_assert_eq(irc_proto_budget(p, "PRIVMSG", "#cards"), irc_budget("cardroom", "~cr", "bot.example.org", "PRIVMSG", "#cards"));
    cr_assert_eq(irc_proto_budget(p, "NOTICE", "alice"), irc_budget("cardroom", "~cr", "bot.example.org", "NOTICE", "alice"));
    cr_assert_gt(irc_proto_budget(p, "PRIVMSG", "#cards"), unknown);
    feed(p, ":irc.test 396 cardroom a.much.longer.cloak.example.net :is now your displayed host");
    cr_assert_eq(irc_proto_budget(p, "PRIVMSG", "#cards"),
                 irc_budget("cardroom", "~cr", "a.much.longer.cloak.example.net", "PRIVMSG", "#cards"));
    feed(p, ":irc.test 396 cardroom vu@vhost.example :is now your displayed host");
    cr_assert_eq(irc_proto_budget(p, "PRIVMSG", "#cards"), irc_budget("cardroom", "vu", "vhost.example", "PRIVMSG", "#cards"));
    feed(p, ":irc.test 311 cardroom alice a alice.example * :someone else");
    cr_assert_eq(irc_proto_budget(p, "PRIVMSG", "#cards"), irc_budget("cardroom", "vu", "vhost.example", "PRIVMSG", "#cards"));
    feed(p, ":irc.test 311 cardroom CardRoom ~w who.example * :cardroom card games");
    cr_assert_eq(irc_proto_budget(p, "PRIVMSG", "#cards"), irc_budget("cardroom", "~w", "who.example", "PRIVMSG", "#cards"));
    irc_proto_reset(p);
    cr_assert_eq(irc_proto_budget(p, "PRIVMSG", "#cards"), unknown, "a new connection shows it again");
    irc_proto_free(p);
    /* On another nick than the configured one, the longer of the two counts. */
    memset(&R, 0, sizeof R);
    irc_proto_config c = {.nick = "a_rather_long_nick_for_a_bot_x", .login = IRC_LOGIN_NONE};
    irc_proto_hooks h = {.ctx = &R, .send_now = h_send};
    p = irc_proto_new(&c, &h);
    irc_proto_reset(p);
    feed(p, ":irc.test 433 * a_rather_long_nick_for_a_bot_x :Nickname is already in use");
    feed(p, ":irc.test 001 a_rather_long_nick_for_a_bo_ :Welcome");
    cr_assert_str_eq(irc_proto_nick(p), "a_rather_long_nick_for_a_bo_");
    cr_assert_eq(irc_proto_budget(p, "PRIVMSG", "#c"), irc_budget("a_rather_long_nick_for_a_bot_x", NULL, NULL, "PRIVMSG", "#c"));
    irc_proto_free(p);
}

Test(irc_proto, text_cut_inside_a_character)
{
    irc_proto *p = registered("");
    feed(p, ":Alice!a@h PRIVMSG #cards :!play 10\xE2\x99");
    feed(p, ":Alice!a@h PRIVMSG #cards :caf\xC3\xA9");
    feed(p, ":Alice!a@h PRIVMSG #cards :bad \xFF inside");
    feed(p, ":Alice!a@h PRIVMSG #cards :\x02" "bold cut\xC3");
    cr_assert_eq(R.nev, 4);
    cr_assert_str_eq(R.ev[0].text, "!play 10", "the cut character is dropped");
    cr_assert_str_eq(R.ev[1].text, "caf\xC3\xA9");
    cr_assert_str_eq(R.ev[2].text, "bad \xFF inside", "other bytes are left for the command's refusal");
    cr_assert_str_eq(R.ev[3].text, "bold cut");
    irc_proto_free(p);
}
