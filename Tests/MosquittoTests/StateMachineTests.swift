import Synchronization
import Testing
@testable import Mosquitto

/// The client's state machine alone: no broker, no network, no thread. Each test feeds it the events libmosquitto's
/// callbacks and the client's callers would, and checks the actions it returns, in order.
@Suite("The client's state machine", .timeLimit(.minutes(1)))
struct StateMachineTests {
    typealias Machine = MQTTClientStateMachine

    @Test("connect, then an accepted CONNACK: the event first, then connect() returns; the phase is connected")
    func connectAccepted() async throws {
        var machine = Machine(reconnection: .automatic)
        let thread = FakeThread()
        let events = eventSink(in: &machine)
        let (waiter, outcome) = await waitingConnect()
        #expect(summary(machine.connectRequested(waiter, thread: thread, preparing: nil)) == ["start thread"])
        #expect(!machine.isIdle && !machine.hasSession && machine.directive == .run(connections: 0))
        let actions = machine.connackAccepted(sessionPresent: true)
        #expect(summary(actions) == ["emit connected(sessionPresent: true) to 1", "resume connect: true"])
        perform(actions)
        #expect(try await outcome.value == true)
        #expect(machine.isConnected && machine.hasSession && machine.directive == .run(connections: 1))
        #expect(await events.collected().elements == [.connected(sessionPresent: true)])
    }

    @Test("a refused CONNACK fails connect() with the refusal and leaves the client idle, free to try again")
    func connectRefused() async throws {
        var machine = Machine(reconnection: .automatic)
        let thread = FakeThread()
        let (waiter, outcome) = await waitingConnect()
        _ = machine.connectRequested(waiter, thread: thread, preparing: nil)
        let refusal = MQTTError.connectionRefused(reasonCode: 0x86, reason: "bad user name or password")
        perform(machine.connackRefused(refusal))
        await #expect(throws: refusal) { try await outcome.value }
        #expect(machine.isIdle)
        let (again, _) = await waitingConnect()
        #expect(summary(machine.connectRequested(again, thread: thread, preparing: nil)) == ["start thread"])
        perform(machine.shutDown())
    }

    @Test("connect() on a client connecting or connected fails as misuse, and changes nothing")
    func connectTwice() async throws {
        var machine = Machine(reconnection: .automatic)
        let thread = FakeThread()
        let (first, firstOutcome) = await waitingConnect()
        _ = machine.connectRequested(first, thread: thread, preparing: nil)
        let (second, secondOutcome) = await waitingConnect()
        let refused = machine.connectRequested(second, thread: FakeThread(), preparing: nil)
        #expect(summary(refused) == ["fail connect: misuse of the MQTT client: connect() called on a client that is already connected"])
        perform(refused)
        await #expect(throws: MQTTError.misuse("connect() called on a client that is already connected")) { try await secondOutcome.value }
        #expect(machine.network === thread)
        perform(machine.connackAccepted(sessionPresent: false))
        #expect(try await firstOutcome.value == false)
        let (third, thirdOutcome) = await waitingConnect()
        perform(machine.connectRequested(third, thread: thread, preparing: nil))
        await #expect(throws: MQTTError.self) { try await thirdOutcome.value }
    }

    @Test("the connection closing before the CONNACK fails connect() (with the 3.1.1 hint); a later CONNACK is ignored")
    func disconnectWhileConnecting() async throws {
        var machine = Machine(reconnection: .automatic)
        let events = eventSink(in: &machine)
        let (waiter, outcome) = await waitingConnect()
        _ = machine.connectRequested(waiter, thread: FakeThread(), preparing: nil)
        perform(machine.disconnected(requested: false, reason: "connection lost", hint: " (hint)"))
        await #expect(throws: MQTTError.connectionFailed("connection lost (hint)")) { try await outcome.value }
        #expect(machine.isIdle)
        #expect(summary(machine.connackAccepted(sessionPresent: false)).isEmpty, "an abandoned connect stays abandoned")
        #expect(machine.isIdle)
        #expect(await events.collected().elements.isEmpty)
    }

    @Test("disconnect(), a timeout or a cancellation while connecting fails connect() once, with the first reason")
    func connectFailed() async throws {
        var machine = Machine(reconnection: .automatic)
        let (waiter, outcome) = await waitingConnect()
        _ = machine.connectRequested(waiter, thread: FakeThread(), preparing: nil)
        perform(machine.connectFailed(MQTTError.notConnected))
        #expect(summary(machine.connectFailed(MQTTError.timedOut("late"))).isEmpty)
        await #expect(throws: MQTTError.notConnected) { try await outcome.value }
        #expect(machine.isIdle)
    }

