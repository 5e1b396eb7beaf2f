// A SQLite VFS that forwards everything to the default VFS and counts each file's xSync calls (CountedSyncs.h).
// The shape follows SQLite's documented VFS interface (https://www.sqlite.org/c3ref/vfs.html): a file of this VFS
// holds the default VFS's file right after its own header, and every I/O method forwards to it.
#include "CountedSyncs.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

typedef struct CountedFile {
    sqlite3_file base;
    long slot;           // the file's counter in `counters`, or -1
    sqlite3_file *real;  // the default VFS's file, right after this header
} CountedFile;

enum { capacity = 4096 };
// Each file's syncs, whether its syncs are held (counted_syncs_hold), and how many of them wait now.
static struct { char *path; long syncs; int held; long waiting; } counters[capacity];
static long used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
// What held syncs wait on.
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;
static sqlite3_vfs *underlying;
static sqlite3_vfs counting;
static sqlite3_io_methods methods;

static long counter_for(const char *path) {
    long found = -1;
    pthread_mutex_lock(&lock);
    for (long index = 0; index < used; index++) {
        if (strcmp(counters[index].path, path) == 0) { found = index; break; }
    }
    if (found < 0 && used < capacity) {
        counters[used].path = strdup(path);
        counters[used].syncs = 0;
        counters[used].held = 0;
        counters[used].waiting = 0;
        found = used++;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

static sqlite3_file *real(sqlite3_file *file) { return ((CountedFile *)file)->real; }

static int counted_close(sqlite3_file *file) { return real(file)->pMethods->xClose(real(file)); }
static int counted_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    return real(file)->pMethods->xRead(real(file), buffer, amount, offset);
}
static int counted_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    return real(file)->pMethods->xWrite(real(file), buffer, amount, offset);
}
static int counted_truncate(sqlite3_file *file, sqlite3_int64 size) { return real(file)->pMethods->xTruncate(real(file), size); }
static int counted_sync(sqlite3_file *file, int flags) {
    long slot = ((CountedFile *)file)->slot;
    if (slot >= 0) {
        pthread_mutex_lock(&lock);
        while (counters[slot].held) {
            counters[slot].waiting++;
            pthread_cond_wait(&released, &lock);
            counters[slot].waiting--;
        }
        pthread_mutex_unlock(&lock);
    }
    int result = real(file)->pMethods->xSync(real(file), flags);
    if (slot >= 0) {
        pthread_mutex_lock(&lock);
        counters[slot].syncs++;
        pthread_mutex_unlock(&lock);
    }
    return result;
}
static int counted_file_size(sqlite3_file *file, sqlite3_int64 *size) { return real(file)->pMethods->xFileSize(real(file), size); }
static int counted_lock(sqlite3_file *file, int level) { return real(file)->pMethods->xLock(real(file), level); }
static int counted_unlock(sqlite3_file *file, int level) { return real(file)->pMethods->xUnlock(real(file), level); }
static int counted_check_reserved_lock(sqlite3_file *file, int *out) {
    return real(file)->pMethods->xCheckReservedLock(real(file), out);
}
static int counted_file_control(sqlite3_file *file, int operation, void *argument) {
    return real(file)->pMethods->xFileControl(real(file), operation, argument);
}
static int counted_sector_size(sqlite3_file *file) { return real(file)->pMethods->xSectorSize(real(file)); }
static int counted_device_characteristics(sqlite3_file *file) {
    return real(file)->pMethods->xDeviceCharacteristics(real(file));
}
static int counted_shm_map(sqlite3_file *file, int region, int size, int extend, void volatile **out) {
    return real(file)->pMethods->xShmMap(real(file), region, size, extend, out);
}
static int counted_shm_lock(sqlite3_file *file, int offset, int count, int flags) {
    return real(file)->pMethods->xShmLock(real(file), offset, count, flags);
}
static void counted_shm_barrier(sqlite3_file *file) { real(file)->pMethods->xShmBarrier(real(file)); }
static int counted_shm_unmap(sqlite3_file *file, int delete) { return real(file)->pMethods->xShmUnmap(real(file), delete); }

static int counted_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    CountedFile *counted = (CountedFile *)file;
    counted->real = (sqlite3_file *)&counted[1];
    counted->slot = -1;
    int result = underlying->xOpen(underlying, name, counted->real, flags, outFlags);
    // A file the default VFS could not open has no methods: SQLite must not call ours either.
    if (counted->real->pMethods == NULL) {
        file->pMethods = NULL;
        return result;
    }
    if (name != NULL) counted->slot = counter_for(name);
    file->pMethods = &methods;
    return result;
}

static void install_once(void) {
    underlying = sqlite3_vfs_find(NULL);
    if (underlying == NULL) return;
    // Version 2: the methods of WAL's shared memory, and no memory-mapped I/O (xFetch), which SQLite then does not use.
    methods = (sqlite3_io_methods){
        .iVersion = 2, .xClose = counted_close, .xRead = counted_read, .xWrite = counted_write, .xTruncate = counted_truncate,
        .xSync = counted_sync, .xFileSize = counted_file_size, .xLock = counted_lock, .xUnlock = counted_unlock,
        .xCheckReservedLock = counted_check_reserved_lock, .xFileControl = counted_file_control,
        .xSectorSize = counted_sector_size, .xDeviceCharacteristics = counted_device_characteristics,
        .xShmMap = counted_shm_map, .xShmLock = counted_shm_lock, .xShmBarrier = counted_shm_barrier,
        .xShmUnmap = counted_shm_unmap};
    // Everything but opening a file is the default VFS's own: its functions read only its settings, copied here.
    counting = *underlying;
    counting.zName = "counted-syncs";
    counting.szOsFile = (int)sizeof(CountedFile) + underlying->szOsFile;
    counting.xOpen = counted_open;
    counting.pNext = NULL;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

int counted_syncs_install(void) {
    pthread_once(&once, install_once);
    if (underlying == NULL) return SQLITE_ERROR;
    return sqlite3_vfs_register(&counting, 1);
}

// Each call below finds the file's counter as opening it does (made at the first mention), under the lock.
long counted_syncs_of(const char *path) {
    long slot = counter_for(path);
    pthread_mutex_lock(&lock);
    long syncs = slot >= 0 ? counters[slot].syncs : 0;
    pthread_mutex_unlock(&lock);
    return syncs;
}

void counted_syncs_hold(const char *path) {
    long slot = counter_for(path);
    pthread_mutex_lock(&lock);
    if (slot >= 0) counters[slot].held = 1;
    pthread_mutex_unlock(&lock);
}

long counted_syncs_waiting(const char *path) {
    long slot = counter_for(path);
    pthread_mutex_lock(&lock);
    long count = slot >= 0 ? counters[slot].waiting : 0;
    pthread_mutex_unlock(&lock);
    return count;
}

void counted_syncs_release(const char *path) {
    long slot = counter_for(path);
    pthread_mutex_lock(&lock);
    if (slot >= 0) counters[slot].held = 0;
    pthread_cond_broadcast(&released);
    pthread_mutex_unlock(&lock);
}
