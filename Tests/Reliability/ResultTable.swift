import Foundation
import LocalBroker
import Deadlines

/// The reliability table as markdown, and the page of docs/reliability.md around it.
enum ResultTable {
    /// The scenarios' table, then, apart, the probes beyond the issue's list that show a known limit.
    static func markdown(_ rows: [ScenarioRow]) -> String {
        let probes = rows.filter { $0.advisory != nil }
        let table = rows.filter { $0.advisory == nil }
        guard !probes.isEmpty else { return markdown(table: table) }
        return markdown(table: table) + "\n\nProbes beyond the list, showing a known limit outside the product (reported, not gating):\n\n"
            + markdown(table: probes)
    }

    private static func markdown(table rows: [ScenarioRow]) -> String {
        var lines = [
            "| | what was done | expected | delivered | duplicates | lost | intrusions | verdict |",
            "|---|---|--:|--:|--:|--:|--:|---|",
        ]
        for row in rows {
            let action = ([row.action] + row.notes.map { "<br>· \($0)" } + row.failures.map { "<br>**✗ \($0)**" }
                + (row.advisory.map { ["<br>*\($0)*"] } ?? [])).joined()
            lines.append(
                "| \(row.id) | \(action.replacingOccurrences(of: "|", with: "\\|")) | \(row.expected) | \(row.delivered) "
                    + "| \(row.duplicates) | \(row.lost) | \(row.intrusions) | \(row.verdict) |")
        }
        return lines.joined(separator: "\n")
    }

    /// The machine this ran on: cores, memory, kernel, mosquitto.
    static func machine() async -> String {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let memory = Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824
        var system = utsname()
        uname(&system)
        let kernel = withUnsafeBytes(of: &system.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let help = try? await ChildProcess.run("mosquitto", ["-h"])
        let mosquitto = help?.standardOutput.split(separator: "\n").first.map(String.init) ?? "mosquitto (version unknown)"
        return "\(cores) cores, \(String(format: "%.0f", memory)) GiB, Linux \(kernel), \(mosquitto)"
    }

    static let begin = "<!-- reliability-table:begin -->"
    static let end = "<!-- reliability-table:end -->"

    /// `document` with the part between the markers replaced by this run's table, date and machine.
    static func record(_ rows: [ScenarioRow], metrics: String, in document: String, machine: String, date: Date, duration: Duration) -> String? {
        guard let start = document.range(of: begin), let stop = document.range(of: end), start.upperBound <= stop.lowerBound else {
            return nil
        }
        let day = date.formatted(.iso8601.year().month().day())
        let seconds = Int(duration.components.seconds)
        let section = """
            \(begin)
            Recorded on \(day) on \(machine); the whole run took \(seconds / 60) min \(seconds % 60) s.

            \(markdown(rows))
            \(metrics.isEmpty ? "" : "\n" + metrics + "\n")
            \(end)
            """
        return document.replacingCharacters(in: start.lowerBound..<stop.upperBound, with: section)
    }
}
