import Crypto
import Foundation
import Loader
import Synchronization

/// Memory, descriptors and threads: what a handler holds while it works.
enum ResourceChecks {
    /// Peak memory a slow read of the large fixture may add.
    static let memoryBound = 64 * 1024 * 1024
    /// Body bytes a handler held back by its reader may still send in the second after (what it had read already).
    static let bytesPastHold = 8 * 1024 * 1024
    /// Body bytes it may send in the second after that: what it had in hand is out by then, so a handler that waits
    /// sends nothing; one that sends anyway at a network's pace (a timer, a read loop that does not ask) is seen.
    static let bytesLaterInHold = 1024 * 1024

    static func run(_ handlerClass: SchemeHandler.Type, _ fixtures: ConformanceFixtures, _ calls: HandlerCalls,
                    into report: inout ConformanceReport) async {
        // Without /proc (not Linux) nothing can be seen of memory or descriptors: not checked, rather than passed.
        let probes = ResourceProbes.available
        if let large = fixtures.large {
            // The large fixture may take a while to read slowly: fifteen times the timeout in all.
            let session = SessionChecks.session(handlerClass, fixtures, budget: fixtures.timeout * 15)
            await checkMemory(session, large, digest: fixtures.largeSHA256, measuring: probes, into: &report)
            session.invalidateAndCancel()
            if let problem = await backpressureProblem(handlerClass, large, fixtures, calls) {
                report.record(.slowReaderBoundsMemory, .failed(problem))
            }
            // A start that never returned: the loads below would call it again, through a session, and hang.
            guard calls.stuck == nil else { return }
            if probes {
                // A new session for each run: in the one above, a handler that keeps connections (HTTP) would load over
                // the one the memory check left open, a descriptor opened before the load, which the check cannot watch.
                let leak = await Self.failsEveryTime {
                    let fresh = SessionChecks.session(handlerClass, fixtures, budget: fixtures.timeout * 15)
                    defer { fresh.invalidateAndCancel() }
                    return await descriptorProblem(fresh, large, next: sameOrigin(as: large, in: fixtures.success) ?? fixtures.success.first)
                }
                report.record(.cancellationReleasesResources, leak.map { .failed($0) } ?? .passed)
            } else {
                report.record(.cancellationReleasesResources, .skipped(ResourceProbes.unavailable))
            }
        } else {
            report.record(.slowReaderBoundsMemory, .skipped("no large fixture"))
            report.record(.cancellationReleasesResources, .skipped("no large fixture"))
        }
        // A new session for each run, ended before the descriptors are counted: connections kept for later loads go then.
        if probes {
            let finishedLeak = await Self.failsEveryTime { await finishedLoadsProblem(handlerClass, fixtures) }
            report.record(.finishedLoadsReleaseResources, finishedLeak.map { .failed($0) } ?? .passed)
        } else {
            report.record(.finishedLoadsReleaseResources, .skipped(ResourceProbes.unavailable))
        }
        if let slow = fixtures.slow {
            let session = SessionChecks.session(handlerClass, fixtures)
            let block = await Self.failsEveryTime { await threadPoolProblem(session, slow) }
            report.record(.doesNotBlockThreadPool, block.map { .failed($0) } ?? .passed)
        } else {
            report.record(.doesNotBlockThreadPool, .skipped("no slow fixture"))
        }
    }

