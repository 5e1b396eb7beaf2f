import DequeModule
import Synchronization

/// Holds what requests led to until the broker has confirmed that it took their acknowledgements from this store,
/// on a connection that still held the store's session (docs/contract.md, "One store per store id").
///
/// Why: a store cut off from the broker (a partition, a freeze) may read requests the broker sent before it gave
/// the session to a newer instance. Their acknowledgements then never reach the broker, which delivers the same
/// requests again to the newer instance. Applied by both, their messages — alerts, mirrors, inventory — would go
/// out twice, and the old store's could overwrite the newer one's retained topics. So the session's client writes a
/// probe after the acknowledgements of each batch (an UNSUBSCRIBE the broker answers only on a live session:
/// ``Mosquitto/MQTTInboundJournal/confirmationProbe``); what the batch's requests led to is committed at once but
/// passed to the publisher only once the probe is answered — or once the store, after losing its session, has
/// decided that no newer instance took it (``releaseAll()``). A store that was taken over sends none of it.
///
/// The probe's round trip runs while the requests are applied and committed, so it adds little to the way of a
/// request in the common case.
///
/// Threads: the journal calls ``journaled(batch:from:through:)`` and the client ``confirmed(throughBatch:)`` on the
/// session's network thread; the applying stage calls ``pass(_:through:)`` on the pipeline's thread; the publisher
/// reads ``releasedThrough`` there too.
package final class DeliveryFence: Sendable {
    private struct State {
        /// Requests up to this one (in the request log) are confirmed delivered to this store.
        var confirmedThrough: Int64
        /// Batches journaled and not yet confirmed: their number, and the last request journaled with them.
        var unconfirmed: Deque<(batch: UInt64, through: Int64)> = []
        /// Messages committed and not passed on: the last request they follow from, and the messages.
        var held: Deque<(through: Int64, messages: [CommittedPublication])> = []
        /// The last outbox place passed on to the publisher (or committed before this start).
        var releasedThrough: Int64
        /// The last request journaled.
        var journaledThrough: Int64
    }

    private let state: Mutex<State>
    private let committed: HandOff<CommittedPublication>

    /// - Parameters:
    ///   - outboxThrough: The last place in the outbox at start: those messages are free to go.
    ///   - committed: Where messages are passed on to the publisher.
    package init(outboxThrough: Int64, committed: HandOff<CommittedPublication>) {
        // Until this run journals a request, every request applied was journaled by an earlier run: its delivery is
        // not in doubt.
        self.state = Mutex(State(confirmedThrough: .max, releasedThrough: outboxThrough, journaledThrough: 0))
        self.committed = committed
    }

    /// The journal recorded batch `batch` of the session's client: requests `from` through `through` of the log.
    package func journaled(batch: UInt64, from: Int64, through: Int64) {
        state.withLock { state in
            // The first batch of this run: the requests before it came from earlier runs.
            if state.confirmedThrough == .max { state.confirmedThrough = from - 1 }
            state.journaledThrough = max(state.journaledThrough, through)
            state.unconfirmed.append((batch, through))
        }
    }

    /// The broker answered the probe after batch `batch`: its requests, and every earlier one, were delivered to this
    /// store alone. What they led to goes on.
    package func confirmed(throughBatch batch: UInt64) {
        state.withLock { state in
            while let first = state.unconfirmed.first, first.batch <= batch {
                state.confirmedThrough = max(state.confirmedThrough, first.through)
                state.unconfirmed.removeFirst()
            }
            release(&state)
        }
    }

    /// The store lost its session and found that no newer instance took it: every request journaled so far is its own
    /// (a request whose acknowledgement was lost comes again, and is applied again: docs/contract.md, "Durability and
    /// redelivery"). Everything held goes on.
    package func releaseAll() {
        state.withLock { state in
            if state.confirmedThrough != .max { state.confirmedThrough = max(state.confirmedThrough, state.journaledThrough) }
            state.unconfirmed.removeAll()
            release(&state)
        }
    }

    /// Passes the messages of a commit on to the publisher, or holds them while a request they may follow from is not
    /// confirmed yet. `through` is the last request applied when they were committed.
    package func pass(_ messages: [CommittedPublication], through: Int64) {
        guard !messages.isEmpty else { return }
        state.withLock { state in
            state.held.append((through, messages))
            release(&state)
        }
    }

    /// The last outbox place the publisher may send: later places are held (the publisher reads the outbox only up to
    /// here when it catches up from the file).
    package var releasedThrough: Int64 { state.withLock { $0.releasedThrough } }

    /// How many messages are held now.
    package var heldCount: Int { state.withLock { $0.held.reduce(0) { $0 + $1.messages.count } } }

    /// Whether a request journaled is not confirmed yet.
    package var isWaiting: Bool { state.withLock { $0.confirmedThrough != .max && $0.confirmedThrough < $0.journaledThrough } }

    /// Passes on, in order, what is held up to the confirmed requests; under the lock, so that passes stay in order.
    private func release(_ state: inout State) {
        while let first = state.held.first, first.through <= state.confirmedThrough {
            state.held.removeFirst()
            if let last = first.messages.last { state.releasedThrough = max(state.releasedThrough, last.seq) }
            committed.append(first.messages)
        }
    }
}
