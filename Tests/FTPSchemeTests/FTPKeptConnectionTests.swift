import Foundation
import FTPScheme
import Loader
import TestSupport
import Testing

extension FTPServerTests {
@Suite("ftp: a session keeps its logged-in control connection between loads, as curl does")
struct FTPKeptConnectionTests {
    /// What the counting server wrote since `mark` (a count of lines taken before) about the connections that
    /// logged in since: lines of `login USER PORT`, `quit PORT` and `closed PORT`, PORT being the client's. The
    /// connections of earlier tests (which the server drops when idle) are told apart by their ports.
    struct Events {
        let lines: [String]
        private var words: [[Substring]] { lines.map { $0.split(separator: " ") } }
        private var ports: Set<Substring> { Set(words.filter { $0.count == 3 && $0[0] == "login" }.map { $0[2] }) }
        /// The users that logged in, in order.
        var logins: [String] { words.filter { $0.count == 3 && $0[0] == "login" }.map { String($0[1]) } }
        private func count(_ kind: Substring) -> Int {
            let ports = ports
            return words.filter { $0.count == 2 && $0[0] == kind && ports.contains($0[1]) }.count
        }
        /// QUIT commands on those connections.
        var quits: Int { count("quit") }
        /// Those connections that have closed.
        var closed: Int { count("closed") }
        /// `MDTM` commands (a file's time asked) on those connections.
        var mdtms: Int { count("mdtm") }
    }

    static func allLines() throws -> [String] {
        let path = try FTPServers.require().countedEvents
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map(String.init)
    }

    static func events(since mark: Int) throws -> Events {
        Events(lines: Array(try allLines().dropFirst(mark)))
    }

