import SystemPackage

/// Messages to the terminal. A closed or full stream loses the message and nothing else: the exit status
/// still tells what happened.
enum StandardStreams {
    /// Writes `text` to standard error.
    static func error(_ text: String) {
        _ = try? FileDescriptor.standardError.writeAll(text.utf8)
    }

    /// Writes `text` to standard output.
    static func output(_ text: String) {
        _ = try? FileDescriptor.standardOutput.writeAll(text.utf8)
    }
}
