import Foundation
@testable import HTTPScheme
import Loader
import NIOSSL
import Testing
import TestSupport

@Suite("TLS contexts: made once per setting, however many connections ask at once")
struct TLSContextCacheTests {
    @Test("Sixteen connections opening at once for a setting not seen before share one context, made once")
    func madeOnceForManyAtOnce() async throws {
        let cache = TLSContextCache()
        let options = HTTPClientOptions().tls
        let contexts = try await withThrowingTaskGroup(of: NIOSSLContext.self) { group in
            for index in 0..<16 {
                group.addTask { try await cache.context(for: options, url: URL(string: "https://host\(index).test/")!) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(contexts.count == 16)
        #expect(contexts.allSatisfy { $0 === contexts[0] })
        #expect(cache.contextsMade == 1)
        // Another setting is another context.
        _ = try await cache.context(for: options, offersHTTP2: true, url: URL(string: "https://other.test/")!)
        #expect(cache.contextsMade == 2)
    }

    @Test("A context that cannot be made fails each connection that waited for it with its own URL, and is not kept: mended, the next one is made")
    func failureNamesEachURLAndIsNotKept() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tls-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let roots = folder.appendingPathComponent("roots.pem")
        var setting = HTTPClientOptions().tls
        setting.additionalTrustRootsPEMFile = roots.path
        let options = setting
        let cache = TLSContextCache()
        let urls = (0..<4).map { URL(string: "https://host\($0).test/")! }
        let errors = await withTaskGroup(of: (URL, LoadError?).self) { group in
            for url in urls {
                group.addTask {
                    do {
                        _ = try await cache.context(for: options, url: url)
                        return (url, nil)
                    } catch {
                        return (url, error as? LoadError)
                    }
                }
            }
            return await group.reduce(into: [(URL, LoadError?)]()) { $0.append($1) }
        }
        #expect(errors.count == 4)
        for (url, error) in errors {
            #expect(error?.code == .secureConnectionFailed)
            #expect(error?.url == url, "\(String(describing: error))")
            #expect(error?.reason?.contains(roots.path) == true, "\(String(describing: error))")
        }
        let nginx = try TestServers.requireNginx()
        try FileManager.default.copyItem(atPath: nginx.caFile, toPath: roots.path)
        _ = try await cache.context(for: options, url: urls[0])
        #expect(cache.contextsMade >= 2)
    }
}
