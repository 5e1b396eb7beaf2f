import Logging
import Mosquitto
import RestockPipeline

/// The journaling stage of the store's pipeline: writes each request the store receives into the request log
/// (``RequestLog``), on libmosquitto's network thread, passes it on to the applying stage in memory, and syncs the
/// log to the disk while it is applied — all before the callback returns, and so before libmosquitto writes the
/// PUBACK. It is the session's one
/// crossing from that thread into the service: one call per burst (``record(batch:number:)``), and one per probe
/// answered, handed to the fence (``confirmed(throughBatch:)``). A request the broker
/// counts as delivered is therefore already on disk; if the store dies first, the broker delivers it again.
///
/// A local SQLite insert and the sync of its write-ahead log are the blocking calls made on that thread, on purpose:
/// they make the acknowledgement truthful. The log is a file of its own, so that insert never waits for a commit of the
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
    /// Whether each batch is synced before it is handed on, rather than while it is applied: for a run after the store
    /// stopped while applying requests. A request that kills the store while it is applied, handed on before its sync,
    /// dies unacknowledged, and the broker delivers it again at each start, where it would kill the store again before
    /// its acknowledgement: synced first, it is acknowledged as it is applied, set aside after its second fault, and
    /// not delivered again (docs/contract.md, "Durability and redelivery").
    var syncsBeforeHandingOn = false
    /// The probe the client unsubscribes from after each batch's acknowledgements (nothing subscribes to it).
    var confirmationProbe: String? { topics.deliveryProbe }

    /// Journals the requests of one read in one transaction (group commit): all of them, or — when the log cannot be
    /// written — none, refused together, so that the broker delivers the whole burst again and none of it is applied
    /// twice. The requests then pass to the applying stage in memory, and are synced to the disk while they are applied;
    /// the acknowledgements are written once the sync returns, and the fence holds what the requests lead to until the
    /// broker answers the probe written after them (``confirmed(throughBatch:)``). A sync that fails stops the store.
    func record(batch messages: [MQTTMessage], number: UInt64) -> [MQTTInboundDisposition] {
        let entries = messages.filter(isRequest).map(Self.entry)
        guard !entries.isEmpty else { return messages.map { _ in .recorded } }
        // Paused or failed: refuse at once (the session is being dropped).
        guard !lifecycle.isPaused(.journal), lifecycle.failure == nil else { return messages.map { _ in .refused } }
        return lifecycle.journalWait.during { record(entries, of: messages, number: number) }
    }

    /// Journals `entries`, the requests of `messages` (one read, numbered `number`), and syncs them.
    private func record(
        _ entries: [(topic: String, payload: [UInt8], size: Int, retained: Bool)], of messages: [MQTTMessage], number: UInt64
    ) -> [MQTTInboundDisposition] {
        do {
            let journaled = try storage.journal(batch: entries)
            if let first = journaled.first, let last = journaled.last {
                mark.journaled(through: last.seq)
                fence.journaled(batch: number, from: first.seq, through: last.seq)
                witnessWakeup?.yield()
            }
            metrics.requestsJournaled.increment(by: journaled.count)
            if syncsBeforeHandingOn { try storage.syncJournal() }
            // Applied while they are synced (docs/architecture.md, "The request log"): what they lead to waits for the
            // fence, which the broker answers only after the acknowledgements, written once the sync has returned.
            requests.append(journaled)
        } catch {
            refuse(because: error)
            return messages.map { _ in .refused }
        }
        do {
            if !syncsBeforeHandingOn { try storage.syncJournal() }
        } catch {
            // Handed on already: the store stops rather than journal the burst again when the broker delivers it again.
            lifecycle.fail(StoreStageError(stage: StoreLifecycle.Stage.journal.rawValue, cause: error))
            return messages.map { _ in .refused }
        }
        return messages.map { _ in .recorded }
    }

    /// The broker answered the probe after batch `number`: what its requests led to may go out. Only handed to the
    /// fence: the network thread's one call for an UNSUBACK.
    func confirmed(throughBatch number: UInt64) {
        fence.confirmed(throughBatch: number)
    }

    /// Whether `message` is a request: on a request topic, and not an empty retained message, which clears a retained
    /// one on the broker and asks nothing (docs/contract.md, "Retain flag"; answered `retained-request` before, found by
    /// an outside trial).
    private func isRequest(_ message: MQTTMessage) -> Bool {
        topics.request(for: message.topic) != nil && !(message.retain && message.payload.isEmpty)
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
