import Foundation
@testable import HandlerConformance
import Loader
import TestSupport
import Testing

let memFixtures = ConformanceFixtures(
    success: [
        .init(url: URL(string: "mem://small")!, body: MemoryHandler.small),
        .init(url: URL(string: "mem://other")!, body: MemoryHandler.other),
    ],
    missing: URL(string: "mem://missing")!,
    missingErrorCode: .fileDoesNotExist,
    large: URL(string: "mem://large")!,
    slow: URL(string: "mem://slow")!,
    redirect: URL(string: "mem://redirect")!,
    timeout: 10,
    largeSHA256: MemoryHandler.largeSHA256
)

final class AcceptsEveryScheme: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .acceptsEveryScheme } }
final class CanonicalAppendsSlash: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .canonicalAppendsSlash } }
final class DataBeforeResponse: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .dataBeforeResponse } }
final class CorruptsBody: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .corruptsBody } }
final class WrongContentLength: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .wrongContentLength } }
final class FinishesTwice: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .finishesTwice } }
final class DataAfterFinish: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .dataAfterFinish } }
final class FollowsRedirect: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .followsRedirect } }
final class KeepsSendingAfterStop: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .keepsSendingAfterStop } }
final class KeepsSendingAfterStopQuickly: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .keepsSendingAfterStopQuickly } }
final class LeaksDescriptor: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .leaksDescriptor } }
final class FailsOnLateStop: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .failsOnLateStop } }
final class SharesStateAcrossLoads: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .sharesStateAcrossLoads } }
final class BuffersWholeBody: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .buffersWholeBody } }
final class MissingIsSuccess: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .missingIsSuccess } }
final class VaryingHeader: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .varyingHeader } }
final class BlocksThreads: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .blocksThreads } }
final class TricklesForever: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .tricklesForever } }
final class BreaksContractWhenConcurrent: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .breaksContractWhenConcurrent } }
final class FailsThenFinishes: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .failsThenFinishes } }
final class RedirectNeverEnds: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .redirectNeverEnds } }
final class SchemeNotListed: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .schemeNotListed } }
final class IgnoresBackpressure: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .ignoresBackpressure } }
final class EverythingCacheEquivalent: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .everythingCacheEquivalent } }
final class TransactionUnasked: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .transactionUnasked } }
final class TransactionAfterResponse: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .transactionAfterResponse } }
final class IgnoresBackpressureSlowly: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .ignoresBackpressureSlowly } }
final class WaitsForReaderBriefly: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .waitsForReaderBriefly } }
final class BlocksInStop: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .blocksInStop } }
final class TruncatesLarge: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .truncatesLarge } }
final class CorruptsLarge: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .corruptsLarge } }
final class ReportsFromTwoThreads: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .reportsFromTwoThreads } }
final class RedirectsThenResponds: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .redirectsThenResponds } }
final class LeaksDescriptorOnFinish: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .leaksDescriptorOnFinish } }
final class BlocksInStart: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .blocksInStart } }
final class HangsInStart: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .hangsInStart } }
final class HangsInStop: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .hangsInStop } }
final class StopsWhenDeliverThrows: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .stopsWhenDeliverThrows } }
final class LearnsOfStopLate: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .learnsOfStopLate } }
final class IgnoresDeliverThrows: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .ignoresDeliverThrows } }
final class KeepsDescriptorForSession: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .keepsDescriptorForSession } }
final class KeptDescriptorCorruptsNextLoad: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .keptDescriptorCorruptsNextLoad } }
final class ParksDescriptorPerLoad: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .parksDescriptorPerLoad } }
final class KeepsDescriptorPerOrigin: MemoryHandler, @unchecked Sendable { override class var defect: Defect { .keepsDescriptorPerOrigin } }

