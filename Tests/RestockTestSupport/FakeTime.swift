/// A process whose wall clock is off (Debian's `faketime`, libfaketime): how stores and clients whose clocks disagree
/// are tested. Only the wall clock moves; monotonic clocks stay true, as on a real machine whose clock is wrong.
/// Offsets are positive (`+10m`): libfaketime with a negative offset stops a Swift program before its first line
/// here, so "ten minutes behind" is the other process ten minutes ahead.
///
/// `faketime` runs the program as its child and does not pass SIGKILL on (no one can): start it with
/// `ownProcessGroup: true`, so that signals reach the program and a test's end never leaves it running, orphaned
/// (seen: stores under faketime still spinning on a dead broker's port long after the suite ended). Preloading
/// libfaketime into the program directly instead loses a Swift program's arguments here.
public enum FakeTime {
    /// `executable arguments`, run under `faketime -f offset` when an offset is given.
    public static func command(_ executable: String, _ arguments: [String], offset: String?) -> (String, [String]) {
        guard let offset else { return (executable, arguments) }
        return ("faketime", ["-f", offset, executable] + arguments)
    }

    /// What the environment needs for `offset`: the monotonic clocks left alone.
    public static func environment(offset: String?) -> [String: String] {
        offset == nil ? [:] : ["FAKETIME_DONT_FAKE_MONOTONIC": "1"]
    }
}
