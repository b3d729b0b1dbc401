import DequeModule
import FoundationEssentials
import Loader
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSOCKS
import NIOSSL
import NIOTLS
import Synchronization

/// Keep-alive connections per origin: reuses the most recently used healthy one, opens new ones up to
/// the per-host limit, queues requests beyond it, and closes connections left idle too long.
final class ConnectionPool: Sendable {
    /// Asks the load's delegates whether to trust a server (and, for a WebSocket handshake, about a `401`'s challenge).
    typealias TrustQuestion = @Sendable (AuthenticationChallenge) async -> ChallengeDisposition

    /// What makes connections interchangeable: the origin and the settings they were opened with.
    ///
    /// A class: a key is handed through the pool, the connection and the fast path several times per
    /// request, and copying its strings and options field by field cost about ten reference counts each time.
    final class Key: Hashable, Sendable {
        /// The session whose connections these are (sessions share no connections).
        let session: Int
        let scheme: String
        let host: String
        let port: Int
        let options: HTTPClientOptions
        /// The value of a request's `Host` field for this origin: the host (an IPv6 address in brackets),
        /// with the port unless it is the scheme's default. Made once per key rather than per request.
        let hostField: String
        /// Whether its connections offer HTTP/2 (ALPN, over TLS), or speak it from the start (``speaksHTTP2``).
        let offersHTTP2: Bool
        /// Whether its connections speak HTTP/2 from their first byte, in cleartext (prior knowledge).
        let speaksHTTP2: Bool
        /// The hash of all of the above, worked out once: every request looks its key up at least twice
        /// (lease, release), and hashing the options field by field each time showed in profiles.
        private let digest: Int

        init(session: Int, scheme: String, host: String, port: Int, options: HTTPClientOptions) {
            self.session = session
            self.scheme = scheme
            self.host = host
            self.port = port
            self.options = options
            // On the bytes: `String.contains(String)` goes through Foundation.
            let bareHost = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
            hostField = port == Self.defaultPort(for: scheme) ? bareHost : bareHost + ":" + String(port)
            // Cleartext HTTP/2 goes straight to the server or through a tunnel; an HTTP proxy forwarding
            // `http` requests is spoken to in HTTP/1.1.
            speaksHTTP2 = scheme == "http" && options.allowsHTTP2 && options.http2PriorKnowledge
                && (options.httpProxy?.kind != .http || options.tunnelsThroughProxy)
            offersHTTP2 = scheme == "https" && options.allowsHTTP2 || speaksHTTP2
            var hasher = Hasher()
            hasher.combine(session)
            hasher.combine(scheme)
            hasher.combine(host)
            hasher.combine(port)
            hasher.combine(options)
            digest = hasher.finalize()
        }

        /// The port an `http` or `https` URL without one goes to.
        static func defaultPort(for scheme: String) -> Int {
            scheme == "https" ? 443 : 80
        }

        /// The key for these values: one of the last few made, when it has them, or a new one. Requests
        /// mostly go to the origins of the requests before them, and making a key is an allocation and a
        /// hash of every setting, where comparing with a recent one is a few comparisons. An app that
        /// rotates among more than ``RecentKeys/capacity`` origins (or sessions, or settings) makes a key
        /// for each request, as before, after a look through the recent ones.
        ///
        /// Settings that go with each request rather than its connection (the `User-Agent`) are left out of the key:
        /// requests that differ only there share connections.
        static func recent(session: Int, scheme: String, host: String, port: Int, options: HTTPClientOptions) -> Key {
            // A copy of the options only for a request that sets its own agent: most do not.
            guard options.userAgent == HTTPRequestPlan.userAgent else {
                var shared = options
                shared.userAgent = HTTPRequestPlan.userAgent
                return recent(session: session, scheme: scheme, host: host, port: port, options: shared)
            }
            return recentKeys.withLock { $0.key(session: session, scheme: scheme, host: host, port: port, options: options) }
        }

        /// The last few keys made, newest replacing oldest.
        struct RecentKeys {
            static let capacity = 4
            private(set) var keys: [Key] = []
            /// Where the next new key goes once all places are taken.
            private var oldest = 0

            /// A kept key equal to these values, or a new one, kept in place of the oldest.
            mutating func key(session: Int, scheme: String, host: String, port: Int, options: HTTPClientOptions) -> Key {
                if let key = keys.first(where: { $0.holds(session: session, scheme: scheme, host: host, port: port, options: options) }) {
                    return key
                }
                let key = Key(session: session, scheme: scheme, host: host, port: port, options: options)
                if keys.count < Self.capacity {
                    keys.append(key)
                } else {
                    keys[oldest] = key
                    oldest = (oldest + 1) % Self.capacity
                }
                return key
            }
        }

        // A pthread lock (``Locked``), not `Mutex`, like the rest of the pool: the thread sanitizer sees it.
        private static let recentKeys = Locked(RecentKeys())

        func hash(into hasher: inout Hasher) {
            hasher.combine(digest)
        }

        static func == (a: Key, b: Key) -> Bool {
            a === b || (a.digest == b.digest && a.holds(session: b.session, scheme: b.scheme, host: b.host, port: b.port, options: b.options))
        }

        /// Whether this key is the one for these values (the cheap comparisons first).
        private func holds(session: Int, scheme: String, host: String, port: Int, options: HTTPClientOptions) -> Bool {
            self.port == port && self.session == session && self.host == host && self.scheme == scheme && self.options == options
        }
    }

    /// A connection handed to one request.
    struct Lease: Sendable {
        let connection: HTTPConnection
        /// Whether it carried a request before (and so may have been closed by the server meanwhile).
        let reused: Bool
    }

    private struct HostState {
        var idle: [HTTPConnection] = []
        var leased: Set<ObjectIdentifier> = []
        var connecting = 0
        var waiters: Deque<Waiter> = []
        /// The HTTP/2 connections, each carrying up to its server's limit of requests at once.
        var multiplexed: [Multiplexed] = []
        /// Whether the session ended while a connection was still in use: it closes when released.
        var sessionEnded = false

        /// Whether nothing is open, being opened or waiting for this origin.
        var isUnused: Bool { idle.isEmpty && leased.isEmpty && connecting == 0 && waiters.isEmpty && multiplexed.isEmpty }

        /// Whether a new connection may be opened without passing the per-host limit. An HTTP/2 connection
        /// that takes no new streams (GOAWAY) does not count: it is on its way out.
        func hasRoom(under limit: Int) -> Bool {
            // A limit below one would let nothing through, and every request would wait out its timeout.
            leased.count + connecting + multiplexed.count { !$0.retired } < max(1, limit)
        }

        /// Whether requests open connections without waiting for the first to tell its protocol: one of this
        /// origin's connections chose HTTP/1.1, or failed to open (while the origin has had an entry here).
        var dialsFreely = false

        /// Whether a request may open a new connection now: there is room, and no connection that may turn
        /// out to be HTTP/2 (and so carry this request too) is being opened. Until the first of an origin's
        /// connections has told the protocol, a burst of requests waits for it rather than opening one
        /// connection each, as browsers do.
        func mayOpen(for key: Key) -> Bool {
            hasRoom(under: key.options.maximumConnectionsPerHost) && !(key.offersHTTP2 && !dialsFreely && connecting > 0)
        }

        /// Whether an HTTP/2 connection can take another stream now.
        var hasStreamRoom: Bool { multiplexed.contains { $0.takesStream } }

