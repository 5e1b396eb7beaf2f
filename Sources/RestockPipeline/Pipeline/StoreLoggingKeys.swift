/// The metadata keys of the store's log lines, in one place (as swift-kafka-client's `KafkaLoggingKeys`): every log site
/// of the store uses these, so that a key an operator filters on (docs/operations.md, "Logs") never changes by accident.
package enum StoreLoggingKeys {
    /// The customer a request is from.
    package static let customer = "customer"
    /// What a request asks: `subscribe`, `unsubscribe`, `unsubscribe-all`, `stock`.
    package static let kind = "kind"
    /// A watch's place in line (its signup order).
    package static let position = "position"
    /// A SKU.
    package static let sku = "sku"
    /// An on-hand quantity.
    package static let quantity = "quantity"
    /// How many alerts a stock change raised.
    package static let alerts = "alerts"
    /// A request's number in the request log.
    package static let seq = "seq"
    /// The first and the last request of a range in the request log.
    package static let from = "from", through = "through"
    /// The MQTT topic a message came on or goes to.
    package static let topic = "topic"
    /// An error, as one sentence.
    package static let error = "error"
    /// Why something happened, as the broker or the stage said it.
    package static let reason = "reason"
    /// How many requests the store has journaled but not yet applied.
    package static let lag = "lag"
    /// A stage of the pipeline ("journaling requests", "applying requests").
    package static let stage = "stage"
    /// A file of the data directory, and the free space on its file system.
    package static let file = "file", free = "free"
    /// The broker's URL, the store's topic filter, this store process's instance id, and the release it runs.
    package static let broker = "broker", topics = "topics", instance = "instance", version = "version"
    /// How many watches, SKUs, inventory records and mirrors (restored, or published again).
    package static let watches = "watches", skus = "skus", inventory = "inventory", mirrors = "mirrors"
    /// Whether the broker kept the store's session.
    package static let session = "session"
    /// How long until the next try.
    package static let retryIn = "in"
    /// A restored start: retained topics published again, and retained topics cleared; how long it took, in ms.
    package static let republished = "republished", cleared = "cleared", milliseconds = "ms"
}
