import PostgresNIO
import RestockPipeline

extension PostgresSchema {
    /// A function of the schema, by name, with the statement that makes it.
    struct Function: Sendable {
        let name: String
        let definition: String
    }

    /// The functions of schema version 3, made by its migration (``migrations``), and made again at a start that finds
    /// one missing (``restoreFunctions(_:)``).
    static let functions: [Function] = [
        // The lease's fence, called first by every write (`PostgresFence`): it locks the
        // lease's row `FOR KEY SHARE`, as the fence's `SELECT` did, and refuses with SQLSTATE RS001 when a newer owner
        // holds it; a NULL epoch (none taken yet) is not fenced, nor is a store without a lease row.
        Function(
            name: "restock_fence",
            definition: """
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
                """),
        // A commit of the state (`PostgresStateWriter`), fenced and flushed (a commit not waited for can be lost to a
        // failover while the store's process, alive, holds what it committed: docs/benchmarks.md, "B4 on PostgreSQL,
        // one statement per write"), in the order and with the statements of SQLite's
        // `StateWriter`: watch changes in runs (`g_kinds`: 's' saves, 'r' removals by key, 'a' alerted, 'w' re-armed,
        // 'p' removals by position; `g_counts`: each run's length in its kind's arrays), the inventory, counters,
        // forgotten customers' rows, dead letters, the alert figures, mirrors, the outbox, then `processedThrough`.
        // A function's statements run on plans cached for the session, made once for no particular arrays with the
        // statistics of that moment: the outbox's delete by key or place, planned while the outbox was nearly empty,
        // scanned all of the store's rows filtered by the arrays, 30-60 ms per commit of 1,000 mirrors once thousands
        // were waiting (B5 on PostgreSQL fell to a third: docs/benchmarks.md). So each statement that finds rows by an
        // array (watches by position or key, the outbox by key or place) is planned at each call (`EXECUTE`), for its
        // arrays and the table as it is; those that insert, or find one row by its key, keep the cached plan.
        Function(
            name: "restock_commit",
            definition: """
                CREATE FUNCTION restock_commit(
                    p_store text, p_epoch bigint, g_kinds text[], g_counts int8[],
                    w_customer text[], w_sku text[], w_mode text[], w_min int8[], w_position int8[], w_since float8[],
                    w_waiting bool[], w_expires float8[], r_customer text[], r_sku text[], p_positions int8[],
                    i_sku text[], i_quantity int8[], c_name text[], c_value int8[],
                    f_customer text[], f_customer_topic text[], f_request_topic text[], d_removed int8[],
                    a_sku text[], a_raised int8[], a_hour int8, a_fold_before int8, m_customer text[],
                    o_seq int8[], o_key text[], o_topic text[], o_payload bytea[], o_retain bool[], o_batch int8[], o_has_sku bool[],
                    o_sku text[],
                    p_processed int8) RETURNS boolean LANGUAGE plpgsql AS $$
                DECLARE
                    v_group int;
                    v_count int;
                    v_save int := 0;
                    v_remove int := 0;
                    v_position int := 0;
                BEGIN
                    PERFORM restock_fence(p_store, p_epoch);
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
                            EXECUTE 'DELETE FROM restock_watch WHERE store = $1 AND (customer, sku) IN (SELECT * FROM unnest($2, $3))'
                                USING p_store, r_customer[v_remove + 1 : v_remove + v_count], r_sku[v_remove + 1 : v_remove + v_count];
                            v_remove := v_remove + v_count;
                        ELSIF g_kinds[v_group] = 'p' THEN
                            EXECUTE 'DELETE FROM restock_watch WHERE store = $1 AND position = ANY($2)'
                                USING p_store, p_positions[v_position + 1 : v_position + v_count];
                            v_position := v_position + v_count;
                        ELSE
                            EXECUTE 'UPDATE restock_watch SET waiting = $1 WHERE store = $2 AND position = ANY($3)'
                                USING g_kinds[v_group] = 'w', p_store, p_positions[v_position + 1 : v_position + v_count];
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
                        EXECUTE 'DELETE FROM restock_outbox WHERE store = $1 AND (key = ANY($2) OR seq = ANY($3))' USING p_store, o_key, o_seq;
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
                """),
        // Acknowledgements (`PostgresOutbox`), fenced: the alerts acknowledged per SKU added to the hour's figures, the
        // messages done removed, and the batches' counts of alerts acknowledged so far (the outbox's rows found by arrays,
        // planned at each call as in restock_commit).
        Function(
            name: "restock_acknowledge",
            definition: """
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
                        EXECUTE 'DELETE FROM restock_outbox WHERE store = $1 AND seq = ANY($2)' USING p_store, p_removed;
                    END IF;
                    IF cardinality(u_seq) > 0 THEN
                        EXECUTE 'UPDATE restock_outbox AS o SET sent = u.sent FROM unnest($2::int8[], $3::int8[]) AS u(seq, sent)
                            WHERE o.store = $1 AND o.seq = u.seq' USING p_store, u_seq, u_sent;
                    END IF;
                    RETURN true;
                END $$
                """),
    ]

    /// Makes again the functions and procedures of ``routines`` the database lacks (an operator dropped one), so that a
    /// store never goes online to stop at its first write; with none missing it changes nothing. Inside the transaction
    /// of ``prepare(_:)``, after the migrations.
    /// - Returns: The names of those made again.
    /// - Throws: ``PostgresFailure/FunctionsMissing`` when they cannot be made (the user may not create functions).
    static func restoreFunctions(_ statements: Statements) throws -> [String] {
        let names = routines.map(\.name)
        let present = Set(
            try statements.query(
                "SELECT proname::text FROM pg_proc WHERE proname = ANY(\(names)::text[]) AND pg_function_is_visible(oid)"
            ).map { try $0.decode(String.self) })
        let missing = routines.filter { !present.contains($0.name) }
        guard !missing.isEmpty else { return [] }
        do {
            for function in missing { try statements.execute(PostgresQuery(unsafeSQL: function.definition)) }
        } catch {
            throw PostgresFailure.FunctionsMissing(names: missing.map(\.name), reason: PostgresFailure(error).reason)
        }
        return missing.map(\.name)
    }

    /// Refuses a user who may not execute every function and procedure of ``routines`` (an operator revoked `EXECUTE`),
    /// so that a store never goes online to stop at its first write (found by an outside trial). Inside the transaction
    /// of ``prepare(_:)``, after ``restoreFunctions(_:)``.
    /// - Throws: ``PostgresFailure/FunctionsNotExecutable``.
    static func checkFunctionsExecutable(_ statements: Statements) throws {
        let refused = try statements.query(
            """
            SELECT proname::text, current_user::text FROM pg_proc
            WHERE proname = ANY(\(routines.map(\.name))::text[]) AND pg_function_is_visible(oid)
                AND NOT has_function_privilege(oid, 'EXECUTE')
            ORDER BY proname
            """
        ).map { try $0.decode((String, String).self) }
        guard let user = refused.first?.1 else { return }
        throw PostgresFailure.FunctionsNotExecutable(names: refused.map(\.0), user: user)
    }
}
