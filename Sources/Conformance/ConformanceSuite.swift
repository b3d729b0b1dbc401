import Foundation
import Loader
import Synchronization

/// Checks whether a scheme handler keeps the loader's contract, and says, property by property, where
/// it does not.
///
/// ```swift
/// @Test func myHandlerConforms() async {
///     let report = await ConformanceSuite.run(MyHandler.self, fixtures: ConformanceFixtures(
///         success: [.init(url: URL(string: "my://a")!, body: Data("a".utf8))],
///         missing: URL(string: "my://none")!, missingErrorCode: .fileDoesNotExist,
///         large: URL(string: "my://big")!, slow: URL(string: "my://slow")!))
///     print(report)
///     #expect(report.allPassed, "\(report)")
/// }
/// ```
///
/// Runs of the suite in one process take turns (its memory and descriptor checks measure the whole
/// process), and it is best run where no other memory-heavy test runs at the same time.
public enum ConformanceSuite {
    private static let gate = TurnGate()

    /// Runs every check against `handlerClass` with `fixtures` and returns the report.
    public static func run(_ handlerClass: SchemeHandler.Type, fixtures: ConformanceFixtures) async -> ConformanceReport {
        await gate.take()
        defer { gate.give() }
        var report = ConformanceReport(handlerName: String(describing: handlerClass))
        guard !fixtures.success.isEmpty else {
            // A misconfigured run, not a pass: without a resource that loads, nothing can be checked.
            for property in ConformanceProperty.allCases {
                report.record(property, .failed("the fixtures list no success resource, so nothing could be checked"))
            }
            return report
        }
        RequestChecks.run(handlerClass, fixtures, into: &report)
        let classLevel = report
        // Calls into the handler are given the fixtures' time (five seconds at least) before the suite gives up on it.
        let calls = HandlerCalls(patience: max(fixtures.timeout, 5))
        await EventChecks.run(handlerClass, fixtures, calls, into: &report)
        if let stuck = calls.stuck { return classLevel.abandoned(stuck) }
        await StopChecks.run(handlerClass, fixtures, calls, into: &report)
        if let stuck = calls.stuck { return classLevel.abandoned(stuck) }
        await SessionChecks.run(handlerClass, fixtures, into: &report)
        await ResourceChecks.run(handlerClass, fixtures, calls, into: &report)
        if let stuck = calls.stuck { return classLevel.abandoned(stuck) }
        report.record(.startsPromptly, calls.startOutcome)
        return report.ordered()
    }
}

extension ConformanceReport {
    /// This report of the class-level checks, completed for a run given up because a call into the handler never
    /// returned: that call's property fails, and no other load-level property is said to pass or fail, since the
    /// handler's blocked thread may have caused what the checks saw.
    func abandoned(_ stuck: HandlerCalls.Stuck) -> ConformanceReport {
        var report = self
        report.record(stuck.property, .failed(stuck.message))
        for property in ConformanceProperty.allCases where report.outcome(of: property) == nil {
            report.record(property, .skipped("not checked: the run stopped when \(stuck.message)"))
        }
        return report.ordered()
    }
}

extension ConformanceReport {
    /// The outcomes in the order the properties are declared.
    func ordered() -> ConformanceReport {
        var copy = ConformanceReport(handlerName: handlerName)
        for property in ConformanceProperty.allCases {
            if let outcome = outcome(of: property) { copy.record(property, outcome) }
        }
        return copy
    }
}

/// One run at a time, waiting by suspension.
final class TurnGate: Sendable {
    private let state = Locked<(busy: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func take() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let enter = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiters.append(waiter)
                return false
            }
            if enter { waiter.resume() }
        }
    }

    func give() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
