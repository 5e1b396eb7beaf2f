import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A data directory's owner whose lease lapsed while it holds a lock of one of the store's two files: frozen (SIGSTOP, a
/// debugger) or stalled in the middle of a transaction, a checkpoint or a read. A lock of SQLite's is the process's
/// until it ends: no standby could write the lease while it holds the write lock (found by CI: a store frozen in the
/// middle of a fan-out held `store.sqlite`'s, and its standby waited "to start" until the test's deadline), and a
/// checkpoint or read lock would keep the new owner's write-ahead log from being emptied.
///
/// So a standby that finds the owner of a lapsed lease holding such a lock ends it (SIGKILL), as a cluster manager
/// fences a node that stopped answering: the lease says it is no longer the owner, and what it holds is of no use to
/// it any more (docs/architecture.md, "Ownership: the lease"). It ends only the process the owner recorded when it took
/// the lease (``ProcessIdentity``: its pid, start time and boot), found holding the lock in this pid namespace: any
/// other holder (`sqlite3` with a transaction open, a process of another container) is named, and waited for.
package enum StalledOwner {
    /// The locks of a file in WAL mode, in its `-shm` file: the write lock, the checkpoint lock, the recovery lock and the
    /// five read marks (bytes 120 through 127; SQLite's unix VFS). Byte 128, which every open connection holds shared,
    /// is left out.
    static let lockBytes: (start: Int, count: Int) = (120, 8)

    /// What holds a lock of a file.
    struct Blocker: Sendable, Hashable {
        /// The file's name, for the log.
        let file: String
        /// The holder's pid in this pid namespace; 0 when it is in another one.
        let pid: pid_t
    }

    /// What a standby found and did about an owner whose lease lapsed.
    enum Finding: Sendable, Equatable {
        /// No process holds a lock of either file: the lease can be taken.
        case free
        /// The owner's recorded process holds one; it was sent SIGKILL (`state`: what `/proc` said of it before).
        case ended(Blocker, state: String?)
        /// Another process holds one, or the owner's process cannot be told apart: the standby waits for it.
        case heldByAnother(Blocker, owner: ProcessIdentity?)
    }

    /// The process that holds one of the WAL locks of the SQLite file at `path`, if any (its pid in this pid namespace; 0
    /// when it is in another one).
    package static func lockHolder(of path: String) -> pid_t? { lockHolders(of: path).first }

    /// The processes that hold the WAL locks of the SQLite file at `path`, one per lock byte held, the write lock's
    /// first: the kernel names one holder of a range, so each byte is asked on its own (an owner frozen with the write
    /// lock is found even while a backup holds a read mark). The write, checkpoint and recovery locks have one holder
    /// each; a read mark may be shared, and then one of its holders is named.
    static func lockHolders(of path: String) -> [pid_t] {
        // Opened read-only: F_GETLK asks, it takes nothing. Closing it would let go of any POSIX lock this process holds
        // on the file: a standby holds none while it waits (its look at the lease opens and closes its own connection).
        let descriptor = open(path + "-shm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        return (lockBytes.start..<lockBytes.start + lockBytes.count).compactMap { byte in
            var probe = flock()
            probe.l_type = Int16(F_WRLCK)
            probe.l_whence = Int16(SEEK_SET)
            probe.l_start = off_t(byte)
            probe.l_len = 1
            guard fcntl(descriptor, F_GETLK, &probe) == 0, probe.l_type != Int16(F_UNLCK) else { return nil }
            return probe.l_pid
        }
    }

    /// Looks at the locks of the data directory's two files while the lease `seen` has lapsed, and ends the owner's
    /// recorded process if it holds one.
    static func end(ownerOf directory: URL, seen: LeaseHolder) -> Finding {
        let data = DataDirectory(directory)
        let blockers = [(DataDirectory.stateFileName, data.statePath), (RequestLog.fileName, data.logPath)].flatMap { name, path in
            lockHolders(of: path).map { Blocker(file: name, pid: $0) }
        }
        guard let first = blockers.first else { return .free }
        let owner = StoreLease.ownerProcess(readingOnly: directory, epoch: seen.epoch)
        // The recorded process, as it runs now: the same pid started at the same tick of the same boot.
        guard let owner, let blocker = blockers.first(where: { $0.pid == owner.pid }), ProcessIdentity.of(blocker.pid) == owner else {
            return .heldByAnother(first, owner: owner)
        }
        let state = ProcessIdentity.state(of: blocker.pid)
        kill(blocker.pid, SIGKILL)
        return .ended(blocker, state: state)
    }
}
