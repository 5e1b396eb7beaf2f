// swift-tools-version:6.1
// The Swift examples of README.md and docs/embedding.md, compiled and run by `make test` (`make examples`) exactly as
// the docs show them (Tests/Contract/test_examples.py checks that each snippet is here, word for word). A package of
// its own that reaches RestockAlerter by path, as a program that embeds the store does: it sees the public API only.
import PackageDescription

let package = Package(
    name: "RestockExamples",
    dependencies: [
        .package(name: "RestockAlerter", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // README.md, "The core in a few lines".
        .executableTarget(name: "CoreExample", dependencies: [.product(name: "RestockCore", package: "RestockAlerter")]),
        // docs/embedding.md: the store embedded in a program, customers through a private mosquitto.
        .testTarget(
            name: "EmbeddingTests",
            dependencies: [
                .product(name: "RestockCore", package: "RestockAlerter"),
                .product(name: "RestockMQTT", package: "RestockAlerter"),
                .product(name: "LocalBroker", package: "RestockAlerter"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
