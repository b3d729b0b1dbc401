import NIOCore

/// Kept in an HTTP/2 connection's fault (see ``TLSFaultKeeper``) when the client closed it because the server sent
/// nothing, not even an answer to a `PING`, for a while after a load on it was given up (``HTTP2Connection/checkAlive()``):
/// the loads still on it then say why their connection closed, rather than that the server closed it.
struct HTTP2ServerSilent: Error, CustomStringConvertible {
    /// How long the connection waited for any byte from the server.
    let patience: TimeAmount

    var description: String {
        "the client closed the HTTP/2 connection: the server sent nothing, not even an answer to a PING, for \(patience.nanoseconds / 1_000_000_000) s"
    }
}
