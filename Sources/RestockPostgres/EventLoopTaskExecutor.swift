import NIOCore

/// Runs the jobs of a task that prefers it on one event loop: the loop of the connection a prepared statement is sent on
/// (``Statements/query(prepared:within:)``). postgres-nio's `execute` of a prepared statement is `async`; begun on the
/// connection's own loop, it writes there, and resumes there when the server answers, so that the caller blocked on its
/// result waits through no more threads than for a query's future.
final class EventLoopTaskExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
