import Foundation

/// `make bench`: runs B1–B6, prints the tables, and writes docs/benchmarks.md and the scaling plot.
@main
struct BenchRun {
    static func main() async {
        do {
            let options = try BenchOptions(CommandLine.arguments.dropFirst())
            let started = Date()
            let startedAt = nanoseconds()
            let machine = await Machine.current()
            let runs = options.runs
            say("restock-bench on \(machine.summary); \(runs) runs per figure")
            var sections: [BenchSection] = []
            if options.includes("B1") {
                var fanOut = FanOutBench(runs: runs)
                if let observers = options.observers { fanOut.observerCounts = [observers] }
                fanOut.contenderFilter = options.contender
                sections.append(try fanOut.run(say: say))
            }
            if options.includes("B2") {
                let scale = try RegistryScaleBench(runs: runs).run(say: say)
                let restart = try await StoreRestartBench(runs: runs).run(say: say)
                sections.append(scale.section(restart: restart, runs: runs))
            }
            if options.includes("B3") {
                var endToEnd = EndToEndBench(runs: runs)
                if let customers = options.customers { endToEnd.customerCounts = [customers] }
                let rows = try await endToEnd.run(say: say)
                sections.append(EndToEndSections.throughput(rows, runs: runs))
                let onPostgres = try await endToEnd.runOnPostgres(say: say)
                sections.append(EndToEndSections.throughputOnPostgres(onPostgres, sqlite: rows, runs: runs))
            }
            if options.includes("B4") {
                let latency = LatencyBench(runs: runs)
                let result = try await latency.run(say: say)
                sections.append(EndToEndSections.latency(result, runs: runs))
                let onPostgres = try await latency.runOnPostgres(say: say)
                sections.append(
                    EndToEndSections.latencyOnPostgres(
                        (onPostgres.store, onPostgres.tools), sqlite: result.store, takeover: onPostgres.takeover, runs: runs))
            }
            if options.includes("B5") {
                let bench = SubscribeThroughputBench(runs: runs)
                let result = try await bench.run(say: say)
                sections.append(
                    EndToEndSections.subscribeThroughput(result.rate, ceiling: result.ceiling, requests: bench.requestsPerRun, runs: runs))
                let onPostgres = try await bench.runOnPostgres(say: say)
                sections.append(
                    EndToEndSections.subscribeThroughputOnPostgres(onPostgres, sqlite: result.rate, requests: bench.requestsPerRun, runs: runs))
            }
            if options.includes("B6") {
                // Fewer runs: NATS carries about a hundred alerts a second (docs/operations.md, "Past one broker").
                let bench = NATSThroughputBench(runs: min(runs, 3))
                sections.append(NATSThroughputBench.section(try await bench.run(say: say), customers: bench.customers, runs: bench.runs))
            }

            let report = BenchReport(
                machine: machine, runs: runs, date: started, duration: seconds(since: startedAt), sections: sections,
                plotFile: options.plot.map { URL(fileURLWithPath: $0).lastPathComponent })
            for section in sections {
                say("\n### \(section.title)\n\n\(section.table.text)")
                for note in section.notes { say("\n" + note) }
            }
            say("\n### Goals\n\n\(report.goalsTable.text)")
            if let plot = options.plot {
                let panels = [
                    ScalingPlot.Panel(name: "B1", title: "B1 fan-out: ns per alert", xLabel: "observers", yLabel: "ns per delivered alert"),
                    ScalingPlot.Panel(name: "B2", title: "B2 registry: ns per operation", xLabel: "watches in the registry", yLabel: "ns per operation"),
                    ScalingPlot.Panel(name: "B3", title: "B3 MQTT end to end", xLabel: "customers alerted", yLabel: "messages per second"),
                ].filter { panel in sections.contains { $0.id == panel.name } }
                try ScalingPlot(panels: panels, curves: sections.flatMap(\.curves)).svg.write(toFile: plot, atomically: true, encoding: .utf8)
                say("wrote \(plot)")
            }
            if let output = options.output {
                try report.write(to: output)
                say("wrote \(output)")
            }
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }
}

/// Prints a line at once, even into a pipe.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
