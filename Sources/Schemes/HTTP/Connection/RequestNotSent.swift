/// Why a request failed before any byte of it was written: its connection had already closed (the server, or the
/// network, ended it between the connect and the request, or while it was idle in the pool). Nothing reached the
/// server and nothing of the body was read, so the request may go once more on a new connection whatever its method
/// (``HTTPRequestPlan/mayRetry(after:on:exchange:)``).
struct RequestNotSent: Error, CustomStringConvertible {
    var description: String { "the connection closed before any byte of the request was written" }
}
