import Foundation
import Mosquitto

/// A `--broker` value read: one broker URL, or a comma-separated list of them (the brokers of one cluster, tried in
/// turn), with the credentials a URL may carry (`mqtt://user:password@host:port`, percent-encoded).
struct BrokerList {
    /// The brokers, in the order given; never empty.
    let addresses: [BrokerAddress]
    /// The user name of the URLs, if any carries one (all that carry one must carry the same).
    let username: String?
    /// The password of the URLs, likewise.
    let password: String?

    /// The most brokers a list may name.
    static let maximumCount = 64

    /// - Throws: ``MQTTError/invalidConfiguration(_:)`` naming the element and what is wrong with it.
    init(_ text: String) throws(MQTTError) {
        let elements = text.split(separator: ",", omittingEmptySubsequences: false).map(Self.trimmingSpaces)
        guard elements.count <= Self.maximumCount else {
            throw .invalidConfiguration("the broker list names \(elements.count) brokers; at most \(Self.maximumCount)")
        }
        var addresses: [BrokerAddress] = []
        var credentials: [(user: String?, password: String?)] = []
        for (index, element) in elements.enumerated() {
            let position = elements.count > 1 ? " (broker \(index + 1) of the list)" : ""
            guard !element.isEmpty else {
                throw .invalidConfiguration("the broker list has an empty element\(position): separate URLs with one comma")
            }
            let (address, userInfo): (String, (user: String?, password: String?))
            do { (address, userInfo) = try Self.splitCredentials(element) } catch { throw .invalidConfiguration("\(error.detail)\(position)") }
            do { addresses.append(try BrokerAddress(url: address)) } catch { throw .invalidConfiguration("\(error.detail)\(position)") }
            credentials.append(userInfo)
        }
        guard Set(addresses.map(\.usesTLS)).count == 1 else {
            throw .invalidConfiguration("the broker list mixes mqtt:// and mqtts://: use one scheme for every broker")
        }
        var named = Set<BrokerAddress>()
        if let twice = addresses.first(where: { !named.insert($0).inserted }) {
            throw .invalidConfiguration("the broker list names \(twice) twice")
        }
        let given = credentials.filter { $0.user != nil }
        guard Set(given.map { "\($0.user ?? "")\u{0}\($0.password ?? "\u{1}")" }).count <= 1 else {
            throw .invalidConfiguration("the broker list carries different user names or passwords: give them once, with --username and --password")
        }
        self.addresses = addresses
        self.username = given.first?.user
        self.password = given.first?.password
    }

    /// The element without the spaces and tabs at either end (`a, b` is a list of two).
    private static func trimmingSpaces(_ element: Substring) -> String {
        String(element.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    /// `mqtt://user:password@host:port` → (`mqtt://host:port`, user, password).
    private static func splitCredentials(_ url: String) throws(MQTTError) -> (String, (user: String?, password: String?)) {
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].lastIndex(of: "@") else { return (url, (nil, nil)) }
        let userInfo = url[scheme.upperBound..<at]
        let address = String(url[..<scheme.upperBound] + url[url.index(after: at)...])
        let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let user = parts[0].removingPercentEncoding, !user.isEmpty,
            let secret = parts.count > 1 ? parts[1].removingPercentEncoding : ""
        else {
            throw .invalidConfiguration("the broker URL has a bad user name or password before @ (percent-encode special characters)")
        }
        // `user:@host` is an empty password, which was sent as one (found by an outside trial); `user@host` is none.
        guard parts.count == 1 || !secret.isEmpty else {
            throw .invalidConfiguration("the broker URL has an empty password after ':': leave out the ':' for a user with no password")
        }
        return (address, (user, parts.count > 1 ? secret : nil))
    }
}

extension MQTTError {
    /// The detail of an ``invalidConfiguration(_:)``, or the description of any other error.
    fileprivate var detail: String {
        if case .invalidConfiguration(let detail) = self { return detail }
        return description
    }
}
