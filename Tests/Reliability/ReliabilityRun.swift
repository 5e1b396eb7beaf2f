import Foundation
import LocalBroker
import Deadlines
import RestockTestSupport

/// `make reliability`: runs every scenario with real processes, prints the table, and exits non-zero when
/// anything was lost, an intruder got anywhere, or a scenario could not finish.
///
///     restock-reliability [--record docs/reliability.md] [R1 R2 … S3]
///     restock-reliability --cluster [C1 … C4]      (`make cluster-test`: nats-server on PATH or in $NATS_SERVER)
@main
struct ReliabilityRun {
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var recordFile: String?
        if let flag = arguments.firstIndex(of: "--record"), flag + 1 < arguments.count {
            recordFile = arguments[flag + 1]
            arguments.removeSubrange(flag...(flag + 1))
        }
        let onCluster = arguments.contains("--cluster")
        arguments.removeAll { $0 == "--cluster" }
        let known = onCluster ? Scenario.cluster : Scenario.all
        let chosen = known.filter { arguments.isEmpty || arguments.contains($0.id) }
        guard !chosen.isEmpty else {
            say("error: no scenario named \(arguments.joined(separator: ", ")); known: \(known.map(\.id).joined(separator: " "))")
            exit(2)
        }

        // Every store of the run serves its metrics, and a real Prometheus scrapes them (read back at the end).
        let prometheus = onCluster ? nil : await RunMetrics.start()
        let clock = ContinuousClock()
        let began = clock.now
        var rows: [ScenarioRow] = []
        for scenario in chosen {
            ScrapedStores.setScenario(scenario.id)
            say("▶ \(scenario.id) \(scenario.title)")
            let started = clock.now
            let before = rows.count
            do {
                let result = try await withDeadline(scenario.timeLimit, waitingFor: "scenario \(scenario.id)") {
                    try await scenario.run()
                }
                rows += result
            } catch {
                rows.append(.aborted(scenario.id, scenario.title, error))
            }
            for row in rows[before...] {
                say("  \(row.id) \(row.verdict) after \((clock.now - started).formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1))))"
                    + (row.failures.isEmpty ? "" : ": " + row.failures.joined(separator: "; ")))
            }
        }
        let duration = clock.now - began

        say("")
        say(ResultTable.markdown(rows))
        let failed = rows.filter(\.fails)
        say("")
        say(failed.isEmpty ? "reliability: every scenario passed" : "reliability: FAILED: \(failed.map(\.id).joined(separator: ", "))")
        var metrics = ""
        if let prometheus {
            metrics = await RunMetrics.table(from: prometheus, scenarios: chosen.map(\.id))
            prometheus.stop()  // the run ends with exit(), which releases nothing
            say("")
            say(metrics)
        }

        if let recordFile {
            let machine = await ResultTable.machine()
            guard let document = try? String(contentsOfFile: recordFile, encoding: .utf8),
                let updated = ResultTable.record(rows, metrics: metrics, in: document, machine: machine, date: Date(), duration: duration)
            else {
                say("error: \(recordFile) has no \(ResultTable.begin) … \(ResultTable.end) section to record the table in")
                exit(2)
            }
            do {
                try updated.write(toFile: recordFile, atomically: true, encoding: .utf8)
                say("recorded in \(recordFile)")
            } catch {
                say("error: cannot write \(recordFile): \(error)")
                exit(2)
            }
        }
        exit(failed.isEmpty ? 0 : 1)
    }
}

/// Writes a line at once (unbuffered), so progress shows as it happens, also in CI logs.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
