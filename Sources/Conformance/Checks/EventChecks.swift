import Foundation
import Loader

/// The event contract, checked on raw events of loads driven directly.
enum EventChecks {
    static func run(_ handlerClass: SchemeHandler.Type, _ fixtures: ConformanceFixtures, _ calls: HandlerCalls, into report: inout ConformanceReport) async {
        for resource in fixtures.success {
            // Each report lingers a moment, so that one the handler makes from elsewhere meanwhile is caught.
            let load = DirectLoad(handlerClass, url: resource.url, options: fixtures.handlerOptions, calls: calls, lingers: true)
            let (events, body, ended) = await load.run(timeout: fixtures.timeout)
            let url = resource.url.absoluteString
            if let overlap = load.client.overlaps.first {
                report.record(.clientCallsDoNotOverlap, .failed("loading \(url), the handler called the client's \(overlap) while another of its calls was still running"))
            } else {
                report.record(.clientCallsDoNotOverlap, .passed)
            }
            if events.contains(where: \.isTransaction) {
                report.record(.transactionsBeforeResponse, .failed("loading \(url) reported transaction metrics though the client's collectsMetrics is false"))
            }
            let names = events.prefix(6).map(\.name).joined(separator: ", ")

            // Response before body, once; a reported redirect counts as the response (the loader takes one of either).
            let responses = events.indices.filter { isHead(events[$0]) }
            let firstData = events.firstIndex { if case .data = $0 { return true } else { return false } }
            if responses.isEmpty {
                report.record(.responseBeforeBody, .failed("loading \(url) sent no response (events: \(names))"))
            } else if let firstData, firstData < responses[0] {
                report.record(.responseBeforeBody, .failed("loading \(url) sent body data before the response (events: \(names))"))
            } else if responses.count > 1 {
                report.record(.responseBeforeBody, .failed("loading \(url) sent \(responses.count) responses, a redirect counted as one (events: \(names))"))
            } else {
                report.record(.responseBeforeBody, .passed)
            }

            let terminals = checkTerminal(events, ended: ended, url: url, fixtures, into: &report)

            // The body, counted only up to the terminal event.
            let delivered = events.prefix { !$0.isTerminal }.reduce(0) { total, event in
                if case .data(let count) = event { return total + count } else { return total }
            }
            let bodyBeforeEnd = body.prefix(delivered)
            if case .failure(let error)? = terminals.first.map({ events[$0] }) {
                report.record(.bodyMatchesFixture, .failed("loading \(url) failed: \(error)"))
            } else if bodyBeforeEnd != resource.body {
                report.record(.bodyMatchesFixture, .failed("loading \(url) gave \(bodyBeforeEnd.count) bytes\(Self.firstDifference(bodyBeforeEnd, resource.body)); the fixture has \(resource.body.count)"))
            } else {
                report.record(.bodyMatchesFixture, .passed)
            }
            if let response = responses.first.flatMap({ if case .response(let r) = events[$0] { return r } else { return nil } }),
               let announced = response.expectedContentLength, announced != Int64(delivered) {
                report.record(.announcedLengthMatches, .failed("loading \(url) announced Content-Length \(announced) but delivered \(delivered) bytes"))
            } else {
                report.record(.announcedLengthMatches, .passed)
            }
        }

        // Asked for metrics, the first fixture's transactions (if any) come before its response.
        if let first = fixtures.success.first {
            let (events, _, _) = await DirectLoad.run(handlerClass, url: first.url, fixtures: fixtures, calls: calls, collectsMetrics: true)
            let head = events.firstIndex(where: isHead) ?? events.endIndex
            let late = events[head...].contains(where: \.isTransaction)
            report.record(.transactionsBeforeResponse, late
                ? .failed("loading \(first.url.absoluteString) reported transaction metrics after the response (events: \(events.prefix(8).map(\.name).joined(separator: ", ")))")
                : .passed)
        }

        // A load that fails, one that is redirected, and one that takes its time end as any other: one terminal
        // event, nothing after.
        if let slow = fixtures.slow {
            let (events, _, ended) = await DirectLoad.run(handlerClass, url: slow, fixtures: fixtures, calls: calls)
            _ = checkTerminal(events, ended: ended, url: slow.absoluteString, fixtures, into: &report)
        }
        if let missing = fixtures.missing {
            let (events, _, ended) = await DirectLoad.run(handlerClass, url: missing, fixtures: fixtures, calls: calls)
            _ = checkTerminal(events, ended: ended, url: missing.absoluteString, fixtures, into: &report)
        }
        if let redirect = fixtures.redirect {
            let (events, _, ended) = await DirectLoad.run(handlerClass, url: redirect, fixtures: fixtures, calls: calls)
            _ = checkTerminal(events, ended: ended, url: redirect.absoluteString, fixtures, into: &report)
            // Proposed with wasRedirectedTo, or a response that redirects by its status and Location (as HTTP's do): the
            // loader's redirect layer follows either.
            let redirected = events.contains {
                switch $0 {
                case .redirect: return true
                case .response(let response): return RedirectMiddleware.isRedirect(response)
                default: return false
                }
            }
            let responded = events.contains { if case .response(let response) = $0 { return !RedirectMiddleware.isRedirect(response) } else { return false } }
            let heads = events.indices.filter { isHead(events[$0]) }
            if heads.count > 1 {
                report.record(.redirectIsReported, .failed("loading \(redirect.absoluteString) reported \(heads.count) responses and redirects; the loader takes one (events: \(events.prefix(8).map(\.name).joined(separator: ", ")))"))
            } else if responded {
                report.record(.redirectIsReported, .failed("loading \(redirect.absoluteString) answered with a response instead of reporting the redirect (did the handler follow it?)"))
            } else if !redirected {
                report.record(.redirectIsReported, .failed("loading \(redirect.absoluteString) reported no redirect (events: \(events.map(\.name).joined(separator: ", ")))"))
            } else {
                report.record(.redirectIsReported, .passed)
            }
        } else {
            report.record(.redirectIsReported, .skipped("no redirect fixture"))
        }
    }

