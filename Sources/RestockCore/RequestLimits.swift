/// The ranges of the numbers a request may carry (the contract's numeric limits). The request decoder and
/// the ``Store`` check against these, so a number from outside never reaches arithmetic that could trap.
public enum RequestLimits {
    /// A watch's `minQuantity`: 1 through 1,000,000,000.
    public static let minQuantity: ClosedRange<Int> = 1...Store.maximumQuantity
    /// A stock `set`: 0 through 1,000,000,000.
    public static let stockSet: ClosedRange<Int> = 0...Store.maximumQuantity
    /// A stock `add`: −1,000,000,000 through 1,000,000,000 (the result still stays within ``stockSet``).
    public static let stockAdd: ClosedRange<Int> = -Store.maximumQuantity...Store.maximumQuantity

    /// `value` when it is a valid `minQuantity`.
    /// - Throws: ``RestockError/invalidMinQuantity(_:)`` otherwise.
    public static func checkMinQuantity(_ value: Int) throws(RestockError) -> Int {
        guard minQuantity.contains(value) else { throw .invalidMinQuantity(String(value)) }
        return value
    }

    /// `change` when its number is within ``stockSet`` or ``stockAdd``.
    /// - Throws: ``RestockError/stockChangeOutOfRange(field:value:)`` otherwise.
    public static func check(_ change: StockChange) throws(RestockError) -> StockChange {
        switch change {
        case .set(let quantity) where !stockSet.contains(quantity): throw .stockChangeOutOfRange(field: "set", value: String(quantity))
        case .add(let delta) where !stockAdd.contains(delta): throw .stockChangeOutOfRange(field: "add", value: String(delta))
        default: return change
        }
    }

    /// `1 to 1000000000`, as refusals state a range.
    public static func describe(_ range: ClosedRange<Int>) -> String {
        "\(range.lowerBound) to \(range.upperBound)"
    }
}
