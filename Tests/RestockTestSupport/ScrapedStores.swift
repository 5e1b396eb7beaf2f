import Deadlines
import Foundation
import Synchronization

/// Has every store process this process launches serve its metrics (`--http 127.0.0.1:0`) and listed for a
/// Prometheus to scrape, labelled with the scenario that runs it: `restock-reliability` reads the metrics of a whole
/// run back from Prometheus this way (docs/reliability.md). Off unless ``enable(targetsFile:)`` is called.
public enum ScrapedStores {
    private struct Target: Encodable {
        let targets: [String]
        let labels: [String: String]
    }
    private struct State {
        var file: URL?
        var scenario = ""
        var targets: [Target] = []
    }
    private static let state = Mutex(State())

    /// From now on, each store launched is listed in `targetsFile` (file service discovery's JSON) once it serves HTTP.
    public static func enable(targetsFile: URL) throws {
        try Data("[]".utf8).write(to: targetsFile)
        state.withLock { $0.file = targetsFile }
    }

    /// The label `scenario` of the stores launched from now on.
    public static func setScenario(_ scenario: String) { state.withLock { $0.scenario = scenario } }

    /// The extra arguments of a store launched now: `--http 127.0.0.1:0` when on and not given already.
    static func arguments(adding to: [String]) -> [String] {
        state.withLock { $0.file } == nil || to.contains("--http") ? [] : ["--http", "127.0.0.1:0"]
    }

    /// Watches `log` (the store's output) for the address it serves on, then lists it; gives up when the process exits.
    static func register(log: @escaping @Sendable () -> String, exited: @escaping @Sendable () -> Bool) {
        guard let scenario = state.withLock({ $0.file == nil ? nil : $0.scenario }) else { return }
        Task.detached {
            let marker = "serving /livez, /readyz and /metrics on http://"
            // The store names its address within a second of starting; a store that exits first is not listed.
            try? await waitUntil("the store's HTTP address in its log", within: 120, pollEvery: .milliseconds(100)) {
                exited() || log().contains(marker)
            }
            let text = log()
            guard let range = text.range(of: marker) else { return }
            let address = text[range.upperBound...].prefix { !$0.isWhitespace && $0 != "\"" }
            add(Target(targets: [String(address)], labels: ["scenario": scenario]))
        }
    }

    private static func add(_ target: Target) {
        state.withLock { state in
            guard let file = state.file else { return }
            state.targets.append(target)
            // Written whole and renamed into place, so that Prometheus never reads half a list.
            let temporary = file.appendingPathExtension("tmp")
            if let data = try? JSONEncoder().encode(state.targets), (try? data.write(to: temporary)) != nil {
                _ = rename(temporary.path, file.path)
            }
        }
    }
}
