import Foundation
import Logging
import PostgresNIO
import RestockPipeline

/// One connection to PostgreSQL, used by one call at a time, for the seam's blocking calls: postgres-nio runs on an
/// event loop of this session's own (one thread), and the caller — the storage's executor, or libmosquitto's network
/// thread, never an event loop — waits for each statement's result.
///
/// A connection lost (the server restarted, the network dropped) is dropped; the next call makes a new one, so that a
/// store paused by an outage resumes when the server is back.
final class PostgresSession: @unchecked Sendable {
    // @unchecked: `connection` and `nextID` are only touched with `lock` held; the rest is immutable.
    /// Where the database is.
    let settings: PostgresSettings
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let logger: Logger
    /// One call at a time: its statements, its transaction.
    private let lock = NSLock()
    private var connection: PostgresConnection?
    private var nextID = 1
    /// Whether a connection was made before: the next one is logged (after a failover, it names the promoted server).
    private var hasConnected = false
    /// What a server must hold to be connected to, for a session of one store (``JournalMark``); `nil` for any other.
    let continuity: JournalMark?
    /// The server process of the connection in use, read when it was made.
    private var backend: Backend?
    /// The server processes of connections dropped with a statement in flight. Each may still run what it had read and
    /// commit it, its client gone — a backend frozen or slow goes on once it can, under the same lease (found by an outside
    /// trial: a journal's append given up after 15 s landed once the frozen backend went on, after it had been made
    /// again on a new connection and applied: its request applied twice, and a commit of the state landing late set the
    /// store's counters back). Nothing more is written on their server until each has been ended and is gone.
    private var abandoned: [Backend] = []

    /// How many processes of connections given up have not been seen to end.
    var abandonedProcesses: Int {
        lock.lock()
        defer { lock.unlock() }
        return abandoned.count
    }

    /// A server process of this session's, on one server, as `pg_stat_activity` names it.
    private struct Backend: Equatable {
        let server: String
        let pid: Int32
        /// `backend_start` as the server writes it: compared as text, exactly (a `Date` rounds its microseconds).
        let started: String
    }

    /// A session with the database of `settings`; it connects at its first call. A session of a store's storage connects
    /// only to a server that holds all its store committed there (`continuity`).
    init(settings: PostgresSettings, continuity: JournalMark? = nil, logger: Logger = Logger(label: "restock.postgres")) {
        self.settings = settings
        self.logger = logger
        self.continuity = continuity
    }

    deinit {
        if let connection { Self.close(connection) }
        group.shutdownGracefully { _ in }
    }

    /// Closes the connection, if any; the next call makes a new one.
    func disconnect() {
        lock.lock()
        defer { lock.unlock() }
        dropConnection()
    }

