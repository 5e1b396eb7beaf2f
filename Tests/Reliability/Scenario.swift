/// A reliability or security scenario: real processes, a fault or an attack, and the rows it reports.
struct Scenario: Sendable {
    let id: String
    let title: String
    /// A scenario still running after this many seconds fails (and the run goes on with the next).
    let timeLimit: Double
    let run: @Sendable () async throws -> [ScenarioRow]

    /// `make cluster-test` (`restock-reliability --cluster`): the store on a 3-node NATS cluster that loses nodes.
    static let cluster: [Scenario] = [
        Scenario(id: "C1", title: "the store's node SIGKILLed mid fan-out", timeLimit: 150) { [try await Cluster.storeNodeKilled()] },
        Scenario(id: "C2", title: "a customer's node SIGKILLed while they are away", timeLimit: 120) { [try await Cluster.customerNodeKilled()] },
        Scenario(id: "C3", title: "a standby takes over with one node down", timeLimit: 150) { [try await Cluster.standbyWithNodeDown()] },
        Scenario(id: "C4", title: "a node restarted rejoins", timeLimit: 120) { [try await Cluster.nodeRejoins()] },
    ]

    static let all: [Scenario] = [
        Scenario(id: "R1", title: "broker SIGTERM and restart during a stream", timeLimit: 240) { [try await BrokerRestart.run(.r1)] },
        Scenario(id: "R2", title: "broker SIGKILL and restart during a stream", timeLimit: 240) { [try await BrokerRestart.run(.r2)] },
        Scenario(id: "R3", title: "store killed between commit and publish", timeLimit: 180) { [try await StoreCrash.run()] },
        Scenario(id: "R4", title: "customer offline for 5,000 alerts", timeLimit: 300) { [try await OfflineCustomer.run()] },
        Scenario(id: "R5", title: "connections cut mid-stream by a TCP proxy", timeLimit: 240) { [try await ConnectionCut.run()] },
        Scenario(id: "R6", title: "50,000 alerts to 1,000 customers, shipped broker config", timeLimit: 600) { [try await Burst.run()] },
        Scenario(id: "R7", title: "two store processes for one store", timeLimit: 300) { try await TwoStores.run() },
        Scenario(id: "R8", title: "restart with 100,000 watches", timeLimit: 900) { [try await Restore.run()] },
        Scenario(id: "R12", title: "standby takes over from a SIGKILLed live store", timeLimit: 420) { [try await Standby.run()] },
        Scenario(id: "R9", title: "broker restarted without persistence", timeLimit: 180) { [try await Edges.brokerWithoutPersistence()] },
        Scenario(id: "R10", title: "SIGTERM mid fan-out, then restart", timeLimit: 420) { [try await Edges.sigtermMidFanOut()] },
        Scenario(id: "R11", title: "the first alert before the first listen", timeLimit: 240) { [try await Edges.firstAlertBeforeFirstListen()] },
        Scenario(id: "R13", title: "a full disk, then space again", timeLimit: 600) { [try await FullDisk.run()] },
        Scenario(id: "R14", title: "store.sqlite emptied or older than its log", timeLimit: 300) { [try await DamagedState.run()] },
        Scenario(id: "R15", title: "clocks 10 minutes apart", timeLimit: 300) { try await ClockSkew.run() },
        Scenario(id: "S5", title: "one greedy customer at 200 requests/s", timeLimit: 300) { [try await GreedyCustomer.run()] },
        Scenario(id: "S1", title: "hostile requests", timeLimit: 300) { try await HostileRequests.run() },
        Scenario(id: "S4", title: "50,000 generated hostile requests, then restarts", timeLimit: 600) { [try await HostileStreamScenario.run()] },
        Scenario(id: "S2", title: "production ACL and passwords", timeLimit: 240) { try await Authorization.run() },
        Scenario(id: "S3", title: "TLS with the shipped config", timeLimit: 240) { [try await TransportSecurity.run()] },
        Scenario(id: "P1", title: "PostgreSQL: live store SIGKILLed mid fan-out, standby takes over", timeLimit: 300) { [try await OnPostgres.storeKilled()] },
        Scenario(id: "P2", title: "PostgreSQL stopped (immediate) mid fan-out, started again", timeLimit: 300) { [try await OnPostgres.databaseRestarted()] },
        Scenario(id: "P3", title: "PostgreSQL: live store's host cut off, standby on another host", timeLimit: 300) { [try await OnPostgres.hostLost(frozen: false)] },
        Scenario(id: "P4", title: "PostgreSQL: live store's process frozen, standby on another host", timeLimit: 300) { [try await OnPostgres.hostLost(frozen: true)] },
        Scenario(id: "P5", title: "PostgreSQL primary lost, streaming replica promoted", timeLimit: 300) { [try await OnPostgres.promotion()] },
    ]
}
