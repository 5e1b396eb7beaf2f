import Foundation
import Synchronization
import Deadlines
import LocalBroker

/// A private mosquitto for one test: its own temporary directory, a generated configuration and a free
/// loopback port. It is killed, and its directory removed, when released.
public final class MosquittoBroker: Sendable {
    /// What to put in the generated configuration.
    public struct Options: Sendable {
        /// Keep sessions and retained messages on disk across a restart.
        public var persistence = false
        /// User names and passwords; when any are given, anonymous clients are refused.
        public var users: [String: String] = [:]
        /// The text of an ACL file, if any.
        public var acl: String?
        /// Add a TLS listener with a certificate for `localhost`, made with openssl.
        public var tls = false
        /// Users checked by mosquitto's dynamic-security plugin, which (unlike an ACL file) also refuses
        /// subscriptions: each may publish to and subscribe to the patterns given, and nothing else.
        public var dynamicSecurity: DynamicSecurity?
        /// Files copied into the broker's directory before it starts (an ACL, a password file…), by name.
        public var files: [String: Data] = [:]
        /// Lines appended to the configuration as they are.
        public var extraConfiguration = ""
        /// Addresses besides 127.0.0.1 the plain listener's port is opened on too: the host side of a test host's link
        /// (a network namespace of the test's own).
        public var listenAddresses: [String] = []
        /// A configuration file to use instead of generating one; `PORT`, `TLSPORT` and `DIR` in it are
        /// replaced by the listener ports and the broker's directory.
        public var configurationTemplate: String?

        public init(
            persistence: Bool = false, users: [String: String] = [:], acl: String? = nil, tls: Bool = false,
            dynamicSecurity: DynamicSecurity? = nil, files: [String: Data] = [:], extraConfiguration: String = "",
            configurationTemplate: String? = nil, listenAddresses: [String] = []
        ) {
            self.listenAddresses = listenAddresses
            self.files = files
            self.dynamicSecurity = dynamicSecurity
            self.persistence = persistence
            self.users = users
            self.acl = acl
            self.tls = tls
            self.extraConfiguration = extraConfiguration
            self.configurationTemplate = configurationTemplate
        }
    }

    /// The plain MQTT port on 127.0.0.1.
    public let port: Int
    /// The TLS port on 127.0.0.1, when asked for.
    public let tlsPort: Int?
    /// The broker's directory: configuration, log, persistence, certificates.
    public let directory: URL
    /// The certificates made for the TLS listener.
    public let certificates: TestCertificates?

    private let process: Mutex<ChildProcess?>
    /// Whether releasing this broker removes its directory: not for an attempt abandoned while starting,
    /// whose directory the next attempt uses.
    private let ownsDirectory = Mutex(true)

    /// `mqtt://127.0.0.1:port`.
    public var url: String { "mqtt://127.0.0.1:\(port)" }
    /// `mqtts://localhost:tlsPort`.
    public var tlsURL: String? { tlsPort.map { "mqtts://localhost:\($0)" } }
    /// Everything the broker logged.
    public var log: String { (try? String(contentsOf: directory.appendingPathComponent("mosquitto.log"), encoding: .utf8)) ?? "" }
    /// The configuration file.
    public var configurationFile: URL { directory.appendingPathComponent("mosquitto.conf") }

    private init(port: Int, tlsPort: Int?, directory: URL, certificates: TestCertificates?) {
        self.port = port
        self.tlsPort = tlsPort
        self.directory = directory
        self.certificates = certificates
        self.process = Mutex(nil)
    }

    /// Starts a broker and waits until it accepts connections.
    public static func start(_ options: Options = Options()) async throws -> MosquittoBroker {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mosquitto-\(UUID().uuidString)")
        // Started as root, mosquitto drops to the `mosquitto` user unless told otherwise; the directory must
        // stay writable for its log and persistence either way.
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        let certificates = options.tls ? try await TestCertificates.make(in: directory.appendingPathComponent("tls")) : nil
        // The kernel's free port can be taken again before mosquitto binds it; then try another.
        var lastError: (any Error)?
        for _ in 0..<5 {
            let broker = MosquittoBroker(
                port: try freeLoopbackPort(), tlsPort: options.tls ? try freeLoopbackPort() : nil, directory: directory,
                certificates: certificates)
            try await broker.writeConfiguration(options)
            do {
                try await broker.launch()
                return broker
            } catch {
                lastError = error
                broker.ownsDirectory.withLock { $0 = false }
                broker.process.withLock { $0?.send(SIGKILL) }
            }
        }
        throw lastError ?? DeadlineExceeded(what: "mosquitto to start", seconds: 10)
    }

    deinit {
        process.withLock { $0?.send(SIGKILL) }
        if ownsDirectory.withLock({ $0 }) { try? FileManager.default.removeItem(at: directory) }
    }

    /// Stops it with SIGTERM (mosquitto saves its persistence file) and waits for it to exit.
    public func stop() async throws {
        guard let running = process.withLock({ $0 }) else { return }
        running.send(SIGTERM)
        try await running.waitForExit(within: 20)
        process.withLock { $0 = nil }
    }

    /// Kills it with SIGKILL and waits for it to exit.
    public func kill() async throws {
        guard let running = process.withLock({ $0 }) else { return }
        running.send(SIGKILL)
        try await running.waitForExit(within: 20)
        process.withLock { $0 = nil }
    }

    /// Sends it `signal` (SIGSTOP freezes it, SIGCONT wakes it), if it runs.
    public func send(_ signal: Int32) {
        process.withLock { $0?.send(signal) }
    }

