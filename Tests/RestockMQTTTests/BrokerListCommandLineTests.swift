import Foundation
import LocalBroker
import RestockTestSupport
import Testing

/// `--broker` takes a comma-separated list of the brokers of one cluster (issue 25).
@Suite("The command line's broker list")
struct BrokerListCommandLineTests {
    func restock(_ arguments: [String], environment: [String: String] = [:]) async throws -> CommandResult {
        try await ChildProcess.run(restockExecutable, arguments, environment: environment, within: 60)
    }

    @Test(
        "a bad list is one line on stderr and exit 64, like any bad value (an empty element, a bad URL, mixed schemes, one broker twice)",
        arguments: [
            ("mqtt://127.0.0.1:1883,", "error: --broker: invalid configuration: the broker list has an empty element (broker 2 of the list)"),
            (",mqtt://127.0.0.1:1883", "error: --broker: invalid configuration: the broker list has an empty element (broker 1 of the list)"),
            ("mqtt://a:1,,mqtt://b:2", "error: --broker: invalid configuration: the broker list has an empty element (broker 2 of the list)"),
            ("mqtt://a:1,http://b:2", "error: --broker: invalid configuration: broker URL \"http://b:2\" must start with mqtt:// or mqtts:// (broker 2 of the list)"),
            ("mqtt://a:1,mqtt://b:99999", "error: --broker: invalid configuration: broker port 99999 is outside 1-65535 (broker 2 of the list)"),
            ("mqtt://a:1,mqtts://b:2", "error: --broker: invalid configuration: the broker list mixes mqtt:// and mqtts://: use one scheme for every broker"),
            ("mqtt://a:1,mqtt://a:1", "error: --broker: invalid configuration: the broker list names mqtt://a:1 twice"),
            ("mqtt://a:1,mqtt://b:2,mqtt://b:2/", "error: --broker: invalid configuration: the broker list names mqtt://b:2 twice"),
            // Several URLs with another separator than a comma (said "has a path" alone before).
            ("mqtt://a:1;mqtt://b:2", "error: --broker: invalid configuration: broker URL \"mqtt://a:1;mqtt://b:2\" has a path \"//b:2\": to give several brokers, separate their URLs with commas"),
            ("mqtt://a:1 mqtt://b:2", "error: --broker: invalid configuration: broker URL \"mqtt://a:1 mqtt://b:2\" has a path \"//b:2\": to give several brokers, separate their URLs with commas"),
            ("mqtt://u:p@a:1,mqtt://v:q@b:2", "error: --broker: invalid configuration: the broker list carries different user names or passwords"),
            // A path, a query or a fragment is named as such (was "has a bad port").
            ("mqtt://a:1/path", "error: --broker: invalid configuration: broker URL \"mqtt://a:1/path\" has a path \"/path\": give only mqtt://host:port"),
            ("mqtt://a:1,mqtt://b:2?x=1", "error: --broker: invalid configuration: broker URL \"mqtt://b:2?x=1\" has a query \"?x=1\""),
            ("mqtt://a#frag", "error: --broker: invalid configuration: broker URL \"mqtt://a#frag\" has a fragment \"#frag\""),
            // What follows the host is quoted: a newline in it stays one line (found by BrokerURLFuzz).
            ("mqtt://a:1/x\ny", "error: --broker: invalid configuration: broker URL \"mqtt://a:1/x\\ny\" has a path \"/x\\ny\""),
            // Even first: this was the host "?:1883", whose description did not parse back (found by BrokerURLFuzz).
            ("mqtts://?:1883:1883", "error: --broker: invalid configuration: broker URL \"mqtts://?:1883:1883\" has a query \"?:1883:1883\""),
        ])
    func badListsRefused(list: String, message: String) async throws {
        for command in [["inventory"], ["serve", "--data", "/nonexistent/never-made"]] {
            let result = try await restock(command + ["--broker", list])
            #expect(result.status == 64, "\(command) \(list)")
            #expect(result.standardError.hasPrefix(message), "\(result.standardError)")
            #expect(result.standardError.split(separator: "\n").count == 1)
            #expect(result.standardOutput.isEmpty)
        }
    }

    @Test("a list none of whose brokers takes the TCP connection fails in one line naming each (ElectionGapTests: at its first attempt)")
    func noneListening() async throws {
        let (first, second) = (try RefusingLoopbackPort(), try RefusingLoopbackPort())
        defer { withExtendedLifetime((first, second)) {} }
        let result = try await restock(["inventory", "--broker", "mqtt://127.0.0.1:\(first.port),mqtt://127.0.0.1:\(second.port)"])
        #expect(result.status != 0)
        #expect(
            result.standardError
                == "error: cannot connect to the broker: mqtt://127.0.0.1:\(first.port): Connection refused; mqtt://127.0.0.1:\(second.port): Connection refused\n",
            "\(result.standardError)")
    }

    @Test("a command reaches the first broker of the list that answers (failed before: a list was a bad URL)")
    func firstThatAnswers() async throws {
        let refusing = try RefusingLoopbackPort(), port = refusing.port
        defer { withExtendedLifetime(refusing) {} }
        let broker = try await MosquittoBroker.start()
        defer { Task { try? await broker.stop() } }
        // The store was never online on this broker: the answer comes from the broker, so the command reached it.
        let result = try await restock(["inventory", "--broker", "mqtt://127.0.0.1:\(port),\(broker.url)", "--store", "nowhere"])
        #expect(result.standardError == "error: no store nowhere has ever been online on this broker: start it with `restock serve --store nowhere`\n")
        let environment = try await restock(["inventory", "--store", "nowhere"], environment: ["RESTOCK_BROKER": "mqtt://127.0.0.1:\(port), \(broker.url)"])
        #expect(environment.standardError == result.standardError)
    }
}
