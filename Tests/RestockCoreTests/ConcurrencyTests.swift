import Synchronization
import Testing
@testable import RestockCore
import SeededRandom

@Suite("Concurrency")
struct ConcurrencyTests {
    @Test("concurrent subscribe, unsubscribe and notify lose and double no alert")
    func concurrentOperations() async throws {
        let store = makeStore()
        let observed = RecordingObserver()
        let token = store.observeAll(with: observed)
        let raised = Recorder<RestockAlert>()
        let skus = (0..<4).map { sku("sku\($0)") }
        let customers = (0..<64).map { customer("c\($0)") }

        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var random = SplitMix(seed: UInt64(worker))
                    for _ in 0..<3_000 {
                        let item = skus[random.next(below: skus.count)]
                        let who = customers[random.next(below: customers.count)]
                        switch random.next(below: 4) {
                        case 0:
                            let mode: WatchMode = random.next(below: 2) == 0 ? .once : .every
                            if let alert = try! store.subscribe(who, to: item, mode: mode).alert { raised.append(alert) }
                        case 1:
                            store.unsubscribe(who, from: item)
                        case 2:
                            for alert in try! store.changeStock(of: item, .set(random.next(below: 3))).alerts {
                                raised.append(alert)
                            }
                        default:
                            // Observers come and go during delivery.
                            let extra = store.observe(who) { _ in }
                            extra.cancel()
                        }
                    }
                }
            }
        }

        let raisedIDs = raised.all.map(\.id)
        let observedIDs = observed.recorder.all.map(\.id)
        #expect(!raisedIDs.isEmpty)
        #expect(Set(raisedIDs).count == raisedIDs.count, "an alert was raised twice")
        #expect(observedIDs.count == raisedIDs.count, "an observer lost or doubled alerts")
        #expect(Set(observedIDs) == Set(raisedIDs))
        // The counters stayed consistent: the next id follows every one handed out.
        #expect(store.snapshot.nextAlertSequence == UInt64(raisedIDs.count) + 1)
        // The registry and the per-customer lists agree.
        let bySKU = skus.flatMap { store.watchers(of: $0) }
        let byCustomer = customers.flatMap { store.watchlist(of: $0) }
        #expect(Set(bySKU) == Set(byCustomer))
        #expect(bySKU.count == store.watchCount)
        token.cancel()
    }
}

/// A small deterministic generator, so a failure can be replayed.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next(below bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
