import Foundation
import HTTPScheme
import Loader
import TestSupport

/// What the suites that load from a ``ScriptedHTTP2Server`` share: its URLs, and sessions speaking HTTP/2 to it.
extension ScriptedHTTP2Server {
    /// The server's URL for `path`.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// A request for `path` with a request timeout of `seconds`.
    func request(_ path: String, timeout seconds: TimeInterval) -> LoadRequest {
        var request = LoadRequest(url: url(path))
        request.timeoutInterval = seconds
        return request
    }

    /// A new session of the HTTP handler alone, speaking HTTP/2 to the server from the first byte (prior knowledge).
    static func session() -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        configuration.handlerOptions[HTTPClientOptions.self].http2PriorKnowledge = true
        return LoaderSession(configuration: configuration)
    }
}
