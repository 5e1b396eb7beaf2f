import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One process of this machine, told apart from any later one that reuses its pid: its pid, the time it started (in
/// clock ticks since boot, `/proc/PID/stat`'s 22nd field) and the boot it started in (`/proc/sys/kernel/random/boot_id`).
///
/// The owner of a data directory records its own in the request log's `meta` when it takes the lease
/// (``StoreLease/acquire(for:seen:holdsLock:at:)``), so that a standby can end it when it freezes while holding a write
/// lock of the store's files (``StalledOwner``), and be sure it ends that process, not another.
package struct ProcessIdentity: Sendable, Hashable {
    /// The pid, as this process's pid namespace numbers it.
    let pid: pid_t
    /// When it started, in clock ticks since boot.
    let startTicks: UInt64
    /// The boot it started in.
    let boot: String

    /// This process; `nil` where `/proc` cannot say.
    static var current: ProcessIdentity? { of(getpid()) }

    /// The process `pid` of this pid namespace, as `/proc` describes it now; `nil` when there is none (or `/proc` cannot
    /// say).
    static func of(_ pid: pid_t) -> ProcessIdentity? {
        guard pid > 0, let boot = bootID, let stat = ProcFile.read("/proc/\(pid)/stat") else { return nil }
        guard let fields = ProcStat(stat), let startTicks = fields.startTicks else { return nil }
        return ProcessIdentity(pid: pid, startTicks: startTicks, boot: boot)
    }

    /// What `/proc/PID/stat` says of `pid`'s state now (`T`: stopped, `D`: waiting on the disk, …), in words.
    package static func state(of pid: pid_t) -> String? {
        guard let stat = ProcFile.read("/proc/\(pid)/stat"), let state = ProcStat(stat)?.state else { return nil }
        switch state {
        case "T": return "stopped"
        case "t": return "stopped by a debugger"
        case "D": return "waiting on the disk"
        case "R": return "running"
        case "S": return "sleeping"
        case "Z": return "ended"
        default: return "state \(state)"
        }
    }

    /// The command `pid` runs (`/proc/PID/comm`: its name, at most 15 bytes), escaped for a log line.
    static func command(of pid: pid_t) -> String? {
        ProcFile.read("/proc/\(pid)/comm").map { StoredValues.escaped($0.trimmingCharacters(in: .newlines)) }
    }

    /// This boot's id.
    private static let bootID: String? = ProcFile.read("/proc/sys/kernel/random/boot_id").map {
        $0.trimmingCharacters(in: .whitespacesAndNewlines)
    }.flatMap { $0.isEmpty ? nil : $0 }

    /// As the request log records it: `PID START BOOT`.
    var recorded: String { "\(pid) \(startTicks) \(boot)" }

    /// Reads what ``recorded`` wrote; `nil` for anything else (the file is on disk, anyone may have changed it).
    init?(recorded: String) {
        let parts = recorded.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, let pid = pid_t(parts[0]), pid > 0, let startTicks = UInt64(parts[1]), !parts[2].isEmpty,
            parts[2].allSatisfy({ $0.isHexDigit || $0 == "-" })
        else { return nil }
        self.init(pid: pid, startTicks: startTicks, boot: String(parts[2]))
    }

    init(pid: pid_t, startTicks: UInt64, boot: String) {
        self.pid = pid
        self.startTicks = startTicks
        self.boot = boot
    }
}

/// The fields of a `/proc/PID/stat` line this code reads. The command's name (the second field, in parentheses) may hold
/// spaces and parentheses of its own: the fields are counted after the last `)`.
struct ProcStat: Sendable {
    /// The fields after the name: the state (field 3) first.
    private let fields: [Substring]

    init?(_ line: String) {
        guard let close = line.lastIndex(of: ")") else { return nil }
        fields = line[line.index(after: close)...].split(separator: " ")
        guard !fields.isEmpty else { return nil }
    }

    /// Field 3: one letter.
    var state: Character? { fields.first.flatMap { $0.count == 1 ? $0.first : nil } }

    /// Field 22: when the process started, in clock ticks since boot.
    var startTicks: UInt64? { fields.count > 19 ? UInt64(fields[19]) : nil }
}

/// A small file of `/proc`, read whole (its size says 0 until read).
enum ProcFile {
    static func read(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65_536 {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: buffer[..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
