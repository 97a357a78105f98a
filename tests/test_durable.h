/* test_durable.h — offering what the core queued once the store has it on disk, for tests
 * that drive the core on a database file.
 *
 * The core's commits do not wait for the disk, and what they queue is offered only once the
 * store's syncer has made them durable (core.c, "the outbox"): a test that flushes right after
 * a batch waits for that sync on the core's wake-up descriptor. Static functions for Criterion
 * tests: include this from the test file that uses them. */
#ifndef CARDROOM_TEST_DURABLE_H
#define CARDROOM_TEST_DURABLE_H

#include <criterion/criterion.h>
#include <poll.h>

#include "core.h"
#include "store.h"

#define DURABLE_HUNG_MS 60000 /* only a hung sync waits this long */

/* Waits on the store's wake-up descriptor until every commit made through it is durable: what
 * the store's writer was given is in the file, and on the disk. */
static inline void all_synced(store *s)
{
    int64_t through = 0;
    for (;;) {
        cr_assert_eq(store_durable(s, &through), 0, "%s", store_error(s));
        if (through >= store_commits(s)) return;
        struct pollfd p = {.fd = store_wake_fd(s), .events = POLLIN};
        cr_assert_gt(poll(&p, 1, DURABLE_HUNG_MS), 0, "the store never synced");
    }
}

/* core_flush(), again each time the wake-up descriptor turns readable, until the core has
 * suspended itself: a write the store's writer failed on behind the loop is learnt so. */
static inline void until_suspended(core *c)
{
    while (core_flush(c) >= 0 && !core_suspended(c)) {
        struct pollfd p = {.fd = core_wake_fd(c), .events = POLLIN};
        cr_assert_gt(poll(&p, 1, DURABLE_HUNG_MS), 0, "the failure was never reported");
    }
    cr_assert(core_suspended(c));
}

/* core_flush(), again each time the wake-up descriptor turns readable, until no message waits
 * for the disk. Returns the messages delivered. */
static inline int flush_durable(core *c)
{
    int sent = 0;
    for (;;) {
        int n = core_flush(c);
        cr_assert_geq(n, 0);
        sent += n;
        core_stats s;
        core_stats_of(c, &s);
        if (s.undurable == 0) return sent;
        struct pollfd p = {.fd = core_wake_fd(c), .events = POLLIN};
        cr_assert_gt(poll(&p, 1, DURABLE_HUNG_MS), 0, "the store never made the commits durable");
    }
}

#endif
