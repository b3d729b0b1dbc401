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
    init(request: LoadRequest, head: HTTPRequestHead, on connection: HTTPConnection, fetchStart: Date, reused: Bool,
         proxied: Bool) {
        var sent = request
        sent.headerFields = HTTPFields(head.headers)
        var transaction = LoadTransactionMetrics(request: sent, fetchStartDate: fetchStart)
        transaction.requestTarget = head.uri
        transaction.networkProtocolName = connection.multiplexedOn == nil ? "http/1.1" : "h2"
        transaction.isReusedConnection = reused
        transaction.isProxyConnection = proxied
        // A new connection's own times (a wait for the pool to give one is not part of them).
        let facts = connection.record?.facts
        let opened = reused ? nil : facts
        // The version goes with every exchange of the connection, as URLSession's metrics give it.
        transaction.negotiatedTLSProtocolVersion = facts?.tlsVersion
        transaction.connectStartDate = opened?.connectStart
        transaction.connectEndDate = opened?.connectEnd
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
        // The server's version (an HTTP/1.0 server's answer to our HTTP/1.1 request).
        if let version = response.networkProtocolName { transaction.networkProtocolName = version }
        transaction.responseStartDate = Date()
        return transaction
    }
}
