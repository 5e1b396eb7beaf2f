/// An admin's change to the on-hand quantity of a SKU.
public enum StockChange: Sendable, Hashable {
    /// The on-hand quantity becomes exactly this (0 or more).
    case set(Int)
    /// The on-hand quantity moves by this much, up or down; the result never goes below 0.
    case add(Int)

    /// The quantity after applying this change to `current`.
    /// - Throws: ``RestockError`` when the change is outside ``RequestLimits`` or the result leaves
    ///   `0...Store.maximumQuantity`.
    func applied(to current: Int, sku: SKU) throws(RestockError) -> Int {
        switch try RequestLimits.check(self) {
        case .set(let quantity):
            return quantity
        case .add(let delta):
            let (sum, overflow) = current.addingReportingOverflow(delta)
            guard !overflow, sum <= Store.maximumQuantity else {
                throw .quantityOutOfRange(sku: sku.rawValue, requested: "\(current) + \(delta)")
            }
            return max(0, sum)
        }
    }
}
