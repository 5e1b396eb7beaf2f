import RestockPipeline
import SeededRandom
import Testing

/// How a row left out names its text values (the store's log at start, `restock export`'s stderr): the row may have been
/// written by hand, so its text must not break the line it is named on, nor run on for megabytes.
@Suite("Text of a row left out, as a line names it")
struct StoredValuesDescribedTests {
    @Test("short text is quoted and escaped as a Swift literal: a newline, a terminal's escape, a quote stay on the line")
    func escaped() {
        #expect(StoredValues.described("alice") == #""alice""#)
        #expect(StoredValues.described("a\nwarning: forged\u{1B}[31m\"") == #""a\nwarning: forged\u{1B}[31m\"""#)
        #expect(StoredValues.described("") == #""""#)
    }

    @Test("text past 100 characters is cut there, and its length in bytes said; any text makes one line of bounded length")
    func cut() {
        let long = String(repeating: "é", count: 150)  // 2 bytes each
        #expect(StoredValues.described(long) == "\"\(String(repeating: "é", count: 100))\"… (300 bytes)")
        var random = SplitMix64(seed: 35)
        let alphabet: [Character] = ["a", "\n", "\r", "\u{1B}", "\"", "\\", "\u{0}", "é", "👍", "\u{7F}", " "]
        for _ in 0..<500 {
            let text = String((0..<Int.random(in: 0...400, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            let line = StoredValues.described(text)
            #expect(!line.contains(where: \.isNewline) && !line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(line)")
            #expect(line.count <= 2 + 100 * 8 + 20, "\(line)")  // each character escaped at most as \u{1B}-like: 8
        }
    }
}
