/// How often a watch alerts.
public enum WatchMode: String, Codable, Sendable, CaseIterable {
    /// Alert once, then the watch is removed. The default.
    case once
    /// Stay, and alert again on each later change from unsatisfied to satisfied.
    case every
}