    /// Checks that a load ended, with exactly one terminal event and nothing after it; returns the indices of
    /// its terminal events.
    private static func checkTerminal(_ events: [RecordingClient.Event], ended: Bool, url: String, _ fixtures: ConformanceFixtures,
                                      into report: inout ConformanceReport) -> [Int] {
        let terminals = events.indices.filter { events[$0].isTerminal }
        if !ended || terminals.isEmpty {
            let seen = events.isEmpty ? "no event" : "events: " + events.prefix(8).map(\.name).joined(separator: ", ")
            report.record(.exactlyOneTerminalEvent, .failed("loading \(url) never finished or failed within \(Int(fixtures.timeout)) s (\(seen))"))
        } else if terminals.count > 1 {
            report.record(.exactlyOneTerminalEvent, .failed("loading \(url) sent \(terminals.count) terminal events (\(terminals.map { events[$0].name }.joined(separator: ", ")))"))
        } else {
            report.record(.exactlyOneTerminalEvent, .passed)
        }
        // A second terminal event is the terminal check's; anything else after the first is this one's.
        if let first = terminals.first, case let after = events[(first + 1)...].filter({ !$0.isTerminal }), !after.isEmpty {
            report.record(.noEventsAfterTerminal, .failed("loading \(url) sent \(after.map(\.name).joined(separator: ", ")) after \(events[first].name)"))
        } else {
            report.record(.noEventsAfterTerminal, .passed)
        }
        return terminals
    }

    /// Whether `event` is a response head: a response, or a redirect reported in its stead.
    private static func isHead(_ event: RecordingClient.Event) -> Bool {
        switch event {
        case .response, .redirect: return true
        default: return false
        }
    }

    private static func firstDifference(_ a: Data, _ b: Data) -> String {
        guard let index = zip(a, b).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset else { return "" }
        return ", differing first at byte \(index)"
    }
}
