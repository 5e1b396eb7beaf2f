import RestockTestSupport

/// The broker every MQTT benchmark runs on: a private mosquitto with the settings of the shipped
/// configuration that bear on speed — persistence with a one-second autosave, no queue limit, and
/// `set_tcp_nodelay true` — but no password file, so the C tools and the store connect alike.
enum BenchBroker {
    static func start() async throws -> MosquittoBroker {
        try await MosquittoBroker.start(.init(persistence: true, extraConfiguration: "set_tcp_nodelay true"))
    }
}
