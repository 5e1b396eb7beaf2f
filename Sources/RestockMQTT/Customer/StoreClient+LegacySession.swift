import Deadlines
import Foundation
import Mosquitto
import RestockCore
import RestockPipeline

extension StoreClient {
    /// Takes what a dotted customer's listening session of before issue 25 holds (`restock:{store}:j.doe`, now
    /// `restock:{store}:j~doe`: ``SessionClientIDs``), and ends that session, so that moving to the new client id
    /// orphans nothing: its alerts are returned, to be handed to the customer before the new session's, and the broker
    /// forgets it. A broker that refuses the old id (NATS refuses every `.`) never held it: nothing is done.
    /// - Returns: The alerts the old session held, in arrival order; none for a customer without a `.`.
    func takeLegacySession(of customer: CustomerID) async throws -> [RestockAlert] {
        guard let legacy = SessionClientIDs.legacyListening(customer, at: topics.store, prefix: topics.prefix) else { return [] }
        let session = try connector.connection(clientID: legacy, session: .persistent)
        let messages = try session.messages(matching: topics.alerts(customer))
        let existed: Bool
        do {
            existed = try await session.connect()
        } catch MQTTError.connectionRefused {
            return []  // a broker that refuses the id (NATS: "identifier rejected") holds no session of it
        }
        var alerts: [RestockAlert] = []
        if existed {
            // What the session holds arrives right after the CONNACK; it is over once nothing has come for a while.
            let collected = Collected<RestockAlert>()
            let reader = Task {
                for await message in messages {
                    if let alert = try? RestockAlert(jsonData: Data(message.payload)) { collected.append(alert) }
                }
            }
            try await collected.waitForQuiet(retainedQuietPeriod, first: retainedFirstMessageWait)
            await session.disconnect()
            reader.cancel()
            alerts = collected.values
        } else {
            await session.disconnect()
        }
        // A clean session of the same id makes the broker forget the old one (and the one this connect made, if none was).
        let forget = try connector.connection(clientID: legacy, session: .clean)
        try await forget.connect()
        await forget.disconnect()
        return alerts
    }
}
