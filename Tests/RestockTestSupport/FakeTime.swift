import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A process whose wall clock is off (Debian's `faketime`, libfaketime): how stores and clients whose clocks disagree
/// are tested. Only the wall clock moves; monotonic clocks stay true, as on a real machine whose clock is wrong.
/// Offsets are positive (`+10m`): libfaketime with a negative offset stops a Swift program before its first line
/// here, so "ten minutes behind" is the other process ten minutes ahead.
///
/// `faketime` runs the program as its child and does not pass SIGKILL on (no one can): start it with
/// `ownProcessGroup: true`, so that signals reach the program and a test's end never leaves it running, orphaned
/// (seen: stores under faketime still spinning on a dead broker's port long after the suite ended). Preloading
/// libfaketime into the program directly instead loses a Swift program's arguments here.
public enum FakeTime {
    /// `executable arguments`, run under `faketime -f offset` when an offset is given.
    public static func command(_ executable: String, _ arguments: [String], offset: String?) -> (String, [String]) {
        guard let offset else { return (executable, arguments) }
        removeStaleSemaphores()
        return ("faketime", ["-f", offset, executable] + arguments)
    }

    /// `faketime` names its semaphore and shared memory after its own pid and removes them only when it ends by
    /// itself: a wrapper that was killed leaves them in /dev/shm, and a later `faketime` that gets the same pid
    /// refuses to start ("sem_open: File exists", seen after a few hundred killed ones). Removes those of pids that
    /// are gone.
    static func removeStaleSemaphores(in directory: String = "/dev/shm") {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names {
            guard let prefix = ["sem.faketime_sem_", "faketime_shm_"].first(where: { name.hasPrefix($0) }),
                let pid = pid_t(name.dropFirst(prefix.count)), pid > 0,
                kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            try? FileManager.default.removeItem(atPath: "\(directory)/\(name)")
        }
    }

    /// What the environment needs for `offset`: the monotonic clocks left alone.
    public static func environment(offset: String?) -> [String: String] {
        offset == nil ? [:] : ["FAKETIME_DONT_FAKE_MONOTONIC": "1"]
    }
}
