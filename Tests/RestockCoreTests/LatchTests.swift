import Deadlines
import Testing

/// The one-shot waiter list of the network thread's end and of the store's shutdown: every waiter is resumed
/// exactly once, by the opening, its task's cancellation or its timeout, and leaves nothing behind.
@Suite("Latch", .timeLimit(.minutes(3)))
struct LatchTests {
    @Test("every waiter is resumed with true when it opens; only the first open() counts")
    func opensForAll() async throws {
        let latch = Latch()
        let waits = (0..<50).map { _ in Task { await latch.wait() } }
        try await waitUntil("50 waiters") { latch.waiterCount == 50 }
        #expect(!latch.isOpen)
        #expect(latch.open())
        #expect(!latch.open(), "a second open() does nothing")
        for wait in waits { #expect(await wait.value) }
        #expect(latch.waiterCount == 0)
    }

    @Test("a wait on an open latch returns true at once, even in a cancelled task")
    func alreadyOpen() async {
        let latch = Latch()
        latch.open()
        #expect(await latch.wait())
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await latch.wait(timeout: .seconds(60))
        }
        #expect(await cancelled.value)
    }

    @Test("cancelling a waiting task ends its wait with false and removes it; the others still wait")
    func cancelled() async throws {
        let latch = Latch()
        let cancelledWait = Task { await latch.wait() }
        let otherWait = Task { await latch.wait() }
        try await waitUntil("two waiters") { latch.waiterCount == 2 }
        cancelledWait.cancel()
        #expect(await cancelledWait.value == false)
        #expect(latch.waiterCount == 1)
        latch.open()
        #expect(await otherWait.value)
    }

    @Test("a task cancelled before it waits gets false without waiting")
    func cancelledBeforeWaiting() async {
        let latch = Latch()
        let wait = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await latch.wait()
        }
        #expect(await wait.value == false)
        #expect(latch.waiterCount == 0)
    }

    @Test("a timeout ends the wait with false and removes it; opening later resumes nobody twice")
    func timeout() async throws {
        let latch = Latch()
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await latch.wait(timeout: .milliseconds(50)) == false)
        #expect(clock.now - start >= .milliseconds(50))
        #expect(latch.waiterCount == 0)
        latch.open()
        #expect(await latch.wait(timeout: .milliseconds(50)))
    }

    @Test("opening before a long timeout resumes the wait at once")
    func opensBeforeTimeout() async throws {
        let latch = Latch()
        let wait = Task { await latch.wait(timeout: .seconds(3600)) }
        try await waitUntil("the waiter") { latch.waiterCount == 1 }
        let clock = ContinuousClock()
        let start = clock.now
        latch.open()
        #expect(await wait.value)
        // Far below the hour: 5.2 s seen with the whole suite's CPU-bound tests holding both cores' worth of the pool.
        #expect(clock.now - start < .seconds(60))
    }

    @Test("opening, cancelling and timing out at the same time resume each waiter exactly once")
    func races() async {
        for _ in 0..<200 {
            let latch = Latch()
            let waits = (0..<8).map { index in
                Task { await latch.wait(timeout: index.isMultiple(of: 2) ? .microseconds(Int64(index * 50)) : nil) }
            }
            waits[1].cancel()
            waits[3].cancel()
            latch.open()
            for wait in waits { _ = await wait.value }  // a continuation resumed twice would trap; none left hanging
            #expect(latch.waiterCount == 0)
        }
    }
}
