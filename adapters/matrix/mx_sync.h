/* mx_sync.h — what the bot knows of its Matrix rooms, and the reading of /sync answers.
 *
 * mx_sync_read() takes one /sync answer (Client-Server API §"Syncing") and turns it into what
 * the adapter must do: the room messages, joins and leaves for the core (adapter_events, in
 * timeline order), the invites to accept or decline, and the next_batch token. On the way it
 * keeps the state the adapter needs between answers: the members of each room with their
 * display names and memberships, power levels, room names, which rooms are encrypted, and
 * which rooms are direct chats with whom (m.direct account data, is_direct invites, the chats
 * the bot created).
 *
 * Whether a room is encrypted has three answers: yes, no, or not known yet. "Yes" is for good
 * (the spec lets no room turn encryption off) and the adapter keeps it in its store, so it is
 * known from the first moment after a restart. "No" is only believed for what this run has
 * seen: a room whose whole state came in an answer (the first sync after a start asks for the
 * full state; a newly joined room comes with it), or the homeserver's answer to asking. Until
 * then a room is not known, and nothing may be sent there.
 *
 * Nothing from the server is trusted: any field may be missing, of the wrong type, or huge.
 * A malformed answer (not JSON, no next_batch) is refused as a whole with a message; a
 * malformed event inside a good answer is skipped. This is the fuzz target fuzz_sync.
 *
 * A mention pill in a command (an HTML link to https://matrix.to/#/@user:server in the
 * formatted_body, shown as the user's name in the body) reaches the core as the user id, so
 * `!standings` with Alice pilled names exactly her. */
#ifndef CARDROOM_MX_SYNC_H
#define CARDROOM_MX_SYNC_H

#include <stddef.h>

#include "adapter.h"

typedef struct mx_state mx_state;

/* me: the bot's user id; invites: whose invites to accept ("*" anyone; user ids and server
 * names separated by commas or blanks; "" = users of the bot's own server). */
mx_state *mx_state_new(const char *me, const char *invites);
void mx_state_free(mx_state *s);

/* Whether an invite from user is accepted. */
int mx_state_invite_allowed(const mx_state *s, const char *user);

/* The direct chat with user (NULL: none known). */
const char *mx_state_dm_room(const mx_state *s, const char *user);
/* The user a direct chat is with (NULL: room is no direct chat). */
const char *mx_state_dm_user(const mx_state *s, const char *room);
/* Records room as the direct chat with user (replacing an older one). */
void mx_state_set_dm(mx_state *s, const char *user, const char *room);
/* Forgets the direct chat with user (it refuses messages: a new one is made when needed). */
void mx_state_forget_dm(mx_state *s, const char *user);
/* Takes the m.direct account data content ({"@user": ["!room", …]}) as the known direct chats
 * (merged with those already known). */
void mx_state_read_direct(mx_state *s, const char *json, size_t len);
/* The m.direct content for the direct chats known now, as JSON (malloc'd). */
char *mx_state_direct_json(const mx_state *s);

/* Hooks into the reading of answers (all optional): answer(ctx, root) sees each accepted answer
 * (a json_t *) before its rooms are read; decrypt(ctx, room, event) turns an m.room.encrypted
 * timeline event into {"type", "content"} (a new json_t * reference) or NULL; encrypted(ctx,
 * room) hears that a room not known to be encrypted is (its m.room.encryption state, also in an
 * invite), so it can be stored. */
typedef struct {
    void (*answer)(void *ctx, void *root);
    void *(*decrypt)(void *ctx, const char *room, void *event);
    void (*encrypted)(void *ctx, const char *room);
    void *ctx;
} mx_sync_hooks;
void mx_state_set_hooks(mx_state *s, const mx_sync_hooks *h);

/* Whether room is encrypted (MX_ENC_YES: its messages must be encrypted), not (MX_ENC_NO), or
 * not known yet (MX_ENC_UNKNOWN: nothing may go there). */
enum { MX_ENC_UNKNOWN = -1, MX_ENC_NO = 0, MX_ENC_YES = 1 };
int mx_state_encryption(const mx_state *s, const char *room);
/* Records what the adapter learnt of a room's encryption outside the answers: from its store
 * (yes), or from asking the homeserver for the room's m.room.encryption state. A "no" never
 * overrides a "yes". */
void mx_state_set_encryption(mx_state *s, const char *room, int encrypted);
/* Whether the members of room are known (its state came in an answer, or the bot made it). */
int mx_state_members_known(const mx_state *s, const char *room);
/* Records what the bot knows of a direct chat it just made: user invited, encryption asked. */
void mx_state_made_dm(mx_state *s, const char *room, const char *user, int encrypted);
/* The users joined or invited in room, the bot included: a malloc'd array of n pointers into
 * the state (valid until the next answer is read). */
const char **mx_state_members(const mx_state *s, const char *room, int *n);

/* A member's name for people: the display name, with the user id after it when another
 * member has the same one (Client-Server API §"Calculating the display name for a user"). */
const char *mx_state_display_name(const mx_state *s, const char *room, const char *user, char *buf, size_t len);
/* The user text means in room, into buf: a user id as it is (also in a matrix.to link), else
 * the member (of any membership) whose localpart ("alice", "@alice") or, failing that, whose
 * display name is text (either without regard to case), else "@text:" the bot's own server
 * when text looks like a localpart. NULL when text means nobody or more than one member. */
const char *mx_state_find_user(const mx_state *s, const char *room, const char *text, char *buf, size_t len);
/* The room's name (m.room.name, else its canonical alias), or NULL. */
const char *mx_state_room_name(const mx_state *s, const char *room, char *buf, size_t len);
/* Whether the bot is in room (as far as the answers so far tell). */
int mx_state_joined(const mx_state *s, const char *room);
/* Rooms the bot is in. */
int mx_state_room_count(const mx_state *s);

/* What one answer asks for. The strings live until mx_sync_done(). */
typedef struct {
    adapter_event *ev;
    int nev, cev;
    const char **join;       /* rooms to join (invites from allowed users) */
    int njoin, cjoin;
    const char **decline;    /* invites to decline */
    int ndecline, cdecline;
    const char *next_batch;
    int limited;             /* rooms whose timeline skipped events (a gap) */
    int direct_changed;      /* direct chats were learnt from invites: m.direct should be saved */
    int events_seen;         /* timeline events read, kept or not */
    void *root;              /* the parsed answer */
    void *gaps;              /* the parsed gap events */
    void *keep;              /* decrypted events the events point into */
} mx_sync_out;

/* Reads one /sync answer. skip_timeline: take state but no messages (the first sync of a new
 * bot: old commands are not replayed). gaps: NULL, or JSON {"!room": [events…]} holding the
 * events a limited timeline skipped (fetched with /messages), read before that timeline.
 * Returns 0, or -1 with a message in err (the state is unchanged then). */
int mx_sync_read(mx_state *s, const char *body, size_t len, const char *gaps, int skip_timeline, mx_sync_out *out,
                 char *err, size_t errlen);

/* The gaps of an answer: JSON [["!room", "prev_batch"], …] for every joined room whose timeline
 * is limited and has a prev_batch (malloc'd; NULL when an answer that says "limited" is
 * unreadable). An answer without "limited": true is not parsed at all. */
char *mx_sync_gaps(const char *body, size_t len, int *count);
void mx_sync_done(mx_sync_out *out);

#endif
