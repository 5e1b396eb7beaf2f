// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "RestockAlerter",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RestockCore", targets: ["RestockCore"]),
        .library(name: "Mosquitto", targets: ["Mosquitto"]),
    ],
    targets: [
        // The Observer-pattern core: store (subject), observers, watches, alerts. No I/O.
        .target(name: "RestockCore"),
        // libmosquitto, as Debian's libmosquitto-dev installs it.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // A Swift 6 MQTT client over libmosquitto; the only module that imports CMosquitto.
        .target(name: "Mosquitto", dependencies: ["CMosquitto"]),
        // Shared by the test targets: deadlines, and (later) a private mosquitto per test.
        .target(name: "RestockTestSupport", path: "Tests/RestockTestSupport"),
        .testTarget(name: "RestockCoreTests", dependencies: ["RestockCore", "RestockTestSupport"]),
        .testTarget(name: "MosquittoTests", dependencies: ["Mosquitto", "RestockTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
