import PostgresNIO
import RestockPipeline

// The statements on a request's way to its alert, prepared once per connection (postgres-nio prepares each on its first
// use on a connection, and again on a new one): sent unnamed, the server parsed and planned each at every call, as long
// as it ran it (docs/benchmarks.md, "B4 on PostgreSQL, its statements prepared").

/// The journal's append of one read's requests, as ``PostgresStoreStorage/journal(batch:)`` describes it:
/// `restock_journal_durably` (``PostgresSchema/procedures``), which commits before it answers. Returns the place before
/// the first request's.
struct JournalAppend: PostgresPreparedStatement {
    static let sql = "CALL restock_journal_durably($1, $2, $3, $4, $5, $6, $7)"
    static let bindingDataTypes: [PostgresDataType] = [.text, .int8, .int8, .textArray, .byteaArray, .int8Array, .boolArray]

    let store: String
    let epoch: Int64?
    let topics: [String]
    let payloads: [ByteBuffer]
    let sizes: [Int64]
    let retained: [Bool]

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(store)
        bindings.append(Int64(topics.count))
        bindings.append(epoch)
        bindings.append(topics)
        bindings.append(payloads)
        bindings.append(sizes)
        bindings.append(retained)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }

    /// An answer of other than one row, never written around: the procedure was changed by hand.
    struct UnexpectedAnswer: StorageFailure {
        let rows: Int
        var reason: String { "restock_journal_durably answered with \(rows) rows, not one (changed by hand?)" }
        var code: Int { -12 }
        var refusesTheData: Bool { false }
        func kind(at path: String) -> StorageError.Kind { .corrupt }
    }
}

/// The attempt's record, as ``PostgresStoreStorage/beginAttempt(_:kills:)`` describes it: checked against the lease, and
/// not waited for on the server's disk.
struct AttemptBegin: PostgresPreparedStatement {
    static let sql = """
        INSERT INTO restock_attempt (store, first, last, suspects_through, faulted, kills)
        SELECT $1, $3, $4, $5, false, $6
        WHERE restock_fence($1, $2) AND set_config('synchronous_commit', 'off', true) = 'off'
        ON CONFLICT (store) DO UPDATE SET first = excluded.first, last = excluded.last,
            suspects_through = excluded.suspects_through, faulted = false, kills = excluded.kills
        """
    static let bindingDataTypes: [PostgresDataType] = [.text, .int8, .int8, .int8, .int8, .int8]

    let store: String
    let epoch: Int64?
    let first: Int64
    let last: Int64
    let suspectsThrough: Int64
    let kills: Int64

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(store)
        bindings.append(epoch)
        bindings.append(first)
        bindings.append(last)
        bindings.append(suspectsThrough)
        bindings.append(kills)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws {}
}

/// The state's commit, `restock_commit` (``PostgresStateWriter/commit(_:messages:store:epoch:)``), prepared: its text is
/// the same at every call, every value in it one of some thirty binds, so the statement is the query that function
/// makes, sent under the text of one made of no changes. A query whose text differed would be refused with
/// ``PreparedTextMismatch``, not sent.
struct StateCommit: PostgresPreparedStatement {
    static let sql = PostgresStateWriter.commit(StoreChanges(), messages: [], store: "", epoch: nil).sql

    let query: PostgresQuery

    func makeBindings() throws -> PostgresBindings {
        guard query.sql == Self.sql else { throw PreparedTextMismatch(statement: Self.name) }
        return query.binds
    }

    func decodeRow(_ row: PostgresRow) throws {}
}

/// A query sent under a prepared statement's name whose text is not the statement's (``StateCommit``): a bug, refused.
struct PreparedTextMismatch: Error, CustomStringConvertible {
    let statement: String
    var description: String { "the query made for the prepared statement \(statement) differs from its text" }
}
