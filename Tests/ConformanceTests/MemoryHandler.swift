import Crypto
import Foundation
import HTTPTypes
import Loader
import Synchronization

/// What a `mem:` handler does wrong, one defect per broken handler.
enum Defect: Sendable {
    case none
    case acceptsEveryScheme
    case canonicalAppendsSlash
    case dataBeforeResponse
    case corruptsBody
    case wrongContentLength
    case finishesTwice
    case dataAfterFinish
    case followsRedirect
    case keepsSendingAfterStop
    /// As ``keepsSendingAfterStop``, with no pause between chunks: all of it well inside the stop's grace.
    case keepsSendingAfterStopQuickly
    case leaksDescriptor
    /// Each load of a small fixture opens /dev/null and never closes it (a file left open on the success path).
    case leaksDescriptorOnFinish
    case failsOnLateStop
    case sharesStateAcrossLoads
    case buffersWholeBody
    case missingIsSuccess
    case varyingHeader
    case blocksThreads
    case tricklesForever
    case breaksContractWhenConcurrent
    case failsThenFinishes
    case redirectNeverEnds
    case schemeNotListed
    case ignoresBackpressure
    /// As ``ignoresBackpressure``, at a network's pace (a chunk every 5 ms, about 50 MB/s): the reader's one-second pause
    /// of the memory check leaves it under the bound.
    case ignoresBackpressureSlowly
    /// Waits for the reader (whenReadyForData), but 40 ms at most, then sends anyway: at full speed while the reader
    /// keeps up, at about 6 MB/s (a common network's pace) while it does not.
    case waitsForReaderBriefly
    /// Calls every two requests of the scheme cache-equivalent (say, comparing schemes only).
    case everythingCacheEquivalent
    /// Reports its transaction's metrics after the response, when asked for them.
    case transactionAfterResponse
    /// Reports its transaction's metrics (before the response) whether or not the client collects them.
    case transactionUnasked
    /// stopLoading() of the large fixture's load waits two seconds before it stops it (as one waiting for a worker would).
    case blocksInStop
    /// The first startLoading() in the process waits 1.5 s before it starts the load (as one that connects first would).
    case blocksInStart
    /// startLoading() blocks for a minute: the suite must give up on it and return.
    case hangsInStart
    /// stopLoading() blocks for a minute.
    case hangsInStop
    /// The large body ends 10 MiB short of its announced length, finished as if whole.
    case truncatesLarge
    /// One byte in the middle of the large body is another, its length right.
    case corruptsLarge
    /// Tells upload progress from a timer thread of its own, every 0.1 ms, while its task sends the response and
    /// body: calls to the client from two threads at once.
    case reportsFromTwoThreads
    /// Reports a redirect (to itself) and then its response on the success URLs: two responses, which the loader refuses.
    case redirectsThenResponds
    /// Not a defect: a handler whose waits ignore cancellation and that stops when `deliver` throws, as the
    /// client's documentation allows.
    case stopsWhenDeliverThrows
    /// Not a defect: as ``stopsWhenDeliverThrows``, its task pausing 400 ms between the response and the first chunk
    /// (as one a loaded machine let run late), so that its first delivery after a stop comes long after it.
    case learnsOfStopLate
    /// Calls `deliver` with `try?`, ignoring the throw that tells it of the stop, and goes on delivering.
    case ignoresDeliverThrows
    /// Not a defect: the first load of the large fixture in a session opens a descriptor that stays, once the load
    /// ends (cancelled or not), for the session's later loads, which use it, and `sessionDidEnd` closes it: a
    /// multiplexed connection, as HTTP/2's.
    case keepsDescriptorForSession
    /// As ``keepsDescriptorForSession``, and a small load in a session that holds such a descriptor gives a corrupt
    /// body: a connection kept mid-body, its next response read from the middle of the last.
    case keptDescriptorCorruptsNextLoad
    /// Each load of the large fixture opens a descriptor of its own and parks it until the session ends: closed in the
    /// end, but one more for every cancel while the session lives.
    case parksDescriptorPerLoad
    /// Not a defect: every load keeps one descriptor for its session and host (its origin), used again by the later
    /// loads of that origin and closed at the session's end: a pool of one multiplexed connection per origin.
    case keepsDescriptorPerOrigin
}

