import Dispatch
import Synchronization

/// A value made on another thread, waited for on this one: the restore's work split over two threads (the registry's
/// two tables, ``StoreState``; the state's two halves read at once, in the SQLite storage).
package final class ThreadResult<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let done = DispatchSemaphore(value: 0)

    package init() {}

    /// Hands `made` over; called once, on the other thread.
    package func finish(_ made: Value) {
        value.withLock { $0 = made }
        done.signal()
    }

    /// Waits until the value is handed over, and takes it.
    package func wait() -> Value {
        done.wait()
        return value.withLock { $0.take()! }
    }
}
