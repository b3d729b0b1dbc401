import Foundation
import FTPScheme
import Loader
import TestSupport
import Testing

extension FTPServerTests {
@Suite("ftp: uploads, logins and FTPS against pyftpdlib")
struct FTPUploadAndLoginTests {
    private func uploadPath(_ name: String = "f.bin") -> String { "/upload/\(UUID().uuidString)-\(name)" }

    @Test("Uploads from bytes, a file and an async stream arrive byte for byte, with upload progress")
    func uploads() async throws {
        let payload = Data((0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-up-\(UUID().uuidString)")
        try payload.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let bodies: [(String, RequestBody)] = [
            ("bytes", .bytes(payload)),
            ("file", .file(file)),
            ("stream", .stream(length: nil) {
                AsyncThrowingStream { continuation in
                    for offset in stride(from: 0, to: payload.count, by: 50_000) {
                        continuation.yield(payload.subdata(in: offset..<min(offset + 50_000, payload.count)))
                    }
                    continuation.finish()
                }
            }),
        ]
        for (kind, body) in bodies {
            let path = uploadPath(kind)
            var request = LoadRequest(url: try FTPServers.url(path, userInfo: "user:secret"), method: .put)
            request.body = body
            let delegate = FTPDelegate()
            _ = try await FTPServers.session().data(for: request, delegate: delegate)
            #expect(try FTPServers.file(path) == payload, "\(kind)")
            #expect(delegate.sent.withLock { $0.last } == Int64(payload.count), "\(kind): upload progress reaches the whole size")
        }
    }

    @Test("An upload whose body cannot be read fails before the server is told to store: the file there keeps its bytes")
    func unreadableBodyLeavesRemoteFile() async throws {
        struct Refused: Error {}
        let path = uploadPath("kept.txt")
        let stored = URL(fileURLWithPath: try FTPServers.require().root + path)
        try Data("kept\n".utf8).write(to: stored)
        defer { try? FileManager.default.removeItem(at: stored) }
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-\(UUID().uuidString)")
        let bodies: [(String, RequestBody)] = [
            ("missing file", .file(missing)),
            ("stream failing at once", .stream(length: nil) { AsyncThrowingStream { $0.finish(throwing: Refused()) } }),
        ]
        for (kind, body) in bodies {
            var request = LoadRequest(url: try FTPServers.url(path, userInfo: "user:secret"), method: .put)
            request.body = body
            let error = await loadError { _ = try await FTPServers.session().data(for: request) }
            #expect(error?.url == request.url, "\(kind): \(String(describing: error))")
            #expect(error != nil && error?.code != .cancelled, "\(kind): \(String(describing: error))")
            #expect(try Data(contentsOf: stored) == Data("kept\n".utf8), "\(kind): the server's file was emptied")
        }
    }

    @Test("An upload whose body gives fewer bytes than it announced fails saying so (requestBodyStreamExhausted), not as a lost connection")
    func shortBody() async throws {
        var request = LoadRequest(url: try FTPServers.url(uploadPath("short"), userInfo: "user:secret"), method: .put)
        request.body = .stream(length: 1000) {
            AsyncThrowingStream { continuation in
                continuation.yield(Data(repeating: 7, count: 500))
                continuation.finish()
            }
        }
        let error = await loadError { _ = try await FTPServers.session().data(for: request) }
        #expect(error?.code == .requestBodyStreamExhausted, "\(String(describing: error))")
        #expect(error?.url == request.url)
        #expect(error?.reason?.contains("1000") == true, "\(String(describing: error?.reason))")
    }

    @Test("An upload the server refuses after taking its bytes (451 where 226 was due) fails as not written, with the server's words")
    func refusedAtItsEnd() async throws {
        let name = "/upload/refused-at-end-\(UUID().uuidString).bin"
        var request = LoadRequest(url: try FTPServers.url(name, userInfo: "user:secret"), method: .put)
        request.body = .bytes(Data(repeating: 7, count: 10_000))
        let error = await loadError { _ = try await FTPServers.session().data(for: request) }
        #expect(error?.code == .cannotWriteToFile, "\(String(describing: error))")
        #expect(error?.url == request.url)
        #expect((error?.underlying as? FTPReply)?.code == 451, "\(String(describing: error?.underlying))")
        #expect(error?.reason?.contains("local error in processing") == true, "\(String(describing: error?.reason))")
    }

    @Test("A request with a body goes up with PUT alone: a POST to ftp: is unsupportedURL, nothing stored")
    func onlyPutUploads() async throws {
        let path = uploadPath("posted.txt")
        let url = try FTPServers.url(path, userInfo: "user:secret")
        var post = LoadRequest(url: url, method: .post)
        post.body = .bytes(Data("x".utf8))
        let error = await loadError { _ = try await FTPServers.session().data(for: post) }
        #expect(error?.code == .unsupportedURL && error?.url == url, "\(String(describing: error))")
        let missing = await loadError { _ = try await FTPServers.session().data(from: url) }
        #expect(missing?.code == .fileDoesNotExist, "\(String(describing: missing))")
    }

    @Test("An upload appends to its file when asked (APPE), making it if it is not there; otherwise it replaces the file")
    func appends() async throws {
        let path = uploadPath("append.txt")
        var request = LoadRequest(url: try FTPServers.url(path, userInfo: "user:secret"), method: .put)
        request.options[FTPOptions.self].appendsUploads = true
        request.body = .bytes(Data("one\n".utf8))
        _ = try await FTPServers.session().data(for: request)
        request.body = .bytes(Data("two\n".utf8))
        _ = try await FTPServers.session().data(for: request)
        #expect(try FTPServers.file(path) == Data("one\ntwo\n".utf8))
        request.options[FTPOptions.self].appendsUploads = false
        request.body = .bytes(Data("three\n".utf8))
        _ = try await FTPServers.session().data(for: request)
        #expect(try FTPServers.file(path) == Data("three\n".utf8))
    }

    @Test("Commands sent around the transfer: a DELE after it removes the file fetched; a refused one fails the load (FTPCommandRefused with the server's reply) before anything is fetched, unless marked *; a line break is refused before anything is sent")
    func commands() async throws {
        let path = uploadPath("quoted.txt")
        let name = String(path.split(separator: "/").last!)
        var upload = LoadRequest(url: try FTPServers.url(path, userInfo: "user:secret"), method: .put)
        upload.body = .bytes(Data("fetched, then deleted\n".utf8))
        _ = try await FTPServers.session().data(for: upload)
        var fetch = LoadRequest(url: try FTPServers.url(path, userInfo: "user:secret"))
        fetch.options[FTPOptions.self].commandsAfterTransfer = ["DELE \(name)"]
        let (data, _) = try await FTPServers.session().data(for: fetch)
        #expect(data == Data("fetched, then deleted\n".utf8))
        #expect(!FileManager.default.fileExists(atPath: try FTPServers.require().root + path), "the DELE after the transfer removed it")

        let hello = try FTPServers.url("/hello.txt", userInfo: "user:secret")
        var refused = LoadRequest(url: hello)
        refused.options[FTPOptions.self].commandsAfterLogin = ["DELE no-such-file-\(UUID().uuidString)"]
        let delegate = FTPDelegate()
        let error = await loadError { _ = try await FTPServers.session().data(for: refused, delegate: delegate) }
        let refusal = error?.underlying as? FTPCommandRefused
        #expect(error?.code == .badServerResponse && error?.url == hello && refusal?.reply?.code == 550, "\(String(describing: error))")
        var tolerated = refused
        tolerated.options[FTPOptions.self].commandsAfterLogin = ["*DELE no-such-file-\(UUID().uuidString)"]
        #expect(try await FTPServers.session().data(for: tolerated).0 == Data("Hello from FTP\n".utf8))

        // Before the transfer means in the path's folder (after its CWD): the same DELE in the login folder finds no file.
        let second = uploadPath("quoted-again.txt")
        let secondName = String(second.split(separator: "/").last!)
        upload.url = try FTPServers.url(second, userInfo: "user:secret")
        _ = try await FTPServers.session().data(for: upload)
        var early = LoadRequest(url: try FTPServers.url(second, userInfo: "user:secret"))
        early.options[FTPOptions.self].commandsAfterLogin = ["DELE \(secondName)"]
        let inLoginFolder = await loadError { _ = try await FTPServers.session().data(for: early) }
        #expect(inLoginFolder?.underlying is FTPCommandRefused, "\(String(describing: inLoginFolder))")
        early.options[FTPOptions.self].commandsAfterLogin = []
        early.options[FTPOptions.self].commandsBeforeTransfer = ["DELE \(secondName)"]
        let deletedFirst = await loadError { _ = try await FTPServers.session().data(for: early) }
        #expect(deletedFirst?.code == .fileDoesNotExist, "deleted in its folder before the RETR: \(String(describing: deletedFirst))")

        // A load with commands goes on a connection of its own: a CWD it sends changes no kept connection's folder.
        let kept = FTPServers.session()
        var moving = LoadRequest(url: hello)
        moving.options[FTPOptions.self].commandsAfterTransfer = ["CWD folder"]
        _ = try await kept.data(for: moving)
        #expect(try await kept.data(from: hello).0 == Data("Hello from FTP\n".utf8), "the session's next load is in the login folder")

        var broken = LoadRequest(url: hello)
        broken.options[FTPOptions.self].commandsBeforeTransfer = ["NOOP\r\nDELE hello.txt"]
        let injected = await loadError { _ = try await FTPServers.session().data(for: broken) }
        #expect(injected?.code == .unsupportedURL && injected?.reason?.contains("line break") == true, "\(String(describing: injected))")
    }

    @Test("An upload creates missing folders only when asked")
    func missingDirectories() async throws {
        let path = "/upload/\(UUID().uuidString)/deep/f.txt"
        var request = LoadRequest(url: try FTPServers.url(path, userInfo: "user:secret"), method: .put)
        request.body = .bytes(Data("made".utf8))
        let refused = await loadError { _ = try await FTPServers.session().data(for: request) }
        // The folder cannot be entered: the file cannot be created there (not "no permission to read").
        #expect(refused?.code == .cannotCreateFile, "\(String(describing: refused))")
        #expect(refused?.url == request.url)
        // A download from a folder that is not there: the file does not exist.
        let missingURL = try FTPServers.url("/no-such-folder-\(UUID().uuidString)/f.txt")
        let missing = await loadError { _ = try await FTPServers.session().data(from: missingURL) }
        #expect(missing?.code == .fileDoesNotExist, "\(String(describing: missing))")
        #expect(missing?.url == missingURL)
        request.options[FTPOptions.self].createsMissingDirectories = true
        _ = try await FTPServers.session().data(for: request)
        #expect(try FTPServers.file(path) == Data("made".utf8))
    }

    @Test("Anonymous users cannot write: the refusal is an error naming the URL")
    func anonymousUploadRefused() async throws {
        let url = try FTPServers.url(uploadPath())
        var request = LoadRequest(url: url, method: .put)
        request.body = .bytes(Data("x".utf8))
        let error = await loadError { _ = try await FTPServers.session().data(for: request) }
        #expect(error?.url == url)
        #expect(error?.code != nil && error?.code != .unknown, "\(String(describing: error))")
    }

    @Test("A wrong password is userAuthenticationRequired after the delegates had their say")
    func wrongPassword() async throws {
        let url = try FTPServers.url("/hello.txt", userInfo: "user:wrong")
        let delegate = FTPDelegate()
        let error = await loadError { _ = try await FTPServers.session(delegate: delegate).data(from: url) }
        #expect(error?.code == .userAuthenticationRequired)
        #expect(error?.url == url)
        #expect(delegate.challenges.withLock { $0.first?.protectionSpace.authenticationMethod } == "FTP")
    }

    @Test("A refused login is answered by the delegate's credential, or by the session's credential store")
    func loginAnswered() async throws {
        let url = try FTPServers.url("/hello.txt", userInfo: "user:wrong")
        let good = Credential(user: "user", password: "secret")
        let (data, _) = try await FTPServers.session(delegate: FTPDelegate(answer: .useCredential(good))).data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from FTP\n")

        let store = CredentialStore()
        store.set(good, for: ProtectionSpace(host: "127.0.0.1", port: url.port!, scheme: "ftp", realm: nil, authenticationMethod: "FTP"))
        let (stored, _) = try await FTPServers.session { $0.credentialStore = store }.data(from: url)
        #expect(String(decoding: stored, as: UTF8.self) == "Hello from FTP\n")
    }

    /// A session that requires TLS on ftp:// and trusts the CA in `caFile`.
    private static func requiringTLS(trusting caFile: String) -> LoaderSession {
        FTPServers.session {
            $0.handlerOptions[FTPOptions.self].tls = .required
            $0.handlerOptions[FTPOptions.self].trustRootsPEMFile = caFile
        }
    }

    @Test("Explicit FTPS (AUTH TLS) with the test CA; an unknown CA is serverCertificateUntrusted")
    func ftps() async throws {
        let server = try FTPServers.require()
        let url = try FTPServers.url("/hello.txt", port: server.tlsPort, host: "localhost")
        let secure = Self.requiringTLS(trusting: server.caFile)
        let (data, _) = try await secure.data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from FTP\n")

        // A trusted connection made just before must not carry over to a session without the CA.
        let untrusting = FTPServers.session { $0.handlerOptions[FTPOptions.self].tls = .required }
        let error = await loadError { _ = try await untrusting.data(from: url) }
        #expect(error?.code == .serverCertificateUntrusted, "\(String(describing: error))")
        #expect(error?.url == url)

        // A trusted certificate for another name (it names localhost only) is the wrong host, as over HTTPS.
        let byAddress = try FTPServers.url("/hello.txt", port: server.tlsPort)
        let wrongHost = await loadError { _ = try await secure.data(from: byAddress) }
        #expect(wrongHost?.code == .serverCertificateWrongHost, "\(String(describing: wrongHost))")
        #expect(wrongHost?.url == byAddress)
    }

    @Test("A request that sets one FTP setting keeps its session's others: FTPS with the session's trust roots")
    func requestOptionsKeepSessionOnes() async throws {
        let server = try FTPServers.require()
        let url = try FTPServers.url("/hello.txt", port: server.tlsPort, host: "localhost")
        let secure = Self.requiringTLS(trusting: server.caFile)
        var request = LoadRequest(url: url)
        request.options[FTPOptions.self].connectTimeout = 20
        let (data, _) = try await secure.data(for: request)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from FTP\n")
        // A setting the request sets wins, even back to its default.
        request.options[FTPOptions.self].tls = .never
        let merged = FTPOptions.merged(request.options[FTPOptions.self], over: secure.configuration.handlerOptions[FTPOptions.self])
        #expect(merged.tls == .never && merged.connectTimeout == 20 && merged.trustRootsPEMFile == server.caFile)
        // Every setting is one `merged(_:over:)` knows: a new one must be added there.
        #expect(Mirror(reflecting: FTPOptions()).children.count == 28)
        // Routes merge as HTTP's do: the session's, with the request's over them.
        var routed = FTPOptions()
        routed.resolve = ["a:21": "127.0.0.1"]
        routed.connectTo = ["b:21": "c:2121"]
        var ownRoute = FTPOptions()
        ownRoute.resolve = ["d:21": "::1"]
        let routes = FTPOptions.merged(ownRoute, over: routed)
        #expect(routes.resolve == ["a:21": "127.0.0.1", "d:21": "::1"] && routes.connectTo == ["b:21": "c:2121"])
        #expect(routes.resolveLines == ["a:21:127.0.0.1", "d:21:[::1]"] && routes.connectToLines == ["b:21:c:2121"])
        // libcurl takes the first redirect that matches: the most specific go first; IPv6 hosts in brackets on both sides.
        var redirects = FTPOptions()
        redirects.connectTo = [":": "x:1", ":21": "y:2", "b:21": "c:2121", "::1:80": "fe80::2:"]
        #expect(redirects.connectToLines == ["[::1]:80:[fe80::2]:", "b:21:c:2121", ":21:y:2", "::x:1"], "\(redirects.connectToLines)")
        var identified = FTPOptions()
        identified.clientCertificatePEMFile = "/client.pem"
        identified.clientPrivateKeyPEMFile = "/client.key"
        let inherited = FTPOptions.merged(request.options[FTPOptions.self], over: identified)
        #expect(inherited.clientCertificatePEMFile == "/client.pem" && inherited.clientPrivateKeyPEMFile == "/client.key")
        var own = FTPOptions()
        own.clientCertificatePEMFile = "/other.pem"
        #expect(FTPOptions.merged(own, over: identified).clientPrivateKeyPEMFile == nil, "a request's own certificate takes its own key")
    }

    @Test("Active mode (the server connects back) downloads too, to the address given; on a port that is taken it fails, naming the URL")
    func activeMode() async throws {
        let session = FTPServers.session { configuration in
            configuration.handlerOptions[FTPOptions.self].usesActiveMode = true
            configuration.handlerOptions[FTPOptions.self].activeModeAddress = "127.0.0.1"
        }
        let (data, _) = try await session.data(from: try FTPServers.url("/hello.txt"))
        #expect(String(decoding: data, as: UTF8.self) == "Hello from FTP\n")

        // The one port allowed is held by a listener here: the client cannot listen on it, and the server is never
        // asked to connect back.
        let held = LoopbackPorts.held()
        defer { close(held.fd) }
        var request = LoadRequest(url: try FTPServers.url("/hello.txt"))
        request.options[FTPOptions.self].activeModeAddress = "127.0.0.1:\(held.port)-\(held.port)"
        let error = await loadError { _ = try await session.data(for: request) }
        #expect(error?.code == .cannotConnectToHost, "\(String(describing: error))")
        #expect(error?.underlying is FTPActiveModeFailure, "\(String(describing: error))")
        #expect(error?.url == request.url)
    }
}
}
