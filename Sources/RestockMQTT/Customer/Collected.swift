import Synchronization

/// Values gathered by one task and read by another, and a wait for them to stop coming.
final class Collected<T: Sendable>: Sendable {
    private let storage = Mutex<[T]>([])
    func append(_ value: T) { storage.withLock { $0.append(value) } }
    var count: Int { storage.withLock { $0.count } }
    var values: [T] { storage.withLock { $0 } }

    /// Returns once `quiet` has passed with no new value (`first` before the first one): what a broker sends right
    /// after an answer (retained messages after a SUBACK, a session's queue after a CONNACK) is over.
    func waitForQuiet(_ quiet: Duration, first: Duration) async throws {
        let step = Duration.milliseconds(50)
        var seen = 0, silence = Duration.zero
        while silence < (seen == 0 ? first : quiet) {
            try await Task.sleep(for: step)
            let now = count
            if now != seen { (seen, silence) = (now, .zero) } else { silence += step }
        }
    }
}
