import ArgumentParser
@testable import RestockHTTP
import Testing

@testable import restock

/// `restock serve --http HOST:PORT` (docs/operations.md, "Health and metrics").
@Suite("The --http option")
struct HTTPOptionTests {
    func serve(_ arguments: [String]) throws -> Restock.Serve {
        try #require(try Restock.parseAsRoot(["serve"] + arguments) as? Restock.Serve)
    }

    @Test("takes an IPv4 address, a bracketed IPv6 address or a host name with a port; off unless given")
    func goodValues() throws {
        #expect(try serve([]).httpAddress() == nil)
        for (value, host, port) in [
            ("127.0.0.1:9090", "127.0.0.1", 9090), ("[::1]:0", "::1", 0), ("localhost:65535", "localhost", 65535),
            ("0.0.0.0:9100", "0.0.0.0", 9100), ("metrics-1.internal:80", "metrics-1.internal", 80),
        ] {
            let address = try #require(try serve(["--http", value]).httpAddress(), "\(value)")
            #expect(address.host == host && address.port == port, "\(value)")
            #expect(address.description == value)
        }
    }

    @Test("refuses anything else in one line that says what it takes")
    func badValues() {
        for value in ["9090", "127.0.0.1", "127.0.0.1:", ":9090", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:90x",
            "http://127.0.0.1:9090", "[::1]9090", "[]:1", "a b:1", "bad-:1", "host/path:1", "127.0.0.1:0000009"]
        {
            do {
                _ = try serve(["--http", value])
                Issue.record("--http \(value) was taken")
            } catch {
                let message = Restock.message(for: error)
                #expect(message.hasPrefix("--http must be HOST:PORT"), "\(value): \(message)")
                #expect(!message.contains("\n"), "\(value): \(message)")
            }
        }
    }

    @Test("the HTTP side's share of the descriptors: half of what is left after 64, at most 256, at least 4")
    func share() {
        #expect(HTTPLimits.connections(forDescriptorLimit: 1_024) == 256)
        #expect(HTTPLimits.connections(forDescriptorLimit: 256) == 96)
        #expect(HTTPLimits.connections(forDescriptorLimit: 100) == 18)
        #expect(HTTPLimits.connections(forDescriptorLimit: 20) == 4)
        #expect(HTTPLimits.standard(descriptorLimit: 1_024).idleTimeout <= .seconds(60))
    }

    @Test("the tests' RESTOCK_TEST_HTTP_LIMITS only lowers the limits, and odd values neither trap nor lift them (1e300 crashed the store, 100000 lifted the cap)")
    func testLimitsOnlyLower() {
        let standard = HTTPLimits.standard(descriptorLimit: 1_024)
        for text in ["connections=1e300", "connections=100000", "head=inf,idle=1e300", "head=nan,connections=-1", "idle=7200"] {
            let limits = standard.overridden(by: ["RESTOCK_TEST_HTTP_LIMITS": text])
            #expect(limits.maximumConnections == standard.maximumConnections, "\(text)")
            #expect(limits.headTimeout == standard.headTimeout && limits.idleTimeout == standard.idleTimeout, "\(text)")
        }
        let lowered = standard.overridden(by: ["RESTOCK_TEST_HTTP_LIMITS": "head=1,idle=2,connections=3"])
        #expect(lowered.headTimeout == .seconds(1) && lowered.idleTimeout == .seconds(2) && lowered.maximumConnections == 3)
    }

    @Test("a value cut short in an error says so with …, so that the error never names a number the user did not type")
    func longValueQuoted() {
        let long = String(repeating: "9", count: 43)
        #expect(throws: (any Error).self) { try Restock.parseAsRoot(["serve", "--max-watches", long]) }
        do {
            _ = try Restock.parseAsRoot(["serve", "--max-watches", long])
        } catch {
            let message = Restock.message(for: error)
            #expect(message.contains("\"" + String(repeating: "9", count: 40) + "\"…"), "\(message)")
        }
    }
}
