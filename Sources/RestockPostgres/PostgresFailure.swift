import Foundation
import PostgresNIO
import RestockPipeline

/// What PostgreSQL or the connection to it said, as ``StorageError`` classifies it (as `DatabaseError+StorageFailure`
/// does for SQLite). A wrapper rather than a conformance of `PSQLError` itself: that type already has a `code`, of
/// another type than ``StorageFailure``'s.
///
/// - The server is gone for now — the connection was refused, lost or closed, the server is shutting down or starting,
///   out of memory or connections, a replica that takes no writes — ``StorageError/Kind/unavailable``: it may pass.
/// - The disk is full (`53100`): ``StorageError/Kind/full``.
/// - A lock waited for beyond the lock timeout, a deadlock, a serialization failure: ``StorageError/Kind/locked``.
/// - Anything else — a permission refused, a table or a column missing, a constraint violated, a wrong password, a
///   database that does not exist, damaged data — ``StorageError/Kind/corrupt``: the one kind besides a lost lease that
///   says trying again cannot help. None of these passes by itself; an operator has to change something.
struct PostgresFailure: StorageFailure {
    /// The kind, decided when the error was caught.
    let storageKind: StorageError.Kind
    /// Why, in a few words.
    let reason: String
    /// The SQLSTATE as a number (its five characters in base 36), or a negative number for a failure of the client.
    let code: Int
    /// The error as postgres-nio (or SwiftNIO, for a connection never made) threw it.
    let underlying: any Error
    /// The server refused the data it was given: a data exception (SQLSTATE class 22), an integrity constraint (23), a
    /// program limit such as a row too big (54). A permission, a missing function, the fence's `RS001` are not.
    private(set) var refusesTheData = false

    func kind(at path: String) -> StorageError.Kind { storageKind }

    /// The failure `error` describes.
    init(_ error: any Error) {
        underlying = error
        if let error = error as? PSQLError {
            if let state = error.serverInfo?[.sqlState] {
                storageKind = Self.kind(ofSQLState: state)
                refusesTheData = ["22", "23", "54"].contains(state.prefix(2))
                code = Int(state, radix: 36) ?? 0
                let message = error.serverInfo?[.message] ?? "PostgreSQL error"
                reason = "\(state == "42883" ? Self.withoutArguments(message) : message) (SQLSTATE \(state))"
            } else {
                storageKind = Self.kind(ofClientCode: error.code)
                code = -1
                reason =
                    switch error.code {
                    case .sslUnsupported: "the server does not accept TLS connections (the URL's sslmode asks for TLS)"
                    // postgres-nio's name for it, not a sentence (found by an outside trial).
                    case .authMechanismRequiresPassword:
                        "the server asks for a password and none was given (RESTOCK_DATABASE_PASSWORD, or in the URL)"
                    // Names, not sentences, without an underlying error (found trying a server that closed at once).
                    case .serverClosedConnection, .uncleanShutdown:
                        error.underlying.map { "the server closed the connection (\(Self.plain($0)))" } ?? "the server closed the connection"
                    case .clientClosedConnection: "the connection was closed before the server answered"
                    default: error.underlying.map(Self.plain) ?? error.code.description
                    }
            }
        } else if let error = error as? NoServerTakesWrites {
            (storageKind, code, reason) = (.unavailable, -4, error.description)
        } else if let error = error as? TakesNoWrites {
            (storageKind, code, reason) = (.unavailable, -9, error.description)
        } else if let error = error as? NoServerUsable {
            (storageKind, code, reason) = (error.kind, -8, error.description)
        } else if let error = error as? BehindTheStore {
            (storageKind, code, reason) = (.unavailable, -7, error.description)
        } else if let error = error as? NoAnswer {
            (storageKind, code, reason) = (.unavailable, -6, error.description)
        } else if let error = error as? AbandonedStatementRuns {
            (storageKind, code, reason) = (.unavailable, -12, error.description)
        } else if let error = error as? FunctionsMissing {
            (storageKind, code, reason) = (.corrupt, -10, error.description)
        } else if let error = error as? FunctionsNotExecutable {
            (storageKind, code, reason) = (.corrupt, -11, error.description)
        } else if let error = error as? RootCertificatesUnreadable {
            (storageKind, code, reason) = (.corrupt, -5, error.description)
        } else if error is PostgresDecodingError {
            (storageKind, code, reason) = (.corrupt, -2, "a value PostgreSQL returned is not of the type this version expects (\(error))")
        } else {
            // SwiftNIO's: the connection refused, reset or timed out before postgres-nio had one.
            (storageKind, code, reason) = (.unavailable, -3, "cannot reach PostgreSQL: \(Self.plain(error))")
        }
    }

