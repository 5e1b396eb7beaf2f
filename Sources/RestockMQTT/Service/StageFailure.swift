import RestockPipeline
import Synchronization

/// The first stage of a running store that failed — applying requests, or publishing the outbox — and its real
/// error. The service then stops (after draining what is committed) and throws it, so `restock serve` exits
/// non-zero naming it instead of running on without that stage.
final class StageFailure: Sendable {
    private let first = Mutex<(stage: String, error: any Error)?>(nil)
    /// How many of the two pipeline stages have ended (however they ended).
    private let ended = Atomic<Int>(0)

    /// Keeps the first failure; later ones are consequences.
    func record(_ stage: String, _ error: any Error) { first.withLock { $0 = $0 ?? (stage, error) } }

    /// The service's error for the first failure, if one happened.
    var error: RestockMQTTError? {
        first.withLock { failure in failure.map { RestockMQTTError.stageFailed(stage: $0.stage, reason: "\($0.error)") } }
    }

    /// A pipeline stage (applying, publishing) ended.
    func stageEnded() { ended.add(1, ordering: .releasing) }

    /// Whether both pipeline stages have ended: nothing more will be applied or published.
    var pipelineEnded: Bool { ended.load(ordering: .acquiring) >= 2 }
}
