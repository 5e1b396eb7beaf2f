import Foundation

/// docs/benchmarks.md: the machine, the goals met or not, then each benchmark's method and table.
struct BenchReport {
    let machine: Machine
    let runs: Int
    let date: Date
    let duration: Double
    let sections: [BenchSection]
    let plotFile: String?

    /// The goals, for the terminal and the top of the document.
    var goalsTable: MarkdownTable {
        var table = MarkdownTable(header: ["goal", "figure (median of \(runs) runs)", "met"], numeric: [false, true, false])
        for goal in sections.flatMap(\.goals) { table.add([goal.text, goal.figure, goal.isMet ? "**met**" : "**not met**"]) }
        return table
    }

    static let begin = "<!-- bench:begin (written by make bench; edit outside these markers) -->"
    static let end = "<!-- bench:end -->"

    /// Writes the measured part into `path` between the markers, keeping what is written around them (the
    /// findings); a new file gets a title and the markers.
    func write(to path: String) throws {
        let measured = Self.begin + "\n" + markdown + "\n" + Self.end
        var document = "# Benchmarks\n\n" + measured + "\n"
        if let existing = try? String(contentsOfFile: path, encoding: .utf8),
            let start = existing.range(of: Self.begin), let stop = existing.range(of: Self.end), start.lowerBound < stop.lowerBound
        {
            document = existing.replacingCharacters(in: start.lowerBound..<stop.upperBound, with: measured)
        }
        try document.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// The measured part: machine, goals, plot, and each benchmark's method and table.
    var markdown: String {
        var lines = [
            "Measured by `make bench` (release build; `Benchmarks/RestockBench`) on \(Self.day(date)), in \(Figure.format(duration / 60)) min.",
            "",
            "**Machine:** \(machine.summary). A shared machine: every figure is the median of \(runs) runs, "
                + "followed by the smallest and largest run in parentheses; every ratio is taken within a run, then its median across runs.",
            "",
            "### Goals",
            "",
            goalsTable.text,
            "",
        ]
        if let plotFile {
            lines += ["![Scaling curves](\(plotFile))", ""]
        }
        for section in sections {
            lines += ["### \(section.title)", "", section.method, "", section.table.text, ""]
            for note in section.notes { lines += [note, ""] }
        }
        return lines.joined(separator: "\n")
    }

    private static func day(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return formatter.string(from: date)
    }
}
