import ArgumentParser
import Foundation
import Mosquitto
import RestockCore
import RestockMQTT

/// `--config FILE`, which every command takes (docs/operations.md, "Configuration"): read by ``OptionSources`` before
/// the command is parsed, declared here so that each command accepts it.
struct ConfigFileOption: ParsableArguments {
    @Option(help: "A JSON file of option values, such as {\"broker\": \"mqtt://host:1883\", \"drain-timeout\": 10}; the command line and RESTOCK_* variables win over it (env RESTOCK_CONFIG).")
    var config: String?
}

/// The options every command that talks to a broker shares (README.md, "The restock command line").
struct ConnectionOptions: ParsableArguments {
    @OptionGroup var file: ConfigFileOption

    @Option(help: "Broker URL, mqtt://host:port or mqtts://host:port, optionally mqtt://user:password@host:port, or a comma-separated list of the brokers of one cluster, tried in turn; default mqtt://127.0.0.1:1883 (env RESTOCK_BROKER).")
    var broker: String?

    @Option(help: "User name for the broker (env RESTOCK_USERNAME).")
    var username: String?

    @Option(help: "Password for the broker (env RESTOCK_PASSWORD).")
    var password: String?

    @Option(help: "CA certificate file (PEM) for mqtts:// (env RESTOCK_CAFILE).")
    var cafile: String?

    @Option(help: "Client certificate file (PEM) for mqtts:// (env RESTOCK_CERT).")
    var cert: String?

    @Option(help: "Client key file (PEM) for mqtts:// (env RESTOCK_KEY).")
    var key: String?

    @Option(help: "MQTT protocol version: 5 or 3.1.1 (env RESTOCK_MQTT_VERSION).")
    var mqttVersion: String = "5"

    @Option(help: "Topic prefix (env RESTOCK_PREFIX).")
    var prefix: String = RestockTopics.defaultPrefix

    @Option(help: "Store id; default apple (env RESTOCK_STORE).")
    var store: String?

    /// The broker of `--broker` when none is given.
    static let defaultBroker = "mqtt://127.0.0.1:1883"

    func validate() throws {
        _ = try brokerSettings()
        _ = try topics()
    }

    func storeID() throws -> StoreID {
        try identifier(store ?? "apple", StoreID.self, option: "store")
    }

    func topics() throws -> RestockTopics {
        let store = try storeID()
        do { return try RestockTopics(prefix: prefix, store: store) } catch { throw ValidationError("--prefix: \(error.description)") }
    }