    /// Reads `large` slowly and checks what it announced, its SHA-256 against `digest` when given, and, when `measuring`
    /// (the probes can read the process's memory), how far its peak memory rose.
    private static func checkMemory(_ session: LoaderSession, _ large: URL, digest: String?, measuring: Bool, into report: inout ConformanceReport) async {
        ResourceProbes.resetPeak()
        let baseline = ResourceProbes.status("VmRSS")
        var total = 0
        var hasher = digest.map { _ in SHA256() }
        let announced: Int64?
        do {
            let (bytes, response) = try await session.bytes(from: large)
            announced = response.expectedContentLength
            var sinceSleep = 0
            var stalled = false
            for try await chunk in bytes.chunks {
                total += chunk.count
                hasher?.update(data: chunk)
                if !stalled {
                    // A reader that stops for a second after the first chunk: a handler that ignores
                    // backpressure goes on producing into memory meanwhile. (Reading on at full speed would
                    // keep up with any producer slower than the reader, and hide it.)
                    stalled = true
                    try await Task.sleep(for: .seconds(1))
                }
                sinceSleep += chunk.count
                if sinceSleep >= 4 * 1024 * 1024 {
                    sinceSleep = 0
                    try await Task.sleep(for: .milliseconds(2))
                }
            }
        } catch {
            report.record(.slowReaderBoundsMemory, .failed("loading \(large.absoluteString) failed after \(total) bytes: \(error)"))
            return
        }
        let growth = ResourceProbes.status("VmHWM") - baseline
        // The large body is too large to keep whole: its digest, when the fixtures give one, and its length (a download
        // cut short and finished as if whole is a silent loss).
        if let announced, announced != Int64(total) {
            report.record(.announcedLengthMatches, .failed("\(large.absoluteString) announced \(announced) bytes and finished after \(total)"))
        }
        // A body of another length than it announced has failed already, for that.
        if let digest, announced == nil || announced == Int64(total), let found = hasher?.finalize().map({ String(format: "%02x", $0) }).joined() {
            report.record(.bodyMatchesFixture, found == digest ? .passed
                          : .failed("the \(total) bytes of \(large.absoluteString) have the SHA-256 \(found), not the fixture's \(digest)"))
        }
        if !measuring {
            report.record(.slowReaderBoundsMemory, .skipped("\(ResourceProbes.unavailable): the memory bound is not checked (the reader's hold is)"))
        } else if total < 2 * memoryBound {
            report.record(.slowReaderBoundsMemory, .failed("the large fixture gave only \(total >> 20) MiB; it must be at least \(2 * memoryBound >> 20) MiB for the check to tell streaming from buffering"))
        } else if growth > memoryBound {
            report.record(.slowReaderBoundsMemory, .failed("reading \(total >> 20) MiB of \(large.absoluteString) slowly raised peak memory by \(growth >> 20) MiB (bound: \(memoryBound >> 20) MiB)"))
        } else {
            report.record(.slowReaderBoundsMemory, .passed)
        }
    }

    /// Why a handler whose reader stopped taking its body after the first bytes went on sending, or `nil` if it
    /// waited. The memory check sees only a producer fast enough to fill its bound within its reader's pause; held
    /// back for a second, a handler that waits sends no more than it had in hand, whatever its pace.
    private static func backpressureProblem(_ handlerClass: SchemeHandler.Type, _ large: URL, _ fixtures: ConformanceFixtures,
                                            _ calls: HandlerCalls) async -> String? {
        let load = DirectLoad(handlerClass, url: large, options: fixtures.handlerOptions, calls: calls, keepsBody: false, holdsAfter: 1)
        guard await load.start() else { return nil }
        let problem = await backpressureProblem(of: load, large, fixtures)
        await load.stop()
        return problem
    }

    /// What ``backpressureProblem(_:_:_:_:)`` finds in a started load.
    private static func backpressureProblem(of load: DirectLoad, _ large: URL, _ fixtures: ConformanceFixtures) async -> String? {
        func received() -> Int {
            load.client.events.reduce(0) { if case .data(let count) = $1.event { return $0 + count } else { return $0 } }
        }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(fixtures.timeout * 1e9)
        while received() == 0, !load.client.events.contains(where: \.event.isTerminal), DispatchTime.now().uptimeNanoseconds < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        // A moment for what was in flight as the hold began, then a second in which a waiting handler sends nothing.
        try? await Task.sleep(for: .milliseconds(100))
        let held = received()
        guard held > 0 else { return nil }
        try? await Task.sleep(for: .seconds(1))
        let more = received() - held
        if more > bytesPastHold {
            return "held back after its first bytes of \(large.absoluteString), the handler sent \(more >> 20) MiB more in a second (bound: \(bytesPastHold >> 20) MiB) instead of waiting for the reader"
        }
        // A second more: whatever pace it sends at, a handler that does not wait goes on sending.
        try? await Task.sleep(for: .seconds(1))
        let later = received() - held - more
        guard later > bytesLaterInHold else { return nil }
        return "held back after its first bytes of \(large.absoluteString), the handler still sent \(later >> 10) KiB in the second second of the hold (bound: \(bytesLaterInHold >> 10) KiB) instead of waiting for the reader"
    }

