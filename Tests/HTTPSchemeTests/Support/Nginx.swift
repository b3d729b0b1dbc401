import Foundation
import HTTPScheme
import Loader
import TestSupport

/// The nginx that `scripts/test-servers` runs on 127.0.0.1 (started here if it is not running).
enum Nginx {
    typealias Endpoints = TestServers.Nginx

    static var endpoints: Endpoints? { TestServers.nginx }

    /// The running nginx; a test that needs it fails (rather than skips) when it could not be started.
    static func require() throws -> Endpoints {
        try TestServers.requireNginx()
    }

    static func http(_ path: String) throws -> URL {
        URL(string: "http://127.0.0.1:\(try require().httpPort)\(path)")!
    }

    static func https(_ path: String, host: String = "localhost") throws -> URL {
        URL(string: "https://\(host):\(try require().httpsPort)\(path)")!
    }

    /// A session that trusts the test CA.
    static func session(configure: (inout LoaderSession.Configuration) -> Void = { _ in }) throws -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        configuration.handlerOptions[HTTPClientOptions.self].tls.additionalTrustRootsPEMFile = try require().caFile
        configure(&configuration)
        return LoaderSession(configuration: configuration)
    }
}

