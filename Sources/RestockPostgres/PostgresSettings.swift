import RestockPipeline

/// Where a store's PostgreSQL database is and how to log in (`--database`, ``DatabaseURL``): the servers to try, in
/// order, for the one that takes writes; a user and a database; TLS. Several stores may share one database: every row
/// is keyed by its store.
package struct PostgresSettings: Sendable, Hashable {
    /// The servers, tried in order: the store uses the first that answers and is not a read-only replica.
    package var servers: [DatabaseURL.Server]
    /// The user to log in as.
    package var user: String
    /// The user's password; `nil` where the server trusts the connection.
    package var password: String?
    /// The database that holds the `restock_` tables.
    package var database: String
    /// How the connection is encrypted.
    package var tls: DatabaseURL.TLSMode = .disable
    /// The certificate authorities to trust for `verify-ca` and `verify-full` (a PEM file); the system's when `nil`.
    package var rootCertificates: String?
    /// How long a lease lasts without a renewal, by the database's clock, before a standby takes it over: the
    /// contract's (``LeaseHolder/lifetime``); tests of a lease that must read as held on a loaded machine lengthen it.
    package var leaseLifetime = LeaseHolder.lifetime
    /// How long a connection may take to be made before it counts as failed.
    package var connectTimeout: Duration = .seconds(5)
    /// How long a statement's answer may take before the connection is given up (closed, and made again): a lost
    /// server may leave a connection unanswered for ever (``PostgresFailure/NoAnswer``).
    package var answerTimeout: Duration = .seconds(15)
    /// How long a statement waits for a lock another session holds before it fails as ``StorageError/Kind/locked``.
    package var lockTimeout: Duration = .seconds(5)

    /// The settings of `database` on `host`:`port`, as `user`.
    package init(host: String, port: Int = DatabaseURL.defaultPort, user: String, password: String? = nil, database: String) {
        self.servers = [DatabaseURL.Server(host: host, port: port)]
        self.user = user
        self.password = password
        self.database = database
    }

    /// The settings `url` gives; the password from `url`, else `password` (`RESTOCK_DATABASE_PASSWORD`); an empty one is none.
    package init(_ url: DatabaseURL, password: String? = nil) {
        self.servers = url.servers
        self.user = url.user
        // An empty one is none (PostgreSQL refuses empty passwords): `RESTOCK_DATABASE_PASSWORD=` read as a wrong password
        // (found by an outside trial).
        self.password = [url.password, password].lazy.compactMap { $0 }.first { !$0.isEmpty }
        self.database = url.database
        self.tls = url.tls
        self.rootCertificates = url.rootCertificates
    }

    /// `postgres://user@host:port[,host:port…]/database`, without the password: what logs, errors and /readyz name.
    package var location: String {
        "postgres://\(user)@\(servers.map(\.description).joined(separator: ","))/\(database)"
    }
}
