import Deadlines
import Foundation
import Logging
import PostgresNIO
import RestockCore
import RestockPipeline
import Synchronization

extension PostgresStorage {
    /// A standby's wait for the owner of `store` to go: returns the lease as seen when its owner released it or let it
    /// lapse — not renewed for ``LeaseHolder/lifetime`` by the database's clock — to pass as the takeover's `seen`; `nil`
    /// when the store has no lease yet (nothing to wait for). Looks once per ``LeaseHolder/renewalInterval``, on a
    /// connection of its own; a look that fails for a while (the server restarting) is tried again at the next.
    /// - Throws: `CancellationError` when cancelled; a ``StorageError`` that trying again cannot help.
    package func waitForTheOwnerToGo(of store: StoreID, logger _: Logger) async throws -> StandbyTakeover {
        StandbyTakeover(hold: nil, seen: try await waitForTheLeaseToGo(of: store))
    }

    /// Refuses at once a database the standby could never use: a server that refuses this user or has no such
    /// database, or a schema of a newer release. A server not reachable yet is waited for (the wait looks again).
    package func prepareStandby(for store: StoreID) throws {
        let version: Int
        do {
            version = try PostgresSession(settings: settings).run(.open, PostgresSchema.version)
        } catch where error.isRetriable {
            return
        }
        try PostgresSchema.check(version, location: location)
    }

    /// The lease as seen when its owner released it or let it lapse; `nil` when the store has no lease yet.
    private func waitForTheLeaseToGo(of store: StoreID) async throws -> LeaseHolder? {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let logger = Logger(label: "restock.postgres.standby")
        let mark = journalMarks.mark(of: store)
        var connection: PostgresConnection?
        let outcome: Result<LeaseHolder?, any Error>
        // The lease as this standby first saw it unchanged (epoch and renewals), by its own clock: a lease lapsed by the
        // database's clock is taken over only once this standby has also seen it stand still for its lifetime. The
        // database's clock runs on while the database is away, and when it comes back every lease reads lapsed: the
        // owner, paused meanwhile, is given a lifetime to renew it (found by CI: a standby took a store over as the
        // promoted server came back, and the live store, about to renew, was fenced). A look that fails forgets it.
        var unchanged: (epoch: Int64, renewals: Int64, since: ContinuousClock.Instant)?
        while true {
            do {
                try Task.checkCancellation()
                if connection == nil { connection = try await connectToAWritableServer(mark: mark, on: group, logger: logger) }
                // How far the journal goes where the lease is looked at: the takeover's storage uses no server behind it.
                mark.advance(to: try await journalPlace(of: store.rawValue, on: connection!, logger: logger))
                let seen = try await look(at: store, on: connection!, logger: logger)
                let now = ContinuousClock.now
                if let holder = seen.holder, unchanged.map({ $0.epoch != holder.epoch || $0.renewals != holder.renewals }) ?? true {
                    unchanged = (holder.epoch, holder.renewals, now)
                }
                // The lease as it was when its owner went; `.some(nil)`: the store has none.
                let gone: LeaseHolder?? =
                    switch seen {
                    case .held: nil
                    case .released(let holder): .some(holder)
                    case .absent: .some(nil)
                    case .lapsed(let holder): unchanged.map({ now - $0.since >= settings.leaseLifetime }) == true ? .some(holder) : nil
                    }
                if let gone {
                    outcome = .success(gone)
                    break
                }
            } catch let error as CancellationError {
                outcome = .failure(error)
                break
            } catch {
                let failure = StorageError(.read, location, cause: PostgresFailure(error))
                guard failure.isRetriable else {
                    outcome = .failure(failure)
                    break
                }
                if let lost = connection { Self.close(lost) }
                connection = nil
                // Not seen meanwhile: the owner, paused by the same outage, is given a lifetime from the next look (found by
                // CI: a lease last seen before the outage read as standing still through it, and was taken at once).
                unchanged = nil
            }
            do {
                try await Task.sleep(for: LeaseHolder.renewalInterval)
            } catch {
                outcome = .failure(error)
                break
            }
        }
        if let connection { Self.close(connection) }
        try? await group.shutdownGracefully()
        return try outcome.get()
    }

