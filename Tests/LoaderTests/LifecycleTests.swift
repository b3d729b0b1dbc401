import Foundation
import Loader
import Synchronization
import TestSupport
import Testing

@Suite("Lifecycle: backpressure, cancellation, timeouts, the event contract")
struct LifecycleTests {
    @Test("A slow reader holds the handler back: it never gets more than the buffer limit ahead")
    func backpressure() async throws {
        // Many allocations at once: kept apart from the tests that measure peak memory.
        try await ExclusiveGate.memory.exclusive {
            let (probeID, probe) = Probes.make()
            let limit = 256 * 1024
            let session = testSession { $0.bodyBufferLimit = limit }
            let (bytes, _) = try await session.bytes(from: URL(string: "stream://\(probeID)/8000000")!)
            var consumed = 0
            var maxAhead = 0
            for try await chunk in bytes.chunks {
                consumed += chunk.count
                try await Task.sleep(for: .microseconds(200))
                maxAhead = max(maxAhead, probe["produced"] - consumed)
            }
            #expect(consumed == 8_000_000)
            // The buffer may pass its limit by the chunk that crosses it, and the reader holds one chunk.
            #expect(maxAhead <= limit + 2 * 64 * 1024, "the handler ran \(maxAhead) bytes ahead of the reader")
        }
    }

    @Test("Swift task cancellation reaches the handler and ends the load with cancelled")
    func swiftCancellation() async throws {
        let (probeID, probe) = Probes.make()
        let session = testSession()
        let load = Task { try await session.data(from: URL(string: "hang://\(probeID)/x")!) }
        #expect(await eventually { probe["started"] == 1 })
        load.cancel()
        let error = await loadError { _ = try await load.value }
        #expect(error?.code == .cancelled)
        #expect(await eventually { probe["stopped"] == 1 })
        #expect(await eventually { session.allTasks.isEmpty })
    }

    @Test("Cancellation before the response arrives ends the load with cancelled")
    func cancelBeforeResponse() async throws {
        let (probeID, probe) = Probes.make()
        let session = testSession()
        let load = Task { try await session.data(from: URL(string: "hang://\(probeID)/before-response")!) }
        #expect(await eventually { probe["started"] == 1 })
        load.cancel()
        #expect(await loadError { _ = try await load.value }?.code == .cancelled)
        #expect(await eventually { probe["stopped"] == 1 })
    }

    @Test("LoadTask.cancel() on a streaming task stops the handler mid-body")
    func taskCancelMidBody() async throws {
        let (probeID, probe) = Probes.make()
        let (bytes, _) = try await testSession().bytes(from: URL(string: "stream://\(probeID)/100000000")!)
        var iterator = bytes.chunks.makeAsyncIterator()
        _ = try await iterator.next()
        bytes.task.cancel()
        let error = await loadError { while try await iterator.next() != nil {} }
        #expect(error?.code == .cancelled)
        #expect(await eventually { probe["stopped"] == 1 })
        #expect(bytes.task.state == .completed)
        #expect(bytes.task.error?.code == .cancelled)
        #expect(probe["produced"] < 100_000_000)
    }

    @Test("Dropping a byte stream unread cancels the load and stops its handler")
    func droppedStream() async throws {
        let (probeID, probe) = Probes.make()
        let session = testSession()
        do {
            let (bytes, _) = try await session.bytes(from: URL(string: "stream://\(probeID)/100000000")!)
            _ = bytes
        }
        #expect(await eventually { probe["stopped"] == 1 })
        #expect(await eventually { session.allTasks.isEmpty })
    }

    @Test("Leaving a loop over a byte stream early cancels the load while the stream is still held",
          arguments: ["chunks", "bytes"])
    func loopLeftEarly(reading: String) async throws {
        let (probeID, probe) = Probes.make()
        let session = testSession()
        let (bytes, _) = try await session.bytes(from: URL(string: "stream://\(probeID)/100000000")!)
        var seen = 0
        if reading == "chunks" {
            for try await chunk in bytes.chunks {
                seen += chunk.count
                break
            }
        } else {
            for try await _ in bytes {
                seen += 1
                if seen == 10 { break }
            }
        }
        #expect(seen > 0)
        #expect(await eventually { probe["stopped"] == 1 }, "the handler was not stopped")
        #expect(await eventually { bytes.task.state == .completed })
        #expect(bytes.task.error?.code == .cancelled)
        #expect(probe["produced"] < 100_000_000)
        #expect(await eventually { session.allTasks.isEmpty })
        // Reading again gives the cancellation, not the rest of the body.
        let again = await loadError { for try await _ in bytes.chunks {} }
        #expect(again?.code == .cancelled)
        withExtendedLifetime(bytes) {}
    }

