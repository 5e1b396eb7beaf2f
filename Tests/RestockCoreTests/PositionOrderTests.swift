import Foundation
import RestockCore
import SeededRandom
import Testing

/// ``Watch/inPositionOrder(joining:)`` against a plain stable sort: a restart puts up to a million watches in position
/// order with it, placed by slot when their positions are dense, sorted by index otherwise.
@Suite("Watches put in position order")
struct PositionOrderTests {
    /// How a case's positions are drawn.
    enum Positions: CaseIterable {
        /// 1…n in a random order: every slot taken (placed).
        case permutation
        /// n of 1…2n: slots left empty (placed).
        case gaps
        /// Spread over a range far wider than n (sorted).
        case sparse
        /// Drawn from 1…n/2+1: positions repeated (sorted, the repeated ones in the order given).
        case repeated
    }

    @Test("the same order as a stable sort by position, from one to four parts joined, in order or not", arguments: 0..<300)
    func likeAStableSort(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let count = Int.random(in: 0...80, using: &random)
        let kind = Positions.allCases[Int(seed) % Positions.allCases.count]
        var positions: [UInt64]
        switch kind {
        case .permutation: positions = (1...UInt64(count + 1)).shuffled(using: &random).dropLast()
        case .gaps: positions = Array((1...UInt64(2 * count + 2)).shuffled(using: &random).prefix(count))
        case .sparse: positions = (0..<count).map { _ in UInt64.random(in: 1...StoreSnapshot.maximumCounter, using: &random) }
        case .repeated: positions = (0..<count).map { _ in UInt64.random(in: 1...UInt64(count / 2 + 1), using: &random) }
        }
        if random.next() % 4 == 0 { positions.sort() }
        let sku = try SKU("ipad")
        let watches = try positions.enumerated().map { index, position in
            Watch(customer: try CustomerID("c\(index)"), sku: sku, mode: .once, minQuantity: 1, position: position, since: Date(timeIntervalSinceReferenceDate: 0))
        }
        let expected = watches.enumerated().sorted { ($0.element.position, $0.offset) < ($1.element.position, $1.offset) }.map(\.element)
        // Each watch as its customer (its index in `watches`) at its position: a failure prints short lines.
        let named = { (watches: [Watch]) in watches.map { "\($0.customer.rawValue)@\($0.position)" } }
        var cuts = (0..<Int.random(in: 0...3, using: &random)).map { _ in Int.random(in: 0...count, using: &random) }.sorted()
        cuts = [0] + cuts + [count]
        let parts = zip(cuts, cuts.dropFirst()).map { Array(watches[$0..<$1]) }
        #expect(named(Watch.inPositionOrder(joining: parts)) == named(expected), "seed \(seed), \(kind), parts \(parts.map(\.count))")
        #expect(Watch.inPositionOrder(watches) == expected, "seed \(seed), \(kind)")
    }
}
