/// The two arrays a stock change reports its watches in (``Shelf/Walk``), kept by the store's state from one change to
/// the next. Once the caller has let the last outcome go, the next change writes into the same memory: a restock that
/// alerts one customer allocated an array and freed it each time (docs/benchmarks.md, "B1 at N = 1, the report's
/// arrays kept"). While an outcome still holds them they are shared, and emptying them makes new ones, as before.
struct ReportLists: Sendable {
    /// Arrays with room for more watches than this are not kept: a large restock's memory is not held until the next.
    static let keptCapacity = 64

    var alerted: [ReportedWatch] = []
    var rearmed: [ReportedWatch] = []

    /// Empties both: in place when nothing else holds them, into new arrays otherwise.
    mutating func empty() {
        Self.empty(&alerted)
        Self.empty(&rearmed)
    }

    /// `removeAll(keepingCapacity:)` goes through the general `replaceSubrange`, which took more than the allocation it
    /// saves (a tenth of the restock at N = 1): one watch is removed as the last.
    private static func empty(_ list: inout [ReportedWatch]) {
        switch list.count {
        case 0: return
        case 1: list.removeLast()
        default: list.removeAll(keepingCapacity: true)
        }
    }

    /// Keeps the arrays `walk` reported in, for the next change, where they are small enough.
    mutating func keep(_ walk: Shelf.Walk) {
        alerted = walk.alerted.capacity <= Self.keptCapacity ? walk.alerted : []
        rearmed = walk.rearmed.capacity <= Self.keptCapacity ? walk.rearmed : []
    }
}
