import Foundation
import LocalBroker

/// A certificate authority and a server certificate for the name `localhost` only, made with openssl, plus
/// a second, unrelated authority to show that a wrong CA is refused. Connecting to `127.0.0.1` reaches the
/// same listener under a name the certificate does not carry: a wrong host name.
public struct TestCertificates: Sendable {
    public let caFile: String
    public let serverCertificateFile: String
    public let serverKeyFile: String
    /// A CA that did not sign the server's certificate.
    public let otherCAFile: String

    /// Makes the files in `directory`.
    public static func make(in directory: URL) async throws -> TestCertificates {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await openssl(["req", "-x509"] + ec + ["-keyout", path("ca.key"), "-out", path("ca.crt"), "-days", "2", "-subj", "/CN=Restock Test CA"])
        try await openssl(["req", "-x509"] + ec + ["-keyout", path("other-ca.key"), "-out", path("other-ca.crt"), "-days", "2", "-subj", "/CN=Some Other CA"])
        try await openssl(["req"] + ec + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost\n".write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try await openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", path("server.crt"), "-days", "2", "-extfile", path("server.ext"),
        ])
        // mosquitto started as root drops to its own user unless configured otherwise (the shipped file is not):
        // it must still read this throwaway key.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path("server.key"))
        return TestCertificates(
            caFile: path("ca.crt"), serverCertificateFile: path("server.crt"), serverKeyFile: path("server.key"),
            otherCAFile: path("other-ca.crt"))
    }

    private static func openssl(_ arguments: [String]) async throws {
        let result = try await ChildProcess.run("openssl", arguments)
        guard result.status == 0 else { throw BrokerExited(output: "openssl failed: \(result.standardError)") }
    }
}
