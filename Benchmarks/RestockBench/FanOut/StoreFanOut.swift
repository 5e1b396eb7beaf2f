import RestockCore

/// RestockCore's Store: N customers each watch the SKU (mode `every`) and each has one in-process
/// observer. A restock raises one alert per watch, with its id, position and message, in signup order.
final class StoreFanOut {
    static let kind = FanOutContender.Kind(name: "RestockCore Store") { observers, tally in
        let contender = try StoreFanOut(observers: observers, tally: tally)
        return FanOutContender(name: "RestockCore Store", restock: contender.restock, soldOut: contender.soldOut)
    }
    private let store: Store
    private var tokens: [ObservationToken] = []

    init(observers: Int, tally: FanOutCounter) throws {
        store = try Store(id: StoreID("apple"))
        tokens.reserveCapacity(observers)
        for index in 0..<observers {
            let customer = try CustomerID("c\(index)")
            try store.subscribe(customer, to: fanOutSKU, mode: .every)
            tokens.append(store.observe(customer) { alert in tally.record(quantity: alert.quantity) })
        }
    }

    func restock() { _ = try! store.changeStock(of: fanOutSKU, .set(1)) }
    func soldOut() { _ = try! store.changeStock(of: fanOutSKU, .set(0)) }
}
