/// The tables, goals and curves of B3, B4 and B5.
enum EndToEndSections {
    static func throughput(_ rows: [EndToEndBench.Row], runs: Int) -> BenchSection {
        var section = BenchSection(
            id: "B3", title: "B3 MQTT end to end",
            method: """
                `restock serve` (release build, durability on: SQLite in WAL mode) on a private mosquitto with \
                persistence, N customers watching one SKU (mode every, seeded once through `StoreDatabase`). \
                Each run: `{"set":1}` published at QoS 1 by an admin client; timed from just before that publish \
                to the moment the N-th distinct alert is read from a `mosquitto_sub -q 1` on \
                `restock/apple/customers/+/alerts`; then `{"set":0}` and a wait until the store's outbox is empty. \
                In the same run, two anchors carry N messages of an alert's size through the same broker. The C \
                ceiling: `restock-ceiling` (Benchmarks/MQTTCeiling/ceiling.c), one libmosquitto client publishing \
                them at QoS 1 with up to 1,000 unacknowledged and another counting them on `ceiling/+/alerts` at \
                QoS 1, timed from its first publish to the N-th message counted; it fails the run unless exactly N \
                arrive, each once. The C tools: N lines written to `mosquitto_pub -l -q 1` (already connected) and \
                read by a second `mosquitto_sub -q 1` on `bench/+/alerts`, in runs of at most 50,000. \(runs) runs.
                """)
        section.table = MarkdownTable(header: [
            "N customers", "store, alerts/s", "C ceiling, messages/s", "mosquitto_pub -l → mosquitto_sub, messages/s",
            "store ÷ C ceiling", "store ÷ C tools", "lost", "duplicates",
        ])
        var goals: [Goal] = []
        for row in rows {
            let toCeiling = row.store.ratio(to: row.ceiling)
            let ratio = row.store.ratio(to: row.tools)
            section.table.add([
                Figure.grouped(row.customers), row.store.formatted(), row.ceiling.formatted(), row.tools.formatted(),
                toCeiling.formatted(), ratio.formatted(), "\(row.lost) (C tools: \(row.toolsLost))", "\(row.duplicates)",
            ])
            goals.append(
                Goal(
                    text: "B3 N = \(Figure.grouped(row.customers)): ≥ 0.9 of the C ceiling, 0 lost",
                    figure: "\(ratioFigure(toCeiling)): \(Figure.format(row.store.median)) against \(Figure.format(row.ceiling.median)) messages/s, \(row.lost) lost",
                    isMet: toCeiling.median >= 0.9 && row.lost == 0))
            goals.append(
                Goal(
                    text: "B3 N = \(Figure.grouped(row.customers)): ≥ 0.8 of the C tools' rate, 0 lost",
                    figure: "\(Figure.format(ratio.median))×, \(row.lost) lost", isMet: ratio.median >= 0.8 && row.lost == 0))
        }
        section.goals = goals
        section.curves = [
            Curve(plot: "B3", name: "restock serve → mosquitto_sub", points: rows.map { (Double($0.customers), $0.store.median) }),
            Curve(plot: "B3", name: "C ceiling (libmosquitto → libmosquitto)", points: rows.map { (Double($0.customers), $0.ceiling.median) }),
            Curve(plot: "B3", name: "mosquitto_pub -l → mosquitto_sub", points: rows.map { (Double($0.customers), $0.tools.median) }),
        ]
        return section
    }

