import FoundationEssentials
import HTTPTypes
import Loader
import NIOCore
import NIOHTTP1

/// An exchange's ``LoadTransactionMetrics`` up to the request going out, kept with the exchange until its response
/// head completes them. Made only for a load whose task collects metrics.
final class ExchangeMetrics: Sendable {
    private let started: LoadTransactionMetrics

    /// The transaction of `head` (the request as it goes out) for `request`, sent now on `connection`.
    /// - Parameters:
    ///   - fetchStart: When the handler began.
    ///   - reused: Whether the connection carried a request before.
    ///   - proxied: Whether the connection goes to a proxy.
    ///   - connect: When the request began to wait for a connection and got it, for a new one: what stands for the
    ///     connect's times when the connection has no ``ConnectionRecord`` of its own.
    init(request: LoadRequest, head: HTTPRequestHead, on connection: HTTPConnection, fetchStart: Date, reused: Bool,
         proxied: Bool, connect: (start: Date, end: Date)?) {
        var sent = request
        sent.headerFields = HTTPFields(head.headers)
        var transaction = LoadTransactionMetrics(request: sent, fetchStartDate: fetchStart)
        transaction.requestTarget = head.uri
        transaction.networkProtocolName = connection.multiplexedOn == nil ? "http/1.1" : "h2"
        transaction.isReusedConnection = reused
        transaction.isProxyConnection = proxied
        // A new connection's own times; the caller's (from asking the pool to its answer) only without them.
        let opened = reused ? nil : connection.record?.facts
        transaction.connectStartDate = opened?.connectStart ?? connect?.start
        transaction.connectEndDate = opened?.connectEnd ?? connect?.end
        transaction.secureConnectionStartDate = opened?.secureConnectionStart
        transaction.secureConnectionEndDate = opened?.secureConnectionEnd
        transaction.dialogue = opened?.tunnel ?? []
        // An HTTP/2 stream's channel answers with its connection's addresses.
        let remote = connection.channel.remoteAddress
        transaction.remoteAddress = remote?.ipAddress ?? remote?.pathname
        transaction.remotePort = remote?.port
        let local = connection.channel.localAddress
        transaction.localAddress = local?.ipAddress
        transaction.localPort = local?.port
        transaction.requestStartDate = Date()
        started = transaction
    }

    /// The transaction with its response head, which arrived now.
    func completed(with response: LoadResponse) -> LoadTransactionMetrics {
        var transaction = started
        transaction.response = response
        transaction.responseStartDate = Date()
        return transaction
    }
}
