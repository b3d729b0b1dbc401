import Foundation
import Loader

/// The class-level checks: which requests the handler takes, canonical forms, and cache equivalence.
enum RequestChecks {
    static func run(_ handlerClass: SchemeHandler.Type, _ fixtures: ConformanceFixtures, into report: inout ConformanceReport) {
        var urls = fixtures.success.map(\.url)
        urls += [fixtures.missing, fixtures.large, fixtures.slow, fixtures.redirect].compactMap { $0 }
        let refused = urls.filter { !handlerClass.canInit(with: LoadRequest(url: $0)) }
        // What a session does: a registry asks a handler only about the schemes it lists.
        let registry = SchemeRegistry(handlers: [handlerClass])
        let unrouted = urls.filter { registry.handlerClass(for: LoadRequest(url: $0)) != handlerClass }
        let foreign = URL(string: "conformance-other-scheme-\(UInt32.random(in: 0...UInt32.max))://host/path")!
        if !refused.isEmpty {
            report.record(.acceptsItsRequests, .failed("canInit(with:) refused its own fixture \(refused[0].absoluteString)"))
        } else if !unrouted.isEmpty {
            report.record(.acceptsItsRequests, .failed(
                "a registry holding the handler does not route \(unrouted[0].absoluteString) to it: is its scheme missing from supportedSchemes (\(handlerClass.supportedSchemes.sorted()))?"))
        } else if handlerClass.canInit(with: LoadRequest(url: foreign)) {
            report.record(.acceptsItsRequests, .failed("canInit(with:) accepted \(foreign.absoluteString), a scheme it does not serve"))
        } else {
            report.record(.acceptsItsRequests, .passed)
        }

        report.record(.canonicalRequestIsIdempotent, canonicalIdempotence(handlerClass, urls))
        report.record(.cacheEquivalenceIsSound, cacheEquivalence(handlerClass, urls, fixtures))
    }

    private static func canonicalIdempotence(_ handlerClass: SchemeHandler.Type, _ urls: [URL]) -> ConformanceReport.Outcome {
        for url in urls {
            let once = handlerClass.canonicalRequest(for: LoadRequest(url: url))
            let twice = handlerClass.canonicalRequest(for: once)
            if twice.url != once.url || twice.method != once.method || twice.headerFields != once.headerFields {
                return .failed("canonicalRequest(for:) changed its own result: \(once.url.absoluteString) became \(twice.url.absoluteString)")
            }
        }
        return .passed
    }

    /// What a cache relies on: a request finds its own entry (also when stored under its canonical form), the
    /// answer does not depend on which request is the stored one, and one resource's body is never served for
    /// another's.
    private static func cacheEquivalence(_ handlerClass: SchemeHandler.Type, _ urls: [URL], _ fixtures: ConformanceFixtures) -> ConformanceReport.Outcome {
        let equivalent = handlerClass.requestIsCacheEquivalent
        for url in urls {
            let request = LoadRequest(url: url)
            let canonical = handlerClass.canonicalRequest(for: request)
            if !equivalent(request, request) {
                return .failed("requestIsCacheEquivalent(_:to:) is false for \(url.absoluteString) and itself")
            }
            // Left to canonicalRequestIsIdempotent when canonicalizing twice moves the request again (the default
            // comparison canonicalizes both sides, so it would fail here for that one fault too).
            let settled = handlerClass.canonicalRequest(for: canonical).url == canonical.url
            if settled, !equivalent(request, canonical) || !equivalent(canonical, request) {
                return .failed("requestIsCacheEquivalent(_:to:) is false for \(url.absoluteString) and its canonical form \(canonical.url.absoluteString)")
            }
        }
        for (i, a) in urls.enumerated() {
            for b in urls[(i + 1)...] where equivalent(LoadRequest(url: a), LoadRequest(url: b)) != equivalent(LoadRequest(url: b), LoadRequest(url: a)) {
                return .failed("requestIsCacheEquivalent(_:to:) gives one answer for \(a.absoluteString) and \(b.absoluteString) and another the other way round")
            }
        }
        for (i, a) in fixtures.success.enumerated() {
            for b in fixtures.success[(i + 1)...] where a.body != b.body && equivalent(LoadRequest(url: a.url), LoadRequest(url: b.url)) {
                return .failed(
                    "requestIsCacheEquivalent(_:to:) pairs \(a.url.absoluteString) with \(b.url.absoluteString), whose bodies differ: a cache would answer one with the other's")
            }
        }
        return .passed
    }
}
