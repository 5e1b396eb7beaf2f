import Mosquitto

extension StoreClient {
    /// Runs `connect`, and on a cluster (a `--broker` list) runs it again while no broker of the list takes the
    /// connection, by ``subscriptionRetry``: a NATS node closes new connections before its CONNACK for seconds after
    /// another node dies, while it elects leaders. With one broker, a failure is thrown at once.
    @discardableResult
    func connectingThroughElections<T>(_ connect: () async throws -> T) async throws -> T {
        guard !connection.fallbackBrokers.isEmpty else { return try await connect() }
        let retry = subscriptionRetry, start = ContinuousClock.now
        var attempt = 0
        while true {
            do {
                return try await connect()
            } catch let error as MQTTError {
                switch error {
                case .connectionFailed, .timedOut:
                    let elapsed = ContinuousClock.now - start
                    guard elapsed < retry.limit else { throw error }
                    attempt += 1
                    try await Task.sleep(for: retry.delay(beforeAttempt: attempt, elapsed: elapsed))
                default: throw error
                }
            }
        }
    }
}
