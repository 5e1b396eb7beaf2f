import Deadlines
import Foundation
import LocalBroker
import RestockPipeline
import Synchronization

/// A private PostgreSQL for one test: Debian's server binaries (`/usr/lib/postgresql/<version>/bin`, the newest version
/// installed), a data directory made by `initdb` in a temporary directory of its own, a free loopback port on 127.0.0.1
/// only, its unix socket in that directory, fsync on, and trust authentication, for the superuser `postgres`. Run as root,
/// `initdb` and `postgres` run as the `postgres` user.
///
/// ``stop()`` shuts it down at once (an outage, as a crash would), ``start()`` starts it again on the same port and data;
/// ``with(_:)`` stops it and removes its directory at the end, whatever the test did.
public final class PrivatePostgres: Sendable {
    /// The port on 127.0.0.1.
    public let port: Int
    /// `127.0.0.1`.
    public let host = "127.0.0.1"
    /// The superuser to log in as (trusted: no password).
    public let user = "postgres"
    /// The database that `initdb` made.
    public let database = "postgres"
    /// The temporary directory: `data`, `socket`, `postgres.log`.
    public let directory: URL
    /// Where the server's binaries are (Debian's `/usr/lib/postgresql/<version>/bin`: `pgbench` among them).
    public let binaries: URL
    private let process = Mutex<ChildProcess?>(nil)
    /// Addresses besides 127.0.0.1 it listens on, trusted as its own (`samenet`): the host side of test hosts' links.
    public let listenAddresses: [String]

    private var dataDirectory: URL { directory.appendingPathComponent("data") }
    private var socketDirectory: URL { directory.appendingPathComponent("socket") }
    /// Everything the server logged.
    public var log: String { (try? String(contentsOf: directory.appendingPathComponent("postgres.log"), encoding: .utf8)) ?? "" }

    private init(port: Int, directory: URL, binaries: URL, listenAddresses: [String]) {
        self.listenAddresses = listenAddresses
        self.port = port
        self.directory = directory
        self.binaries = binaries
    }

