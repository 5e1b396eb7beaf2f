import Foundation
import LocalBroker
import RestockCore
import RestockPipeline
import RestockTestSupport
import PostgresNIO
import Testing

@testable import RestockPostgres

/// What an operator reads when the database cannot be reached or its TLS cannot be set up: one plain line naming the
/// database (never its password) and the reason, not SwiftNIO's types (issue 34: `connectionError: Connection errors:
/// SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:1, …)` and `cannot reach PostgreSQL (noSuchFilesystemObject)`).
@Suite("Errors of a database that cannot be used")
struct PostgresFailureTests {
    /// The error of reading the watches of store apple from `url`, as the store and the command line print it.
    func failure(_ url: String, password: String? = nil) async throws -> String {
        let storage = PostgresStorage(settings: PostgresSettings(try DatabaseURL(parsing: url), password: password))
        do {
            _ = try await storage.exportWatches(of: try StoreID("apple")) { _ in }
        } catch {
            return "\(error)"
        }
        Issue.record("reading \(url) did not fail")
        return ""
    }

    @Test("a server that closes the connection at once says so in plain words, not in postgres-nio's name for it (serverClosedConnection)")
    func closedAtOnce() async throws {
        // A relay to a closed port: it closes each connection it accepts at once. Whether the client's startup message
        // reached it before its close decides how the close arrives: an end (the server closed the connection) or, with
        // the message unread, a reset (found in CI: connection reset by peer). Either is said in plain words.
        let proxy = try TCPProxy(to: try freeLoopbackPort())
        let closed = try await failure("postgres://restock@127.0.0.1:\(proxy.port)/restock")
        let prefix = "cannot open postgres://restock@127.0.0.1:\(proxy.port)/restock: "
        #expect(["the server closed the connection", "connection reset by peer"].map { prefix + $0 }.contains(closed), "\(closed)")
    }

    @Test("a closed port, an unknown host, a missing or bad sslrootcert: each says so in a few plain words")
    func plainReasons() async throws {
        let port = try freeLoopbackPort()
        let refused = try await failure("postgres://restock:s3cret@127.0.0.1:\(port)/restock")
        #expect(refused == "cannot open postgres://restock@127.0.0.1:\(port)/restock: connection refused (127.0.0.1:\(port))", "\(refused)")

        let unknown = try await failure("postgres://restock@no-such-host.invalid:5432/restock")
        #expect(unknown.hasSuffix(": cannot resolve the host name no-such-host.invalid"), "\(unknown)")

        let missing = try await failure("postgres://restock@127.0.0.1:\(port)/restock?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
        #expect(missing.hasSuffix(": cannot read sslrootcert /nonexistent/ca.pem: no such file"), "\(missing)")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-pem-\(UUID().uuidString)")
        try Data("not a certificate\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let bad = try await failure("postgres://restock@127.0.0.1:\(port)/restock?sslmode=verify-ca&sslrootcert=\(file.path)")
        #expect(bad.hasSuffix(": cannot read sslrootcert \(file.path): it holds no PEM certificate that can be loaded"), "\(bad)")

        for text in [refused, unknown, missing, bad] {
            #expect(!text.contains("s3cret") && !text.contains("\n") && !text.contains("NIO") && !text.contains("Failure("), "\(text)")
        }
    }

    @Test("a function missing is named without its argument types (restock_commit's forty made one line of 500 characters: found by an outside trial), and keeps the connection; only a refusal of the data (SQLSTATE classes 22, 23, 54) may be a request's doing, not a permission or a missing function")
    func functionMissingAndDataRefusals() async throws {
        #expect(PostgresFailure.withoutArguments("function f(text, bigint[]) does not exist") == "function f(…) does not exist")
        #expect(PostgresFailure.withoutArguments("no list here") == "no list here")
        try await PrivatePostgres.with { server in
            let session = PostgresSession(settings: server.settings)
            defer { session.disconnect() }
            func refusal(_ sql: String) -> StorageError? {
                do {
                    try session.run(.write) { try $0.execute(PostgresQuery(unsafeSQL: sql)) }
                } catch {
                    return error
                }
                return nil
            }
            let missing = refusal("SELECT restock_nothing(1, 'two', ARRAY[3])")
            #expect(missing.map { "\($0)".contains("function restock_nothing(…) does not exist (SQLSTATE 42883)") } == true, "\(String(describing: missing))")
            #expect(missing?.refusesTheData == false)
            _ = try await server.psql("CREATE TABLE t (k int PRIMARY KEY, v int CHECK (v > 0))")
            _ = try await server.psql("CREATE ROLE op LOGIN")
            #expect(refusal("SELECT 1/0")?.refusesTheData == true)
            #expect(refusal("INSERT INTO t VALUES (1, -1)")?.refusesTheData == true)
            var settings = server.settings
            settings.user = "op"
            let op = PostgresSession(settings: settings)
            defer { op.disconnect() }
            do {
                try op.run(.write) { try $0.execute("INSERT INTO t VALUES (2, 2)") }
                Issue.record("a user without a grant wrote")
            } catch {
                #expect((error as? StorageError)?.refusesTheData == false && "\(error)".contains("42501"), "\(error)")
            }
        }
    }

    @Test("a server that asks for a password none was given says so in a sentence, not postgres-nio's name for it (found by an outside trial: authMechanismRequiresPassword)")
    func passwordMissing() async throws {
        try await PrivatePostgres.with { server in
            try await server.requirePassword(of: "pwuser", password: "s3cret")
            let text = try await failure("postgres://pwuser@127.0.0.1:\(server.port)/\(server.database)")
            #expect(text.hasSuffix(": the server asks for a password and none was given (RESTOCK_DATABASE_PASSWORD, or in the URL)"), "\(text)")
            // `RESTOCK_DATABASE_PASSWORD=`: none given, not a wrong one (found by an outside trial).
            let empty = try await failure("postgres://pwuser@127.0.0.1:\(server.port)/\(server.database)", password: "")
            #expect(empty.hasSuffix(": the server asks for a password and none was given (RESTOCK_DATABASE_PASSWORD, or in the URL)"), "\(empty)")
            let wrong = try await failure("postgres://pwuser:wrong@127.0.0.1:\(server.port)/\(server.database)")
            #expect(wrong.contains("password authentication failed") && !wrong.contains("wrong"), "\(wrong)")
        }
    }

    @Test("a connection nothing answered within the connect timeout names what may cause it, a host name that does not resolve among them (found in containers: a resolution that hung read as 'no answer within 5 s' alone)")
    func connectTimeoutSaysWhy() {
        let text = PostgresFailure.plain(ChannelError.connectTimeout(.seconds(5)))
        #expect(text == "no answer within 5 s (a host down, a port filtered, or a host name that does not resolve)", "\(text)")
    }
}
