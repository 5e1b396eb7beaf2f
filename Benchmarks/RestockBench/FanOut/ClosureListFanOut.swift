import Synchronization

/// The floor: a plain array of closures under a lock, copied out under the lock and called after it.
final class ClosureListFanOut {
    static let kind = FanOutContender.Kind(name: "closure array under a lock (floor)") { observers, tally in
        let contender = ClosureListFanOut(observers: observers, tally: tally)
        return FanOutContender(name: "closure array under a lock (floor)", restock: contender.restock, soldOut: contender.soldOut)
    }
    private let observers = Mutex<[@Sendable (StockEvent) -> Void]>([])

    init(observers count: Int, tally: FanOutCounter) {
        observers.withLock { list in
            for _ in 0..<count { list.append { event in tally.record(quantity: event.quantity) } }
        }
    }

    func restock() {
        let event = StockEvent(sku: fanOutSKU, quantity: 1)
        for observer in observers.withLock({ $0 }) { observer(event) }
    }
    func soldOut() {}
}
