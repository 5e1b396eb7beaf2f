import Foundation
import FuzzSupport
import Mosquitto

// Fuzz target (b): broker URLs → `BrokerAddress(url:)`, and lists of them → `BrokerSettings(url:)` (BrokerListFuzz.swift).
//
// Checked for every input: parsing never traps; a parsed address has a non-empty host without `/` or `@`,
// and with a colon only where the URL had it in brackets, and a port in 1…65535; TLS exactly for `mqtts://`;
// its `description` ("the address as a URL") parses back to the same host, port and TLS. For URLs built from
// known-good parts (below), the exact result is checked too.

@_cdecl("BrokerURLFuzz_main")
func brokerURLFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv) { data, size in fuzz(data!, size) }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let url: String
    var expected: Expected?
    let mode = input.byte()
    if mode & 3 == 3 { return fuzzList(&input) }
    if mode & 1 == 0 {
        // Any text at all.
        url = String(decoding: input.rest(), as: UTF8.self)
    } else {
        (url, expected) = assemble(&input)
    }
    if showInputs { print("url \(String(reflecting: url))") }
    let address: BrokerAddress
    do {
        address = try BrokerAddress(url: url)
    } catch {
        check(!error.description.isEmpty, "a refusal of \(String(reflecting: url)) says nothing")
        if let expected, case .parsed(let host, let port, let tls) = expected {
            fatalError("refused \(String(reflecting: url)), which is host \(host) port \(port) tls \(tls): \(error)")
        }
        return 0
    }
    check(!address.host.isEmpty, "\(String(reflecting: url)) parsed with an empty host")
    check(!address.host.contains("/") && !address.host.contains("@"), "\(String(reflecting: url)) parsed with host \(String(reflecting: address.host))")
    check((1...65_535).contains(address.port), "\(String(reflecting: url)) parsed with port \(address.port)")
    check(
        !address.host.contains(":") || url.contains("[\(address.host)]"),
        "\(String(reflecting: url)) parsed with host \(String(reflecting: address.host)), a colon out of brackets")
    check(address.usesTLS == url.hasPrefix("mqtts://"), "\(String(reflecting: url)) parsed with usesTLS \(address.usesTLS)")
    switch expected {
    case .parsed(let host, let port, let tls)?:
        check(
            address.host == host && address.port == port && address.usesTLS == tls,
            "\(String(reflecting: url)) parsed as \(address), expected host \(host) port \(port) tls \(tls)")
    case .refused?:
        fatalError("\(String(reflecting: url)) must be refused, but parsed as \(address)")
    case nil:
        break
    }
    do {
        // The same place to connect to (host, port, TLS); credentials, if the type ever holds them, may be left
        // out of the description.
        let again = try BrokerAddress(url: address.description)
        check(
            again.host == address.host && again.port == address.port && again.usesTLS == address.usesTLS,
            "\(String(reflecting: url)) parsed as \(address), which parses back as \(again)")
    } catch {
        fatalError("\(String(reflecting: url)) parsed as \(address), which does not parse back: \(error)")
    }
    return 0
}

/// With FUZZ_SHOW set, each input's URL is printed before it is parsed.
let showInputs = getenv("FUZZ_SHOW") != nil

enum Expected {
    case parsed(host: String, port: Int, tls: Bool)
    case refused
}

/// Plain hosts that are valid as they are, and hosts that are not (each with its text in the URL).
let goodHosts = ["127.0.0.1", "localhost", "broker.example.com", "mosquitto", "10.0.0.255", "a"]
let goodIPv6 = ["::1", "fe80::1", "2001:db8::8:800:200c:417a", "::"]
let oddHosts = [
    "", "[", "]", "[::1", "::1]", "[]", "host/path", "user@host", "user:pw@host", "@", "/", "h st", "h\u{0}st", "é.example",
    "[::1]x", "[a]:b", "a]:b", "x:y", "%", "#", "?", "h:", ":", "::", "[[::1]]", "\n",
]

/// Builds `scheme://[userinfo@]host[:port][/]` from the fuzzer's choices; says what it must parse as when
/// every part is known-good or the only fault is one the parser must refuse.
func assemble(_ input: inout FuzzInput) -> (String, Expected?) {
    let schemes = ["mqtt://", "mqtts://", "mqtt:/", "MQTT://", "http://", "", "mqtt://mqtt://", "mqtts:"]
    let scheme = input.pick(schemes)
    let tls = scheme == "mqtts://"
    var known = scheme == "mqtt://" || scheme == "mqtts://"

    var host: String
    var hostText: String
    switch input.byte() % 4 {
    case 0, 1:
        host = input.pick(goodHosts)
        hostText = host
    case 2:
        host = input.pick(goodIPv6)
        hostText = "[\(host)]"
    default:
        host = input.pick(oddHosts)
        hostText = host
        known = false
    }
    let userinfo = input.pick(["", "", "", "user:pw@", "user@", ":@", "u:p:q@"])
    if !userinfo.isEmpty { known = false }

    var port = tls ? 8883 : 1883
    var portText = ""
    switch input.byte() % 4 {
    case 0:
        break
    case 1, 2:
        port = input.number(small: 0...65_536)
        portText = ":\(port)"
    default:
        portText = input.pick([":", ":x", ":+1", ": 1", ":1 ", ":0x10", ":1883:1883", ":-0", ":١٢", "::", ":01883", ":00"])
        known = false
    }
    let slash = input.pick(["", "", "/", "//", "/topic"])
    if slash.count > 1 { known = false }
    let url = scheme + userinfo + hostText + portText + slash
    // Only mqtt:// and mqtts:// URLs are brokers; a known-good URL with its port out of range is refused.
    if !url.hasPrefix("mqtt://") && !url.hasPrefix("mqtts://") { return (url, .refused) }
    guard known else { return (url, nil) }
    return (url, (1...65_535).contains(port) ? .parsed(host: host, port: port, tls: tls) : .refused)
}
