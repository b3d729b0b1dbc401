import Foundation
import Loader

/// A handler's client for tests that watch only how a load ends (and what they implement themselves): the response,
/// the body and upload progress are taken and dropped, and the body is always wanted at once.
public protocol EndWatchingClient: SchemeHandlerClient {}

extension EndWatchingClient {
    public func handler(_ handler: SchemeHandler, didReceive response: LoadResponse) {}
    public func handler(_ handler: SchemeHandler, wasRedirectedTo request: LoadRequest, redirectResponse response: LoadResponse) {}
    public func handler(_ handler: SchemeHandler, didLoad data: Data) {}
    public func handler(_ handler: SchemeHandler, deliver data: Data) async throws {}
    public func handler(_ handler: SchemeHandler, whenReadyForData callback: @escaping @Sendable () -> Void) { callback() }
    public func handler(_ handler: SchemeHandler, didSendBodyData totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {}
}