    /// Runs `body` with the connection (made first if need be), one call at a time, and turns what fails into a
    /// ``StorageError`` of `action` naming the database. A failure that leaves the connection of no use drops it.
    @discardableResult
    func run<T>(_ action: StorageError.Action, _ body: (Statements) throws -> T) throws(StorageError) -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            let connection = try connected()
            if !abandoned.isEmpty { try endAbandoned(on: connection) }
            return try body(Statements(connection: connection, logger: logger, answerTimeout: settings.answerTimeout))
        } catch let error as StorageError {
            throw error
        } catch {
            let failure = PostgresFailure(error)
            if failure.losesTheConnection, connection != nil {
                if let backend, !abandoned.contains(backend) { abandoned.append(backend) }
                dropConnection()
                // The store's own log says what it does about it (it pauses, or tries again); this says why, once.
                let what = failure.code > 0 ? "PostgreSQL answered: \(failure.reason)" : "the connection to PostgreSQL was lost: \(failure.reason)"
                logger.warning("\(what); the connection is made again, to the server of \(settings.location) that takes writes")
            }
            throw StorageError(action, settings.location, cause: failure)
        }
    }

    /// Runs `body` in one transaction: `BEGIN`, `fence` (the lease's check, when the write is fenced), `body`, `COMMIT`;
    /// `ROLLBACK` when any of them throws, and nothing of it is written.
    /// - Parameter begin: The statement that begins it (an isolation level, read only).
    @discardableResult
    func transaction<T>(
        _ action: StorageError.Action = .write, begin: PostgresQuery = "BEGIN", fence: ((Statements) throws -> Void)? = nil,
        _ body: (Statements) throws -> T
    ) throws(StorageError) -> T {
        try run(action) { statements in
            try statements.execute(begin)
            do {
                try fence?(statements)
                let value = try body(statements)
                try statements.execute("COMMIT")
                return value
            } catch {
                _ = try? statements.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// The connection, made now when there is none (or it was closed): to a server of the list that answers and takes
    /// writes — a read-only replica (`pg_is_in_recovery()`) or a server set read only is passed over, so that after a
    /// failover the store finds the promoted one — and that holds everything this session's store committed
    /// (``JournalMark``). Throws, when none does, the refusal of a server behind the store's journal if there was one
    /// (the reason an operator must act on), else the last server's failure.
    private func connected() throws -> PostgresConnection {
        if let connection {
            if !connection.isClosed { return connection }
            logger.warning(
                "the connection to PostgreSQL was lost: the server closed it; it is made again, to the server of \(settings.location) that takes writes")
        }
        dropConnection()
        var failure: any Error = PostgresFailure.noServerTakesWrites(settings.location)
        // Without a mark yet (the store's first connection) and with several servers, every writable one is asked how
        // far its journal goes, and the furthest is taken: a former primary started again on its own also takes writes.
        let compareAll = continuity?.needsComparing(servers: settings.servers.count) ?? false
        var writable: [(server: DatabaseURL.Server, connection: PostgresConnection, place: Int64)] = []
        var refusedAsBehind: PostgresFailure.BehindTheStore?
        var reasons: [(server: String, failure: PostgresFailure)] = []
        for server in settings.servers {
            defer { nextID += 1 }
            do {
                let made = try PostgresConnection.connect(
                    on: group.next(), configuration: try Self.configuration(of: settings, server: server), id: nextID, logger: logger
                ).wait(atMost: settings.connectTimeout + settings.answerTimeout, for: "connecting to \(server)")
                // Closed before it is released, whatever happens (postgres-nio traps otherwise).
                let place: Int64?
                do {
                    place = try probe(made)
                } catch {
                    Self.close(made)
                    throw error
                }
                guard let place else {
                    Self.close(made)
                    failure = PostgresFailure.noServerTakesWrites(settings.location)
                    reasons.append(("\(server)", PostgresFailure(PostgresFailure.TakesNoWrites())))
                    continue
                }
                if let behind = continuity?.refusal(of: "\(server)", place: place, logger: logger) {
                    Self.close(made)
                    failure = behind
                    refusedAsBehind = behind
                    continue
                }
                writable.append((server, made, place))
                if !compareAll { break }
            } catch {
                failure = error
                reasons.append(("\(server)", PostgresFailure(error)))
            }
        }
        if writable.isEmpty, refusedAsBehind == nil, settings.servers.count > 1, reasons.count == settings.servers.count,
            Set(reasons.map(\.failure.reason)).count > 1
        {
            failure = PostgresFailure.NoServerUsable(reasons: reasons)
        }
        let furthest = continuity?.furthest(of: writable, place: \.place, name: { "\($0.server)" }, location: settings.location, logger: logger)
        guard let chosen = furthest ?? writable.first else { throw refusedAsBehind ?? failure }
        for other in writable where other.server != chosen.server { Self.close(other.connection) }
        do {
            backend = try Self.backend(of: chosen.connection, on: "\(chosen.server)", within: settings.answerTimeout, logger: logger)
        } catch {
            Self.close(chosen.connection)
            throw error
        }
        connection = chosen.connection
        // A store's storage says where it went, at the first connection too (an outside trial missed it); a command's
        // session (export, the standby's schema check) only after a failover: a command prints one line, if any.
        if hasConnected {
            logger.notice("connected to PostgreSQL at \(chosen.server), which takes writes")
        } else if continuity != nil {
            logger.info("connected to PostgreSQL at \(chosen.server), which takes writes")
        }
        hasConnected = true
        return chosen.connection
    }

    /// Whether the server of `connection` takes writes and, if so, how far the journal of this session's store goes
    /// there (0 without the store's row, or for a session of no store): `nil` for a read-only replica or a server set
    /// read only (`default_transaction_read_only`).
    private func probe(_ connection: PostgresConnection) throws -> Int64? {
        let takesWrites = try connection.answer(to: Self.takesWrites, logger: logger)
            .wait(atMost: settings.answerTimeout, for: "whether the server takes writes").rows.first?.decode(Bool.self) ?? false
        guard takesWrites else { return nil }
        guard let store = continuity?.store else { return 0 }
        let schema = try connection.answer(to: "SELECT to_regclass('restock_store') IS NOT NULL", logger: logger)
            .wait(atMost: settings.answerTimeout, for: "whether the schema exists").rows
        guard try schema.first?.decode(Bool.self) == true else { return 0 }
        let rows = try connection.answer(to: "SELECT journal_place FROM restock_store WHERE store = \(store)", logger: logger)
            .wait(atMost: settings.answerTimeout, for: "how far the journal goes").rows
        return try rows.first?.decode(Int64.self) ?? 0
    }

    /// The server process of `connection`, to `server`.
    private static func backend(
        of connection: PostgresConnection, on server: String, within timeout: Duration, logger: Logger
    ) throws -> Backend? {
        let rows = try connection.answer(
            to: "SELECT pid, backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()", logger: logger
        ).wait(atMost: timeout, for: "the connection's server process").rows
        guard let (pid, started) = try rows.first?.decode((Int32, String).self) else { return nil }
        return Backend(server: server, pid: pid, started: started)
    }

    /// Ends the server processes of connections given up on the server of `connection` (``abandoned``) and waits, a
    /// moment at most, until they are gone; throws ``PostgresFailure/AbandonedStatementRuns`` while one is not (a frozen
    /// process ends only once it goes on: told to end, it ends before it commits what it had read). Those of another
    /// server (a failover) are forgotten: that server is written no more.
    private func endAbandoned(on connection: PostgresConnection) throws {
        abandoned.removeAll { $0.server != backend?.server }
        let deadline = ContinuousClock.now + .seconds(1)
        while let first = abandoned.first {
            // A process with its pid and start time: a pid taken again since by another process is left alone.
            let rows = try connection.answer(
                to: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = \(first.pid) AND backend_start::text = \(first.started)",
                logger: logger
            ).wait(atMost: settings.answerTimeout, for: "ending the server process of a connection given up").rows
            if rows.isEmpty {
                abandoned.removeFirst()
                logger.notice("the server process of a connection given up with a statement in flight (pid \(first.pid)) has ended: writes go on")
                continue
            }
            guard ContinuousClock.now < deadline else { throw PostgresFailure.AbandonedStatementRuns(pid: first.pid) }
            Thread.sleep(forTimeInterval: 0.01)  // the process was told to end: it is gone within milliseconds, unless frozen
        }
    }

    /// Whether a server takes writes: neither a replica in recovery nor set read only.
    static let takesWrites: PostgresQuery = "SELECT NOT (pg_is_in_recovery() OR current_setting('transaction_read_only')::bool)"

    /// How postgres-nio connects to `server` of `settings`: its TLS, the connect and lock timeouts.
    static func configuration(of settings: PostgresSettings, server: DatabaseURL.Server) throws -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: server.host, port: server.port, username: settings.user, password: settings.password,
            database: settings.database, tls: try tls(of: settings))
        configuration.options.connectTimeout = .nanoseconds(Int64(settings.connectTimeout.seconds * 1e9))
        // A process frozen in the middle of a transaction holds its locks — the lease row's among them — until the server
        // ends its session: after the lease's lifetime, so that a standby can take over a store frozen mid fan-out (found
        // by an outside trial: it waited as long as the freeze, 23 s and 48 s).
        configuration.options.additionalStartupParameters = [
            ("lock_timeout", "\(Int(settings.lockTimeout.seconds * 1000))ms"),
            ("idle_in_transaction_session_timeout", "\(Int(settings.leaseLifetime.seconds * 1000))ms"),
        ]
        return configuration
    }

    /// The TLS of `settings`' `sslmode`: none, encrypted without a check, or checked against the authorities of
    /// `sslrootcert` (the system's when none), with the host name too for `verify-full`.
    static func tls(of settings: PostgresSettings) throws -> PostgresConnection.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch settings.tls {
        case .disable: return .disable
        case .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        if let file = settings.rootCertificates {
            // Read first: NIOSSL's own failure names no file ("noSuchFilesystemObject", found trying it).
            guard FileManager.default.isReadableFile(atPath: file) else {
                let reason = FileManager.default.fileExists(atPath: file) ? "permission denied" : "no such file"
                throw PostgresFailure.RootCertificatesUnreadable(file: file, reason: reason)
            }
            tls.trustRoots = .file(file)
        }
        do {
            return .require(try NIOSSLContext(configuration: tls))
        } catch {
            guard let file = settings.rootCertificates else { throw error }
            throw PostgresFailure.RootCertificatesUnreadable(file: file, reason: "it holds no PEM certificate that can be loaded")
        }
    }

    private func dropConnection() {
        if let connection { Self.close(connection) }
        connection = nil
        backend = nil
    }

    /// Closes `connection`, waiting a moment at most: closing is local, but its future must not hold a store for ever.
    static func close(_ connection: PostgresConnection) {
        _ = try? connection.close().wait(atMost: .seconds(2), for: "closing the connection")
    }
}

