import CoreMetrics
import Prometheus
import RestockMQTT

/// swift-prometheus as swift-metrics' backend for `restock serve --http`, bootstrapped once: the same registry as
/// swift-prometheus's own factory, with the help line of each of the store's metrics (``StoreMetric/all``), which
/// Prometheus's lint (`promtool check metrics`) asks for and swift-metrics has no way to pass.
struct PrometheusMetrics: MetricsFactory {
    let registry = PrometheusCollectorRegistry()
    private let help = Dictionary(uniqueKeysWithValues: StoreMetric.all.map { ($0.name, $0.help) })
    /// From a millisecond (applying a small batch) to 10 s (acknowledgements from a broker far behind).
    private let buckets: [Duration] = [
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// Makes this swift-metrics' backend; returns the function that renders every metric in the text format.
    static func bootstrap() -> @Sendable () -> [UInt8] {
        let factory = PrometheusMetrics()
        MetricsSystem.bootstrap(factory)
        return { [registry = factory.registry] in registry.emitToBuffer() }
    }

    /// `label` as Prometheus names it, with its help line.
    private func described(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: help[label] ?? "")
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: described(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: described(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: described(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: described(label), labels: dimensions, buckets: [1, 10, 100, 1_000, 10_000])
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: described(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: described(label), labels: dimensions, buckets: buckets)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
