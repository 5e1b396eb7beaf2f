import Foundation
import RestockCore
import RestockPipeline

// The admin's requests beyond stock (docs/contract.md, "Admin requests").
extension StoreClient {
    /// Forgets `customer` (admin): the store removes every watch and row about them, clears their retained mirror, and
    /// answers once nothing about them is left in its data directory but what its next checkpoint removes.
    /// - Returns: The store's answer, with how many watches the customer had.
    /// - Throws: ``RestockMQTTError/storeOffline(store:)``, ``RestockMQTTError/refused(code:detail:)``,
    ///   ``RestockMQTTError/noAnswer(what:seconds:)``, or an ``MQTTError`` for the connection.
    @discardableResult
    public func forget(_ customer: CustomerID, wait: Double = 10) async throws -> ForgottenReport {
        try await request(
            topics.adminForget, payload: ForgetRequest(customer: customer).payload, answer: topics.adminForgotten,
            errors: topics.adminErrors, wait: wait, accepting: { $0.customer == customer.rawValue })
    }
}
