import Foundation
import HTTPTypes
import Loader
import Synchronization
import Testing

/// Reports upload progress from one task while the response and its body come from another, as an HTTP
/// handler does when a server answers while the upload still goes out; goes on reporting progress after the
/// body has ended.
final class DuplexHandler: SchemeHandler, @unchecked Sendable {
    override class var supportedSchemes: Set<String> { ["duplex"] }
    static let rounds = 100

    override func load() async throws {
        let client = self.client
        let handler: SchemeHandler = self
        let sending = Task.detached {
            for sent in 1...(Self.rounds * 4) {
                client.handler(handler, didSendBodyData: Int64(sent), totalBytesExpectedToSend: nil)
                try? await Task.sleep(for: .microseconds(100))
            }
        }
        client.handler(self, didReceive: LoadResponse(url: request.url, status: .ok, headerFields: [:]))
        // A pause between chunks, so that each reaches the reader (and its delegate call) on its own.
        for _ in 0..<Self.rounds {
            try await client.handler(self, deliver: Data("x".utf8))
            try await Task.sleep(for: .milliseconds(1))
        }
        client.handlerDidFinishLoading(self)
        await sending.value
    }
}

@Suite("Delegate calls of one task come one at a time, and none after its completion")
struct DelegateSerialTests {
    final class Overlaps: LoadTaskDelegate {
        let inside = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        let completed = Atomic<Bool>(false)
        let afterCompletion = Atomic<Int>(0)

        private func enter() {
            if completed.load(ordering: .acquiring) { afterCompletion.wrappingAdd(1, ordering: .relaxed) }
            let now = inside.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
            _ = most.max(now, ordering: .relaxed)
            usleep(200)  // widens the window another thread's call would land in
            inside.wrappingSubtract(1, ordering: .acquiringAndReleasing)
        }
        func loadTask(_ task: LoadTask, didReceive response: LoadResponse) { enter() }
        func loadTask(_ task: LoadTask, didReceive data: Data) { enter() }
        func loadTask(_ task: LoadTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) { enter() }
        func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?) {
            enter()
            completed.store(true, ordering: .releasing)
        }
    }

    @Test("Upload progress from the handler's side and body data from the reader's never overlap")
    func oneAtATime() async throws {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [DuplexHandler.self]
        let session = LoaderSession(configuration: configuration)
        let delegate = Overlaps()
        let (data, _) = try await session.data(from: URL(string: "duplex://x")!, delegate: delegate)
        #expect(data.count == DuplexHandler.rounds)
        #expect(delegate.most.load(ordering: .relaxed) == 1, "two delegate calls of one task ran at once")
        // The driver already drops most progress that follows the completion; the task's own check covers the
        // race in between (reported and completed at once), which this run seldom meets.
        #expect(delegate.afterCompletion.load(ordering: .relaxed) == 0, "a delegate call came after the completion")
    }
}
