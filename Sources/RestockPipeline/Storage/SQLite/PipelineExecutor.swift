import Dispatch

/// The thread of the store's pipeline: a serial dispatch queue, off Swift's cooperative pool, that runs the
/// applying and publishing stages and every SQLite call they make (the network thread's journal aside).
///
/// The stages run on it as tasks that prefer it (`withTaskExecutorPreference`): their blocking SQLite work
/// never holds a thread of the cooperative pool, and passing a committed batch from the applying stage to the
/// publisher resumes the publisher on the same thread, right after the commit, without waking another one.
/// On this machine, waking a sleeping thread costs more than a transaction; a request now wakes two (this one,
/// then the network thread to send the alert) where it woke four.
package final class PipelineExecutor: TaskExecutor, SerialExecutor, @unchecked Sendable {
    // @unchecked: the queue is thread-safe; nothing else is stored.
    private let queue: DispatchQueue

    package init(label: String) {
        queue = DispatchQueue(label: label)
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(isolatedTo: self.asUnownedSerialExecutor(), taskExecutor: self.asUnownedTaskExecutor()) }
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
}
