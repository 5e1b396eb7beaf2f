/// Values kept in the order of their places — a request's in the journal, a message's in the outbox, a dead letter's —
/// as SQLite keeps rows by an integer primary key: found by place in logarithmic time, read after a place in order,
/// appended at the end (places rise) in constant time.
struct PlaceOrdered<Element: Sendable>: Sendable {
    /// A value at its place.
    struct Entry: Sendable {
        /// Its place.
        let place: Int64
        /// The value.
        var element: Element
    }

    /// Every value, in the order of their places.
    private(set) var entries: [Entry] = []

    /// An empty list.
    init() {}

    /// How many values it holds.
    var count: Int { entries.count }

    /// The values, in the order of their places.
    var elements: [Element] { entries.map(\.element) }

    /// The index of the first entry whose place comes after `place` (`count` when none does).
    private func firstIndex(after place: Int64) -> Int {
        var (low, high) = (0, entries.count)
        while low < high {
            let middle = low + (high - low) / 2
            if entries[middle].place <= place { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The index of the entry at `place`, if there is one.
    private func index(of place: Int64) -> Int? {
        let index = firstIndex(after: place)
        return index > 0 && entries[index - 1].place == place ? index - 1 : nil
    }

    /// The entries after `place`, in order, at most `limit` of them; a negative `limit` sets no bound, as in SQLite's
    /// `LIMIT`.
    func entries(after place: Int64, limit: Int) -> ArraySlice<Entry> {
        let tail = entries[firstIndex(after: place)...]
        return limit < 0 ? tail : tail.prefix(limit)
    }

    /// The values after `place`, in order, at most `limit` of them (``entries(after:limit:)``).
    func elements(after place: Int64, limit: Int) -> [Element] { entries(after: place, limit: limit).map(\.element) }

    /// How many values come after `place`.
    func count(after place: Int64) -> Int { entries.count - firstIndex(after: place) }

    /// The value at `place`.
    subscript(place: Int64) -> Element? {
        get { index(of: place).map { entries[$0].element } }
        set {
            switch (index(of: place), newValue) {
            case (let index?, let value?): entries[index].element = value
            case (let index?, nil): entries.remove(at: index)
            case (nil, let value?): entries.insert(Entry(place: place, element: value), at: firstIndex(after: place))
            case (nil, nil): break
            }
        }
    }

    /// Forgets every value up to `place`.
    mutating func removeAll(through place: Int64) { entries.removeFirst(firstIndex(after: place)) }

    /// Forgets the values `shouldRemove` picks.
    mutating func removeAll(where shouldRemove: (Element) -> Bool) { entries.removeAll { shouldRemove($0.element) } }
}