/// The statements of one call on a session's connection, each waited for (``PostgresSession/run(_:_:)``).
struct Statements {
    let connection: PostgresConnection
    let logger: Logger
    /// How long an answer may take (``PostgresSettings/answerTimeout``).
    let answerTimeout: Duration

    /// Runs `query` and returns its rows; its answer may take `within` (by default ``answerTimeout``).
    @discardableResult
    func query(_ query: PostgresQuery, within: Duration? = nil) throws -> [PostgresRow] {
        try connection.answer(to: query, logger: logger).wait(atMost: within ?? answerTimeout, for: "a statement").rows
    }

    /// Runs `statement`, prepared on this connection at its first use here, and returns its rows; its answer may take
    /// `within` (by default ``answerTimeout``). postgres-nio runs a prepared statement only as an `async` call: begun on
    /// the connection's event loop (``EventLoopTaskExecutor``), it costs no thread more than a query's future.
    @discardableResult
    func query<Statement: PostgresPreparedStatement>(prepared statement: Statement, within: Duration? = nil) throws -> [Statement.Row]
    where Statement.Row: Sendable {
        let connection = connection, logger = logger
        let rows = connection.eventLoop.makePromise(of: [Statement.Row].self)
        Task(executorPreference: EventLoopTaskExecutor(connection.eventLoop)) {
            // On the event loop, where the channel cannot close between this check and the statement's write: a closed
            // one would never answer it (``PostgresConnection/answer(to:logger:)``).
            guard !connection.isClosed else { return rows.fail(PostgresFailure.ConnectionClosed()) }
            do {
                var read: [Statement.Row] = []
                for try await row in try await connection.execute(statement, logger: logger) { read.append(row) }
                rows.succeed(read)
            } catch {
                rows.fail(error)
            }
        }
        return try rows.futureResult.wait(atMost: within ?? answerTimeout, for: "a statement")
    }

    /// Runs `query` and returns how many rows it changed.
    @discardableResult
    func execute(_ query: PostgresQuery) throws -> Int {
        try connection.answer(to: query, logger: logger).wait(atMost: answerTimeout, for: "a statement").metadata.rows ?? 0
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
