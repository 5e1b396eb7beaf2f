import Foundation
import RestockCore

/// The MQTT client ids of the persistent sessions (docs/contract.md, "Sessions and client ids"), in the namespace of
/// the topic prefix `P` (`restock` by default): stores of one id under two prefixes are two stores, and must not take
/// each other's sessions (found by the outside trial: they fought over `restock:apple` and lost acknowledged requests).
///
/// Store and customer ids, and prefixes, never contain `:`, so each id in the `P:` namespace names exactly one
/// session and one user. With the shipped broker configuration, the `restock_clientid` plugin
/// (deploy/mosquitto/clientid-plugin) lets only that user connect with it: `restock:{store}` is the user
/// `store-{store}`, `restock:{store}:{customer}` the user `{customer}`.
///
/// An identifier's `.` is written `~` in a client id (`restock:apple:j~doe` for the customer `j.doe`): NATS refuses a
/// `.` in a client id, and no identifier holds a `~`, so the ids of identifiers without a `.` are those of earlier
/// releases and no two identifiers share one (docs/contract.md, "Sessions and client ids"; ``legacyListening(_:at:prefix:)``
/// names a dotted customer's session of before).
public enum SessionClientIDs {
    /// The store's persistent session: `P:{store}`.
    public static func store(_ store: StoreID, prefix: String = RestockTopics.defaultPrefix) -> String { "\(prefix):\(part(store.rawValue))" }

    /// A store instance's publishing connection, with a clean session: `P:{store}:@{instance}`. No identifier
    /// starts with `@`, so it is never a customer's; the shipped plugin keeps it for the user `store-{store}`.
    public static func publisher(of store: StoreID, instance: String, prefix: String = RestockTopics.defaultPrefix) -> String {
        "\(prefix):\(part(store.rawValue)):@\(instance)"
    }

    /// A customer's persistent listening session: `P:{store}:{customer}`.
    public static func listening(_ customer: CustomerID, at store: StoreID, prefix: String = RestockTopics.defaultPrefix) -> String {
        "\(prefix):\(part(store.rawValue)):\(part(customer.rawValue))"
    }

    /// A customer's listening session as releases before issue 25 named it, when that differs from ``listening(_:at:prefix:)``
    /// (an identifier with a `.`): `P:{store}:{customer}` with the dots as they are. `nil` for every other customer.
    package static func legacyListening(_ customer: CustomerID, at store: StoreID, prefix: String = RestockTopics.defaultPrefix) -> String? {
        let legacy = "\(prefix):\(store):\(customer)"
        return legacy == listening(customer, at: store, prefix: prefix) ? nil : legacy
    }

    /// An identifier as a part of a client id: `.` written `~`.
    package static func part(_ identifier: String) -> String {
        String(identifier.map { $0 == "." ? "~" : $0 })
    }

    /// A fresh id for a one-shot connection with a clean session, outside the namespace: `{purpose}-{random}`.
    package static func oneShot(_ purpose: String) -> String { "\(purpose)-\(UUID().uuidString.prefix(12).lowercased())" }
}
