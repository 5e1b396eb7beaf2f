/// One row of the reliability table: what a scenario did and what came of it.
///
/// For the R rows the counts are alerts; for S1 they are the store's answers to hostile requests; for
/// S2 and S3 they are the legitimate alerts that must still flow while intruders try their luck.
struct ScenarioRow: Sendable {
    var id: String
    var action: String
    var expected: Int
    var delivered: Int
    var duplicates: Int
    var lost: Int
    var intrusions: Int = 0
    /// Figures worth keeping: timings, counts seen at the moment of the fault.
    var notes: [String] = []
    /// A check that failed other than loss or intrusion (a wrong order, a store that stopped…).
    var failures: [String] = []
    /// Set for a probe beyond the list that shows a known limit outside the product: reported, with
    /// its losses, but it does not fail the run.
    var advisory: String?

    /// A row from `expected` items and the distinct ones that arrived among `deliveries`.
    init(_ id: String, _ action: String, expected: Int, distinct: Int, deliveries: Int) {
        self.id = id
        self.action = action
        self.expected = expected
        self.delivered = distinct
        self.duplicates = deliveries - distinct
        self.lost = max(0, expected - distinct)
    }

    /// A row for a scenario that could not finish.
    static func aborted(_ id: String, _ action: String, _ error: any Error) -> ScenarioRow {
        var row = ScenarioRow(id, action, expected: 0, distinct: 0, deliveries: 0)
        row.failures.append("did not finish: \(error)")
        return row
    }

    var passed: Bool { lost == 0 && intrusions == 0 && failures.isEmpty }
    /// Whether the run fails because of this row.
    var fails: Bool { !passed && (advisory == nil || intrusions > 0 || !failures.isEmpty) }
    var verdict: String { passed ? "pass" : fails ? "FAIL" : "known limit" }

    /// Records a failed check when `condition` is false.
    mutating func check(_ condition: Bool, _ failure: @autoclosure () -> String) {
        if !condition { failures.append(failure()) }
    }
}