    @Test("a loss fails what libmosquitto forgets (QoS 0, subscribes, unsubscribes), keeps QoS 1, and tells the streams")
    func lossFailsForgottenOperations() async throws {
        var machine = try await connected(.automatic)
        let events = eventSink(in: &machine)
        let qos0 = machine.operationQueued(in: Machine.publishTable, mid: 1, failsOnDisconnect: true).ticket
        let qos1 = machine.operationQueued(in: Machine.publishTable, mid: 2, failsOnDisconnect: false).ticket
        let subscribe = machine.operationQueued(in: Machine.subscribeTable, mid: 3, failsOnDisconnect: true).ticket
        let unsubscribe = machine.operationQueued(in: Machine.unsubscribeTable, mid: 4, failsOnDisconnect: true).ticket
        let actions = machine.disconnected(requested: false, reason: "connection lost")
        #expect(summary(actions) == ["fail 3 operations", "emit connectionLost(reason: \"connection lost\") to 1"])
        perform(actions)
        #expect(state(of: qos0) == "not connected to the broker" && state(of: subscribe) == "not connected to the broker")
        #expect(state(of: unsubscribe) == "not connected to the broker")
        #expect(state(of: qos1) == "pending" && machine.pendingCounts == (1, 0, 0))
        #expect(!machine.isConnected && machine.hasSession, "reconnecting: QoS 1 may still be queued")
        #expect(machine.mayReconnect, "automatic reconnection needs no permission")
        perform(machine.publishAnswered(mid: 2, .success(())))
        #expect(state(of: qos1) == "done")
        #expect(await events.collected().elements == [.connectionLost(reason: "connection lost")])
    }

    @Test("a reconnect to a broker that lost the session makes the active subscriptions again; one that kept it does not")
    func resubscribe() async throws {
        var machine = try await connected(.automatic)
        let options = Machine.ActiveSubscription(qos: .atLeastOnce, options: 0x10)
        #expect(machine.subscribing(to: "a/#", options) == nil)
        _ = machine.subscribing(to: "b", .init(qos: .atMostOnce, options: 0))
        machine.unsubscribing(from: "b")
        perform(machine.disconnected(requested: false, reason: "lost"))
        #expect(summary(machine.connackAccepted(sessionPresent: false)) == ["emit connected(sessionPresent: false) to 0", "resubscribe [\"a/#\"]"])
        perform(machine.disconnected(requested: false, reason: "lost"))
        #expect(summary(machine.connackAccepted(sessionPresent: true)) == ["emit connected(sessionPresent: true) to 0"])
        #expect(machine.connections == 3)
        // A failed subscribe puts back what the filter had.
        let previous = machine.subscribing(to: "a/#", .init(qos: .exactlyOnce, options: 0))
        machine.subscribeFailed("a/#", restoring: previous)
        #expect(machine.activeSubscriptions == ["a/#": options])
    }

    @Test("whenAllowed: a loss waits for allowReconnect(); a call while connected allows nothing more; a clean close needs none")
    func reconnectPermission() async throws {
        let thread = FakeThread()
        var machine = try await connected(.whenAllowed, thread: thread)
        #expect(summary(machine.allowReconnect()) == ["wake thread"], "while connected")
        perform(machine.disconnected(requested: false, reason: "lost"))
        #expect(!machine.mayReconnect, "the earlier call did not allow this loss")
        perform(machine.disconnected(requested: false, reason: "lost again"))  // a failed attempt: not a new loss
        #expect(summary(machine.allowReconnect()) == ["wake thread"])
        #expect(machine.mayReconnect)
        perform(machine.disconnected(requested: false, reason: "attempt failed"))
        #expect(machine.mayReconnect, "one permission covers the attempts until the next connection")
        perform(machine.connackAccepted(sessionPresent: true))
        perform(machine.disconnected(requested: true, reason: "disconnected"))
        #expect(machine.mayReconnect, "a close the client asked for needs no permission")
    }