        /// An HTTP/2 connection with room for one more stream, counted as taken.
        mutating func takeStream() -> HTTP2Connection? {
            guard let index = multiplexed.firstIndex(where: { $0.takesStream }) else { return nil }
            multiplexed[index].streams += 1
            multiplexed[index].connection.idleSince.store(0, ordering: .relaxed)
            return multiplexed[index].connection
        }

        /// Every waiter's delivery, the queue emptied: each is told to look again (a `nil` delivery).
        mutating func takeAllWaiters() -> [Delivery] {
            defer { waiters.removeAll() }
            return waiters.map(\.deliver)
        }

        /// Where `connection` is in ``multiplexed``.
        func index(of connection: HTTP2Connection) -> Int? {
            multiplexed.firstIndex { $0.connection === connection }
        }

        /// The most recently used live idle connection, preferring one on the caller's event loop (a task
        /// running on an ``EventLoopTaskExecutor``), which then needs no thread hand-off.
        mutating func takeIdle() -> Lease? {
            if let loop = MultiThreadedEventLoopGroup.currentEventLoop,
               let index = idle.lastIndex(where: { $0.channel.eventLoop === loop && $0.isActive }) {
                return lease(idle.remove(at: index))
            }
            // Closed ones are dropped on the way.
            while let connection = idle.popLast() {
                if connection.isActive { return lease(connection) }
            }
            return nil
        }

        private mutating func lease(_ connection: HTTPConnection) -> Lease {
            connection.idleSince.store(0, ordering: .relaxed)
            leased.insert(ObjectIdentifier(connection))
            return Lease(connection: connection, reused: true)
        }
    }

    /// An HTTP/2 connection in the pool and the streams it carries.
    private struct Multiplexed {
        let connection: HTTP2Connection
        var streams: Int
        /// The server's limit of streams at once (SETTINGS_MAX_CONCURRENT_STREAMS).
        var limit: Int
        /// Whether it takes no new stream (the server sent GOAWAY, or the session ended): it closes once
        /// its streams have ended.
        var retired: Bool

        var takesStream: Bool { !retired && streams < limit && connection.isActive }
    }

    /// Hands a waiting request its connection, or `nil` when a slot came free for it to open one.
    typealias Delivery = @Sendable (Lease?) -> Void

    private struct Waiter {
        let id: Int
        let deliver: Delivery
    }

    /// What ``leaseOrQueue(_:deliver:)`` did.
    enum QueueOutcome {
        /// An idle connection, leased now.
        case leased(Lease)
        /// A place for one more stream on this HTTP/2 connection, counted now: the caller opens the stream
        /// (``HTTP2Connection/openStream(for:url:then:)``).
        case stream(HTTP2Connection)
        /// The request waits; `deliver` will be called (the id withdraws it: ``withdraw(_:id:)``).
        case queued(id: Int)
        /// There is room for a new connection: the caller should open one (``acquire(_:url:fresh:ask:)``).
        case mayConnect
    }

    private struct State {
        var hosts: [Key: HostState] = [:]
        var accepted = 0

        /// Runs `body` on `key`'s state in place: a copy taken out of the dictionary and stored back would
        /// make each change to its queue, set and array copy their storage first.
        mutating func host<Result>(_ key: Key, _ body: (inout HostState) -> Result) -> Result {
            var unused = false
            let result = { (host: inout HostState) -> Result in
                defer { unused = host.isUnused }
                return body(&host)
            }(&hosts[key, default: HostState()])
            // An origin left with nothing open, opening or waiting keeps no entry, so that a process that
            // visits many origins does not keep one for each (a second look-up, only then).
            if unused { hosts[key] = nil }
            return result
        }
    }

    private let state = Locked(State())
    /// Numbers waiters so that one can be withdrawn (a counter of its own: taking it needs no lock).
    private let waiterIDs = Atomic<Int>(0)
    private let group: any EventLoopGroup
    private let tls: TLSContextCache

    init(group: any EventLoopGroup, tls: TLSContextCache) {
        self.group = group
        self.tls = tls
    }

    /// Connections opened so far (for tests and diagnostics).
    var connectionsOpened: Int { state.withLock { $0.accepted } }

    /// Closes the connections of `session`, which has ended: the idle ones now, one still finishing a response
    /// when it is released.
    func closeConnections(ofSession session: Int) {
        let (closing, closingMultiplexed) = state.withLock { state -> ([HTTPConnection], [HTTP2Connection]) in
            var closing: [HTTPConnection] = []
            var closingMultiplexed: [HTTP2Connection] = []
            // The keys first: changing the dictionary while walking its keys would copy it whole, under the lock.
            for key in state.hosts.keys.filter({ $0.session == session }) {
                state.host(key) { host in
                    closing += host.idle
                    host.idle.removeAll()
                    host.sessionEnded = true
                    // An HTTP/2 connection closes now if it carries nothing, else when its last stream ends.
                    for index in host.multiplexed.indices { host.multiplexed[index].retired = true }
                    closingMultiplexed += host.multiplexed.filter { $0.streams == 0 }.map(\.connection)
                    host.multiplexed.removeAll { $0.streams == 0 }
                }
            }
            return (closing, closingMultiplexed)
        }
        closing.forEach { $0.close() }
        closingMultiplexed.forEach { $0.close() }
    }

    /// The origins of `session` that have connections open, opening or waited for (for tests).
    func originCount(session: Int) -> Int {
        state.withLock { state in state.hosts.keys.count { $0.session == session } }
    }

    /// The HTTP/2 connections held for `session`'s origins, for diagnostics and tests.
    func http2Connections(session: Int) -> [HTTP2Connection] {
        state.withLock { state in
            state.hosts.filter { $0.key.session == session }.flatMap { $0.value.multiplexed.map(\.connection) }
        }
    }

    /// A connection for `key`: an idle one, a new one, or the next to come free.
    /// - Parameter ask: Puts a server-trust question to the delegates of the load that opens a new
    ///   connection. A connection, once trusted, serves later loads of the same session too.
    ///
    /// - Parameter fresh: Skips idle connections, for the retry of a request whose connection the server had closed
    ///   (an idle one, or a new one before the request went out): the others left idle as long may be closed too.
    ///   One handed over by a finished response is still taken.
    func acquire(_ key: Key, url: URL, fresh: Bool = false, ask: TrustQuestion? = nil) async throws -> Lease {
        while true {
            enum Step { case lease(Lease), stream(HTTP2Connection), connect, wait }
            let step = state.withLock { state in
                state.host(key) { host -> Step in
                    // Even for a fresh connection: a live HTTP/2 connection is not one left idle that the server
                    // may have closed meanwhile (a closed one is never taken).
                    if let multiplexed = host.takeStream() { return .stream(multiplexed) }
                    if !fresh, let lease = host.takeIdle() { return .lease(lease) }
                    if host.mayOpen(for: key) {
                        host.connecting += 1
                        return .connect
                    }
                    return .wait
                }
            }
            switch step {
            case .lease(let lease):
                return lease
            case .stream(let multiplexed):
                return try await stream(on: multiplexed, url: url, reused: true)
            case .connect:
                return try await connect(key, url: url, ask: ask)
            case .wait:
                if let lease = try await waitForConnection(key, url: url, fresh: fresh) { return lease }
            }
        }
    }

