import Foundation
import Loader
import Synchronization
import Testing

/// Asks its load task's delegates about a challenge, and records when the question came back.
private final class AskingHandler: SchemeHandler, @unchecked Sendable {
    static let answered = Mutex<Set<String>>([])

    override class var supportedSchemes: Set<String> { ["asking"] }

    override func load() async throws {
        let space = ProtectionSpace(host: "example", port: 0, scheme: "asking", realm: nil, authenticationMethod: "Basic")
        _ = await client.handler(self, didReceive: AuthenticationChallenge(protectionSpace: space))
        Self.answered.withLock { _ = $0.insert(request.url.absoluteString) }
        throw CancellationError()
    }
}

/// A delegate that takes twenty seconds to answer whatever happens meanwhile (a prompt nobody looks at).
private final class SlowToAnswer: LoadTaskDelegate {
    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        await Task.detached { try? await Task.sleep(for: .seconds(20)) }.value
        return .performDefaultHandling
    }
}

@Suite("A handler waiting for a delegate's answer to a challenge")
struct ChallengeWaitTests {
    @Test("A load that times out while its handler waits for the delegate ends timed out, and the handler's wait ends with it rather than when the delegate answers")
    func timeoutEndsTheWait() async throws {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [AskingHandler.self]
        configuration.timeoutIntervalForRequest = 0.3
        let session = LoaderSession(configuration: configuration)
        let url = URL(string: "asking:timeout")!
        do {
            _ = try await session.data(from: url, delegate: SlowToAnswer())
            Issue.record("the load did not fail")
        } catch let error as LoadError {
            #expect(error.code == .timedOut, "\(error)")
        }
        // The handler (and what it holds: a connection, a file) is let go within moments, not in twenty seconds.
        var ended = false
        for _ in 0..<300 where !ended {
            ended = AskingHandler.answered.withLock { $0.contains(url.absoluteString) }
            if !ended { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(ended, "the handler still waits for the delegate's answer three seconds after its load timed out")
    }
}
