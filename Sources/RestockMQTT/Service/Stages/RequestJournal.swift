import Logging
import Mosquitto
import RestockPipeline

/// The journaling stage of the store's pipeline: writes each request the store receives into the request log
/// (``RequestLog``), on libmosquitto's network thread, before the callback returns — and so before
/// libmosquitto writes the PUBACK — then passes it on to the applying stage in memory. It is the session's one
/// crossing from that thread into the service: one call per burst (``record(batch:number:)``), and one per probe
/// answered, handed to the fence (``confirmed(throughBatch:)``). A request the broker
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
    let storage: any StoreStorage
    let topics: RestockTopics
    /// Where the applying stage takes the requests.
    let requests: HandOff<JournaledRequest>
    let lifecycle: StoreLifecycle
    /// How far it has journaled, for the lag watch.
    let mark: JournalMark
    let metrics: StoreMetrics
    /// Told of each batch journaled, and of the broker's answer to the probe that follows it.
    let fence: DeliveryFence
    /// Woken after each batch, where the backend keeps a journal witness (``JournalWitnessPublisher``).
    let witnessWakeup: AsyncStream<Void>.Continuation?
    /// The probe the client unsubscribes from after each batch's acknowledgements (nothing subscribes to it).
    var confirmationProbe: String? { topics.deliveryProbe }

    /// Journals the requests of one read in one transaction (group commit): all of them, or — when the log cannot be
    /// written — none, refused together, so that the broker delivers the whole burst again and none of it is applied
    /// twice. The requests then pass to the applying stage in memory; the fence holds what they lead to until the
    /// broker answers the probe written after their acknowledgements (``confirmed(throughBatch:)``).
    func record(batch messages: [MQTTMessage], number: UInt64) -> [MQTTInboundDisposition] {
        let entries = messages.filter { topics.request(for: $0.topic) != nil }.map(Self.entry)
        guard !entries.isEmpty else { return messages.map { _ in .recorded } }
        // Paused or failed: refuse at once (the session is being dropped).
        guard !lifecycle.isPaused(.journal), lifecycle.failure == nil else { return messages.map { _ in .refused } }
        do {
            let journaled = try storage.journal(batch: entries)
            if let first = journaled.first, let last = journaled.last {
                mark.journaled(through: last.seq)
                fence.journaled(batch: number, from: first.seq, through: last.seq)
                witnessWakeup?.yield()
            }
            metrics.requestsJournaled.increment(by: journaled.count)
            requests.append(journaled)
            return messages.map { _ in .recorded }
        } catch {
            refuse(because: error)
            return messages.map { _ in .refused }
        }
    }

    /// The broker answered the probe after batch `number`: what its requests led to may go out. Only handed to the
    /// fence: the network thread's one call for an UNSUBACK.
    func confirmed(throughBatch number: UInt64) {
        fence.confirmed(throughBatch: number)
    }

    /// A request as the log keeps it: the payload cut to just over the limit (a 1 MiB payload costs 4 KiB on disk and
    /// is still refused as too large), with its size as received.
    private static func entry(_ message: MQTTMessage) -> (topic: String, payload: [UInt8], size: Int, retained: Bool) {
        (message.topic, Array(message.payload.prefix(RequestDecoder.maximumPayloadSize + 1)), message.payload.count, message.retain)
    }

    /// The log could not be written: a full disk (or another error that may pass) pauses the journal; anything else
    /// means the log is damaged, and the store stops. Either way the burst stays with the broker.
    private func refuse(because error: any Error) {
        if let error = error as? StorageError, error.isRetriable {
            lifecycle.pause(.journal, because: error)
        } else {
            lifecycle.fail(StoreStageError(stage: StoreLifecycle.Stage.journal.rawValue, cause: error))
        }
    }
}
