import Foundation
import LocalBroker
import RestockTestSupport
import Testing

/// The new commands' and options' outside numbers and texts (issue 24): one line and exit 64, never a trap, before
/// anything is opened.
@Suite("The restock command line, issue 24's options", .timeLimit(.minutes(2)))
struct AdminCommandLineTests {
    @Test("a negative --expires-in is read as its value and refused for what it is, not as a missing value (found by the issue 24 trial)")
    func negativeDuration() async throws {
        let result = try await ChildProcess.run(restockExecutable, ["subscribe", "--customer", "a", "--sku", "b", "--expires-in", "-5s"], within: 60)
        #expect(result.status == 64)
        #expect(result.standardError.contains(#"not "-5s""#), "\(result.standardError)")
    }

    @Test(
        "odd expiry, dead-letter and export values are one line and exit 64",
        arguments: [
            ["subscribe", "--customer", "a", "--sku", "b", "--expires-in", "99999999999999999999999d"],
            ["subscribe", "--customer", "a", "--sku", "b", "--expires-in", "36501d"],
            ["subscribe", "--customer", "a", "--sku", "b", "--expires-in", "-5s"],
            ["subscribe", "--customer", "a", "--sku", "b", "--expires-at", "2027-13-01T00:00:00Z"],
            ["subscribe", "--customer", "a", "--sku", "b", "--expires-at", "2027-05-20T12:00:00Z", "--expires-in", "1d"],
            ["serve", "--watch-lifetime", "1e9d"], ["serve", "--watch-lifetime", "0s"],
            ["serve", "--alert-expiry", "4294967296"], ["serve", "--alert-expiry", "0"], ["serve", "--alert-expiry", "1.5"],
            ["dead-letters", "--replay", "99999999999999999999"], ["dead-letters", "--drop", "0"],
            ["dead-letters", "--replay", "1", "--drop", "2"], ["forget", "--customer", "not an id"], ["report", "--sku", "a b"],
        ])
    func oddValues(_ arguments: [String]) async throws {
        let data = try temporaryDirectory()
        try FileManager.default.removeItem(at: data)
        let serve = arguments.first == "serve" ? ["--data", data.path] : []
        let result = try await ChildProcess.run(restockExecutable, arguments + serve, within: 60)
        #expect(result.status == 64, "\(arguments): \(result.standardError)")
        #expect(result.standardError.split(separator: "\n").count == 1, "\(arguments): \(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: data.path), "\(arguments) made the data directory")
    }
}
