/* test_dirs.h — a private directory for a test's database files, and its removal.
 *
 * On tmpfs when there is one (SQLite syncs every commit; a disk only slows the tests). Static
 * functions for Criterion tests: include this from the test file that uses them. */
#ifndef CARDROOM_TEST_DIRS_H
#define CARDROOM_TEST_DIRS_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A new directory named for the test file (e.g. "console"); free it with temp_dir_remove(). */
static inline char *temp_dir(const char *name)
{
    char *p = NULL;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    cr_assert_gt(asprintf(&p, "%s/cardroom-%s-XXXXXX", base, name), 0);
    cr_assert_not_null(mkdtemp(p));
    return p;
}

/* Removes the directory and the files in it, and frees dir. */
static inline void temp_dir_remove(char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *p = NULL;
        if (asprintf(&p, "%s/%s", dir, e->d_name) > 0) unlink(p);
        free(p);
    }
    if (d) closedir(d);
    rmdir(dir);
    free(dir);
}

#endif