    /// Takes a connection back after its response ended; reusable ones go idle (or to a waiter).
    func release(_ connection: HTTPConnection, reusable: Bool) {
        if let multiplexed = connection.multiplexedOn {
            streamEnded(connection, on: multiplexed)
            return
        }
        let (waiter, lease, close) = state.withLock { state in
            state.host(connection.key) { host -> (Delivery?, Lease?, Bool) in
                guard host.leased.contains(ObjectIdentifier(connection)) else { return (nil, nil, !reusable) }
                guard reusable, connection.isActive, !host.sessionEnded else {
                    host.leased.remove(ObjectIdentifier(connection))
                    // A slot is free: the first waiter may open a connection of its own.
                    return (host.waiters.popFirst()?.deliver, nil, !reusable || host.sessionEnded)
                }
                if let first = host.waiters.popFirst() {
                    // Straight to the next request: it stays leased.
                    return (first.deliver, Lease(connection: connection, reused: true), false)
                }
                host.leased.remove(ObjectIdentifier(connection))
                host.idle.append(connection)
                return (nil, nil, false)
            }
        }
        if close { connection.close() }
        if let waiter {
            waiter(lease)
        } else if reusable, !close, lease == nil {
            scheduleIdleTimeout(connection)
        }
    }

    /// Forgets a connection that closed (while idle or in use).
    func connectionClosed(_ connection: HTTPConnection) {
        if let multiplexed = connection.multiplexedOn {
            streamEnded(connection, on: multiplexed)
            return
        }
        let waiter = state.withLock { state in
            state.host(connection.key) { host -> Delivery? in
                host.idle.removeAll { $0 === connection }
                guard host.leased.remove(ObjectIdentifier(connection)) != nil else { return nil }
                return host.waiters.popFirst()?.deliver
            }
        }
        waiter?(nil)
    }

    // MARK: HTTP/2

    /// A stream on `connection` for one request, whose place the caller has counted (``HostState/takeStream()``
    /// or ``register(_:watcher:url:)``); ``HTTP2Connection/openStream(for:url:)`` gives the place back if the
    /// stream cannot be opened.
    private func stream(on connection: HTTP2Connection, url: URL, reused: Bool) async throws -> Lease {
        Lease(connection: try await connection.openStream(for: self, url: url), reused: reused)
    }

    /// Puts a new HTTP/2 connection in the pool, with one stream counted for the request that opened it, and
    /// tells every waiter for its origin to look again: it may carry them all. Runs on the connection's loop,
    /// so that its watcher reports nothing before the pool knows it; throws if it closed already.
    private func register(_ connection: HTTP2Connection, watcher: HTTP2ConnectionWatcher, url: URL) throws {
        guard connection.isActive, !watcher.goingAway else {
            // Its opener's request was never sent: it may go again, on another connection.
            connection.close()
            throw LoadError(.networkConnectionLost, url: url, reason: "the server closed the HTTP/2 connection as it opened",
                            underlying: HTTP2StreamRefused(underlying: ChannelError.ioOnClosedChannel))
        }
        watcher.pool = self
        let waiters = state.withLock { state in
            state.accepted += 1
            return state.host(connection.key) { host -> [Delivery] in
                host.connecting -= 1
                host.multiplexed.append(Multiplexed(connection: connection, streams: 1, limit: watcher.streamLimit,
                                                    retired: host.sessionEnded))
                return host.takeAllWaiters()
            }
        }
        waiters.forEach { $0(nil) }
    }

    /// A stream's request has ended (or its stream never opened: `stream` is `nil`): its place on the
    /// connection is free. A stream still open (a request body the response cut short) is reset.
    func streamEnded(_ stream: HTTPConnection?, on connection: HTTP2Connection) {
        if let stream {
            guard stream.endStream() else { return }
            stream.resetStreamIfOpen()
        }
        enum After { case nothing, close, idle }
        let (waiter, after) = state.withLock { state in
            state.host(connection.key) { host -> (Delivery?, After) in
                guard let index = host.index(of: connection) else { return (nil, .nothing) }
                host.multiplexed[index].streams -= 1
                let entry = host.multiplexed[index]
                if entry.retired, entry.streams == 0 {
                    host.multiplexed.remove(at: index)
                    return (host.waiters.popFirst()?.deliver, .close)
                }
                let waiter = entry.takesStream ? host.waiters.popFirst()?.deliver : nil
                // The timer looks again when it fires: a waiter that took the stream keeps the connection.
                return (waiter, entry.streams == 0 ? .idle : .nothing)
            }
        }
        switch after {
        case .close: connection.close()
        case .idle:
            connection.idleSince.store(NIODeadline.now().uptimeNanoseconds, ordering: .relaxed)
            armIdleTimer(connection, after: connection.key.options.idleConnectionTimeout)
        case .nothing: break
        }
        waiter?(nil)
    }

    /// The server changed its limit of streams at once on `connection`: waiters take the new room.
    func streamLimitChanged(_ connection: HTTP2Connection, to limit: Int) {
        let waiters = state.withLock { state in
            state.host(connection.key) { host -> [Delivery] in
                guard let index = host.index(of: connection) else { return [] }
                host.multiplexed[index].limit = limit
                let room = max(0, limit - host.multiplexed[index].streams)
                return (0..<min(room, host.waiters.count)).compactMap { _ in host.waiters.popFirst()?.deliver }
            }
        }
        waiters.forEach { $0(nil) }
    }

    /// `connection` takes no new stream (GOAWAY, or an error on one of its streams): it closes once its streams
    /// have ended, and no longer counts against the per-host limit, so a waiter may open a connection instead.
    func goingAway(_ connection: HTTP2Connection) {
        let (waiter, close) = state.withLock { state in
            state.host(connection.key) { host -> (Delivery?, Bool) in
                guard let index = host.index(of: connection), !host.multiplexed[index].retired else { return (nil, false) }
                host.multiplexed[index].retired = true
                let close = host.multiplexed[index].streams == 0
                if close { host.multiplexed.remove(at: index) }
                return (host.waiters.popFirst()?.deliver, close)
            }
        }
        if close { connection.close() }
        waiter?(nil)
    }

    /// Forgets an HTTP/2 connection that closed; its streams end with it.
    func connectionClosed(_ connection: HTTP2Connection) {
        let waiter = state.withLock { state in
            state.host(connection.key) { host -> Delivery? in
                guard let index = host.index(of: connection) else { return nil }
                host.multiplexed.remove(at: index)
                return host.waiters.popFirst()?.deliver
            }
        }
        waiter?(nil)
    }

    /// Closes `connection` once it has carried no stream for the idle timeout, as ``armIdleTimer(_:after:)``
    /// does for an HTTP/1.1 one.
    private func armIdleTimer(_ connection: HTTP2Connection, after seconds: TimeInterval) {
        guard !connection.idleTimerArmed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        connection.channel.eventLoop.scheduleTask(in: Self.timeAmount(seconds)) { [self] in
            connection.idleTimerArmed.store(false, ordering: .releasing)
            let timeout = Self.bounded(connection.key.options.idleConnectionTimeout)
            let now = NIODeadline.now().uptimeNanoseconds
            enum Verdict { case busy, expired(Delivery?), idleFor(TimeInterval) }
            let verdict = state.withLock { state -> Verdict in
                let since = connection.idleSince.load(ordering: .relaxed)
                return state.host(connection.key) { host in
                    guard since != 0, let index = host.index(of: connection), host.multiplexed[index].streams == 0 else { return .busy }
                    let idleFor = TimeInterval(now &- since) / 1e9
                    guard idleFor >= timeout else { return .idleFor(idleFor) }
                    host.multiplexed.remove(at: index)
                    // Its place under the per-host limit is free.
                    return .expired(host.waiters.popFirst()?.deliver)
                }
            }
            switch verdict {
            case .busy: break
            case .expired(let waiter):
                connection.close()
                waiter?(nil)
            case .idleFor(let seconds): armIdleTimer(connection, after: timeout - seconds)
            }
        }
    }

