/// A customer's alerts as an `AsyncSequence`: every alert raised for the customer after the inbox was made, in the
/// order they were delivered (see ``RestockObserver``), buffered so that a slow reader never holds up the store.
///
/// The inbox observes the store for as long as it or an iterator of it lives: when the reading task is
/// cancelled, or the inbox is released, its observer is unregistered.
public struct CustomerInbox: AsyncSequence, Sendable {
    /// Each element is one alert.
    public typealias Element = RestockAlert

    private let stream: AsyncStream<RestockAlert>

    /// An inbox whose observer `observe` registers.
    init(observe: (any RestockObserver) -> ObservationToken) {
        let (stream, continuation) = AsyncStream.makeStream(of: RestockAlert.self, bufferingPolicy: .unbounded)
        let token = observe(ClosureObserver { continuation.yield($0) })
        continuation.onTermination = { _ in token.cancel() }
        self.stream = stream
    }

    /// An iterator over the alerts from now on.
    public func makeAsyncIterator() -> AsyncStream<RestockAlert>.Iterator {
        stream.makeAsyncIterator()
    }
}
