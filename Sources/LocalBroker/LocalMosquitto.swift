import Foundation
import Deadlines

/// A private mosquitto on a free loopback port, in a directory of its own, for the demo and the tests:
/// it never touches a broker someone else runs, and it is killed when released.
public final class LocalMosquitto: Sendable {
    /// The plain MQTT port on 127.0.0.1.
    public let port: Int
    /// Its directory: configuration, log, persistence.
    public let directory: URL
    private let process: ChildProcess

    /// `mqtt://127.0.0.1:port`.
    public var url: String { "mqtt://127.0.0.1:\(port)" }

    /// Everything it logged.
    public var log: String { process.output }

    /// Starts mosquitto with the listener, queue and log lines this needs, plus `configuration`, and waits
    /// until it accepts connections.
    /// - Parameter configuration: More configuration lines (persistence, security…).
    public static func start(configuration: [String] = []) async throws -> LocalMosquitto {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("restock-mosquitto-\(UUID().uuidString)")
        // mosquitto started as root drops to its own user; the directory stays writable for it.
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        var lastError: (any Error)?
        // The kernel's free port can be taken again before mosquitto binds it; then try another.
        for _ in 0..<5 {
            let port = try freeLoopbackPort()
            let lines =
                [
                    "listener \(port) 127.0.0.1", "allow_anonymous true", "max_queued_messages 0",
                    "log_dest stdout", "log_type error", "log_type warning", "log_type notice",
                ] + configuration
            let file = directory.appendingPathComponent("mosquitto.conf")
            try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
            do {
                let process = try await launch(
                    configurationFile: file, listeningOn: [port], output: directory.appendingPathComponent("mosquitto.log"))
                return LocalMosquitto(port: port, directory: directory, process: process)
            } catch {
                lastError = error
            }
        }
        throw lastError ?? MosquittoExited(log: "")
    }

    /// Starts `mosquitto -c configurationFile` and waits until it accepts connections on every port in
    /// `ports`; if it exits first (a port taken, a bad line), fails with what it printed.
    /// - Parameter output: Where its standard output and error go.
    public static func launch(configurationFile: URL, listeningOn ports: [Int], output: URL) async throws -> ChildProcess {
        let process = try ChildProcess("mosquitto", ["-c", configurationFile.path], outputFile: output)
        do {
            try await waitUntil("mosquitto to listen on \(ports)", within: 15) {
                if process.exitStatus != nil { throw MosquittoExited(log: process.output + Self.logFiles(of: configurationFile)) }
                return ports.allSatisfy { isListening(port: $0) }
            }
            return process
        } catch {
            process.send(SIGKILL)
            throw error
        }
    }

    /// What the files named by the configuration's `log_dest file PATH` lines hold: where a broker that logs to a
    /// file says why it exited.
    static func logFiles(of configurationFile: URL) -> String {
        guard let configuration = try? String(contentsOf: configurationFile, encoding: .utf8) else { return "" }
        return configuration.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ", maxSplits: 2)
            guard words.count == 3, words[0] == "log_dest", words[1] == "file" else { return nil }
            return try? String(contentsOfFile: String(words[2]), encoding: .utf8)
        }.joined()
    }

    private init(port: Int, directory: URL, process: ChildProcess) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    deinit {
        process.send(SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops it with SIGTERM and waits for it to exit.
    public func stop() async throws {
        process.send(SIGTERM)
        try await process.waitForExit(within: 20)
    }
}

/// mosquitto exited while starting; `log` says why.
public struct MosquittoExited: Error, CustomStringConvertible {
    /// What mosquitto printed, and what its log files hold.
    public let log: String
    /// The last lines it wrote (up to three), on one line: the reason is among them.
    public var description: String {
        let last = log.split(separator: "\n").suffix(3).joined(separator: " | ")
        return "mosquitto exited while starting: \(last.isEmpty ? "it wrote nothing" : last)"
    }
}
