import Foundation
import RestockCore
import RestockPipeline

// The state, the outbox, reports, expiry and dead letters: each write one fenced transaction, each read one snapshot.
extension PostgresStoreStorage {
    package func loadSnapshotReportingSkipped() throws -> (snapshot: StoreSnapshot, skipped: [String]) {
        try read { try PostgresStateReader(statements: $0, store: store.rawValue).snapshot() }
    }

    @discardableResult
    package func commit(_ changes: StoreChanges) throws -> [CommittedPublication] {
        let committed = place(changes.publications)
        try fenced(prepared: { store, epoch in
            StateCommit(query: PostgresStateWriter.commit(changes, messages: committed, store: store, epoch: epoch))
        })
        return committed
    }

    /// Gives `publications` their places in the outbox, in order: the places their commit writes them at.
    func place(_ publications: [Publication]) -> [CommittedPublication] {
        let first = nextOutboxPlace.withLock { next in
            defer { next += Int64(publications.count) }
            return next
        }
        return publications.enumerated().map { CommittedPublication(seq: first + Int64($0.offset), publication: $0.element) }
    }

    package func mirroredCustomers() throws -> [CustomerID] {
        try read { try PostgresStateReader(statements: $0, store: store.rawValue).mirroredCustomers() }
    }

    package func inventory() throws -> [(SKU, Int)] {
        try read { try PostgresStateReader(statements: $0, store: store.rawValue).inventory() }
    }

    // MARK: The outbox

    package var lastOutboxPlace: Int64 { nextOutboxPlace.withLock { $0 - 1 } }

    package func pendingPublications(after seq: Int64, limit: Int) throws -> [PendingPublication] {
        try read { try PostgresOutbox(statements: $0, store: store.rawValue).pending(after: seq, limit: limit) }
    }

    package func acknowledge(messages seqs: [Int64], batches: [(seq: Int64, sent: Int)]) throws {
        guard !seqs.isEmpty || !batches.isEmpty else { return }
        let now = Date()
        let rows = try session.run(.read) { try PostgresOutbox(statements: $0, store: store.rawValue).rows(at: seqs + batches.map(\.seq)) }
        try fenced { store, epoch in
            PostgresOutbox.acknowledgement(of: seqs, batches: batches, rows: rows, at: now, store: store, epoch: epoch)
        }
    }

    package func outboxDepth() throws -> Int {
        try read { try PostgresOutbox(statements: $0, store: store.rawValue).messageCount() }
    }

    package func queueLengths() throws -> (inbox: Int, outbox: Int, watches: Int) {
        try read { try PostgresStateReader(statements: $0, store: store.rawValue).queueLengths() }
    }

    // MARK: Reports, expiry

    package func report(at now: Date, sku: SKU?) throws -> StoreReport {
        try read { try PostgresAlertFigures(statements: $0, store: store.rawValue).report(at: now, sku: sku) }
    }

    package func expiredWatches(at now: Date, limit: Int) throws -> [WatchKey] {
        try read { try PostgresStateReader(statements: $0, store: store.rawValue).expiredWatches(at: now, limit: limit) }
    }

    package func nextExpiry(after now: Date) throws -> Date? {
        try read { try PostgresStateReader(statements: $0, store: store.rawValue).nextExpiry(after: now) }
    }
}
