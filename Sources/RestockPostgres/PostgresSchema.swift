import PostgresNIO
import RestockPipeline

/// The schema of the store's storage in PostgreSQL: tables prefixed `restock_`, every row keyed by its store, so that
/// several stores share one database. `restock_schema_version` records each migration run, by number.
///
/// Migrations run when a storage is opened, in one transaction under a transaction-level advisory lock, so that two
/// stores opening one database at once run them once. A database whose schema is of a newer version than this binary
/// knows is refused before anything is written to it, as SQLite's ``SchemaVersion`` refuses a file: a downgrade would
/// lose what the newer version keeps (docs/operations.md, "Upgrading").
enum PostgresSchema {
    /// The advisory lock the migrations run under ("restock" in ASCII).
    static let lockKey: Int64 = 0x72_65_73_74_6F_63_6B

    /// Every migration, oldest first: its statements, one each (PostgreSQL's extended protocol runs one at a time). A
    /// released migration is never changed; a change of the schema is a new one at the end.
    static let migrations: [[String]] = [
        [
            // The store's own row: the last place given to a request (trimmed ones included), the highest place a message
            // was ever written at, the store process that used it last, the mark of a restored copy.
            """
            CREATE TABLE restock_store (
                store text PRIMARY KEY, journal_place bigint NOT NULL DEFAULT 0, outbox_place bigint NOT NULL DEFAULT 0,
                instance text, restored text)
            """,
            // The lease (StoreLease.swift's, on the database's clock): `epoch` rises with every new owner and every write
            // checks it; `renewals` counts the owner's renewals; `released` is set at a clean stop.
            """
            CREATE TABLE restock_lease (
                store text PRIMARY KEY, epoch bigint NOT NULL, owner text NOT NULL, renewals bigint NOT NULL,
                renewed_at timestamptz NOT NULL, released boolean NOT NULL)
            """,
            """
            CREATE TABLE restock_journal (
                store text NOT NULL, seq bigint NOT NULL, topic text NOT NULL, payload bytea NOT NULL, size bigint NOT NULL,
                retained boolean NOT NULL, PRIMARY KEY (store, seq))
            """,
            "CREATE TABLE restock_counter (store text NOT NULL, name text NOT NULL, value bigint NOT NULL, PRIMARY KEY (store, name))",
            // `since` and `expires_at` are seconds since 2001-01-01, as `Date` keeps them (an exact round trip).
            """
            CREATE TABLE restock_watch (
                store text NOT NULL, customer text NOT NULL, sku text NOT NULL, mode text NOT NULL, min_quantity bigint NOT NULL,
                position bigint NOT NULL, since double precision NOT NULL, waiting boolean NOT NULL, expires_at double precision,
                PRIMARY KEY (store, customer, sku), UNIQUE (store, position))
            """,
            "CREATE INDEX restock_watch_expiry ON restock_watch (store, expires_at) WHERE expires_at IS NOT NULL",
            "CREATE TABLE restock_inventory (store text NOT NULL, sku text NOT NULL, quantity bigint NOT NULL, PRIMARY KEY (store, sku))",
            "CREATE TABLE restock_mirror (store text NOT NULL, customer text NOT NULL, PRIMARY KEY (store, customer))",
            """
            CREATE TABLE restock_outbox (
                store text NOT NULL, seq bigint NOT NULL, key text NOT NULL, topic text NOT NULL, payload bytea NOT NULL,
                retain boolean NOT NULL, batch bigint NOT NULL, sent bigint NOT NULL, sku text,
                PRIMARY KEY (store, seq), UNIQUE (store, key))
            """,
            """
            CREATE TABLE restock_dead_letter (
                store text NOT NULL, seq bigint NOT NULL, topic text NOT NULL, payload bytea NOT NULL, size bigint NOT NULL,
                retained boolean NOT NULL, failed_at double precision NOT NULL, reason text NOT NULL, PRIMARY KEY (store, seq))
            """,
            // Alerts raised and acknowledged per SKU and hour (seconds since 1970 / 3600); hour 0 holds the older ones.
            """
            CREATE TABLE restock_alert_figure (
                store text NOT NULL, sku text NOT NULL, hour bigint NOT NULL, raised bigint NOT NULL, acknowledged bigint NOT NULL,
                PRIMARY KEY (store, sku, hour))
            """,
            // The requests being applied (SQLite's `attempt` file).
            """
            CREATE TABLE restock_attempt (
                store text PRIMARY KEY, first bigint NOT NULL, last bigint NOT NULL, suspects_through bigint NOT NULL,
                faulted boolean NOT NULL, kills integer NOT NULL)
            """,
        ],
        [
            // A stock change flips `waiting` of every watch it alerts or re-arms: 100,000 rows in one statement for a SKU
            // 100,000 customers watch. With half of each page kept free, each row's new version fits on its page: the
            // update writes no index entry (a HOT update), and the next one prunes the old versions there, so the table
            // and its indexes keep their size. Packed full, every such update wrote a new entry in each index and a copy
            // of the rows elsewhere, until autovacuum: 0.7 s, then 1.1 s after ten stock changes, for 100,000 rows, against
            // 0.16–0.24 s (docs/benchmarks.md, "On PostgreSQL"). Pages written before keep their packing until
            // `VACUUM FULL restock_watch` (docs/operations.md, "Upgrading").
            "ALTER TABLE restock_watch SET (fillfactor = 50)"
        ],
        [
            // A write is one statement, one round trip (docs/benchmarks.md, "B4 on PostgreSQL"): each statement sent is a
            // wait on this machine's threads (≈ 0.3 ms), and a transaction of `BEGIN`, the fence, its statements and
            // `COMMIT` waited for each. The lease's fence, called first by every write (`PostgresFence`): it locks the
            // lease's row `FOR KEY SHARE`, as the fence's `SELECT` did, and refuses with SQLSTATE RS001 when a newer owner
            // holds it; a NULL epoch (none taken yet) is not fenced, nor is a store without a lease row.
            """
            CREATE FUNCTION restock_fence(p_store text, p_epoch bigint) RETURNS boolean LANGUAGE plpgsql AS $$
            DECLARE
                v_epoch bigint;
            BEGIN
                IF p_epoch IS NULL THEN RETURN true; END IF;
                SELECT l.epoch INTO v_epoch FROM restock_lease AS l WHERE l.store = p_store FOR KEY SHARE;
                IF FOUND AND v_epoch <> p_epoch THEN
                    RAISE EXCEPTION 'the lease of store % is held at epoch %, not %', p_store, v_epoch, p_epoch USING ERRCODE = 'RS001';
                END IF;
                RETURN true;
            END $$
            """,
            // A commit of the state (`PostgresStateWriter`), fenced, not waited for on the server's disk unless durable
            // (`synchronous_commit` off for its transaction, as SQLite's state commits with `synchronous=NORMAL`: what a
            // crash of the server takes of it is applied again from the journal, whose commits are flushed, and come
            // after it in the server's one write-ahead log), in the order and with the statements of SQLite's
            // `StateWriter`: watch changes in runs (`g_kinds`: 's' saves, 'r' removals by key, 'a' alerted, 'w' re-armed,
            // 'p' removals by position; `g_counts`: each run's length in its kind's arrays), the inventory, counters,
            // forgotten customers' rows, dead letters, the alert figures, mirrors, the outbox, then `processedThrough`.
            """
            CREATE FUNCTION restock_commit(
                p_store text, p_epoch bigint, g_kinds text[], g_counts int8[],
                w_customer text[], w_sku text[], w_mode text[], w_min int8[], w_position int8[], w_since float8[],
                w_waiting bool[], w_expires float8[], r_customer text[], r_sku text[], p_positions int8[],
                i_sku text[], i_quantity int8[], c_name text[], c_value int8[],
                f_customer text[], f_customer_topic text[], f_request_topic text[], d_removed int8[],
                a_sku text[], a_raised int8[], a_hour int8, a_fold_before int8, m_customer text[],
                o_seq int8[], o_key text[], o_topic text[], o_payload bytea[], o_retain bool[], o_batch int8[], o_has_sku bool[],
                o_sku text[],
                p_processed int8, p_durable boolean) RETURNS boolean LANGUAGE plpgsql AS $$
            DECLARE
                v_group int;
                v_count int;
                v_save int := 0;
                v_remove int := 0;
                v_position int := 0;
            BEGIN
                PERFORM restock_fence(p_store, p_epoch);
                IF NOT p_durable THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                FOR v_group IN 1 .. COALESCE(array_length(g_kinds, 1), 0) LOOP
                    v_count := g_counts[v_group];
                    IF g_kinds[v_group] = 's' THEN
                        INSERT INTO restock_watch (store, customer, sku, mode, min_quantity, position, since, waiting, expires_at)
                        SELECT p_store, c, s, m, q, p, t, w, NULLIF(e, 'NaN'::float8)
                        FROM unnest(w_customer[v_save + 1 : v_save + v_count], w_sku[v_save + 1 : v_save + v_count],
                            w_mode[v_save + 1 : v_save + v_count], w_min[v_save + 1 : v_save + v_count],
                            w_position[v_save + 1 : v_save + v_count], w_since[v_save + 1 : v_save + v_count],
                            w_waiting[v_save + 1 : v_save + v_count], w_expires[v_save + 1 : v_save + v_count]) AS r(c, s, m, q, p, t, w, e)
                        ON CONFLICT (store, customer, sku) DO UPDATE SET mode = excluded.mode, min_quantity = excluded.min_quantity,
                            position = excluded.position, since = excluded.since, waiting = excluded.waiting, expires_at = excluded.expires_at;
                        v_save := v_save + v_count;
                    ELSIF g_kinds[v_group] = 'r' THEN
                        DELETE FROM restock_watch WHERE store = p_store AND (customer, sku) IN (
                            SELECT * FROM unnest(r_customer[v_remove + 1 : v_remove + v_count], r_sku[v_remove + 1 : v_remove + v_count]));
                        v_remove := v_remove + v_count;
                    ELSIF g_kinds[v_group] = 'p' THEN
                        DELETE FROM restock_watch WHERE store = p_store AND position = ANY(p_positions[v_position + 1 : v_position + v_count]);
                        v_position := v_position + v_count;
                    ELSE
                        UPDATE restock_watch SET waiting = (g_kinds[v_group] = 'w')
                        WHERE store = p_store AND position = ANY(p_positions[v_position + 1 : v_position + v_count]);
                        v_position := v_position + v_count;
                    END IF;
                END LOOP;
                IF cardinality(i_sku) > 0 THEN
                    INSERT INTO restock_inventory (store, sku, quantity) SELECT p_store, * FROM unnest(i_sku, i_quantity)
                    ON CONFLICT (store, sku) DO UPDATE SET quantity = excluded.quantity;
                END IF;
                IF cardinality(c_name) > 0 THEN
                    INSERT INTO restock_counter (store, name, value) SELECT p_store, * FROM unnest(c_name, c_value)
                    ON CONFLICT (store, name) DO UPDATE SET value = excluded.value;
                END IF;
                IF cardinality(f_customer) > 0 THEN
                    DELETE FROM restock_mirror WHERE store = p_store AND customer = ANY(f_customer);
                    DELETE FROM restock_outbox WHERE store = p_store AND topic = ANY(f_customer_topic);
                    DELETE FROM restock_dead_letter WHERE store = p_store AND topic = ANY(f_request_topic);
                END IF;
                IF cardinality(d_removed) > 0 THEN
                    DELETE FROM restock_dead_letter WHERE store = p_store AND seq = ANY(d_removed);
                END IF;
                IF cardinality(a_sku) > 0 THEN
                    INSERT INTO restock_alert_figure (store, sku, hour, raised, acknowledged)
                    SELECT p_store, s, a_hour, 0, 0 FROM unnest(a_sku) AS s ON CONFLICT (store, sku, hour) DO NOTHING;
                    UPDATE restock_alert_figure AS f SET raised = f.raised + c.n FROM unnest(a_sku, a_raised) AS c(s, n)
                    WHERE f.store = p_store AND f.sku = c.s AND f.hour = a_hour;
                    WITH folded AS (
                        DELETE FROM restock_alert_figure WHERE store = p_store AND hour > 0 AND hour < a_fold_before
                        RETURNING sku, raised, acknowledged)
                    INSERT INTO restock_alert_figure (store, sku, hour, raised, acknowledged)
                    SELECT p_store, sku, 0, SUM(raised)::int8, SUM(acknowledged)::int8 FROM folded GROUP BY sku
                    ON CONFLICT (store, sku, hour) DO UPDATE SET raised = restock_alert_figure.raised + excluded.raised,
                        acknowledged = restock_alert_figure.acknowledged + excluded.acknowledged;
                END IF;
                IF cardinality(m_customer) > 0 THEN
                    INSERT INTO restock_mirror (store, customer) SELECT p_store, * FROM unnest(m_customer) ON CONFLICT DO NOTHING;
                END IF;
                IF cardinality(o_seq) > 0 THEN
                    DELETE FROM restock_outbox WHERE store = p_store AND (key = ANY(o_key) OR seq = ANY(o_seq));
                    INSERT INTO restock_outbox (store, seq, key, topic, payload, retain, batch, sent, sku)
                    SELECT p_store, q, k, t, p, r, b, 0, CASE WHEN h THEN s END
                    FROM unnest(o_seq, o_key, o_topic, o_payload, o_retain, o_batch, o_has_sku, o_sku) AS m(q, k, t, p, r, b, h, s);
                    UPDATE restock_store SET outbox_place = GREATEST(outbox_place, (SELECT MAX(q) FROM unnest(o_seq) AS q))
                    WHERE store = p_store;
                END IF;
                IF p_processed IS NOT NULL THEN
                    INSERT INTO restock_counter (store, name, value) VALUES (p_store, 'processedThrough', p_processed)
                    ON CONFLICT (store, name) DO UPDATE SET value = excluded.value;
                END IF;
                RETURN true;
            END $$
            """,
            // Acknowledgements (`PostgresOutbox`), fenced: the alerts acknowledged per SKU added to the hour's figures, the
            // messages done removed, and the batches' counts of alerts acknowledged so far.
            """
            CREATE FUNCTION restock_acknowledge(
                p_store text, p_epoch bigint, a_sku text[], a_count int8[], a_hour int8, p_removed int8[], u_seq int8[], u_sent int8[]
            ) RETURNS boolean LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM restock_fence(p_store, p_epoch);
                IF cardinality(a_sku) > 0 THEN
                    INSERT INTO restock_alert_figure (store, sku, hour, raised, acknowledged)
                    SELECT p_store, s, a_hour, 0, 0 FROM unnest(a_sku) AS s ON CONFLICT (store, sku, hour) DO NOTHING;
                    UPDATE restock_alert_figure AS f SET acknowledged = f.acknowledged + c.n FROM unnest(a_sku, a_count) AS c(s, n)
                    WHERE f.store = p_store AND f.sku = c.s AND f.hour = a_hour;
                END IF;
                IF cardinality(p_removed) > 0 THEN
                    DELETE FROM restock_outbox WHERE store = p_store AND seq = ANY(p_removed);
                END IF;
                IF cardinality(u_seq) > 0 THEN
                    UPDATE restock_outbox AS o SET sent = u.sent FROM unnest(u_seq, u_sent) AS u(seq, sent)
                    WHERE o.store = p_store AND o.seq = u.seq;
                END IF;
                RETURN true;
            END $$
            """,
        ],
    ]

