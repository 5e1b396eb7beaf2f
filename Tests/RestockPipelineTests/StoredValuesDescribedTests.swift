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
        #expect(StoredValues.described("c1\u{9B}31m\u{85}x\u{2028}bidi\u{202E}gpj.exe") == #""c1\u{9B}31m\u{85}x\u{2028}bidi\u{202E}gpj.exe""#)
    }

    @Test("text past 100 characters is cut there, and its length in bytes said; any text makes one line of bounded length")
    func cut() {
        let long = String(repeating: "é", count: 150)  // 2 bytes each
        #expect(StoredValues.described(long) == "\"\(String(repeating: "é", count: 100))\"… (300 bytes)")
        var random = SplitMix64(seed: 35)
        // C0 and C1 controls, DEL, NEL, the line separator, the right-to-left override, a zero-width space (format).
        let alphabet: [Unicode.Scalar] = [
            "a", "\n", "\r", "\u{1B}", "\"", "\\", "\u{0}", "é", "👍", "\u{7F}", " ", "\u{9B}", "\u{85}", "\u{2028}", "\u{202E}", "\u{200B}",
        ]
        for _ in 0..<500 {
            var text = ""
            for _ in 0..<Int.random(in: 0...400, using: &random) { text.unicodeScalars.append(alphabet.randomElement(using: &random)!) }
            let line = StoredValues.described(text)
            let raw = line.unicodeScalars.filter { scalar in
                scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                    || [.format, .lineSeparator, .paragraphSeparator].contains(scalar.properties.generalCategory)
            }
            #expect(raw.isEmpty && !line.contains(where: \.isNewline), "\(line)")
            #expect(line.count <= 2 + 100 * 8 + 20, "\(line)")  // each character escaped at most as \u{1B}-like: 8
        }
    }
}
