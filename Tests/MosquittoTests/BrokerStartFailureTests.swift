import RestockTestSupport
import Testing

@Suite("A broker that exits while starting")
struct BrokerStartFailureTests {
    @Test("says why, also when it logs to a file: the last lines of its log are in the error")
    func brokerExitSaysWhy() async throws {
        let template = """
            listener PORT 127.0.0.1
            allow_anonymous true
            log_dest file DIR/mosquitto.log
            plugin DIR/no-such-plugin.so
            """
        do {
            _ = try await MosquittoBroker.start(.init(configurationTemplate: template))
            Issue.record("a broker with a missing plugin started")
        } catch {
            #expect("\(error)".contains("no-such-plugin.so"), "\(error)")
        }
    }
}
