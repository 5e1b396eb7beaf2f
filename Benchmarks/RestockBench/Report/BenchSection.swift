/// What one benchmark found: a table, the goals it checks, and the curves it adds to the plot.
struct BenchSection: Sendable {
    let id: String
    let title: String
    /// How it was measured, in a sentence or two.
    let method: String
    var table = MarkdownTable(header: [])
    var goals: [Goal] = []
    var curves: [Curve] = []
    /// Anything else worth saying under the table.
    var notes: [String] = []
}

/// A goal (of issue 6 or issue 16) and whether this run met it.
struct Goal: Sendable {
    let text: String
    let figure: String
    let isMet: Bool
}

/// A scaling curve: y against x, both drawn on log scales.
struct Curve: Sendable {
    let plot: String
    let name: String
    let points: [(x: Double, y: Double)]
}

struct MarkdownTable: Sendable {
    let header: [String]
    var rows: [[String]] = []
    /// Per column: right-aligned (figures) or not.
    var numeric: [Bool] = []

    init(header: [String], numeric: [Bool]? = nil) {
        self.header = header
        self.numeric = numeric ?? header.indices.map { $0 > 0 }
    }

    mutating func add(_ row: [String]) { rows.append(row) }

    var text: String {
        guard !header.isEmpty else { return "" }
        var lines = ["| " + header.joined(separator: " | ") + " |"]
        lines.append("|" + numeric.map { $0 ? "--:|" : "---|" }.joined())
        lines += rows.map { "| " + $0.joined(separator: " | ") + " |" }
        return lines.joined(separator: "\n")
    }
}