    @Test("a journal's refusal shuts the socket and waits for permission, also under automatic reconnection; counted once")
    func journalRefusal() async throws {
        var machine = try await connected(.automatic)
        let all = try messageSink(in: &machine, filter: "#")
        let other = try messageSink(in: &machine, filter: "other/+")
        let first = MQTTMessage(topic: "orders/1", payload: [1], qos: .atLeastOnce, retain: false)
        let delivered = machine.received([first], dispositions: [.recorded])
        #expect(summary(delivered) == ["deliver orders/1 to 1"])
        perform(delivered)
        let refused = MQTTMessage(topic: "orders/2", payload: [2], qos: .atLeastOnce, retain: false)
        #expect(summary(machine.received([refused], dispositions: [.refused])) == ["shut socket"])
        #expect(!machine.mayReconnect)
        #expect(summary(machine.received([refused], dispositions: [.refused])) == ["shut socket"], "a later message of the same read")
        perform(machine.disconnected(requested: false, reason: "connection lost"))
        #expect(!machine.mayReconnect)
        perform(machine.allowReconnect())
        #expect(machine.mayReconnect, "the refusal and the loss it caused are one loss")
        perform(machine.received([first], dispositions: [.recorded]))
        #expect(await all.collected().elements.map(\.topic) == ["orders/1", "orders/1"])
        #expect(await other.collected().elements.isEmpty)
    }

    @Test("a read phase's messages wait for the journal as one batch; its recorded ones reach the streams, one refusal shuts the socket")
    func batch() async throws {
        var machine = try await connected(.automatic)
        let all = try messageSink(in: &machine, filter: "#")
        let messages = (0..<4).map { MQTTMessage(topic: "orders/\($0)", payload: [], qos: .atLeastOnce, retain: false) }
        for message in messages { machine.messageRead(message) }
        #expect(machine.inboundCount == 4)
        let batch = machine.takeInbound()
        #expect(batch == messages && machine.inboundCount == 0 && machine.takeInbound().isEmpty)
        // The third is refused and the fourth has no disposition: both count as refused, once.
        let actions = machine.received(batch, dispositions: [.recorded, .recorded, .refused])
        #expect(summary(actions) == ["deliver orders/0 to 1", "deliver orders/1 to 1", "shut socket"])
        perform(actions)
        #expect(!machine.mayReconnect)
        #expect(await all.collected().elements.map(\.topic) == ["orders/0", "orders/1"])
    }

    @Test("a batch recorded whole is followed by a probe; its answer confirms the batch by number; a loss forgets unanswered probes; a refused batch gets none")
    func probes() async throws {
        var machine = try await connected(.whenAllowed)
        let message = MQTTMessage(topic: "orders/1", payload: [], qos: .atLeastOnce, retain: false)
        let network = NetworkRecorder()
        let first = machine.received([message], dispositions: [.recorded], probe: "store/probe")
        #expect(summary(first) == ["probe store/probe after batch 1"])
        perform(first, network: network)
        #expect(summary(machine.received([message], dispositions: [.recorded], probe: "store/probe")) == ["probe store/probe after batch 2"])
        machine.probeQueued(mid: 7, batch: 1)
        machine.probeQueued(mid: 8, batch: 2)
        let answer = machine.unsubscribeAnswered(mid: 7)
        #expect(summary(answer) == ["confirm through batch 1"])
        perform(answer, network: network)
        #expect(network.calls == ["probe store/probe after batch 1", "confirm through batch 1"], "performed on the network thread's side")
        #expect(machine.unsubscribeAnswered(mid: 7).isEmpty, "answered once")
        // The connection is lost before the second probe's answer: it is never taken for one.
        perform(machine.disconnected(requested: false, reason: "lost", hint: ""))
        #expect(machine.unsubscribeAnswered(mid: 8).isEmpty)
        #expect(summary(machine.received([message], dispositions: [.refused], probe: "store/probe")) == ["shut socket"])
        #expect(summary(machine.received([message], dispositions: [.recorded], probe: "store/probe")) == ["probe store/probe after batch 3"])
        #expect(machine.recordedBatches == 3)
    }

    @Test("the probe written on resuming after a pause is answered apart from the batches' probes: it confirms no batch, and a loss before its answer leaves the next connection unconfirmed")
    func resumptionProbe() async throws {
        var machine = try await connected(.whenAllowed)
        machine.probeQueued(mid: 7, batch: 1)
        machine.resumptionProbeQueued(mid: 8)
        #expect(!machine.isResumptionConfirmed)
        #expect(machine.unsubscribeAnswered(mid: 8).isEmpty, "nothing goes to the journal or a caller")
        #expect(machine.isResumptionConfirmed)
        #expect(summary(machine.unsubscribeAnswered(mid: 7)) == ["confirm through batch 1"])
        machine.resumptionProbeQueued(mid: 9)
        #expect(!machine.isResumptionConfirmed, "each pause asks again")
        perform(machine.disconnected(requested: false, reason: "lost", hint: ""))
        #expect(machine.unsubscribeAnswered(mid: 9).isEmpty)
        #expect(!machine.isResumptionConfirmed, "an answer after the loss is not taken for one")
    }

