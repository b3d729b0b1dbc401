import Foundation
import HTTPTypes
import Loader
import Synchronization
import TestSupport
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

    /// Waits in its first data call for the app's lock, as a delegate that guards its state with one does.
    final class LockTaking: LoadTaskDelegate {
        let appLock: NSLock
        let inside = DispatchSemaphore(value: 0)
        let waiting = Atomic<Bool>(false)
        let gotLock = Atomic<Bool>(false)
        let events = Mutex<[String]>([])

        init(appLock: NSLock) { self.appLock = appLock }

        func loadTask(_ task: LoadTask, didReceive data: Data) {
            let first = events.withLock { e -> Bool in
                defer { e.append("data") }
                return !e.contains("data")
            }
            guard first else { return }
            waiting.store(true, ordering: .releasing)
            inside.signal()
            // Bounded: the thread that holds the lock gives it up once its cancel() has returned.
            let got = appLock.lock(before: Date().addingTimeInterval(10))
            waiting.store(false, ordering: .releasing)
            gotLock.store(got, ordering: .releasing)
            if got { appLock.unlock() }
        }

        func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?) {
            events.withLock { $0.append("completed \(error.map { "\($0.code)" } ?? "ok")") }
        }
    }

    @Test("cancel() from a thread that holds the app's lock returns while the task's delegate waits for that lock; the delegate hears the end after")
    func cancelDoesNotWaitForDelegate() async throws {
        let (probeID, _) = Probes.make()
        let appLock = NSLock()
        let delegate = LockTaking(appLock: appLock)
        let (bytes, _) = try await testSession().bytes(from: URL(string: "stream://\(probeID)/4000000")!, delegate: delegate)
        // On a thread of its own, as the app's: takes its lock before the body is read, waits until the delegate waits for
        // it, cancels.
        let locked = DispatchSemaphore(value: 0)
        let outcome = Mutex<(wasInside: Bool, returnedWhileWaiting: Bool)?>(nil)
        Thread.detachNewThread {
            appLock.lock()
            locked.signal()
            // Bounds for a hang, generous: in the full run other tests hold the cooperative pool's two threads for
            // seconds (the conformance suite's thread-blocking fixtures), and the reader waits for one.
            let wasInside = delegate.inside.wait(timeout: .now() + 60) == .success
            bytes.task.cancel()
            let returnedWhileWaiting = delegate.waiting.load(ordering: .acquiring)
            appLock.unlock()
            outcome.withLock { $0 = (wasInside, returnedWhileWaiting) }
        }
        #expect(await eventually(within: 10) { locked.wait(timeout: .now()) == .success })
        let reader = Task { await loadError { for try await _ in bytes.chunks {} } }
        #expect(await eventually(within: 90) { outcome.withLock { $0 != nil } })
        let (wasInside, returnedWhileWaiting) = outcome.withLock { $0 } ?? (false, false)
        #expect(wasInside, "the delegate never heard of a chunk")
        // Before the delegate queue, cancel() waited for the delegate's call to end, which waited for this lock: both
        // waited until the delegate gave up after 10 s.
        #expect(returnedWhileWaiting, "cancel() waited for the delegate call, which waited for the lock cancel()'s caller held")
        let error = await reader.value
        #expect(error?.code == .cancelled)
        #expect(await eventually(within: 10) { delegate.events.withLock { $0.last?.hasPrefix("completed") == true } })
        let gotLock = delegate.gotLock.load(ordering: .acquiring)
        #expect(gotLock, "the delegate gave up waiting for the lock")
        let events = delegate.events.withLock { $0 }
        #expect(events.filter { $0.hasPrefix("completed") } == ["completed cancelled"], "\(events)")
        #expect(events.last == "completed cancelled", "a data call came after the completion: \(events)")
    }

    /// Cancels its task in its first data call, noting what it hears meanwhile.
    final class CancellingInside: LoadTaskDelegate {
        let events = Mutex<[String]>([])

        func loadTask(_ task: LoadTask, didReceive data: Data) {
            let first = events.withLock { e -> Bool in
                guard !e.contains("cancel") else {
                    e.append("data after the cancel")
                    return false
                }
                e.append("cancel")
                return true
            }
            guard first else { return }
            task.cancel()
            events.withLock { $0.append("cancel returned") }
        }

        func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?) {
            events.withLock { $0.append("completed \(error.map { "\($0.code)" } ?? "ok")") }
        }
    }

    @Test("A delegate that cancels its task in a call hears of the end after that call returns, not inside it")
    func cancelInsideACall() async throws {
        let (probeID, _) = Probes.make()
        let delegate = CancellingInside()
        let (bytes, _) = try await testSession().bytes(from: URL(string: "stream://\(probeID)/4000000")!, delegate: delegate)
        let error = await loadError { for try await _ in bytes.chunks {} }
        #expect(error?.code == .cancelled)
        #expect(await eventually(within: 10) { delegate.events.withLock { $0.last?.hasPrefix("completed") == true } })
        // With a lock around each call, the completion was told inside the cancelling call: "cancel", "completed", then
        // "cancel returned".
        #expect(delegate.events.withLock { $0 } == ["cancel", "cancel returned", "completed cancelled"])
    }

    /// Takes the app's lock as it hears of the task's end.
    final class LockingAtEnd: LoadTaskDelegate {
        let appLock: NSLock
        let gotLock = Mutex<Bool?>(nil)
        init(appLock: NSLock) { self.appLock = appLock }
        func loadTask(_ task: LoadTask, didCompleteWithError error: LoadError?) {
            // Bounded: on the cancelling thread itself, which holds the lock, this would wait for ever.
            let got = appLock.lock(before: Date().addingTimeInterval(5))
            if got { appLock.unlock() }
            gotLock.withLock { $0 = got }
        }
    }

    @Test("cancel() of a byte stream made under the app's lock returns, and the delegate hears of the end elsewhere, once the lock is free")
    func cancelDeliversElsewhere() async throws {
        let (probeID, _) = Probes.make()
        let appLock = NSLock()
        let delegate = LockingAtEnd(appLock: appLock)
        let (bytes, _) = try await testSession().bytes(from: URL(string: "stream://\(probeID)/4000000")!, delegate: delegate)
        var iterator = bytes.chunks.makeAsyncIterator()
        #expect(try await iterator.next() != nil)
        // No delegate call is running now: the cancelling thread would deliver the end itself, inside cancel().
        let cancelled = Mutex(false)
        Thread.detachNewThread {
            appLock.lock()
            bytes.task.cancel()
            cancelled.withLock { $0 = true }
            appLock.unlock()
        }
        #expect(await eventually(within: 10) { cancelled.withLock { $0 } })
        #expect(await eventually(within: 20) { delegate.gotLock.withLock { $0 } != nil })
        // Told inside cancel() on the thread that held the lock, the delegate waited 5 s for it and gave up.
        #expect(delegate.gotLock.withLock { $0 } == true, "the end was told inside cancel(), on the thread holding the lock")
    }
}
