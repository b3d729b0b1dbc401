import Foundation
import Loader
import TestSupport
import Testing
@testable import HTTPScheme

/// Requests through SOCKS4 proxies: dante (scripts/test-servers) for SOCKS4 to the real nginx, and a scripted proxy
/// for SOCKS4a, which dante refuses, and for the replies dante never gives.
@Suite("http(s): through SOCKS4 proxies (dante, and a scripted SOCKS4a proxy)")
struct SOCKS4ProxyTests {
    private func session(_ proxy: HTTPClientOptions.Proxy) throws -> LoaderSession {
        try Nginx.session {
            $0.handlerOptions[HTTPClientOptions.self].httpProxy = proxy
            $0.handlerOptions[HTTPClientOptions.self].httpsProxy = proxy
        }
    }

    @Test("socks4:// and socks4a:// are read as curl reads them: SOCKS4 resolving here, SOCKS4a leaving the name to the proxy, the user as the user ID")
    func parsing() throws {
        let local = try #require(HTTPClientOptions.Proxy("socks4://alice@127.0.0.1:1081"))
        #expect(local.kind == .socks4 && local.kind.isSOCKS && local.resolvesNamesLocally)
        #expect(local.port == 1081 && local.user == "alice" && local.password == nil)
        let remote = try #require(HTTPClientOptions.Proxy("socks4a://proxy.test"))
        #expect(remote.kind == .socks4 && !remote.resolvesNamesLocally && remote.port == 1080)
        #expect(HTTPClientOptions.Proxy(.socks4, host: "h").resolvesNamesLocally == false, "made in code: SOCKS4a unless asked")
        #expect(local.authorization == nil, "no Proxy-Authorization field for a SOCKS proxy")
    }

    /// The local port of each exchange's connection: the client's end, as the proxy sees it.
    private final class LocalPorts: LoadTaskDelegate {
        let ports = Locked<[Int]>([])
        func loadTask(_ task: LoadTask, didFinishCollecting metrics: LoadTaskMetrics) {
            ports.withLock { $0 += metrics.transactions.compactMap(\.localPort) }
        }
    }

