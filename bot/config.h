/* config.h — the bot's settings: one INI file (libinih), secrets also from the environment.
 *
 * Every setting has a default, so no file at all is a valid configuration (the console
 * table). Anything wrong — unknown section or key, a value out of range — is an error naming
 * the file, line and key. Secrets (passwords, tokens) may be left out of the file and given
 * in the environment instead: CARDROOM_<SECTION>_<KEY> in upper case, e.g.
 * CARDROOM_MATRIX_PASSWORD; the environment wins over the file. The documented example of
 * every setting is config/cardroom.example.ini. */
#ifndef CARDROOM_CONFIG_H
#define CARDROOM_CONFIG_H

#include <stddef.h>

#include "g304.h"

#define CFG_STR 256
#define CFG_ERR 512

typedef struct {
    /* [bot] */
    char prefix[16];          /* command prefix, default "!" */
    char database[CFG_STR];   /* SQLite file, default "cardroom.db" */
    char log_level[16];       /* "error", "warn", "info" (default), "debug" */
    int threads;              /* worker threads for computer players and the Caps judge, default 2 (1..64) */
    char loop_priority[16];   /* "normal" (default) or "realtime": the event loop's thread at the lowest
                                 real-time priority, above every thread of normal priority */
    char rules_url[CFG_STR];  /* where the rules are published: !rules names this followed by
                                 "304.md" or "contractgrid.md"; default "docs/" */
    char admins[CFG_STR];     /* who may give !admin: user ids as the networks give them, "" nobody */
    int rate_commands;        /* commands one person may give per rate_seconds; 0: no limit; default 20 */
    int rate_seconds;         /* default 60 */
    int rate_pause;           /* seconds a person over the limit is ignored, default 120 */
    int tables_per_user;      /* open tables one person may have opened at once; 0: no cap; default 3 */
    char level[8];            /* how well new 304 tables' computer players play: "easy" (default),
                                 "normal", "expert" (aiplay.h's levels; the table option level) */
    int keep_finished;        /* seconds a finished table's journal and hand seeds, and a delivered
                                 message, are kept; 0: forever. Default 2592000 (30 days) */
    /* [timers] — seconds; 0 turns that timer off */
    int remind_after;         /* remind the player to act, default 120 */
    int idle_takeover;        /* a computer player takes the seat, default 600 */
    int leave_grace;          /* a player who left the room keeps the seat this long, default 120 */
    int table_idle_close;     /* close a table nobody touched, default 86400 */
    int bot_delay_ms;         /* pause before a computer player's move is shown, default 0 */
    /* [rules] — defaults for new 304 tables (any option of shared/rules/304.md) */
    g304_rules rules;
    /* [matrix] — the bot on a Matrix homeserver (adapters/matrix); off while homeserver is "" */
    char matrix_homeserver[CFG_STR];   /* base URL, "https://matrix.example.org" */
    char matrix_user[CFG_STR];         /* the bot's user id, "@cardroom:example.org" */
    char matrix_password[CFG_STR];     /* secret: better CARDROOM_MATRIX_PASSWORD */
    char matrix_access_token[CFG_STR]; /* secret: better CARDROOM_MATRIX_ACCESS_TOKEN */
    char matrix_store_key[CFG_STR];    /* secret: encrypts the encryption keys in the store */
    char matrix_device_name[64];       /* shown in the account's device list, default "cardroom" */
    char matrix_invites[CFG_STR];      /* whose invites are accepted: user ids, server names, "*" */
    int matrix_sync_timeout;           /* long-poll seconds, default 30 */
    char matrix_encrypt_dms[8];        /* "true" (default): new direct chats ask for encryption */
    /* [irc] — the bot on an IRC network (adapters/irc); off while server is "" */
    char irc_server[256];              /* host name or address */
    int irc_port;                      /* 0: 6697 with TLS, 6667 without */
    char irc_tls[8];                   /* "true" (default) or "false" */
    char irc_tls_verify[8];            /* "true" (default): the server's certificate must verify */
    char irc_tls_ca[CFG_STR];          /* trusted certificates (PEM); "": the system's */
    char irc_nick[64];                 /* default "cardroom" */
    char irc_username[16];             /* default "cardroom" */
    char irc_realname[128];            /* default "cardroom card games" */
    char irc_account[72];              /* services account for SASL / NickServ; "": the nick */
    char irc_password[CFG_STR];        /* secret: better CARDROOM_IRC_PASSWORD */
    char irc_login[16];                /* "auto" (default), "sasl", "nickserv", "none" */
    char irc_channels[CFG_STR];        /* channels to join, "#a, #b" */
    char irc_invites[CFG_STR];         /* whose /invite the bot follows: nicks, accounts, "*"; "": nobody */
    char irc_channel_replies[16];      /* "notice" (default) or "privmsg" */
    int irc_flood_burst;               /* lines sent at once before the pace applies, default 5 */
    int irc_flood_interval_ms;         /* then one line per this many ms, default 1000 */
    int irc_line_bytes;                /* the longest line the server relays, prefix included, default 512 */
    int irc_ping_interval;             /* seconds of silence before the bot pings, default 120 */
    int irc_ping_timeout;              /* then seconds without an answer before it reconnects, default 60 */
    /* [console] */
    char console_user[64];    /* the terminal user's name, default "you" */
    char console_room[64];    /* the room's name, default "room" */
} cfg;

/* The log level as a rank: 0 error, 1 warn, 2 info, 3 debug (the order of core_log_level);
 * a line of rank r is logged when r <= cfg_log_rank(c). */
int cfg_log_rank(const cfg *c);

/* Whether user is one of the bot's admins ([bot] admins: entries separated by commas or
 * blanks; an entry starting with @ (a Matrix user id) must match exactly, others (IRC accounts
 * "$a:name" and nicks, which the IRC adapter gives in lower case) in any case). */
int cfg_is_admin(const cfg *c, const char *user);

/* Fills every default. */
void cfg_defaults(cfg *c);

/* Loads path over the defaults, then the environment. Returns 0, or -1 with err like
 * "cardroom.ini:12: [timers] remind_after: must be a number of seconds from 0 to 86400". */
int cfg_load(cfg *c, const char *path, char *err, size_t errlen);

/* Applies the environment variables alone (used when there is no file). Same errors. */
int cfg_env(cfg *c, char *err, size_t errlen);

#endif