    /// The version this binary knows: how many migrations it has.
    static var knownVersion: Int { migrations.count }

    /// What ran when the schema was made ready: the version before, and after.
    struct Change: Sendable, Equatable {
        let from: Int
        let to: Int
    }

    /// Makes the schema of the database ready: refuses a newer one, runs the migrations it has not run yet.
    /// - Returns: What ran; `nil` when the schema was at this version already.
    /// - Throws: ``RestockMQTTError/dataDirectoryOfNewerVersion(file:schemaVersion:knownVersion:)`` for a schema of a
    ///   newer version, with nothing written; a ``StorageError``.
    static func prepare(_ session: PostgresSession) throws -> Change? {
        let known = knownVersion
        let outcome: Result<Change?, RestockMQTTError> = try session.transaction(.open) { statements in
            try statements.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
            let current = try version(statements)
            if current > known {
                return .failure(
                    RestockMQTTError.dataDirectoryOfNewerVersion(file: session.settings.location, schemaVersion: current, knownVersion: known))
            }
            guard current < known else { return .success(nil) }
            if current == 0 {
                try statements.execute(
                    "CREATE TABLE restock_schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            }
            for version in current..<known {
                for statement in migrations[version] { try statements.execute(PostgresQuery(unsafeSQL: statement)) }
                try statements.execute("INSERT INTO restock_schema_version (version) VALUES (\(version + 1))")
            }
            return .success(Change(from: current, to: known))
        }
        // Thrown after the transaction: a refusal rolls back, so that nothing is written.
        return try outcome.get()
    }

    /// Refuses, reading only, a schema of a newer version than this release knows.
    /// - Throws: ``RestockMQTTError/dataDirectoryOfNewerVersion(file:schemaVersion:knownVersion:)``.
    static func check(_ current: Int, location: String) throws {
        if current > knownVersion {
            throw RestockMQTTError.dataDirectoryOfNewerVersion(file: location, schemaVersion: current, knownVersion: knownVersion)
        }
    }

    /// The version of the schema: the highest migration recorded; 0 without the version table.
    static func version(_ statements: Statements) throws -> Int {
        let table = try statements.query("SELECT to_regclass('restock_schema_version') IS NOT NULL")
        guard try table.first?.decode(Bool.self) == true else { return 0 }
        let rows = try statements.query("SELECT COALESCE(MAX(version), 0)::int8 FROM restock_schema_version")
        return Int(try rows.first?.decode(Int64.self) ?? 0)
    }
}
