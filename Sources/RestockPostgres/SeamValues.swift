import Foundation
import RestockPipeline

/// Values of the storage seam that RestockPipeline makes only inside its module — their memberwise initializers are
/// internal, and nothing `package` makes them from their fields — but that every backend has to return:
/// ``PendingPublication``, ``CommittedPublication``, ``StoreLease/Holder`` and ``SchemaVersion``.
///
/// A stopgap until the seam gives each a `package init`: each is made as a struct of this file with the same stored
/// properties in the same order (the same layout, in one package built without library evolution), reinterpreted, and
/// every field read back and compared, so that a change of the seam's type stops the process at its first use instead
/// of returning a wrong value. The differential test against SQLite reads every one of them.
enum SeamValues {
    private struct Pending {
        let seq: Int64
        let topic: String
        let payload: [UInt8]
        let retain: Bool
        let alertCount: Int
        let sent: Int
    }

    private struct Committed {
        let seq: Int64
        let publication: Publication
    }

    private struct Holder {
        var epoch: Int64
        var owner: String
        var renewals: Int64
        var renewedAt: Date
        var holdsLock: Bool
    }

    private struct Version {
        let path: String
        let from: Int
        let to: Int
    }

    /// A message waiting in the outbox.
    static func pending(seq: Int64, topic: String, payload: [UInt8], retain: Bool, alertCount: Int, sent: Int) -> PendingPublication {
        let value = cast(Pending(seq: seq, topic: topic, payload: payload, retain: retain, alertCount: alertCount, sent: sent), to: PendingPublication.self)
        precondition(
            value.seq == seq && value.topic == topic && value.payload == payload && value.retain == retain
                && value.alertCount == alertCount && value.sent == sent, "PendingPublication's stored properties changed: update SeamValues")
        return value
    }

    /// A message as committed, at its place.
    static func committed(seq: Int64, publication: Publication) -> CommittedPublication {
        let value = cast(Committed(seq: seq, publication: publication), to: CommittedPublication.self)
        precondition(value.seq == seq && value.publication == publication, "CommittedPublication's stored properties changed: update SeamValues")
        return value
    }

    /// A lease as ``StoreLease/Holder`` describes it.
    static func holder(epoch: Int64, owner: String, renewals: Int64, renewedAt: Date, holdsLock: Bool) -> StoreLease.Holder {
        let value = cast(Holder(epoch: epoch, owner: owner, renewals: renewals, renewedAt: renewedAt, holdsLock: holdsLock), to: StoreLease.Holder.self)
        precondition(
            value.epoch == epoch && value.owner == owner && value.renewals == renewals && value.renewedAt == renewedAt
                && value.holdsLock == holdsLock, "StoreLease.Holder's stored properties changed: update SeamValues")
        return value
    }

    /// A migration of the schema of `path` from version `from` to `to`.
    static func schemaVersion(path: String, from: Int, to: Int) -> SchemaVersion {
        let value = cast(Version(path: path, from: from, to: to), to: SchemaVersion.self)
        precondition(value.path == path && value.from == from && value.to == to, "SchemaVersion's stored properties changed: update SeamValues")
        return value
    }

    private static func cast<From, To>(_ value: From, to type: To.Type) -> To {
        precondition(
            MemoryLayout<From>.size == MemoryLayout<To>.size && MemoryLayout<From>.alignment == MemoryLayout<To>.alignment
                && MemoryLayout<From>.stride == MemoryLayout<To>.stride, "\(To.self)'s layout changed: update SeamValues")
        return unsafeBitCast(value, to: To.self)
    }
}
