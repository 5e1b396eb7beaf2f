import Foundation
import Testing

@testable import restock

/// docker-compose.yml's images carry the release `restock --version` prints (docs/operations.md, "Upgrading").
@Suite("The compose file")
struct ComposeFileTests {
    @Test("every image of ours in docker-compose.yml is tagged with the version restock --version prints")
    func imagesTaggedWithTheVersion() throws {
        let compose = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../docker-compose.yml")
        let text = try String(contentsOf: compose, encoding: .utf8)
        let images = text.split(separator: "\n").compactMap { line -> Substring? in
            let words = line.split(separator: " ")
            guard words.first == "image:", let image = words.dropFirst().first, image.hasPrefix("restock-") else { return nil }
            return image
        }
        #expect(Set(images.map { $0.split(separator: ":").first ?? "" }) == ["restock-alerter", "restock-mosquitto", "restock-prometheus"])
        let version = try #require(Restock.configuration.version.split(separator: " ").last)
        for image in images {
            #expect(image.split(separator: ":").last == version, "\(image) is not tagged \(version)")
        }
    }
}
