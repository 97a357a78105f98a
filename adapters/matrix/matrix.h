/* matrix.h — the Matrix adapter: the bot as a Matrix account (design.md, Matrix).
 *
 * One thread runs everything: libcurl's multi interface carries the /sync long-poll, the
 * sends, joins and direct-chat creation side by side, and the loop waits on its connections
 * together with the computer players' wake-up descriptor and the core's timers.
 *
 * Start: an access token from the config or the environment, else the one stored from an
 * earlier password login, else a password login (whose device id and token are stored and
 * reused: never /logout); GET /account/whoami must name the configured user; a sync filter.
 * The very first sync of a new database only learns the rooms: old commands are not replayed.
 * After a restart the first sync asks for the full state (members, names, power levels),
 * since the token stored with the last batch.
 *
 * Each /sync answer is one core_batch() with its next_batch as the position: the moves it
 * carries, the messages they cause and the new token are stored in one transaction. Messages
 * go out from the core's outbox: m.notice with an HTML formatted_body, the player to act
 * mentioned, PUT …/send/{type}/cr<outbox id>; 429 waits as long as the server asks, 5xx and
 * network errors back off exponentially with jitter, and nothing is dropped but a message the
 * server refuses for good (4xx).
 *
 * Nothing reaches an encrypted room in the clear, even right after a restart: which rooms are
 * encrypted is stored the moment it is learnt (m.room.encryption state, the bot's own direct
 * chats, an invite's state, asking the homeserver) and is never unlearnt; a room whose state is
 * not known yet gets nothing until it is (GET …/state/m.room.encryption/), and an encrypted one
 * nothing until its members are known. A message's wire form (room, type, content: the
 * encrypted event, or the decision to send it in the clear) is stored in the outbox before its
 * first attempt, so every retry sends the same thing under the same txn id and cannot post
 * twice. The access token is sealed in the store with the store key.
 *
 * A private message goes to the player's direct chat, created on first need (is_direct,
 * trusted_private_chat, m.room.encryption in initial_state) and recorded in the store and in
 * the bot's m.direct account data. Messages in a direct chat are private commands. The intent
 * to make one is stored before the request, so a direct chat whose answer was lost (a crash
 * while it was on its way) is found in the next sync and taken, not made twice.
 *
 * While the store fails, no sync is made: the answer the core refused is asked for again from
 * the same since once the store works, and the core's notices go to the unencrypted rooms. */
#ifndef CARDROOM_MATRIX_H
#define CARDROOM_MATRIX_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"

typedef struct {
    const char *db;        /* database path (NULL: the config's) */
    int fixed_seed;        /* --seed N */
    uint64_t seed;
    FILE *err;             /* the log */
} matrix_options;

/* Runs the bot on the configured homeserver until SIGTERM or SIGINT. Returns the exit status:
 * 0 stopped, 1 a failure (the store cannot be opened, login refused, wrong account), 2 a bad
 * setting or a state only the operator can mend (the homeserver holds other encryption keys
 * for the bot's device), 3 the database is in use by another cardroom. */
int matrix_run(const cfg *config, const matrix_options *o);

#endif
