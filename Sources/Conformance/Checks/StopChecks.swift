import Foundation
import Loader

/// `stopLoading()`: that it silences the handler at any point, and that it is safe to repeat.
enum StopChecks {
    /// Events may still be in flight as `stopLoading()` returns; past this they are a defect.
    static let grace: UInt64 = 200_000_000

    static func run(_ handlerClass: SchemeHandler.Type, _ fixtures: ConformanceFixtures, into report: inout ConformanceReport) async {
        guard let first = fixtures.success.first else { return }
        let target = fixtures.large ?? fixtures.slow ?? first.url

        // Before start has done anything, after the response, and mid-body.
        for moment in ["right after startLoading()", "after the response", "mid-body"] {
            let load = DirectLoad(handlerClass, url: target, keepsBody: false)
            load.handler.startLoading()
            switch moment {
            case "after the response": _ = await waitFor(load.client, seconds: fixtures.timeout) { if case .response = $0 { return true } else { return false } }
            case "mid-body": _ = await waitFor(load.client, seconds: fixtures.timeout) { if case .data = $0 { return true } else { return false } }
            default: break
            }
            load.stop()
            let stoppedAt = DispatchTime.now().uptimeNanoseconds
            try? await Task.sleep(for: .milliseconds(500))
            let late = load.client.events.filter { $0.at > stoppedAt + grace }
            if !late.isEmpty {
                let bytes = late.reduce(0) { if case .data(let count) = $1.event { return $0 + count } else { return $0 } }
                report.record(.stopsPromptly, .failed("stopped \(moment) while loading \(target.absoluteString), it sent \(late.count) more events (\(bytes) body bytes) over 200 ms later"))
            }
        }
        report.record(.stopsPromptly, .passed)

        // stopLoading() after completion, and twice.
        let load = DirectLoad(handlerClass, url: first.url)
        load.handler.startLoading()
        _ = await load.client.waitForTerminal(seconds: fixtures.timeout)
        try? await Task.sleep(for: .milliseconds(50))
        let settled = load.client.events.count
        load.stop()
        load.stop()
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
