import Deadlines
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an HTTP GET answered.
public struct HTTPAnswer: Sendable {
    /// The status code.
    public let status: Int
    /// The body, as UTF-8.
    public let body: String
}

/// One GET (or another `method`: HEAD) of `url` (a loopback address), bounded by `timeout` seconds.
/// - Throws: when nothing answers (refused, timed out).
public func httpGet(_ url: String, method: String = "GET", timeout: Double = 5) async throws -> HTTPAnswer {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    request.timeoutInterval = timeout
    let (data, response) = try await URLSession.shared.data(for: request)
    return HTTPAnswer(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: String(decoding: data, as: UTF8.self))
}

extension StoreProcess {
    /// The address of its HTTP endpoint (`--http 127.0.0.1:0`), as its log names it once it serves.
    public func httpURL(within seconds: Double = 30) async throws -> String {
        try await waitUntil("the store's HTTP endpoint", within: seconds) { self.servedURL != nil || self.exitStatus != nil }
        guard let url = servedURL else { throw StoreExited(status: exitStatus ?? -1, log: log) }
        return url
    }

    private var servedURL: String? {
        log.firstMatch(of: /serving \/livez, \/readyz and \/metrics on (http:\/\/127\.0\.0\.1:[0-9]+)/).map { String($0.1) }
    }
}
