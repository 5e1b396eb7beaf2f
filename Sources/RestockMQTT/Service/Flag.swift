import Synchronization

/// A flag one task raises and another reads or takes: "publish every retained topic again" from the session watch to
/// the applying stage (which alone reads the store, so that nothing newer is overwritten by an older version), "the
/// claim is published" from a start to its cancellation.
final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)

    func raise() { raised.store(true, ordering: .releasing) }

    var isRaised: Bool { raised.load(ordering: .acquiring) }

    /// Whether it was raised since the last call; lowers it.
    func take() -> Bool { raised.exchange(false, ordering: .acquiringAndReleasing) }
}
