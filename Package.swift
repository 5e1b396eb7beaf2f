// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "RestockAlerter",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RestockCore", targets: ["RestockCore"]),
    ],
    targets: [
        // The Observer-pattern core: store (subject), observers, watches, alerts. No I/O.
        .target(name: "RestockCore"),
        // Shared by the test targets: deadlines, and (later) a private mosquitto per test.
        .target(name: "RestockTestSupport", path: "Tests/RestockTestSupport"),
        .testTarget(name: "RestockCoreTests", dependencies: ["RestockCore", "RestockTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