    // MARK: Opening

    private func connect(_ key: Key, url: URL, ask: TrustQuestion?) async throws -> Lease {
        let opened: Opened
        do {
            opened = try await open(key, url: url, ask: ask)
        } catch {
            let waiters = state.withLock { state in
                state.host(key) { host -> [Delivery] in
                    host.connecting -= 1
                    guard key.offersHTTP2, !host.dialsFreely else { return host.waiters.popFirst().map { [$0.deliver] } ?? [] }
                    // The requests that waited to learn the protocol dial for themselves now: one at a time,
                    // a server that never answers would make each wait out the one before.
                    host.dialsFreely = true
                    return host.takeAllWaiters()
                }
            }
            waiters.forEach { $0(nil) }
            throw HTTPErrorMapping.map(error, url: url)
        }
        switch opened {
        case .http1(let connection):
            let waiters = state.withLock { state in
                state.host(key) { host -> [Delivery] in
                    host.connecting -= 1
                    host.leased.insert(ObjectIdentifier(connection))
                    guard key.offersHTTP2, !host.dialsFreely else { return [] }
                    // The first to tell: the requests that waited to learn the protocol may open their own.
                    host.dialsFreely = true
                    return host.takeAllWaiters()
                }
            }
            waiters.forEach { $0(nil) }
            return Lease(connection: connection, reused: false)
        case .http2(let multiplexed):
            // In the pool already, with this request's stream counted.
            return try await stream(on: multiplexed, url: url, reused: false)
        }
    }

    /// What a new connection turned out to be: the server chose the protocol.
    private enum Opened {
        case http1(HTTPConnection)
        /// Already in the pool (``register(_:watcher:)``), with one stream counted for the request that opened it.
        case http2(HTTP2Connection)
    }

    private func open(_ key: Key, url: URL, ask: TrustQuestion?) async throws -> Opened {
        let (channel, fault, record) = try await dialAsking(key, url: url, ask: ask)
        // Handed over through a lock, not the future alone: when the closure ends before the awaiting task has
        // suspended, the runtime resumes the task on an atomic the thread sanitizer does not follow, and it
        // reported a race on the new connection's `channel`.
        let opened = Locked<Opened?>(nil)
        let registered = channel.eventLoop.submit {
            if let watcher = try? channel.pipeline.syncOperations.handler(type: HTTP2ConnectionWatcher.self) {
                try self.register(watcher.connection, watcher: watcher, url: url)
                opened.withLock { $0 = .http2(watcher.connection) }
                return
            }
            let forwarder = try channel.pipeline.syncOperations.handler(type: ResponseForwarder.self)
            let connection = HTTPConnection(channel: channel, key: key, forwarder: forwarder, record: record)
            connection.attach(to: self)
            self.state.withLock { $0.accepted += 1 }
            opened.withLock { $0 = .http1(connection) }
        }
        // The pipeline torn down: the connection closed, refusing the client certificate perhaps, or the server hung
        // up before the request was given it (while the delegate decided on its certificate, say).
        let closedAsItOpened = {
            // Through an HTTPS proxy, a TLS fault is the proxy's (a TLS 1.3 refusal of the client certificate that came
            // before the request went out).
            if let proxy = Self.tlsProxy(of: key), let error = fault?.withLock({ $0 }), ProxyTLSFailure.isTLS(error) {
                return ProxyTLSFailure.error(error, proxy: proxy, url: url)
            }
            return TLSFaultKeeper.refusal(in: fault, url: url)
                ?? LoadError(.networkConnectionLost, url: url, reason: "the connection closed as it opened, before the request was sent",
                             underlying: RequestNotSent())
        }
        do {
            try await registered.get()
        } catch let error as LoadError {
            // Said already: an HTTP/2 connection that closed or was going away as it opened (resent as refused).
            throw error
        } catch {
            throw channel.isActive ? error : closedAsItOpened()
        }
        // Set by the registration, which succeeded.
        return opened.withLock { $0 }!
    }

    /// Connects (``dial(_:url:verification:keepingLeafIn:keepingFaultIn:recordingIn:unpooled:)``) and puts the server's
    /// certificate to `ask`, as URLSession puts it to its delegates: once per connection, after a handshake the
    /// standard rules accepted (the delegate may refuse: pinning), or, when they refused it, on a second connection
    /// whose handshake waits for the delegate (which may accept a development server). Returns the channel, for
    /// `https` where a TLS fault that closes it is kept (``TLSFaultKeeper``), and how the connection opened
    /// (``ConnectionRecord``: the connection that was kept, not a refused first attempt; a delegate's time to answer
    /// falls after its connect's end).
    private func dialAsking(_ key: Key, url: URL, ask: TrustQuestion?, unpooled: Bool = false) async throws
        -> (channel: any Channel, fault: Locked<(any Error)?>?, record: ConnectionRecord) {
        // The delegate is asked about a server the default rules accepted: keep its certificate.
        let asksAboutTrust = key.scheme == "https" && key.options.tls.verifiesCertificates && ask != nil
        // And for pinned public keys, checked after the trust checks.
        let pins = key.scheme == "https" ? key.options.tls.pinnedPublicKeys : []
        let leaf: Locked<NIOSSLCertificate?>? = asksAboutTrust || !pins.isEmpty ? Locked(nil) : nil
        // What closed a new TLS connection before it could be put to use (a server's alert refusing the client), or
        // a cleartext HTTP/2 one (an HTTP/1 answer to its preface).
        var fault: Locked<(any Error)?>? = key.scheme == "https" || key.speaksHTTP2 || Self.tlsProxy(of: key) != nil ? Locked(nil) : nil
        // How the connection opened, for its first exchange's metrics.
        var record = ConnectionRecord()
        let channel: any Channel
        var delegateDecided = false
        do {
            channel = try await dial(key, url: url, verification: .standard, keepingLeafIn: leaf, keepingFaultIn: fault,
                                     recordingIn: record, unpooled: unpooled)
        } catch {
            let mapped = HTTPErrorMapping.map(error, url: url)
            // The proxy's certificate is not the server's, which the delegate is asked about.
            guard ask != nil, mapped.code == .serverCertificateUntrusted || mapped.code == .serverCertificateWrongHost,
                  !(mapped.underlying is ProxyTLSFailure) else { throw error }
            // The default rules refused the server: connect again, this time seeing the chain and letting
            // the delegate decide. It also tells an expired certificate from an untrusted one.
            let check = ServerTrustCheck(key: key, url: url, defaultError: mapped, ask: ask)
            // A box of its own: the refused attempt's error must not stand for what closes this connection.
            fault = Locked(nil)
            record = ConnectionRecord()
            do {
                channel = try await dial(key, url: url, verification: .delegated(check), keepingLeafIn: pins.isEmpty ? nil : leaf,
                                         keepingFaultIn: fault, recordingIn: record, unpooled: unpooled)
                delegateDecided = true
            } catch {
                // Why it failed as it failed; then the question, if still being asked, is let finish first.
                let failure = check.refusal ?? error
                await check.settled()
                throw failure
            }
        }
        // One question per connection, as URLSession asks: the delegated attempt has had its answer.
        if !delegateDecided, asksAboutTrust, let leaf, let ask {
            do {
                try await ServerTrustCheck.confirm(leaf.withLock { $0 }, key: key, url: url, ask: ask)
            } catch {
                channel.close(promise: nil)
                throw error
            }
        }
        if !pins.isEmpty, let leaf {
            do {
                try PublicKeyPins.check(leaf.withLock { $0 }, pins: pins, url: url)
            } catch {
                channel.close(promise: nil)
                throw error
            }
        }
        return (channel, fault, record)
    }

