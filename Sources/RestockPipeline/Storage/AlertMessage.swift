/// One alert as it goes out: its customer's alerts topic and its JSON, byte for byte what the customer receives.
package struct AlertMessage: Sendable, Hashable {
    /// `P/{store}/customers/{customer}/alerts`.
    package let topic: String
    /// The alert's JSON (``RestockCore/RestockAlert/jsonData()``).
    package let payload: [UInt8]

    package init(topic: String, payload: [UInt8]) {
        self.topic = topic
        self.payload = payload
    }
}
