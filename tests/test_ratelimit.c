/* test_ratelimit.c — the per-person token buckets (bot/ratelimit.c): the limit, the one warning
 * and the quiet pause after it, refilling over the window, keys apart from each other,
 * and idle keys forgotten as the table grows. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "ratelimit.h"

static const rl_settings five = {5, 10000, 60000}; /* 5 commands per 10 s, 60 s pause */

Test(ratelimit, limit_then_one_warning_then_quiet_until_the_pause_ends)
{
    ratelimit *r = rl_new();
    cr_assert_not_null(r);
    for (int i = 0; i < 5; i++) cr_expect_eq(rl_take(r, "a", 1000, &five), RL_OK, "command %d", i + 1);
    cr_expect_eq(rl_take(r, "a", 1000, &five), RL_WARN, "the sixth is over the limit");
    cr_expect_eq(rl_take(r, "a", 1001, &five), RL_QUIET);
    cr_expect_eq(rl_take(r, "a", 60999, &five), RL_QUIET, "still within the pause");
    for (int i = 0; i < 5; i++) cr_expect_eq(rl_take(r, "a", 61000, &five), RL_OK, "after the pause, a full bucket");
    cr_expect_eq(rl_take(r, "a", 61000, &five), RL_WARN, "and the limit again");
    rl_free(r);
}

Test(ratelimit, the_bucket_fills_over_the_window)
{
    ratelimit *r = rl_new();
    for (int i = 0; i < 5; i++) cr_expect_eq(rl_take(r, "a", 0, &five), RL_OK);
    cr_expect_eq(rl_take(r, "a", 1999, &five), RL_WARN, "one command comes back every 2 s, not before");
    rl_free(r);
    r = rl_new();
    for (int i = 0; i < 5; i++) cr_expect_eq(rl_take(r, "a", 0, &five), RL_OK);
    cr_expect_eq(rl_take(r, "a", 2000, &five), RL_OK, "2 s later one more");
    cr_expect_eq(rl_take(r, "a", 2000, &five), RL_WARN);
    rl_free(r);
    r = rl_new();
    for (int t = 0; t < 100; t++) cr_expect_eq(rl_take(r, "a", (int64_t)t * 2000, &five), RL_OK, "steady pace");
    rl_free(r);
}

Test(ratelimit, keys_apart)
{
    ratelimit *r = rl_new();
    for (int i = 0; i < 5; i++) cr_expect_eq(rl_take(r, "flood", 0, &five), RL_OK);
    cr_expect_eq(rl_take(r, "flood", 0, &five), RL_WARN);
    cr_expect_eq(rl_take(r, "other", 0, &five), RL_OK, "another key has its own bucket");
    cr_expect_eq(rl_take(r, "flood", 0, &five), RL_QUIET);
    cr_expect_eq(rl_count(r), 2);
    rl_free(r);
}

Test(ratelimit, idle_keys_are_forgotten_paused_ones_kept)
{
    ratelimit *r = rl_new();
    char key[32];
    for (int i = 0; i < 5; i++) rl_take(r, "flood", 0, &five);
    cr_assert_eq(rl_take(r, "flood", 0, &five), RL_WARN);
    for (int i = 0; i < 500; i++) { /* one command each, 0.1 s apart, within flood's pause */
        snprintf(key, sizeof key, "u%d", i);
        cr_expect_eq(rl_take(r, key, (int64_t)i * 100, &five), RL_OK);
    }
    cr_expect_lt(rl_count(r), 100, "people whose bucket is full again are forgotten (%d kept)", rl_count(r));
    cr_expect_eq(rl_take(r, "flood", 50000, &five), RL_QUIET, "the paused one is kept");
    for (int i = 0; i < 4; i++) cr_expect_eq(rl_take(r, "u499", 50000, &five), RL_OK, "a kept key keeps its count");
    cr_expect_eq(rl_take(r, "u499", 50000, &five), RL_WARN);
    rl_free(r);
}
