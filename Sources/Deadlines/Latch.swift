import Synchronization

/// A one-shot latch: closed until ``open()`` is called once, open for ever after. Any number of tasks wait for it
/// to open; each wait can also end by the waiting task's cancellation or by a timeout.
///
/// It is the "list of one-shot waiters" pattern written once: a flag, the continuations waiting for it, and the
/// bookkeeping that resumes each of them exactly once (by the opening, its cancellation or its timeout, whichever
/// comes first). Continuations are resumed outside the lock.
///
/// ```swift
/// let ended = Latch()
/// // on some thread, once:
/// ended.open()
/// // in a task:
/// let hasEnded = await ended.wait(timeout: .seconds(2))
/// ```
package final class Latch: Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<Bool, Never>
        /// Ends the wait when its time is up; cancelled when the wait ends otherwise.
        var timer: Task<Void, Never>?
    }

    private struct State {
        var isOpen = false
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Makes a closed latch.
    package init() {}

    /// Whether the latch has been opened.
    package var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Opens the latch and resumes every waiter with `true`. Only the first call does anything.
    /// - Returns: Whether this call opened it.
    @discardableResult
    package func open() -> Bool {
        let waiters: [Waiter]? = state.withLock { state in
            guard !state.isOpen else { return nil }
            state.isOpen = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        guard let waiters else { return false }
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: true)
        }
        return true
    }

    /// Waits until the latch is open.
    ///
    /// Returns at once when it is open already (also in a cancelled task). A wait that ends otherwise leaves
    /// nothing behind: its continuation and its timer are gone.
    /// - Parameter timeout: How long to wait at most; `nil` waits until it opens or the task is cancelled.
    /// - Returns: `true` once the latch is open; `false` when the waiting task was cancelled, or `timeout` passed,
    ///   first.
    package func wait(timeout: Duration? = nil) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate: Bool? = state.withLock { state in
                    if state.isOpen { return true }
                    if Task.isCancelled { return false }
                    state.waiters[id] = Waiter(continuation: continuation, timer: nil)
                    return nil
                }
                if let immediate { return continuation.resume(returning: immediate) }
                guard let timeout else { return }
                // Made once the wait is registered, so that even a timer that fires at once finds it.
                let timer = Task { [weak self] in
                    guard (try? await Task.sleep(for: timeout)) != nil else { return }
                    self?.end(id, returning: false)
                }
                let waiting = state.withLock { state in
                    guard state.waiters[id] != nil else { return false }
                    state.waiters[id]?.timer = timer
                    return true
                }
                if !waiting { timer.cancel() }
            }
        } onCancel: {
            end(id, returning: false)
        }
    }

    /// How many tasks wait (for the tests).
    package var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Ends the wait `id`, if it still waits.
    private func end(_ id: UInt64, returning value: Bool) {
        guard let waiter = state.withLock({ $0.waiters.removeValue(forKey: id) }) else { return }
        waiter.timer?.cancel()
        waiter.continuation.resume(returning: value)
    }
}
