import Foundation

/// B1: one stock change to N observers, for RestockCore's Store and what a user would pick instead.
///
/// For each N, every contender is built once; then each run measures all four one after another, so a
/// ratio is taken within a run. Each restock is timed on its own (the sold-out step between restocks is
/// not), and a run restocks until about `alertsPerRun` alerts are delivered.
struct FanOutBench {
    static let observerCounts = [1, 1_000, 100_000]
    let runs: Int
    var observerCounts = Self.observerCounts
    /// Which contenders run, by a part of their name; all of them when `nil`.
    var contenderFilter: String?
    var alertsPerRun = 1_000_000

    private var contenders: [FanOutContender.Kind] {
        guard let contenderFilter else { return Self.allContenders }
        return Self.allContenders.filter { $0.name.localizedCaseInsensitiveContains(contenderFilter) }
    }

    /// The floor first: the ratios below are taken against it.
    private static let allContenders: [FanOutContender.Kind] = [
        ClosureListFanOut.kind, StoreFanOut.kind, CombineFanOut.kind, NotificationCenterFanOut.kind,
    ]

    func run(say: (String) -> Void) throws -> BenchSection {
        var section = BenchSection(
            id: "B1", title: "B1 In-process fan-out",
            method: """
                One stock change delivered to N observers, in ns per delivered alert (the time of the restock \
                call divided by N; the step back to sold out between restocks is not timed). The Store raises one \
                alert per watching customer — id, position, message, in signup order — and hands each to that \
                customer's observer; the others send one shared `StockEvent` to every observer. Every observer \
                does the same thing: counts the delivery and adds up the quantity. \(runs) runs; each run \
                measures the four one after another and restocks until about \(Figure.grouped(alertsPerRun)) \
                alerts are delivered.
                """)
        section.table = MarkdownTable(header: ["N observers"] + contenders.map(\.name) + [
            "Store ÷ floor", "Store ÷ OpenCombine", "NotificationCenter ÷ Store",
        ])
        var perContender: [String: [(x: Double, y: Double)]] = [:]
        var worst = (floor: 0.0, combine: 0.0, center: Double.infinity)
        for count in observerCounts {
            let tally = FanOutCounter()
            let built = try contenders.map { try $0.make(count, tally) }
            let iterations = max(5, alertsPerRun / count)
            var samples = Array(repeating: Samples(), count: built.count)
            for run in 1...runs {
                for (index, contender) in built.enumerated() {
                    samples[index].append(try measure(contender, observers: count, iterations: iterations, tally: tally))
                }
                say("  B1 N=\(count) run \(run): " + zip(contenders, samples).map { "\($0.name) \(Figure.format($1.values.last!)) ns" }.joined(separator: " · "))
            }
            guard samples.count == Self.allContenders.count else { continue }  // narrowed for profiling: no ratios
            let (floor, store, combine, center) = (samples[0], samples[1], samples[2], samples[3])
            let overFloor = store.ratio(to: floor), overCombine = store.ratio(to: combine), centerOver = center.ratio(to: store)
            section.table.add(
                [Figure.grouped(count)] + samples.map { $0.formatted() }
                    + [overFloor.formatted(), overCombine.formatted(), centerOver.formatted()])
            for (contender, sample) in zip(contenders, samples) {
                perContender[contender.name, default: []].append((Double(count), sample.median))
            }
            worst.floor = max(worst.floor, overFloor.median)
            worst.combine = max(worst.combine, overCombine.median)
            worst.center = min(worst.center, centerOver.median)
        }
        section.curves = contenders.map { Curve(plot: "B1", name: $0.name, points: perContender[$0.name] ?? []) }
        section.goals = [
            Goal(text: "B1 Store within 2× of the floor (every N)", figure: "worst \(Figure.format(worst.floor))×", isMet: worst.floor <= 2),
            Goal(text: "B1 Store faster than OpenCombine (every N)", figure: "worst \(Figure.format(worst.combine))× its time", isMet: worst.combine <= 1),
            Goal(
                text: "B1 Store ≥ 5× faster than NotificationCenter (every N)", figure: "worst \(Figure.format(worst.center))×",
                isMet: worst.center >= 5),
            // Issue 35's goal, beside issue 6's above.
            Goal(
                text: "B1 NotificationCenter ÷ Store ≥ 3 (every N)", figure: "worst \(Figure.format(worst.center))×",
                isMet: worst.center >= 3),
        ]
        return section
    }

    /// ns per delivered alert over `iterations` restocks, after one untimed warm-up.
    private func measure(_ contender: FanOutContender, observers: Int, iterations: Int, tally: FanOutCounter) throws -> Double {
        contender.restock()
        contender.soldOut()
        let before = tally.deliveries
        var elapsed: UInt64 = 0
        for _ in 0..<iterations {
            let start = nanoseconds()
            contender.restock()
            elapsed += nanoseconds() - start
            contender.soldOut()
        }
        let delivered = tally.deliveries - before
        guard delivered == iterations * observers else {
            throw BenchFailure("\(contender.name) delivered \(delivered) alerts, expected \(iterations * observers)")
        }
        return Double(elapsed) / Double(delivered)
    }
}

/// A benchmark that could not measure what it should (a lost alert, a wrong count): the run fails.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