    /// How the server's certificate is checked on one connection attempt.
    private enum Verification: Sendable {
        /// NIOSSL's rules, or none when the options turn verification off.
        case standard
        /// The delegate's word, after the standard rules refused the server.
        case delegated(ServerTrustCheck)
    }

    /// The first address of `host`, as text, looked up off the event loops (for a SOCKS proxy that is given addresses).
    private static func address(of host: String, port: Int, family: AddressFamily, proxy: HTTPClientOptions.Proxy,
                                url: URL) async throws -> String {
        let lookup: Int32 = switch family {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        case .any: AF_UNSPEC
        }
        do {
            let found = try await NIOThreadPool.singleton.runIfActive { try FamilyResolver.addresses(of: host, port: port, family: lookup) }
            guard let address = found.first?.ipAddress else { throw FamilyResolver.LookupFailed(description: "no address") }
            return address
        } catch {
            let (kind, scheme) = proxy.kind == .socks4 ? ("SOCKS4", "socks4://, which takes IPv4 addresses") : ("SOCKS5", "socks5://")
            // The proxy could not be asked: curl's 97, as for a refusal.
            throw LoadError(.cannotFindHost, url: url, reason: "\(host) could not be resolved here for the \(kind) proxy (\(scheme)): \(error)",
                            underlying: ProxyFailure(.socksHandshake, proxy: HTTPClientOptions.Proxy.authority(proxy.host, proxy.port), cause: error))
        }
    }

    /// The HTTPS proxy a cleartext request of `key` goes to (forwarded or tunnelled), whose alone the connection's TLS,
    /// and its failures, are; `nil` otherwise.
    static func tlsProxy(of key: Key) -> HTTPClientOptions.Proxy? {
        guard key.scheme != "https", let proxy = key.options.proxy(for: key.scheme), proxy.kind == .http, proxy.usesTLS else { return nil }
        return proxy
    }

