import Foundation
import PostgresNIO
import RestockCore
import RestockPipeline

/// Writes what a batch of requests changed (``StoreChanges``) into one store's rows: one call of `restock_commit` (by
/// `restock_commit_durably`, which commits before it answers: ``PostgresSchema/procedures``), its own transaction,
/// fenced by the lease, which writes them in the order SQLite's `StateWriter` does — watches, inventory, counters,
/// forgotten customers, dead letters, figures, mirrors, the outbox, how far the journal is applied — each kind of row
/// many to a statement, from the arrays this builds.
struct PostgresStateWriter {
    /// The commit of `changes`, with `messages`, its publications at the places the outbox gave them: one statement.
    static func commit(_ changes: StoreChanges, messages: [CommittedPublication], store: String, epoch: Int64?) -> PostgresQuery {
        let watches = WatchRuns(changes.watchChanges)
        let inventory = changes.inventory.sorted { $0.key.rawValue < $1.key.rawValue }
        var counters: [(String, Int64)] = []
        if let next = changes.counters {
            counters = [("nextPosition", Int64(next.nextPosition)), ("nextAlertSequence", Int64(next.nextAlertSequence))]
        }
        let forgotten = changes.forgotten
        let raised = changes.alertsRaised.sorted { $0.key.rawValue < $1.key.rawValue }
        let hour = PostgresAlertFigures.hour(of: changes.appliedAt)
        let outbox = PostgresOutbox.lastOfEachKey(messages)
        let publications = outbox.map(\.publication)
        return """
            CALL restock_commit_durably(\(store), \(epoch), \(watches.kinds)::text[], \(watches.counts)::int8[],
                \(watches.saves.map(\.customer.rawValue))::text[], \(watches.saves.map(\.sku.rawValue))::text[],
                \(watches.saves.map(\.mode.rawValue))::text[], \(watches.saves.map { Int64($0.minQuantity) })::int8[],
                \(watches.saves.map { Int64(bitPattern: $0.position) })::int8[],
                \(watches.saves.map(\.since.timeIntervalSinceReferenceDate))::float8[], \(watches.saves.map(\.isWaiting))::bool[],
                \(watches.saves.map { $0.expiresAt?.timeIntervalSinceReferenceDate ?? .nan })::float8[],
                \(watches.removals.map(\.customer.rawValue))::text[], \(watches.removals.map(\.sku.rawValue))::text[],
                \(watches.positions.map { Int64(bitPattern: $0) })::int8[],
                \(inventory.map(\.key.rawValue))::text[], \(inventory.map { Int64($0.value) })::int8[],
                \(counters.map(\.0))::text[], \(counters.map(\.1))::int8[],
                \(forgotten.map(\.customer.rawValue))::text[], \(forgotten.flatMap(\.customerTopics))::text[],
                \(forgotten.flatMap(\.requestTopics))::text[], \(changes.deadLettersRemoved)::int8[],
                \(raised.map(\.key.rawValue))::text[], \(raised.map { Int64($0.value) })::int8[], \(hour),
                \(PostgresAlertFigures.firstHourOfDay(endingIn: hour)), \(changes.mirrored.map(\.rawValue).sorted())::text[],
                \(outbox.map(\.seq))::int8[], \(publications.map(\.key))::text[], \(publications.map(\.topic))::text[],
                \(publications.map { ByteBuffer(bytes: $0.payload) })::bytea[], \(publications.map(\.retain))::bool[],
                \(publications.map { Int64($0.alertCount) })::int8[], \(publications.map { $0.sku != nil })::bool[],
                \(publications.map { $0.sku ?? "" })::text[], \(changes.processedThrough))
            """
    }

    /// Sets counters by name, inside the transaction of `statements`.
    static func setCounters(_ values: [String: Int64], statements: Statements, store: String) throws {
        let names = Array(values.keys), numbers = names.map { values[$0]! }
        try statements.execute(
            """
            INSERT INTO restock_counter (store, name, value) SELECT \(store), * FROM unnest(\(names)::text[], \(numbers)::int8[])
            ON CONFLICT (store, name) DO UPDATE SET value = excluded.value
            """)
    }
}

/// A batch's watch changes as `restock_commit` takes them: runs of one kind, in order (`kinds`, `counts`), over the
/// arrays of each kind. A run of saves keeps each key's last version, in key order (one statement may change a row once
/// only in PostgreSQL, where SQLite writes the versions in turn); a position another watch holds fails the commit, as
/// SQLite's `UNIQUE` does.
struct WatchRuns {
    /// Each run's kind: "s" saves, "r" removals by key, "a" set alerted (not waiting), "w" set waiting, "p" removals by
    /// position.
    private(set) var kinds: [String] = []
    /// Each run's length in the arrays of its kind.
    private(set) var counts: [Int64] = []
    private(set) var saves: [Watch] = []
    private(set) var removals: [WatchKey] = []
    /// The positions of the runs "a", "w" and "p", in turn.
    private(set) var positions: [UInt64] = []

    init(_ changes: [StoreChanges.WatchChange]) {
        var pendingSaves: [Watch] = [], pendingRemovals: [WatchKey] = []
        for change in changes {
            switch change {
            case .save(let watch):
                if !pendingRemovals.isEmpty { flush(&pendingSaves, &pendingRemovals) }
                pendingSaves.append(watch)
            case .remove(let key):
                if !pendingSaves.isEmpty { flush(&pendingSaves, &pendingRemovals) }
                pendingRemovals.append(key)
            case .setWaiting(let waiting, let list):
                flush(&pendingSaves, &pendingRemovals)
                run(waiting ? "w" : "a", list.count)
                positions += list
            case .removePositions(let list):
                flush(&pendingSaves, &pendingRemovals)
                run("p", list.count)
                positions += list
            }
        }
        flush(&pendingSaves, &pendingRemovals)
    }

    private mutating func run(_ kind: String, _ count: Int) {
        kinds.append(kind)
        counts.append(Int64(count))
    }

    private mutating func flush(_ pendingSaves: inout [Watch], _ pendingRemovals: inout [WatchKey]) {
        if !pendingSaves.isEmpty {
            var last: [WatchKey: Int] = [:]
            for (index, watch) in pendingSaves.enumerated() { last[WatchKey(customer: watch.customer, sku: watch.sku)] = index }
            let rows = last.values.map { pendingSaves[$0] }.sorted { ($0.customer, $0.sku) < ($1.customer, $1.sku) }
            run("s", rows.count)
            saves += rows
        }
        if !pendingRemovals.isEmpty {
            run("r", pendingRemovals.count)
            removals += pendingRemovals
        }
        (pendingSaves, pendingRemovals) = ([], [])
    }
}
