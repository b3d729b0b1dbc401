import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import FTPScheme
import HTTPScheme
import Loader
import NIOCore
import NIOSSL
import StandardSchemes
import Synchronization

/// The HTTP operations each client is measured on, written as its users would write them.
protocol BenchClient: Sendable {
    var name: String { get }
    /// GETs `url` and returns the body's size (the body is read and dropped).
    func get(_ url: URL) async throws -> Int
    /// Streams `url` and drops each chunk; returns the size.
    func stream(_ url: URL) async throws -> Int
    /// Downloads `url` into a new file and returns it; the caller removes it once the time is taken: removing
    /// 512 MiB just written (dirty, or being written back) cost up to a second of system time here, which
    /// curl's own run never pays.
    func downloadToFile(_ url: URL) async throws -> URL
    /// Where the scenario's tasks should run (`withTaskExecutorPreference`), if the client offers a place.
    var preferredExecutor: (any TaskExecutor)? { get }
}

extension BenchClient {
    var preferredExecutor: (any TaskExecutor)? { nil }
}

/// Our loader, through its public async API.
struct LoaderClient: BenchClient {
    let name: String
    let session: LoaderSession
    let preferredExecutor: (any TaskExecutor)?

    /// - Parameters:
    ///   - connectionsPerHost: The pool's limit per origin (the handler's default when `nil`).
    ///   - onEventLoop: Whether the scenario's tasks run on an HTTP event loop
    ///     (``HTTPSchemeHandler/taskExecutor()``), as a caller making many HTTP requests may choose.
    ///   - keepsFTPConnections: Whether the session keeps its FTP control connections between loads (the
    ///     default); `false` logs in for every load, as before they were kept, for A/B runs in one binary.
    init(connectionsPerHost: Int? = nil, onEventLoop: Bool = false, keepsFTPConnections: Bool = true) {
        name = onEventLoop ? "loader-el" : keepsFTPConnections ? "loader" : "loader-ftp-fresh"
        preferredExecutor = onEventLoop ? HTTPSchemeHandler.taskExecutor() : nil
        StandardSchemes.register()
        var configuration = LoaderSession.Configuration.default
        if let connectionsPerHost { configuration.handlerOptions[HTTPClientOptions.self].maximumConnectionsPerHost = connectionsPerHost }
        if !keepsFTPConnections { configuration.handlerOptions[FTPOptions.self].idleConnectionTimeout = 0 }
        // For ad hoc runs against the test servers' https ports (HTTP/2 or HTTP/1.1): their CA.
        if let ca = ProcessInfo.processInfo.environment["LOADERBENCH_CA"] {
            configuration.handlerOptions[HTTPClientOptions.self].tls.additionalTrustRootsPEMFile = ca
        }
        session = LoaderSession(configuration: configuration)
    }

    func get(_ url: URL) async throws -> Int { try await session.data(from: url).0.count }

    func stream(_ url: URL) async throws -> Int {
        let (bytes, _) = try await session.bytes(from: url)
        var count = 0
        for try await chunk in bytes.chunks { count += chunk.count }
        return count
    }

    func downloadToFile(_ url: URL) async throws -> URL { try await session.download(from: url).0 }
}

/// FoundationNetworking's URLSession (libcurl underneath on Linux).
struct URLSessionClient: BenchClient {
    let name = "urlsession"
    let session: URLSession

    /// - Parameter connectionsPerHost: `httpMaximumConnectionsPerHost` (URLSession's default when `nil`).
    init(connectionsPerHost: Int? = nil) {
        let configuration = URLSessionConfiguration.default
        if let connectionsPerHost { configuration.httpMaximumConnectionsPerHost = connectionsPerHost }
        session = URLSession(configuration: configuration)
    }

    func get(_ url: URL) async throws -> Int { try await session.data(from: url).0.count }

    /// URLSession on Linux has no `bytes(from:)`: the whole body is collected, which is how its users read it.
    func stream(_ url: URL) async throws -> Int { try await get(url) }

    func downloadToFile(_ url: URL) async throws -> URL { try await session.download(from: url).0 }
}

/// AsyncHTTPClient clients made with a connection limit, kept for the life of the process as the shared one
/// is: a client must not be deinitialised before it is shut down.
private let configuredClients = Mutex<[Int: HTTPClient]>([:])

/// AsyncHTTPClient, what a Swift server developer would pick for HTTP.
struct AsyncHTTPClientClient: BenchClient {
    let name = "asynchttpclient"
    let client: HTTPClient

    /// - Parameter connectionsPerHost: The pool's soft limit per host (AsyncHTTPClient's default when `nil`).
    init(connectionsPerHost: Int? = nil) {
        // As for our loader: the test servers' CA, for the runs against their https ports (HTTP/2 by ALPN, which
        // AsyncHTTPClient offers by default, as we do).
        let ca = ProcessInfo.processInfo.environment["LOADERBENCH_CA"]
        guard connectionsPerHost != nil || ca != nil else {
            // The shared client: made once per process, never shut down (as AsyncHTTPClient recommends for that use).
            client = HTTPClient.shared
            return
        }
        client = configuredClients.withLock { clients in
            let key = connectionsPerHost ?? 0
            if let client = clients[key] { return client }
            var configuration = HTTPClient.Configuration()
            if let connectionsPerHost { configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost }
            if let ca {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.additionalTrustRoots = [.file(ca)]
                configuration.tlsConfiguration = tls
            }
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[key] = client
            return client
        }
    }

    func get(_ url: URL) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(60))
        return try await response.body.collect(upTo: 1 << 30).readableBytes
    }

    func stream(_ url: URL) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(600))
        var count = 0
        for try await buffer in response.body { count += buffer.readableBytes }
        return count
    }

    func downloadToFile(_ url: URL) async throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ahc-\(UUID().uuidString)")
        do {
            let delegate = try FileDownloadDelegate(path: file.path)
            _ = try await client.execute(request: try HTTPClient.Request(url: url.absoluteString), delegate: delegate).get()
            return file
        } catch {
            // A failed download leaves its partial file behind (the loader and URLSession remove theirs).
            try? FileManager.default.removeItem(at: file)
            throw error
        }
    }
}
