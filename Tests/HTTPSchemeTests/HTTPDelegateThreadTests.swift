import Foundation
import Loader
import NIOPosix
import Synchronization
import Testing
import TestSupport

@Suite("http(s): a task's delegate never runs on an event loop, upload progress included (nginx)")
struct HTTPDelegateThreadTests {
    /// Notes each call, and those made on one of NIO's event loops.
    final class ThreadNoting: LoadTaskDelegate {
        let calls = Mutex<[String]>([])
        let onEventLoop = Mutex<[String]>([])

        private func note(_ name: String) {
            calls.withLock { $0.append(name) }
            if MultiThreadedEventLoopGroup.currentEventLoop != nil { onEventLoop.withLock { $0.append(name) } }
        }

        func loadTask(_ task: LoadTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
            note("progress")
        }
        func loadTask(_ task: LoadTask, didReceive response: LoadResponse) { note("response") }
        func loadTask(_ task: LoadTask, didReceive data: Data) { note("data") }
        func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?) { note("complete") }
    }

    @Test("An upload of 8 MiB reports its progress, and every call comes off the event loops, the completion last")
    func uploadProgressOffTheLoop() async throws {
        var request = LoadRequest(url: try Nginx.http("/echo"), method: .post)
        request.headerFields[.contentType] = "application/octet-stream"
        let delegate = ThreadNoting()
        let (data, _) = try await Nginx.session().upload(for: request, from: Data(count: 8 << 20), delegate: delegate)
        #expect(String(decoding: data, as: UTF8.self).hasPrefix("method=POST length=8388608"))
        let calls = delegate.calls.withLock { $0 }
        #expect(calls.contains("progress") && calls.contains("response"), "\(calls)")
        // A slow delegate on an event loop holds up every connection of that loop.
        #expect(delegate.onEventLoop.withLock { $0 }.isEmpty, "called on an event loop: \(delegate.onEventLoop.withLock { Set($0) })")
        #expect(calls.last == "complete" && calls.filter { $0 == "complete" }.count == 1, "\(calls.suffix(5))")
    }
}
