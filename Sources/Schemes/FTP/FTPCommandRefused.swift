/// Why an FTP load failed on a command it was given to send (``FTPOptions/commandsAfterLogin``,
/// ``FTPOptions/commandsBeforeTransfer``, ``FTPOptions/commandsAfterTransfer``): the server refused it. A
/// ``Loader/LoadError``'s `underlying`, with ``Loader/LoadError/Code/badServerResponse``; `loadurl` exits 21 for it, as
/// curl (`CURLE_QUOTE_ERROR`).
public struct FTPCommandRefused: Error, Sendable, CustomStringConvertible {
    /// The server's refusal, when its reply was read.
    public let reply: FTPReply?

    /// A refusal answered with `reply`.
    public init(reply: FTPReply?) {
        self.reply = reply
    }

    /// The refusal, with the server's words when known.
    public var description: String {
        "the server refused a command it was given to send" + (reply.map { ": \($0)" } ?? "")
    }
}
