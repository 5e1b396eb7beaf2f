// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "RestockAlerter",
    // Linux only (Debian with Swift 6): the C boundary uses Glibc's pthreads and sockets.
    products: [
        .library(name: "RestockCore", targets: ["RestockCore"]),
        .library(name: "Mosquitto", targets: ["Mosquitto"]),
        .library(name: "RestockMQTT", targets: ["RestockMQTT"]),
        .executable(name: "restock", targets: ["restock"]),
        // A private mosquitto on a free loopback port, for the tests of a program that embeds the store (docs/embedding.md).
        .library(name: "LocalBroker", targets: ["LocalBroker"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The operator's HTTP endpoint only; without swift-configuration and full Foundation (its default traits).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        // Hummingbird's own event loops, named by the HTTP endpoint for its check of its address before the store starts.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        // The PostgreSQL backend of the store's storage (RestockPostgres).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // `make bench` only: the alternatives B1 compares against, and latency histograms. A package that depends on
        // this one does not fetch them (SwiftPM resolves only what the products it uses need).
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        // The Observer-pattern core: store (subject), observers, watches, alerts. No I/O.
        .target(name: "RestockCore"),
        // libmosquitto, as Debian's libmosquitto-dev installs it.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // A Swift 6 MQTT client over libmosquitto; the only module that imports CMosquitto.
        .target(name: "Mosquitto", dependencies: ["CMosquitto", "Deadlines", .product(name: "Logging", package: "swift-log")]),
        // Waiting with a deadline: bounded waits for the bridge, the tools and the tests.
        .target(name: "Deadlines"),
        // A private mosquitto on a free loopback port, and the process tools it needs (for the CLI and the tests).
        .target(name: "LocalBroker", dependencies: ["Deadlines"]),
        // The store's pipeline without the network: the topic contract (topics, requests, payloads), the durable
        // state (SQLite: the request log and the store's state) and the applying stage. No libmosquitto.
        .target(
            name: "RestockPipeline",
            dependencies: [
                "RestockCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C interface, which GRDB is built on: the restore reads each value's type straight from it.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            // The fault hooks of the tests (RESTOCK_FAULT) exist in debug builds only.
            swiftSettings: [.define("RESTOCK_FAULT_INJECTION", .when(configuration: .debug))]),
        // The bridge over MQTT: the store service (journal on the network thread, the pipeline, publishing)
        // and the customer client. Re-exports RestockPipeline's public contract.
        .target(
            name: "RestockMQTT",
            dependencies: [
                "RestockCore", "RestockPipeline", "Mosquitto", "Deadlines",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // The store's storage in PostgreSQL: a second backend of StoreStorage, beside SQLite's and memory's.
        .target(
            name: "RestockPostgres",
            dependencies: [
                "RestockPipeline", "RestockCore", "Deadlines", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The operator's HTTP endpoint of a store process: /livez, /readyz, /metrics (Hummingbird).
        .target(
            name: "RestockHTTP",
            dependencies: [
                "RestockMQTT", "Deadlines", .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // The command-line tool: parsing and printing over RestockMQTT.
        .executableTarget(
            name: "restock",
            dependencies: [
                "RestockMQTT", "RestockHTTP", "RestockPostgres", "LocalBroker",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The executable, not the libraries, chooses the metrics backend.
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        // Shared by the tests and the reliability run: a private mosquitto (generated or shipped configuration),
        // `restock serve` and mosquitto_sub as processes, an alert collector, deadlines for every wait.
        // A seeded random number generator, so that a generated stream replays from its seed.
        .target(name: "SeededRandom", path: "Tests/SeededRandom"),
        // A SQLite VFS that counts each file's syncs: what the pipeline's tests see of durability.
        .target(name: "CountedSyncs", path: "Tests/CountedSyncs", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(
            name: "RestockTestSupport",
            dependencies: ["SeededRandom", "LocalBroker", "Deadlines", "RestockMQTT", "RestockPipeline", "RestockPostgres", "Mosquitto", "RestockCore"],
            path: "Tests/RestockTestSupport"),
        // `make reliability`: faults and attacks on real processes, and the table of what came of them.
        .executableTarget(
            name: "restock-reliability",
            dependencies: ["RestockTestSupport", "RestockMQTT", "RestockPipeline", "Mosquitto", "RestockCore", "LocalBroker", "Deadlines", "SeededRandom"],
            path: "Tests/Reliability"),
        // `make bench` (Benchmarks/): B1–B6 and the C ceiling of B3 and B5, built in release. In this package, not one of
        // its own, so that CI builds them in the same release build as the image's restock (the Dockerfile's BUILD_ALSO).
        // Reads glibc's heap in use.
        .target(name: "CHeapStats", path: "Benchmarks/CHeapStats"),
        // The C ceiling: a libmosquitto publisher and a counting subscriber in one program, run by restock-bench.
        .executableTarget(
            name: "restock-ceiling", path: "Benchmarks/MQTTCeiling",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra"])],
            linkerSettings: [.linkedLibrary("mosquitto")]),
        .executableTarget(
            name: "restock-bench",
            dependencies: [
                "CHeapStats", "RestockCore", "Mosquitto", "RestockMQTT", "RestockTestSupport", "LocalBroker", "Deadlines", "SeededRandom",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Benchmarks/RestockBench"),
        // Unit tests of the core: no broker, no libmosquitto.
        .testTarget(name: "RestockCoreTests", dependencies: ["RestockCore", "Deadlines"]),
        .testTarget(
            name: "MosquittoTests", dependencies: ["Mosquitto", "RestockTestSupport", "LocalBroker", "Deadlines", "SeededRandom", .product(name: "Logging", package: "swift-log")]),
        // Unit tests of the pipeline: no broker, no libmosquitto.
        .testTarget(
            name: "RestockPipelineTests",
            dependencies: ["RestockPipeline", "RestockCore", "SeededRandom", "StorageDifferential", "CountedSyncs", "Deadlines", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log")]),
        // Unit tests of the store service over a broker in memory (RestockTestSupport's InMemoryBroker): takeover,
        // draining, stage failure and reconnection in milliseconds.
        .testTarget(
            name: "RestockServiceTests",
            dependencies: [
                "RestockMQTT", "RestockPipeline", "RestockPostgres", "RestockCore", "Mosquitto", "RestockTestSupport", "Deadlines", "SeededRandom",
                "CountedSyncs", .product(name: "Logging", package: "swift-log"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // The command line's parsing in process: where each option's value comes from (OptionSources).
        .testTarget(name: "restockTests", dependencies: ["restock", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // The PostgreSQL backend against a private PostgreSQL (RestockTestSupport's PrivatePostgres), and against SQLite.
        .testTarget(
            name: "RestockPostgresTests",
            dependencies: ["RestockPostgres", "RestockPipeline", "RestockCore", "RestockTestSupport", "LocalBroker", "StorageDifferential", "SeededRandom", "Deadlines"]),
        // The differential test's generator, shared by the backends held to SQLite (memory, PostgreSQL).
        .target(name: "StorageDifferential", dependencies: ["RestockPipeline", "RestockCore", "SeededRandom"], path: "Tests/StorageDifferential"),
        // Integration tests against a real mosquitto.
        .testTarget(
            name: "RestockMQTTTests",
            dependencies: [
                "RestockMQTT", "RestockPipeline", "RestockTestSupport", "LocalBroker", "Deadlines", .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
