import RestockCore

/// One way to tell N observers that a SKU is back, built with its observers: what B1 measures, side by side.
struct FanOutContender {
    /// How the report names it.
    let name: String
    /// The measured step: one stock change, delivered to every observer.
    let restock: () -> Void
    /// Not measured: back to sold out, ready for the next restock.
    let soldOut: () -> Void

    /// How one kind is named and built.
    struct Kind: Sendable {
        let name: String
        /// Registers N observers, each recording what it is told in the tally.
        let make: @Sendable (_ observers: Int, _ tally: FanOutCounter) throws -> FanOutContender
    }
}

/// What the alternatives deliver: the news itself, one value shared by every observer.
struct StockEvent: Sendable {
    let sku: SKU
    let quantity: Int
}

/// Counts what observers were told, so no contender can skip a delivery unnoticed.
/// Touched only from the benchmark's one thread, like a plain variable; hence unchecked.
final class FanOutCounter: @unchecked Sendable {
    var deliveries = 0
    var quantities = 0

    @inline(__always)
    func record(quantity: Int) {
        deliveries &+= 1
        quantities &+= quantity
    }
}

/// The SKU every contender restocks.
let fanOutSKU = try! SKU("iphone-15")
