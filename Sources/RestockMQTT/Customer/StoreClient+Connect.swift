import Mosquitto

extension StoreClient {
    /// Runs `connect`, and on a cluster (a `--broker` list) runs it again while no broker of the list takes the
    /// connection, by ``subscriptionRetry``: a NATS node closes new connections before its CONNACK for seconds after
    /// another node dies, while it elects leaders. With one broker, or when no broker of the list takes the TCP
    /// connection at all (``MQTTError/unreachable(_:)``: the whole cluster is down or misnamed), a failure is thrown at once.
    @discardableResult
    func connectingThroughElections<T>(_ connect: () async throws -> T) async throws -> T {
        guard !connection.fallbackBrokers.isEmpty else { return try await connect() }
        return try await subscriptionRetry.run(connect) { error in
            switch error as? MQTTError {
            case .connectionFailed, .timedOut: true
            default: false
            }
        }
    }
}
