import Synchronization

/// The clock a store measures time by, handed to each part that does (``StoreTiming``'s `clock`): the system's
/// monotonic clock (``continuous``), or one a test moves by hand (``manual(_:)``), so that a minute of a paused store
/// or a lapsed heartbeat passes in no time.
///
/// Its instants are `ContinuousClock`'s: a manual clock starts at the continuous clock's now and moves only when told.
package struct ServiceClock: Clock {
    package typealias Instant = ContinuousClock.Instant

    private let time: ManualTime?

    /// The system's monotonic clock.
    package static let continuous = ServiceClock(time: nil)

    /// A clock that reads `time`, which a test advances (``ManualTime/advance(by:)``).
    package static func manual(_ time: ManualTime) -> ServiceClock { ServiceClock(time: time) }

    package var now: Instant { time?.now ?? .now }

    package var minimumResolution: Duration { time == nil ? ContinuousClock().minimumResolution : .zero }

    /// Sleeps until `deadline`: on the system's clock, or until a test has moved the manual one there.
    package func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        guard let time else { return try await ContinuousClock().sleep(until: deadline, tolerance: tolerance) }
        try await time.sleep(until: deadline)
    }
}

/// The time of a manual ``ServiceClock``: it stands still until ``advance(by:)``, which wakes every sleeper whose
/// deadline it reaches.
package final class ManualTime: Sendable {
    private struct State {
        var now: ContinuousClock.Instant
        var sleepers: [Int: (deadline: ContinuousClock.Instant, wake: CheckedContinuation<Void, any Error>)] = [:]
        var nextSleeper = 0
    }

    private let state: Mutex<State>

    /// Time that starts at the continuous clock's now.
    package init() { state = Mutex(State(now: .now)) }

    /// Where the time stands.
    package var now: ContinuousClock.Instant { state.withLock { $0.now } }

    /// Moves the time on by `duration`, waking every sleeper whose deadline it reaches.
    package func advance(by duration: Duration) {
        let woken = state.withLock { state in
            state.now += duration
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for number in due.keys { state.sleepers.removeValue(forKey: number) }
            return due.values.map(\.wake)
        }
        for wake in woken { wake.resume() }
    }

    /// Returns once the time reaches `deadline`; throws `CancellationError` when cancelled first.
    func sleep(until deadline: ContinuousClock.Instant) async throws {
        let number = state.withLock { state in
            defer { state.nextSleeper += 1 }
            return state.nextSleeper
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (wake: CheckedContinuation<Void, any Error>) in
                let now: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[number] = (deadline, wake)
                    return nil
                }
                if let now { wake.resume(with: now) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: number) }?.wake.resume(throwing: CancellationError())
        }
    }
}