    @Test("a subscription made again after a reconnect and refused (a cluster electing leaders) is asked for again, backing off, until granted (found by the issue 25 trial: the store's admin/report subscription was lost for good)")
    func refusedResubscriptionAskedAgain() async throws {
        var machine = try await connected(.automatic)
        _ = machine.subscribing(to: "store/admin/report", Machine.ActiveSubscription(qos: .atLeastOnce, options: 0))
        perform(machine.disconnected(requested: false, reason: "lost", hint: ""))
        #expect(summary(machine.connackAccepted(sessionPresent: false)).contains("resubscribe [\"store/admin/report\"]"))
        machine.resubscriptionQueued(mid: 11, filter: "store/admin/report")
        let now = ContinuousClock.now
        let refusal = MQTTError.subscribeRefused(filter: "", reasonCode: 0x80, reason: "unspecified error")
        #expect(machine.subscribeAnswered(mid: 11, .failure(refusal), at: now).isEmpty)
        #expect(machine.dueResubscriptions(at: now).isEmpty, "not at once")
        #expect(machine.dueResubscriptions(at: now + .milliseconds(250)).map(\.0) == ["store/admin/report"])
        #expect(machine.dueResubscriptions(at: now + .milliseconds(300)).isEmpty, "not again before its answer")
        machine.resubscriptionQueued(mid: 12, filter: "store/admin/report")
        _ = machine.subscribeAnswered(mid: 12, .failure(refusal), at: now)
        #expect(machine.dueResubscriptions(at: now + .milliseconds(400)).isEmpty, "the second wait is longer")
        #expect(machine.dueResubscriptions(at: now + .milliseconds(500)).map(\.0) == ["store/admin/report"])
        machine.resubscriptionQueued(mid: 13, filter: "store/admin/report")
        _ = machine.subscribeAnswered(mid: 13, .success(.atLeastOnce), at: now)
        #expect(!machine.hasRefusedResubscriptions && machine.dueResubscriptions(at: now + .seconds(60)).isEmpty, "granted")
    }

    @Test("acknowledgements reach their own owner; one nobody owns is dropped; a displaced owner fails")
    func acknowledgements() async throws {
        let thread = FakeThread()  // the machine holds it weakly, as a running thread holds itself
        var machine = try await connected(.automatic, thread: thread)
        let publish = machine.operationQueued(in: Machine.publishTable, mid: 7, failsOnDisconnect: false).ticket
        let subscribe = machine.operationQueued(in: Machine.subscribeTable, mid: 7, failsOnDisconnect: true).ticket
        #expect(summary(machine.publishAnswered(mid: 8, .success(()))).isEmpty)
        let refusal = MQTTError.subscribeRefused(filter: "", reasonCode: 0x87, reason: "not authorized")
        let actions = machine.subscribeAnswered(mid: 7, .failure(refusal)) + machine.publishAnswered(mid: 7, .success(()))
        #expect(summary(actions) == ["answer subscribe 7", "answer publish 7"])
        perform(actions)
        #expect(state(of: subscribe) == refusal.description && state(of: publish) == "done")
        let old = machine.operationQueued(in: Machine.unsubscribeTable, mid: 9, failsOnDisconnect: true).ticket
        let (new, displaced) = machine.operationQueued(in: Machine.unsubscribeTable, mid: 9, failsOnDisconnect: true)
        #expect(summary(displaced) == ["fail 1 operations", "wake thread"], "the thread is woken to write it")
        perform(displaced + machine.unsubscribeAnswered(mid: 9))
        #expect(state(of: old) == "not connected to the broker" && state(of: new) == "done")
    }

