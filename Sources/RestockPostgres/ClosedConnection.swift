import Logging
import PostgresNIO

extension PostgresConnection {
    /// Sends `query` and returns its answer, failed with ``PostgresFailure/ConnectionClosed`` when the connection was
    /// closed under it. postgres-nio writes a statement to its channel without a promise, and once the channel is closed
    /// no handler is left to answer it: the answer never comes, and a caller waited for its whole limit (found by an
    /// outside trial: a standby had no connection for 11 s after two restarts of the server in a row and took a store
    /// over in 18 s, not 6; a store's connection made to a server that stopped at once hung for 15 s; `ClosedConnectionTests`).
    ///
    /// The check runs on the connection's event loop after the write, which was queued there first: a channel still
    /// open then has the statement in its handler, which answers it or fails it when the connection ends.
    func answer(to query: PostgresQuery, logger: Logger) -> EventLoopFuture<PostgresQueryResult> {
        failedIfClosed(self.query(query, logger: logger))
    }

    /// `answer`, of a statement written to this connection just before, failed when the connection is closed by the time
    /// the event loop gets to it (``answer(to:logger:)``); the first of the two outcomes counts.
    private func failedIfClosed<T: Sendable>(_ answer: EventLoopFuture<T>) -> EventLoopFuture<T> {
        let promise = eventLoop.makePromise(of: T.self)
        answer.cascade(to: promise)
        eventLoop.execute {
            if self.isClosed { promise.fail(PostgresFailure.ConnectionClosed()) }
        }
        return promise.futureResult
    }
}

extension PostgresFailure {
    /// A statement sent on a connection that was closed (``PostgresConnection/answer(to:logger:)``).
    struct ConnectionClosed: Error, CustomStringConvertible {
        var description: String { "the connection was closed before the server answered" }
    }
}
