// swift-tools-version:6.1
// Fuzz targets for libFuzzer (`make fuzz`). Build them with
//   swift build --package-path Fuzz -c release -Xswiftc -sanitize=fuzzer
// so that the project's own modules are instrumented too and libFuzzer is linked in.
import PackageDescription

// Each fuzz target has no `main` of its own: libFuzzer drives it through `LLVMFuzzerTestOneInput`.
let fuzzTarget: [SwiftSetting] = [.unsafeFlags(["-parse-as-library"])]

let package = Package(
    name: "RestockFuzz",
    dependencies: [.package(name: "RestockAlerter", path: "..")],
    targets: [
        // What every target shares: the hand-over to libFuzzer's driver, reading the fuzzer's bytes, checks that trap.
        .target(name: "FuzzSupport", path: "FuzzSupport"),
        // (a) topic + payload → the request decoders → the store, as the store service takes them.
        .executableTarget(
            name: "RequestFuzz",
            dependencies: ["FuzzSupport", restock("RestockMQTT"), restock("RestockCore")],
            path: "RequestFuzz", swiftSettings: fuzzTarget),
        // (b) broker URLs → BrokerAddress, and comma-separated lists of them → BrokerSettings.
        .executableTarget(
            name: "BrokerURLFuzz", dependencies: ["FuzzSupport", restock("Mosquitto"), restock("RestockMQTT")], path: "BrokerURLFuzz",
            swiftSettings: fuzzTarget),
        // (c) sequences of requests → Store, checked against a plain reference model after every step.
        .executableTarget(
            name: "StoreModelFuzz", dependencies: ["FuzzSupport", restock("RestockCore")], path: "StoreModelFuzz", swiftSettings: fuzzTarget),
    ],
    swiftLanguageModes: [.v6]
)

/// A library of the project (the root package, one folder up).
func restock(_ product: String) -> Target.Dependency { .product(name: product, package: "RestockAlerter") }