/// The reference handler of the suite's own tests: `mem://small`, `mem://other`, `mem://large`,
/// `mem://slow`, `mem://redirect`, `mem://missing`. Subclasses break exactly one property each.
class MemoryHandler: SchemeHandler, @unchecked Sendable {
    // @unchecked: no stored state; the static below is the deliberate defect of one subclass, and guarded.
    class var defect: Defect { .none }
    override class var supportedSchemes: Set<String> {
        switch defect {
        case .acceptsEveryScheme: return []
        // The defect: canInit takes mem: URLs, but the scheme is not listed, so no registry routes them here.
        case .schemeNotListed: return ["mem-typo"]
        default: return ["mem"]
        }
    }

    override class func canInit(with request: LoadRequest) -> Bool {
        switch defect {
        case .acceptsEveryScheme: return true
        case .schemeNotListed: return request.scheme == "mem"
        default: return super.canInit(with: request)
        }
    }

    override class func canonicalRequest(for request: LoadRequest) -> LoadRequest {
        guard defect == .canonicalAppendsSlash else { return request }
        var request = request
        request.url = URL(string: request.url.absoluteString + "/")!
        return request
    }

    override class func requestIsCacheEquivalent(_ a: LoadRequest, to b: LoadRequest) -> Bool {
        guard defect == .everythingCacheEquivalent else { return super.requestIsCacheEquivalent(a, to: b) }
        return a.scheme == b.scheme
    }

