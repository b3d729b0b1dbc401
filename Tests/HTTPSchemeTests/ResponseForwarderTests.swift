import Foundation
@testable import HTTPScheme
import Loader
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// A handler's events, as text.
private final class EventLog: SchemeHandlerClient {
    private let log = Locked<[String]>([])
    var events: [String] { log.withLock { $0 } }
    private func record(_ event: String) { log.withLock { $0.append(event) } }

    func handler(_ handler: SchemeHandler, didReceive response: LoadResponse) { record("response \(response.status?.code ?? 0)") }
    func handler(_ handler: SchemeHandler, wasRedirectedTo request: LoadRequest, redirectResponse response: LoadResponse) { record("redirect") }
    func handler(_ handler: SchemeHandler, didLoad data: Data) { record("data " + String(decoding: data, as: UTF8.self)) }
    func handler(_ handler: SchemeHandler, deliver data: Data) async throws { record("data " + String(decoding: data, as: UTF8.self)) }
    func handler(_ handler: SchemeHandler, whenReadyForData callback: @escaping @Sendable () -> Void) {}
    func handler(_ handler: SchemeHandler, didSendBodyData totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {}
    func handlerDidFinishLoading(_ handler: SchemeHandler) { record("finished") }
    func handler(_ handler: SchemeHandler, didFailWith error: LoadError) { record("failed") }
}

/// The last handler of a connection's pipeline, driven directly on an embedded channel, where the order of
/// events within one call can be scripted exactly.
@Suite("http: the response forwarder (an embedded channel)")
struct ResponseForwarderTests {
    /// A forwarder at the end of an embedded channel's pipeline.
    private func forwarderOnChannel() throws -> (EmbeddedChannel, ResponseForwarder) {
        let channel = EmbeddedChannel()
        let forwarder = ResponseForwarder(handshake: nil)
        try channel.pipeline.syncOperations.addHandler(forwarder)
        return (channel, forwarder)
    }

    /// An exchange whose end is noted in `outcomes` as "NAME true" (the response ended) or "NAME false".
    private func exchange(_ name: String, log: EventLog, outcomes: Locked<[String]>) -> HTTPExchange {
        let request = LoadRequest(url: URL(string: "http://127.0.0.1/\(name)")!)
        let handler = HTTPSchemeHandler(request: request, cachedResponse: nil, client: log)
        return HTTPExchange(url: request.url, isHead: false, handler: handler) { result in
            outcomes.withLock { $0.append("\(name) \(result.isSuccess)") }
        }
    }

