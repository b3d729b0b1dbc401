import FoundationEssentials

/// A compressed body, decoded as it is read: one piece of at most 64 KiB per step, so memory stays
/// bounded however far the data expands.
struct DecodedBody: AsyncSequence, Sendable {
    typealias Element = Data

    let encoded: ResponseBody
    let format: Inflater.Format
    let url: URL
    let settings: ContentDecoding

    func makeAsyncIterator() -> Iterator {
        Iterator(source: encoded.makeAsyncIterator(), inflater: Inflater(format: format), url: url, settings: settings)
    }

    struct Iterator: AsyncIteratorProtocol {
        var source: ResponseBody.Iterator
        let inflater: Inflater
        let url: URL
        let settings: ContentDecoding
        var sourceEnded = false

        mutating func next() async throws -> Data? {
            while true {
                if let piece = try decodeNext() { return piece }
                if sourceEnded { return nil }
                if let chunk = try await source.next() {
                    inflater.feed(chunk)
                } else {
                    sourceEnded = true
                    do { try inflater.finish() } catch { throw failure(error) }
                    return nil
                }
            }
        }

        private func decodeNext() throws -> Data? {
            let piece: Data?
            do { piece = try inflater.nextOutput() } catch { throw failure(error) }
            guard let piece else { return nil }
            try checkLimits()
            return piece
        }

        private func checkLimits() throws {
            let decoded = inflater.totalOut
            if let maximum = settings.maximumDecodedSize, decoded > maximum {
                throw LoadError(.dataLengthExceedsMaximum, url: url, reason: "the decoded body passed the limit of \(maximum) bytes")
            }
            if let ratio = settings.maximumRatio, decoded > settings.ratioFloor, decoded / Swift.max(inflater.totalIn, 1) > ratio {
                throw LoadError(
                    .dataLengthExceedsMaximum, url: url,
                    reason: "\(inflater.totalIn) compressed bytes expanded to over \(decoded): more than \(ratio)× (a decompression bomb?)"
                )
            }
        }

        private func failure(_ error: Inflater.Failure) -> LoadError {
            switch error {
            case .corrupt(let message):
                return LoadError(.cannotDecodeContentData, url: url, reason: "the compressed body is corrupt: \(message)")
            case .truncated:
                return LoadError(.cannotDecodeContentData, url: url, reason: "the compressed body ended before its compressed stream did")
            }
        }
    }
}
