import Foundation
import FTPScheme
import Loader
import Synchronization
import TestSupport
import Testing

/// Servers slow to answer where libcurl waits blocking for them (the `226` ending a transfer, the reply to `QUIT`):
/// they hold up only their own transfers, never another server's.
@Suite("FTP servers slow to answer")
struct FTPSlowServerTests {
    static let hello = Data("Hello from FTP\n".utf8)

    /// A session with the FTP handler only, keeping no connection (each load ends with `QUIT`).
    static func sessionKeepingNone() -> LoaderSession {
        FTPServers.session { configuration in
            var options = FTPOptions()
            options.idleConnectionTimeout = 0
            configuration.handlerOptions[FTPOptions.self] = options
        }
    }

    @Test("A server that never answers QUIT holds up nothing: loads that keep no connection end with their bodies, one after the other")
    func silentToQuit() async throws {
        let server = try FTPServers.require()
        let session = Self.sessionKeepingNone()
        var request = LoadRequest(url: try FTPServers.url("/hello.txt", port: server.silentToQuitPort))
        // Well under libcurl's two minutes for the reply to QUIT: a load that waited for it fails.
        request.timeoutInterval = 30
        for _ in 0..<2 {
            let (body, response) = try await session.data(for: request)
            #expect(body == Self.hello)
            #expect(response.expectedContentLength == Int64(Self.hello.count))
        }
        // Another server's load, on another engine, is served too.
        let (other, _) = try await Self.sessionKeepingNone().data(from: try FTPServers.url("/hello.txt"))
        #expect(other == Self.hello)
    }

    // One load of the slow server: a second one on its engine would wait out the first's 226 before it began.
    @Test("A server that acknowledges a transfer 15 s late holds up only its own loads, another server's load served meanwhile; the body reaches the reader before the 226")
    func lateAcknowledgement() async throws {
        let server = try FTPServers.require()
        let session = FTPServers.session()
        // The response comes with the file's first bytes; libcurl reads the rest and the data connection's end in the
        // same round, then waits for the 226: the body, whose size the server told, reaches the reader before it.
        let (bytes, _) = try await session.bytes(from: try FTPServers.url("/hello.txt", port: server.lateAcknowledgingPort))
        let slowEnded = Atomic<Bool>(false)
        let read = Locked(Data())
        let slow = Task {
            for try await byte in bytes { read.withLock { $0.append(byte) } }
            slowEnded.store(true, ordering: .releasing)
            return read.withLock { $0 }
        }
        // With one engine for every server, this load waited the 15 s with it, and the slow one ended first.
        var request = LoadRequest(url: try FTPServers.url("/hello.txt"))
        request.timeoutInterval = 60
        let (other, _) = try await session.data(for: request)
        #expect(other == Self.hello)
        let endedFirst = slowEnded.load(ordering: .acquiring)
        #expect(!endedFirst, "the slow server's load ended before the other server's was served")
        // Well before the 226 (15 s after the transfer): the reader has the whole body, its end still to come.
        #expect(await eventually(within: 8) { read.withLock { $0 } == Self.hello }, "the body waited for the 226")
        let endedBeforeAcknowledgement = slowEnded.load(ordering: .acquiring)
        #expect(!endedBeforeAcknowledgement)
        // The slow load ends whole once its 226 comes.
        #expect(try await slow.value == Self.hello)
    }

    /// Reads `bytes` to its end in a task of its own, into `read`, whose flag is set once the load has ended.
    private static func drain(_ bytes: LoadBytes, into read: Locked<(body: Data, ended: Bool)>) -> Task<Data, any Error> {
        Task {
            for try await byte in bytes { read.withLock { $0.body.append(byte) } }
            return read.withLock { read in
                read.ended = true
                return read.body
            }
        }
    }

    @Test("Two loads of a server that acknowledges each transfer 15 s late run side by side: the second is served while the first waits for its 226")
    func lateAcknowledgementsSideBySide() async throws {
        let server = try FTPServers.require()
        let session = FTPServers.session()
        let url = try FTPServers.url("/hello.txt", port: server.lateAcknowledgingPort)
        let firstRead = Locked<(body: Data, ended: Bool)>((Data(), false))
        let secondRead = Locked<(body: Data, ended: Bool)>((Data(), false))
        let (firstBytes, _) = try await session.bytes(from: url)
        let first = Self.drain(firstBytes, into: firstRead)
        #expect(await eventually(within: 8) { firstRead.withLock { $0.body } == Self.hello }, "the first body waited for its 226")
        // The first load now waits for its 226 inside libcurl, blocking the thread that runs it. With one engine
        // per server the second load's transfer waited there until that 226 came, and its body after it.
        let secondStart = ContinuousClock.now
        let (secondBytes, _) = try await session.bytes(from: url)
        let secondResponse = ContinuousClock.now - secondStart
        let second = Self.drain(secondBytes, into: secondRead)
        // Which comes first is the test, not how soon: the second body whole, or the first load's end (its 226), for 30 s at most.
        var secondServedFirst: Bool?
        for _ in 0..<300 where secondServedFirst == nil {
            let (whole, ended) = (secondRead.withLock { $0.body } == Self.hello, firstRead.withLock { $0.ended })
            if whole || ended { secondServedFirst = whole && !ended } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        // The times tell a blocked engine (a response only after the first's 226) from a slow machine.
        #expect(secondServedFirst == true,
                "the second load waited for the first's 226 (its response after \(secondResponse), the first's end after \(ContinuousClock.now - secondStart))")
        #expect(try await first.value == Self.hello)
        #expect(try await second.value == Self.hello)
    }
}
