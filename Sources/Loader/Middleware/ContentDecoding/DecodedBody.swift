import FoundationEssentials
import Synchronization

/// A compressed body, decoded as it is read: one piece of at most 64 KiB per step, so memory stays
/// bounded however far the data expands.
struct DecodedBody: AsyncSequence, Sendable {
    typealias Element = Data

    let encoded: ResponseBody
    let coding: BodyCoding
    let url: URL
    let settings: ContentDecoding
    /// The body's bytes as they came in, which every layer of a stack weighs its output against.
    let received: ReceivedBytes
    /// Whether this layer reads the body as it came in (the innermost one), and so counts it.
    let countsReceived: Bool

    func makeAsyncIterator() -> Iterator {
        Iterator(source: encoded.makeAsyncIterator(), decoder: coding.makeDecoder(), url: url, settings: settings,
                 received: received, countsReceived: countsReceived)
    }

    struct Iterator: AsyncIteratorProtocol {
        var source: ResponseBody.Iterator
        let decoder: any BodyDecoder
        let url: URL
        let settings: ContentDecoding
        let received: ReceivedBytes
        let countsReceived: Bool
        var sourceEnded = false

        /// The next decoded piece; after the end, or after a failure (a corrupt stream, a limit passed), `nil` for
        /// good: a reader that catches the error and reads on must not get the rest of a bomb.
        mutating func next() async throws -> Data? {
            do {
                return try await step()
            } catch {
                sourceEnded = true
                throw error
            }
        }

        private mutating func step() async throws -> Data? {
            guard !sourceEnded else { return nil }
            while true {
                if let piece = try decodeNext() { return piece }
                if sourceEnded { return nil }
                if let chunk = try await source.next() {
                    if countsReceived { received.add(chunk.count) }
                    decoder.feed(chunk)
                } else {
                    sourceEnded = true
                    do { try decoder.finish() } catch { throw failure(error) }
                    return nil
                }
            }
        }

        private func decodeNext() throws -> Data? {
            let piece: Data?
            do { piece = try decoder.nextOutput() } catch { throw failure(error) }
            guard let piece else { return nil }
            try checkLimits()
            return piece
        }

        private func checkLimits() throws {
            if let reason = settings.limitPassed(decoded: decoder.totalOut, received: received.count) {
                throw LoadError(.dataLengthExceedsMaximum, url: url, reason: reason)
            }
        }

        private func failure(_ error: DecodingFailure) -> LoadError {
            switch error {
            case .corrupt(let message):
                return LoadError(.cannotDecodeContentData, url: url, reason: "the compressed body is corrupt: \(message)")
            case .truncated:
                return LoadError(.cannotDecodeContentData, url: url, reason: "the compressed body ended before its compressed stream did")
            }
        }
    }
}

/// A count of a body's bytes as they came in, shared by the layers that decode it (read in turn by one
/// reader, so relaxed atomics are enough; atomic so that the layers may be `Sendable`).
final class ReceivedBytes: Sendable {
    private let total = Atomic<Int>(0)

    var count: Int { total.load(ordering: .relaxed) }

    func add(_ bytes: Int) {
        total.wrappingAdd(bytes, ordering: .relaxed)
    }
}