    /// A connection to a server of the list that answers and takes writes, not a replica nor read only, chosen as the
    /// storage's sessions choose (``JournalMark``: never one behind what `mark` saw; with nothing seen yet, the one whose
    /// journal goes furthest). The lease is read where it is written: a replica's copy may be behind, and a former
    /// primary started again on its own holds a lease of its own (found by an outside trial: a standby took it there).
    private func connectToAWritableServer(mark: JournalMark, on group: MultiThreadedEventLoopGroup, logger: Logger) async throws -> PostgresConnection {
        var failure: any Error = PostgresFailure.noServerTakesWrites(location)
        let compareAll = mark.needsComparing(servers: settings.servers.count)
        var writable: [(server: DatabaseURL.Server, connection: PostgresConnection, place: Int64)] = []
        for (number, server) in settings.servers.enumerated() {
            do {
                let connection = try await Self.result(of: PostgresConnection.connect(
                    on: group.next(), configuration: PostgresSession.configuration(of: settings, server: server), id: number + 1, logger: logger))
                // Closed before it is released, whatever happens (postgres-nio traps otherwise).
                let place: Int64?
                do {
                    let takesWrites = try await Self.result(of: connection.answer(to: PostgresSession.takesWrites, logger: logger)).rows.first?.decode(Bool.self) ?? false
                    place = takesWrites ? try await journalPlace(of: mark.store, on: connection, logger: logger) : nil
                } catch {
                    Self.close(connection)
                    throw error
                }
                guard let place else {
                    Self.close(connection)
                    continue
                }
                if let behind = mark.refusal(of: "\(server)", place: place, logger: logger) {
                    Self.close(connection)
                    failure = behind
                    continue
                }
                writable.append((server, connection, place))
                if !compareAll { break }
            } catch {
                failure = error
            }
        }
        guard let chosen = mark.furthest(of: writable, place: \.place, name: { "\($0.server)" }, location: location, logger: logger) else {
            throw failure
        }
        for other in writable where other.server != chosen.server { Self.close(other.connection) }
        mark.advance(to: chosen.place)
        return chosen.connection
    }

    /// How far the journal of `store` goes on the server of `connection`; 0 before the schema or the store's row exist.
    private func journalPlace(of store: String, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        let exists = try await Self.result(of: connection.answer(to: "SELECT to_regclass('restock_store') IS NOT NULL", logger: logger)).rows
        guard try exists.first?.decode(Bool.self) == true else { return 0 }
        let rows = try await Self.result(of: connection.answer(to: "SELECT journal_place FROM restock_store WHERE store = \(store)", logger: logger)).rows
        return try rows.first?.decode(Int64.self) ?? 0
    }

    /// The value of `future`, waited for at most `limit`, or until the task is cancelled: a future of a connection whose
    /// server went away may never complete, and awaiting it (`get()`) ignores cancellation (found by an outside trial: a
    /// standby that lived through a database restart never took over, and ignored SIGTERM).
    /// - Throws: the future's error; `CancellationError`; ``DeadlineExceeded`` after `limit`.
    static func result<T: Sendable>(of future: EventLoopFuture<T>, within limit: Duration = .seconds(10)) async throws -> T {
        let state = Mutex<(waiting: CheckedContinuation<T, any Error>?, outcome: Result<T, any Error>?)>((nil, nil))
        @Sendable func settle(_ result: Result<T, any Error>) {
            let waiting: CheckedContinuation<T, any Error>? = state.withLock { state in
                if state.outcome != nil { return nil }
                state.outcome = result
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume(with: result)
        }
        future.whenComplete { result in settle(result.mapError { $0 }) }
        let timer = future.eventLoop.scheduleTask(in: .nanoseconds(Int64(limit.seconds * 1e9))) {
            settle(.failure(DeadlineExceeded(what: "PostgreSQL's answer", seconds: limit.seconds)))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let ready: Result<T, any Error>? = state.withLock { state in
                    if let outcome = state.outcome { return outcome }
                    state.waiting = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            settle(.failure(CancellationError()))
        }
    }

    /// Closes `connection` without waiting for it: the close of a connection whose server went away may never end. The
    /// connection is kept until it has (postgres-nio traps when one is released open).
    static func close(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in _ = connection }
    }

    /// What one look at a lease found.
    private enum Look {
        /// Its owner renewed it within its lifetime, by the database's clock.
        case held(LeaseHolder)
        /// Its owner released it.
        case released(LeaseHolder)
        /// Its owner has not renewed it within its lifetime, by the database's clock.
        case lapsed(LeaseHolder)
        /// The store has no lease (nothing to wait for).
        case absent

        var holder: LeaseHolder? {
            switch self {
            case .held(let holder), .released(let holder), .lapsed(let holder): holder
            case .absent: nil
            }
        }
    }

    private func look(at store: StoreID, on connection: PostgresConnection, logger: Logger) async throws -> Look {
        let exists = try await Self.result(of: connection.answer(to: "SELECT to_regclass('restock_lease') IS NOT NULL", logger: logger)).rows
        guard try exists.first?.decode(Bool.self) == true else { return .absent }
        let rows = try await Self.result(of: connection.answer(to: 
            "SELECT \(unescaped: PostgresLease.columns(lifetime: settings.leaseLifetime)) FROM restock_lease WHERE store = \(store.rawValue)", logger: logger
        )).rows
        guard let row = rows.first else { return .absent }
        let holder = try PostgresLease.holder(from: row)
        if holder.released { return .released(holder.storeLeaseHolder) }
        return holder.fresh ? .held(holder.storeLeaseHolder) : .lapsed(holder.storeLeaseHolder)
    }
}

extension PostgresLease.Holder {
    /// The lease as the seam's ``LeaseHolder`` describes it: the owner empty once released, and no directory lock
    /// held (there is none), so that a standby takes a released lease at once.
    var storeLeaseHolder: LeaseHolder {
        LeaseHolder(epoch: epoch, owner: currentOwner, renewals: renewals, renewedAt: renewedAt, holdsLock: false)
    }
}
