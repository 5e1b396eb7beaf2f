import DequeModule
import Synchronization

/// What one stage of the store's pipeline passes to the next in memory — journaled requests to the applying
/// stage, committed messages to the publishing stage — in order, each with its place in the file that already
/// holds it durably.
///
/// The memory is bounded: when the next stage falls too far behind, new items are dropped here (they are on
/// disk) and the next stage is told, once, to catch up by reading the file (``Taken/spilled``). It then takes
/// from memory again only items after the last it read, so nothing is missed and nothing is taken twice.
package final class HandOff<Item: Sendable>: Sendable {
    private struct State {
        var items: Deque<Item> = []
        var spilled = false
    }

    private let state = Mutex(State())
    private let capacity: Int
    private let wakeup: AsyncStream<Void>.Continuation

    /// - Parameters:
    ///   - capacity: How many items memory holds at most.
    ///   - wakeup: Told each time items arrive (or spill).
    package init(capacity: Int, wakeup: AsyncStream<Void>.Continuation) {
        self.capacity = capacity
        self.wakeup = wakeup
    }

    /// Passes `items` on, or, with no room for them, drops them and marks the hand-off spilled.
    package func append(_ items: some Collection<Item>) {
        guard !items.isEmpty else { return }
        state.withLock { state in
            if state.spilled || state.items.count + items.count > capacity {
                state.spilled = true
                state.items.removeAll()
            } else {
                state.items.append(contentsOf: items)
            }
        }
        wakeup.yield()
    }

    /// Passes one item on (see ``append(_:)``).
    package func append(_ item: Item) { append(CollectionOfOne(item)) }

    /// What the next stage takes at once.
    package enum Taken {
        /// Up to the number asked for, oldest first; empty when nothing waits.
        case items([Item])
        /// Items were dropped: read the file from the last item taken, then take from memory again (items
        /// already read are taken again and must be skipped by their place).
        case spilled
    }

    /// Takes up to `limit` items, oldest first; or ``Taken/spilled`` once after items were dropped.
    package func take(upTo limit: Int) -> Taken {
        state.withLock { state in
            if state.spilled {
                state.spilled = false
                state.items.removeAll()
                return .spilled
            }
            let count = min(limit, state.items.count)
            let taken = Array(state.items.prefix(count))
            state.items.removeFirst(count)
            return .items(taken)
        }
    }
}
