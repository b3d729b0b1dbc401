#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Asks for a password, as curl does for `-u USER` and `-U USER` given without one: the prompt on standard error, the
/// answer read from the controlling terminal with its echo off, or from standard input when there is no terminal
/// (`echo secret | loadurl -u user URL` in a script).
enum TerminalPrompt {
    /// The longest line read: a password, not a file.
    static let longestLine = 4096

    /// The line answered after `prompt`, without its line end; empty when standard input ends first.
    static func secret(_ prompt: String) -> String {
        let terminal = open("/dev/tty", O_RDWR | O_NOCTTY)
        defer { if terminal >= 0 { close(terminal) } }
        let fd = terminal >= 0 ? terminal : STDIN_FILENO
        var saved = termios()
        let quieted = tcgetattr(fd, &saved) == 0
        if quieted {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            // Now, not after flushing: what was typed ahead is the answer.
            _ = tcsetattr(fd, TCSANOW, &quiet)
        }
        defer { if quieted { _ = tcsetattr(fd, TCSANOW, &saved) } }
        StandardStreams.error(prompt)
        // Byte by byte, to the line's end only: the rest of standard input may be a body to send (-T -).
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < longestLine, read(fd, &byte, 1) == 1, byte != 0x0A { line.append(byte) }
        // The line end the unechoed Enter did not show.
        if quieted { StandardStreams.error("\n") }
        if line.last == 0x0D { line.removeLast() }
        return String(decoding: line, as: UTF8.self)
    }

    /// `credentials` (`-u`'s or `-U`'s `USER[:PASSWORD]`) with the password asked for when it has none (no colon), for
    /// `whose` (curl's "host" or "proxy"); as given otherwise.
    static func completing(_ credentials: String?, whose: String) -> String? {
        guard let credentials, !credentials.contains(":") else { return credentials }
        return credentials + ":" + secret("Enter \(whose) password for user '\(credentials)':")
    }
}
