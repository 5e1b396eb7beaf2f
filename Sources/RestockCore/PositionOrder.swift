extension Watch {
    /// `watches` in position order, equal positions (a snapshot made by hand) in the order given.
    ///
    /// A restart orders up to a million watches read from a table in its own order (docs/benchmarks.md, B2). The
    /// watches themselves are not sorted, which would copy each several times with its references: their indexes are,
    /// and each watch is then copied once. When the positions are dense (a store's, short of churn), each index is put
    /// at its position's slot, with no comparison at all; otherwise the pairs of position and index are sorted.
    package static func inPositionOrder(_ watches: [Watch]) -> [Watch] {
        inPositionOrder(joining: [watches])
    }

    /// The watches of `parts`, one after the other, in position order (``inPositionOrder(_:)``): a table read in parts
    /// at once is put in order without first being joined.
    package static func inPositionOrder(joining parts: [[Watch]]) -> [Watch] {
        let all = Joined(parts)
        guard !all.isInOrder else { return parts.count == 1 ? parts[0] : parts.flatMap { $0 } }
        return (all.placedByPosition() ?? all.sortedByPosition()).map { all[$0] }
    }

    /// Parts of watches seen as one collection, by index across them.
    private struct Joined {
        let parts: [[Watch]]
        /// Where each part starts.
        let starts: [Int]
        let count: Int

        init(_ parts: [[Watch]]) {
            self.parts = parts
            starts = parts.reduce(into: [0]) { $0.append($0.last! + $1.count) }
            count = starts.last!
        }

        /// Whether each position is higher than the one before.
        var isInOrder: Bool {
            var previous: UInt64?
            var inOrder = true
            forEach { _, watch in
                if let previous, previous >= watch.position { inOrder = false }
                previous = watch.position
            }
            return inOrder
        }

        subscript(index: Int) -> Watch {
            // A table is read in two parts: a linear search finds the part at once.
            var part = 0
            while index >= starts[part + 1] { part += 1 }
            return parts[part][index - starts[part]]
        }

        /// Every watch, with its index, in order.
        func forEach(_ body: (Int, Watch) -> Void) {
            for (part, watches) in parts.enumerated() {
                for (offset, watch) in watches.enumerated() { body(starts[part] + offset, watch) }
            }
        }

        /// The indexes in position order, each put in a slot of its own between the lowest and the highest position;
        /// `nil` when the positions span more than twice their count, or two watches share one (sorted instead).
        func placedByPosition() -> [Int]? {
            var lowest = UInt64.max, highest = UInt64.min
            forEach { _, watch in (lowest, highest) = (min(lowest, watch.position), max(highest, watch.position)) }
            guard count < Int32.max / 2, count > 0, highest - lowest < UInt64(count) * 2 else { return nil }
            var slots = [Int32](repeating: -1, count: Int(highest - lowest) + 1)
            var shared = false
            forEach { index, watch in
                let slot = Int(watch.position - lowest)
                if slots[slot] >= 0 { shared = true }
                slots[slot] = Int32(index)
            }
            return shared ? nil : slots.compactMap { $0 >= 0 ? Int($0) : nil }
        }

        /// The indexes sorted by position, then by index (stable).
        func sortedByPosition() -> [Int] {
            var pairs: [(UInt64, Int)] = []
            pairs.reserveCapacity(count)
            forEach { index, watch in pairs.append((watch.position, index)) }
            return pairs.sorted { $0 < $1 }.map(\.1)
        }
    }
}
