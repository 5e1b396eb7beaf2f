extension Duration {
    /// The duration in seconds, as a `Double` (for APIs that count in seconds: Dispatch, logs, figures).
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
