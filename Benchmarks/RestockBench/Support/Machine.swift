import Foundation
import LocalBroker

/// What the figures were measured on, for the report's header.
struct Machine: Sendable {
    let cores: Int
    let memoryGiB: Double
    let processor: String
    let kernel: String
    let mosquitto: String

    static func current() async -> Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown processor"
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let version = (try? await ChildProcess.run("mosquitto", ["-h"]))?.standardOutput
            .split(separator: "\n").first { $0.contains("version") }.map(String.init) ?? "mosquitto"
        return Machine(
            cores: ProcessInfo.processInfo.activeProcessorCount,
            memoryGiB: Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30),
            processor: model, kernel: "Linux \(release)", mosquitto: version)
    }

    var summary: String {
        "\(cores) cores (\(processor)), \(Figure.format(memoryGiB, 3)) GiB memory, \(kernel), \(mosquitto)"
    }
}
