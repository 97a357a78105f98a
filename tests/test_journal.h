/* test_journal.h — a table's journal read from the store into memory, for the tests that
 * rebuild tables themselves (test_crash.c, test_migration.c).
 *
 * Static functions for Criterion tests: include this from the test file that uses them. */
#ifndef CARDROOM_TEST_JOURNAL_H
#define CARDROOM_TEST_JOURNAL_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

typedef struct {
    char **v;
    int n, cap;
} journal_entries;

static inline int journal_collect(void *ctx, int64_t seq, const char *entry)
{
    journal_entries *e = ctx;
    (void)seq;
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 256;
        e->v = realloc(e->v, (size_t)e->cap * sizeof *e->v);
        cr_assert_not_null(e->v);
    }
    e->v[e->n++] = strdup(entry);
    return 0;
}

/* Table id's journal, in order; free it with journal_free(). */
static inline journal_entries journal_read(store *s, int64_t id)
{
    journal_entries e = {0};
    cr_assert_eq(store_journal_each(s, id, journal_collect, &e), 0, "%s", store_error(s));
    return e;
}

static inline void journal_free(journal_entries *e)
{
    for (int k = 0; k < e->n; k++) free(e->v[k]);
    free(e->v);
}

#endif
