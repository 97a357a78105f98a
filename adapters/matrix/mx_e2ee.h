/* mx_e2ee.h — end-to-end encryption for the Matrix adapter (Client-Server API, "End-to-End
 * Encryption": m.olm.v1.curve25519-aes-sha2 and m.megolm.v1.aes-sha2).
 *
 * A machine without I/O: the adapter feeds it what the homeserver says (the to-device events,
 * device lists and key counts of each /sync answer, the answers to the requests it asked for)
 * and asks it to decrypt room events and to encrypt what the bot sends. When it needs the
 * server (uploading keys, querying devices, claiming one-time keys, sharing a room key by
 * to-device message) it queues a request that the adapter sends and answers back.
 *
 * What it keeps, in the store's keyed values (pickles encrypted with the store key):
 *   e2ee/account            the Olm account (identity, one-time and fallback keys)
 *   e2ee/uploaded           "1" once the device keys are on the server
 *   olm/<curve>|<id>        Olm sessions with other devices
 *   megolm.in/<room>|<key>|<id>   inbound group sessions (with the sender they came from)
 *   megolm.out/<room>       the room's outbound group session and whom it was shared with: it
 *                           outlives restarts, and is replaced after 100 messages, a week, or
 *                           when a member who had it left or one of their devices is gone
 *   megolm.seen/<id>|<n>    the event that used message index n (replays are refused)
 *   devices/<user>          the user's devices whose signed keys verified
 *   e2ee/cross              the sealed seeds of the master, self-signing and user-signing keys
 * Losing it is never silent: a device whose keys on the server differ from ours is an error. */
#ifndef CARDROOM_MX_E2EE_H
#define CARDROOM_MX_E2EE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct mx_e2ee mx_e2ee;

/* Loads the device's account from the store or makes a new one (its keys are then uploaded by
 * the first request). NULL with a message in err on failure. */
mx_e2ee *mx_e2ee_new(store *db, const char *user, const char *device, const uint8_t store_key[32], char *err,
                     size_t errlen);
void mx_e2ee_free(mx_e2ee *e);

/* The device's public identity keys (unpadded base64). */
void mx_e2ee_identity(const mx_e2ee *e, char curve25519[44], char ed25519[44]);
/* A problem that stops encryption (e.g. the server holds other keys for this device), or NULL. */
const char *mx_e2ee_error(const mx_e2ee *e);

/* ---- requests to the homeserver ---- */
typedef struct {
    int id;
    const char *method;
    char path[768];
    char *body;         /* malloc'd JSON; the caller frees it */
    const char *what;   /* for logs: "uploading keys", ... */
} mx_e2ee_request;

/* The next request to make, if any (1), else 0. */
int mx_e2ee_next_request(mx_e2ee *e, mx_e2ee_request *r);
/* The answer to request id: status 0 = no answer (it will be asked again). */
void mx_e2ee_answer(mx_e2ee *e, int id, long status, const char *body, size_t len);

/* ---- what /sync brings ---- */
/* The answer's to_device events, device_lists, device_one_time_keys_count and
 * device_unused_fallback_key_types. Call before its rooms are read. */
void mx_e2ee_sync(mx_e2ee *e, json_t *root);
/* An m.room.encrypted event of room: the decrypted event ({"type", "content"}, new reference),
 * or NULL with the reason in err (unknown session, replay, forged sender, bad ciphertext). */
json_t *mx_e2ee_decrypt(mx_e2ee *e, const char *room, json_t *event, char *err, size_t errlen);
/* Users whose devices we should know because they share an encrypted room with us. */
void mx_e2ee_track(mx_e2ee *e, const char *user);

/* ---- sending ---- */
/* Encrypts an event of type for room, whose members (joined or invited) are users[0..n).
 * Returns 1 and the m.room.encrypted content (malloc'd JSON) when ready; 0 when keys must
 * first be fetched or shared (requests are queued: try again later); MX_E2EE_UNSAVED when the
 * store refused the group session's new state (nothing to send: try again later, when the
 * store works; the index it used is never handed out); -1 on failure (err). */
#define MX_E2EE_UNSAVED (-2)
int mx_e2ee_encrypt(mx_e2ee *e, const char *room, const char *const *users, int n, const char *type,
                    const char *content, char **out, char *err, size_t errlen);

/* The account's password, for the interactive auth that uploading cross-signing keys needs
 * (E2EE §"Cross-signing"); without it (a token login) the bot's device is not cross-signed. */
void mx_e2ee_set_password(mx_e2ee *e, const char *password);

/* Log lines (never secrets). */
typedef void (*mx_e2ee_log_fn)(void *ctx, int level, const char *line);
void mx_e2ee_set_log(mx_e2ee *e, mx_e2ee_log_fn fn, void *ctx);

#endif