/// Each broken handler and the one property it breaks.
let brokenHandlers: [(SchemeHandler.Type, ConformanceProperty)] = [
    (AcceptsEveryScheme.self, .acceptsItsRequests),
    (CanonicalAppendsSlash.self, .canonicalRequestIsIdempotent),
    (EverythingCacheEquivalent.self, .cacheEquivalenceIsSound),
    (DataBeforeResponse.self, .responseBeforeBody),
    (RedirectsThenResponds.self, .responseBeforeBody),
    (CorruptsBody.self, .bodyMatchesFixture),
    (WrongContentLength.self, .announcedLengthMatches),
    (TruncatesLarge.self, .announcedLengthMatches),
    (CorruptsLarge.self, .bodyMatchesFixture),
    (FinishesTwice.self, .exactlyOneTerminalEvent),
    (DataAfterFinish.self, .noEventsAfterTerminal),
    (ReportsFromTwoThreads.self, .clientCallsDoNotOverlap),
    (FollowsRedirect.self, .redirectIsReported),
    (TransactionAfterResponse.self, .transactionsBeforeResponse),
    (TransactionUnasked.self, .transactionsBeforeResponse),
    (BlocksInStart.self, .startsPromptly),
    (HangsInStart.self, .startsPromptly),
    (HangsInStop.self, .stopsPromptly),
    (KeepsSendingAfterStop.self, .stopsPromptly),
    (KeepsSendingAfterStopQuickly.self, .stopsPromptly),
    (BlocksInStop.self, .stopsPromptly),
    (IgnoresDeliverThrows.self, .stopsPromptly),
    (LeaksDescriptor.self, .cancellationReleasesResources),
    (KeptDescriptorCorruptsNextLoad.self, .cancellationReleasesResources),
    (ParksDescriptorPerLoad.self, .cancellationReleasesResources),
    (LeaksDescriptorOnFinish.self, .finishedLoadsReleaseResources),
    (FailsOnLateStop.self, .stopLoadingIsSafe),
    (SharesStateAcrossLoads.self, .concurrentLoadsAreCorrect),
    (BuffersWholeBody.self, .slowReaderBoundsMemory),
    (MissingIsSuccess.self, .missingResourceFails),
    (VaryingHeader.self, .middlewareIsTransparent),
    (BlocksThreads.self, .doesNotBlockThreadPool),
    (BreaksContractWhenConcurrent.self, .concurrentLoadsAreCorrect),
    (FailsThenFinishes.self, .exactlyOneTerminalEvent),
    (RedirectNeverEnds.self, .exactlyOneTerminalEvent),
    (IgnoresBackpressure.self, .slowReaderBoundsMemory),
    (IgnoresBackpressureSlowly.self, .slowReaderBoundsMemory),
    (WaitsForReaderBriefly.self, .slowReaderBoundsMemory),
]

