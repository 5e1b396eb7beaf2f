import Deadlines
import Foundation
import PostgresNIO
import RestockPipeline
import RestockTestSupport
import Testing

@testable import RestockPostgres

extension PostgresServerTests {
    /// A statement given up unanswered (``PostgresSettings/answerTimeout``) is still the server's: a backend frozen, or
    /// slow, runs what it had read once it goes on, and commits it though its client is gone (found by an outside trial:
    /// a journal's append given up after 15 s landed after it had been made again, and a request was applied twice).
    @Suite("PostgreSQL: a statement given up")
    struct AbandonedStatementTests {
        @Test("nothing more is written until the backend of a connection given up with a statement in flight has ended; ended, it commits nothing of it")
        func givenUpCommitsNothing() async throws {
            try await PrivatePostgres.with { server in
                _ = try await server.psql("CREATE TABLE t (v int)")
                var settings = server.settings
                settings.answerTimeout = .seconds(1)
                let session = PostgresSession(settings: settings)
                defer { session.disconnect() }
                let pid = try session.run(.read) { try $0.query("SELECT pg_backend_pid()").first?.decode(Int32.self) } ?? 0
                #expect(pid > 0)
                // The server process frozen: the statement sent to it waits unanswered, and is given up.
                #expect(kill(pid_t(pid), SIGSTOP) == 0)
                var resumed = false
                defer { if !resumed { kill(pid_t(pid), SIGCONT) } }
                #expect(throws: StorageError.self) { try session.run(.write) { try $0.execute("INSERT INTO t VALUES (1)") } }

                // While that process lives, it could still commit its statement: the next write waits, and is refused.
                do {
                    try session.run(.write) { try $0.execute("INSERT INTO t VALUES (2)") }
                    Issue.record("written while the process of the statement given up could still commit it")
                } catch let error as StorageError {
                    #expect(error.isRetriable, "\(error)")
                    #expect("\(error)".contains("a statement given up on an earlier connection may still run on the server (its backend, pid \(pid)"), "\(error)")
                } catch {
                    Issue.record("not a storage error: \(error)")
                }

                // Refused again, on the same connection: one process given up, not one more per try.
                #expect(throws: StorageError.self) { try session.run(.write) { try $0.execute("INSERT INTO t VALUES (2)") } }
                #expect(session.abandonedProcesses == 1)

                // Going on, it ends (it was told to) before it commits what it had read; then writes go on.
                kill(pid_t(pid), SIGCONT)
                resumed = true
                try await waitUntil("the write taken", within: 30) {
                    (try? session.run(.write) { try $0.execute("INSERT INTO t VALUES (2)") }) != nil
                }
                let rows = try await server.psql("SELECT string_agg(v::text, ',' ORDER BY v) FROM t").trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(rows == "2", "the statement given up landed after all: \(rows)")
            }
        }
    }
}
