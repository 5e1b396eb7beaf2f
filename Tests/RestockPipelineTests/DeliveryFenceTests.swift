@testable import RestockPipeline
import SeededRandom
import Testing

/// The delivery fence against a plain model: seeded runs of what the journal, the client, the applying stage and the
/// session watch do to it, in any interleaving those threads allow.
@Suite("The delivery fence")
struct DeliveryFenceTests {
    /// The model: a message may go out once every request it follows from is confirmed; messages go out in commit order.
    private struct Model {
        var confirmedThrough: Int64 = .max  // nothing journaled in this run yet
        var journaled: [(batch: UInt64, from: Int64, through: Int64)] = []
        var held: [(through: Int64, seqs: [Int64])] = []
        var released: [Int64] = []

        mutating func release() {
            while let first = held.first, first.through <= confirmedThrough {
                released += first.seqs
                held.removeFirst()
            }
        }
    }

    @Test("2,000 seeded runs: released in commit order, never before its requests are confirmed, everything after releaseAll")
    func againstTheModel() {
        for seed in UInt64(1)...2_000 {
            var random = SplitMix64(seed: seed)
            let (wakeups, wakeup) = AsyncStream.makeStream(of: Void.self)
            _ = wakeups
            let committed = HandOff<CommittedPublication>(capacity: 1_000_000, wakeup: wakeup)
            let fence = DeliveryFence(outboxThrough: 10, committed: committed)
            var model = Model()
            var (nextRequest, nextBatch, nextPlace, applied): (Int64, UInt64, Int64, Int64) = (101, 1, 11, 100)
            var taken: [Int64] = []
            for _ in 0..<Int.random(in: 5...60, using: &random) {
                switch Int.random(in: 0..<10, using: &random) {
                case 0...2:  // the journal records a batch
                    let count = Int64.random(in: 1...4, using: &random)
                    fence.journaled(batch: nextBatch, from: nextRequest, through: nextRequest + count - 1)
                    if model.confirmedThrough == .max { model.confirmedThrough = nextRequest - 1 }
                    model.journaled.append((nextBatch, nextRequest, nextRequest + count - 1))
                    nextRequest += count
                    nextBatch += 1
                case 3...4:  // the broker answers a probe (in order, up to some batch journaled)
                    guard let last = model.journaled.last?.batch else { continue }
                    let batch = UInt64.random(in: 1...last, using: &random)
                    fence.confirmed(throughBatch: batch)
                    for entry in model.journaled where entry.batch <= batch {
                        model.confirmedThrough = max(model.confirmedThrough, entry.through)
                    }
                    model.journaled.removeAll { $0.batch <= batch }
                    model.release()
                case 5...7:  // the applying stage commits up to a request journaled
                    applied = max(applied, min(nextRequest - 1, applied + Int64.random(in: 0...3, using: &random)))
                    let count = Int.random(in: 0...3, using: &random)
                    let messages = (0..<count).map { offset in
                        CommittedPublication(seq: nextPlace + Int64(offset), publication: Publication(key: "", topic: "t", payload: [], retain: false))
                    }
                    nextPlace += Int64(count)
                    fence.pass(messages, through: applied)
                    if !messages.isEmpty { model.held.append((applied, messages.map(\.seq))) }
                    model.release()
                case 8:  // the session watch decides, after a loss, that the session is still the store's
                    fence.releaseAll()
                    if model.confirmedThrough != .max {
                        model.confirmedThrough = max(model.confirmedThrough, model.journaled.map(\.through).max() ?? model.confirmedThrough)
                    }
                    model.journaled.removeAll()
                    model.release()
                default:  // the publisher takes what was passed on
                    if case .items(let items) = committed.take(upTo: .max) { taken += items.map(\.seq) }
                }
                if case .items(let items) = committed.take(upTo: .max) { taken += items.map(\.seq) }
                #expect(taken == model.released, "seed \(seed)")
                #expect(fence.releasedThrough == (model.released.last ?? 10), "seed \(seed)")
                #expect(fence.heldCount == model.held.reduce(0) { $0 + $1.seqs.count }, "seed \(seed)")
                if taken != model.released { return }
            }
            fence.releaseAll()
            if case .items(let items) = committed.take(upTo: .max) { taken += items.map(\.seq) }
            #expect(taken == Array(11..<nextPlace), "seed \(seed): everything, in order, once released")
        }
    }
}
