/* adapter.h — the one small interface every network speaks (console, Matrix, IRC).
 *
 * Data flows one way: an adapter turns what arrives from its network into adapter_events and
 * hands them to the core in batches (core_batch in bot/core.h), together with its new position
 * (a Matrix next_batch token, a console line number); the core answers through the outbox, and
 * the adapter's send() delivers one queued message at a time per destination. Users and rooms
 * are opaque strings of the network (a Matrix user id, an IRC account or nick). */
#ifndef CARDROOM_ADAPTER_H
#define CARDROOM_ADAPTER_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef enum {
    ADAPTER_MESSAGE = 0, /* text from sender, in room or (is_private) to the bot directly */
    ADAPTER_JOIN,        /* sender joined room */
    ADAPTER_LEAVE,       /* sender left room (or was kicked) */
    ADAPTER_RENAME,      /* sender is now known as renamed_to: a nick change seen in room (one
                          * event per room the bot shares with him) */
    ADAPTER_GONE,        /* the bot itself left room, or was kicked or banned from it (sender: the bot) */
} adapter_event_kind;

typedef struct {
    adapter_event_kind kind;
    const char *room;     /* the room or channel; for a private message, may be NULL */
    const char *sender;
    const char *text;     /* MESSAGE only */
    int is_private;       /* MESSAGE: sent to the bot alone */
    int moderator;        /* the sender may moderate room (abort any table there) */
    /* Where the sender connects from as the network shows it (IRC: "user@host"); NULL or ""
     * when the sender is identified by an account, or it is not known. Another client with
     * the same nick shows another origin. */
    const char *origin;
    const char *renamed_to; /* RENAME only: the sender's identity after the change */
} adapter_event;

/* What a send() reports. */
enum {
    ADAPTER_SENT = 0,   /* delivered: the core marks the message done */
    ADAPTER_LATER = 1,  /* not now (rate limit, network down): the same message is offered again */
    ADAPTER_QUEUED = 2, /* accepted for delivery; the adapter calls core_sent() when it is done */
};

typedef struct {
    const char *net;           /* the adapter's name: "console", "matrix", "irc" */
    void *ctx;
    /* Delivers m (to m->room, or privately to m->user when it is not empty). */
    int (*send)(void *ctx, const store_msg *m);
    /* A user's name for people (display name, nick); writes into buf and returns it. May be
     * NULL: the user id is used. */
    const char *(*display_name)(void *ctx, const char *room, const char *user, char *buf, size_t len);
    /* A room's name for people (shown at the head of private messages: "[Card night · table
     * 3]"); writes into buf and returns it, or NULL to use the room id. May be NULL. */
    const char *(*room_name)(void *ctx, const char *room, char *buf, size_t len);
    /* The user a player means by text in room (`!standings TEXT`): the network's id for a
     * name, a nick, an id written short or a mention; written into buf and returned, or NULL
     * when nobody is meant. May be NULL: the text is taken as it is. */
    const char *(*resolve_user)(void *ctx, const char *room, const char *text, char *buf, size_t len);
    /* How a player sends the bot a private message on this network, for hints:
     * "in your direct chat with me", "with /msg cardroom". */
    const char *private_how;
    /* Whether the network is slowing the bot down now (a homeserver's rate limit). A network
     * that has this gathers what one transaction says to one destination into one message, and
     * while it is slowed down the core merges the messages waiting behind each destination's
     * first one into one message (they were never offered: only a destination's first message
     * is). May be NULL: never (a network that gains nothing from fewer, longer messages; each
     * line said is a message, in the order said). */
    int (*throttled)(void *ctx);
    /* Players get no private notice with their hand on each turn unless they ask for it
     * (!notify on): set by a network whose mention in the room already notifies them (Matrix).
     * 0: they get it until they say !notify off (console, IRC). */
    int notify_off;
    /* The network's pace (may be NULL: it has none, as the console): the milliseconds m takes
     * to send at the rate the network allows now, not counting what is queued before it (IRC:
     * the lines it splits into at the flood interval; Matrix: what is left of a rate limit).
     * The core asks once per message, when it is written, and adds the answers up per room
     * until the messages are delivered: while a room's sum, or the network's, is more than a
     * few seconds, that room's computer players wait, so the queue stays short and a person's
     * command is never answered behind it. */
    int64_t (*pace_ms)(void *ctx, const store_msg *m);
    /* Says text in room at once, outside the outbox: one attempt, never retried. The core's word
     * that its store fails (the outbox cannot be written then) and that it works again. May be
     * NULL: the network hears nothing of it. */
    void (*notice)(void *ctx, const char *room, const char *text);
    /* Makes the bot leave room (a bot admin's "!admin leave"); the network reports it back as
     * ADAPTER_GONE. Returns 0 when asked, -1 when it cannot. May be NULL: the network has no
     * rooms to leave. */
    int (*leave)(void *ctx, const char *room);
} adapter;

#endif
