import Foundation

/// One figure measured in several runs: the median is the figure, the range shows the spread.
struct Samples: Sendable {
    private(set) var values: [Double] = []

    init(_ values: [Double] = []) { self.values = values }

    mutating func append(_ value: Double) { values.append(value) }

    var count: Int { values.count }
    var median: Double {
        precondition(!values.isEmpty, "no runs recorded")
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
    var minimum: Double { values.min() ?? .nan }
    var maximum: Double { values.max() ?? .nan }

    /// Run by run `self / other`: a ratio measured within each run, so machine noise common to both cancels.
    func ratio(to other: Samples) -> Samples {
        precondition(values.count == other.values.count, "ratios need the same runs")
        return Samples(zip(values, other.values).map { $0 / $1 })
    }

    /// "median (min–max)", with `digits` significant figures.
    func formatted(_ digits: Int = 3) -> String {
        "\(Figure.format(median, digits)) (\(Figure.format(minimum, digits))–\(Figure.format(maximum, digits)))"
    }
}

enum Figure {
    /// A number with about `digits` significant figures and thousands separators: 1,234 · 12.3 · 0.0123.
    static func format(_ value: Double, _ digits: Int = 3) -> String {
        guard value.isFinite else { return "–" }
        let magnitude = abs(value)
        if magnitude >= 1_000 || magnitude == 0 { return grouped(Int(value.rounded())) }
        var decimals = digits - 1
        var scaled = magnitude
        while scaled >= 10, decimals > 0 { scaled /= 10; decimals -= 1 }
        return String(format: "%.\(decimals)f", value)
    }

    /// An integer with thousands separators.
    static func grouped(_ value: Int) -> String {
        let digits = String(abs(value))
        var result = ""
        for (index, character) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return value < 0 ? "-" + result : result
    }
}
