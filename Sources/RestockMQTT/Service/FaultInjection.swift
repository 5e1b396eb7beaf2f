import Foundation

/// Faults injected on purpose by the reliability run (`make reliability`), named by the environment
/// variable `RESTOCK_FAULT`. Unset, as in production, nothing here ever fires.
enum FaultInjection {
    /// `RESTOCK_FAULT=crash-after-commit`: the process dies with SIGKILL right after the first transaction
    /// that raised alerts commits, before any of them is published: the window the outbox exists for.
    static let crashAfterCommit = ProcessInfo.processInfo.environment["RESTOCK_FAULT"] == "crash-after-commit"

    /// Dies at once, as a power cut would: no cleanup, no goodbye.
    static func crash(_ what: String) -> Never {
        FileHandle.standardError.write(Data("fault injected: \(what)\n".utf8))
        kill(getpid(), SIGKILL)
        fatalError("SIGKILL did not end the process")
    }
}
