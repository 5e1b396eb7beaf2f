import Foundation

/// A request as journaled: its place in the request log, topic and payload.
package struct JournaledRequest: Sendable, Hashable {
    /// Its place in the request log.
    package let seq: Int64
    /// The topic it came on.
    package let topic: String
    /// The payload, or its first bytes when it was larger than any request may be.
    package let payload: [UInt8]
    /// The payload's size as received.
    package let size: Int
    /// Whether it came with the retain flag (a retained request is never applied).
    package let retained: Bool

    /// A request as journaled; `size` is the payload's size as received, at least `payload.count`.
    package init(seq: Int64, topic: String, payload: [UInt8], size: Int? = nil, retained: Bool = false) {
        self.seq = seq
        self.topic = topic
        self.payload = payload
        // Rows journaled before sizes were kept say 0.
        self.size = max(size ?? 0, payload.count)
        self.retained = retained
    }
}


/// The requests the store began to apply in one batch, recorded before it applied them: if the process died
/// while applying them, the next start finds an attempt that reaches past the last request applied.
///
/// Crash containment: after such a death the requests of the batch are suspects, and each is applied on its
/// own (`suspectsThrough` says up to where). A suspect that kills the store again, applied alone, is set aside.
package struct Attempt: Sendable, Hashable {
    /// The first and last request of the batch (the same when one is applied alone).
    /// The first request of the batch.
    package var first: Int64
    /// The last request of the batch.
    package var last: Int64
    /// Requests up to this one are applied one at a time: the store died while applying a batch that held them.
    package var suspectsThrough: Int64

    /// An attempt at the requests `first` through `last`, those up to `suspectsThrough` applied one at a time.
    package init(first: Int64, last: Int64, suspectsThrough: Int64) {
        self.first = first
        self.last = last
        self.suspectsThrough = suspectsThrough
    }

    /// Whether this is one suspect applied alone.
    var isSuspectAlone: Bool { first == last && first <= suspectsThrough }
}
