import Deadlines
import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockPipeline

/// Reads the broker's journal witness of a store (docs/contract.md, "Journal witness"), before the store opens its
/// storage or a standby takes it over, and hands it to the backend (``JournalWitness``): a database server whose journal
/// goes less far is then not used. Found by an outside trial: a store started while only a former primary answered —
/// started again on its own after its replica was promoted, and lacking what the store committed since — took it, and
/// 100 requests it had acknowledged were lost.
///
/// A connection of its own with a clean session, as the store's publishing one (`P:{store}:@witness-…`, kept for the
/// store's user by the shipped broker configuration); while the broker cannot be reached it tries again, as the store's
/// start does. No retained witness (a store that never ran on PostgreSQL, a broker that lost its retained messages, or
/// one an operator cleared) drops the one read before, if any: a standby held back by it takes over once it is cleared
/// (found by an outside trial: it stayed held back); what the database servers showed still counts. One it cannot
/// read, or another store's, is refused (``Unreadable``): the guard fails closed (found by an outside trial: a witness
/// ignored so let a store start on a former primary, without 1,200 requests it had acknowledged) until an operator
/// clears it.
struct JournalWitnessReader {
    let connector: any BrokerConnector
    let topics: RestockTopics
    let store: StoreID
    let timing: StoreTiming
    let logger: Logger

    /// A retained witness this store cannot use: it does not start on it.
    struct Unreadable: Error, CustomStringConvertible {
        let invalid: JournalWitnessPayload.Invalid
        let topic: String
        var description: String {
            "\(invalid) on \(topic): no database server is used until it is one of this store's; if it is not, clear it (mosquitto_pub -r -n -t \(topic)) (docs/contract.md, \"Journal witness\")"
        }
    }

    /// Reads the witness and hands it to `witness`; returns the place it says, if any.
    /// - Parameter quietly: Logs nothing (a standby's reading again while it waits, ``StoreLauncher``).
    /// - Throws: ``Unreadable`` for a witness that is not one of this store's; the broker's refusal.
    @discardableResult
    func read(into witness: any JournalWitness, quietly: Bool = false) async throws -> Int64? {
        let connection = try connector.connection(
            clientID: SessionClientIDs.publisher(of: store, instance: "witness-\(UUID().uuidString.prefix(12).lowercased())", prefix: topics.prefix))
        let messages = try connection.messages(matching: topics.journalWitness)
        let payload: [UInt8]?
        do {
            try await retryingWhileUnreachable(clock: timing.clock, logger: logger) {
                if !connection.isConnected { _ = try await connection.connect() }
                try await connection.subscribe(to: topics.journalWitness)
            }
            // The broker sends the retained message right after its answer to the subscription.
            payload = await Self.first(of: messages, within: timing.retainedWait)?.payload
        } catch {
            await connection.disconnect()
            throw error
        }
        await connection.disconnect()
        var read: JournalWitnessPayload?
        do {
            if let payload { read = try JournalWitnessPayload.read(payload, of: store) }
        } catch {
            throw Unreadable(invalid: error, topic: topics.journalWitness)
        }
        guard let read else {
            witness.witnessed(nil, of: store, on: topics.journalWitness)
            return nil
        }
        witness.witnessed(read.through, of: store, on: topics.journalWitness)
        if !quietly {
            logger.info("the broker's journal witness says the journal of store \(store) goes through \(read.through): no database server that holds less is used")
        }
        return read.through
    }

    /// The first message of `messages` within `limit` (real time: the broker's answer), or `nil`.
    private static func first(of messages: AsyncStream<MQTTMessage>, within limit: Duration) async -> MQTTMessage? {
        await withTaskGroup(of: MQTTMessage?.self) { group in
            group.addTask {
                for await message in messages { return message }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
    }
}

/// Runs `operation` until it succeeds, waiting between attempts as a reconnection does while the broker cannot be
/// reached (it may start after the store); a refusal that trying again cannot help (credentials, the ACL) is thrown.
func retryingWhileUnreachable(clock: ServiceClock, logger: Logger, _ operation: () async throws -> Void) async throws {
    var attempt = 0
    while true {
        do {
            return try await operation()
        } catch let error as MQTTError {
            switch error {
            case .connectionRefused, .publishRefused, .subscribeRefused: throw error
            default: break
            }
            let wait = MQTTReconnectPolicy.default.delay(beforeAttempt: attempt, random: Double.random(in: 0..<1))
            attempt += 1
            logger.warning("broker not reachable, retrying", metadata: [StoreLoggingKeys.error: "\(error)", StoreLoggingKeys.retryIn: "\(Int(wait.seconds * 1000)) ms"])
            try await clock.sleep(for: wait)
        }
    }
}
