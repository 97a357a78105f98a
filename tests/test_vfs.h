/* test_vfs.h — a SQLite VFS shim for tests: it sits between SQLite and the real file system of
 * the test process and asks the test, before every write, sync and truncate of every file (the
 * database, its WAL, a journal), whether to go on or fail.
 *
 * The test sets vfs_hook (NULL: everything goes on). It is called on whichever thread does
 * the call (the store's checkpointer and syncer have their own), with the file's name. Or it
 * takes the ready-made hook below, which holds or fails the syncs of the WAL that the store's
 * threads make (the syncer's, which make lazy commits durable), so that a test can watch what
 * waits for them. Static functions for Criterion tests: include this from the test file that
 * uses them. */
#ifndef CARDROOM_TEST_VFS_H
#define CARDROOM_TEST_VFS_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <sqlite3.h>
#include <string.h>
#include <time.h>

typedef enum { VFS_WRITE, VFS_SYNC, VFS_TRUNCATE } vfs_op;

/* SQLITE_OK to go on, or the code the call fails with; io_code is the I/O error SQLite's own
 * VFS would give for it (SQLITE_IOERR_WRITE, _FSYNC, _TRUNCATE). */
static int (*vfs_hook)(vfs_op op, const char *name, int io_code);

typedef struct {
    sqlite3_file base;    /* its methods are vfs_io */
    const char *name;     /* SQLite keeps it until the file is closed */
    sqlite3_file *real;   /* the real VFS's file, right after this struct */
} vfs_file;

static sqlite3_vfs *vfs_real;
static sqlite3_vfs vfs_shim;
static sqlite3_io_methods vfs_io;

#define VFS_REAL(f) (((vfs_file *)(f))->real)

static inline int vfs_ask(sqlite3_file *f, vfs_op op, int io_code)
{
    return vfs_hook ? vfs_hook(op, ((vfs_file *)f)->name, io_code) : SQLITE_OK;
}

static inline int vfs_close(sqlite3_file *f) { return VFS_REAL(f)->pMethods->xClose(VFS_REAL(f)); }
static inline int vfs_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
    return VFS_REAL(f)->pMethods->xRead(VFS_REAL(f), buf, n, off);
}
static inline int vfs_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
    int rc = vfs_ask(f, VFS_WRITE, SQLITE_IOERR_WRITE);
    return rc != SQLITE_OK ? rc : VFS_REAL(f)->pMethods->xWrite(VFS_REAL(f), buf, n, off);
}
static inline int vfs_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    int rc = vfs_ask(f, VFS_TRUNCATE, SQLITE_IOERR_TRUNCATE);
    return rc != SQLITE_OK ? rc : VFS_REAL(f)->pMethods->xTruncate(VFS_REAL(f), size);
}
static inline int vfs_sync(sqlite3_file *f, int flags)
{
    int rc = vfs_ask(f, VFS_SYNC, SQLITE_IOERR_FSYNC);
    return rc != SQLITE_OK ? rc : VFS_REAL(f)->pMethods->xSync(VFS_REAL(f), flags);
}
static inline int vfs_size(sqlite3_file *f, sqlite3_int64 *size) { return VFS_REAL(f)->pMethods->xFileSize(VFS_REAL(f), size); }
static inline int vfs_lock(sqlite3_file *f, int level) { return VFS_REAL(f)->pMethods->xLock(VFS_REAL(f), level); }
static inline int vfs_unlock(sqlite3_file *f, int level) { return VFS_REAL(f)->pMethods->xUnlock(VFS_REAL(f), level); }
static inline int vfs_reserved(sqlite3_file *f, int *out) { return VFS_REAL(f)->pMethods->xCheckReservedLock(VFS_REAL(f), out); }
static inline int vfs_control(sqlite3_file *f, int op, void *arg) { return VFS_REAL(f)->pMethods->xFileControl(VFS_REAL(f), op, arg); }
static inline int vfs_sector(sqlite3_file *f) { return VFS_REAL(f)->pMethods->xSectorSize(VFS_REAL(f)); }
static inline int vfs_device(sqlite3_file *f) { return VFS_REAL(f)->pMethods->xDeviceCharacteristics(VFS_REAL(f)); }
static inline int vfs_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out)
{
    return VFS_REAL(f)->pMethods->xShmMap(VFS_REAL(f), page, size, extend, out);
}
static inline int vfs_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return VFS_REAL(f)->pMethods->xShmLock(VFS_REAL(f), offset, n, flags);
}
static inline void vfs_shm_barrier(sqlite3_file *f) { VFS_REAL(f)->pMethods->xShmBarrier(VFS_REAL(f)); }
static inline int vfs_shm_unmap(sqlite3_file *f, int del) { return VFS_REAL(f)->pMethods->xShmUnmap(VFS_REAL(f), del); }
static inline int vfs_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **out)
{
    return VFS_REAL(f)->pMethods->xFetch(VFS_REAL(f), off, n, out);
}
static inline int vfs_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p) { return VFS_REAL(f)->pMethods->xUnfetch(VFS_REAL(f), off, p); }

static inline int vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    (void)vfs;
    vfs_file *f = (vfs_file *)file;
    f->name = name ? name : "";
    f->real = (sqlite3_file *)(f + 1);
    int rc = vfs_real->xOpen(vfs_real, name, f->real, flags, out_flags);
    f->base.pMethods = rc == SQLITE_OK && f->real->pMethods ? &vfs_io : NULL;
    return rc;
}

