import Foundation
import GRDB

/// A table row that holds one journaled request, with the five columns the request log's `request`, the earlier
/// version's `inbox` and `deadLetter` share.
protocol JournaledRequestRow {
    var seq: Int64 { get }
    var topic: String { get }
    var payload: Data { get }
    /// The payload's size as received.
    var size: Int { get }
    var retained: Bool { get }
}

extension JournaledRequestRow {
    /// The request as it was journaled.
    var request: JournaledRequest {
        JournaledRequest(seq: seq, topic: topic, payload: Array(payload), size: size, retained: retained)
    }
}

/// The columns of a ``JournaledRequestRow``'s table.
enum JournaledRequestColumns {
    static let seq = Column("seq")
    static let topic = Column("topic")
    static let payload = Column("payload")
    static let size = Column("size")
    static let retained = Column("retained")
}