    /// Connects, and for `https` completes the TLS handshake, keeping the server's certificate in `leaf`
    /// when one is given. With a proxy it connects to the proxy instead, and for `https` first opens a
    /// tunnel through it (``ProxyTunnelHandler``).
    ///
    /// `unpooled`: for a protocol that takes the connection over (WebSocket): no HTTP handlers, and the
    /// connection reads on its own.
    private func dial(_ key: Key, url: URL, verification: Verification, keepingLeafIn leaf: Locked<NIOSSLCertificate?>?,
                      keepingFaultIn fault: Locked<(any Error)?>? = nil, recordingIn record: ConnectionRecord? = nil,
                      unpooled: Bool = false) async throws -> any Channel {
        record?.note { $0.connectStart = Date() }
        let sslContext: NIOSSLContext?
        // A connection taken over by another protocol (WebSocket) speaks HTTP/1.1 for its handshake.
        let offersHTTP2 = key.scheme == "https" && key.options.allowsHTTP2 && !unpooled
        let speaksHTTP2 = key.speaksHTTP2 && !unpooled
        if key.scheme == "https" {
            var checksHostname = true
            if case .delegated = verification { checksHostname = false }
            sslContext = try await tls.context(for: key.options.tls, checksHostname: checksHostname, offersHTTP2: offersHTTP2, url: url)
        } else {
            sslContext = nil
        }
        let proxy = key.options.proxy(for: key.scheme)
        // An HTTPS proxy: TLS with the proxy first, under whatever goes through it.
        let proxyTLS: NIOSSLContext? = if let proxy, proxy.kind == .http, proxy.usesTLS {
            try await tls.context(for: proxy.tls ?? key.options.tls, url: url)
        } else {
            nil
        }
        let (dialHost, dialPort) = proxy.map { ($0.host, $0.port) } ?? key.options.connectionTarget(host: key.host, port: key.port)
        let target = key.options.resolve["\(dialHost):\(dialPort)"] ?? dialHost
        // What a SOCKS proxy is asked to reach: the host's override, if it has one, else its name (or, for `socks5://`
        // and `socks4://`, the address this end finds for it: IPv4 for SOCKS4).
        let named = key.options.resolve["\(key.host):\(key.port)"] ?? key.host
        let tunnelHost = if let proxy, proxy.kind.isSOCKS, proxy.resolvesNamesLocally, !named.isIPAddress {
            try await Self.address(of: named, port: key.port, family: proxy.kind == .socks4 ? .ipv4 : key.options.addressFamily,
                                   proxy: proxy, url: url)
        } else {
            named
        }
        // Checked before connecting, so that the error is the request's: what the SOCKS request cannot carry, and its login.
        let socksHandshake: SOCKSTunnel.Handshake? = if let proxy, proxy.kind.isSOCKS {
            try SOCKSTunnel.check(tunnelHost, port: key.port, through: proxy, url: url)
        } else {
            nil
        }
        // Made here, not fetched from the pipeline later: a failed handshake tears the pipeline down.
        // A task on one of the loops (an EventLoopTaskExecutor) gets its connection on that loop.
        let loops: any EventLoopGroup = MultiThreadedEventLoopGroup.currentEventLoop ?? group
        let handshake: EventLoopPromise<Void>? = sslContext == nil ? nil : loops.next().makePromise()
        let proxyHandshake: EventLoopPromise<Void>? = proxyTLS == nil ? nil : loops.next().makePromise()
        // A tunnel through the proxy: always through SOCKS, for `https` through an HTTP proxy, and for `http` when asked.
        let tunnels = proxy.map { $0.kind.isSOCKS || sslContext != nil || unpooled || key.options.tunnelsThroughProxy } ?? false
        let tunnel: EventLoopPromise<Void>? = tunnels ? loops.next().makePromise() : nil
        let exchange = ExchangeHandlers(sslContext: sslContext, verification: verification, leaf: leaf, fault: fault, handshake: handshake,
                                        serverName: key.host.isIPAddress ? nil : key.host, carriesExchanges: !unpooled,
                                        negotiatesProtocol: offersHTTP2, speaksHTTP2: speaksHTTP2, key: key, record: record,
                                        tlsProxy: Self.tlsProxy(of: key))
        // One budget for the connect, the tunnel and the handshake together: each gets what the one before left.
        let connectBudget = Self.timeAmount(key.options.connectTimeout)
        let connectDeadline = NIODeadline.now() + connectBudget
        let socketPath = key.options.unixSocketPath
        let family = socketPath == nil ? key.options.addressFamily : .any
        // The loop chosen here, not at the connect: a resolver of one IP version answers on it.
        let loop = loops.next()
        let bootstrap = ClientBootstrap(group: loop)
            // The system's resolver unless one IP version is asked for or the name is one under `localhost`.
            .resolver(family == .any && !FamilyResolver.answersItself(target) ? nil : FamilyResolver(family: family, loop: loop))
            .connectTimeout(connectBudget)
            // Reading on its own too while the protocol is negotiated: the HTTP/1.1 handlers turn it off
            // when they take over, and an HTTP/2 connection keeps it (its streams hold the server back).
            .channelOption(.autoRead, value: unpooled || offersHTTP2 || speaksHTTP2)
            // (NIO skips it on a Unix socket.)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            // One read per readable event, so that NIO keeps at most one read buffer per connection: with
            // its default of four, a connection whose body chunks still held the last buffer kept up to
            // four (1,000 slow downloads: 320 MiB instead of 128 MiB).
            .channelOption(.maxMessagesPerRead, value: 1)
            // Large reads for cleartext only: over TLS, NIOSSL decrypts into a buffer of its own, kept per
            // connection at twice the largest read, which the allowance does not count.
            .channelOption(.recvAllocator, value: ReadBufferSizer(grant: sslContext == nil && proxyTLS == nil ? ReadBufferGrant() : nil))
            .channelInitializer { channel in
                do {
                    if let proxyTLS, let proxyHandshake, let proxy {
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(NIOSSLClientHandler(context: proxyTLS, serverHostname: proxy.host.isIPAddress ? nil : proxy.host))
                        try sync.addHandler(HandshakeListener(handshake: proxyHandshake))
                        // A cleartext request's connection: what closes it as it opens is the proxy's TLS fault.
                        if sslContext == nil, let fault { try sync.addHandler(TLSFaultKeeper(into: fault)) }
                    }
                    // Through a tunnel, TLS and HTTP start once the proxy has opened it.
                    if let tunnel, let proxy, let socksHandshake {
                        try channel.pipeline.syncOperations.addHandlers(
                            SOCKSTunnel.handlers(to: tunnelHost, port: key.port, through: proxy, handshake: socksHandshake, url: url,
                                                 established: tunnel))
                    } else if let tunnel, let proxy {
                        try channel.pipeline.syncOperations.addHandler(ProxyTunnelHandler(
                            target: HTTPClientOptions.Proxy.authority(key.host, key.port), proxy: proxy, url: url, established: tunnel,
                            record: record))
                    } else {
                        try exchange.add(to: channel.pipeline.syncOperations, of: channel)
                    }
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        let channel: any Channel
        do {
            if let socketPath {
                channel = try await bootstrap.connect(unixDomainSocketPath: socketPath).get()
            } else {
                let connecting = bootstrap.connect(host: target, port: dialPort)
                // On the loop as the connect completes, before the channel goes active and TLS sends its hello.
                if handshake != nil, tunnel == nil {
                    connecting.whenSuccess { _ in record?.note { $0.secureConnectionStart = Date() } }
                }
                channel = try await connecting.get()
            }
        } catch {
            tunnel?.fail(error)
            handshake?.fail(error)
            proxyHandshake?.fail(error)
            if let socketPath { throw HTTPErrorMapping.unixSocket(error, path: socketPath, url: url) }
            // No address of the version asked for: the name cannot be found as that version's.
            if family != .any, let failure = error as? NIOConnectionError, failure.connectionErrors.isEmpty {
                let version = family == .ipv4 ? "IPv4" : "IPv6"
                let cause = (family == .ipv4 ? failure.dnsAError : failure.dnsAAAAError).map { ": \($0)" } ?? ""
                let name = proxy.map { HTTPClientOptions.Proxy.authority($0.host, $0.port) }
                let whose = name.map { "the proxy \($0): " } ?? ""
                // A proxy's name with no address of that version is its failure (curl's 5); an address of the other
                // version is no name that failed.
                let proxyFailure = IPAddressText.bytes(failure.host) == nil ? name.map { ProxyFailure(.nameLookup, proxy: $0, cause: failure) } : nil
                throw LoadError(.cannotFindHost, url: url,
                                reason: "\(whose)cannot resolve \(failure.host) to an \(version) address (\(version) alone asked for)\(cause)",
                                underlying: proxyFailure ?? failure)
            }
            guard let proxy else { throw error }
            let mapped = HTTPErrorMapping.map(error, url: url)
            let name = HTTPClientOptions.Proxy.authority(proxy.host, proxy.port)
            // The proxy's own name not found is its failure, not the server's (curl's 5, not 6).
            let underlying = mapped.code == .cannotFindHost ? ProxyFailure(.nameLookup, proxy: name, cause: mapped.underlying) : mapped.underlying
            throw LoadError(mapped.code, url: url, reason: "the proxy \(name): \(mapped.reason ?? mapped.code.description)", underlying: underlying)
        }
        let seconds = key.options.connectTimeout.printed("%g")
        if let proxyHandshake, let proxy {
            do {
                try await Self.complete(proxyHandshake, on: channel, by: connectDeadline, url: url,
                                        timeout: "no TLS handshake with the proxy within \(seconds) s for the connect and the handshake (the connect timeout)")
            } catch {
                tunnel?.fail(error)
                handshake?.fail(error)
                channel.close(promise: nil)
                throw ProxyTLSFailure.error(error, proxy: proxy, url: url)
            }
        }
        if let tunnel {
            do {
                try await Self.complete(tunnel, on: channel, by: connectDeadline, url: url,
                                        timeout: "no tunnel through the proxy within \(seconds) s for the connect and the tunnel (the connect timeout)")
                try await channel.eventLoop.submit {
                    let sync = channel.pipeline.syncOperations
                    // The SOCKS handlers go (the HTTP tunnel's went itself).
                    SOCKSTunnel.remove(from: sync)
                    // Through a tunnel, TLS starts as its handler goes in.
                    if handshake != nil { record?.note { $0.secureConnectionStart = Date() } }
                    try exchange.add(to: sync, of: channel)
                }.get()
            } catch {
                handshake?.fail(error)
                channel.close(promise: nil)
                // A TLS failure with an HTTPS proxy after its handshake (a TLS 1.3 refusal of the client's certificate
                // comes with the first read, the answer to CONNECT) is the proxy's.
                if let proxy, proxyTLS != nil, ProxyTLSFailure.isTLS(error) {
                    throw ProxyTLSFailure.error(error, proxy: proxy, url: url)
                }
                throw error
            }
        }
        if let handshake {
            try await Self.complete(handshake, on: channel, by: connectDeadline, url: url,
                                    timeout: "no TLS handshake within \(seconds) s for the connect and the handshake (the connect timeout)")
            record?.note { $0.secureConnectionEnd = Date() }
        }
        record?.note { $0.connectEnd = Date() }
        return channel
    }

    /// Waits for `promise` (a tunnel or a TLS handshake) until `deadline`, or until the load is cancelled.
    ///
    /// The deadline and the cancel only fail the promise, and the channel closes when the promise failed: a
    /// handshake that won the race keeps its connection (closing it unconditionally broke the request that
    /// came after, as "connection closed"). A server that accepts and never answers would otherwise hold a
    /// place in the pool for as long as it kept the connection open.
    private static func complete(_ promise: EventLoopPromise<Void>, on channel: any Channel, by deadline: NIODeadline,
                                 url: URL, timeout: String) async throws {
        promise.futureResult.whenFailure { _ in channel.close(promise: nil) }
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) {
            promise.fail(LoadError(.timedOut, url: url, reason: timeout))
        }
        defer { timer.cancel() }
        try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            promise.fail(CancellationError())
        }
    }

