import Synchronization

/// The one owner of an operation (publish, subscribe, unsubscribe) waiting for the broker's answer: made
/// when libmosquitto assigns the operation its message id, finished once, by the acknowledgement, by the lost
/// connection (when libmosquitto forgets the operation) or by the client's shutdown.
final class LibMosquittoAckTicket<Value: Sendable>: Sendable {
    private enum State {
        /// No answer yet, nobody waiting.
        case pending
        /// No answer yet; this continuation waits for it.
        case waiting(CheckedContinuation<Value, any Error>)
        /// The answer.
        case finished(Result<Value, MQTTError>)
    }

    /// The message id libmosquitto gave the operation.
    let mid: Int32
    /// Whether a lost connection ends it: libmosquitto resends QoS 1 and 2 publishes after reconnecting, and
    /// nothing else.
    let failsOnDisconnect: Bool
    private let state = Mutex(State.pending)

    init(mid: Int32, failsOnDisconnect: Bool) {
        self.mid = mid
        self.failsOnDisconnect = failsOnDisconnect
    }

    /// Records the answer and resumes the waiter, if any. Only the first answer counts.
    func finish(_ result: Result<Value, MQTTError>) {
        let waiter: CheckedContinuation<Value, any Error>? = state.withLock { state in
            switch state {
            case .finished: return nil
            case .pending:
                state = .finished(result)
                return nil
            case .waiting(let waiter):
                state = .finished(result)
                return waiter
            }
        }
        waiter?.resume(with: result.mapError { $0 as any Error })
    }

    /// Whether a task waits for the answer.
    var isWaiting: Bool {
        state.withLock { state in
            if case .waiting = state { return true }
            return false
        }
    }

    /// Its answer, once it has come.
    var result: Result<Value, MQTTError>? {
        state.withLock { state in
            if case .finished(let result) = state { return result }
            return nil
        }
    }

    /// Waits for the answer. Cancelling the task ends the wait with `CancellationError` (the operation itself
    /// may still complete at the broker; waiting again gets its answer).
    func value() async throws -> Value {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Value, any Error>) in
                let outcome: Result<Value, any Error>? = state.withLock { state in
                    switch state {
                    case .finished(let result): return result.mapError { $0 as any Error }
                    case .waiting: return .failure(MQTTError.misuse("an acknowledgement is awaited by two tasks at once"))
                    case .pending:
                        if Task.isCancelled { return .failure(CancellationError()) }
                        state = .waiting(waiter)
                        return nil
                    }
                }
                if let outcome { waiter.resume(with: outcome) }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Value, any Error>? = state.withLock { state in
                guard case .waiting(let waiter) = state else { return nil }
                state = .pending
                return waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}

/// The operations waiting for the broker's acknowledgement, by message id. Guarded by the context's lock.
///
/// An owner is registered in the same critical section as the libmosquitto call that assigns the message id
/// (see ``LibMosquittoContext/register(in:failsOnDisconnect:queuedWhileDisconnected:_:)``), and the acknowledgement callback takes
/// the same lock, so an acknowledgement can never come before its owner: one that finds no owner belongs
/// to an operation nobody owns any more (a resubscription, a message sent before `disconnect()`), and is
/// dropped. It is never kept, so a later operation that gets the same id after the ids wrap at 65,535
/// cannot take it.
struct LibMosquittoPendingAcks<Value: Sendable> {
    typealias Ticket = LibMosquittoAckTicket<Value>

    private var owners: [Int32: Ticket] = [:]

    /// Makes the owner of `mid`, just assigned by libmosquitto. Returns it, and the previous owner of the same
    /// id if there still was one (more than 65,535 operations outstanding): that one can no longer be told
    /// apart from the new one and is to be failed.
    mutating func register(_ mid: Int32, failsOnDisconnect: Bool) -> (owner: Ticket, displaced: Ticket?) {
        let owner = Ticket(mid: mid, failsOnDisconnect: failsOnDisconnect)
        return (owner, owners.updateValue(owner, forKey: mid))
    }

    /// The acknowledgement of `mid` came: removes and returns its owner, to finish outside the lock; `nil`
    /// (the acknowledgement is dropped) when nobody owns `mid`.
    mutating func complete(_ mid: Int32) -> Ticket? {
        owners.removeValue(forKey: mid)
    }

    /// Removes the owners that a lost connection ends: QoS 0 publishes, subscribes and unsubscribes, which
    /// libmosquitto does not send again after reconnecting. (QoS 1 and 2 publishes are resent; their owners stay.)
    mutating func takeFailingOnDisconnect() -> [Ticket] {
        let failing = owners.values.filter(\.failsOnDisconnect)
        for owner in failing { owners[owner.mid] = nil }
        return failing
    }

    /// The owner of `mid`, if any.
    func owner(of mid: Int32) -> Ticket? { owners[mid] }

    /// How many operations are waiting.
    var count: Int { owners.count }

    /// Removes every owner, for a client that is shutting down.
    mutating func takeAll() -> [Ticket] {
        defer { owners = [:] }
        return Array(owners.values)
    }
}
