/* test_file.h — reading a whole file in a Criterion test (scenario and position files).
 *
 * A static function for Criterion tests: include this from the test file that uses it. */
#ifndef CARDROOM_TEST_FILE_H
#define CARDROOM_TEST_FILE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

/* The file's bytes, NUL-terminated (free them); *len without the NUL. */
static inline char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_geq(n, 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return buf;
}

#endif