    /// The handlers of a connection that carries requests: TLS for `https`, then the HTTP codec and ours.
    private struct ExchangeHandlers: Sendable {
        let sslContext: NIOSSLContext?
        let verification: Verification
        let leaf: Locked<NIOSSLCertificate?>?
        let fault: Locked<(any Error)?>?
        let handshake: EventLoopPromise<Void>?
        let serverName: String?
        /// Whether the connection carries the pool's exchanges; if not, it gets TLS (and a handler that hears the
        /// handshake's end) and nothing else.
        let carriesExchanges: Bool
        /// Whether the TLS handshake offers HTTP/2 (ALPN): the handlers above TLS are added once the server
        /// has chosen.
        let negotiatesProtocol: Bool
        /// Whether the connection speaks HTTP/2 from the start, in cleartext (prior knowledge).
        let speaksHTTP2: Bool
        /// The origin and settings the connection is for (an HTTP/2 connection is made with its handlers).
        let key: Key
        /// How the connection opened, for an HTTP/2 connection's first stream.
        let record: ConnectionRecord?
        /// For a cleartext request to an HTTPS proxy: that proxy, whose alone the connection's TLS (and its failures) is.
        let tlsProxy: HTTPClientOptions.Proxy?

        func add(to sync: ChannelPipeline.SynchronousOperations, of channel: any Channel) throws {
            if let sslContext {
                let tls = switch verification {
                case .standard:
                    // The name goes out (SNI) whether or not certificates are checked, as with curl -k:
                    // a server behind a shared address picks its site by it. With checks off, the
                    // context verifies nothing, the name included.
                    try NIOSSLClientHandler(context: sslContext, serverHostname: serverName)
                case .delegated(let check):
                    try NIOSSLClientHandler(context: sslContext, serverHostname: serverName, customVerificationCallback: check.verify)
                }
                try sync.addHandler(tls)
                if let record { try sync.addHandler(TLSVersionKeeper(into: record, from: tls)) }
                if let fault { try sync.addHandler(TLSFaultKeeper(into: fault)) }
                // This handler's certificate, not the first TLS handler's of the pipeline: through an HTTPS proxy that
                // is the proxy's.
                if let leaf { try sync.addHandler(PeerCertificateKeeper(into: leaf, from: tls)) }
            }
            guard carriesExchanges else {
                if let handshake { try sync.addHandler(HandshakeListener(handshake: handshake)) }
                return
            }
            if speaksHTTP2 {
                // The pool's lock when it gave one (it does for every pooled connection of this kind).
                return try Self.addHTTP2Handlers(to: sync, of: channel, key: key, tlsFault: fault ?? Locked(nil), record: record)
            }
            if negotiatesProtocol, let handshake {
                // The listener completes the handshake's promise; the pool looks at the pipeline only after
                // that, by which time the negotiation handler (which hears the handshake's end next, in the
                // same call) has added the chosen protocol's handlers.
                try sync.addHandler(HandshakeListener(handshake: handshake))
                try sync.addHandler(ApplicationProtocolNegotiationHandler(alpnCompleteHandler: { (result: ALPNResult, channel: any Channel) -> EventLoopFuture<Void> in
                    do {
                        let sync = channel.pipeline.syncOperations
                        if case .negotiated("h2") = result {
                            try Self.addHTTP2Handlers(to: sync, of: channel, key: key, tlsFault: fault, record: record)
                        } else {
                            try channel.syncOptions?.setOption(.autoRead, value: false)
                            try Self.addHTTP1Handlers(to: sync, handshake: nil, tlsFault: fault)
                        }
                        return channel.eventLoop.makeSucceededVoidFuture()
                    } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                }))
                return
            }
            try Self.addHTTP1Handlers(to: sync, handshake: handshake, tlsFault: fault, tlsProxy: tlsProxy)
        }

        /// HTTP/1.1: one exchange at a time, ending in a ``ResponseForwarder``.
        private static func addHTTP1Handlers(to sync: ChannelPipeline.SynchronousOperations, handshake: EventLoopPromise<Void>?,
                                             tlsFault: Locked<(any Error)?>?, tlsProxy: HTTPClientOptions.Proxy? = nil) throws {
            // No outbound header validation: the request's fields come from `HTTPFields`, whose
            // names are tokens and values legal, and the plan checks the host it adds (~4% of
            // the CPU per request with 32 in flight went to checking them again).
            let readTail = ReadTail()
            try sync.addHandler(readTail)
            try sync.addHTTPClientHandlers(leftOverBytesStrategy: .fireError, enableOutboundHeaderValidation: false,
                                           decoderLimitConfiguration: HTTPErrorMapping.headLimits)
            try sync.addHandler(ResponseForwarder(handshake: handshake, readTail: readTail, tlsFault: tlsFault, tlsProxy: tlsProxy))
        }

        /// HTTP/2: NIOHTTP2's handler with its streams, and a watcher that tells the pool about the connection.
        private static func addHTTP2Handlers(to sync: ChannelPipeline.SynchronousOperations, of channel: any Channel, key: Key,
                                             tlsFault: Locked<(any Error)?>?, record: ConnectionRecord?) throws {
            var connection = NIOHTTP2Handler.ConnectionConfiguration()
            // Windows large enough that flow control does not throttle a download on a fast link (the
            // protocol's default, 64 KiB, allows one window per round trip); a reader that stops still
            // holds the server back, with at most this much buffered per stream.
            connection.initialSettings = nioDefaultSettings.filter { $0.parameter != .maxHeaderListSize } + [
                HTTP2Setting(parameter: .maxHeaderListSize, value: HTTP2Connection.maximumHeaderListSize),
                HTTP2Setting(parameter: .enablePush, value: 0),
                HTTP2Setting(parameter: .initialWindowSize, value: HTTP2Connection.streamWindow),
            ]
            connection.targetWindowSize = HTTP2Connection.connectionWindow
            // Anything read, a stream's bytes too, shows the server is there (``HTTP2Connection/checkAlive()``).
            let heard = ReadCount()
            try sync.addHandler(ReadStamp(heard))
            // The server's first bytes looked at before NIOHTTP2's, whose own error may come after the streams closed.
            if let tlsFault { try sync.addHandler(ServerPrefaceCheck(into: tlsFault)) }
            let goAways = ErrorGoAwayCloser()
            try sync.addHandler(goAways)
            var stream = NIOHTTP2Handler.StreamConfiguration()
            stream.targetWindowSize = HTTP2Connection.streamWindow
            let multiplexer = try sync.configureHTTP2Pipeline(mode: .client, connectionConfiguration: connection,
                                                              streamConfiguration: stream) { pushed in
                // Server push is turned off (SETTINGS_ENABLE_PUSH 0); a stream the server opens anyway is closed.
                pushed.close()
            }
            try sync.addHandler(HTTP2ConnectionWatcher(connection: HTTP2Connection(channel: channel, key: key, multiplexer: multiplexer,
                                                                                   heard: heard, tlsFault: tlsFault, record: record),
                                                      goAways: goAways))
        }
    }

