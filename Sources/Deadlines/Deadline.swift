/// A wait took longer than its deadline.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    /// What was waited for.
    public let what: String
    /// How long the wait was allowed.
    public let seconds: Double
    /// A timeout of the wait for `what` after `seconds`.
    public init(what: String, seconds: Double) {
        self.what = what
        self.seconds = seconds
    }
    /// `timed out after N s waiting for …`.
    public var description: String { "timed out after \(seconds) s waiting for \(what)" }
}

/// Runs `operation` and fails if it has not finished within `seconds`, cancelling it.
///
/// This is how tests wait on a condition: they await the event itself, and the deadline only bounds
/// the wait so that a broken build fails instead of hanging.
public func withDeadline<T: Sendable>(
    _ seconds: Double, waitingFor what: String = "an event",
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        // Within a billion seconds, so that no value (infinity, NaN, 1e300) can trap converting to a Duration.
        let bounded = seconds.isNaN ? 0 : min(max(seconds, 0), 1e9)
        group.addTask {
            try? await ContinuousClock().sleep(until: .now + .seconds(bounded))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw DeadlineExceeded(what: what, seconds: seconds)
        }
        return value
    }
}

/// Polls `condition` until it holds, or fails after `seconds`. The deadline bounds the whole wait,
/// including a condition that itself awaits (it is cancelled when time is up).
/// For state that offers nothing to await (a file appearing, a process exiting, a retained topic).
public func waitUntil(
    _ what: String, within seconds: Double = 10, pollEvery interval: Duration = .milliseconds(20),
    _ condition: @escaping @Sendable () async throws -> Bool
) async throws {
    try await withDeadline(seconds, waitingFor: what) {
        let clock = ContinuousClock()
        while try await !condition() {
            try await clock.sleep(for: interval)
        }
    }
}
