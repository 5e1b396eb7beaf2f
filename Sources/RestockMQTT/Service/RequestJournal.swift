import RestockPipeline
import Logging
import Mosquitto

/// The journaling stage of the store's pipeline: writes each request the store receives into the request log
/// (``RequestLog``), on libmosquitto's network thread, before the callback returns — and so before
/// libmosquitto sends the PUBACK — then passes it on to the applying stage in memory. A request the broker
/// counts as delivered is therefore already on disk; if the store dies first, the broker delivers it again.
///
/// A local SQLite insert is the one blocking call made on that thread, on purpose: it is what makes the
/// acknowledgement truthful. The log is a file of its own, so that insert never waits for a commit of the
/// store's state. Payloads are cut to just over the request limit, so a hostile 1 MiB payload
/// costs 4 KiB on disk and is still refused as too large.
struct RequestJournal: MQTTInboundJournal {
    let database: StoreDatabase
    let topics: RestockTopics
    /// Where the applying stage takes the requests.
    let requests: HandOff<JournaledRequest>
    let logger: Logger

    func record(_ message: MQTTMessage) {
        // The store also reads its own status topic (to see another instance take over): not a request.
        guard topics.request(for: message.topic) != nil else { return }
        let payload = Array(message.payload.prefix(RequestDecoder.maximumPayloadSize + 1))
        do {
            requests.append(try database.journal(topic: message.topic, payload: payload, size: message.payload.count, retained: message.retain))
        } catch {
            // Without the journal the request would be acknowledged and lost: stop before the PUBACK.
            logger.critical("cannot journal a request, stopping so that the broker delivers it again: \(error)")
            fatalError("request journal failed: \(error)")
        }
    }
}
