import Foundation
import Logging
import PostgresNIO
import RestockCore
import RestockPipeline

extension PostgresStorage {
    /// A standby's wait for the owner of `store` to go: returns the lease as seen when its owner released it or let it
    /// lapse — not renewed for ``StoreLease/lifetime`` by the database's clock — to pass as the takeover's `seen`; `nil`
    /// when the store has no lease yet (nothing to wait for). Looks once per ``StoreLease/renewalInterval``, on a
    /// connection of its own; a look that fails for a while (the server restarting) is tried again at the next.
    /// - Throws: `CancellationError` when cancelled; a ``StorageError`` that trying again cannot help.
    package func waitForTheOwnerToGo(of store: StoreID) async throws -> StoreLease.Holder? {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let logger = Logger(label: "restock.postgres.standby")
        var connection: PostgresConnection?
        let outcome: Result<StoreLease.Holder?, any Error>
        while true {
            do {
                try Task.checkCancellation()
                if connection == nil {
                    connection = try await PostgresConnection.connect(
                        on: group.next(), configuration: PostgresSession.configuration(of: settings), id: 1, logger: logger
                    ).get()
                }
                if case .gone(let holder) = try await look(at: store, on: connection!, logger: logger) {
                    outcome = .success(holder)
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
                if let lost = connection { _ = try? await lost.close().get() }
                connection = nil
            }
            do {
                try await Task.sleep(for: StoreLease.renewalInterval)
            } catch {
                outcome = .failure(error)
                break
            }
        }
        // Closed before it is released: postgres-nio requires it.
        if let connection { _ = try? await connection.close().get() }
        try? await group.shutdownGracefully()
        return try outcome.get()
    }

    /// What one look at a lease found.
    private enum Look {
        /// Its owner renewed it within its lifetime.
        case held
        /// Its owner released it or let it lapse, as it reads now; `nil`: the store has no lease.
        case gone(StoreLease.Holder?)
    }

    private func look(at store: StoreID, on connection: PostgresConnection, logger: Logger) async throws -> Look {
        let exists = try await connection.query("SELECT to_regclass('restock_lease') IS NOT NULL", logger: logger).get().rows
        guard try exists.first?.decode(Bool.self) == true else { return .gone(nil) }
        let rows = try await connection.query(
            "SELECT \(unescaped: PostgresLease.columns) FROM restock_lease WHERE store = \(store.rawValue)", logger: logger
        ).get().rows
        guard let row = rows.first else { return .gone(nil) }
        let holder = try PostgresLease.holder(from: row)
        return holder.released || !holder.fresh ? .gone(holder.storeLeaseHolder) : .held
    }
}

extension PostgresLease.Holder {
    /// The lease as the seam's ``StoreLease/Holder`` describes it: the owner empty once released, and no directory lock
    /// held (there is none), so that a standby takes a released lease at once.
    var storeLeaseHolder: StoreLease.Holder {
        SeamValues.holder(epoch: epoch, owner: currentOwner, renewals: renewals, renewedAt: renewedAt, holdsLock: false)
    }
}
