import ArgumentParser
import Foundation
import LocalBroker
import RestockMQTT

extension Restock {
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The whole story in one run: a store, three customers, restocks and the alerts arriving.",
            discussion: """
                Without --broker it starts a private mosquitto on a free loopback port, and stops it after. On a broker you \
                give it, it runs a store of its own, demo-<random> unless --store names one, so it never touches a real \
                store, and it removes its retained topics and its customers' sessions when it ends.
                """)

        @OptionGroup var connection: ConnectionOptions

        /// Whether --broker (or RESTOCK_BROKER, or the config file) was given; otherwise the demo brings its own broker.
        private var brokerGiven: Bool { connection.broker != nil }

        /// Whether --store (or RESTOCK_STORE, or the config file) was given; otherwise, on a broker of the user's, the
        /// demo uses a store id of its own.
        private var storeGiven: Bool { connection.store != nil }

        func run() async throws {
            var options = connection
            var privateBroker: LocalMosquitto?
            if !brokerGiven {
                let broker = try await LocalMosquitto.start()
                emit("▶ Started a private mosquitto on \(broker.url)")
                options.broker = broker.url
                privateBroker = broker
            } else if !storeGiven {
                options.store = "demo-\(UUID().uuidString.prefix(8).lowercased())"
            }
            let story = DemoStory(
                connection: try options.brokerSettings(), topics: try options.topics(), cleansUp: privateBroker == nil, say: emit)
            let summary = try await story.run()
            try await privateBroker?.stop()
            if !summary.succeeded { throw ExitCode.failure }
        }
    }
}
