import Deadlines
import Foundation
import Logging
import PostgresNIO
import RestockTestSupport
import Testing

@testable import RestockPostgres

extension PostgresServerTests {
    /// A statement sent on a connection the server has closed fails at once, where it waited for its answer's limit:
    /// postgres-nio writes it to the closed channel with no promise, and its answer never comes (found by an outside
    /// trial: a standby had no connection for 11 s after two restarts of the server in a row, and took a store over in
    /// 18 s, not 6; a store's connection made to a server that stopped at once hung for the 15 s limit).
    @Suite("PostgreSQL: a connection closed under a statement")
    struct ClosedConnectionTests {
        /// A statement to prepare.
        struct One: PostgresPreparedStatement {
            static let sql = "SELECT 1::int8"
            func makeBindings() -> PostgresBindings { PostgresBindings() }
            func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
        }

        @Test("a statement on a connection the server ended, sent unnamed or prepared, fails at once as a closed connection, not at its answer's limit (here a minute)")
        func statementOnAnEndedConnection() async throws {
            try await PrivatePostgres.with { server in
                let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
                let logger = Logger(label: "test")
                let connection = try await PostgresConnection.connect(
                    on: group.next(), configuration: PostgresSession.configuration(of: server.settings, server: server.settings.servers[0]),
                    id: 1, logger: logger
                ).get()
                let pid = try Statements(connection: connection, logger: logger, answerTimeout: .seconds(60))
                    .query("SELECT pg_backend_pid()").first!.decode(Int32.self)
                _ = try await server.psql("SELECT pg_terminate_backend(\(pid))")
                try await waitUntil("the connection closed by the server", within: 10) { connection.isClosed }
                let statements = Statements(connection: connection, logger: logger, answerTimeout: .seconds(60))
                // On a thread of its own: the calls block. A statement sent unnamed, and one prepared.
                let failed = try await withDeadline(20, waitingFor: "the statements' failures") {
                    await Task.detached {
                        [Result { _ = try statements.query("SELECT 1") }, Result { _ = try statements.query(prepared: One()) }]
                    }.value
                }
                for outcome in failed {
                    #expect(throws: PostgresFailure.ConnectionClosed.self) { try outcome.get() }
                }
                try? await connection.close().get()
                try await group.shutdownGracefully()
            }
        }
    }
}