    static let small = Data("a small body of the mem: scheme\n".utf8)
    static let other = Data(repeating: 0x5A, count: 100_000)
    static let largeSize = 160 * 1024 * 1024
    static let chunk = Data((0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
    /// The large body's SHA-256, as `sha256sum` prints it: the chunk, over and over.
    static let largeSHA256: String = {
        var hasher = SHA256()
        for _ in 0..<(largeSize / chunk.count) { hasher.update(data: chunk) }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }()
    static let loadCount = Atomic<Int>(0)
    static let shared = Locked<Data>(Data())
    static let inFlight = Atomic<Int>(0)

    private var defect: Defect { Self.defect }

    override func load() async throws {
        let url = request.url
        let host = url.host ?? url.absoluteString.split(separator: ":").last.map(String.init) ?? ""
        if defect == .keepsDescriptorPerOrigin, let session = request.sessionIdentifier {
            let key = OriginKey(session: session, host: host)
            if Self.keptByOrigin.withLock({ $0[key] == nil }) {
                let descriptor = open("/dev/null", O_RDONLY)
                if let extra = Self.keptByOrigin.withLock({ kept -> Int32? in
                    if kept[key] != nil { return descriptor }
                    kept[key] = descriptor
                    return nil
                }) { close(extra) }
            }
        }
        switch host {
        case "missing":
            if defect == .missingIsSuccess {
                return respond(Data("404 page".utf8), url: url)
            }
            if defect == .failsThenFinishes {
                // The defect: a failure, then a finish as well.
                client.handler(self, didFailWith: LoadError(.fileDoesNotExist, url: url, reason: "no such mem: resource"))
                client.handlerDidFinishLoading(self)
                return
            }
            throw LoadError(.fileDoesNotExist, url: url, reason: "no such mem: resource")
        case "redirect":
            if defect == .followsRedirect {
                return respond(Self.small, url: url)
            }
            client.handler(self, wasRedirectedTo: LoadRequest(url: URL(string: "mem://small")!), redirectResponse: LoadResponse(url: url, mimeType: nil, expectedContentLength: 0))
            if defect == .redirectNeverEnds {
                // The defect: the redirect is reported, and then the load never ends.
                try await Task.sleep(for: .seconds(3600))
            }
        case "large":
            try await sendLarge(url: url)
        case "slow" where defect == .tricklesForever:
            // The defect: a byte every 100 ms, never an end. Only a bounded wait can report it.
            client.handler(self, didReceive: LoadResponse(url: url, mimeType: "text/plain", expectedContentLength: nil))
            while true {
                try await Task.sleep(for: .milliseconds(100))
                try await client.handler(self, deliver: Data("t".utf8))
            }
        case "slow":
            client.handler(self, didReceive: LoadResponse(url: url, mimeType: "text/plain", expectedContentLength: 10))
            for _ in 0..<10 {
                if defect == .blocksThreads { usleep(60_000) } else { try await Task.sleep(for: .milliseconds(60)) }
                try await client.handler(self, deliver: Data("s".utf8))
            }
        case "other":
            try await sendSmall(Self.other, url: url)
        default:
            try await sendSmall(Self.small, url: url)
        }
    }

    private func respond(_ body: Data, url: URL) {
        client.handler(self, didReceive: LoadResponse(url: url, mimeType: "text/plain", expectedContentLength: Int64(body.count)))
        client.handler(self, didLoad: body)
    }

    /// The descriptors kept for each session's later loads (``Defect/keepsDescriptorForSession``), by its identifier.
    static let keptDescriptors = Locked<[Int: [Int32]]>([:])

    override class func sessionDidEnd(_ identifier: Int) {
        Self.keptDescriptors.withLock { $0.removeValue(forKey: identifier) }?.forEach { close($0) }
        let origins = Self.keptByOrigin.withLock { kept in
            let ended = kept.filter { $0.key.session == identifier }
            for key in ended.keys { kept[key] = nil }
            return Array(ended.values)
        }
        origins.forEach { close($0) }
    }

    /// The descriptor kept for each session and host (``Defect/keepsDescriptorPerOrigin``).
    static let keptByOrigin = Locked<[OriginKey: Int32]>([:])

    struct OriginKey: Hashable {
        let session: Int
        let host: String
    }

    /// Keeps `descriptor` for the load's session until it ends, or closes it when the load has none (driven directly).
    private func keepForSession(_ descriptor: Int32) {
        guard let session = request.sessionIdentifier else {
            close(descriptor)
            return
        }
        Self.keptDescriptors.withLock { $0[session, default: []].append(descriptor) }
    }

    private func sendSmall(_ body: Data, url: URL) async throws {
        if defect == .leaksDescriptorOnFinish { _ = open("/dev/null", O_RDONLY) }
        if defect == .keptDescriptorCorruptsNextLoad, let session = request.sessionIdentifier,
           Self.keptDescriptors.withLock({ $0[session] != nil }) {
            return respond(Data(body.reversed()), url: url)
        }
        var response = LoadResponse(url: url, mimeType: "text/plain", expectedContentLength: Int64(body.count + (defect == .wrongContentLength ? 1 : 0)))
        if defect == .varyingHeader {
            response.headerFields[HTTPField.Name("X-Load")!] = String(Self.loadCount.wrappingAdd(1, ordering: .relaxed).newValue)
        }
        var body = body
        let counted = defect == .breaksContractWhenConcurrent
        if counted { Self.inFlight.wrappingAdd(1, ordering: .relaxed) }
        defer { if counted { Self.inFlight.wrappingSubtract(1, ordering: .relaxed) } }
        var overlapping = false
        if counted {
            // In flight for a few milliseconds, so that loads started together overlap.
            try await Task.sleep(for: .milliseconds(5))
            overlapping = Self.inFlight.load(ordering: .relaxed) > 1
        }
        if overlapping {
            // The defect: only while another load is in flight, two responses.
            client.handler(self, didReceive: response)
            await Task.yield()
        }
        if defect == .sharesStateAcrossLoads {
            // The defect: a buffer shared by every load, read back after a suspension.
            Self.shared.withLock { $0 = body }
            await Task.yield()
            body = Self.shared.withLock { $0 }
        }
        if defect == .dataBeforeResponse { client.handler(self, didLoad: body.prefix(1)) }
        if defect == .redirectsThenResponds {
            client.handler(self, wasRedirectedTo: LoadRequest(url: url), redirectResponse: LoadResponse(url: url, mimeType: nil, expectedContentLength: 0))
        }
        if defect == .transactionUnasked {
            client.handler(self, didCollect: LoadTransactionMetrics(request: request, fetchStartDate: Date()))
        }
        if defect != .reportsFromTwoThreads { client.handler(self, didReceive: response) }
        if defect == .transactionAfterResponse, client.collectsMetrics {
            client.handler(self, didCollect: LoadTransactionMetrics(request: request, fetchStartDate: Date()))
        }
        let payload = defect == .dataBeforeResponse ? body.dropFirst() : body
        if defect == .reportsFromTwoThreads {
            try await sendWithProgressThread(response, payload)
        } else if defect == .corruptsBody, payload.count > 1 {
            try await client.handler(self, deliver: payload.prefix(payload.count / 2))
            try await client.handler(self, deliver: payload.prefix(payload.count / 2))
        } else {
            try await client.handler(self, deliver: payload)
        }
        switch defect {
        case .finishesTwice:
            client.handlerDidFinishLoading(self)
            client.handlerDidFinishLoading(self)
        case .dataAfterFinish:
            client.handlerDidFinishLoading(self)
            client.handler(self, didLoad: Data("late".utf8))
        default:
            break
        }
    }

    /// The defect of ``Defect/reportsFromTwoThreads``: the response and the body go from this task while a thread of its
    /// own tells progress (nothing sent) every 0.1 ms, from before the response until the load returns.
    private func sendWithProgressThread(_ response: LoadResponse, _ payload: Data) async throws {
        let client = self.client
        let handler: SchemeHandler = self
        let running = Atomic<Bool>(true)
        let ticker = Thread {
            while running.load(ordering: .acquiring) {
                client.handler(handler, didSendBodyData: 0, totalBytesExpectedToSend: 0)
                // Short beside the suite's 2 ms linger, so the thread is nearly always inside a report.
                usleep(100)
            }
        }
        ticker.start()
        defer { running.store(false, ordering: .releasing) }
        try await Task.sleep(for: .milliseconds(10))
        client.handler(self, didReceive: response)
        try await client.handler(self, deliver: payload)
        try await Task.sleep(for: .milliseconds(10))
    }

    private func sendLarge(url: URL) async throws {
        let descriptor = defect == .leaksDescriptor ? open("/dev/null", O_RDONLY) : -1
        client.handler(self, didReceive: LoadResponse(url: url, mimeType: "application/octet-stream", expectedContentLength: Int64(Self.largeSize)))
        if defect == .keepsDescriptorForSession || defect == .keptDescriptorCorruptsNextLoad || defect == .parksDescriptorPerLoad {
            // One per session, used again by its later loads; for the defect, one more per load.
            let session = request.sessionIdentifier
            let reused = defect != .parksDescriptorPerLoad && session.map { id in Self.keptDescriptors.withLock { $0[id] != nil } } == true
            if !reused { keepForSession(open("/dev/null", O_RDONLY)) }
            for _ in 0..<(Self.largeSize / Self.chunk.count) { try await client.handler(self, deliver: Self.chunk) }
            return
        }
        if defect == .ignoresBackpressure || defect == .ignoresBackpressureSlowly {
            // The defect: chunks pushed with didLoad every millisecond (about 250 MB/s), never asking
            // whenReadyForData; slower than a reader at full speed, faster than one that stops.
            var sent = 0
            while sent < Self.largeSize, !Task.isCancelled {
                // A fresh copy each time, as bytes read from anywhere would be (shared storage costs nothing).
                client.handler(self, didLoad: Self.chunk.withUnsafeBytes { Data($0) })
                sent += Self.chunk.count
                try await Task.sleep(for: .milliseconds(defect == .ignoresBackpressure ? 1 : 5))
            }
            return
        }
        if defect == .waitsForReaderBriefly {
            var sent = 0
            while sent < Self.largeSize, !Task.isCancelled {
                client.handler(self, didLoad: Self.chunk.withUnsafeBytes { Data($0) })
                sent += Self.chunk.count
                // The defect: whichever comes first, the reader's readiness or 40 ms.
                let resume = Locked<CheckedContinuation<Void, Never>?>(nil)
                await withCheckedContinuation { (waiting: CheckedContinuation<Void, Never>) in
                    resume.withLock { $0 = waiting }
                    client.handler(self, whenReadyForData: { resume.withLock { $0.take() }?.resume() })
                    Task {
                        try? await Task.sleep(for: .milliseconds(40))
                        resume.withLock { $0.take() }?.resume()
                    }
                }
            }
            return
        }
        if defect == .buffersWholeBody {
            // The defect: the whole body in memory, sent without waiting for the reader. It does notice
            // stopLoading(), so only its memory use is wrong.
            var whole = Data(capacity: Self.largeSize)
            while whole.count < Self.largeSize, !Task.isCancelled { whole.append(Self.chunk) }
            var offset = 0
            while offset < whole.count, !Task.isCancelled {
                client.handler(self, didLoad: whole[offset..<min(whole.count, offset + Self.chunk.count)])
                offset += Self.chunk.count
            }
            return
        }
        if defect == .stopsWhenDeliverThrows || defect == .learnsOfStopLate {
            let client = self.client
            let handler: SchemeHandler = self
            let late = defect == .learnsOfStopLate
            // Detached: stopLoading's cancellation does not reach it; deliver throwing does.
            let detached = Task.detached {
                do {
                    // The pause before the first chunk: after it, a held reader keeps `deliver` waiting until the stop.
                    if late { try? await Task.sleep(for: .milliseconds(400)) }
                    for _ in 0..<(Self.largeSize / Self.chunk.count) {
                        try await client.handler(handler, deliver: Self.chunk)
                        try? await Task.sleep(for: .milliseconds(2))
                    }
                    client.handlerDidFinishLoading(handler)
                } catch {}
            }
            await detached.value
            return
        }
        if defect == .keepsSendingAfterStop || defect == .keepsSendingAfterStopQuickly {
            // The defect: the work runs in a task that stopLoading's cancellation never reaches. It still
            // waits for the reader, so only its deafness to stopLoading() is wrong.
            let client = self.client
            let handler: SchemeHandler = self
            let pauses = defect == .keepsSendingAfterStop
            let detached = Task.detached {
                for _ in 0..<(Self.largeSize / Self.chunk.count) {
                    await withCheckedContinuation { ready in client.handler(handler, whenReadyForData: { ready.resume() }) }
                    client.handler(handler, didLoad: Self.chunk)
                    if pauses { try? await Task.sleep(for: .milliseconds(5)) }
                }
                client.handlerDidFinishLoading(handler)
            }
            await detached.value
            return
        }
        if defect == .ignoresDeliverThrows {
            for _ in 0..<(Self.largeSize / Self.chunk.count) { try? await client.handler(self, deliver: Self.chunk) }
            return
        }
        var sent = 0
        let end = Self.largeSize - (defect == .truncatesLarge ? 10 * 1024 * 1024 : 0)
        while sent < end {
            if defect == .corruptsLarge, sent == end / 2 {
                var corrupt = Self.chunk
                corrupt[corrupt.startIndex] ^= 0xFF
                try await client.handler(self, deliver: corrupt)
            } else {
                try await client.handler(self, deliver: Self.chunk)
            }
            sent += Self.chunk.count
        }
        if descriptor >= 0 { close(descriptor) }
    }

    /// Whether a load of the blocksInStart defect has blocked already.
    static let blockedStart = Atomic<Bool>(false)

    override func startLoading() {
        if defect == .blocksInStart, !Self.blockedStart.exchange(true, ordering: .relaxed) { usleep(1_500_000) }
        if defect == .hangsInStart { _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 60) }
        super.startLoading()
    }

    override func stopLoading() {
        if defect == .hangsInStop { _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 60) }
        // Only the large fixture's loads, which the stop checks stop: the slow fixture's end on the pool threads, and
        // a stop there would starve them too (another property).
        if defect == .blocksInStop, request.url.host == "large" { usleep(2_000_000) }
        if defect == .failsOnLateStop { client.handler(self, didFailWith: LoadError(.cancelled, url: request.url)) }
        super.stopLoading()
    }
}
