import Foundation
import RestockCore

/// The MQTT client ids of the persistent sessions (docs/contract.md, "Sessions and client ids").
///
/// Store and customer ids never contain `:`, so each id in the `restock:` namespace names exactly one
/// session and one user. With the shipped broker configuration, the `restock_clientid` plugin
/// (deploy/mosquitto/clientid-plugin) lets only that user connect with it: `restock:{store}` is the user
/// `store-{store}`, `restock:{store}:{customer}` the user `{customer}`.
public enum SessionClientIDs {
    /// The store's persistent session: `restock:{store}`.
    public static func store(_ store: StoreID) -> String { "restock:\(store)" }

    /// A store instance's publishing connection, with a clean session: `restock:{store}:@{instance}`. No identifier
    /// starts with `@`, so it is never a customer's; the shipped plugin keeps it for the user `store-{store}`.
    public static func publisher(of store: StoreID, instance: String) -> String { "restock:\(store):@\(instance)" }

    /// A customer's persistent listening session: `restock:{store}:{customer}`.
    public static func listening(_ customer: CustomerID, at store: StoreID) -> String { "restock:\(store):\(customer)" }

    /// A fresh id for a one-shot connection with a clean session, outside the namespace: `{purpose}-{random}`.
    package static func oneShot(_ purpose: String) -> String { "\(purpose)-\(UUID().uuidString.prefix(12).lowercased())" }
}
