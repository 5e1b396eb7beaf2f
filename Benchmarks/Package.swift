// swift-tools-version:6.1
// `make bench`: B1–B5 side by side with what a user would pick instead; writes docs/benchmarks.md.
// A package of its own, so that OpenCombine and hdrhistogram-swift are fetched only here, never by the
// root package or anyone who depends on it. It reaches RestockAlerter by path.
import PackageDescription

let package = Package(
    name: "RestockBenchmarks",
    dependencies: [
        .package(name: "RestockAlerter", path: ".."),
        // The alternatives B1 compares against, and latency histograms.
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        // Reads glibc's heap in use.
        .target(name: "CHeapStats", path: "CHeapStats"),
        // The C ceiling of B3 and B5: a libmosquitto publisher and a counting subscriber in one program
        // (MQTTCeiling/ceiling.c), run by restock-bench beside it as a child process.
        .executableTarget(
            name: "restock-ceiling", path: "MQTTCeiling",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra"])],
            linkerSettings: [.linkedLibrary("mosquitto")]),
        .executableTarget(
            name: "restock-bench",
            dependencies: [
                "CHeapStats",
                .product(name: "RestockCore", package: "RestockAlerter"),
                .product(name: "Mosquitto", package: "RestockAlerter"),
                .product(name: "RestockMQTT", package: "RestockAlerter"),
                .product(name: "_RestockTestSupport", package: "RestockAlerter"),
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "RestockBench"),
    ],
    swiftLanguageModes: [.v6]
)
