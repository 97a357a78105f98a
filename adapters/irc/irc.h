/* irc.h — the IRC adapter: the bot as a client of one IRC network (design.md, IRC).
 *
 * One thread runs everything: one poll loop over the server connection (TLS through OpenSSL
 * by default, plain TCP when [irc] tls = false), the computer players' wake-up descriptor and
 * the core's timers. The session itself — CAP LS 302, SASL PLAIN or NickServ, channels,
 * members, accounts — is irc_proto (no I/O); this file adds the socket, TLS, keepalive
 * (PING after ping_interval seconds of silence, reconnect after ping_timeout more), reconnects
 * with exponential backoff and jitter, and the sending side.
 *
 * Each line from the server that carries commands is one core_batch() (one transaction), as a
 * line typed at the console is. Messages leave the core's outbox in order per destination:
 * channel messages as NOTICE (or PRIVMSG, [irc] channel_replies), private ones as PRIVMSG to
 * the player's current nick, with red suits in mIRC colours, split between words so each line
 * fits 512 bytes (or [irc] line_bytes) with the bot's own prefix as the server showed it, and
 * paced by a token bucket (flood_burst lines, then one per flood_interval_ms). A message counts
 * as delivered once the server has handled its last line, which the PONG to a PING sent after
 * it proves (a server handles a client's lines in order); lines not confirmed when the
 * connection is lost are sent again after the reconnect. A table's messages also keep their
 * order across destinations (the deal in the channel before each player's cards): one waits
 * while an earlier one of its table to another destination is unconfirmed. When the server
 * refuses a private message (716/717 for +g, 486), the player is told in the table's channel
 * how to accept the bot's messages. TLS that fails says why and which setting fixes it, at
 * error level, and the attempts keep their growing pause. */
#ifndef CARDROOM_IRC_H
#define CARDROOM_IRC_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"

typedef struct {
    const char *db;        /* database path (NULL: the config's) */
    int fixed_seed;        /* --seed N */
    uint64_t seed;
    FILE *err;             /* the log */
} irc_options;

/* Runs the bot on the configured IRC server until SIGTERM or SIGINT. Returns the exit status:
 * 0 stopped, 1 a failure (the store), 2 a bad setting (nick refused, SASL refused with
 * [irc] login = sasl, a certificate file that cannot be read). Connection failures are not
 * fatal: the bot keeps reconnecting. */
int irc_run(const cfg *config, const irc_options *o);

#endif
