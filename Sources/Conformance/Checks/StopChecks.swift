import Foundation
import Loader

/// `stopLoading()`: that it silences the handler at any point, and that it is safe to repeat.
enum StopChecks {
    /// Events may still be in flight as `stopLoading()` returns; past this they are a defect.
    static let grace: UInt64 = 200_000_000
    /// Chunks a handler may still have on their way as `stopLoading()` returns (sent from another thread
    /// before it saw the stop); a handler held back by its reader has none, but one that ignores backpressure may.
    static let inFlight = 4
    /// The longest `stopLoading()` may take: `LoadTask.cancel()` calls it on the caller's thread, so a stop that
    /// waits (for a worker to push out the rest of the body, for a connection to close) holds up whoever cancels.
    static let longestStop: UInt64 = 1_000_000_000

    /// Returns early when a call into the handler never returned (``HandlerCalls/stuck``): the suite reports that.
    static func run(_ handlerClass: SchemeHandler.Type, _ fixtures: ConformanceFixtures, _ calls: HandlerCalls,
                    into report: inout ConformanceReport) async {
        guard let first = fixtures.success.first else { return }
        let target = fixtures.large ?? fixtures.slow ?? first.url

        // Before start has done anything, after the response, and mid-body. The client stops taking the
        // body after its first bytes, so that each stop finds the handler with more to send even when it
        // loads faster than the checks can look (a file read whole within startLoading()).
        var exercised = 0
        for moment in ["right after startLoading()", "after the response", "mid-body"] {
            let load = DirectLoad(handlerClass, url: target, options: fixtures.handlerOptions, calls: calls, keepsBody: false, holdsAfter: 1)
            guard await load.start() else { return }
            switch moment {
            case "after the response": _ = await waitFor(load.client, seconds: fixtures.timeout) { if case .response = $0 { return true } else { return false } }
            case "mid-body": _ = await waitFor(load.client, seconds: fixtures.timeout) { if case .data = $0 { return true } else { return false } }
            default: break
            }
            if !load.client.events.contains(where: { $0.event.isTerminal }) { exercised += 1 }
            // From the call, not its return: what a stop that blocks lets out meanwhile counts too. Timed on the
            // thread that made the call, which the hop to it has not delayed.
            guard let timing = await load.stop() else { return }
            let (stopping, stoppedAt) = (timing.began, timing.began + timing.took)
            if timing.took > longestStop {
                report.record(.stopsPromptly, .failed("stopLoading() \(moment) while loading \(target.absoluteString) took \(timing.took / 1_000_000) ms to return: LoadTask.cancel() calls it on the caller's thread, which it holds up"))
            }
            try? await Task.sleep(for: .milliseconds(500))
            let after = load.client.events.filter { $0.at > stopping }
            let late = after.filter { $0.at > stoppedAt + grace }
            // The chunks that came while the call ran count only when it took long: a short one may have been a thread
            // held up between the clock's reading and the stop (a loaded machine) while a sound handler sent on.
            let counted = timing.took >= grace ? after : after.filter { $0.at > stoppedAt }
            let chunks = counted.filter { if case .data = $0.event { return true } else { return false } }
            // Late events, or more chunks than a handler could have had in flight, however fast they came.
            if !late.isEmpty || chunks.count > inFlight {
                let bytes = after.reduce(0) { if case .data(let count) = $1.event { return $0 + count } else { return $0 } }
                report.record(.stopsPromptly, .failed("stopped \(moment) while loading \(target.absoluteString), it sent \(after.count) more events (\(bytes) body bytes), \(late.count) of them over 200 ms later"))
            }
        }
        if exercised == 0 {
            report.record(.stopsPromptly, .skipped("the load of \(target.absoluteString) ended before each stop, even held back after its first byte: give a large or slow fixture"))
        } else {
            report.record(.stopsPromptly, .passed)
        }

        // stopLoading() after completion, and twice.
        let load = DirectLoad(handlerClass, url: first.url, options: fixtures.handlerOptions, calls: calls)
        guard await load.start() else { return }
        _ = await load.client.waitForTerminal(seconds: fixtures.timeout)
        try? await Task.sleep(for: .milliseconds(50))
        let settled = load.client.events.count
        guard await load.stop() != nil, await load.stop() != nil else { return }
        try? await Task.sleep(for: .milliseconds(200))
        let extra = load.client.events.dropFirst(settled).map(\.event.name)
        if !extra.isEmpty {
            report.record(.stopLoadingIsSafe, .failed("stopLoading() after the load of \(first.url.absoluteString) completed caused \(extra.joined(separator: ", "))"))
        } else {
            report.record(.stopLoadingIsSafe, .passed)
        }
    }

    private static func waitFor(_ client: RecordingClient, seconds: TimeInterval, _ match: (RecordingClient.Event) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if client.events.contains(where: { match($0.event) }) { return true }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return false
    }
}
