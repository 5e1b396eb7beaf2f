/// The operations waiting for the broker's acknowledgement, by message id.
///
/// libmosquitto hands back a message id when an operation is queued and reports the acknowledgement on
/// its network thread, which may happen before the caller has registered its continuation. So an
/// acknowledgement with no waiter is kept until the waiter comes; an abandoned (cancelled) waiter's
/// acknowledgement is dropped. Guarded by the context's lock.
struct LibMosquittoPendingAcks<Value: Sendable> {
    typealias Waiter = CheckedContinuation<Value, any Error>

    private var waiters: [Int32: (waiter: Waiter, failsOnDisconnect: Bool)] = [:]
    private var early: [Int32: Result<Value, MQTTError>] = [:]
    private var abandoned: Set<Int32> = []

    /// What became of a waiter handed to ``wait(for:with:failsOnDisconnect:)``.
    enum Registration {
        /// Registered: it will be resumed when the acknowledgement comes.
        case waiting
        /// The acknowledgement had already come: resume the waiter with this.
        case acknowledged(Result<Value, MQTTError>)
        /// The wait was cancelled before the waiter came: resume it with `CancellationError`.
        case cancelled
    }

    /// Registers `waiter` for `mid`, unless the acknowledgement already came or the wait was cancelled.
    mutating func wait(for mid: Int32, with waiter: Waiter, failsOnDisconnect: Bool = false) -> Registration {
        if let result = early.removeValue(forKey: mid) { return .acknowledged(result) }
        // Cancelled first: the acknowledgement, whenever it comes, is dropped (mid stays abandoned).
        if abandoned.contains(mid) { return .cancelled }
        waiters[mid] = (waiter, failsOnDisconnect)
        return .waiting
    }

    /// Records the acknowledgement of `mid`; returns the waiter to resume, if one is registered.
    mutating func complete(_ mid: Int32, with result: Result<Value, MQTTError>) -> Waiter? {
        if let entry = waiters.removeValue(forKey: mid) { return entry.waiter }
        if abandoned.remove(mid) == nil { early[mid] = result }
        return nil
    }

    /// Forgets the waiter of `mid` (its task was cancelled): a later acknowledgement is dropped. When the
    /// acknowledgement has already come, it stays for the waiter: the operation did complete.
    mutating func abandon(_ mid: Int32) -> Waiter? {
        guard let entry = waiters.removeValue(forKey: mid) else {
            if early[mid] == nil { abandoned.insert(mid) }
            return nil
        }
        abandoned.insert(mid)
        return entry.waiter
    }

    /// Removes the waiters that a lost connection fails: QoS 0 publishes, and subscribes and unsubscribes,
    /// which libmosquitto does not send again after reconnecting. (QoS 1 and 2 publishes are resent.)
    mutating func takeFailingOnDisconnect() -> [Waiter] {
        let failing = waiters.filter { $0.value.failsOnDisconnect }
        for mid in failing.keys { waiters[mid] = nil }
        return failing.values.map(\.waiter)
    }

    /// Whether a waiter is registered for `mid`.
    func isWaiting(_ mid: Int32) -> Bool { waiters[mid] != nil }

    /// Removes every waiter, for a client that is shutting down.
    mutating func takeAll() -> [Waiter] {
        defer {
            waiters = [:]
            early = [:]
            abandoned = []
        }
        return waiters.values.map(\.waiter)
    }
}