    /// No server of a list of several could be used, each for a reason of its own, all named (found by an outside trial:
    /// only the last server's was, and a password refused by the first read as a connection refused). Unavailable when
    /// any of them may pass.
    struct NoServerUsable: Error, CustomStringConvertible {
        let reasons: [(server: String, failure: PostgresFailure)]
        var kind: StorageError.Kind {
            reasons.contains { $0.failure.storageKind == .unavailable } ? .unavailable : reasons.last?.failure.storageKind ?? .unavailable
        }
        var description: String {
            "no server of the list can be used: " + reasons.map { "\($0.server): \($0.failure.reason)" }.joined(separator: "; ")
        }
    }

    /// One server of a list answered, but takes no writes: a replica, or set read only.
    struct TakesNoWrites: Error, CustomStringConvertible {
        var description: String { "takes no writes (a replica, or set read only)" }
    }

    /// No server of the list answered as one that takes writes: each was unreachable or a read-only replica (a failover
    /// under way: a replica is about to be promoted). ``StorageError/Kind/unavailable``: it may pass.
    struct NoServerTakesWrites: Error, CustomStringConvertible {
        let location: String
        var description: String {
            "no server of \(location) takes writes now: each is unreachable, a replica, set read only, or behind what this store committed"
        }
    }

    /// A server that takes writes lacks requests the store committed: a former primary started again on its own after a
    /// replica was promoted. It is passed over; ``StorageError/Kind/unavailable``: the promoted server may answer again.
    struct BehindTheStore: Error, CustomStringConvertible {
        let server: String
        /// How far the store's journal goes on that server.
        let place: Int64
        /// How far the store committed it.
        let committed: Int64
        /// The topic of the broker's journal witness, when that is what says how far the store committed.
        var witnessTopic: String? = nil
        var description: String {
            let source = witnessTopic.map { ", as the broker's journal witness \($0) says" } ?? ""
            let restored = witnessTopic.map { " If the database was restored on purpose and those requests are lost, clear the witness (mosquitto_pub -r -n -t \($0))" } ?? ""
            return "\(server) takes writes but lacks requests this store committed (its journal ends at \(place), the store's at \(committed)\(source)): a former primary started again on its own? It is passed over; it must follow the promoted server (docs/operations.md, \"Failover\").\(restored)"
        }
    }

    /// The backend of a connection given up with a statement in flight has not ended yet: until it has, it may still
    /// commit what it read, and nothing more is written (``PostgresSession``). ``StorageError/Kind/unavailable``: it
    /// passes once the backend ends (it has been told to).
    struct AbandonedStatementRuns: Error, CustomStringConvertible {
        let pid: Int32
        var description: String {
            "a statement given up on an earlier connection may still run on the server (its backend, pid \(pid), was told to end and has not yet): nothing more is written until it has"
        }
    }

    /// The server did not answer within the bound (``PostgresSettings/answerTimeout``): the connection is closed and
    /// made again, to this server or another of the list. ``StorageError/Kind/unavailable``: it may pass.
    struct NoAnswer: Error, CustomStringConvertible {
        let what: String
        let timeout: Duration
        var description: String { "no answer to \(what) within \(timeout.components.seconds) s: the connection is closed and made again" }
    }

    /// Functions of the store's schema are missing from the database (an operator dropped them), and this user cannot
    /// make them again: no write of the store would succeed, and trying again cannot help.
    struct FunctionsMissing: Error, CustomStringConvertible {
        let names: [String]
        /// Why making them failed, in PostgreSQL's words.
        let reason: String
        var description: String {
            let list = names.joined(separator: ", ")
            return "the store's schema lacks the function\(names.count == 1 ? "" : "s") \(list), and this user cannot make "
                + "\(names.count == 1 ? "it" : "them") again (\(reason)): start the store once as a user that may create "
                + "functions in the schema (its owner), which makes \(names.count == 1 ? "it" : "them") again"
        }
    }

