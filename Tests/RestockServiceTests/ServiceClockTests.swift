import Deadlines
import Foundation
import Logging
import RestockPipeline
import Testing

@testable import RestockMQTT

/// The store measures time by the clock its timing hands it (``StoreTiming/clock``): a manual one moves only when a
/// test moves it, so that what takes a minute of the contract's time is tested in none.
@Suite("The store's clock")
struct ServiceClockTests {
    static let diskFull = StorageError(.write, "/data/store.sqlite", cause: POSIXError(.ENOSPC))

    @Test("a pause is reported again, with its length, once a minute has passed on the store's clock, and its end names how long it lasted")
    func pauseReportedByTheClock() {
        let time = ManualTime()
        var timing = StoreTiming.contract
        timing.clock = .manual(time)
        let log = LogCapture()
        let lifecycle = StoreLifecycle(logger: Logger(label: "test") { _ in log }, timing: timing)
        lifecycle.pause(.journal, because: Self.diskFull)
        time.advance(by: .seconds(59))
        lifecycle.pause(.journal, because: Self.diskFull)
        #expect(!log.text.contains("still paused"), "\(log.text)")
        time.advance(by: .seconds(2))
        lifecycle.pause(.journal, because: Self.diskFull)
        #expect(log.text.contains("still paused journaling requests after 61 s"), "\(log.text)")
        time.advance(by: .seconds(4))
        lifecycle.resume(.journal)
        #expect(log.text.contains("resumed journaling requests after 65 s"), "\(log.text)")
    }

    @Test("a sleep on a manual clock ends when the time is moved to its deadline, not before, and a cancelled one at once")
    func manualSleep() async throws {
        let time = ManualTime()
        let clock = ServiceClock.manual(time)
        let deadline = clock.now + .seconds(10)
        let woke = Flag()
        let sleeper = Task {
            try await clock.sleep(until: deadline)
            woke.raise()
        }
        defer { sleeper.cancel() }
        time.advance(by: .seconds(9))
        // A sleep due now ends at once; the first, due later, has not ended.
        try await clock.sleep(until: clock.now)
        #expect(!woke.isRaised)
        time.advance(by: .seconds(1))
        try await withDeadline(10, waitingFor: "the sleep to end once its deadline came") {
            while !woke.isRaised { try Task.checkCancellation(); await Task.yield() }
        }
        let cancelled = Task { try await clock.sleep(for: .seconds(1_000)) }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(clock.now - ServiceClock.manual(time).now == .zero)
    }
}
