import Mosquitto

extension MQTTClient {
    /// Sends every item of `items` at QoS 1 through `send`, `window` of them in flight at a time, and waits for every
    /// acknowledgement.
    ///
    /// `MQTTClient.send` does not suspend, so a loop of thousands of them holds one of the cooperative pool's threads
    /// (two on a two-core machine) until it ends: two tests doing so kept every other test's in-process store from coming
    /// online for a minute (seen in CI, and on a gdb stack: both pool threads in such loops). The loop yields the thread
    /// every `slice` sends.
    public func sendAll<Item>(
        _ items: some Collection<Item>, window: Int = 5_000, slice: Int = 100,
        _ send: (MQTTClient, Item) throws -> MQTTPublication
    ) async throws {
        var publications: [MQTTPublication] = []
        publications.reserveCapacity(min(window, items.count))
        for item in items {
            publications.append(try send(self, item))
            if publications.count % slice == 0 { await Task.yield() }
            if publications.count == window {
                for publication in publications { try await publication.acknowledged() }
                publications.removeAll(keepingCapacity: true)
            }
        }
        for publication in publications { try await publication.acknowledged() }
    }
}
