import RestockCore
import RestockMQTT

extension MosquittoBroker {
    /// A client of store `store` on this broker, under the default prefix: what `restock` makes for a customer's or
    /// the admin's command.
    public func storeClient(of store: String = "apple") throws -> StoreClient {
        StoreClient(connection: try BrokerSettings(url: url), topics: try RestockTopics(store: StoreID(store)))
    }
}
