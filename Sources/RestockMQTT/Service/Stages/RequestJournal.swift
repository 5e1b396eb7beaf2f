import Logging
import Mosquitto
import RestockPipeline

/// The journaling stage of the store's pipeline: writes each request the store receives into the request log
/// (``RequestLog``), on libmosquitto's network thread, before the callback returns — and so before
/// libmosquitto writes the PUBACK — then passes it on to the applying stage in memory. A request the broker
/// counts as delivered is therefore already on disk; if the store dies first, the broker delivers it again.
///
/// A local SQLite insert is the one blocking call made on that thread, on purpose: it is what makes the
/// acknowledgement truthful. The log is a file of its own, so that insert never waits for a commit of the
/// store's state. Payloads are cut to just over the request limit, so a hostile 1 MiB payload
/// costs 4 KiB on disk and is still refused as too large.
///
/// When the log cannot be written (a full disk: docs/operations.md), the request is refused: the client drops the
/// session before acknowledging it, so it waits on the broker with every later one, and the journal pauses
/// (``StoreLifecycle``) until the session watch finds the log writable again.
struct RequestJournal: MQTTInboundJournal {
    let database: StoreDatabase
    let topics: RestockTopics
    /// Where the applying stage takes the requests.
    let requests: HandOff<JournaledRequest>
    let lifecycle: StoreLifecycle

    func record(_ message: MQTTMessage) -> MQTTInboundDisposition {
        guard topics.request(for: message.topic) != nil else { return .recorded }
        // Paused or failed: refuse at once (the session is being dropped; later messages of the same read still come).
        guard !lifecycle.isPaused(.journal), lifecycle.failure == nil else { return .refused }
        let payload = Array(message.payload.prefix(RequestDecoder.maximumPayloadSize + 1))
        do {
            requests.append(try database.journal(topic: message.topic, payload: payload, size: message.payload.count, retained: message.retain))
            return .recorded
        } catch let error as StorageError where error.isPassable {
            lifecycle.pause(.journal, because: error)
            return .refused
        } catch {
            // The log is damaged: nothing more can be journaled. Refused, so the broker keeps it; the store stops.
            lifecycle.fail(StoreStageError(stage: StoreLifecycle.Stage.journal.rawValue, cause: error))
            return .refused
        }
    }
}