    @Test("A handler that stalls after its response fails with timedOut, keeping what arrived")
    func idleTimeout() async throws {
        let (probeID, _) = Probes.make()
        let url = URL(string: "hang://\(probeID)/x")!
        var received = Data()
        var responded = false
        let error = await loadError {
            let (bytes, _) = try await testSession().bytes(for: LoadRequest(url: url, timeoutInterval: 0.5))
            responded = true
            for try await chunk in bytes.chunks { received.append(chunk) }
        }
        #expect(error?.code == .timedOut)
        #expect(error?.url == url)
        // On a loaded machine the timeout may pass before the response is read; if it was, every byte sent
        // before the stall arrives ahead of the error.
        if responded { #expect(String(decoding: received, as: UTF8.self) == "partial") }
    }

    @Test("The resource timeout bounds a whole load")
    func resourceTimeout() async throws {
        let (probeID, _) = Probes.make()
        let session = testSession { $0.timeoutIntervalForResource = 0.3 }
        let error = await loadError { _ = try await session.data(from: URL(string: "hang://\(probeID)/before-response")!) }
        #expect(error?.code == .timedOut)
        #expect(error?.description.contains("longer than its resource timeout, 0.3 s") == true, "\(String(describing: error))")
    }

    @Test("The resource timeout runs on while a delegate answers a redirect: a slow answer ends the load timedOut")
    func resourceTimeoutDuringDelegate() async throws {
        final class SlowFollower: LoadTaskDelegate {
            func loadTask(_ task: LoadTask, willPerformRedirection response: LoadResponse, newRequest request: LoadRequest) async -> LoadRequest? {
                try? await Task.sleep(for: .seconds(20))
                return request
            }
        }
        let session = testSession { $0.timeoutIntervalForResource = 0.5 }
        // Without the clock the load waited the delegate out and then followed the redirect to its end.
        let error = await loadError { _ = try await session.data(for: LoadRequest(url: URL(string: "hop://x/slow")!), delegate: SlowFollower()) }
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(error?.description.contains("while a delegate answered") == true)
    }

    @Test("A callback-driven handler is paced by whenReadyForData and delivers every byte in order")
    func legacyHandler() async throws {
        // Many allocations at once: kept apart from the tests that measure peak memory.
        try await ExclusiveGate.memory.exclusive {
            let session = testSession { $0.bodyBufferLimit = 150_000 }
            let (data, _) = try await session.data(from: URL(string: "legacy:x")!)
            #expect(data.count == 10_000_000)
            #expect(data.first == UInt8(ascii: "0"))
            #expect(data[100_000] == UInt8(ascii: "9"))
        }
    }

    @Test("Body data before the response is a contract violation, reported as an error")
    func dataBeforeResponse() async {
        let error = await loadError { _ = try await testSession().data(from: URL(string: "bad://x/data-before-response")!) }
        #expect(error?.code == .handlerContractViolation)
        #expect(error?.description.contains("before the response") == true)
    }

    @Test("A second response is a contract violation")
    func twoResponses() async {
        let error = await loadError { _ = try await testSession().data(from: URL(string: "bad://x/two-responses")!) }
        #expect(error?.code == .handlerContractViolation)
    }

    @Test("A whole response in one call: head, body and the end; an empty body is no chunk")
    func batchedResponse() async throws {
        let (whole, response) = try await testSession().data(from: URL(string: "bad://x/batch-whole")!)
        #expect(String(decoding: whole, as: UTF8.self) == "Hello")
        #expect(response.mimeType == "text/plain")
        let (empty, _) = try await testSession().bytes(from: URL(string: "bad://x/batch-empty")!)
        var emptyChunks = 0
        for try await _ in empty.chunks { emptyChunks += 1 }
        #expect(emptyChunks == 0)
        let (partial, _) = try await testSession().data(from: URL(string: "bad://x/batch-then-more")!)
        #expect(String(decoding: partial, as: UTF8.self) == "abc")
        let error = await loadError { _ = try await testSession().data(from: URL(string: "bad://x/batch-after-response")!) }
        #expect(error?.code == .handlerContractViolation)
    }

    @Test("Finishing without a response is a contract violation")
    func finishWithoutResponse() async {
        let error = await loadError { _ = try await testSession().data(from: URL(string: "bad://x/finish-without-response")!) }
        #expect(error?.code == .handlerContractViolation)
    }

    @Test("Events after the terminal event are ignored: the body is what came before it")
    func eventsAfterFinish() async throws {
        let (data, _) = try await testSession().data(from: URL(string: "bad://x/events-after-finish")!)
        #expect(String(decoding: data, as: UTF8.self) == "ok")
    }
}
