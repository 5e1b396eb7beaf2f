#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SUBSCRIBE and DISCONNECT written straight to a plain TCP socket, for ``MQTTClient/prepareSession(subscribingTo:qos:)``
/// (see the CONNACK callback in ``LibMosquittoCallbacks``), and DISCONNECT alone for a clean stop: the only packets this
/// client ever writes around libmosquitto.
enum LibMosquittoRawPackets {
    /// Writes SUBSCRIBE (packet id 1) and DISCONNECT (normal) in one go, then shuts the socket for writing: nothing
    /// libmosquitto queues afterwards (an acknowledgement of a message it reads) can reach the broker. Reading
    /// stays open — shutting it too would make the kernel answer the broker's next bytes with a reset, and the
    /// broker would discard the SUBSCRIBE unread.
    /// - Returns: Whether all the bytes were written.
    static func subscribeAndDisconnect(socket: Int32, filter: String, qos: MQTTQoS, version: MQTTProtocolVersion) -> Bool {
        guard socket >= 0 else { return false }
        let topic = Array(filter.utf8)
        guard topic.count <= 65_535 else { return false }
        var body: [UInt8] = [0x00, 0x01]  // packet identifier 1
        if version == .v5 { body.append(0x00) }  // no properties
        body += [UInt8(topic.count >> 8), UInt8(topic.count & 0xFF)] + topic
        body.append(UInt8(qos.rawValue))  // 3.1.1: requested QoS; 5: options (QoS, no flags)
        let packet: [UInt8] = [0x82] + remainingLength(body.count) + body + disconnectPacket
        return writeAndShut(packet, to: socket)
    }

    /// Writes DISCONNECT (normal), then shuts the socket for writing, for a clean stop over plain TCP: the connection
    /// then ends when the broker closes it (``awaitClose(socket:within:)``), having read everything written before.
    /// libmosquitto closes the socket as soon as it has written a DISCONNECT itself, and a socket closed while the
    /// broker still sends is reset: mosquitto, busy writing a burst, then drops the connection with the PUBACKs before
    /// the DISCONNECT unread, and delivers those messages again (GroupCommitTests: hundreds of a burst).
    /// - Returns: Whether all the bytes were written.
    static func disconnect(socket: Int32) -> Bool {
        guard socket >= 0 else { return false }
        return writeAndShut(disconnectPacket, to: socket)
    }

    /// DISCONNECT, reason normal (the same bytes in 3.1.1 and 5).
    private static let disconnectPacket: [UInt8] = [0xE0, 0x00]

    /// Writes `packet` whole, waiting for the socket when it is full, then shuts it for writing.
    private static func writeAndShut(_ packet: [UInt8], to socket: Int32) -> Bool {
        var sent = 0
        while sent < packet.count {
            let written = packet[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, noSignal) }
            if written > 0 {
                sent += written
            } else if written < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                var ready = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
                guard poll(&ready, 1, 2_000) > 0 else { return false }
            } else {
                return false
            }
        }
        shutdown(socket, Int32(SHUT_WR))
        return true
    }

    /// `send` flags: no SIGPIPE when the broker has closed the connection (Linux; Darwin has no such flag).
    #if os(Linux)
    private static let noSignal = Int32(MSG_NOSIGNAL)
    #else
    private static let noSignal: Int32 = 0
    #endif

    /// Reads and discards until the peer closes the connection, or `milliseconds` pass.
    static func awaitClose(socket: Int32, within milliseconds: Int) {
        guard socket >= 0 else { return }
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while ContinuousClock.now < deadline {
            var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) >= 0 else { return }
            guard ready.revents != 0 else { continue }
            let read = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if read == 0 { return }  // the broker closed: it has read everything
            if read < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR { return }
        }
    }

    /// MQTT's variable byte integer.
    private static func remainingLength(_ length: Int) -> [UInt8] {
        var value = length, bytes: [UInt8] = []
        repeat {
            var byte = UInt8(value % 128)
            value /= 128
            if value > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while value > 0
        return bytes
    }
}
