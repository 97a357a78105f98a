/* ratelimit.h — how often one person may give the bot commands.
 *
 * A token bucket per key (the core's key is a network and a user: one person across all the
 * rooms): it holds up to `limit` commands and fills again at `limit` per window. A command that
 * finds the bucket empty pauses the key for `pause`: that first one is answered once
 * (RL_WARN), and every command until the pause ends is dropped without a word (RL_QUIET); then
 * the bucket is full again. Times are milliseconds on the caller's clock. */
#ifndef CARDROOM_RATELIMIT_H
#define CARDROOM_RATELIMIT_H

#include <stdint.h>

typedef struct ratelimit ratelimit;

typedef enum { RL_OK = 0, RL_WARN, RL_QUIET } rl_verdict;

typedef struct {
    int limit;          /* commands per window, at least 1 */
    int64_t window_ms;  /* at least 1 */
    int64_t pause_ms;
} rl_settings;

/* Returns NULL when out of memory. */
ratelimit *rl_new(void);
void rl_free(ratelimit *r);

/* One command from key at now. */
rl_verdict rl_take(ratelimit *r, const char *key, int64_t now, const rl_settings *s);

/* Keys the limiter holds now (tests: idle keys are forgotten as it grows). */
int rl_count(const ratelimit *r);

#endif
