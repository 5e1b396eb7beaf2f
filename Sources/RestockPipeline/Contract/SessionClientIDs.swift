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
public enum SessionClientIDs {
    /// The store's persistent session: `P:{store}`.
    public static func store(_ store: StoreID, prefix: String = RestockTopics.defaultPrefix) -> String { "\(prefix):\(store)" }

    /// A store instance's publishing connection, with a clean session: `P:{store}:@{instance}`. No identifier
    /// starts with `@`, so it is never a customer's; the shipped plugin keeps it for the user `store-{store}`.
    public static func publisher(of store: StoreID, instance: String, prefix: String = RestockTopics.defaultPrefix) -> String {
        "\(prefix):\(store):@\(instance)"
    }

    /// A customer's persistent listening session: `P:{store}:{customer}`.
    public static func listening(_ customer: CustomerID, at store: StoreID, prefix: String = RestockTopics.defaultPrefix) -> String {
        "\(prefix):\(store):\(customer)"
    }

    /// A fresh id for a one-shot connection with a clean session, outside the namespace: `{purpose}-{random}`.
    package static func oneShot(_ purpose: String) -> String { "\(purpose)-\(UUID().uuidString.prefix(12).lowercased())" }
}
