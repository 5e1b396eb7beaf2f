import SeededRandom
import Testing

@testable import RestockCore

/// ``DistinctCount``, the estimate of how many customers a restart makes room for, against the exact count.
@Suite("Distinct customers estimated")
struct DistinctCountTests {
    @Test("within 6% of the exact count, each text added one to four times, from 1 to 300,000 distinct", arguments: [1, 7, 100, 1_001, 5_000, 40_000, 300_000])
    func closeToTheExactCount(distinct: Int) {
        var random = SplitMix64(seed: UInt64(distinct))
        var count = DistinctCount()
        var texts = Set<String>()
        for index in 0..<distinct {
            // Customer-like identifiers: a prefix and a number, or random letters and digits.
            let text = index % 2 == 0 ? "c\(index)" : String((0..<Int.random(in: 1...20, using: &random)).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789._-".randomElement(using: &random)! }) + "\(index)"
            for _ in 0..<Int.random(in: 1...4, using: &random) { count.add(text) }
            texts.insert(text)
        }
        let error = abs(Double(count.estimate - texts.count)) / Double(texts.count)
        #expect(error <= 0.06, "estimated \(count.estimate) for \(texts.count)")
    }

    @Test("nothing added: none")
    func empty() {
        #expect(DistinctCount().estimate == 0)
    }
}