    @Test("shutdown fails every waiter (connect, QoS 1 publishes too) and ends every stream after .disconnected")
    func shutdown() async throws {
        var machine = Machine(reconnection: .automatic)
        let events = eventSink(in: &machine)
        let messages = try messageSink(in: &machine, filter: "#")
        let (waiter, outcome) = await waitingConnect()
        _ = machine.connectRequested(waiter, thread: FakeThread(), preparing: nil)
        let qos1 = machine.operationQueued(in: Machine.publishTable, mid: 1, failsOnDisconnect: false).ticket
        let actions = machine.shutDown()
        #expect(summary(actions) == ["fail connect: not connected to the broker", "fail 1 operations", "end 1 event and 1 message streams"])
        perform(actions)
        await #expect(throws: MQTTError.notConnected) { try await outcome.value }
        #expect(state(of: qos1) == "not connected to the broker")
        let (seen, eventsEnded) = await events.collected()
        #expect(seen == [MQTTConnectionEvent.disconnected] && eventsEnded)
        #expect(await messages.collected().ended)
        #expect(machine.isIdle && summary(machine.shutDown()) == ["end 0 event and 0 message streams"])
    }

    @Test("the first stop request counts; the thread is handed back to be woken")
    func stop() async throws {
        let thread = FakeThread()
        var machine = try await connected(.automatic, thread: thread)
        #expect(machine.stopRequested(.abruptly) === thread)
        _ = machine.stopRequested(.cleanly)
        #expect(machine.directive == .endAbruptly)
        let (waiter, _) = await waitingConnect()
        perform(machine.shutDown())
        perform(machine.connectRequested(waiter, thread: thread, preparing: nil))
        #expect(machine.directive == .run(connections: 1), "a new connect() starts with no stop request")
        perform(machine.shutDown())
    }

    @Test("preparing a session: on CONNACK, subscribe and disconnect, and stop cleanly; around libmosquitto, await the close")
    func prepareSession() async throws {
        var machine = Machine(reconnection: .automatic)
        _ = machine.subscribing(to: "kept", .init(qos: .atLeastOnce, options: 0))
        let (waiter, outcome) = await waitingConnect()
        let preparation = Machine.Preparation(filter: "alerts/#", qos: .atLeastOnce, plainTCP: true)
        _ = machine.connectRequested(waiter, thread: FakeThread(), preparing: preparation)
        let actions = machine.connackAccepted(sessionPresent: false)
        #expect(summary(actions) == ["emit connected(sessionPresent: false) to 0", "resume connect: false", "prepare alerts/#"])
        perform(actions)
        #expect(try await outcome.value == false)
        #expect(machine.directive == .endCleanly)
        machine.preparedSessionAroundLibrary()
        #expect(machine.directive == .awaitBrokerClose)
        perform(machine.shutDown())
        #expect(machine.preparation == nil)
    }

    @Test("the broker in use is the machine's: the list from its first, the next one after a loss, round the list; a new connect() starts afresh")
    func brokerIndex() async throws {
        var machine = Machine(reconnection: .automatic)
        #expect(machine.brokerIndex == 0, "before any connect()")
        machine.tryingBroker(1)
        #expect(machine.brokerIndex == 0, "no thread runs: nothing to note")
        machine = try await connected(.automatic)
        machine.tryingBroker(1)
        #expect(machine.brokerIndex == 1)
        #expect(machine.nextBroker(of: 3) == 2 && machine.nextBroker(of: 3) == 0 && machine.brokerIndex == 0)
        _ = machine.nextBroker(of: 3)
        perform(machine.shutDown())
        #expect(machine.brokerIndex == 1, "the last one tried, once disconnected")
        let (waiter, _) = await waitingConnect()
        perform(machine.connectRequested(waiter, thread: FakeThread(), preparing: nil))
        #expect(machine.brokerIndex == 0)
        perform(machine.shutDown())
    }

    // MARK: Helpers

    /// A machine whose first connection was accepted.
    private func connected(_ reconnection: MQTTReconnection, thread: FakeThread = FakeThread()) async throws -> Machine {
        var machine = Machine(reconnection: reconnection)
        let (waiter, outcome) = await waitingConnect()
        perform(machine.connectRequested(waiter, thread: thread, preparing: nil))
        perform(machine.connackAccepted(sessionPresent: false))
        _ = try await outcome.value
        return machine
    }
}

/// A `connect()` waiting: the continuation the machine holds, and the task that gets what it is resumed with.
private func waitingConnect() async -> (ConnectWaiter, Task<Bool, any Error>) {
    let (stream, handOver) = AsyncStream.makeStream(of: ConnectWaiter.self)
    let outcome = Task { try await withCheckedThrowingContinuation { handOver.yield($0) } }
    var iterator = stream.makeAsyncIterator()
    return (await iterator.next()!, outcome)
}

/// Performs the actions with the context's own ``LibMosquittoContext/perform(_:network:)``; those that need the network
/// thread go to `network`.
private func perform(_ actions: [MQTTClientStateMachine.Action], network: NetworkRecorder = NetworkRecorder()) {
    LibMosquittoContext.perform(actions, network: network)
}

