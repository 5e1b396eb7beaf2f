import Deadlines
import Foundation
import GRDB
import SeededRandom
import Testing

@testable import RestockPipeline

/// A standby ends the owner of a lapsed lease only when that owner's recorded process holds a lock of the store's files
/// (``StalledOwner``, docs/architecture.md, "Ownership: the lease"): never another process, never one whose record is
/// of another epoch.
@Suite("A stalled owner")
struct StalledOwnerTests {
    typealias Directory = PipelineTests.Directory

    /// A Python process that holds a transaction of the SQLite file at `path` open until its input closes: a write
    /// transaction (the write lock), or a read (a read mark).
    final class LockHolder {
        let process = Process()
        private let input = Pipe(), output = Pipe()
        /// Opens once it said it holds its transaction open.
        private let began = Latch()

        init(path: String, writing: Bool = true) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            let begin = writing ? "c.execute('BEGIN IMMEDIATE')" : "c.execute('BEGIN'); c.execute('SELECT count(*) FROM sqlite_master').fetchall()"
            process.arguments = [
                "python3", "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); \(begin); print('began', flush=True); sys.stdin.read()",
                path,
            ]
            process.standardInput = input
            process.standardOutput = output
            output.fileHandleForReading.readabilityHandler = { [began] handle in
                if !handle.availableData.isEmpty { _ = began.open() }
            }
            try process.run()
        }

        /// Waits until it holds its transaction open, and returns the file's lock holders the kernel names then: one per
        /// byte, so a read mark shared with another process may be named as that one's.
        @discardableResult
        func held(_ path: String) async throws -> [pid_t] {
            try await waitUntil("python to begin its transaction", within: 30) { [began] in began.isOpen }
            return StalledOwner.lockHolders(of: path)
        }

        deinit {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    @Test("the owner records its process (pid, start time, boot) at the epoch it took, which stands for the later epochs of owners that never recorded theirs, not for earlier ones")
    func recordedAtTheEpoch() throws {
        let directory = Directory()
        let database = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let epoch = try #require(database.lease.heldEpoch)
        let current = try #require(ProcessIdentity.current)
        #expect(current.pid == getpid() && current.startTicks > 0)
        #expect(StoreLease.ownerProcess(readingOnly: directory.url, epoch: epoch) == current)
        // A lease taken later by one that never finished (or never recorded itself): its owner had no process of its own.
        #expect(StoreLease.ownerProcess(readingOnly: directory.url, epoch: epoch + 1) == current)
        #expect(StoreLease.ownerProcess(readingOnly: directory.url, epoch: epoch - 1) == nil)
    }

    @Test("a lock held by a process that is not the owner's recorded one is named and left alone; the recorded one holding it is ended")
    func onlyTheRecordedProcessIsEnded() async throws {
        let directory = Directory()
        let database = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let path = DataDirectory(directory.url).statePath
        #expect(StalledOwner.end(ownerOf: directory.url, seen: try database.lease.holder()) == .free)

        let other = try LockHolder(path: path)
        let pid = other.process.processIdentifier
        #expect(try await other.held(path).first == pid)
        let seen = try database.lease.holder()
        #expect(
            StalledOwner.end(ownerOf: directory.url, seen: seen)
                == .heldByAnother(StalledOwner.Blocker(file: "store.sqlite", pid: pid), owner: ProcessIdentity.current))
        #expect(other.process.isRunning)
        // Named in the standby's error with its command.
        #expect(ProcessIdentity.command(of: pid)?.hasPrefix("python") == true, "\(ProcessIdentity.command(of: pid) ?? "none")")
        // Its pid at another start time (a pid used again) is not it either.
        let identity = try #require(ProcessIdentity.of(pid))
        try record(ProcessIdentity(pid: pid, startTicks: identity.startTicks + 1, boot: identity.boot), epoch: seen.epoch, in: directory.url)
        #expect(StalledOwner.end(ownerOf: directory.url, seen: seen) == .heldByAnother(StalledOwner.Blocker(file: "store.sqlite", pid: pid), owner: StoreLease.ownerProcess(readingOnly: directory.url, epoch: seen.epoch)))
        #expect(other.process.isRunning)

        // Recorded as the owner at the lease's epoch, it is ended, while another process holds a read mark too (the
        // kernel names one holder per byte asked).
        let reader = try LockHolder(path: path, writing: false)
        try await reader.held(path)
        try record(identity, epoch: seen.epoch, in: directory.url)
        guard case .ended(let blocker, let state) = StalledOwner.end(ownerOf: directory.url, seen: seen) else {
            Issue.record("the recorded owner holding the lock was not ended")
            return
        }
        #expect(blocker == StalledOwner.Blocker(file: "store.sqlite", pid: pid))
        #expect(state == "sleeping")
        other.process.waitUntilExit()
        #expect(other.process.terminationReason == .uncaughtSignal && other.process.terminationStatus == SIGKILL)
        // The reader's read mark is all that is held now.
        #expect(StalledOwner.lockHolders(of: path) == [reader.process.processIdentifier])
        #expect(reader.process.isRunning)
    }

    /// Writes `process` as the owner's record at `epoch` into the request log, as the owner does when it takes the lease.
    private func record(_ process: ProcessIdentity, epoch: Int64, in directory: URL) throws {
        let queue = try DatabaseQueue(path: DataDirectory(directory).logPath)
        try queue.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('process', ?)", arguments: ["\(epoch) \(process.recorded)"])
        }
    }

    @Test("a record read from the disk: what the owner wrote reads back; any other text is no process, and never traps", arguments: 0..<8)
    func recordsFromTheDisk(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let alphabet = Array("0123456789abcdef- \u{0}\n+-x\u{1F600}")
        for _ in 0..<2_000 {
            let identity = ProcessIdentity(
                pid: pid_t.random(in: 1...pid_t.max, using: &random), startTicks: UInt64.random(in: 0...UInt64.max, using: &random),
                boot: UUID().uuidString.lowercased())
            #expect(ProcessIdentity(recorded: identity.recorded) == identity)
            let text = String((0..<Int.random(in: 0...60, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            if let read = ProcessIdentity(recorded: text) {
                #expect(read.pid > 0 && !read.boot.isEmpty, "\(text.debugDescription)")
            }
        }
        for text in ["", "1", "0 1 ab", "-1 1 ab", "1 -1 ab", "1 1 ", "1 1 a b", "99999999999 1 ab", "1 18446744073709551616 ab", "1  1 ab"] {
            #expect(ProcessIdentity(recorded: text) == nil, "\(text.debugDescription)")
        }
    }

    @Test("/proc/PID/stat's fields are counted after the name's last parenthesis, whatever the name holds")
    func statFields() {
        let tail = (4...22).map(String.init).joined(separator: " ")
        for name in ["restock", "a b) (c", ") ) )", "x\ny", ""] {
            let stat = ProcStat("123 (\(name)) T \(tail)")
            #expect(stat?.state == "T" && stat?.startTicks == 22, "\(name.debugDescription)")
        }
        #expect(ProcStat("no parenthesis") == nil)
        #expect(ProcStat("1 (x) T 4")?.startTicks == nil)
    }
}
