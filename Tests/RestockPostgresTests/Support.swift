import Testing
import Foundation
import RestockCore
import RestockPipeline
import RestockPostgres
import RestockTestSupport

func customer(_ raw: String) -> CustomerID { try! CustomerID(raw) }
func sku(_ raw: String) -> SKU { try! SKU(raw) }
let apple = try! StoreID("apple")
let pear = try! StoreID("pear")
let appleTopics = try! RestockTopics(store: apple)

/// The suites that start a PostgreSQL server of their own for each test, one test at a time: sixteen servers starting at
/// once beside the rest of `make test` (each `initdb`, each polled until it answers) starved the other suites' stores,
/// which then did not come online within a minute.
@Suite(.serialized)
enum PostgresServerTests {}

extension PrivatePostgres {
    /// The settings of the server's database, as the superuser.
    var settings: PostgresSettings { PostgresSettings(host: host, port: port, user: user, database: database) }

    /// The backend of the server's database.
    var backend: PostgresStorage { PostgresStorage(settings: settings) }

    /// The settings of a new user `name` who may read and write the store's tables (made by a first start as the superuser),
    /// as an operator grants them, and may execute functions only as PostgreSQL grants everyone.
    func tableUser(_ name: String) async throws -> PostgresSettings {
        _ = try await psql("CREATE ROLE \(name) LOGIN")
        _ = try await psql("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO \(name)")
        _ = try await psql("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO \(name)")
        var settings = settings
        settings.user = name
        return settings
    }

    /// Opens the store apple as the superuser, to make its schema, and closes it.
    func makeSchema() throws {
        let first = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
        first.ownership.release()
        first.releaseDirectory()
    }
}

/// A temporary directory, removed when released: a SQLite data directory for the differential test.
final class TemporaryDirectory {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("restock-pg-test-\(UUID().uuidString)")
    init() { try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// One request to journal, on `customer`'s subscribe topic.
func request(_ who: String = "c0", payload: String = "{}") -> (topic: String, payload: [UInt8], size: Int, retained: Bool) {
    (topic: appleTopics.subscribe(customer(who)), payload: Array(payload.utf8), size: payload.utf8.count, retained: false)
}
