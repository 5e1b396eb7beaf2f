import Dispatch
import PostgresNIO
import Synchronization

extension EventLoopFuture where Value: Sendable {
    /// Blocks this thread — never an event loop's — until the future completes, for at most `timeout`.
    ///
    /// `wait()` has no bound, and a server can leave it waiting for ever: a primary lost in a failover left a store's
    /// connection in `CLOSE-WAIT` with its statement unanswered, and the store waited for good, logging nothing (found
    /// by the failover test, 1 run in 5). Past `timeout` the caller closes the connection and tries again elsewhere.
    /// - Throws: what the future failed with; ``PostgresFailure/NoAnswer`` past `timeout`.
    func wait(atMost timeout: Duration, for what: @autoclosure () -> String) throws -> Value {
        let outcome = Outcome<Value>()
        let done = DispatchSemaphore(value: 0)
        whenComplete { result in
            outcome.result.withLock { $0 = result }
            done.signal()
        }
        let nanoseconds = Int(clamping: timeout.components.seconds) &* 1_000_000_000 &+ Int(timeout.components.attoseconds / 1_000_000_000)
        guard done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success, let result = outcome.result.withLock({ $0 }) else {
            throw PostgresFailure.NoAnswer(what: what(), timeout: timeout)
        }
        return try result.get()
    }
}

/// Where a future's result waits for the thread that blocks on it.
private final class Outcome<Value: Sendable>: Sendable {
    let result = Mutex<Result<Value, any Error>?>(nil)
}
