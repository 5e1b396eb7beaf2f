#ifndef COUNTED_SYNCS_H
#define COUNTED_SYNCS_H

/// A SQLite VFS over the default one that counts each file's syncs (`xSync`: an fsync or fdatasync of the file),
/// so a test can see what SQLite made durable, and when. For tests only.

/// Makes the counting VFS SQLite's default: connections opened from then on go through it. Safe to call more than
/// once, from any thread. Returns 0 (SQLITE_OK) on success.
int counted_syncs_install(void);

/// How many times the file at `path` (as SQLite names it: a database's `-wal` file is `path` + "-wal") has been
/// synced through the counting VFS since it was installed.
long counted_syncs_of(const char *path);

/// Makes each sync of the file at `path` wait, before it reaches the disk, until `counted_syncs_release(path)`.
void counted_syncs_hold(const char *path);

/// How many syncs of the file at `path` are waiting now.
long counted_syncs_waiting(const char *path);

/// Lets the held syncs of the file at `path` go on, and holds none of its syncs from then on.
void counted_syncs_release(const char *path);

#endif