    /// How many times a check that reads the whole process (its descriptors, its cooperative threads) runs before
    /// it fails: a handler that leaks or blocks does so every time, while a descriptor opened or a thread held by
    /// other work in the process at that moment (tests running beside it) seldom repeats.
    static let attempts = 3

    /// What a run of such a check found: nothing, a problem of the handler's own (a load that failed), or one
    /// read from the whole process, which may be other work's (``attempts``).
    private enum Finding {
        case handler(String)
        case process(String)
    }

    /// The problem `check` found: the first of the handler's own, or the last read from the process if one was
    /// read in each of ``attempts`` runs; `nil` once a run finds none.
    private static func failsEveryTime(_ check: () async -> Finding?) async -> String? {
        var problem = ""
        for _ in 0..<attempts {
            switch await check() {
            case nil: return nil
            case .handler(let found): return found
            case .process(let found): problem = found
            }
        }
        return "\(problem) (a problem in each of \(attempts) runs)"
    }

    /// Why a cancelled load of `large` left descriptors open, or `nil` if it closed them all, or kept them for
    /// `session`'s later loads: then `next` must load through them as it should, a second cancelled load must leave no
    /// more open than the first (a kept connection is used again, not one more parked for each cancel), and all must
    /// close when the session ends.
    private static func descriptorProblem(_ session: LoaderSession, _ large: URL, next: ConformanceFixtures.Resource?) async -> Finding? {
        let before = ResourceProbes.openDescriptors()
        let opened: Set<String>
        switch await cancelledLoad(session, large) {
        case .failure(let problem): return .handler(problem.message)
        case .success(let descriptors): opened = descriptors
        }
        let leaked = await stillOpen(opened, looks: 200)
        if leaked.isEmpty { return nil }
        let kept = leaked.sorted().joined(separator: ", ")
        guard let next else {
            return .process("2 s after cancelling \(large.absoluteString), descriptors opened by the load were still open: \(kept)")
        }
        // Kept for later loads, as a multiplexed connection outlives a cancelled stream: then it must serve the next
        // load as it should (a connection left mid-body would not), and go when the session ends.
        do {
            let (data, _) = try await session.data(from: next.url)
            if data != next.body {
                return .handler("after cancelling \(large.absoluteString), whose descriptors stayed open (\(kept)), the next load through the session, of \(next.url.absoluteString), gave a body of \(data.count) bytes that differs from the fixture's (\(next.body.count) bytes)")
            }
        } catch {
            return .handler("after cancelling \(large.absoluteString), whose descriptors stayed open (\(kept)), the next load through the session, of \(next.url.absoluteString), failed: \(error)")
        }
        // What is open now, the next load's own connection included (one to another origin, say): a second cancelled
        // load must leave nothing new open beside it, as a connection used again does not.
        let afterNext = ResourceProbes.openDescriptors()
        if case .failure(let problem) = await cancelledLoad(session, large) { return .handler(problem.message) }
        let keptAgain = await stillOpen(ResourceProbes.openDescriptors().subtracting(afterNext), looks: 200)
        if !keptAgain.isEmpty {
            return .process("each cancelled load of \(large.absoluteString) left descriptors open until the session's end: \(leaked.count) after the first, \(keptAgain.count) more after a second (\(keptAgain.sorted().joined(separator: ", "))); a session whose loads are often cancelled would run out")
        }
        session.invalidateAndCancel()
        let left = await stillOpen(afterNext.subtracting(before).union(leaked), looks: 300)
        if left.isEmpty { return nil }
        return .process("descriptors opened by loads of \(large.absoluteString) were still open 2 s after they were cancelled and 3 s after their session ended: \(left.sorted().joined(separator: ", "))")
    }

    /// The first of `resources` with `url`'s scheme, host and port: the one a connection kept for `url` could serve.
    private static func sameOrigin(as url: URL, in resources: [ConformanceFixtures.Resource]) -> ConformanceFixtures.Resource? {
        resources.first { $0.url.scheme == url.scheme && $0.url.host == url.host && $0.url.port == url.port }
    }

    /// A problem of the handler's own, found at once.
    private struct Problem: Error {
        let message: String
    }