    static func latency(_ result: (store: LatencyBench.Percentiles, tools: LatencyBench.Percentiles), runs: Int) -> BenchSection {
        var section = BenchSection(
            id: "B4", title: "B4 Latency",
            method: """
                One customer watching one SKU (mode every). \(Figure.grouped(LatencyBench.restocks)) restocks, \
                one every \(LatencyBench.period / 1_000_000) ms: `{"set":1}` published at QoS 1 by a connected \
                admin client (the project's own, as `restock stock` uses), timed until the alert is read from the \
                customer's `mosquitto_sub -q 1`; then `{"set":0}`. Next to it, in the same run, a line written to a \
                connected `mosquitto_pub -l -q 1` and read from a `mosquitto_sub` on its topic: one trip through \
                the broker with the C tools; and the admin client's messages, at the same pace, through a C relay \
                that syncs a page for each before passing it on (issue 35's floor measured as a path). Latencies in \
                µs, recorded in an HDR histogram; \(runs) runs.
                """)
        section.table = MarkdownTable(header: ["path", "p50 µs", "p99 µs", "max µs"])
        section.table.add(["stock command → store → alert at the customer", result.store.p50.formatted(), result.store.p99.formatted(), result.store.max.formatted()])
        section.table.add(["mosquitto_pub → mosquitto_sub", result.tools.p50.formatted(), result.tools.p99.formatted(), result.tools.max.formatted()])
        // Issue 35's floor: two trips through the broker (the C tools' single hop, twice) and one fdatasync on the data
        // disk, each measured in the same run.
        let floor = Samples(zip(result.tools.p50.values, result.store.fdatasync.values).map { 2 * $0 + $1 })
        let overFloor = result.store.p50.ratio(to: floor)
        section.table.add(["one page appended and `fdatasync`ed on the data disk", result.store.fdatasync.formatted(), "", ""])
        // The path's own floor: the log's sync at the pace the store syncs in this bench (a disk left idle 2.5 ms syncs
        // slower than back to back), and the fence's round trip to the broker after it, which a store that may have been
        // taken over needs before it publishes (docs/contract.md, "One store per store id").
        let paced = Samples(zip(zip(result.tools.p50.values, result.store.pacedFdatasync.values), result.store.brokerRoundTrip.values).map {
            2 * $0.0 + $0.1 + $1
        })
        let overPaced = result.store.p50.ratio(to: paced)
        section.table.add([
            "the same, one every \(Figure.format(Double(LatencyBench.period) / 2_000_000, 2)) ms (the pace of the store's log syncs here)",
            result.store.pacedFdatasync.formatted(), "", "",
        ])
        section.table.add(["an UNSUBSCRIBE answered by the broker (the delivery fence's probe)", result.store.brokerRoundTrip.formatted(), "", ""])
        // Issue 35's floor again, measured as a path rather than added up from its parts: B4's messages, at its pace,
        // through a C relay that does only what the floor counts (relay.c), so its disk idles as the store's does.
        let relay = result.store.relay
        let overRelay = result.store.p50.ratio(to: relay.p50)
        section.table.add([
            "the floor as a path: the admin's message through a C relay that appends and `fdatasync`s a page, then publishes it, to a `mosquitto_sub` (`restock-ceiling relay`)",
            relay.p50.formatted(), relay.p99.formatted(), relay.max.formatted(),
        ])
        section.notes = [
            "Issue 35's floor of the store's path: two broker hops and one `fdatasync` on the data disk (a request durable "
                + "before the broker counts it delivered), \(floor.formatted()) µs; the store's median is \(overFloor.formatted())× it. "
                + "The store's path holds that one: the request log syncs each read's batch while it is applied, and before "
                + "its acknowledgements are written; the state's commits are not synced (`synchronous=NORMAL`), but the one "
                + "after which the log is trimmed, every 2,048 requests.",
            "The path's own floor: two broker hops, the log's `fdatasync` at the pace it syncs here, and the delivery "
                + "fence's round trip to the broker after it (the broker's answer that the store still holds its session, "
                + "before anything a request led to is published), \(paced.formatted()) µs; the store's median is "
                + "\(overPaced.formatted())× it.",
            "The floor as a path: the same two hops and one `fdatasync` done by a relay of a few lines of C, at B4's pace "
                + "(one message and its reset every \(LatencyBench.period / 1_000_000) ms, each synced) and on the store's data disk: p50 "
                + "\(relay.p50.formatted()) µs, p99 \(relay.p99.formatted()) µs; the store's median is \(overRelay.formatted())× its "
                + "median. Its p99 is this machine's for the path itself, with nothing of a store's on it: the p99 a store can come down to here.",
        ]
        section.goals = [
            Goal(
                text: "B4 stock command → alert: p50 ≤ 1 ms",
                figure: "\(result.store.p50.formatted()) µs (the C tools' single hop: \(result.tools.p50.formatted()) µs)",
                isMet: result.store.p50.median <= 1_000),
            Goal(
                text: "B4 stock command → alert: p99 ≤ 2 ms",
                figure: "\(result.store.p99.formatted()) µs (the C tools' single hop: \(result.tools.p99.formatted()) µs)",
                isMet: result.store.p99.median <= 2_000),
            Goal(
                text: "B4 p50 ÷ (2 broker hops + 1 fdatasync, measured in the run) ≤ 1.25 (issue 35)",
                figure: "\(overFloor.formatted())× (floor \(floor.formatted()) µs)",
                isMet: overFloor.median <= 1.25),
            Goal(
                text: "B4 p50 ÷ the same floor measured as a path (a C relay: 2 broker hops + 1 fdatasync, at B4's pace) ≤ 1.25 (issue 35)",
                figure: "\(overRelay.formatted())× (the relay's p50 \(relay.p50.formatted()) µs)",
                isMet: overRelay.median <= 1.25),
            Goal(
                text: "B4 p99 ≤ 1.5 ms (issue 35)",
                figure: "\(result.store.p99.formatted()) µs (the floor as a path: p99 \(relay.p99.formatted()) µs)",
                isMet: result.store.p99.median <= 1_500),
        ]
        return section
    }