    deinit {
        // ``with(_:)`` stops it first; this is for a test that dropped it: the postmaster's immediate shutdown.
        process.withLock { $0?.send(SIGQUIT) }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts a server, runs `body` with it, then stops it and removes its directory, whether `body` threw or not.
    ///
    /// `body` runs on a thread of its own: the storage's calls block on the database, as they do on the store's pipeline
    /// thread, and the tests make them directly — on Swift's cooperative pool they held its two threads for seconds, and
    /// other suites' tests beside them ran past their time limits.
    public static func with<T>(_ body: (PrivatePostgres) async throws -> T) async throws -> T {
        let server = try await launch()
        do {
            let value = try await withTaskExecutorPreference(PipelineExecutor(label: "restock.postgres-test")) { try await body(server) }
            try await server.stop()
            return value
        } catch {
            try? await server.stop()
            throw error
        }
    }

    /// Makes a data directory and starts a server on it on a free loopback port.
    /// - Parameter listenAddresses: Addresses besides 127.0.0.1 to listen on (``listenAddresses``).
    public static func launch(listenAddresses: [String] = []) async throws -> PrivatePostgres {
        try await launch(listenAddresses: listenAddresses) { try await $0.initialize() }
    }

    /// Makes a data directory with `initialize` and starts a server on it on a free loopback port.
    private static func launch(
        listenAddresses: [String] = [], initialize: (PrivatePostgres) async throws -> Void
    ) async throws -> PrivatePostgres {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("restock-postgres-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("socket"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var lastError: (any Error)?
        // The kernel's free port can be taken again before postgres binds it; then try another.
        for attempt in 0..<5 {
            let server = PrivatePostgres(
                port: try freeLoopbackPort(), directory: directory, binaries: try binaryDirectory(), listenAddresses: listenAddresses)
            do {
                if attempt == 0 { try await initialize(server) }
                try await server.start()
                return server
            } catch {
                lastError = error
                try? await server.stop()
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastError ?? DeadlineExceeded(what: "PostgreSQL to start", seconds: 30)
    }

    /// The newest server installed: `/usr/lib/postgresql/<version>/bin`.
    static func binaryDirectory() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        let installed = versions.filter { FileManager.default.isExecutableFile(atPath: root.appendingPathComponent("\($0)/bin/postgres").path) }
        guard let newest = installed.max(by: { (Double($0) ?? 0) < (Double($1) ?? 0) }) else {
            throw PostgresUnavailable(reason: "no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql)")
        }
        return root.appendingPathComponent("\(newest)/bin")
    }

    /// `command` with `arguments`, as the `postgres` user when this process is root (PostgreSQL refuses to run as root).
    private func asServerUser(_ command: String, _ arguments: [String]) -> (String, [String]) {
        let path = binaries.appendingPathComponent(command).path
        return geteuid() == 0 ? ("runuser", ["-u", "postgres", "--", path] + arguments) : (path, arguments)
    }

    /// Runs `initdb`: trust authentication, UTF-8 without a locale, the superuser `postgres`.
    private func initialize() async throws {
        if geteuid() == 0 {
            let owned = try await ChildProcess.run("chown", ["-R", "postgres:postgres", directory.path])
            guard owned.status == 0 else { throw PostgresUnavailable(reason: "chown: \(owned.standardError)") }
        }
        let (command, arguments) = asServerUser(
            "initdb", ["-D", dataDirectory.path, "--auth=trust", "--username=postgres", "--encoding=UTF8", "--no-locale", "--no-sync"])
        let result = try await ChildProcess.run(command, arguments, within: 120)
        guard result.status == 0 else { throw PostgresUnavailable(reason: "initdb failed: \(result.standardOutput)\(result.standardError)") }
        if !listenAddresses.isEmpty {
            // The test hosts' links: subnets of this machine's own interfaces.
            let rules = dataDirectory.appendingPathComponent("pg_hba.conf")
            let handle = try FileHandle(forWritingTo: rules)
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("host all all samenet trust\n".utf8))
        }
    }

    /// How many sessions other than the asking one are connected to a database of the server now; 0 when it cannot say
    /// (stopped, starting): what a test waits on to see a store or standby connect.
    public func sessions() async -> Int {
        Int((try? await psql("SELECT count(*) FROM pg_stat_activity WHERE datname IS NOT NULL AND pid <> pg_backend_pid()")) ?? "") ?? 0
    }

    /// Makes `role`, with `password`, and has the server ask it for its password over TCP (scram-sha-256), before the
    /// rules that trust everyone else.
    public func requirePassword(of role: String, password: String) async throws {
        _ = try await psql("CREATE ROLE \(role) LOGIN PASSWORD '\(password)'")
        let rules = dataDirectory.appendingPathComponent("pg_hba.conf")
        let existing = try String(contentsOf: rules, encoding: .utf8)
        try ("host all \(role) 127.0.0.1/32 scram-sha-256\n" + existing).write(to: rules, atomically: false, encoding: .utf8)
        _ = try await psql("SELECT pg_reload_conf()")
    }

    /// Starts the server on its port and data (again, after ``stop()``), and waits until it accepts connections.
    public func start() async throws {
        let (command, arguments) = asServerUser(
            "postgres",
            [
                "-D", dataDirectory.path, "-p", String(port), "-k", socketDirectory.path, "-c", "listen_addresses=\((["127.0.0.1"] + listenAddresses).joined(separator: ","))",
                "-c", "fsync=on", "-c", "max_connections=40",
            ])
        let log = directory.appendingPathComponent("postgres.log")
        let child = try ChildProcess(command, arguments, outputFile: log, ownProcessGroup: true)
        process.withLock { $0 = child }
        let ready = binaries.appendingPathComponent("pg_isready").path
        let (host, port, user) = (host, port, user)
        try await waitUntil("PostgreSQL to accept connections on \(host):\(port)", within: 60, pollEvery: .milliseconds(200)) {
            if child.exitStatus != nil { throw PostgresUnavailable(reason: "postgres exited while starting: \(self.log)") }
            return try await ChildProcess.run(ready, ["-h", host, "-p", String(port), "-U", user, "-d", "postgres", "-t", "2"]).status == 0
        }
    }

    /// Shuts the server down at once (`pg_ctl stop -m immediate`: no checkpoint, as a crash), and waits until it is gone.
    public func stop() async throws {
        guard let child = process.withLock({ $0 }) else { return }
        let (command, arguments) = asServerUser("pg_ctl", ["stop", "-D", dataDirectory.path, "-m", "immediate", "-w", "-t", "30"])
        _ = try await ChildProcess.run(command, arguments, within: 40)
        child.send(SIGQUIT)
        try await child.waitForExit(within: 30)
        process.withLock { $0 = nil }
    }

    /// Starts a streaming replica of this server (`pg_basebackup -R`: a hot standby following it), runs `body` with it,
    /// and stops it, whether `body` threw or not. A `synchronous` one is waited for by every commit of this server
    /// (`synchronous_standby_names = '*'`): what this server acknowledged, the replica has.
    public func withReplica<T>(synchronous: Bool, _ body: (PrivatePostgres) async throws -> T) async throws -> T {
        let primary = self
        let replica = try await Self.launch { replica in
            if geteuid() == 0 {
                let owned = try await ChildProcess.run("chown", ["-R", "postgres:postgres", replica.directory.path])
                guard owned.status == 0 else { throw PostgresUnavailable(reason: "chown: \(owned.standardError)") }
            }
            let (command, arguments) = replica.asServerUser(
                "pg_basebackup",
                ["-h", primary.host, "-p", String(primary.port), "-U", primary.user, "-D", replica.dataDirectory.path, "-R", "-X", "stream", "--no-sync"])
            let made = try await ChildProcess.run(command, arguments, within: 120)
            guard made.status == 0 else { throw PostgresUnavailable(reason: "pg_basebackup failed: \(made.standardOutput)\(made.standardError)") }
        }
        do {
            if synchronous {
                _ = try await psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
                _ = try await psql("SELECT pg_reload_conf()")
                try await waitUntil("the replica to stream synchronously", within: 60, pollEvery: .milliseconds(200)) {
                    (try? await self.psql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'")) == "1"
                }
            }
            let value = try await body(replica)
            try await replica.stop()
            return value
        } catch {
            try? await replica.stop()
            throw error
        }
    }

    /// Promotes a replica to a server that takes writes (`pg_ctl promote -w`), as a failover does.
    public func promote() async throws {
        let (command, arguments) = asServerUser("pg_ctl", ["promote", "-D", dataDirectory.path, "-w", "-t", "60"])
        let promoted = try await ChildProcess.run(command, arguments, within: 70)
        guard promoted.status == 0 else { throw PostgresUnavailable(reason: "pg_ctl promote failed: \(promoted.standardOutput)\(promoted.standardError)") }
    }

    /// Runs `sql` with `psql` as the superuser, in `database` (by default ``database``); returns what it printed
    /// (unaligned, tuples only).
    public func psql(_ sql: String, in database: String? = nil) async throws -> String {
        let result = try await ChildProcess.run(
            binaries.appendingPathComponent("psql").path,
            ["-h", host, "-p", String(port), "-U", user, "-d", database ?? self.database, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
        guard result.status == 0 else { throw PostgresUnavailable(reason: "psql: \(result.standardError)") }
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// PostgreSQL could not be started or used for a test; `reason` says why.
public struct PostgresUnavailable: Error, CustomStringConvertible {
    public let reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}