    @Test("Through dante with socks4://: http and https open a tunnel, which dante logs for this connection")
    func throughDante() async throws {
        let proxies = try #require(TestServers.proxies, "dante could not be started by scripts/test-servers")
        let nginx = try Nginx.require()
        let proxy = try #require(HTTPClientOptions.Proxy("socks4://127.0.0.1:\(proxies.socksPort)"))
        let log = SOCKSLog(proxies.socksLog)
        let session = try session(proxy)
        let plain = LocalPorts()
        let (data, _) = try await session.data(from: URL(string: "http://localhost:\(nginx.httpPort)/hello.txt")!, delegate: plain)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
        let plainPort = try #require(plain.ports.withLock { $0.first })
        #expect(await log.tunnelled(to: nginx.httpPort, from: plainPort), "dante logged no tunnel to nginx's http port from \(plainPort)")
        let secure = LocalPorts()
        let (body, _) = try await session.data(from: Nginx.https("/300k.bin"), delegate: secure)
        #expect(Bytes.difference(body, try Data(contentsOf: URL(fileURLWithPath: nginx.root + "/300k.bin"))) == nil)
        let securePort = try #require(secure.ports.withLock { $0.first })
        #expect(await log.tunnelled(to: nginx.httpsPort, from: securePort), "dante logged no tunnel to nginx's https port from \(securePort)")

        // A port nothing listens on: dante says 91, and the error names the proxy, the target and the code.
        let closed = LoopbackPorts.closed()
        let url = URL(string: "http://127.0.0.1:\(closed)/")!
        let error = await loadError { _ = try await session.data(from: url) }
        #expect(error?.code == .cannotConnectToHost && error?.url == url, "\(String(describing: error))")
        #expect(error?.reason == "the SOCKS4 proxy 127.0.0.1:\(proxies.socksPort) refused the request or could not connect to 127.0.0.1:\(closed) (SOCKS4 reply 91)",
                "\(String(describing: error))")
    }

    @Test("socks4a:// sends the name for the proxy to resolve, after the user ID, with the address 0.0.0.1; an IPv4 address goes as an address")
    func socks4a() async throws {
        let server = try ScriptedSOCKS4Server(reply: ScriptedSOCKS4Server.reply(90))
        let proxy = try #require(HTTPClientOptions.Proxy("socks4a://alice@127.0.0.1:\(server.port)"))
        // A name nothing here resolves: only the proxy could have.
        let (data, response) = try await session(proxy).data(from: URL(string: "http://unresolvable.invalid:8080/x")!)
        #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == ScriptedSOCKS4Server.body)
        let name: [UInt8] = [4, 1, 0x1F, 0x90, 0, 0, 0, 1] + Array("alice".utf8) + [0] + Array("unresolvable.invalid".utf8) + [0]
        #expect(server.requests == [name])

        _ = try await session(proxy).data(from: URL(string: "http://10.1.2.3:80/")!)
        #expect(server.requests.last == [4, 1, 0, 80, 10, 1, 2, 3] + Array("alice".utf8) + [0])
    }

    @Test("socks4:// resolves the name here to an IPv4 address; an IPv6 address, or a user ID too long, is refused before the proxy is reached")
    func socks4ResolvesHere() async throws {
        let server = try ScriptedSOCKS4Server(reply: ScriptedSOCKS4Server.reply(90))
        let proxy = try #require(HTTPClientOptions.Proxy("socks4://127.0.0.1:\(server.port)"))
        let (data, _) = try await session(proxy).data(from: URL(string: "http://localhost:8080/")!)
        #expect(String(decoding: data, as: UTF8.self) == ScriptedSOCKS4Server.body)
        #expect(server.requests == [[4, 1, 0x1F, 0x90, 127, 0, 0, 1, 0]])

        let v6 = URL(string: "http://[::1]:8080/")!
        let error = await loadError { _ = try await session(proxy).data(from: v6) }
        #expect(error?.code == .cannotConnectToHost && error?.url == v6, "\(String(describing: error))")
        #expect(error?.reason?.contains("takes IPv4 addresses only, not ::1") == true, "\(String(describing: error))")
        // A user ID longer than a SOCKS4 request takes: the proxy's setting, not the URL, is at fault.
        var named = proxy
        named.user = String(repeating: "u", count: 256)
        let url = URL(string: "http://localhost:8080/")!
        let long = await loadError { _ = try await session(named).data(from: url) }
        #expect(long?.code == .userAuthenticationRequired && long?.reason?.contains("user ID") == true, "\(String(describing: long))")
        // Each the proxy's failure (it could not be asked), not the server's: curl's 97.
        #expect([error, long].allSatisfy { ($0?.underlying as? ProxyFailure)?.step == .socksHandshake }, "\(String(describing: error)) \(String(describing: long))")
        #expect(server.requests.count == 1, "nothing sent for an address SOCKS4 cannot carry, nor for a user ID it cannot")
    }

    @Test("A SOCKS4 proxy's refusals, a reply of another protocol, bytes after the reply, and a close before it fail the load naming the proxy",
          arguments: [
              (ScriptedSOCKS4Server.reply(92) as [UInt8]?, LoadError.Code.userAuthenticationRequired, "could not reach the identd of this machine"),
              (ScriptedSOCKS4Server.reply(93), .userAuthenticationRequired, "identd reports another user ID"),
              (ScriptedSOCKS4Server.reply(91), .cannotConnectToHost, "refused the request or could not connect to example.test:80 (SOCKS4 reply 91)"),
              (ScriptedSOCKS4Server.reply(17), .cannotConnectToHost, "answered with an unknown code to example.test:80 (SOCKS4 reply 17)"),
              ([5, 0, 0, 0, 0, 0, 0, 0], .cannotConnectToHost, "did not answer as a SOCKS4 proxy (its reply began with 5, not 0)"),
              (ScriptedSOCKS4Server.reply(90) + Array("HTTP".utf8), .badServerResponse, "sent bytes after opening the tunnel to example.test:80"),
              (nil, .networkConnectionLost, "closed the connection before opening the tunnel to example.test:80"),
          ])
    func failures(reply: [UInt8]?, code: LoadError.Code, saying: String) async throws {
        let server = try ScriptedSOCKS4Server(reply: reply)
        let proxy = try #require(HTTPClientOptions.Proxy("socks4a://127.0.0.1:\(server.port)"))
        let url = URL(string: "http://example.test/")!
        let error = await loadError { _ = try await session(proxy).data(from: url) }
        #expect(error?.code == code && error?.url == url, "\(String(describing: error))")
        #expect(error?.reason?.hasPrefix("the SOCKS") == true && error?.reason?.contains("127.0.0.1:\(server.port)") == true, "\(String(describing: error))")
        #expect(error?.reason?.contains(saying) == true, "\(String(describing: error))")
        // The proxy's failure, not the server's: what a tool tells apart (curl's 97).
        let failure = error?.underlying as? ProxyFailure
        #expect(failure?.step == .socksHandshake && failure?.proxy == "127.0.0.1:\(server.port)", "\(String(describing: error?.underlying))")
    }

    @Test("The SOCKS4 request's bytes, a reply in pieces, and what cannot be sent")
    func handshake() throws {
        var plain = try SOCKS4Handshake(target: .address([192, 0, 2, 7]), port: 443, userID: "")
        #expect(plain.request == [4, 1, 1, 187, 192, 0, 2, 7, 0])
        #expect(plain.receive([0, 90, 0]) == .wait)
        #expect(plain.receive([0, 0, 0, 0]) == .wait)
        #expect(plain.receive([0]) == .granted(extra: 0))
        var early = try SOCKS4Handshake(target: .name("a.test"), port: 1, userID: "u")
        #expect(early.request == [4, 1, 0, 1, 0, 0, 0, 1, 117, 0, 97, 46, 116, 101, 115, 116, 0])
        #expect(early.receive([0, 90, 0, 0, 0, 0, 0, 0, 72]) == .granted(extra: 1))
        var refused = try SOCKS4Handshake(target: .name("a.test"), port: 1, userID: "")
        #expect(refused.receive([0, 91, 0, 0, 0, 0, 0, 0]) == .refused(91))
        var other = try SOCKS4Handshake(target: .name("a.test"), port: 1, userID: "")
        #expect(other.receive([5, 90, 0, 0, 0, 0, 0, 0]) == .malformed(5))

        #expect(throws: SOCKS4Handshake.Unsendable.notIPv4) { try SOCKS4Handshake(target: .address(Array(repeating: 0, count: 16)), port: 1, userID: "") }
        #expect(throws: SOCKS4Handshake.Unsendable.userID) { try SOCKS4Handshake(target: .name("a.test"), port: 1, userID: "a\u{0}b") }
        #expect(throws: SOCKS4Handshake.Unsendable.userID) { try SOCKS4Handshake(target: .name("a.test"), port: 1, userID: String(repeating: "u", count: 256)) }
        #expect(throws: SOCKS4Handshake.Unsendable.name) { try SOCKS4Handshake(target: .name(String(repeating: "a", count: 256)), port: 1, userID: "") }
    }
}
