import Foundation
import LocalBroker

/// A test host of the test's own: a network namespace joined to this machine by a veth pair, as a store on another
/// machine would be. This machine's side of the link is ``gateway``; the host's is ``address``. A broker or a database
/// that listens on the gateway address is reachable from the host; ``cut()`` takes the link down (no packet passes
/// either way, and no connection is reset: as a cable pulled), ``restore()`` brings it back.
///
/// The namespace and the link are the test's: made by ``make(_:)``, removed by ``remove()``. Addresses are in
/// 10.231.N.0/30, which nothing else on this machine uses (``make(_:)`` refuses to go on otherwise).
final class TestHost: Sendable {
    /// The namespace's name (`restock-<pid>-<N>`).
    let name: String
    /// This machine's side of the link: the address servers for the host listen on.
    let gateway: String
    /// The host's side of the link.
    let address: String
    /// The interface on this machine's side (the other end is `eth0` in the namespace).
    let interface: String

    private init(number: Int) {
        let pid = getpid()
        name = "restock-\(pid)-\(number)"
        interface = "rs\(pid % 100_000)h\(number)"
        gateway = "10.231.\(number).1"
        address = "10.231.\(number).2"
    }

    /// What runs a command on the host: `ip netns exec NAME`.
    var commandPrefix: [String] { ["ip", "netns", "exec", name] }

    /// Makes host `number` (1–250): its namespace, the link, both addresses, both ends up, and the host's loopback.
    static func make(_ number: Int) async throws -> TestHost {
        let host = TestHost(number: number)
        let routes = try await ChildProcess.run("ip", ["-4", "route", "show", "10.231.\(number).0/30"])
        guard routes.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw TestHostFailure(reason: "10.231.\(number).0/30 is in use on this machine already: \(routes.standardOutput)")
        }
        do {
            try await ip(["netns", "add", host.name])
            try await ip(["link", "add", host.interface, "type", "veth", "peer", "name", "eth0", "netns", host.name])
            try await ip(["address", "add", "\(host.gateway)/30", "dev", host.interface])
            try await ip(["link", "set", host.interface, "up"])
            try await ip(["-n", host.name, "address", "add", "\(host.address)/30", "dev", "eth0"])
            try await ip(["-n", host.name, "link", "set", "eth0", "up"])
            try await ip(["-n", host.name, "link", "set", "lo", "up"])
        } catch {
            await host.remove()
            throw error
        }
        return host
    }

    /// Takes the link down, from this machine's side: the host can reach nothing, and nothing can reach it.
    func cut() async throws { try await Self.ip(["link", "set", interface, "down"]) }

    /// Brings the link up again.
    func restore() async throws { try await Self.ip(["link", "set", interface, "up"]) }

    /// Removes the link and the namespace (whatever still runs in it loses its network).
    func remove() async {
        _ = try? await ChildProcess.run("ip", ["link", "delete", interface])
        _ = try? await ChildProcess.run("ip", ["netns", "delete", name])
    }

    /// Whether test hosts can be made here: `ip netns` needs root.
    static var available: Bool { geteuid() == 0 }

    private static func ip(_ arguments: [String]) async throws {
        let result = try await ChildProcess.run("ip", arguments)
        guard result.status == 0 else { throw TestHostFailure(reason: "ip \(arguments.joined(separator: " ")): \(result.standardError)") }
    }
}

/// A test host could not be made or changed; `reason` says why.
struct TestHostFailure: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
