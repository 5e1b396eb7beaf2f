import CMosquitto

/// Owns one `struct mosquitto` and its ``LibMosquittoContext``.
///
/// `@unchecked Sendable` because it holds a C pointer: libmosquitto 2 guards its state with internal
/// mutexes for publish, subscribe, unsubscribe and disconnect, which any thread may call; connect,
/// reconnect and the loop run only on the client's network thread (``LibMosquittoNetworkThread``);
/// `mosquitto_destroy` runs in `deinit`, after that thread has ended, when nothing else can reach the handle.
final class LibMosquittoHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let context: LibMosquittoContext

    init(configuration: MQTTConfiguration, context: LibMosquittoContext) throws(MQTTError) {
        try LibMosquittoLibrary.ensureInitialized()
        self.context = context
        let userdata = Unmanaged.passUnretained(context).toOpaque()
        let clientID = configuration.clientID.isEmpty ? nil : configuration.clientID
        guard let pointer = mosquitto_new(clientID, !configuration.session.isPersistent, userdata) else {
            throw .invalidClientID(configuration.clientID, reason: "libmosquitto refused it")
        }
        self.pointer = pointer
        try configure(configuration)
        LibMosquittoCallbacks.install(on: pointer)
    }

    deinit {
        // The network thread keeps the handle alive, so it has ended: closing the socket here (a client released
        // without `disconnect()`) drops the connection without DISCONNECT, and the broker sends the will.
        mosquitto_destroy(pointer)
    }

    private func configure(_ configuration: MQTTConfiguration) throws(MQTTError) {
        let version = configuration.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(pointer, MOSQ_OPT_PROTOCOL_VERSION, version))
        try check(mosquitto_int_option(pointer, MOSQ_OPT_TCP_NODELAY, 1))
        try check(mosquitto_max_inflight_messages_set(pointer, UInt32(configuration.maxInflight)))
        // Our own thread runs the loop (LibMosquittoNetworkThread): other threads only queue packets.
        try check(mosquitto_threaded_set(pointer, true))
        if let username = configuration.username {
            try check(mosquitto_username_pw_set(pointer, username, configuration.password))
        }
        if configuration.broker.usesTLS {
            let tls = configuration.tls ?? MQTTTLSConfiguration()
            if let caFile = tls.caFile {
                try check(mosquitto_tls_set(pointer, caFile, nil, tls.certificateFile, tls.keyFile, nil))
            } else {
                try check(mosquitto_int_option(pointer, MOSQ_OPT_TLS_USE_OS_CERTS, 1))
                if tls.certificateFile != nil || tls.keyFile != nil {
                    try check(mosquitto_tls_set(pointer, nil, "/etc/ssl/certs", tls.certificateFile, tls.keyFile, nil))
                }
            }
            try check(mosquitto_tls_insecure_set(pointer, !tls.verifyHostname))
        }
        if let will = configuration.will {
            let code = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set_v5(
                    pointer, will.topic.name, Int32(bytes.count), bytes.baseAddress, will.qos.rawValue, will.retain, nil)
            }
            try check(code)
        }
    }

    private func check(_ code: Int32) throws(MQTTError) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            throw .invalidConfiguration(LibMosquittoLibrary.errorText(code))
        }
    }
}
