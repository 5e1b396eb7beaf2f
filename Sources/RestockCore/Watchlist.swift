/// The SKUs one customer watches. Most customers watch one: that one is kept inline, with no set allocated
/// (a store restoring a million watches of a million customers allocated a million one-element sets).
struct Watchlist: Sendable {
    private enum Storage: Sendable {
        case one(SKU)
        case many(Set<SKU>)
    }

    private var storage: Storage

    init(_ sku: SKU) { storage = .one(sku) }

    /// How many SKUs: O(1), so that the per-customer watch limit costs nothing per subscribe.
    var count: Int {
        switch storage {
        case .one: 1
        case .many(let set): set.count
        }
    }

    /// The SKUs, in no particular order.
    var skus: [SKU] {
        switch storage {
        case .one(let sku): [sku]
        case .many(let set): Array(set)
        }
    }

    mutating func insert(_ sku: SKU) {
        switch storage {
        case .one(let only) where only == sku: return
        case .one(let only): storage = .many([only, sku])
        case .many(var set):
            storage = .one(sku)  // drops the set's other reference, so that the insert does not copy it
            set.insert(sku)
            storage = .many(set)
        }
    }

    /// Removes `sku`; returns whether any SKU is left.
    mutating func remove(_ sku: SKU) -> Bool {
        switch storage {
        case .one(let only): return only != sku
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