    /// Loads `large` through `session`, cancels it after the first chunk and reads on to its end: the descriptors open
    /// at the first chunk that were not before the load, or why the load did not end as cancelled.
    private static func cancelledLoad(_ session: LoaderSession, _ large: URL) async -> Result<Set<String>, Problem> {
        let before = ResourceProbes.openDescriptors()
        do {
            let (bytes, _) = try await session.bytes(from: large)
            var iterator = bytes.chunks.makeAsyncIterator()
            _ = try await iterator.next()
            let opened = ResourceProbes.openDescriptors().subtracting(before)
            bytes.task.cancel()
            do {
                while try await iterator.next() != nil {}
                return .failure(Problem(message: "cancelling \(large.absoluteString) did not end it as cancelled: the load finished instead"))
            } catch let error as LoadError where error.code == .cancelled {
                return .success(opened)
            } catch {
                return .failure(Problem(message: "cancelling \(large.absoluteString) did not end it as cancelled: the load failed with \(error)"))
            }
        } catch {
            return .failure(Problem(message: "loading \(large.absoluteString) failed: \(error)"))
        }
    }

    /// Those of `descriptors` still open after up to `looks` looks 10 ms apart (fewer once all are closed).
    private static func stillOpen(_ descriptors: Set<String>, looks: Int) async -> Set<String> {
        var open = descriptors
        for _ in 0..<looks where !open.isEmpty {
            try? await Task.sleep(for: .milliseconds(10))
            open = descriptors.intersection(ResourceProbes.openDescriptors())
        }
        return open
    }

    /// Why loads of the success fixtures (and of the missing one, which fail) left descriptors open once their session
    /// ended, or `nil` if they did not.
    private static func finishedLoadsProblem(_ handlerClass: SchemeHandler.Type, _ fixtures: ConformanceFixtures) async -> Finding? {
        let before = ResourceProbes.openDescriptors()
        let session = SessionChecks.session(handlerClass, fixtures)
        // Whatever their outcome: a load that fails (the missing fixture's, or one the other properties fault) must
        // let go of what it opened too.
        for url in fixtures.success.map(\.url) + (fixtures.missing.map { [$0] } ?? []) {
            _ = try? await session.data(from: url)
        }
        session.invalidateAndCancel()
        let leaked = await stillOpen(ResourceProbes.openDescriptors().subtracting(before), looks: 300)
        if leaked.isEmpty { return nil }
        let loads = fixtures.success.map(\.url.absoluteString).joined(separator: ", ")
        return .process("3 s after loads of \(loads) finished and their session ended, descriptors they opened were still open: \(leaked.sorted().joined(separator: ", "))")
    }

    /// Why loads of `slow` side by side starved a 10 ms timer on the cooperative threads, or `nil` if it ticked.
    private static func threadPoolProblem(_ session: LoaderSession, _ slow: URL) async -> Finding? {
        final class Ticker: Sendable {
            let ticks = Atomic<Int>(0)
            let running = Atomic<Bool>(true)
        }
        let ticker = Ticker()
        let started = Date()
        let failure: String? = await withTaskGroup(of: String?.self) { group in
            group.addTask {
                while ticker.running.load(ordering: .acquiring) {
                    try? await Task.sleep(for: .milliseconds(10))
                    ticker.ticks.wrappingAdd(1, ordering: .relaxed)
                }
                return nil
            }
            let loads = await withTaskGroup(of: String?.self) { loads in
                for _ in 0..<(ProcessInfo.processInfo.activeProcessorCount + 2) {
                    loads.addTask {
                        do { _ = try await session.data(from: slow); return nil } catch { return "loading \(slow.absoluteString) failed: \(error)" }
                    }
                }
                var problem: String?
                for await result in loads where problem == nil { problem = result }
                return problem
            }
            ticker.running.store(false, ordering: .releasing)
            await group.waitForAll()
            return loads
        }
        let elapsed = Date().timeIntervalSince(started)
        let ideal = Int(elapsed / 0.010)
        let got = ticker.ticks.load(ordering: .relaxed)
        if let failure { return .handler(failure) }
        if elapsed < 0.3 {
            return .handler("the slow fixture took \(Int(elapsed * 1000)) ms; it must take 0.5 s or more for the check to mean anything")
        }
        if got * 4 < ideal {
            return .process("while \(ProcessInfo.processInfo.activeProcessorCount + 2) loads of \(slow.absoluteString) ran, a 10 ms timer ticked \(got) times in \(Int(elapsed * 1000)) ms (expected about \(ideal)): the loads block the cooperative threads")
        }
        return nil
    }
}
