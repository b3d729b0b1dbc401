import Foundation
import Loader

/// The class-level checks: which requests the handler takes, and canonical forms.
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

        for url in urls {
            let once = handlerClass.canonicalRequest(for: LoadRequest(url: url))
            let twice = handlerClass.canonicalRequest(for: once)
            if twice.url != once.url || twice.method != once.method || twice.headerFields != once.headerFields {
                report.record(.canonicalRequestIsIdempotent, .failed(
                    "canonicalRequest(for:) changed its own result: \(once.url.absoluteString) became \(twice.url.absoluteString)"))
                return
            }
        }
        report.record(.canonicalRequestIsIdempotent, .passed)
    }
}
