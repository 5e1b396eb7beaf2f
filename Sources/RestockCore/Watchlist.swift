/// The SKUs one customer watches. Most customers watch one: that one is kept inline, with no set allocated (a store
/// restoring a million watches of a million customers allocated a million one-element sets). A few are kept in a small
/// array — a quarter of the memory of a set of four (docs/benchmarks.md, B2's memory per watch) — and a set takes over
/// past ``arrayLimit``, so that a customer allowed many watches never costs a linear search per request.
struct Watchlist: Sendable {
    private enum Storage: Sendable {
        case one(SKU)
        case few([SKU])
        case many(Set<SKU>)
    }

    /// The most SKUs kept in an array.
    static let arrayLimit = 8

    private var storage: Storage

    init(_ sku: SKU) { storage = .one(sku) }

    /// How many SKUs: O(1), so that the per-customer watch limit costs nothing per subscribe.
    var count: Int {
        switch storage {
        case .one: 1
        case .few(let array): array.count
        case .many(let set): set.count
        }
    }

    /// The SKUs, in no particular order.
    var skus: [SKU] {
        switch storage {
        case .one(let sku): [sku]
        case .few(let array): array
        case .many(let set): Array(set)
        }
    }

    mutating func insert(_ sku: SKU) {
        switch storage {
        case .one(let only) where only == sku: return
        case .one(let only): storage = .few([only, sku])
        case .few(var array):
            guard !array.contains(sku) else { return }
            storage = .one(sku)  // drops the array's other reference, so that the append does not copy it
            if array.count < Self.arrayLimit {
                array.append(sku)
                storage = .few(array)
            } else {
                storage = .many(Set(array + [sku]))
            }
        case .many(var set):
            storage = .one(sku)  // likewise for the set
            set.insert(sku)
            storage = .many(set)
        }
    }

    /// Removes `sku`; returns whether any SKU is left.
    mutating func remove(_ sku: SKU) -> Bool {
        switch storage {
        case .one(let only): return only != sku
        case .few(var array):
            storage = .one(sku)
            array.removeAll { $0 == sku }
            storage = array.count == 1 ? .one(array[0]) : .few(array)
            return !array.isEmpty
        case .many(var set):
            storage = .one(sku)
            set.remove(sku)
            if set.count == 1, let last = set.first {
                storage = .one(last)
            } else {
                storage = .many(set)
            }
            return !set.isEmpty
        }
    }
}
