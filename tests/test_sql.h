/* test_sql.h — asking the database file itself, beside the store (a connection of the test's
 * own): what the file holds, whatever the store's threads hold or wait for.
 *
 * A static function for Criterion tests: include this from the test file that uses it. */
#ifndef CARDROOM_TEST_SQL_H
#define CARDROOM_TEST_SQL_H

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdint.h>

/* The one number a query answers (a count), read only. */
static inline int64_t test_sql_count(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

#endif