    @Test("A small response arrives whole; the next exchange on the connection, failing during the hand-off, gets none of it")
    func handOffFailure() throws {
        let (channel, forwarder) = try forwarderOnChannel()
        let firstLog = EventLog(), secondLog = EventLog()
        let outcomes = Locked<[String]>([])
        let first = exchange("first", log: firstLog, outcomes: outcomes)
        let second = exchange("second", log: secondLog, outcomes: outcomes)
        try forwarder.start(first)
        forwarder.onResponseEnd = { _ in
            // The pool hands the connection to a queued request at once; its write finds the connection
            // reset, which closes the channel within the call.
            try? forwarder.start(second)
            channel.pipeline.syncOperations.fireChannelInactive()
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "5")
        // One read burst: head, body and end, then one read-complete (writeInbound would end a burst after each).
        let pipeline = channel.pipeline.syncOperations
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "hello"))))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.end(nil)))
        pipeline.fireChannelReadComplete()

        #expect(firstLog.events == ["response 200", "data hello", "finished"])
        #expect(secondLog.events.isEmpty, "the next exchange was given the first one's events")
        channel.embeddedEventLoop.run()
        #expect(outcomes.withLock { $0 }.sorted() == ["first true", "second false"])
    }

    @Test("Tiny body parts of one read (a body sent in one-byte chunks) reach the reader as one chunk, not one each")
    func tinyPartsGathered() throws {
        let (channel, forwarder) = try forwarderOnChannel()
        let log = EventLog()
        let outcomes = Locked<[String]>([])
        try forwarder.start(exchange("tiny", log: log, outcomes: outcomes))
        let pipeline = channel.pipeline.syncOperations
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok))))
        pipeline.fireChannelReadComplete()
        for _ in 0..<1000 { pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "x")))) }
        pipeline.fireChannelReadComplete()
        // A large part between small ones is handed on in its own buffer; the small ones around it gather.
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "a"))))
        let large = String(repeating: "L", count: PendingBody.smallestShared)
        var shared = ByteBuffer()
        shared.writeString(large)
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(shared)))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "b"))))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "c"))))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.end(nil)))
        pipeline.fireChannelReadComplete()
        #expect(log.events == ["response 200", "data " + String(repeating: "x", count: 1000), "data a", "data " + large, "data bc", "finished"])
    }

    @Test("A response followed in its burst by more parts: it stands whole, and its connection is not reused")
    func partsAfterTheEnd() throws {
        let (channel, forwarder) = try forwarderOnChannel()
        let log = EventLog()
        let outcomes = Locked<[String]>([])
        let reusable = Locked<[Bool]>([])
        forwarder.onResponseEnd = { value in reusable.withLock { $0.append(value) } }
        try forwarder.start(exchange("first", log: log, outcomes: outcomes))
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "5")
        let head = HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))
        let pipeline = channel.pipeline.syncOperations
        pipeline.fireChannelRead(NIOAny(head))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "first"))))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.end(nil)))
        // The start of a second response nobody asked for, in the same burst.
        pipeline.fireChannelRead(NIOAny(head))
        pipeline.fireChannelReadComplete()
        #expect(log.events == ["response 200", "data first", "finished"])
        #expect(reusable.withLock { $0 } == [false], "a connection that spoke unasked was handed back as reusable")
        #expect(outcomes.withLock { $0 } == ["first true"])
    }

    @Test("Body parts that come with the head are handed on as one chunk; later small parts of a read as one too, in order")
    func burstsOfParts() throws {
        let (channel, forwarder) = try forwarderOnChannel()
        let log = EventLog()
        let outcomes = Locked<[String]>([])
        try forwarder.start(exchange("parts", log: log, outcomes: outcomes))
        let pipeline = channel.pipeline.syncOperations
        // A chunked response: the head and two parts in the first burst, two parts and the end in the second.
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok))))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "hel"))))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "lo "))))
        pipeline.fireChannelReadComplete()
        #expect(log.events == ["response 200", "data hello "])
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "wor"))))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.body(ByteBuffer(string: "ld"))))
        pipeline.fireChannelRead(NIOAny(HTTPClientResponsePart.end(nil)))
        // The end waits for the end of its burst, where anything after it would have been seen.
        #expect(log.events == ["response 200", "data hello "])
        pipeline.fireChannelReadComplete()
        #expect(log.events == ["response 200", "data hello ", "data world", "finished"])
        #expect(outcomes.withLock { $0 } == ["parts true"])

        // A burst with the head alone hands on the head alone: no empty chunk.
        let headOnly = EventLog()
        let second = EmbeddedChannel()
        let secondForwarder = ResponseForwarder(handshake: nil)
        try second.pipeline.syncOperations.addHandler(secondForwarder)
        try secondForwarder.start(exchange("head", log: headOnly, outcomes: outcomes))
        second.pipeline.syncOperations.fireChannelRead(NIOAny(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok))))
        second.pipeline.syncOperations.fireChannelReadComplete()
        #expect(headOnly.events == ["response 200"])
    }

    @Test("An exchange reports its end once: a failure after the response ended (a late abandon) is not heard")
    func endReportedOnce() {
        let outcomes = Locked<[String]>([])
        let ended = exchange("ended", log: EventLog(), outcomes: outcomes)
        ended.succeed()
        ended.fail(ChannelError.ioOnClosedChannel)
        ended.succeed()
        let failed = exchange("failed", log: EventLog(), outcomes: outcomes)
        failed.fail(ChannelError.ioOnClosedChannel)
        failed.succeed()
        #expect(outcomes.withLock { $0 } == ["ended true", "failed false"])
    }

    @Test("A request given a connection the server closed while idle fails as not sent, which lets it go again whatever its method")
    func closedBeforeStart() throws {
        let (channel, forwarder) = try forwarderOnChannel()
        channel.pipeline.syncOperations.fireChannelInactive()
        let outcomes = Locked<[String]>([])
        #expect {
            try forwarder.start(exchange("late", log: EventLog(), outcomes: outcomes))
        } throws: { error in
            let error = error as? LoadError
            return error?.code == .networkConnectionLost && error?.underlying is RequestNotSent
        }
    }
}

private extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}