    static func subscribeThroughput(_ rate: Samples, ceiling: Samples, requests: Int, runs: Int) -> BenchSection {
        var section = BenchSection(
            id: "B5", title: "B5 Subscribe requests, processed durably",
            method: """
                \(Figure.grouped(requests)) subscribe requests per run (each a new customer, mode every) published \
                at QoS 1 by one client with up to 1,000 in flight; timed from the first publish until all of \
                them are committed watches in the store's database (each request is journaled before its PUBACK, \
                applied in batches, and its customer's retained mirror published). In each run, after the store \
                is done, the C ceiling of B3 carries as many messages of a request's size through the same broker. \
                \(runs) runs, each adding to the same store.
                """)
        let toCeiling = rate.ratio(to: ceiling)
        section.table = MarkdownTable(header: ["requests", "requests/s", "C ceiling, messages/s", "store ÷ C ceiling"])
        section.table.add([Figure.grouped(requests), rate.formatted(), ceiling.formatted(), toCeiling.formatted()])
        section.goals = [
            Goal(
                text: "B5 subscribe requests processed durably: ≥ 0.5 of the C ceiling's rate",
                figure: "\(ratioFigure(toCeiling)): \(Figure.format(rate.median)) requests/s against \(Figure.format(ceiling.median)) messages/s",
                isMet: toCeiling.median >= 0.5)
        ]
        return section
    }

    /// B5 on PostgreSQL beside SQLite's B5 of the same run.
    static func subscribeThroughputOnPostgres(_ rate: Samples, sqlite: Samples, requests: Int, runs: Int) -> BenchSection {
        var section = BenchSection(
            id: "B5-PG", title: "B5 on PostgreSQL: subscribe requests, processed durably",
            method: """
                B5's workload (\(Figure.grouped(requests)) subscribe requests per run, \(runs) runs, each adding to the same \
                store) on a store whose state is in PostgreSQL (`--database`): a private server of the run's own on \
                loopback (Debian's, fsync on, one connection from the store), timed until every request is a watch \
                committed in the database; against B5 on SQLite in the same run.
                """)
        let toSQLite = rate.ratio(to: sqlite)
        section.table = MarkdownTable(header: ["requests", "requests/s on PostgreSQL", "requests/s on SQLite", "PostgreSQL ÷ SQLite"])
        section.table.add([Figure.grouped(requests), rate.formatted(), sqlite.formatted(), toSQLite.formatted()])
        section.goals = [
            Goal(
                text: "B5 on PostgreSQL: ≥ 0.3 of SQLite's rate",
                figure: "\(ratioFigure(toSQLite)): \(Figure.format(rate.median)) against \(Figure.format(sqlite.median)) requests/s",
                isMet: toSQLite.median >= 0.3)
        ]
        return section
    }