    /// Waits (at most 20 s, in steps of 100 ms) until `done` holds for the events since `mark`; returns them.
    static func events(since mark: Int, until done: (Events) -> Bool) async throws -> Events {
        for _ in 0..<200 {
            let seen = try events(since: mark)
            if done(seen) { return seen }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try events(since: mark)
    }

    static func url(_ path: String, userInfo: String? = nil) throws -> URL {
        try FTPServers.url(path, port: try FTPServers.require().countedPort, userInfo: userInfo)
    }

    static func session(idleTimeout: TimeInterval) -> LoaderSession {
        FTPServers.session { configuration in
            var options = FTPOptions()
            options.idleConnectionTimeout = idleTimeout
            configuration.handlerOptions[FTPOptions.self] = options
        }
    }

    @Test("Three loads of one session log in once; the connection is closed with QUIT once idle for its timeout")
    func oneLoginForLoadsInARow() async throws {
        let mark = try Self.allLines().count
        let session = Self.session(idleTimeout: 3)
        let (text, _) = try await session.data(from: try Self.url("/hello.txt"))
        #expect(String(decoding: text, as: UTF8.self) == "Hello from FTP\n")
        let (listing, _) = try await session.data(from: try Self.url("/folder/"))
        #expect(FTPListing.parse(String(decoding: listing, as: UTF8.self)).map(\.name).sorted() == ["a.txt", "b.txt", "sub"])
        let (binary, _) = try await session.data(from: try Self.url("/300k.bin"))
        #expect(binary == (try FTPServers.file("/300k.bin")))

        let afterLoads = try Self.events(since: mark)
        #expect(afterLoads.logins == ["anonymous"], "one login for three loads: \(afterLoads.lines)")
        #expect(afterLoads.closed == 0, "the connection is kept after the loads: \(afterLoads.lines)")
        // Our QUIT, not the server's own 10 s idle limit (which closes without one).
        let later = try await Self.events(since: mark) { $0.closed >= 1 }
        #expect(later.quits == 1 && later.closed == 1, "closed by the client once idle: \(later.lines)")
    }

    @Test("Two sessions never share a connection, and two logins on one session each get their own")
    func sessionsAndLoginsApart() async throws {
        let mark = try Self.allLines().count
        let first = Self.session(idleTimeout: 30)
        let second = Self.session(idleTimeout: 30)
        _ = try await first.data(from: try Self.url("/hello.txt"))
        _ = try await second.data(from: try Self.url("/hello.txt"))
        _ = try await first.data(from: try Self.url("/folder/a.txt", userInfo: "user:secret"))
        _ = try await first.data(from: try Self.url("/hello.txt"))
        _ = try await first.data(from: try Self.url("/folder/b.txt", userInfo: "user:secret"))
        let seen = try Self.events(since: mark)
        #expect(seen.logins.sorted() == ["anonymous", "anonymous", "user"], "\(seen.lines)")
    }

    @Test("An idle timeout of 0 logs in for every load and closes each connection at its end")
    func noKeptConnection() async throws {
        let mark = try Self.allLines().count
        let session = Self.session(idleTimeout: 0)
        for _ in 0..<2 {
            let (text, _) = try await session.data(from: try Self.url("/hello.txt"))
            #expect(String(decoding: text, as: UTF8.self) == "Hello from FTP\n")
        }
        let seen = try await Self.events(since: mark) { $0.closed >= 2 }
        #expect(seen.logins == ["anonymous", "anonymous"], "\(seen.lines)")
        #expect(seen.quits == 2 && seen.closed == 2, "\(seen.lines)")
    }

    @Test("A kept connection the server has dropped (its own idle limit) is not used: the next load logs in again")
    func serverDroppedTheKeptConnection() async throws {
        let mark = try Self.allLines().count
        let session = Self.session(idleTimeout: 60)
        _ = try await session.data(from: try Self.url("/hello.txt"))
        // The server closes a connection idle for 10 s, without a QUIT from us.
        let dropped = try await Self.events(since: mark) { $0.closed >= 1 }
        #expect(dropped.closed == 1 && dropped.quits == 0, "\(dropped.lines)")
        let (text, _) = try await session.data(from: try Self.url("/hello.txt"))
        #expect(String(decoding: text, as: UTF8.self) == "Hello from FTP\n")
        let seen = try Self.events(since: mark)
        #expect(seen.logins == ["anonymous", "anonymous"], "\(seen.lines)")
    }

    @Test("A server that hangs up on the kept connection as it is reused (421): the download is tried once on a new connection")
    func serverHangsUpOnReuse() async throws {
        let mark = try Self.allLines().count
        let session = Self.session(idleTimeout: 60)
        let (first, _) = try await session.data(from: try Self.url("/then-hang-up.txt"))
        #expect(String(decoding: first, as: UTF8.self) == "Then the server hangs up\n")
        let (text, response) = try await session.data(from: try Self.url("/hello.txt"))
        #expect(String(decoding: text, as: UTF8.self) == "Hello from FTP\n")
        #expect(response.expectedContentLength == 15)
        let seen = try Self.events(since: mark)
        #expect(seen.lines.contains { $0.hasPrefix("hung-up ") }, "\(seen.lines)")
        #expect(seen.logins == ["anonymous", "anonymous"], "the second load logged in on a new connection: \(seen.lines)")
    }

    @Test("An upload connects anew, never meeting a kept connection the server may have dropped")
    func uploadConnectsAnew() async throws {
        let mark = try Self.allLines().count
        let session = Self.session(idleTimeout: 60)
        _ = try await session.data(from: try Self.url("/then-hang-up.txt", userInfo: "user:secret"))
        let name = "kept-\(UUID().uuidString).txt"
        let body = Data("uploaded once\n".utf8)
        let chunks: @Sendable () -> AsyncThrowingStream<Data, any Error> = {
            AsyncThrowingStream { continuation in
                continuation.yield(body)
                continuation.finish()
            }
        }
        var request = LoadRequest(url: try Self.url("/upload/\(name)", userInfo: "user:secret"))
        request.method = .put
        request.body = .stream(length: nil, makeStream: chunks)
        _ = try await session.data(for: request)
        let stored = try Data(contentsOf: URL(fileURLWithPath: try FTPServers.require().root + "/upload/\(name)"))
        #expect(stored == body)
        let seen = try Self.events(since: mark)
        // The kept connection would have hung up on the upload's first command.
        #expect(seen.logins == ["user", "user"], "\(seen.lines)")
        #expect(!seen.lines.contains { $0.hasPrefix("hung-up ") }, "the upload ran on a connection of its own: \(seen.lines)")
        try? FileManager.default.removeItem(atPath: try FTPServers.require().root + "/upload/\(name)")
    }

    @Test("While one download of a session is held back by its reader, eight more of the session run side by side to their ends")
    func concurrentLoadsBesideAPausedOne() async throws {
        let mark = try Self.allLines().count
        let session = Self.session(idleTimeout: 60)
        let expected = try FTPServers.file("/300k.bin")
        // Read one chunk, then nothing for a while: its buffer fills and libcurl pauses the transfer.
        let (held, _) = try await session.bytes(from: try Self.url("/8m.bin"))
        var heldChunks = held.chunks.makeAsyncIterator()
        var heldBytes = try await heldChunks.next() ?? Data()
        let bodies = try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0..<8 {
                group.addTask { try await session.data(from: try Self.url("/300k.bin")).0 }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.count == 8)
        #expect(bodies.allSatisfy { $0 == expected })
        // At most one connection per load in flight (nine), fewer where one was free again when the next began;
        // then the connections left are kept: two more loads in a row log in no more. (Before the held download
        // is read on, so that draining it slowly cannot outlast the server's 10 s idle limit on the kept ones.)
        let afterConcurrent = try Self.events(since: mark).logins.count
        #expect((1...9).contains(afterConcurrent))
        for _ in 0..<2 {
            let (body, _) = try await session.data(from: try Self.url("/300k.bin"))
            #expect(body == expected)
        }
        let seen = try Self.events(since: mark)
        #expect(seen.logins.count == afterConcurrent, "the later loads ran on kept connections: \(seen.lines)")
        while let chunk = try await heldChunks.next() { heldBytes.append(chunk) }
        #expect(Bytes.difference(heldBytes, try FTPServers.file("/8m.bin")) == nil)
    }

    @Test("A session's next load goes where its kept connection is: after a load that ran beside another session's, no second login")
    func nextLoadFindsItsConnection() async throws {
        let mark = try Self.allLines().count
        let other = Self.session(idleTimeout: 60)
        let session = Self.session(idleTimeout: 60)
        // The other session's download, held by its reader, keeps its engine busy: this session's first load runs on another.
        let (held, _) = try await other.bytes(from: try Self.url("/8m.bin"))
        var chunks = held.chunks.makeAsyncIterator()
        var heldBytes = try await chunks.next() ?? Data()
        let (first, _) = try await session.data(from: try Self.url("/hello.txt"))
        #expect(String(decoding: first, as: UTF8.self) == "Hello from FTP\n")
        while let chunk = try await chunks.next() { heldBytes.append(chunk) }
        #expect(heldBytes.count == 8 << 20)
        // Both engines idle now: the load goes to the one holding this session's connection, not the oldest.
        let (second, _) = try await session.data(from: try Self.url("/hello.txt"))
        #expect(String(decoding: second, as: UTF8.self) == "Hello from FTP\n")
        let seen = try Self.events(since: mark)
        #expect(seen.logins.count == 2, "one login for each session: \(seen.lines)")
    }

    @Test("A session's resolve entries route its own loads only: another session's load of the same name, on the same engine, is not found")
    func resolveEntriesStayInTheirSession() async throws {
        let port = try FTPServers.require().countedPort
        let url = URL(string: "ftp://routed.invalid:\(port)/hello.txt")!
        let routed = FTPServers.session { configuration in
            configuration.handlerOptions[FTPOptions.self].resolve = ["routed.invalid:\(port)": "127.0.0.1"]
        }
        let (body, _) = try await routed.data(from: url)
        #expect(String(decoding: body, as: UTF8.self) == "Hello from FTP\n")
        // libcurl keeps resolve entries in its name cache for good: in the engine's own, they routed this load too.
        let error = await loadError { _ = try await FTPServers.session().data(from: url) }
        #expect(error?.code == .cannotFindHost, "\(String(describing: error))")
    }

    @Test("In one session a kept FTPS connection serves loads with its TLS settings only: one made without verifying never serves a load that verifies")
    func keptConnectionKeepsItsTLSSettings() async throws {
        let server = try FTPServers.require()
        let url = try FTPServers.url("/hello.txt", port: server.tlsPort, host: "localhost")
        // The session verifies against the system's CAs, which do not hold the test CA.
        let session = FTPServers.session { $0.handlerOptions[FTPOptions.self].tls = .required }
        var trusting = LoadRequest(url: url)
        var unverified = FTPOptions()
        unverified.tls = .required
        unverified.verifiesCertificates = false
        trusting.options[FTPOptions.self] = unverified
        for _ in 0..<2 {
            let (data, _) = try await session.data(for: trusting)
            #expect(String(decoding: data, as: UTF8.self) == "Hello from FTP\n")
        }
        let error = await loadError { _ = try await session.data(from: url) }
        #expect(error?.code == .serverCertificateUntrusted, "\(String(describing: error))")

        // Verified loads on a kept connection: the data connection resumes the control connection's TLS session.
        let verifying = FTPServers.session {
            $0.handlerOptions[FTPOptions.self].tls = .required
            $0.handlerOptions[FTPOptions.self].trustRootsPEMFile = server.caFile
        }
        for _ in 0..<3 {
            let (data, _) = try await verifying.data(from: url)
            #expect(String(decoding: data, as: UTF8.self) == "Hello from FTP\n")
        }
    }

    @Test("A session's kept connection is closed with QUIT when the session is invalidated, or released, not at its idle timeout")
    func sessionEndClosesKeptConnection() async throws {
        let mark = try Self.allLines().count
        let session = Self.session(idleTimeout: 60)
        for _ in 0..<2 { _ = try await session.data(from: try Self.url("/hello.txt")) }
        session.finishTasksAndInvalidate()
        // Well before the 60 s timeout, and by our QUIT (the server's own 10 s limit sends none).
        let invalidated = try await Self.events(since: mark) { $0.closed >= 1 }
        #expect(invalidated.logins == ["anonymous"] && invalidated.quits == 1 && invalidated.closed == 1, "\(invalidated.lines)")

        let next = try Self.allLines().count
        do {
            let released = Self.session(idleTimeout: 60)
            _ = try await released.data(from: try Self.url("/hello.txt"))
        }
        let seen = try await Self.events(since: next) { $0.closed >= 1 }
        #expect(seen.logins == ["anonymous"] && seen.quits == 1 && seen.closed == 1, "\(seen.lines)")
    }

    @Test("A download asks the file's time (MDTM) for Last-Modified unless readsModificationDate is off")
    func modificationDateOnlyWhenAsked() async throws {
        let mark = try Self.allLines().count
        let (_, dated) = try await Self.session(idleTimeout: 30).data(from: try Self.url("/hello.txt"))
        #expect(dated.headerFields[.lastModified]?.hasSuffix(" GMT") == true)
        let asked = try Self.events(since: mark)
        #expect(asked.mdtms == 1, "\(asked.lines)")

        let next = try Self.allLines().count
        let session = FTPServers.session {
            $0.handlerOptions[FTPOptions.self].readsModificationDate = false
        }
        let (text, undated) = try await session.data(from: try Self.url("/hello.txt"))
        #expect(String(decoding: text, as: UTF8.self) == "Hello from FTP\n")
        #expect(undated.headerFields[.lastModified] == nil)
        #expect(undated.expectedContentLength == 15)
        let seen = try Self.events(since: next)
        #expect(seen.logins == ["anonymous"] && seen.mdtms == 0, "\(seen.lines)")
    }

    @Test("A load cancelled mid-file leaves the next load of the session a working connection")
    func cancelledLoadThenAnother() async throws {
        let session = Self.session(idleTimeout: 30)
        let (bytes, _) = try await session.bytes(from: try Self.url("/8m.bin"))
        var received = 0
        for try await chunk in bytes.chunks {
            received += chunk.count
            if received > 0 { break }
        }
        bytes.task.cancel()
        let (binary, _) = try await session.data(from: try Self.url("/300k.bin"))
        #expect(binary == (try FTPServers.file("/300k.bin")))
        let (text, _) = try await session.data(from: try Self.url("/hello.txt"))
        #expect(String(decoding: text, as: UTF8.self) == "Hello from FTP\n")
    }
}
}
