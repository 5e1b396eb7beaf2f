/// The version of RestockAlerter this binary is: what `restock --version` prints, and what a data directory written by
/// a newer one is told apart from (``SchemaVersion``).
public enum RestockVersion {
    /// The release, as `major.minor.patch`.
    public static let current = "1.1.0"
}
