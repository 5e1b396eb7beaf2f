import OpenCombine

/// OpenCombine's PassthroughSubject with N sinks, each sent the stock event.
final class CombineFanOut {
    static let kind = FanOutContender.Kind(name: "OpenCombine PassthroughSubject") { observers, tally in
        let contender = CombineFanOut(observers: observers, tally: tally)
        return FanOutContender(name: "OpenCombine PassthroughSubject", restock: contender.restock, soldOut: contender.soldOut)
    }
    private let subject = PassthroughSubject<StockEvent, Never>()
    private var cancellables: [AnyCancellable] = []

    init(observers: Int, tally: FanOutCounter) {
        cancellables = (0..<observers).map { _ in subject.sink { event in tally.record(quantity: event.quantity) } }
    }

    func restock() { subject.send(StockEvent(sku: fanOutSKU, quantity: 1)) }
    func soldOut() {}
}