    /// A connection of its own, never pooled, to `key`'s origin (through its proxy, with TLS for `https`), with
    /// nothing above TLS yet and reading on its own: for a protocol that takes the connection over (WebSocket).
    /// The server's certificate is put to `ask` as for a pooled connection.
    /// Through an HTTP proxy it always tunnels (`CONNECT`), `http` too: the protocol is not HTTP's once it starts.
    ///
    /// Returns the channel and what closed it, if it closes for an error of the TLS handler's (``TLSFaultKeeper``):
    /// a server may refuse the client's certificate just after the handshake, before the caller's handlers are in.
    func openUnpooled(_ key: Key, url: URL, ask: TrustQuestion?) async throws -> (channel: any Channel, fault: Locked<(any Error)?>) {
        do {
            let (channel, fault, _) = try await dialAsking(key, url: url, ask: ask, unpooled: true)
            return (channel, fault ?? Locked(nil))
        } catch {
            throw HTTPErrorMapping.map(error, url: url)
        }
    }

    /// `seconds` as a NIO time amount, clamped to 0…10 years: an infinite or huge setting (no timeout, in
    /// effect) must not overflow the conversion to nanoseconds.
    static func timeAmount(_ seconds: TimeInterval) -> TimeAmount {
        .nanoseconds(Int64(bounded(seconds) * 1e9))
    }

    /// A setting in seconds as the pool uses it: not a number reads as no time, and it lasts ten years at most.
    static func bounded(_ seconds: TimeInterval) -> TimeInterval {
        seconds.isNaN ? 0 : min(max(0, seconds), 10 * 365 * 24 * 3600)
    }

    // MARK: Waiting

    /// An idle connection (unless `fresh`) or the next to come free; `nil` when there is room for a new one
    /// (or a slot came free for this waiter to open one): `acquire` then looks again.
    private func waitForConnection(_ key: Key, url: URL, fresh: Bool) async throws -> Lease? {
        let id = waiterIDs.wrappingAdd(1, ordering: .relaxed).newValue
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Lease?, Never>) in
                switch leaseOrQueue(key, id: id, fresh: fresh, takesStream: false, deliver: { continuation.resume(returning: $0) }) {
                case .leased(let lease): continuation.resume(returning: lease)
                case .mayConnect, .stream: continuation.resume(returning: nil)
                case .queued:
                    // Cancelled before it was queued: the handler below found nothing to withdraw.
                    if Task.isCancelled, let waiter = withdraw(key, id: id) { waiter(nil) }
                }
            }
        } onCancel: {
            if let waiter = withdraw(key, id: id) { waiter(nil) }
        }
        if Task.isCancelled {
            // Withdrawn, or something reached it first: a connection, which goes back, or a free slot, which
            // goes to the next waiter (withdrawn alike, that finds no room or no waiter: nothing happens).
            if let result {
                release(result.connection, reusable: true)
            } else {
                passOnSlot(key)
            }
            throw LoadError(.cancelled, url: url)
        }
        return result
    }

    /// An idle connection now, else a place in the queue for one, else leave to open a new connection.
    /// `deliver` runs on the event loop of the connection given back (or wherever a slot came free). It is
    /// made only if the request is queued (under the pool's lock): a closure made for every request, though
    /// most find a connection idle, cost an allocation each.
    func leaseOrQueue(_ key: Key, deliver: @autoclosure () -> Delivery) -> QueueOutcome {
        leaseOrQueue(key, id: waiterIDs.wrappingAdd(1, ordering: .relaxed).newValue, fresh: false, takesStream: true, deliver: deliver())
    }

    /// `fresh`: not an idle connection (see ``acquire(_:url:fresh:ask:)``). `takesStream`: a place on an HTTP/2
    /// connection is taken here (``QueueOutcome/stream(_:)``), else left to the caller (``QueueOutcome/mayConnect``).
    private func leaseOrQueue(_ key: Key, id: Int, fresh: Bool, takesStream: Bool, deliver: @autoclosure () -> Delivery) -> QueueOutcome {
        state.withLock { state in
            state.host(key) { host -> QueueOutcome in
                if takesStream, let multiplexed = host.takeStream() { return .stream(multiplexed) }
                if host.hasStreamRoom { return .mayConnect }
                if !fresh, let lease = host.takeIdle() { return .leased(lease) }
                if host.mayOpen(for: key) { return .mayConnect }
                host.waiters.append(Waiter(id: id, deliver: deliver()))
                return .queued(id: id)
            }
        }
    }

    /// For a waiter told of a free slot (a `nil` delivery) that no longer wants it: tells the next waiter
    /// instead, if there is room for a connection. Without this, the others would wait for a connection
    /// that nobody is opening.
    func passOnSlot(_ key: Key) {
        let waiter = state.withLock { state in
            state.host(key) { host -> Delivery? in
                // A connection's place, or a stream's on an HTTP/2 connection.
                guard host.hasRoom(under: key.options.maximumConnectionsPerHost) || host.hasStreamRoom else { return nil }
                return host.waiters.popFirst()?.deliver
            }
        }
        waiter?(nil)
    }

    /// Takes a waiting request out of the queue; its delivery, or `nil` if it was already delivered.
    func withdraw(_ key: Key, id: Int) -> Delivery? {
        state.withLock { state in
            state.host(key) { host -> Delivery? in
                guard let index = host.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return host.waiters.remove(at: index).deliver
            }
        }
    }

    /// Notes when `connection` went idle and makes sure one timer watches it: a connection has at most
    /// one pending timer however often it is reused, which re-arms itself for the rest of the timeout
    /// if the connection was reused meanwhile.
    private func scheduleIdleTimeout(_ connection: HTTPConnection) {
        connection.idleSince.store(NIODeadline.now().uptimeNanoseconds, ordering: .relaxed)
        armIdleTimer(connection, after: connection.key.options.idleConnectionTimeout)
    }

    private func armIdleTimer(_ connection: HTTPConnection, after seconds: TimeInterval) {
        guard !connection.idleTimerArmed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        connection.channel.eventLoop.scheduleTask(in: Self.timeAmount(seconds)) { [self] in
            connection.idleTimerArmed.store(false, ordering: .releasing)
            // Bounded as the timer's delay is: a timeout that is not a number, compared as it is, would never
            // expire, and the timer would re-arm itself at once, forever.
            let timeout = Self.bounded(connection.key.options.idleConnectionTimeout)
            let now = NIODeadline.now().uptimeNanoseconds
            enum Verdict { case leased, expired, idleFor(TimeInterval) }
            // Decided under the lock, where leases happen: a connection leased meanwhile is not idle.
            let verdict = state.withLock { state -> Verdict in
                let since = connection.idleSince.load(ordering: .relaxed)
                return state.host(connection.key) { host in
                    guard since != 0, let index = host.idle.firstIndex(where: { $0 === connection }) else { return .leased }
                    let idleFor = TimeInterval(now &- since) / 1e9
                    guard idleFor >= timeout else { return .idleFor(idleFor) }
                    host.idle.remove(at: index)
                    return .expired
                }
            }
            switch verdict {
            case .leased: break
            case .expired: connection.close()
            case .idleFor(let seconds): armIdleTimer(connection, after: timeout - seconds)
            }
        }
    }
}

extension String {
    /// Whether this is an IPv4 or IPv6 address literal (which SNI must not carry).
    var isIPAddress: Bool { IPAddressText.isAddress(self) }
}