    /// B3 on PostgreSQL beside SQLite's B3 of the same run.
    static func throughputOnPostgres(_ rows: [EndToEndBench.Row], sqlite: [EndToEndBench.Row], runs: Int) -> BenchSection {
        var section = BenchSection(
            id: "B3-PG", title: "B3 on PostgreSQL: MQTT end to end",
            method: """
                B3's workload (N customers watching one SKU, mode every, seeded once through the storage; `{"set":1}` \
                timed to the N-th distinct alert) on a store whose state is in PostgreSQL (`--database`: a private \
                server of the run's own on loopback, Debian's, fsync on), against B3 on SQLite in the same run. \
                \(runs) runs.
                """)
        section.table = MarkdownTable(header: ["N customers", "alerts/s on PostgreSQL", "alerts/s on SQLite", "PostgreSQL ÷ SQLite", "lost", "duplicates"])
        var goals: [Goal] = []
        for (row, base) in zip(rows, sqlite) {
            let toSQLite = row.store.ratio(to: base.store)
            section.table.add([
                Figure.grouped(row.customers), row.store.formatted(), base.store.formatted(), toSQLite.formatted(), "\(row.lost)", "\(row.duplicates)",
            ])
            guard row.customers == 100_000 else { continue }
            goals.append(
                Goal(
                    text: "B3 on PostgreSQL N = 100,000: ≥ 0.7 of SQLite's rate, 0 lost",
                    figure: "\(ratioFigure(toSQLite)): \(Figure.format(row.store.median)) against \(Figure.format(base.store.median)) alerts/s, \(row.lost) lost",
                    isMet: toSQLite.median >= 0.7 && row.lost == 0))
        }
        section.goals = goals
        return section
    }

    /// B4 on PostgreSQL beside SQLite's B4 of the same run, and the takeover's time.
    static func latencyOnPostgres(
        _ result: (store: LatencyBench.Percentiles, tools: LatencyBench.Percentiles), sqlite: LatencyBench.Percentiles, takeover: Samples, runs: Int
    ) -> BenchSection {
        let store = result.store
        var section = BenchSection(
            id: "B4-PG", title: "B4 on PostgreSQL: latency, and the takeover",
            method: """
                B4's workload (one customer, \(Figure.grouped(LatencyBench.restocks)) restocks, one every \
                \(LatencyBench.period / 1_000_000) ms, timed from the stock command to the alert at the customer's \
                `mosquitto_sub`) on a store whose state is in PostgreSQL, against B4 on SQLite in the same run. The \
                takeover: a live store and a standby on the same database (`--standby --database`, nothing else \
                shared), the live one SIGKILLed, timed until the standby's retained status says online; the standby is \
                the next run's live store. \(runs) runs.
                """)
        section.table = MarkdownTable(header: ["figure", "on PostgreSQL", "on SQLite", "PostgreSQL ÷ SQLite"])
        section.table.add(["stock command → alert, p50 µs", store.p50.formatted(), sqlite.p50.formatted(), store.p50.ratio(to: sqlite.p50).formatted()])
        section.table.add(["stock command → alert, p99 µs", store.p99.formatted(), sqlite.p99.formatted(), store.p99.ratio(to: sqlite.p99).formatted()])
        section.table.add(["stock command → alert, max µs", store.max.formatted(), sqlite.max.formatted(), store.max.ratio(to: sqlite.max).formatted()])
        section.table.add(["standby online after the live store's SIGKILL, s", takeover.formatted(), "–", "–"])
        section.table.add(["one `INSERT` committed by `pgbench`, one after another, median µs", store.databaseRoundTrip.formatted(), "–", "–"])
        // Issue 35's floor on PostgreSQL: two trips through the broker (the C tools' single hop in the same run, twice)
        // and one statement committed, by the server's own client.
        let floor = Samples(zip(result.tools.p50.values, store.databaseRoundTrip.values).map { 2 * $0 + $1 })
        let overFloor = store.p50.ratio(to: floor)
        section.notes = [
            "The takeover waits for the lease to lapse: 5 s without a renewal by the database's clock (docs/operations.md, "
                + "\"Running on PostgreSQL\"), then the standby opens the storage, restores the registry and connects.",
            "Issue 35's floor of the store's path on PostgreSQL: two broker hops (the C tools' in this run: "
                + "\(result.tools.p50.formatted()) µs each) and one statement committed (`pgbench`), \(floor.formatted()) µs; the "
                + "store's median is \(overFloor.formatted())× it.",
        ]
        section.goals = [
            Goal(
                text: "B4 on PostgreSQL p50 ÷ (2 broker hops + 1 statement committed, measured in the run) ≤ 1.25 (issue 35)",
                figure: "\(overFloor.formatted())× (floor \(floor.formatted()) µs; p50 \(store.p50.formatted()) µs)",
                isMet: overFloor.median <= 1.25)
        ]
        return section
    }

    /// A goal's ratio: "0.71× (0.58–0.84)", the median and its spread across runs.
    private static func ratioFigure(_ ratio: Samples) -> String {
        "\(Figure.format(ratio.median))× (\(Figure.format(ratio.minimum))–\(Figure.format(ratio.maximum)))"
    }
}
