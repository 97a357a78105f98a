/* irc_proto.h — one IRC client session as a machine without I/O: what the bot says while it
 * registers (CAP LS 302, SASL PLAIN, NICK/USER, NickServ), what it learns from the server
 * (its nick, ISUPPORT, channels and their members with their prefixes, who is logged in to
 * which services account), and the chat events it hands to the core.
 *
 * The socket side (adapters/irc/irc.c) feeds every received line to irc_proto_line() and
 * writes the lines the machine asks for through hooks.send_now; game messages go out through
 * the adapter's flood control, which asks the machine where a user is (irc_proto_target) and
 * whether a channel is joined. irc_proto_reset() starts a new connection's session and keeps
 * only what outlives a connection: the channels to be in.
 *
 * Identity (README "Run on IRC"): a user logged in to a services account — told by the
 * account-tag on the message, extended-join or account-notify — is "$a:account" (the account
 * lower-cased), so his seat and standings follow him across nick changes; anybody else is his
 * nick, lower-cased with the server's casemapping (ISUPPORT CASEMAPPING: rfc1459 until told,
 * ascii, strict-rfc1459). Nicks cannot hold '$' or ':', so the two never
 * meet. Rooms are channel names lower-cased the same way. Events about a user known by his nick
 * carry his origin, "user@host" as the server shows it (from the line itself, or for a KICK
 * the last line seen from him; NAMES with userhost-in-names), so another client that takes the
 * nick can be told apart; a nick change seen in a shared channel is an ADAPTER_RENAME in each
 * of them. The events are MESSAGE, JOIN (others joining a channel of the bot's), LEAVE (PART,
 * KICK, QUIT) and RENAME.
 *
 * Lines the bot sends are relayed with its prefix ":nick!user@host", which counts against the
 * 512 bytes: the machine learns it from the bot's own JOIN, from 396 (RPL_HOSTHIDDEN) and, when
 * there is no channel to join, from a WHOIS of itself (irc_proto_budget). A PRIVMSG whose text
 * the server cut inside a UTF-8 character loses that broken last character. */
#ifndef CARDROOM_IRC_PROTO_H
#define CARDROOM_IRC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "adapter.h"

#define IRC_NAME_MAX 128 /* nicks, accounts, channel names (longer ones are ignored) */
#define IRC_ID_MAX (IRC_NAME_MAX + 4)

enum { IRC_LOGIN_AUTO = 0, IRC_LOGIN_SASL, IRC_LOGIN_NICKSERV, IRC_LOGIN_NONE };

/* Why a private message did not reach a player (hooks.refused). */
enum {
    IRC_REFUSED_CALLERID = 1, /* 716/717: the player's +g (server-side ignore) */
    IRC_REFUSED_REGONLY,      /* 486 (or 477 for a user): only logged-in senders may message him */
};

typedef struct {
    void *ctx;
    /* A line to write now, without CR LF (registration, PONG, JOIN, NickServ): not subject to
     * flood control. The text may hold the password (AUTHENTICATE, IDENTIFY): never log it. */
    void (*send_now)(void *ctx, const char *line);
    /* A chat event for the core. Its strings live until the hook returns. */
    void (*event)(void *ctx, const adapter_event *e);
    /* Log line (0 error, 1 warn, 2 info, 3 debug). Never holds a secret. */
    void (*log)(void *ctx, int level, const char *text);
    /* Registration is done (001) and the channels are being joined. */
    void (*registered)(void *ctx);
    /* A private message to nick was refused (IRC_REFUSED_*). */
    void (*refused)(void *ctx, const char *nick, int why);
    /* The server answered a PING of ours: token is its parameter. */
    void (*pong)(void *ctx, const char *token);
    /* The session cannot go on: status 2 = a setting is wrong (the operator must act). */
    void (*fatal)(void *ctx, int status, const char *why);
} irc_proto_hooks;

typedef struct {
    const char *nick, *username, *realname;
    const char *account;   /* services account ("" or NULL: the nick) */
    const char *password;  /* "" or NULL: no login */
    int login;             /* IRC_LOGIN_* */
    const char *invites;   /* whose INVITE to follow: nicks, accounts, "*"; "" nobody */
} irc_proto_config;

typedef struct irc_proto irc_proto;

/* The config's strings are copied. Returns NULL when out of memory. */
irc_proto *irc_proto_new(const irc_proto_config *c, const irc_proto_hooks *h);
void irc_proto_free(irc_proto *p);

/* A channel the bot should be in (joined at registration, rejoined after each reconnect).
 * Returns 0, or -1 if the name is not a channel. */
int irc_proto_want_channel(irc_proto *p, const char *channel);
/* Leaves the channel (room id or name) for good: it is no longer wanted, and the bot parts it
 * when it is in it. Returns 0, or -1 if the name is not a channel. */
int irc_proto_part(irc_proto *p, const char *channel);
/* A number that changes whenever the list of wanted channels does (to save it only then). */
unsigned irc_proto_channels_version(const irc_proto *p);
/* Calls fn for every wanted channel (as given, not lower-cased). */
void irc_proto_each_channel(irc_proto *p, void (*fn)(void *ctx, const char *channel), void *ctx);

/* A new connection is up: forgets everything of the last session (members, accounts, caps)
 * and sends CAP LS 302, NICK and USER. */
void irc_proto_reset(irc_proto *p);

/* Handles one received line (without CR LF; modified in place). Returns 0, or -1 if the line
 * was not understood (ignored). */
int irc_proto_line(irc_proto *p, char *line, size_t len);

/* Every few seconds: tries to get the configured nick back when the bot had to take another. */
void irc_proto_tick(irc_proto *p, int64_t now_ms);

/* State for the sending side. */
int irc_proto_registered(const irc_proto *p);
const char *irc_proto_nick(const irc_proto *p);
/* The room id of a channel name ("#Cards" → "#cards", under the server's CASEMAPPING);
 * writes into buf. */
const char *irc_proto_room_id(const irc_proto *p, const char *channel, char *buf, size_t len);
/* Whether the bot is in the channel of room id (lower-cased). */
int irc_proto_in_channel(const irc_proto *p, const char *room);
/* The channel's name as joined ("#Cards") for room id, or NULL if not joined. */
const char *irc_proto_channel_name(const irc_proto *p, const char *room);
/* The nick a private message to user id goes to now, or NULL if nobody known is that user. */
const char *irc_proto_target(const irc_proto *p, const char *user);
/* A user's name for people: his current nick, else the account or nick of the id. */
const char *irc_proto_display(const irc_proto *p, const char *user, char *buf, size_t len);
/* The id of a nick as the machine knows him now (for tests); writes into buf. */
const char *irc_proto_user_id(const irc_proto *p, const char *nick, char *buf, size_t len);
/* Bytes of text that fit one line "COMMAND target :text" from the bot, with its prefix as the
 * server has shown it (parts not seen yet count as the longest they may be; the nick as the
 * longer of the current and the configured one). */
size_t irc_proto_budget(const irc_proto *p, const char *command, const char *target);
/* Whether the capability was acknowledged by the server in this session. */
int irc_proto_has_cap(const irc_proto *p, const char *cap);
/* Whether the bot is logged in to its account (SASL 903 or 900). */
int irc_proto_logged_in(const irc_proto *p);

#endif
