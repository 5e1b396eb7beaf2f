import Foundation
import LocalBroker

extension MosquittoBroker {
    /// The shipped configuration directory, deploy/mosquitto.
    public static let deploy = Repository.root.appendingPathComponent("deploy/mosquitto")

    /// The shipped configuration (deploy/mosquitto: mosquitto.conf, acl, passwords), run on private loopback ports
    /// with its paths moved to the broker's directory; everything else stays as shipped.
    /// - Parameters:
    ///   - users: More users, added to the shipped password file (hashed by `mosquitto_passwd`).
    ///   - tls: Turn on the TLS listener the shipped file carries commented out, with certificates for
    ///     `localhost` in the place it names.
    public static func shipped(users: [String: String] = [:], tls: Bool = false) async throws -> MosquittoBroker {
        let shipped = try String(contentsOf: deploy.appendingPathComponent("mosquitto.conf"), encoding: .utf8)
        var lines = shipped.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if tls {
            let tlsKeys = ["#listener 8883", "#cafile", "#certfile", "#keyfile"]  // the shipped file's lines, uncommented
            lines = lines.map { line in tlsKeys.contains { line.hasPrefix($0) } ? String(line.dropFirst()) : line }
        }
        let plugin = try await clientIDPlugin
        let template = lines.map { line in
            switch line {
            case "listener 1883": "listener PORT 127.0.0.1"  // shipped port → the broker's free loopback port
            case "listener 8883": "listener TLSPORT 127.0.0.1"  // likewise for TLS
            default: line
            }
        }
        .joined(separator: "\n")
        // Beside the broker's other files: mosquitto drops root for its own user before it loads the plugin, and that
        // user may not reach the checkout (a clone under /root or in a private `mktemp -d`).
        .replacingOccurrences(of: "/mosquitto/plugins/restock_clientid.so", with: "DIR/restock_clientid.so")
        .replacingOccurrences(of: "/mosquitto/config/certs/", with: "DIR/tls/")
        .replacingOccurrences(of: "/mosquitto/data/", with: "DIR/")
        .replacingOccurrences(of: "/mosquitto/config/", with: "DIR/")
        .replacingOccurrences(of: "log_dest stdout", with: "log_dest file DIR/mosquitto.log")

        var passwords = try Data(contentsOf: deploy.appendingPathComponent("passwords"))
        if !users.isEmpty { passwords += try await hashedPasswordLines(users) }
        return try await MosquittoBroker.start(
            .init(
                tls: tls,
                files: [
                    "acl": try Data(contentsOf: deploy.appendingPathComponent("acl")), "passwords": passwords,
                    "restock_clientid.so": try Data(contentsOf: plugin),
                ],
                configurationTemplate: template))
    }

    /// The restock_clientid plugin the shipped configuration loads, built by its own build script from
    /// deploy/mosquitto/clientid-plugin into .build/mosquitto-plugin (by `make build`; here when missing or older
    /// than its source, once per process).
    public static var clientIDPlugin: URL {
        get async throws { try await PluginBuild.shared.plugin() }
    }

    /// `user:hash` lines for a password file: written in plain text, then hashed in one `mosquitto_passwd -U`.
    private static func hashedPasswordLines(_ users: [String: String]) async throws -> Data {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("passwords-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let plain = users.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)\n" }.joined()
        try plain.write(to: file, atomically: true, encoding: .utf8)
        let result = try await ChildProcess.run("mosquitto_passwd", ["-U", file.path])
        guard result.status == 0 else { throw BrokerExited(output: "mosquitto_passwd -U failed: \(result.standardError)") }
        var hashed = try Data(contentsOf: file)
        if hashed.last != UInt8(ascii: "\n") { hashed.append(UInt8(ascii: "\n")) }
        return hashed
    }
}

/// Builds the restock_clientid plugin at most once per test process.
private actor PluginBuild {
    static let shared = PluginBuild()
    private var built: URL?

    func plugin() async throws -> URL {
        if let built { return built }
        let directory = MosquittoBroker.deploy.appendingPathComponent("clientid-plugin")
        let root = MosquittoBroker.deploy.deletingLastPathComponent().deletingLastPathComponent()
        let output = root.appendingPathComponent(".build/mosquitto-plugin/restock_clientid.so")
        if Self.modified(output) < Self.modified(directory.appendingPathComponent("restock_clientid.c")) {
            let result = try await ChildProcess.run(directory.appendingPathComponent("build.sh").path, [output.path])
            guard result.status == 0 else {
                throw BrokerExited(output: "building the restock_clientid plugin failed: \(result.standardError)")
            }
        }
        built = output
        return output
    }

    private static func modified(_ file: URL) -> Date {
        ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.modificationDate] as? Date) ?? .distantPast
    }
}