    /// The store's user may not execute functions of its schema (`EXECUTE` revoked): every write would be refused.
    struct FunctionsNotExecutable: Error, CustomStringConvertible {
        let names: [String]
        let user: String
        var description: String {
            let list = names.joined(separator: ", ")
            let plural = names.count == 1 ? "" : "s"
            return "the user \(user) may not execute the store's function\(plural) \(list) (EXECUTE revoked?): "
                + "GRANT EXECUTE ON ROUTINE \(list) TO \(user), as the schema's owner, then start the store again"
        }
    }

    /// The file of `sslrootcert` cannot be read: nothing can be verified, and trying again cannot help.
    struct RootCertificatesUnreadable: Error, CustomStringConvertible {
        let file: String
        let reason: String
        var description: String { "cannot read sslrootcert \(file): \(reason)" }
    }

    /// A connection's failure in a few plain words, as an operator reads it: `connection refused by 127.0.0.1:1`,
    /// `cannot resolve db.example: …` — not the types of SwiftNIO (an outside reader found
    /// `SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:1, error: connection reset (error set): …)`).
    static func plain(_ error: any Error) -> String {
        switch error {
        case let error as NIOConnectionError:
            let failures = error.connectionErrors.map { failure in
                "\(plain(failure.error)) (\(failure.target.ipAddress ?? error.host):\(failure.target.port ?? error.port))"
            }
            if !failures.isEmpty { return failures.joined(separator: "; ") }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve the host name \(error.host)" }
            return "cannot connect to \(error.host):\(error.port)"
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case let error as ChannelError:
            if case .connectTimeout(let after) = error {
                // Found in containers: a host name whose resolution hung read as this alone.
                return "no answer within \(after.nanoseconds / 1_000_000_000) s (a host down, a port filtered, or a host name that does not resolve)"
            }
            return "\(error)"
        case let error as PSQLError:
            return error.serverInfo?[.message] ?? error.underlying.map(plain) ?? error.code.description
        default:
            return "\(error)"
        }
    }

    static func noServerTakesWrites(_ location: String) -> NoServerTakesWrites { NoServerTakesWrites(location: location) }

    /// The kind of a server's error, by its SQLSTATE (PostgreSQL's manual, "PostgreSQL Error Codes").
    static func kind(ofSQLState state: String) -> StorageError.Kind {
        switch state {
        case "53100": return .full
        case "55P03", "40P01", "40001": return .locked
        // A replica, or default_transaction_read_only: writes pass again once it is promoted or the setting is changed
        // back (SQLite's read-only file system counts the same). 57014: a statement cancelled (a timeout, an operator).
        case "25006", "57014": return .unavailable
        default: break
        }
        // 08: connection exceptions; 53: insufficient resources; 57P: shutting down, starting; 58: I/O errors.
        if state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") || state.hasPrefix("58") { return .unavailable }
        return .corrupt
    }

    /// The kind of a failure of postgres-nio's own, without a server's SQLSTATE.
    static func kind(ofClientCode code: PSQLError.Code) -> StorageError.Kind {
        switch code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .queryCancelled, .poolClosed:
            .unavailable
        default: .corrupt
        }
    }

    /// A function missing (SQLSTATE 42883), without the argument types PostgreSQL lists: `restock_commit`'s forty made one
    /// line of 500 characters (found by an outside trial).
    static func withoutArguments(_ message: String) -> String {
        guard let open = message.firstIndex(of: "("), let close = message.lastIndex(of: ")"), open < close else { return message }
        return message[..<open] + "(…)" + message[message.index(after: close)...]
    }

    /// Whether the connection is of no more use after this failure: everything but an error the server answered with, or
    /// a verdict of the store's own on what it read (a function missing, not executable, a value of another type).
    var losesTheConnection: Bool {
        guard let error = underlying as? PSQLError else {
            // A process given up still running (``AbandonedStatementRuns``) leaves this connection of use: dropped, each retry
            // made and gave up one more (found by an outside trial: 32 of them in a 46 s wait, each logged twice).
            return !(underlying is PostgresDecodingError || underlying is FunctionsMissing || underlying is FunctionsNotExecutable
                || underlying is AbandonedStatementRuns)
        }
        return error.serverInfo?[.sqlState] == nil || storageKind == .unavailable
    }
}