    func brokerSettings() throws -> BrokerSettings {
        if broker == "" { throw ValidationError("--broker is empty: give the broker's URL, such as mqtt://127.0.0.1:1883, or leave it out") }
        for (option, value) in [("cafile", cafile), ("cert", cert), ("key", key)] where value == "" {
            throw ValidationError("--\(option) is empty: give a PEM file, or leave it out")
        }
        let fromURL: BrokerSettings
        do {
            fromURL = try BrokerSettings(url: broker ?? Self.defaultBroker)
        } catch {
            // Named as the option (a value from the environment or a file is named by its origin then: OptionSources).
            throw ValidationError(broker == nil ? error.description : "--broker: \(error.description)")
        }
        let address = fromURL.broker
        let version: MQTTProtocolVersion
        switch mqttVersion {
        case "5": version = .v5
        case "3.1.1", "311": version = .v311
        default: throw ValidationError("--mqtt-version must be 5 or 3.1.1, not \"\(mqttVersion)\"")
        }
        // An empty user name or password went to the broker as given, and a password without a user name failed only
        // at the connection, with status 1 (an outside trial).
        if username == "" { throw ValidationError("--username is empty: give the broker's user name, or leave it out") }
        if password == "" { throw ValidationError("--password is empty: give the broker's password, or leave it out") }
        if password != nil, username == nil, fromURL.username == nil {
            throw ValidationError("--password needs a user name: give --username too, or a user in the broker URL")
        }
        // The URL's password went with --username's user, and --password over the URL's (found by an outside trial).
        if let username, let other = fromURL.username, username != other {
            throw ValidationError("--username \(quotedValue(username)) and the broker URL's user \(quotedValue(other)) differ: give the user once")
        }
        if let password, let other = fromURL.password, password != other {
            throw ValidationError("--password and the broker URL's password differ: give the password once")
        }
        // What MQTT cannot carry, named by where it came from (libmosquitto's refusal came at the connection, status 1).
        for (user, origin) in [(username, "--username"), (fromURL.username, "--broker: the URL's user name")] {
            guard let user else { continue }
            if user.utf8.count > 65_535 { throw ValidationError("\(origin) is longer than 65,535 bytes, MQTT's limit") }
            if user.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
                throw ValidationError("\(origin) holds a control character (a newline, a tab), which MQTT does not take")
            }
        }
        for (secret, origin) in [(password, "--password"), (fromURL.password, "--broker: the URL's password")] {
            if let secret, secret.utf8.count > 65_535 { throw ValidationError("\(origin) is longer than 65,535 bytes, MQTT's limit") }
        }
        if !address.usesTLS, cafile != nil || cert != nil || key != nil {
            throw ValidationError("--cafile, --cert and --key need an mqtts:// broker URL")
        }
        if address.usesTLS {
            // Checked here, before a command connects or a store opens its data: libmosquitto's own refusal names neither
            // the option nor the file ("Invalid function arguments provided", found by an outside trial).
            for (option, path) in [("cafile", cafile), ("cert", cert), ("key", key)] {
                if let path { try checkReadableFile(path, option: option) }
            }
            if (cert == nil) != (key == nil) { throw ValidationError("--cert and --key go together: give both, or neither") }
        }
        let tls = address.usesTLS ? MQTTTLSConfiguration(caFile: cafile, certificateFile: cert, keyFile: key) : nil
        var settings = BrokerSettings(
            broker: address, username: username ?? fromURL.username, password: password ?? fromURL.password, tls: tls,
            protocolVersion: version)
        settings.fallbackBrokers = fromURL.fallbackBrokers
        return settings
    }

    /// A client of the store; `waitingForNewStore`: one that waits, within each command's wait, for a store the broker
    /// holds no status of yet (``StoreClient/waitsForNewStore``).
    func client(waitingForNewStore: Bool = false) throws -> StoreClient {
        StoreClient(connection: try brokerSettings(), topics: try topics(), waitsForNewStore: waitingForNewStore)
    }
}

/// Parses an identifier option, as a validation error naming the option.
func identifier<Kind>(_ raw: String, _ type: Identifier<Kind>.Type, option: String) throws -> Identifier<Kind> {
    do { return try Identifier<Kind>(raw) } catch { throw ValidationError("--\(option): \(error.description)") }
}

/// Checks that `path`, given as `--option`, is a regular file this process may read: one line naming the option and the
/// file when it is not.
func checkReadableFile(_ path: String, option: String) throws {
    guard !path.isEmpty else { throw ValidationError("--\(option) is empty: give a PEM file, or leave it out") }
    var info = stat()
    guard stat(path, &info) == 0 else { throw ValidationError("--\(option) \(quotedValue(path)): \(String(cString: strerror(errno)))") }
    guard info.st_mode & S_IFMT == S_IFREG else {
        let what = info.st_mode & S_IFMT == S_IFDIR ? "is a directory" : "is not a regular file"
        throw ValidationError("--\(option) \(quotedValue(path)) \(what): give a PEM file")
    }
    guard access(path, R_OK) == 0 else { throw ValidationError("--\(option) \(quotedValue(path)): \(String(cString: strerror(errno)))") }
    // A file of another kind (a config file, a certificate in DER): libmosquitto finds out only when it connects, and a
    // store, or a standby at its takeover, retried that for ever (found by an outside trial).
    let head = FileHandle(forReadingAtPath: path).flatMap { try? $0.read(upToCount: 1 << 20) } ?? Data()
    guard head.range(of: Data("-----BEGIN ".utf8)) != nil else {
        throw ValidationError("--\(option) \(quotedValue(path)) holds no PEM block (-----BEGIN …): give a PEM file")
    }
}

/// Writes one line to standard output at once, unbuffered, so a pipe sees each alert as it arrives.
func emit(_ line: String) {
    StandardStreams.printLine(line)
}

/// The longest `--wait` or `--timeout`: one day.
let maximumSeconds = 86_400.0

/// The seconds a command may wait (`--wait`, `--timeout`): from a tenth of a second to a day (less than that leaves no
/// time to hear from the broker at all).
let waitRange = 0.1...maximumSeconds

/// A value given on the command line, quoted for an error: its first 40 characters, and `…` when it has more.
func quotedValue(_ value: String) -> String {
    String(reflecting: String(value.prefix(40))) + (value.count > 40 ? "…" : "")
}
