import Foundation
import PostgresNIO
import RestockCore
import RestockPipeline

/// Reads one store's state (SQLite's `StateReader` and `WatchTable`): the snapshot the store restores at start-up, the
/// inventory and the customers with a mirror, the watches due to expire. Each row is checked as SQLite's reader checks
/// it — a row changed by hand may hold anything — and one that holds no valid record is left out and described.
struct PostgresStateReader {
    let statements: Statements
    let store: String

    /// How long the watches of a snapshot may take to arrive: every watch of the store, millions of rows for a big one,
    /// not one statement's answer (``PostgresSettings/answerTimeout``, which would stop such a store from ever starting).
    static let snapshotTimeout = Duration.seconds(600)

    /// Everything the store needs to carry on, and a description of each row left out.
    func snapshot() throws -> (snapshot: StoreSnapshot, skipped: [String]) {
        var skipped: [String] = []
        var snapshot = StoreSnapshot()
        var highest: Int64 = 0
        for row in try statements.query(
            """
            SELECT customer, sku, mode, min_quantity, position, since, waiting, expires_at FROM restock_watch
            WHERE store = \(store) ORDER BY position
            """, within: Self.snapshotTimeout)
        {
            let (customer, sku, mode, minQuantity, position, since, waiting, expiresAt) = try row.decode(
                (String, String, String, Int64, Int64, Double, Bool, Double?).self)
            // A position past the bound is no new watch's, which stay below it (StoredValues).
            if position <= StoredValues.maximumCounter { highest = max(highest, position) }
            guard let customer = try? CustomerID(customer), let sku = try? SKU(sku), let mode = WatchMode(rawValue: mode),
                RequestLimits.minQuantity.contains(Int(truncatingIfNeeded: minQuantity)), StoredValues.isCounter(position),
                StoredValues.isDate(since), expiresAt.map(StoredValues.isDate) ?? true
            else {
                let texts = [customer, sku, mode].map(StoredValues.described).joined(separator: ", ")
                skipped.append("watch \(texts), \(minQuantity), \(position), \(since), \(waiting), \(expiresAt.map { "\($0)" } ?? "NULL")")
                continue
            }
            snapshot.watches.append(
                Watch(
                    customer: customer, sku: sku, mode: mode, minQuantity: Int(minQuantity), position: UInt64(position),
                    since: Date(timeIntervalSinceReferenceDate: since), isWaiting: waiting,
                    expiresAt: expiresAt.map(Date.init(timeIntervalSinceReferenceDate:))))
        }
        for row in try statements.query("SELECT sku, quantity FROM restock_inventory WHERE store = \(store)") {
            let (name, quantity) = try row.decode((String, Int64).self)
            guard let sku = try? SKU(name), RequestLimits.stockSet.contains(Int(truncatingIfNeeded: quantity)) else {
                skipped.append("inventory \(StoredValues.described(name)), \(quantity)")
                continue
            }
            snapshot.inventory[sku] = Int(quantity)
        }
        var counters: [String: UInt64] = [:]
        for row in try statements.query("SELECT name, value FROM restock_counter WHERE store = \(store)") {
            let (name, value) = try row.decode((String, Int64).self)
            guard StoredValues.isNextCounter(value) else {
                skipped.append("counter \(StoredValues.described(name)), \(value)")
                continue
            }
            counters[name] = UInt64(value)
        }
        // Never behind what the rows hold, skipped ones included: a position is never given out twice.
        snapshot.nextPosition = max(counters["nextPosition"] ?? 1, UInt64(max(highest, 0)) &+ 1)
        snapshot.nextAlertSequence = counters["nextAlertSequence"] ?? 1
        return (snapshot, skipped)
    }

    /// The on-hand quantity of every SKU recorded, zeros included, in SKU order (by bytes, as SQLite orders text); a row
    /// that holds no valid record is left out, as the snapshot at start-up leaves it out and says so (found by an outside
    /// trial on SQLite: such a row stopped the store when it published the inventory again).
    func inventory() throws -> [(SKU, Int)] {
        try statements.query("SELECT sku, quantity FROM restock_inventory WHERE store = \(store) ORDER BY sku COLLATE \"C\"").compactMap { row in
            let (name, quantity) = try row.decode((String, Int64).self)
            guard let sku = try? SKU(name), RequestLimits.stockSet.contains(Int(truncatingIfNeeded: quantity)) else { return nil }
            return (sku, Int(quantity))
        }
    }

    /// Every customer the store has published a mirror for, in order (by bytes).
    func mirroredCustomers() throws -> [CustomerID] {
        try statements.query("SELECT customer FROM restock_mirror WHERE store = \(store) ORDER BY customer COLLATE \"C\"")
            .compactMap { try? CustomerID(try $0.decode(String.self)) }
    }

    /// The watches expired at `now`, soonest first (ties in position order), at most `limit` (none when negative).
    func expiredWatches(at now: Date, limit: Int) throws -> [WatchKey] {
        try statements.query(
            """
            SELECT customer, sku FROM restock_watch WHERE store = \(store) AND expires_at <= \(now.timeIntervalSinceReferenceDate)
            ORDER BY expires_at, position LIMIT \(PostgresStoreStorage.bound(limit))
            """
        ).compactMap { row in
            let (customer, sku) = try row.decode((String, String).self)
            guard let customer = try? CustomerID(customer), let sku = try? SKU(sku) else { return nil }
            return WatchKey(customer: customer, sku: sku)
        }
    }

    /// When the first watch expires after `now`; `nil` when none will.
    func nextExpiry(after now: Date) throws -> Date? {
        let rows = try statements.query(
            "SELECT MIN(expires_at) FROM restock_watch WHERE store = \(store) AND expires_at > \(now.timeIntervalSinceReferenceDate)")
        return try rows.first?.decode(Double?.self).map(Date.init(timeIntervalSinceReferenceDate:))
    }

    /// How many requests wait after the last applied, messages in the outbox, and watches.
    func queueLengths() throws -> (inbox: Int, outbox: Int, watches: Int) {
        let processed = try PostgresStoreStorage.processedThrough(statements, store: store)
        let rows = try statements.query(
            """
            SELECT (SELECT COUNT(*) FROM restock_journal WHERE store = \(store) AND seq > \(processed))::int8,
                (SELECT COUNT(*) FROM restock_watch WHERE store = \(store))::int8
            """)
        var (inbox, watches): (Int64, Int64) = (0, 0)
        if let row = rows.first { (inbox, watches) = try row.decode((Int64, Int64).self) }
        return (Int(inbox), try PostgresOutbox(statements: statements, store: store).messageCount(), Int(watches))
    }
}
