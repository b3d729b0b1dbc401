#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Asks for a password on the controlling terminal, as curl does for `-u USER` and `-U USER` given without one.
enum TerminalPrompt {
    /// The longest line read: a password, not a file.
    static let longestLine = 4096

    /// The line typed on the controlling terminal after `prompt`, not echoed; `nil` when the process has no terminal
    /// (a script, a service, a test), which then goes on with an empty password, as before.
    static func secret(_ prompt: String) -> String? {
        // The terminal itself, not standard input: that may be a file or a pipe with a body to send (-T -).
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var saved = termios()
        let canQuiet = tcgetattr(fd, &saved) == 0
        if canQuiet {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            // Now, not after flushing: what was typed ahead (or piped into the terminal) is the answer.
            _ = tcsetattr(fd, TCSANOW, &quiet)
        }
        defer { if canQuiet { _ = tcsetattr(fd, TCSANOW, &saved) } }
        _ = prompt.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < longestLine, read(fd, &byte, 1) == 1, byte != 0x0A { line.append(byte) }
        // The newline the unechoed Enter did not show.
        _ = write(fd, "\n", 1)
        if line.last == 0x0D { line.removeLast() }
        return String(decoding: line, as: UTF8.self)
    }

    /// `credentials` (`-u`'s or `-U`'s `USER[:PASSWORD]`) with the password asked for on the terminal when it has
    /// none (no colon), for `whose` (curl's "host" or "proxy"); as given otherwise, or when there is no terminal.
    static func completing(_ credentials: String?, whose: String) -> String? {
        guard let credentials, !credentials.contains(":"),
              let password = secret("Enter \(whose) password for user '\(credentials)':") else { return credentials }
        return credentials + ":" + password
    }
}
