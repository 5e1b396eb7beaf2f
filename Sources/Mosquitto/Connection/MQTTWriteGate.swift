/// Asked by a client's network thread whether this process may still write to the broker, at the moments the thread
/// cannot know it: after the thread was held up — the process frozen (`SIGSTOP`, a paused VM), or starved — for longer
/// than ``pauseLimit`` between two looks, and before every reconnect.
///
/// A process that may have lost its right to publish meanwhile answers `false` — a store whose data directory's lease a
/// standby took over while it was frozen (docs/architecture.md, "Ownership: the lease"). The client then writes nothing
/// more: the socket is shut without a write, no reconnect follows, and what libmosquitto still had queued (QoS 1
/// messages sent before the freeze, awaiting their turn) never reaches the broker. The client waits for
/// ``MQTTClient/disconnect()`` or ``MQTTClient/abandon()``.
///
/// Without a gate, a resumed process writes its queue at once, before any Swift code runs.
public protocol MQTTWriteGate: Sendable {
    /// Whether the process may still write. Called on the network thread, rarely (after a pause, before a reconnect):
    /// a local check, which may block briefly (a file), never on the network or on Swift concurrency.
    func mayWrite() -> Bool

    /// How long the network thread may go between two looks before it asks ``mayWrite()``. Its turns are at most
    /// about 100 ms apart when it is running; the default is one second.
    var pauseLimit: Duration { get }
}

extension MQTTWriteGate {
    /// One second.
    public var pauseLimit: Duration { .seconds(1) }
}
