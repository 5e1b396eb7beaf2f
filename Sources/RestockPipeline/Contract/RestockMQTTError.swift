import RestockCore

/// Errors of the bridge and its clients, each with one human sentence.
public enum RestockMQTTError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The topic prefix is not usable.
    case invalidPrefix(String, reason: String)
    /// The store's retained status says it is offline, or it has never been online.
    case storeOffline(store: String)
    /// The store is online but takes no requests for now (its disk is full); `reason` is its status's sentence.
    case storePaused(store: String, reason: String)
    /// No store of this id has ever been online on the broker (it has no retained status).
    case unknownStore(store: String)
    /// The store refused the request; `code` and `detail` are those of its error report.
    case refused(code: String, detail: String)
    /// No answer came within the wait.
    case noAnswer(what: String, seconds: Double)
    /// Another store process holds the data directory.
    case dataDirectoryInUse(String)
    /// Another store process (`owner`, an instance) holds the data directory's lease and renewed it within its lifetime:
    /// a standby that took over from a store that still holds the directory's lock.
    case dataDirectoryLeased(String, owner: String)
    /// Another instance of the store is live on the broker.
    case storeAlreadyRunning(store: String, instance: String)
    /// Another instance of the store took its broker session (or said it is live); this one stopped.
    case storeTakenOver(store: String, instance: String)
    /// The data directory holds the state of another store.
    case dataDirectoryOfAnotherStore(String, owner: String)
    /// The data directory's files do not belong together, or hold what no store wrote: `file` is the one at fault,
    /// `problem` says what is wrong with it and what would be lost, `remedy` what to do.
    case dataDirectoryDamaged(file: String, problem: String, remedy: String)
    /// A file of the data directory was written by a newer RestockAlerter: its schema version is above the one this
    /// binary knows (docs/operations.md, "Upgrading").
    case dataDirectoryOfNewerVersion(file: String, schemaVersion: Int, knownVersion: Int)
    /// `restock backup` cannot take a backup as asked: `reason` says why, naming the path, in one sentence.
    case backupRefused(String)
    /// The broker refused a customer's listening session: with the shipped configuration only the user
    /// named like the customer may use it.
    case listeningSessionRefused(customer: String, clientID: String, reason: String)
    /// The broker refused a subscription (SUBACK 0x80) every time it was asked for `seconds`: a clustered broker does
    /// this while it elects new leaders after losing a node.
    case subscriptionRefused(filter: String, seconds: Double, reason: String)
    /// A setting of a store's configuration is out of its range: `setting` names it, `detail` says what it may be.
    case invalidSetting(setting: String, detail: String)

    /// One sentence: what went wrong and what to do.
    public var description: String {
        switch self {
        case .invalidPrefix(let prefix, let reason): "invalid topic prefix \(String(reflecting: prefix)): \(reason)"
        case .storeOffline(let store): "store \(store) is offline: start it with `restock serve --store \(store)`"
        case .storePaused(let store, let reason):
            "store \(store) takes no requests for now (\(reason)); requests sent meanwhile wait on the broker and are applied when it resumes"
        case .unknownStore(let store):
            "no store \(store) has ever been online on this broker: start it with `restock serve --store \(store)`"
        case .refused(let code, let detail): "refused (\(code)): \(detail)"
        case .noAnswer(let what, let seconds):
            "no answer from the store within \(seconds.formatted()) s (\(what)); the request may have been applied all the same (an answer lost when a broker node dies): check before sending it again"
        case .dataDirectoryInUse(let path):
            "another store process is using \(path) (or a store this process ran, still stopping): run one store on a data directory; to take over when it stops, run `restock serve --standby` on it"
        case .dataDirectoryLeased(let path, let owner):
            "another store process (instance \(owner)) holds the lease on \(path) and renewed it within the last \(LeaseHolder.lifetime.components.seconds) s: run one store on it; to take over when it stops or stalls, run `restock serve --standby` on it"
        case .storeAlreadyRunning(let store, let instance):
            "store \(store) is already running on this broker (instance \(instance)): run only one; to take over when it stops, run `restock serve --standby` on its data directory"
        case .storeTakenOver(let store, let instance):
            "another instance of store \(store) (\(instance)) took over on the broker; this one stopped without applying anything more"
        case .dataDirectoryOfAnotherStore(let path, let owner):
            // The owner is read from the file: a value changed by hand is shown escaped, never raw on the terminal.
            (try? StoreID(owner)).map { "\(path) holds the state of store \($0): run `restock serve --store \($0)` on it, or give this store a data directory of its own (--data)" }
                ?? "\(path) holds the state of a store whose id, \(StoredValues.described(owner)), is not a valid store id (changed by hand?): give this store a data directory of its own (--data)"
        case .dataDirectoryDamaged(_, let problem, let remedy): "\(problem); \(remedy)"
        case .dataDirectoryOfNewerVersion(let file, let schema, let known):
            "\(file) was written by a newer RestockAlerter (schema version \(schema); RestockAlerter \(RestockVersion.current) knows up to \(known)): run that newer version on it, or restore a backup taken before the upgrade; a downgrade is refused so that nothing the newer version wrote is lost"
        case .backupRefused(let reason): reason
        case .listeningSessionRefused(let customer, let clientID, let reason):
            "the broker refused \(customer)'s listening session \(clientID): \(reason); check the user name and password (with the shipped broker configuration only the user \(customer) may use this session)"
        case .subscriptionRefused(let filter, let seconds, let reason):
            "the broker refused the subscription to \(filter) for \(seconds.formatted()) s (\(reason)): a clustered broker refuses subscriptions while it elects leaders after losing a node; try again when the cluster has settled"
        case .invalidSetting(let setting, let detail): "invalid \(setting): \(detail)"
        }
    }
}