/// The network thread's side of performing actions, as text: what would have been asked of libmosquitto and the journal.
private final class NetworkRecorder: NetworkThreadActions, Sendable {
    private let log = Mutex<[String]>([])
    var calls: [String] { log.withLock { $0 } }
    func resubscribe(_ subscriptions: [(String, MQTTClientStateMachine.ActiveSubscription)]) {
        log.withLock { $0.append("resubscribe \(subscriptions.map(\.0).sorted())") }
    }
    func prepareSession(_ preparation: MQTTClientStateMachine.Preparation) { log.withLock { $0.append("prepare \(preparation.filter)") } }
    func shutSocket() { log.withLock { $0.append("shut socket") } }
    func probe(filter: String, after batch: UInt64) { log.withLock { $0.append("probe \(filter) after batch \(batch)") } }
    func confirm(throughBatch batch: UInt64) { log.withLock { $0.append("confirm through batch \(batch)") } }
}

/// The actions, as text to compare.
private func summary(_ actions: [MQTTClientStateMachine.Action]) -> [String] {
    actions.map { action in
        switch action {
        case .resumeConnect(_, .success(let present)): "resume connect: \(present)"
        case .resumeConnect(_, .failure(let error)): "fail connect: \(error)"
        case .emit(let event, let sinks): "emit \(event) to \(sinks.count)"
        case .deliver(let message, let sinks): "deliver \(message.topic) to \(sinks.count)"
        case .answerPublish(let ticket, _): "answer publish \(ticket.mid)"
        case .answerSubscribe(let ticket, _): "answer subscribe \(ticket.mid)"
        case .answerUnsubscribe(let ticket): "answer unsubscribe \(ticket.mid)"
        case .failOperations(let owners): "fail \(owners.count) operations"
        case .endStreams(let events, let messages): "end \(events.count) event and \(messages.count) message streams"
        case .startThread: "start thread"
        case .wake: "wake thread"
        case .resubscribe(let subscriptions): "resubscribe \(subscriptions.keys.sorted())"
        case .prepareSession(let preparation): "prepare \(preparation.filter)"
        case .shutSocket: "shut socket"
        case .probe(let filter, let batch): "probe \(filter) after batch \(batch)"
        case .confirm(let batch): "confirm through batch \(batch)"
        }
    }
}

/// A network thread that only counts what it is asked to do.
private final class FakeThread: NetworkThreadControl {
    private let counts = Mutex((starts: 0, wakes: 0))
    func start() { counts.withLock { $0.starts += 1 } }
    func wake() { counts.withLock { $0.wakes += 1 } }
    func waitForEnd(within timeout: Duration) async -> Bool { true }
}

/// A stream added to the machine. What it received is read once, at the end of a test.
private final class Sink<Element: Sendable>: Sendable {
    private let stream: AsyncStream<Element>
    let continuation: AsyncStream<Element>.Continuation
    /// Whether the test is collecting, and whether the stream had ended before.
    private let flags = Mutex((collecting: false, endedBefore: false))

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .unbounded)
        continuation.onTermination = { [weak self] _ in
            self?.flags.withLock { if !$0.collecting { $0.endedBefore = true } }
        }
    }


    /// Everything yielded so far, and whether the machine's actions had ended the stream.
    func collected() async -> (elements: [Element], ended: Bool) {
        flags.withLock { $0.collecting = true }
        continuation.finish()
        var elements: [Element] = []
        for await element in stream { elements.append(element) }
        return (elements, flags.withLock { $0.endedBefore })
    }
}

private func eventSink(in machine: inout MQTTClientStateMachine) -> Sink<MQTTConnectionEvent> {
    let sink = Sink<MQTTConnectionEvent>()
    _ = machine.addEventSink(sink.continuation)
    return sink
}

private func messageSink(in machine: inout MQTTClientStateMachine, filter: String) throws -> Sink<MQTTMessage> {
    let sink = Sink<MQTTMessage>()
    _ = machine.addMessageSink(sink.continuation, filter: try MQTTTopicFilter(filter))
    return sink
}

/// An operation's outcome as text: "pending", "done" or the error.
private func state<Value>(of ticket: LibMosquittoAckTicket<Value>) -> String {
    switch ticket.result {
    case nil: "pending"
    case .success?: "done"
    case .failure(let error)?: "\(error)"
    }
}
