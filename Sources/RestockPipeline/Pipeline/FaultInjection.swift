import Foundation

/// Faults injected on purpose by the tests and the reliability run (`make reliability`), named by the
/// environment variable `RESTOCK_FAULT`. Compiled in debug builds only (`RESTOCK_FAULT_INJECTION`, see
/// Package.swift): a release build — the Docker image, `make bench` — has no such hook, and never reads it.
package enum FaultInjection {
    #if RESTOCK_FAULT_INJECTION
    private static let fault = ProcessInfo.processInfo.environment["RESTOCK_FAULT"]
    #else
    private static let fault: String? = nil
    #endif

    /// `RESTOCK_FAULT=crash-after-commit`: the process dies with SIGKILL right after the first transaction
    /// that raised alerts commits, before any of them is published: the window the outbox exists for.
    static let crashAfterCommit = fault == "crash-after-commit"

    /// `RESTOCK_FAULT=crash-before-closing-the-former-publisher`: a store taking over from an owner that may still live
    /// dies with SIGKILL after it took the lease, before it has the broker close that owner's publishing connection.
    package static let crashBeforeClosingTheFormerPublisher = fault == "crash-before-closing-the-former-publisher"

    /// `RESTOCK_FAULT=trap-on-request:TEXT`: the process traps, as a bug would, while it applies any request
    /// whose payload contains TEXT — every time, so the store's crash containment is what ends it.
    static let trapOnRequest: [UInt8]? = {
        let prefix = "trap-on-request:"
        guard let fault, fault.hasPrefix(prefix) else { return nil }
        return Array(fault.utf8.dropFirst(prefix.utf8.count))
    }()

    /// `RESTOCK_FAULT=disk-full-while:PATH`: while the file PATH exists, every write to the request log and the
    /// store's state fails as SQLite fails on a full disk (`SQLITE_FULL`), for tests that cannot mount a small file
    /// system; `make reliability` fills a real one.
    static let diskFullFlag: String? = {
        let prefix = "disk-full-while:"
        guard let fault, fault.hasPrefix(prefix) else { return nil }
        return String(fault.dropFirst(prefix.count))
    }()

    /// Traps when `payload` is the request chosen by `RESTOCK_FAULT=trap-on-request:TEXT`.
    static func trapIfChosen(_ payload: [UInt8]) {
        guard let chosen = trapOnRequest, !chosen.isEmpty, payload.count >= chosen.count else { return }
        for start in 0...(payload.count - chosen.count) where payload[start..<(start + chosen.count)].elementsEqual(chosen) {
            FileHandle.standardError.write(Data("fault injected: trap while applying a chosen request\n".utf8))
            fatalError("trap-on-request")
        }
    }

    /// Dies at once, as a power cut would: no cleanup, no goodbye.
    package static func crash(_ what: String) -> Never {
        FileHandle.standardError.write(Data("fault injected: \(what)\n".utf8))
        kill(getpid(), SIGKILL)
        fatalError("SIGKILL did not end the process")
    }
}
