/// Where a store's PostgreSQL database is and how to log in: a server, a user and a database, without TLS for now.
/// Several stores may share one database: every row is keyed by its store.
package struct PostgresSettings: Sendable, Hashable {
    /// The server's host name or address.
    package var host: String
    /// The server's port.
    package var port: Int
    /// The user to log in as.
    package var user: String
    /// The user's password; `nil` where the server trusts the connection.
    package var password: String?
    /// The database that holds the `restock_` tables.
    package var database: String
    /// How long a connection may take to be made before it counts as failed.
    package var connectTimeout: Duration = .seconds(5)
    /// How long a statement waits for a lock another session holds before it fails as ``StorageError/Kind/locked``.
    package var lockTimeout: Duration = .seconds(5)

    /// The settings of `database` on `host`:`port`, as `user`.
    package init(host: String, port: Int = 5432, user: String, password: String? = nil, database: String) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
    }

    /// `postgresql://user@host:port/database`, without the password: what logs and errors name.
    package var location: String { "postgresql://\(user)@\(host):\(port)/\(database)" }
}