@Suite("The conformance suite proves itself", .serialized)
struct ConformanceSuiteTests {
    @Test("The reference mem: handler keeps every property")
    func referencePasses() async throws {
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(MemoryHandler.self, fixtures: memFixtures) }
        print(report)
        #expect(report.allPassed, "\(report)")
        #expect(report.outcomes.count == ConformanceProperty.allCases.count)
        #expect(report.outcomes.allSatisfy { $0.outcome == .passed })
    }

    @Test("A slow fixture that never ends fails exactlyOneTerminalEvent within the fixtures' timeout, and the suite returns")
    func neverEndingFixture() async throws {
        var fixtures = memFixtures
        fixtures.timeout = 2
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(TricklesForever.self, fixtures: fixtures) }
        // Its own property, and the thread-pool check, whose loads of it cannot end either.
        #expect(report.failedProperties == [.exactlyOneTerminalEvent, .doesNotBlockThreadPool], "\(report)")
        if case .failed(let message)? = report.outcome(of: .exactlyOneTerminalEvent) {
            #expect(message.contains("mem://slow") && message.contains("never finished"), "\(message)")
        }
    }

    @Test("A handler whose canInit takes its URLs but whose supportedSchemes misses their scheme fails acceptsItsRequests, saying why")
    func schemeNotListed() async throws {
        // Every load through a session fails as well (no registry routes the URLs): those properties fail too.
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(SchemeNotListed.self, fixtures: memFixtures) }
        guard case .failed(let message)? = report.outcome(of: .acceptsItsRequests) else {
            Issue.record("acceptsItsRequests did not fail: \(report)")
            return
        }
        #expect(message.contains("supportedSchemes"), "\(message)")
    }

    @Test("A handler that stops when deliver throws (its waits deaf to cancellation), as the client allows, keeps every property; so does one whose task runs late, its first delivery long after the stop", arguments: [
        StopsWhenDeliverThrows.self as SchemeHandler.Type, LearnsOfStopLate.self,
    ])
    func stopsWhenDeliverThrows(handler: SchemeHandler.Type) async throws {
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(handler, fixtures: memFixtures) }
        #expect(report.allPassed, "\(report)")
    }

    @Test("A handler that keeps a cancelled load's descriptor for its session's later loads, closing it when the session ends (as an HTTP/2 connection outlives a stream), keeps every property; so does one keeping one per origin, whose next load (another origin) opens one more", arguments: [
        KeepsDescriptorForSession.self as SchemeHandler.Type, KeepsDescriptorPerOrigin.self,
    ])
    func keepsDescriptorForSession(handler: SchemeHandler.Type) async throws {
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(handler, fixtures: memFixtures) }
        #expect(report.allPassed && report.allChecked, "\(report)")
    }

    @Test("A startLoading() or stopLoading() that never returns fails its property naming the URL, and the suite returns with every other property not checked", arguments: [
        (HangsInStart.self as SchemeHandler.Type, ConformanceProperty.startsPromptly, "startLoading()"),
        (HangsInStop.self as SchemeHandler.Type, ConformanceProperty.stopsPromptly, "stopLoading()"),
    ])
    func neverReturningCall(handler: SchemeHandler.Type, property: ConformanceProperty, call: String) async throws {
        var fixtures = memFixtures
        fixtures.timeout = 2
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(handler, fixtures: fixtures) }
        #expect(report.failedProperties == [property], "\(report)")
        // The class-level checks, made before any load, stand; every other property is left unchecked.
        let classLevel: Set<ConformanceProperty> = [.acceptsItsRequests, .canonicalRequestIsIdempotent, .cacheEquivalenceIsSound]
        #expect(classLevel.allSatisfy { report.outcome(of: $0) == .passed }, "\(report)")
        #expect(Set(report.skippedProperties) == Set(ConformanceProperty.allCases).subtracting(classLevel).subtracting([property]), "\(report)")
        if case .failed(let message)? = report.outcome(of: property) {
            #expect(message.contains(call) && message.contains("mem://small") && message.contains("had not returned"), "\(message)")
        }
    }

    @Test("Without /proc (not Linux) the memory and descriptor properties are not checked, rather than passed with nothing seen; the backpressure half still fails a handler that ignores its reader", arguments: [
        (MemoryHandler.self as SchemeHandler.Type, nil as ConformanceProperty?),
        (IgnoresBackpressure.self as SchemeHandler.Type, ConformanceProperty.slowReaderBoundsMemory),
    ])
    func withoutProc(handler: SchemeHandler.Type, failing: ConformanceProperty?) async throws {
        let report = try await ExclusiveGate.memory.exclusive {
            await ResourceProbes.$root.withValue("/nonexistent/proc/self") { await ConformanceSuite.run(handler, fixtures: memFixtures) }
        }
        let unprobed: Set<ConformanceProperty> = [.cancellationReleasesResources, .finishedLoadsReleaseResources]
        #expect(report.failedProperties == (failing.map { [$0] } ?? []), "\(report)")
        #expect(Set(report.skippedProperties) == (failing == nil ? unprobed.union([.slowReaderBoundsMemory]) : unprobed), "\(report)")
        for property in unprobed {
            guard case .skipped(let why)? = report.outcome(of: property) else { continue }
            #expect(why.contains("/nonexistent/proc/self/status") && why.contains("Linux's /proc"), "\(why)")
        }
    }

    @Test("Fixtures with no success resource are a failed run, not a pass")
    func noSuccessFixture() async {
        let report = await ConformanceSuite.run(MemoryHandler.self, fixtures: ConformanceFixtures(success: []))
        #expect(!report.allPassed)
        #expect(report.failedProperties.count == ConformanceProperty.allCases.count)
    }

    @Test("With one success body, concurrent loads cannot be told apart: the property is unchecked, not passed")
    func oneBodyLeavesConcurrencyUnchecked() async {
        let one = ConformanceFixtures(success: [.init(url: URL(string: "mem://small")!, body: MemoryHandler.small)])
        let report = await ConformanceSuite.run(MemoryHandler.self, fixtures: one)
        guard case .skipped(let why)? = report.outcome(of: .concurrentLoadsAreCorrect) else {
            Issue.record("concurrentLoadsAreCorrect: \(String(describing: report.outcome(of: .concurrentLoadsAreCorrect)))")
            return
        }
        #expect(why.contains("two at least"), "\(why)")
        #expect(report.allPassed && !report.allChecked, "\(report)")
    }

    @Test("Every property has a broken handler that the suite catches, and only for that property")
    func everyPropertyIsProven() {
        #expect(Set(brokenHandlers.map(\.1)) == Set(ConformanceProperty.allCases))
    }

    @Test("Each broken handler fails exactly the property it breaks", arguments: brokenHandlers.indices)
    func brokenHandlerFailsItsProperty(index: Int) async throws {
        let (handler, property) = brokenHandlers[index]
        // BlocksInStart blocks the first start after this (any earlier run in the process has used its block).
        MemoryHandler.blockedStart.store(false, ordering: .relaxed)
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(handler, fixtures: memFixtures) }
        print(report)
        #expect(report.failedProperties == [property], "\(report)")
        if case .failed(let message)? = report.outcome(of: property) {
            #expect(!message.isEmpty)
        }
    }
}
