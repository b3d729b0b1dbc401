import Foundation
import HTTPScheme
import Loader

/// The nginx that `scripts/test-servers` runs on 127.0.0.1 (started here if it is not running).
enum Nginx {
    struct Endpoints: Sendable {
        let httpPort: Int
        let httpsPort: Int
        let caFile: String
        let root: String
    }

    static let endpoints: Endpoints? = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("scripts/test-servers").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script, "start"]
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let text = try? String(contentsOf: root.appendingPathComponent(".build/test-servers/env"), encoding: .utf8)
        else { return nil }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let pair = line.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { values[String(pair[0])] = String(pair[1]) }
        }
        guard let http = values["HTTP_PORT"].flatMap(Int.init), let https = values["HTTPS_PORT"].flatMap(Int.init),
              let ca = values["CA"], let www = values["ROOT"] else { return nil }
        return Endpoints(httpPort: http, httpsPort: https, caFile: ca, root: www)
    }()

    /// The running nginx; a test that needs it fails (rather than skips) when it could not be started.
    static func require() throws -> Endpoints {
        guard let endpoints else { throw NginxUnavailable() }
        return endpoints
    }

    struct NginxUnavailable: Error, CustomStringConvertible {
        var description: String { "nginx could not be started by scripts/test-servers (see its output)" }
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

/// Runs `body` and returns the `LoadError` it throws, or `nil` if it throws none.
func loadError(_ body: () async throws -> Void) async -> LoadError? {
    do {
        try await body()
        return nil
    } catch let error as LoadError {
        return error
    } catch {
        return LoadError(.unknown, reason: "not a LoadError: \(error)")
    }
}
