import Foundation
import RestockPostgres
import SeededRandom
import Testing

/// `--database` read by ``DatabaseURL``, against a plain model: random URLs rendered from known parts (percent-encoded
/// where they must be) read back into those parts; random and damaged text never traps, and no error repeats the
/// password.
@Suite("The database URL")
struct DatabaseURLTests {
    /// Parts the generator chose, and the URL it wrote from them.
    struct Model {
        var servers: [DatabaseURL.Server]
        var user: String
        var password: String?
        var database: String
        var tls: DatabaseURL.TLSMode
        var text: String
    }

    static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")

    static func encoded(_ value: String) -> String { value.addingPercentEncoding(withAllowedCharacters: unreserved)! }

    static func model(_ random: inout SplitMix64) -> Model {
        func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }
        func word(_ alphabet: String, _ length: ClosedRange<Int>) -> String {
            String((0..<Int.random(in: length, using: &random)).map { _ in pick(Array(alphabet)) })
        }
        let hosts = ["localhost", "db.internal", "10.0.0.7", "::1", "fe80::1", "pg-1_a"]
        let servers = (0..<Int.random(in: 1...4, using: &random)).map { _ in
            DatabaseURL.Server(host: pick(hosts), port: Bool.random(using: &random) ? DatabaseURL.defaultPort : Int.random(in: 1...65_535, using: &random))
        }
        let text = "abcXYZ019-_.~:@/?#[]!$&'()*+,;=% é"
        let user = word(text, 1...12)
        let password = Bool.random(using: &random) ? word(text, 1...16) : nil
        let database = word(text, 1...12)
        let tls = pick(DatabaseURL.TLSMode.allCases)
        let serverText = servers.map { server in
            let host = server.host.contains(":") ? "[\(server.host)]" : server.host
            return server.port == DatabaseURL.defaultPort && Bool.random(using: &random) ? host : "\(host):\(server.port)"
        }.joined(separator: ",")
        let credentials = encoded(user) + (password.map { ":" + encoded($0) } ?? "")
        let query = tls == .disable && Bool.random(using: &random) ? "" : "?sslmode=\(tls.rawValue)"
        let scheme = pick(["postgres", "postgresql", "POSTGRES"])
        return Model(
            servers: servers, user: user, password: password, database: database, tls: tls,
            text: "\(scheme)://\(credentials)@\(serverText)/\(encoded(database))\(query)")
    }

    @Test("a URL written from known parts reads back into them (2,000 seeded URLs)")
    func roundTrip() throws {
        var random = SplitMix64(seed: 0xD8_7A_5E)
        for _ in 0..<2_000 {
            let model = Self.model(&random)
            let url = try DatabaseURL(parsing: model.text)
            #expect(url.servers == model.servers, "\(model.text)")
            #expect(url.user == model.user && url.password == model.password && url.database == model.database, "\(model.text)")
            #expect(url.tls == model.tls, "\(model.text)")
            #expect(!url.redacted.contains(":\(Self.encoded(model.password ?? "\u{0}"))@"))
        }
    }

    @Test("damaged URLs are refused in one line that never holds the password, and nothing traps (20,000 seeded)")
    func damaged() {
        var random = SplitMix64(seed: 0x5EED)
        let noise = Array("://@,[]:?&=%/ 0123456789abc\u{0}\u{7F}é𝄞")
        var refused = 0
        for _ in 0..<20_000 {
            var model = Self.model(&random)
            model.password = "s3cretpw"
            var text = Array(model.text.replacingOccurrences(of: "://", with: "://u:s3cretpw@").replacingOccurrences(of: "@", with: "@", options: [], range: nil))
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let at = Int.random(in: 0...text.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: text.insert(noise[Int.random(in: 0..<noise.count, using: &random)], at: at)
                case 1: if at < text.count { text.remove(at: at) }
                default: if at < text.count { text[at] = noise[Int.random(in: 0..<noise.count, using: &random)] }
                }
            }
            do {
                _ = try DatabaseURL(parsing: String(text))
            } catch {
                refused += 1
                // Nor any part of it: a raw ? in a password once had its end quoted as a parameter (an outside trial).
                let parts = (0...3).map { "s3cretpw".dropFirst($0).prefix(5) }
                #expect(!parts.contains { error.description.contains($0) }, "\(error.description)")
                #expect(!error.description.contains("\n"))
                #expect(error.description.hasPrefix("--database"))
            }
        }
        #expect(refused > 1_000)
    }

    @Test("each part's mistake is named", arguments: [
        ("mysql://u@h/db", "must start with postgres://"),
        ("postgres://h/db", "must name a user"),
        ("postgres://u@h", "must name a database"),
        ("postgres://u@h/", "must name a database"),
        ("postgres://u@h:0/db", "port must be 1 to 65535"),
        ("postgres://u@h:65536/db", "port must be 1 to 65535"),
        ("postgres://u@h:99999999999999999999/db", "port must be 1 to 65535"),
        ("postgres://u@h,,k/db", "empty host"),
        ("postgres://u@[::1/db", "closing ]"),
        ("postgres://u@h/db?sslmode=prefer", "sslmode must be one of"),
        ("postgres://u@h/db?sslmod=require", "does not know"),
        ("postgres://u@h/db?sslmode=require&sslmode=disable", "twice"),
        ("postgres://u@h/db?sslrootcert=/ca.pem", "needs sslmode=verify-ca or verify-full"),
        ("postgres://u:pw%zz@h/db", "password has a %"),
        ("postgres://u@h/d%00b", "control character"),
        ("postgres://u:x@y/z?sslmode=TOPSECRET@h:5432/db", "percent-encode ?, #, @ and / in the user or password"),
        ("postgres://u:pa#ss@h/db", "percent-encode ?, #, @ and / in the user or password"),
        ("postgres://u@h/db#x", "holds a #"),
    ])
    func mistakes(text: String, says: String) {
        #expect {
            _ = try DatabaseURL(parsing: text)
        } throws: { error in
            let description = (error as? DatabaseURL.Invalid)?.description ?? ""
            return description.contains(says) && !description.contains("TOPSECRET")
        }
    }
}
