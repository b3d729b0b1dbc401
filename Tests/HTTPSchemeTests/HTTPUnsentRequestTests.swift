import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

/// Answers the first server-trust question (trusting the server) only once the server has hung up on that
/// connection, the later ones at once.
private final class SlowFirstTrust: LoaderSessionDelegate {
    let server: HangUpAfterHandshakeServer
    let asked = Locked(0)
    init(_ server: HangUpAfterHandshakeServer) { self.server = server }

    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        guard challenge.serverTrust != nil else { return .performDefaultHandling }
        let count = asked.withLock { count -> Int in
            count += 1
            return count
        }
        if count == 1 {
            await server.waitForHangUp()
            // A moment more for the close to cross loopback and be read before the request is given the connection.
            try? await Task.sleep(for: .milliseconds(300))
        }
        return .performDefaultHandling
    }
}

@Suite("http: a request whose new connection closed before it was written")
struct HTTPUnsentRequestTests {
    @Test("A POST whose new connection the server closed before a byte of it went out is sent once more, on another connection")
    func sentAgainWhenNothingWent() async throws {
        let folder = URL(fileURLWithPath: try Nginx.require().caFile).deletingLastPathComponent()
        let server = try HangUpAfterHandshakeServer(certificateFolder: folder)
        let delegate = SlowFirstTrust(server)
        var post = LoadRequest(url: URL(string: "https://localhost:\(server.port)/form")!, method: .post)
        post.body = .bytes(Data("once".utf8))
        let (body, response) = try await Nginx.session().data(for: post, delegate: delegate)
        #expect(response.status == .ok && String(decoding: body, as: UTF8.self) == "POST")
        // The first connection, hung up on, and the one the request went on; a question for each.
        #expect(server.acceptedCount == 2)
        #expect(delegate.asked.withLock { $0 } == 2)
    }
}
