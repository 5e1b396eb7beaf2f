import ArgumentParser

/// `--wait S`: how long a command waits for the store and its answer. Given (on the command line, in the environment
/// or the config file), a store the broker holds no status of yet is waited for too, within it: a broker restarted
/// without its retained messages forgets the status until the store is back a moment later. Left out, the default
/// wait applies and such a store is refused at once, so that a mistyped `--store` says so without waiting.
struct WaitOption: ParsableArguments {
    @Option(
        parsing: .unconditional,
        help: "Seconds to wait for the store and its answer (default 10, at most 86400); given, a store not yet seen on the broker is waited for too (env RESTOCK_WAIT).")
    var wait: Seconds?

    /// The wait when none is given.
    static let defaultSeconds = 10.0

    /// The seconds to wait (checked by ``validate()``).
    var seconds: Double { (try? wait?.checked(waitRange, option: "wait")) ?? Self.defaultSeconds }

    func validate() throws {
        _ = try wait?.checked(waitRange, option: "wait")
    }
}
