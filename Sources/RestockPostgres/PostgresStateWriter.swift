import Foundation
import PostgresNIO
import RestockCore
import RestockPipeline

/// Writes what a batch of requests changed (``StoreChanges``) into one store's rows, inside the transaction of a commit,
/// in the order SQLite's `StateWriter` does: watches, inventory, counters, forgotten customers, dead letters, figures,
/// mirrors, the outbox, how far the journal is applied. Many rows go to one statement, as arrays (`unnest`).
struct PostgresStateWriter {
    let statements: Statements
    let store: String

    /// Writes `changes`, with `messages`, its publications at the places the outbox gave them.
    func commit(_ changes: StoreChanges, messages: [CommittedPublication]) throws {
        try apply(changes.watchChanges)
        if !changes.inventory.isEmpty {
            let skus = changes.inventory.map(\.key.rawValue), quantities = changes.inventory.map { Int64($0.value) }
            try statements.execute(
                """
                INSERT INTO restock_inventory (store, sku, quantity) SELECT \(store), * FROM unnest(\(skus)::text[], \(quantities)::int8[])
                ON CONFLICT (store, sku) DO UPDATE SET quantity = excluded.quantity
                """)
        }
        if let counters = changes.counters {
            try setCounters(["nextPosition": Int64(counters.nextPosition), "nextAlertSequence": Int64(counters.nextAlertSequence)])
        }
        for forgotten in changes.forgotten { try forget(forgotten) }
        if !changes.deadLettersRemoved.isEmpty {
            try statements.execute("DELETE FROM restock_dead_letter WHERE store = \(store) AND seq = ANY(\(changes.deadLettersRemoved)::int8[])")
        }
        try PostgresAlertFigures(statements: statements, store: store).record(raised: changes.alertsRaised, at: changes.appliedAt)
        if !changes.mirrored.isEmpty {
            let customers = changes.mirrored.map(\.rawValue).sorted()
            try statements.execute(
                "INSERT INTO restock_mirror (store, customer) SELECT \(store), * FROM unnest(\(customers)::text[]) ON CONFLICT DO NOTHING")
        }
        try PostgresOutbox(statements: statements, store: store).insert(messages)
        if let seq = changes.processedThrough { try setCounters(["processedThrough": seq]) }
    }

    /// Sets counters by name.
    func setCounters(_ values: [String: Int64]) throws {
        let names = Array(values.keys), numbers = names.map { values[$0]! }
        try statements.execute(
            """
            INSERT INTO restock_counter (store, name, value) SELECT \(store), * FROM unnest(\(names)::text[], \(numbers)::int8[])
            ON CONFLICT (store, name) DO UPDATE SET value = excluded.value
            """)
    }

    /// Removes every row about a forgotten customer but their watches (the batch's watch changes remove those).
    private func forget(_ forgotten: StoreChanges.Forgotten) throws {
        try statements.execute("DELETE FROM restock_mirror WHERE store = \(store) AND customer = \(forgotten.customer.rawValue)")
        try statements.execute("DELETE FROM restock_outbox WHERE store = \(store) AND topic = ANY(\(forgotten.customerTopics)::text[])")
        try statements.execute("DELETE FROM restock_dead_letter WHERE store = \(store) AND topic = ANY(\(forgotten.requestTopics)::text[])")
    }

    // MARK: Watches

    /// Applies watch changes in the order they were made; runs of saves or deletes go many to a statement.
    private func apply(_ changes: [StoreChanges.WatchChange]) throws {
        var saves: [Watch] = [], deletes: [WatchKey] = []
        func flush() throws {
            try save(saves)
            try delete(deletes)
            (saves, deletes) = ([], [])
        }
        for change in changes {
            switch change {
            case .save(let watch):
                if !deletes.isEmpty { try flush() }
                saves.append(watch)
            case .remove(let key):
                if !saves.isEmpty { try flush() }
                deletes.append(key)
            case .setWaiting(let waiting, let positions):
                try flush()
                let list = positions.map { Int64(bitPattern: $0) }
                try statements.execute(
                    "UPDATE restock_watch SET waiting = \(waiting) WHERE store = \(store) AND position = ANY(\(list)::int8[])")
            case .removePositions(let positions):
                try flush()
                let list = positions.map { Int64(bitPattern: $0) }
                try statements.execute("DELETE FROM restock_watch WHERE store = \(store) AND position = ANY(\(list)::int8[])")
            }
        }
        try flush()
    }

    /// Upserts a run of saves in key order; a key saved twice keeps its last version (one statement may change a row
    /// once only in PostgreSQL, where SQLite writes the versions in turn). A position another watch holds fails the
    /// statement, as SQLite's `UNIQUE` does.
    private func save(_ watches: [Watch]) throws {
        guard !watches.isEmpty else { return }
        var last: [WatchKey: Int] = [:]
        for (index, watch) in watches.enumerated() { last[WatchKey(customer: watch.customer, sku: watch.sku)] = index }
        let rows = last.values.sorted().map { watches[$0] }.sorted { ($0.customer, $0.sku) < ($1.customer, $1.sku) }
        // NaN stands for no expiry: arrays carry no NULL here. SQLite stores a NaN as NULL too.
        let expiries = rows.map { $0.expiresAt?.timeIntervalSinceReferenceDate ?? .nan }
        try statements.execute(
            """
            INSERT INTO restock_watch (store, customer, sku, mode, min_quantity, position, since, waiting, expires_at)
            SELECT \(store), c, s, m, q, p, t, w, NULLIF(e, 'NaN'::float8)
            FROM unnest(\(rows.map(\.customer.rawValue))::text[], \(rows.map(\.sku.rawValue))::text[], \(rows.map(\.mode.rawValue))::text[],
                \(rows.map { Int64($0.minQuantity) })::int8[], \(rows.map { Int64(bitPattern: $0.position) })::int8[],
                \(rows.map(\.since.timeIntervalSinceReferenceDate))::float8[], \(rows.map(\.isWaiting))::bool[], \(expiries)::float8[])
                AS r(c, s, m, q, p, t, w, e)
            ON CONFLICT (store, customer, sku) DO UPDATE SET mode = excluded.mode, min_quantity = excluded.min_quantity,
                position = excluded.position, since = excluded.since, waiting = excluded.waiting, expires_at = excluded.expires_at
            """)
    }

    /// Deletes a run of watches by key.
    private func delete(_ keys: [WatchKey]) throws {
        guard !keys.isEmpty else { return }
        try statements.execute(
            """
            DELETE FROM restock_watch WHERE store = \(store)
                AND (customer, sku) IN (SELECT * FROM unnest(\(keys.map(\.customer.rawValue))::text[], \(keys.map(\.sku.rawValue))::text[]))
            """)
    }
}