/* Makes the shim the default VFS of this process (once). */
static inline void vfs_install(void)
{
    if (vfs_real) return;
    vfs_real = sqlite3_vfs_find(NULL);
    cr_assert_not_null(vfs_real);
    cr_assert_geq(vfs_real->iVersion, 1);
    vfs_shim = *vfs_real;
    vfs_shim.zName = "cardroom-test-vfs";
    vfs_shim.szOsFile = (int)sizeof(vfs_file) + vfs_real->szOsFile;
    vfs_shim.xOpen = vfs_open;
    vfs_io = (sqlite3_io_methods){3, vfs_close, vfs_read, vfs_write, vfs_truncate, vfs_sync, vfs_size,
                                  vfs_lock, vfs_unlock, vfs_reserved, vfs_control, vfs_sector, vfs_device,
                                  vfs_shm_map, vfs_shm_lock, vfs_shm_barrier, vfs_shm_unmap, vfs_fetch,
                                  vfs_unfetch};
    cr_assert_eq(sqlite3_vfs_register(&vfs_shim, 1), SQLITE_OK);
}

/* ---- The store's syncs under the test's control ---- */

#define VFS_HUNG_S 60 /* only a hung test waits this long for a held sync */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t test;       /* the test's thread: its own syncs (the loop's) go on */
    int hold;             /* the store's threads' syncs of a WAL wait while it is set */
    int held;             /* one of them is waiting */
    int syncs;            /* such syncs made (or failed) */
    int fail;             /* the next one fails with this code (0: none) */
} vfs_syncer = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* A call the test controls: it waits while held, counts, and fails if told to. */
static inline int vfs_held_call(void)
{
    pthread_mutex_lock(&vfs_syncer.mu);
    vfs_syncer.held = 1;
    pthread_cond_broadcast(&vfs_syncer.cv);
    while (vfs_syncer.hold) pthread_cond_wait(&vfs_syncer.cv, &vfs_syncer.mu);
    vfs_syncer.held = 0;
    vfs_syncer.syncs++;
    int rc = vfs_syncer.fail;
    vfs_syncer.fail = 0;
    pthread_mutex_unlock(&vfs_syncer.mu);
    return rc;
}

static inline int vfs_syncer_hook(vfs_op op, const char *name, int io_code)
{
    (void)io_code;
    size_t n = strlen(name);
    if (op != VFS_SYNC || pthread_equal(pthread_self(), vfs_syncer.test) || n < 4 || strcmp(name + n - 4, "-wal") != 0)
        return SQLITE_OK;
    return vfs_held_call();
}

/* The same for every write the store's threads make (its writer's, which write the core's
 * transactions behind it): vfs_writer_install() instead of vfs_syncer_install(), then the
 * functions below hold, count and fail those writes. */
static inline int vfs_writer_hook(vfs_op op, const char *name, int io_code)
{
    (void)io_code;
    (void)name;
    if (op != VFS_WRITE || pthread_equal(pthread_self(), vfs_syncer.test)) return SQLITE_OK;
    return vfs_held_call();
}

/* The shim with the hook above, for the calling thread's test; nothing held or failed yet. */
static inline void vfs_syncer_install(void)
{
    vfs_install();
    pthread_mutex_lock(&vfs_syncer.mu);
    vfs_syncer.test = pthread_self();
    vfs_syncer.hold = vfs_syncer.held = vfs_syncer.syncs = vfs_syncer.fail = 0;
    pthread_mutex_unlock(&vfs_syncer.mu);
    vfs_hook = vfs_syncer_hook;
}

static inline void vfs_writer_install(void)
{
    vfs_syncer_install();
    vfs_hook = vfs_writer_hook;
}

/* Holds the store's syncs from now on (on), or lets them go. */
static inline void vfs_syncer_hold(int on)
{
    pthread_mutex_lock(&vfs_syncer.mu);
    vfs_syncer.hold = on;
    pthread_cond_broadcast(&vfs_syncer.cv);
    pthread_mutex_unlock(&vfs_syncer.mu);
}

/* Waits until a sync of the store's is held. */
static inline void vfs_syncer_wait_held(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += VFS_HUNG_S;
    pthread_mutex_lock(&vfs_syncer.mu);
    int rc = 0;
    while (!vfs_syncer.held && rc == 0) rc = pthread_cond_timedwait(&vfs_syncer.cv, &vfs_syncer.mu, &until);
    pthread_mutex_unlock(&vfs_syncer.mu);
    cr_assert_eq(rc, 0, "no sync of the store's came");
}

/* The next sync of the store's fails with code. */
static inline void vfs_syncer_fail_next(int code)
{
    pthread_mutex_lock(&vfs_syncer.mu);
    vfs_syncer.fail = code;
    pthread_mutex_unlock(&vfs_syncer.mu);
}

/* Syncs of the store's so far. */
static inline int vfs_syncer_syncs(void)
{
    pthread_mutex_lock(&vfs_syncer.mu);
    int n = vfs_syncer.syncs;
    pthread_mutex_unlock(&vfs_syncer.mu);
    return n;
}

#endif
