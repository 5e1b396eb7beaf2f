/// The `connect()` call waiting for the first CONNACK.
typealias ConnectWaiter = CheckedContinuation<Bool, any Error>
/// A stream made by ``MQTTClient/messages(matching:)``.
typealias MessageSink = AsyncStream<MQTTMessage>.Continuation
/// A stream made by ``MQTTClient/connectionEvents()``.
typealias EventSink = AsyncStream<MQTTConnectionEvent>.Continuation

/// What performing the machine's actions needs of libmosquitto's network thread: the calls on the handle, and the
/// journal's confirmation (``LibMosquittoThreadActions``; a test passes a recorder). The machine returns these actions
/// only from the events of that thread, which pass it.
protocol NetworkThreadActions {
    /// Makes these subscriptions again, noting each one's message id so that its SUBACK is read.
    func resubscribe(_ subscriptions: [(String, MQTTClientStateMachine.ActiveSubscription)])
    /// Subscribes and disconnects at once (in the CONNACK callback).
    func prepareSession(_ preparation: MQTTClientStateMachine.Preparation)
    /// Shuts the socket between the read and write phases, so that the acknowledgements queued are never written.
    func shutSocket()
    /// Unsubscribes from the journal's probe filter, written after batch `batch`'s acknowledgements.
    func probe(filter: String, after batch: UInt64)
    /// Tells the journal that the broker answered the probe after batch `batch`.
    func confirm(throughBatch batch: UInt64)
}

/// What the state machine knows of the thread that runs a connection (``LibMosquittoNetworkThread``).
protocol NetworkThreadControl: AnyObject, Sendable {
    /// Starts it.
    func start()
    /// Cuts a wait of the thread short, so that it looks at the state again.
    func wake()
    /// Waits until it has ended, or `timeout` has passed; returns whether it has ended.
    @discardableResult func waitForEnd(within timeout: Duration) async -> Bool
}

extension MQTTClientStateMachine {
    /// Where the connection is, and what each phase holds.
    enum State {
        /// Not connected and not trying: before `connect()`, after `disconnect()`, or after a failed connect. `ended`:
        /// the last `connect()`'s run, whose thread may still be ending (as told by its stop request).
        case idle(ended: NetworkRun?)
        /// `connect()` waits for the first CONNACK.
        case connecting(NetworkRun, ConnectWaiter)
        /// Connected: a CONNACK accepted the connection.
        case connected(NetworkRun)
        /// Connected once, then lost; the network thread reconnects (when allowed).
        case reconnecting(NetworkRun)
    }

    /// One `connect()` until the client is idle again: its network thread, what that thread is told, and what holds
    /// for its connections only.
    struct NetworkRun {
        /// The thread, while it runs (it holds itself until it ends). Weak: the thread holds the handle, which holds
        /// the context that holds this.
        weak var thread: (any NetworkThreadControl)?
        /// What the client wants of the thread: go on, or end (the first request counts).
        var stop = Stop.no
        /// The session being prepared, if that is what this `connect()` is for.
        var preparation: Preparation?
        /// SUBSCRIBE and DISCONNECT of a session being prepared went out around libmosquitto.
        var preparedAroundLibrary = false
        /// Which of the configuration's ``MQTTConfiguration/brokers`` the thread connects to, or last did.
        var brokerIndex = 0
        /// A loss (or a journal's refusal) waits for ``MQTTClient/allowReconnect()`` before the next reconnect.
        var awaitingReconnectPermission = false
        /// Whether the current connection's loss is counted already (a journal refused one of its messages).
        var lossCounted = false
        /// The probes written on the current connection and not answered yet, by message id: the batch each follows.
        var probes: [Int32: UInt64] = [:]
        /// The probe the network thread wrote on resuming after a pause (``LibMosquittoLoop``), not answered yet.
        var resumptionProbe: Int32?
        /// Whether the broker answered ``resumptionProbe`` on the current connection.
        var resumptionConfirmed = false

        init(thread: any NetworkThreadControl, preparation: Preparation?) {
            self.thread = thread
            self.preparation = preparation
        }
    }

    /// What the network thread is told to do.
    enum Stop: Equatable {
        /// Keep the connection, reconnecting after a loss.
        case no
        /// Disconnect cleanly (DISCONNECT, no will) and end.
        case cleanly
        /// End at once without DISCONNECT, as if the process had died: the broker sends the will.
        case abruptly
    }

    /// What the network thread does next (``directive``).
    enum Directive: Equatable {
        /// Run the connection; `connections` counts the CONNACKs so far (the backoff starts afresh after one).
        case run(connections: UInt64)
        /// End without DISCONNECT.
        case endAbruptly
        /// Send DISCONNECT after what is queued, and end.
        case endCleanly
        /// SUBSCRIBE and DISCONNECT went out around libmosquitto: wait for the broker to close, and end.
        case awaitBrokerClose
    }

    /// A subscription as made, to make again after a reconnect.
    struct ActiveSubscription: Sendable, Equatable {
        var qos: MQTTQoS
        /// The options byte as sent (0 on a 3.1.1 connection).
        var options: Int32
    }

    /// A session being prepared (``MQTTClient/prepareSession(subscribingTo:qos:)``): on CONNACK, subscribe to
    /// `filter` and disconnect at once, before any queued message is read.
    struct Preparation: Sendable, Equatable {
        var filter: String
        var qos: MQTTQoS
        /// Whether SUBSCRIBE and DISCONNECT can be written straight to the socket (not over TLS).
        var plainTCP: Bool
    }

    /// What to do after a transition, in order, outside the lock.
    enum Action: Sendable {
        /// Resume `connect()`.
        case resumeConnect(ConnectWaiter, Result<Bool, any Error>)
        /// Yield `event` to these event streams.
        case emit(MQTTConnectionEvent, to: [EventSink])
        /// Yield `message` to these message streams.
        case deliver(MQTTMessage, to: [MessageSink])
        /// Hand a publish its answer.
        case answerPublish(LibMosquittoAckTicket<Void>, Result<Void, MQTTError>)
        /// Hand a subscribe its answer.
        case answerSubscribe(LibMosquittoAckTicket<MQTTQoS>, Result<MQTTQoS, MQTTError>)
        /// Hand an unsubscribe its answer.
        case answerUnsubscribe(LibMosquittoAckTicket<Void>)
        /// Fail these operations with ``MQTTError/notConnected``.
        case failOperations([any FailableOwner])
        /// Yield ``MQTTConnectionEvent/disconnected`` to these event streams and end them, and end these message streams.
        case endStreams(events: [EventSink], messages: [MessageSink])
        /// Start this network thread.
        case startThread(any NetworkThreadControl)
        /// Wake this network thread.
        case wake(any NetworkThreadControl)
        /// On the network thread, in the CONNACK callback: make these subscriptions again.
        case resubscribe([String: ActiveSubscription])
        /// On the network thread, in the CONNACK callback: subscribe and disconnect at once.
        case prepareSession(Preparation)
        /// On the network thread, between its read and write phases: shut the socket for writing, so that the
        /// acknowledgements libmosquitto has queued are never written.
        case shutSocket
        /// On the network thread, after a batch was recorded whole: unsubscribe from the journal's probe filter (written
        /// after the batch's acknowledgements), and remember its message id with the batch's number.
        case probe(filter: String, batch: UInt64)
        /// Tell the journal that the broker answered the probe that followed batch `number`.
        case confirm(throughBatch: UInt64)
    }
}
