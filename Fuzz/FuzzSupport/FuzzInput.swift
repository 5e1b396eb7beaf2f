/// Reads the fuzzer's bytes as a sequence of choices. Past the end every read gives zero, so any input,
/// including an empty one, decodes to something.
public struct FuzzInput {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var offset = 0

    public init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        bytes = UnsafeBufferPointer(start: data, count: size)
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset >= bytes.count }

    /// How many bytes are left.
    public var remaining: Int { max(0, bytes.count - offset) }

    /// The next byte, or 0 past the end.
    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// One of `choices`, picked by the next byte.
    public mutating func pick<T>(_ choices: [T]) -> T {
        choices[Int(byte()) % choices.count]
    }

    /// The next 8 bytes as an `Int` (little-endian; missing bytes are 0).
    public mutating func int64() -> Int {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 8) { value |= UInt64(byte()) << UInt64(shift) }
        return Int(bitPattern: UInt(value))
    }

    /// The next `count` bytes (fewer at the end).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = max(offset, end) }
        return offset < end ? Array(bytes[offset..<end]) : []
    }

    /// Every byte left.
    public mutating func rest() -> [UInt8] { bytes(remaining) }

    /// A number that is often an edge of some range: zero, ±1, ±2^31, 10^9 ± 1, ±10^15, Int.min, Int.max; else
    /// a small number, or any 64-bit number.
    public mutating func number(small: ClosedRange<Int> = -2...9) -> Int {
        let selector = byte()
        switch selector {
        case 0..<128:
            return small.lowerBound + Int(selector) % (small.count)
        case 128..<240:
            return Self.edges[Int(selector - 128) % Self.edges.count]
        default:
            return int64()
        }
    }

    /// Numbers at the edges of the ranges the store and its contract use.
    public static let edges: [Int] = [
        0, 1, -1, 2, Int.min, Int.max, Int.min + 1, Int.max - 1,
        1 << 31, -(1 << 31), (1 << 31) - 1, -(1 << 31) - 1, 1 << 32, 1 << 53, (1 << 53) + 1, -(1 << 53),
        1_000_000_000, 1_000_000_001, 999_999_999, -1_000_000_000, -1_000_000_001, -999_999_999,
        1_000_000_000_000_000, 1_000_000_000_000_001, -1_000_000_000_000_000, -1_000_000_000_000_001,
        65_535, 65_536, 1883, 8883,
    ]
}
