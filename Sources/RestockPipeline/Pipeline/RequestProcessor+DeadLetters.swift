import Foundation
import Logging
import RestockCore

// Replaying and dropping dead letters (docs/contract.md, "Dead letters"): admin requests taken in order with the others,
// so a replayed request is applied where the admin's request stands in the log. A replay that makes the store fail
// again is contained as any request is: the admin's request is retried alone and then set aside itself, and the dead
// letter stays.
extension RequestProcessor {
    /// Replays or drops one dead letter within the batch being applied, and queues the answer on `P/{store}/admin/replies`.
    func handle(
        _ action: DeadLetterAction, _ request: JournaledRequest, into changes: inout StoreChanges, refreshing mirrors: inout Set<CustomerID>,
        tally: inout BatchTally
    ) {
        let outcome: String
        if changes.deadLettersRemoved.contains(action.id) {
            outcome = "unknown"
        } else if let dead = readDeadLetter(action.id) {
            switch action {
            case .replay:
                // Applied as it came, in the place of the admin's request (its answers are keyed by this place).
                let replayed = JournaledRequest(seq: request.seq, topic: dead.topic, payload: dead.payload, size: dead.size, retained: dead.retained)
                apply(replayed, to: &changes, refreshing: &mirrors, tally: &tally)
                outcome = "replayed"
            case .drop:
                outcome = "dropped"
            }
            changes.deadLettersRemoved.append(action.id)
        } else {
            outcome = "unknown"
        }
        let kind = if case .replay = action { "replay" } else { "drop" }
        logger.notice(
            "dead letter \(outcome == "unknown" ? "not found" : outcome)",
            metadata: [StoreLoggingKeys.seq: "\(action.id)", StoreLoggingKeys.kind: "\(kind)"])
        let answer = DeadLetterOutcome(store: store.id.rawValue, action: kind, deadLetter: action.id, outcome: outcome, at: Timestamp.string(from: clock()))
        changes.publications.append(
            Publication(key: "dead-letter:\(request.seq)", topic: topics.adminReplies, payload: answer.payloadBytes(), retain: false))
    }

    /// The dead letter at `seq`; `nil` when there is none, or the table cannot be read now (logged; the admin may ask
    /// again).
    private func readDeadLetter(_ seq: Int64) -> JournaledRequest? {
        do {
            return try storage.deadLetter(seq)
        } catch {
            logger.error("cannot read the dead-letter table", metadata: [StoreLoggingKeys.error: "\(error)"])
            return nil
        }
    }
}
