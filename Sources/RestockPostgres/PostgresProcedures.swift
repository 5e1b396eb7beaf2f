extension PostgresSchema {
    /// The procedures of schema version 4: the journal's append, the state's commit and the acknowledgements, each
    /// committed inside the procedure, before the server answers the `CALL`.
    ///
    /// A statement sent outside a transaction block commits at the `Sync` after it, once its rows and `CommandComplete`
    /// are written; postgres-nio takes the statement as done at its `CommandComplete`. A server that ends the session in
    /// between (its fast shutdown) writes out that answer before it goes, and the transaction rolls back: the store took
    /// as written what never committed — an acknowledged request lost from the journal, a commit of the state missing
    /// under a store that goes on from it (found by an outside trial; `CommitWindowTests`). A `CALL` of a procedure that
    /// commits answers only after its commit, flushed as the session's `synchronous_commit` says; what is lost to the
    /// session's end is then only ever something the store never counted as written.
    ///
    /// The state's commit and the acknowledgements are version 3's functions, called by a procedure of the same
    /// parameters (``committing(_:)``).
    static let procedures: [Function] = [
        // The journal's append of one read's requests (`PostgresStoreStorage.journal(batch:)`): places taken from the
        // store's row, the rows written from arrays, fenced by the lease. `p_first` returns the place before the first.
        Function(
            name: "restock_journal_durably",
            definition: """
                CREATE PROCEDURE restock_journal_durably(
                    p_store text, p_count int8, p_epoch int8, p_topics text[], p_payloads bytea[], p_sizes int8[], p_retained bool[],
                    INOUT p_first int8 DEFAULT NULL) LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM restock_fence(p_store, p_epoch);
                    UPDATE restock_store SET journal_place = journal_place + p_count WHERE store = p_store
                    RETURNING journal_place - p_count INTO p_first;
                    IF NOT FOUND THEN
                        RAISE EXCEPTION 'the store % has no row in restock_store (deleted by hand?)', p_store;
                    END IF;
                    INSERT INTO restock_journal (store, seq, topic, payload, size, retained)
                    SELECT p_store, p_first + r.n, r.topic, r.payload, r.size, r.retained
                    FROM unnest(p_topics, p_payloads, p_sizes, p_retained) WITH ORDINALITY AS r(topic, payload, size, retained, n);
                    COMMIT;
                END $$
                """),
        committing("restock_commit"),
        // Not waited for on the server's disk, as SQLite's acknowledgements are not synced (synchronous=NORMAL): one lost
        // to the server's crash leaves its message in the outbox, sent again, with its id, at the store's next start. A
        // later commit that is waited for makes it durable with everything before it. Waited for, each took about 0.9 ms
        // of the store's one connection, on which the next request's journal waited (docs/benchmarks.md, "B4 on
        // PostgreSQL, the acknowledgements not flushed").
        committing("restock_acknowledge", flushed: false),
    ]

    /// A procedure `NAME_durably` of the parameters of the function `NAME` of ``functions`` that calls it and commits:
    /// waited for on the server's disk (`synchronous_commit` as the session has it, on by default), or, when not
    /// `flushed`, with `synchronous_commit` off for that transaction.
    static func committing(_ functionName: String, flushed: Bool = true) -> Function {
        guard let function = functions.first(where: { $0.name == functionName }) else {
            preconditionFailure("the schema has no function \(functionName)")
        }
        let definition = function.definition
        guard let open = definition.firstIndex(of: "("), let close = definition.range(of: ") RETURNS")?.lowerBound else {
            preconditionFailure("the definition of \(function.name) has no parameter list")
        }
        let parameters = definition[definition.index(after: open)..<close]
        let names = parameters.split(separator: ",").map { $0.split(whereSeparator: \.isWhitespace)[0] }
        let name = "\(function.name)_durably"
        return Function(
            name: name,
            definition: """
                CREATE PROCEDURE \(name)(\(parameters)) LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM \(function.name)(\(names.joined(separator: ", ")));\(flushed ? "" : "\n    PERFORM set_config('synchronous_commit', 'off', true);")
                    COMMIT;
                END $$
                """)
    }

    /// Every function and procedure of the schema: those a start makes again when missing, and checks it may execute.
    static var routines: [Function] { functions + procedures }
}
