/// The ranges of the numbers a request may carry (the contract's numeric limits). The request decoder and
/// the ``Store`` check against these, so a number from outside never reaches arithmetic that could trap.
public enum RequestLimits {
    /// A watch's `minQuantity`: 1 through 1,000,000,000.
    public static let minQuantity: ClosedRange<Int> = 1...Store.maximumQuantity
    /// A stock `set`: 0 through 1,000,000,000.
    public static let stockSet: ClosedRange<Int> = 0...Store.maximumQuantity
    /// A stock `add`: −1,000,000,000 through 1,000,000,000 (the result still stays within ``stockSet``).
    public static let stockAdd: ClosedRange<Int> = -Store.maximumQuantity...Store.maximumQuantity

    /// `1 to 1000000000`, as refusals state a range.
    public static func describe(_ range: ClosedRange<Int>) -> String {
        "\(range.lowerBound) to \(range.upperBound)"
    }
}
