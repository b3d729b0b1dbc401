import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Loader
import StandardSchemes

/// The scenarios: each returns how many requests it made and how many body bytes it read.
enum Scenarios {
    /// The client called `name`; `connectionsPerHost` sets its pool's limit per origin (its default when `nil`).
    static func client(_ name: String, connectionsPerHost: Int? = nil) throws -> any BenchClient {
        switch name {
        case "loader": return LoaderClient(connectionsPerHost: connectionsPerHost)
        case "loader-el": return LoaderClient(connectionsPerHost: connectionsPerHost, onEventLoop: true)
        case "loader-ftp-fresh": return LoaderClient(connectionsPerHost: connectionsPerHost, keepsFTPConnections: false)
        case "nio-minimal": return MinimalNIOClient(onEventLoop: false)
        case "nio-minimal-el": return MinimalNIOClient(onEventLoop: true)
        case "handler": return HandlerDirectClient(onEventLoop: false)
        case "handler-el": return HandlerDirectClient(onEventLoop: true)
        case "urlsession": return URLSessionClient(connectionsPerHost: connectionsPerHost)
        case "asynchttpclient": return AsyncHTTPClientClient(connectionsPerHost: connectionsPerHost)
        default: throw BenchError.usage("unknown client \(name)")
        }
    }

    static func sequential(_ client: any BenchClient, _ url: URL, count: Int) async throws -> (Int, Int) {
        try await withTaskExecutorPreference(client.preferredExecutor) {
            var bytes = 0
            for _ in 0..<count { bytes += try await client.get(url) }
            return (count, bytes)
        }
    }

    static func concurrent(_ client: any BenchClient, _ url: URL, count: Int, inFlight: Int) async throws -> (Int, Int) {
        // Child tasks inherit the preference.
        try await withTaskExecutorPreference(client.preferredExecutor) {
            try await withThrowingTaskGroup(of: Int.self) { group in
                var started = 0, bytes = 0
                while started < min(inFlight, count) {
                    group.addTask { try await client.get(url) }
                    started += 1
                }
                while let size = try await group.next() {
                    bytes += size
                    if started < count {
                        group.addTask { try await client.get(url) }
                        started += 1
                    }
                }
                return (count, bytes)
            }
        }
    }

    /// `count` streamed downloads all at once, each on a connection of its own: memory with many slow bodies.
    static func manyStreams(_ url: URL, count: Int) async throws -> (Int, Int) {
        let client = LoaderClient(connectionsPerHost: count)
        return try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count { group.addTask { try await client.stream(url) } }
            var bytes = 0
            while let size = try await group.next() { bytes += size }
            return (count, bytes)
        }
    }

    /// A base64 `data:` URL of `mebibytes` random bytes, and its base64 text (made before timing starts).
    static func dataURL(mebibytes: Int) -> (URL, String) {
        var generator = SystemRandomNumberGenerator()
        var raw = Data(count: mebibytes << 20)
        raw.withUnsafeMutableBytes { bytes in
            for index in stride(from: 0, to: bytes.count, by: 8) {
                let word = generator.next()
                for offset in 0..<Swift.min(8, bytes.count - index) { bytes[index + offset] = UInt8(truncatingIfNeeded: word >> (offset * 8)) }
            }
        }
        let base64 = raw.base64EncodedString()
        return (URL(string: "data:application/octet-stream;base64," + base64)!, base64)
    }

    /// The `data:` URL decoded `times` times: by our loader, or by Foundation's `Data(base64Encoded:)` as the
    /// reference, or by URLSession.
    static func decode(_ clientName: String, url: URL, base64: String, times: Int) async throws -> (Int, Int) {
        var bytes = 0
        for _ in 0..<times {
            switch clientName {
            case "loader":
                bytes += try await LoaderClient().session.data(from: url).0.count
            case "foundation":
                bytes += Data(base64Encoded: base64)?.count ?? 0
            case "urlsession":
                bytes += try await URLSession.shared.data(from: url).0.count
            default:
                throw BenchError.usage("data: is measured for loader, foundation and urlsession")
            }
        }
        return (times, bytes)
    }

    /// A session with `handlers` classes registered (a no-op one for `noop:`, the others each for a scheme
    /// of its own), already warmed up: the first loads of a process pay one-time costs (type metadata, lazy
    /// globals, allocator growth; about 7 ms), which a per-request figure should not spread over its count.
    static func noopSession(handlers: Int) async throws -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = decoys(max(0, handlers - 1), DecoyRoot.self) + [NoopHandler.self]
        let session = LoaderSession(configuration: configuration)
        guard session.registry.handlers.count == handlers else {
            throw BenchError.usage("\(handlers) handlers asked for, \(session.registry.handlers.count) registered")
        }
        _ = try await noop(session, count: 2_000)
        return session
    }

    /// `count` distinct handler classes, `DecoyHandler<Next<…<DecoyRoot>>>`: registering one class twice
    /// only moves it, so a registry of 100 handlers needs 100 types, made here at run time.
    private static func decoys<Depth: DecoyDepth>(_ count: Int, _ depth: Depth.Type) -> [SchemeHandler.Type] {
        count == 0 ? [] : [DecoyHandler<Depth>.self] + decoys(count - 1, Next<Depth>.self)
    }

    /// `count` loads of `noop:x` through the registry and the default middleware.
    static func noop(_ session: LoaderSession, count: Int) async throws -> (Int, Int) {
        let url = URL(string: "noop:x")!
        var bytes = 0
        for _ in 0..<count { bytes += try await session.data(from: url).0.count }
        return (count, bytes)
    }
}

/// Answers at once with an empty body.
final class NoopHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["noop"] }
    override func load() async throws {
        client.handler(self, didReceive: LoadResponse(url: request.url, mimeType: "text/plain", expectedContentLength: 0))
    }
}

/// A type-level counter that names each decoy handler's scheme.
protocol DecoyDepth { static var depth: Int { get } }
enum DecoyRoot: DecoyDepth { static var depth: Int { 0 } }
enum Next<Previous: DecoyDepth>: DecoyDepth { static var depth: Int { Previous.depth + 1 } }

/// One of many handlers registered to see whether choosing a handler stays flat: each serves a scheme of its
/// own (`decoy0`, `decoy1`, …), so each is a separate entry in the registry.
final class DecoyHandler<Depth: DecoyDepth>: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["decoy\(Depth.depth)"] }
}

enum BenchError: Error, CustomStringConvertible {
    case usage(String)
    var description: String {
        switch self {
        case .usage(let text): return text
        }
    }
}
