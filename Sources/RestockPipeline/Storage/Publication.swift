import Foundation

/// A message to publish after the commit. `key` makes it unique in the outbox: an alert's id, or
/// a retained topic (whose newer version replaces an older one not yet sent).
package struct Publication: Sendable, Hashable {
    /// The key of an alert's publication is this prefix and the alert id.
    package static let alertKeyPrefix = "alert:"

    /// What makes it unique in the outbox.
    package var key: String
    /// The topic to publish on (empty for a batch of alerts, whose alerts each have their own).
    package var topic: String
    /// The payload, or the encoded ``AlertBatch``.
    package var payload: [UInt8]
    /// Whether it is published with the retain flag.
    package var retain: Bool
    /// How many alerts it holds when it is an ``AlertBatch``; 0 for a single message.
    package var alertCount = 0
    /// The alerts, when it is a batch made in this process (passed on in memory, not decoded again).
    package var alerts: AlertBatch?
    /// The SKU of the alert or alerts it carries: the store counts the broker's acknowledgements per SKU (reports).
    package var sku: String?

    /// A single message.
    package init(key: String, topic: String, payload: [UInt8], retain: Bool) {
        self.key = key
        self.topic = topic
        self.payload = payload
        self.retain = retain
    }

    /// The alerts of one stock change, as one outbox record.
    package init(batch: AlertBatch) {
        let first = batch.alert(0).id
        self.init(key: Self.alertKeyPrefix + "\(first)+\(batch.count)", topic: "", payload: batch.encoded(), retain: false)
        self.alertCount = batch.count
        self.alerts = batch
        self.sku = batch.sku.rawValue
    }

    /// Whether it carries an alert.
    package var isAlert: Bool { key.hasPrefix(Self.alertKeyPrefix) }
}


/// A message as committed to the outbox, with its place there.
package struct CommittedPublication: Sendable, Hashable {
    /// Its place in the outbox.
    package let seq: Int64
    /// The message.
    package let publication: Publication
    /// The first alerts of its batch, made ready to send on the pipeline's thread right after the commit
    /// (``readied(topics:)``), while the delivery fence waits for the broker's answer: the publisher sends them as they
    /// are once it lets go, instead of building them then, on a thread just woken (docs/benchmarks.md, "B4 after the
    /// broker's answer"). Not part of the value: the same message, whether readied or not.
    package private(set) var firstAlerts: [AlertMessage] = []

    /// How many alerts of a batch ``readied(topics:)`` makes ready: the first to go out. Few, so that a batch held in
    /// memory (up to the hand-off's 100,000 while the publisher is behind) costs little more than its record: each one
    /// ready is about 300 bytes.
    package static let readiedAlerts = 8

    /// `publication`, committed at place `seq`.
    package init(seq: Int64, publication: Publication) {
        self.seq = seq
        self.publication = publication
    }

    /// This message with the first ``readiedAlerts`` alerts of its batch made ready to send, on `topics`.
    package func readied(topics: RestockTopics) -> CommittedPublication {
        guard let alerts = publication.alerts, firstAlerts.isEmpty else { return self }
        var readied = self
        readied.firstAlerts = (0..<min(alerts.count, Self.readiedAlerts)).map { alerts.message($0, topics: topics) }
        return readied
    }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.seq == rhs.seq && lhs.publication == rhs.publication }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(seq)
        hasher.combine(publication)
    }
}

/// A message waiting in the outbox, or a batch of alerts (`alertCount` > 0: the payload is an ``AlertBatch``).
package struct PendingPublication: Sendable, Hashable {
    /// Its place in the outbox.
    package let seq: Int64
    /// The topic to publish on (empty for a batch).
    package let topic: String
    /// The payload, or the encoded ``AlertBatch``.
    package let payload: [UInt8]
    /// Whether it is published with the retain flag.
    package let retain: Bool
    /// How many alerts the batch holds; 0 for a single message.
    package let alertCount: Int
    /// How many of the batch's alerts, from the first, are acknowledged.
    package let sent: Int

    /// The message at place `seq`, of which `sent` alerts of `alertCount` are acknowledged.
    package init(seq: Int64, topic: String, payload: [UInt8], retain: Bool, alertCount: Int, sent: Int) {
        self.seq = seq
        self.topic = topic
        self.payload = payload
        self.retain = retain
        self.alertCount = alertCount
        self.sent = sent
    }
}

