/// Why an HTTP/1 request failed before any byte of it was written: its connection had already closed (the
/// server, or the network, ended it between the connect and the request). Nothing reached the server, so the
/// request may go once more on a new connection whatever its method (``HTTPRequestPlan/mayRetry(after:on:exchange:)``).
struct RequestNotSent: Error, CustomStringConvertible {
    var description: String { "the connection closed before any byte of the request was written" }
}
