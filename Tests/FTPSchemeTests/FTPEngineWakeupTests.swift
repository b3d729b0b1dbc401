import Foundation
@testable import FTPScheme
import Loader
import Testing

extension FTPServerTests {
@Suite("ftp: the engine's thread wakes for every command")
struct FTPEngineWakeupTests {
    /// The engine sleeps in libcurl's poll until a socket is ready or `submit` wakes it; a wake-up taken by an
    /// earlier zero-timeout poll once left a load started just as the previous one ended waiting for the
    /// sleep's cap (a second then; about two in every hundred back-to-back downloads here, so three hundred
    /// downloads met it all but certainly). With the cap raised to ten minutes, a lost wake-up hangs this test
    /// until its time limit instead.
    @Test("Three hundred downloads back to back each arrive whole, with the engine's idle sleep capped at ten minutes",
          .timeLimit(.minutes(5)))
    func backToBack() async throws {
        let url = try FTPServers.url("/300k.bin")
        let expected = try FTPServers.file("/300k.bin")
        let before = CurlEngine.idleWait.exchange(600_000, ordering: .relaxed)
        defer { CurlEngine.idleWait.store(before, ordering: .relaxed) }
        let session = FTPServers.session()
        for _ in 0..<300 {
            let (data, _) = try await session.data(from: url)
            #expect(data == expected)
        }
        #expect(session.allTasks.isEmpty)
    }
}
}
