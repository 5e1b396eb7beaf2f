/// `restock-bench [--runs N] [--output FILE] [--plot FILE] [--observers N] [--contender TEXT] [--customers N] [B1 B2 …]`.
/// `--observers` and `--contender` narrow B1 to one size and the contenders whose name contains TEXT (for profiling).
struct BenchOptions {
    var runs = 5
    var observers: Int?
    var contender: String?
    /// Narrows B3 to one number of customers.
    var customers: Int?
    var output: String?
    var plot: String?
    var only: Set<String> = []

    init(_ arguments: some Sequence<String>) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--runs":
                guard let text = iterator.next(), let value = Int(text), value >= 1 else { throw BenchFailure("--runs needs a count ≥ 1") }
                runs = value
            case "--observers":
                guard let text = iterator.next(), let value = Int(text), value >= 1 else { throw BenchFailure("--observers needs a count ≥ 1") }
                observers = value
            case "--contender": contender = iterator.next()
            case "--customers":
                guard let text = iterator.next(), let value = Int(text), value >= 1 else { throw BenchFailure("--customers needs a count ≥ 1") }
                customers = value
            case "--output": output = iterator.next()
            case "--plot": plot = iterator.next()
            case let id where id.hasPrefix("B"): only.insert(id)
            default: throw BenchFailure("unknown argument \(argument); usage: restock-bench [--runs N] [--output FILE] [--plot FILE] [--observers N] [--contender TEXT] [--customers N] [B1 … B6]")
            }
        }
    }

    func includes(_ id: String) -> Bool { only.isEmpty || only.contains(id) }
}
