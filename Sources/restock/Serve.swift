import ArgumentParser
import Foundation
import Logging
import RestockCore
import RestockHTTP
import RestockMQTT
import RestockPostgres
import ServiceLifecycle

extension Restock {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the store service until SIGINT or SIGTERM, then go offline cleanly.")

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "Directory of the store's state (SQLite). Default: a per-user state directory (env RESTOCK_DATA).")
        var data: String?

        @Option(help: "Keep the store's state in PostgreSQL instead of --data: postgres://USER@HOST[:PORT][,HOST[:PORT]…]/DATABASE[?sslmode=disable|require|verify-ca|verify-full&sslrootcert=FILE], the password in RESTOCK_DATABASE_PASSWORD (env RESTOCK_DATABASE).")
        var database: String?

        @Option(parsing: .unconditional, help: "Fair release: at most K alerts per unit of stock that arrives (0 = off) (env RESTOCK_ALERTS_PER_UNIT).")
        var alertsPerUnit = WholeNumber(0)

        @Option(parsing: .unconditional, help: "On SIGTERM/SIGINT, keep publishing what is queued for up to this many seconds (0 to 3600) (env RESTOCK_DRAIN_TIMEOUT).")
        var drainTimeout = Seconds(5)

        @Option(parsing: .unconditional, help: "The most SKUs one customer may watch (1 to 1000000); past it a subscribe is refused too-many-watches (env RESTOCK_MAX_WATCHES_PER_CUSTOMER).")
        var maxWatchesPerCustomer = WholeNumber(Store.defaultMaximumWatchesPerCustomer)

        @Option(parsing: .unconditional, help: "The most watches the store holds, all customers together (1 to 1000000000), or off; past it a subscribe is refused store-full (env RESTOCK_MAX_WATCHES).")
        var maxWatches: String = String(Store.defaultMaximumWatches)

        @Option(parsing: .unconditional, help: "Requests per second one customer may send, sustained (0.001 to 1000000), or off; past it a request is refused rate-limited (env RESTOCK_CUSTOMER_RATE).")
        var customerRate: String = "1"

        @Option(parsing: .unconditional, help: "Requests one customer may send at once after a quiet spell (1 to 1000000) (env RESTOCK_CUSTOMER_BURST).")
        var customerBurst = WholeNumber(60)

        @Option(parsing: .unconditional, help: "How long a watch lasts when its subscribe names no expiresAt, such as 180d, 12h or 90s, or off (env RESTOCK_WATCH_LIFETIME).")
        var watchLifetime: String = "180d"

        @Option(parsing: .unconditional, help: "MQTT 5 message expiry of each alert, in seconds (1 to 4294967295), or off: an alert not delivered by then is dropped by the broker (env RESTOCK_ALERT_EXPIRY).")
        var alertExpiry: String = "604800"

        @Option(help: "The lowest level logged: trace, debug, info, notice, warning, error or critical (env RESTOCK_LOG_LEVEL).")
        var logLevel: String = "info"
        @Option(help: "How each log line is written: text, or json (one JSON object a line) (env RESTOCK_LOG_FORMAT).")
        var logFormat: String = "text"
        @Option(help: "Serve /livez, /readyz and /metrics (Prometheus) over HTTP on HOST:PORT, such as 127.0.0.1:9090; off unless given (env RESTOCK_HTTP).")
        var http: String?
        @Flag(help: "Wait as a standby on the live store's data directory (same machine), and take over when it stops or dies (env RESTOCK_STANDBY).")
        var standby = false

        func validate() throws {
            // An empty path would be the working directory, where the store would then leave its files (an outside trial).
            if let data, data.isEmpty { throw ValidationError("--data must name a directory, not be empty") }
            if database == "" { throw ValidationError(Self.emptyDatabase) }
            if data != nil, database != nil {
                throw ValidationError("--data and --database both say where the store keeps its state: give one (on PostgreSQL nothing is kept on local disk)")
            }
            _ = try databaseURL()
            _ = try limits()
            _ = try maximumWatches()
            _ = try rateLimit()
            _ = try expiries()
            _ = try logging()
            _ = try httpAddress()
        }

        /// The refusal of an empty `--database` (it was taken as given: "--data and RESTOCK_DATABASE both say…", found by
        /// an outside trial).
        static let emptyDatabase = "--database is empty: give a PostgreSQL URL such as postgres://user@host:5432/database, or leave it out"

        /// `--database` parsed, or `nil` when not given (the state is in the data directory).
        func databaseURL() throws -> DatabaseURL? {
            do {
                return try database.map(DatabaseURL.init(parsing:))
            } catch {
                throw ValidationError(error.description)
            }
        }

        /// Where the store keeps its state: PostgreSQL (`--database`, with `RESTOCK_DATABASE_PASSWORD` when the URL names no
        /// password), or `nil` for the data directory.
        func storage() throws -> PostgresStorage? {
            try databaseURL().map { url in
                PostgresStorage(settings: PostgresSettings(url, password: ProcessInfo.processInfo.environment["RESTOCK_DATABASE_PASSWORD"]))
            }
        }

        /// `--http` parsed, or `nil` when not given.
        func httpAddress() throws -> HTTPListenAddress? {
            do {
                return try http.map(HTTPListenAddress.init(parsing:))
            } catch {
                throw ValidationError(error.description)
            }
        }

        /// `--log-level` and `--log-format` as swift-log takes them.
        func logging() throws -> (level: Logger.Level, format: LogFormat) {
            guard let level = Logger.Level(rawValue: logLevel.lowercased()) else {
                let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
                throw ValidationError("--log-level must be one of \(levels), not \(quotedValue(logLevel))")
            }
            guard let format = LogFormat(rawValue: logFormat.lowercased()) else {
                throw ValidationError("--log-format must be text or json, not \(quotedValue(logFormat))")
            }
            return (level, format)
        }

        /// `--watch-lifetime` and `--alert-expiry` as the store takes them: `nil` for off.
        func expiries() throws -> (watchLifetime: Duration?, alertExpiry: Duration?) {
            if watchLifetime.isEmpty { throw emptyOption("watch-lifetime") }
            do {
                let lifetime = watchLifetime.lowercased() == "off" ? nil : Duration.seconds(try ExpiryText.seconds(watchLifetime, option: "--watch-lifetime"))
                if alertExpiry.isEmpty { throw emptyOption("alert-expiry") }
                if alertExpiry.lowercased() == "off" { return (lifetime, nil) }
                guard alertExpiry.allSatisfy({ $0.isASCII && $0.isNumber }), let seconds = UInt32(alertExpiry), seconds > 0 else {
                    throw ValidationError("--alert-expiry must be a whole number of seconds from 1 to 4294967295, or off, not \(quotedValue(alertExpiry))")
                }
                return (lifetime, .seconds(Int64(seconds)))
            } catch let error as ExpiryText.Invalid {
                throw ValidationError(error.description)
            }
        }

        /// `--max-watches` as the store takes it: `nil` for off.
        func maximumWatches() throws -> Int? {
            if maxWatches.isEmpty { throw emptyOption("max-watches") }
            if maxWatches.lowercased() == "off" { return nil }
            guard maxWatches.allSatisfy({ $0.isASCII && $0.isNumber }), let limit = Int(maxWatches), Store.maximumWatchesRange.contains(limit) else {
                throw ValidationError(
                    "--max-watches must be a whole number from 1 to 1000000000, or off, not \(quotedValue(maxWatches))")
            }
            return limit
        }

        /// `--alerts-per-unit`, `--drain-timeout` and `--max-watches-per-customer` as the store takes them.
        func limits() throws -> (alertsPerUnit: Int, drainTimeout: Double, maximumWatchesPerCustomer: Int) {
            (
                try alertsPerUnit.checked(0...1_000_000, option: "alerts-per-unit") { "--alerts-per-unit must be 0 (off) through 1000000, not \($0)" },
                try drainTimeout.checked(0...3600, option: "drain-timeout"),
                try maxWatchesPerCustomer.checked(Store.maximumWatchesPerCustomerRange, option: "max-watches-per-customer") {
                    "--max-watches-per-customer must be 1 through 1000000, not \($0)"
                }
            )
        }

        /// `--customer-rate` and `--customer-burst` as the store takes them: `nil` rate for off.
        func rateLimit() throws -> (rate: Double?, burst: Int) {
            let customerBurst = try customerBurst.checked(1...1_000_000, option: "customer-burst") { "--customer-burst must be 1 through 1000000, not \($0)" }
            if customerRate.isEmpty { throw emptyOption("customer-rate") }
            if customerRate.lowercased() == "off" { return (nil, customerBurst) }
            // A plain decimal number only: Double("0x10") would read hexadecimal, Double("inf") infinity.
            let decimal = customerRate.wholeMatch(of: /[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/) != nil
            guard decimal, let rate = Double(customerRate), rate.isFinite, (0.001...1_000_000).contains(rate) else {
                throw ValidationError("--customer-rate must be a number of requests per second from 0.001 to 1000000, or off, not \(quotedValue(customerRate))")
            }
            return (rate, customerBurst)
        }

        func run() async throws {
            // A server keeps serving when what reads its log goes away (`restock serve | head`): the lines are dropped.
            signal(SIGPIPE, SIG_IGN)
            let store = try connection.storeID()
            let directory = data.map { URL(fileURLWithPath: $0) } ?? Self.defaultDataDirectory(for: store.rawValue)
            let (level, format) = try logging()
            LoggingSystem.bootstrap { label in format.handler(label: label, level: level) }
            var logger = Logger(label: "restock.store")
            logger.logLevel = level
            let storage = try storage()
            // Before anything is made: a port in use, refused once the store had made its data directory (an outside trial).
            if let address = try httpAddress() { try await OperationsServer.checkAvailable(address) }
            logger.info("store \(store) keeps its state in \(storage?.location ?? directory.path)")
            for line in OptionSources.setAsideInThisRun.withLock({ $0 }) { logger.notice("\(line)") }
            StoreService.installCrashContainment()
            if try connection.brokerSettings().protocolVersion == .v311, try expiries().alertExpiry != nil {
                logger.notice("--alert-expiry has no effect over MQTT 3.1.1: an alert waits in its customer's session until read (docs/contract.md, \"Alert expiry\")")
            }
            // Bootstrapped before the store makes its metrics; without --http nothing reads them, and they cost nothing.
            let address = try httpAddress()
            let metrics = address.map { _ in PrometheusMetrics.bootstrap() }
            let health = StoreHealth()
            let (limits, rateLimit, expiries) = (try limits(), try rateLimit(), try expiries())
            var configuration = StoreService.Configuration(
                connection: try connection.brokerSettings(), store: store, prefix: connection.prefix,
                dataDirectory: directory, alertsPerUnit: limits.alertsPerUnit, drainTimeout: .milliseconds(Int(limits.drainTimeout * 1000)),
                maximumWatchesPerCustomer: limits.maximumWatchesPerCustomer, customerRequestRate: rateLimit.rate,
                customerRequestBurst: rateLimit.burst, watchLifetime: expiries.watchLifetime, alertExpiry: expiries.alertExpiry,
                maximumWatches: try maximumWatches())
            configuration.storage = storage
            let service = StoreLauncher(configuration: configuration, standby: standby, logger: logger, health: health)
            // The endpoint first: the group stops it last, so that it answers (503, draining) while the store drains.
            var services: [any Service] = [service]
            if let address, let metrics {
                services.insert(OperationsServer(address: address, health: health, metrics: metrics, logger: logger), at: 0)
            }
            // However the store ends (stopped, taken over, failed), the endpoint stops gracefully after it, not cancelled.
            // The lifecycle's own lines ("Starting service" and each service's fields) are for its developers, not operators.
            var groupLogger = logger
            groupLogger.logLevel = max(level, .info)
            let group = ServiceGroup(
                configuration: .init(
                    services: services.map {
                        .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
                    },
                    gracefulShutdownSignals: [.sigterm, .sigint], logger: groupLogger))
            // What this start makes of the data directory is removed when the store is refused because another instance
            // runs on the broker: it holds no request (the session is taken only after the claim), and a refusal leaves
            // nothing behind (it left a whole empty store: found by outside trials). A directory that was there is left
            // as it was: emptied again if it was empty, untouched if it held anything.
            let made = storage == nil ? StartLeftovers(directory) : nil
            do {
                try await group.run()
            } catch RestockMQTTError.storeAlreadyRunning(let store, let instance) {
                made?.remove()
                throw RestockMQTTError.storeAlreadyRunning(store: store, instance: instance)
            }
        }

        /// What a start makes of a data directory, to be removed if the store is refused: the highest of its folders that
        /// did not exist, or, in a directory that held no store, the files that were not there (a directory that held
        /// other files was left with the store's beside them: an outside trial). A store's directory is left as it is:
        /// its write-ahead logs may hold its commits.
        struct StartLeftovers {
            /// The highest folder on the way that did not exist; `nil` when the directory did.
            private var firstMissing: URL?
            /// The directory, when it existed and held no store, and the names it held.
            private var before: (directory: URL, names: Set<String>)?

            init(_ directory: URL) {
                var current = directory.standardizedFileURL
                var status = stat()
                while lstat(current.path, &status) != 0, errno == ENOENT {
                    firstMissing = current
                    let parent = current.deletingLastPathComponent()
                    if parent.path == current.path { break }
                    current = parent
                }
                guard firstMissing == nil, let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path),
                    !names.contains(where: { $0.hasPrefix("store.sqlite") || $0.hasPrefix("journal.sqlite") })
                else { return }
                before = (directory, Set(names))
            }

            func remove() {
                if let firstMissing { try? FileManager.default.removeItem(at: firstMissing) }
                if let before {
                    for name in (try? FileManager.default.contentsOfDirectory(atPath: before.directory.path)) ?? [] where !before.names.contains(name) {
                        try? FileManager.default.removeItem(at: before.directory.appendingPathComponent(name))
                    }
                }
            }
        }

        /// `$XDG_STATE_HOME/restock/{store}`, or `$HOME/.local/state/restock/{store}` (the XDG Base Directory
        /// specification): a variable that is empty or not an absolute path is passed over, as the specification says (an
        /// empty one put the store in the working directory, and `$HOME` was not read: found by an outside trial); the
        /// user's home from the password database when `$HOME` is passed over too.
        static func defaultDataDirectory(for store: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
            func absolute(_ name: String) -> URL? {
                environment[name].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0, isDirectory: true) : nil }
            }
            let base =
                absolute("XDG_STATE_HOME")
                ?? (absolute("HOME") ?? FileManager.default.homeDirectoryForCurrentUser).appendingPathComponent(".local/state")
            return base.appendingPathComponent("restock").appendingPathComponent(store)
        }
    }
}