    /// Starts it again on the same ports, with the same configuration and directory.
    public func restart() async throws {
        try await stop()
        try await launch()
    }

    /// Starts it again after ``stop()`` or ``kill()``.
    public func launch() async throws {
        let child = try await LocalMosquitto.launch(
            configurationFile: configurationFile, listeningOn: [port] + (tlsPort.map { [$0] } ?? []),
            output: directory.appendingPathComponent("stdout.log"))
        process.withLock { $0 = child }
    }

    private func writeConfiguration(_ options: Options) async throws {
        for (name, contents) in options.files {
            try contents.write(to: directory.appendingPathComponent(name))
        }
        if let template = options.configurationTemplate {
            let text = template.replacingOccurrences(of: "TLSPORT", with: String(tlsPort ?? 0))
                .replacingOccurrences(of: "PORT", with: String(port))
                .replacingOccurrences(of: "DIR", with: directory.path)
            try text.write(to: configurationFile, atomically: true, encoding: .utf8)
            return
        }
        var lines = [
            "user root",
            "per_listener_settings false",
            "listener \(port) 127.0.0.1",
        ] + options.listenAddresses.map { "listener \(port) \($0)" } + [
            "log_dest file \(directory.path)/mosquitto.log",
            "log_type error", "log_type warning", "log_type notice", "log_type information",
            "connection_messages true",
            // Never drop queued QoS 1/2 messages of an offline session (the default caps them at 1000).
            "max_queued_messages 0",
            "max_inflight_messages 0",
        ]
        if options.persistence {
            lines += ["persistence true", "persistence_location \(directory.path)/", "autosave_interval 1"]
        }
        if let dynamicSecurity = options.dynamicSecurity {
            let file = directory.appendingPathComponent("dynamic-security.json")
            try await dynamicSecurity.write(to: file)
            lines += ["allow_anonymous false", "plugin \(try DynamicSecurity.pluginPath())", "plugin_opt_config_file \(file.path)"]
        } else if options.users.isEmpty {
            lines.append("allow_anonymous true")
        } else {
            let file = directory.appendingPathComponent("passwords")
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            for (user, password) in options.users.sorted(by: { $0.key < $1.key }) {
                let result = try await ChildProcess.run("mosquitto_passwd", ["-b", file.path, user, password])
                guard result.status == 0 else { throw BrokerExited(output: result.standardError) }
            }
            lines += ["allow_anonymous false", "password_file \(file.path)"]
        }
        if let acl = options.acl {
            let file = directory.appendingPathComponent("acl")
            try acl.write(to: file, atomically: true, encoding: .utf8)
            lines.append("acl_file \(file.path)")
        }
        if let tlsPort, let certificates {
            lines += [
                "listener \(tlsPort) 127.0.0.1",
                "cafile \(certificates.caFile)", "certfile \(certificates.serverCertificateFile)",
                "keyfile \(certificates.serverKeyFile)",
            ]
        }
        lines.append(options.extraConfiguration)
        try lines.joined(separator: "\n").write(to: configurationFile, atomically: true, encoding: .utf8)
    }
}

/// mosquitto exited while starting.
public struct BrokerExited: Error, CustomStringConvertible {
    public let output: String
    public var description: String { "mosquitto exited while starting:\n\(output)" }
}

/// Users for mosquitto's dynamic-security plugin, all with one password.
public struct DynamicSecurity: Sendable {
    /// What one user may do.
    public struct Grant: Sendable {
        public var publish: [String]
        public var subscribe: [String]
        public init(publish: [String] = [], subscribe: [String] = []) {
            self.publish = publish
            self.subscribe = subscribe
        }
    }

    public var password: String
    public var users: [String: Grant]

    public init(password: String, users: [String: Grant]) {
        self.password = password
        self.users = users
    }

    static func pluginPath() throws -> String {
        let candidates = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/local/lib"]
        for directory in candidates where FileManager.default.fileExists(atPath: "\(directory)/mosquitto_dynamic_security.so") {
            return "\(directory)/mosquitto_dynamic_security.so"
        }
        throw BrokerExited(output: "mosquitto_dynamic_security.so not found")
    }

    /// `mosquitto_ctrl dynsec init` hashes the password for an admin user; each test user gets a copy of
    /// that hash and a role of its own.
    func write(to file: URL) async throws {
        let result = try await ChildProcess.run("mosquitto_ctrl", ["dynsec", "init", file.path, "admin", password])
        guard result.status == 0,
            var root = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any],
            var clients = root["clients"] as? [[String: Any]], let admin = clients.first,
            var roles = root["roles"] as? [[String: Any]]
        else { throw BrokerExited(output: "mosquitto_ctrl dynsec init failed: \(result.standardError)") }
        for (name, grant) in users {
            var client = admin
            client["username"] = name
            client["textName"] = name
            client["roles"] = [["rolename": "role-\(name)"]]
            clients.append(client)
            let acls =
                grant.publish.map { ["acltype": "publishClientSend", "topic": $0, "allow": true] as [String: Any] }
                + grant.subscribe.flatMap {
                    [
                        ["acltype": "subscribePattern", "topic": $0, "allow": true] as [String: Any],
                        ["acltype": "publishClientReceive", "topic": $0, "allow": true],
                    ]
                }
            roles.append(["rolename": "role-\(name)", "acls": acls])
        }
        root["clients"] = clients
        root["roles"] = roles
        try JSONSerialization.data(withJSONObject: root).write(to: file)
    }
}
