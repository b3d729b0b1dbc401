import Foundation
import HTTPTypes
import Loader

/// Checks through a real session: errors, concurrency, middleware, cancellation's resources.
enum SessionChecks {
    /// A session of the handler alone whose loads end within the fixtures' bounds: no progress for
    /// ``ConformanceFixtures/timeout`` seconds, or `budget` seconds in all (the timeout unless given), fails
    /// a load with `timedOut`, so that a handler that trickles forever cannot hold the suite.
    static func session(_ handlerClass: SchemeHandler.Type, _ fixtures: ConformanceFixtures, budget: TimeInterval? = nil,
                        middleware: [any LoadMiddleware] = []) -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [handlerClass]
        configuration.handlerOptions = fixtures.handlerOptions
        configuration.middleware = middleware
        configuration.redirectLimit = 0
        configuration.timeoutIntervalForRequest = fixtures.timeout
        configuration.timeoutIntervalForResource = budget ?? fixtures.timeout
        return LoaderSession(configuration: configuration)
    }

    static func run(_ handlerClass: SchemeHandler.Type, _ fixtures: ConformanceFixtures, into report: inout ConformanceReport) async {
        let plain = session(handlerClass, fixtures)

        if let missing = fixtures.missing {
            do {
                let (data, _) = try await plain.data(from: missing)
                report.record(.missingResourceFails, .failed("loading \(missing.absoluteString) succeeded with \(data.count) bytes instead of failing with \(fixtures.missingErrorCode)"))
            } catch let error as LoadError {
                if error.code != fixtures.missingErrorCode {
                    report.record(.missingResourceFails, .failed("loading \(missing.absoluteString) failed with \(error.code), not \(fixtures.missingErrorCode): \(error)"))
                } else if error.url != missing, error.url != handlerClass.canonicalRequest(for: LoadRequest(url: missing)).url {
                    report.record(.missingResourceFails, .failed("the error for \(missing.absoluteString) names \(error.url?.absoluteString ?? "no URL")"))
                } else {
                    report.record(.missingResourceFails, .passed)
                }
            } catch {
                report.record(.missingResourceFails, .failed("loading \(missing.absoluteString) threw \(error), not a LoadError"))
            }
        } else {
            report.record(.missingResourceFails, .skipped("no missing fixture"))
        }

        // 100 concurrent loads, alternating fixtures so mixed-up loads show. Each is compared with a load
        // of the same URL made alone, so that this checks independence, not the body (checked above).
        let resources = fixtures.success
        var alone: [Data?] = []
        for resource in resources { alone.append(try? await plain.data(from: resource.url).0) }
        let baselines = alone
        let wrong = await withTaskGroup(of: String?.self) { group in
            for index in 0..<100 {
                let resource = resources[index % resources.count]
                let baseline = baselines[index % resources.count]
                group.addTask {
                    do {
                        let (data, _) = try await plain.data(from: resource.url)
                        return data == baseline ? nil : "load \(index) of \(resource.url.absoluteString) gave \(data.count) bytes that differ from a load made alone"
                    } catch {
                        // A URL that fails alone too is the other checks' to report. One that loads alone and
                        // fails beside others (a broken contract included: it may show only when loads
                        // overlap) is this check's.
                        return baseline == nil ? nil : "load \(index) of \(resource.url.absoluteString) failed: \(error)"
                    }
                }
            }
            var wrong: [String] = []
            for await problem in group { if let problem { wrong.append(problem) } }
            return wrong
        }
        // Mixed-up loads show only between bodies that differ: with one (or all alike) every load matches.
        let bodies = Set(baselines.compactMap { $0 }).count
        if let first = wrong.first {
            report.record(.concurrentLoadsAreCorrect, .failed("\(wrong.count) of 100 concurrent loads were wrong, e.g. \(first)"))
        } else if bodies < 2 {
            report.record(.concurrentLoadsAreCorrect, .skipped("the success fixtures gave \(bodies) different bodies; two at least are needed to see loads mixed up (none of the 100 failed)"))
        } else {
            report.record(.concurrentLoadsAreCorrect, .passed)
        }

        // Through a pass-through middleware, the same response.
        do {
            let url = resources[0].url
            let (direct, directResponse) = try await plain.data(from: url)
            let (wrapped, wrappedResponse) = try await session(handlerClass, fixtures, middleware: [PassThrough()]).data(from: url)
            let differing = fieldsDiffering(directResponse.headerFields, wrappedResponse.headerFields, ignoring: fixtures.volatileFields)
            if direct != wrapped {
                report.record(.middlewareIsTransparent, .failed("two loads of \(url.absoluteString), one through middleware, gave different bodies (\(direct.count) and \(wrapped.count) bytes)"))
            } else if directResponse.status != wrappedResponse.status || !differing.isEmpty {
                report.record(.middlewareIsTransparent, .failed("two loads of \(url.absoluteString), one through middleware, gave different responses (fields \(differing.joined(separator: ", ")))"))
            } else {
                report.record(.middlewareIsTransparent, .passed)
            }
        } catch let error as LoadError where error.code == .handlerContractViolation {
            report.record(.middlewareIsTransparent, .skipped("the load broke the event contract (see the event properties)"))
        } catch {
            report.record(.middlewareIsTransparent, .failed("loading \(resources[0].url.absoluteString) failed: \(error)"))
        }
    }

    /// Names of fields that differ, ignoring those that legitimately change between loads.
    private static func fieldsDiffering(_ a: HTTPFields, _ b: HTTPFields, ignoring volatile: Set<String>) -> [String] {
        let names = Set(a.map { $0.name.canonicalName } + b.map { $0.name.canonicalName }).subtracting(volatile)
        return names.sorted().filter { name in
            let field = HTTPField.Name(name)!
            return a[values: field] != b[values: field]
        }
    }
}

/// A middleware that changes nothing but re-wraps the body chunk by chunk.
struct PassThrough: LoadMiddleware {
    func load(_ request: LoadRequest, context: LoadContext, next: LoadNext) async throws -> LoadResult {
        var result = try await next(request)
        result.body = ResponseBody(Rewrapped(base: result.body))
        return result
    }

    struct Rewrapped: AsyncSequence, Sendable {
        typealias Element = Data
        let base: ResponseBody
        func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator()) }
        struct Iterator: AsyncIteratorProtocol {
            var base: ResponseBody.Iterator
            mutating func next() async throws -> Data? { try await base.next().map { Data($0) } }
        }
    }
}
