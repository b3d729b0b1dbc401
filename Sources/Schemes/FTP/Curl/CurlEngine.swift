import CCurl
import Dispatch
import FoundationEssentials
import Loader
import Synchronization
import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Drives the FTP transfers to one server: a libcurl multi handle on a thread of its own, so no libcurl call blocks
/// Swift's cooperative pool and all of a handle's calls happen on one thread (libcurl handles are not thread-safe).
/// Other threads talk to it through an inbox and `curl_multi_wakeup`.
///
/// Engines per server (``Server``), not one for the process: libcurl 7.88 waits for some replies blocking, inside
/// `curl_multi_perform` (the `226` that ends a transfer, up to a minute), and a slow server then holds up only the
/// transfers of its engine. A load takes an engine of its server that no other load uses, one that ran a load of its
/// session first (whose kept connection it then reuses), else the oldest, and starts another while all are busy, up to ``enginesPerServer``: loads of one server
/// that run together then wait neither for each other's `226`. An engine with nothing to do for ``retireAfter`` ends
/// its thread.
final class CurlEngine: @unchecked Sendable {
    // @unchecked: `multi`, `transfers`, `batches`, `shares` and `idleSince` are used on the engine's thread only;
    // `inbox` and `retired` are locked, and the engines' table with its users by `engines`.

    /// Where an engine's transfers go: the server, or the proxy in front of it and the server behind.
    struct Server: Hashable {
        let host: String
        let port: Int
        let proxy: String?

        init(_ url: URL, options: FTPOptions) {
            host = (url.host(percentEncoded: false) ?? "").lowercased()
            port = url.port ?? (url.scheme?.lowercased() == "ftps" ? 990 : 21)
            proxy = options.proxy.flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    /// Whether libcurl loaded (once, by the first FTP load).
    private static let libcurlLoaded = ccurl_load() == nil
    /// A running engine, how many loads use it now (an engine in use never retires), and the sessions whose loads it
    /// ran last (at most ``remembered``, the latest first), whose kept connections it may hold.
    private struct Entry {
        let engine: CurlEngine
        var users: Int
        var sessions: [Int] = []

        static let remembered = 16

        mutating func noteUse(by session: Int?) {
            guard let session else { return }
            sessions.removeAll { $0 == session }
            sessions.insert(session, at: 0)
            if sessions.count > Self.remembered { sessions.removeLast() }
        }
    }

    /// The running engines of each server, oldest first.
    private static let engines = Locked<[Server: [Entry]]>([:])

    /// The most engines (threads) one server gets: past it, a load shares the least used one.
    static let enginesPerServer = 8

    /// An engine of `request`'s server, counted as used until ``release()``, or an ``LoadError/Code/unsupportedURL``
    /// naming the URL and why libcurl is missing.
    static func engine(for request: LoadRequest, options: FTPOptions) throws -> CurlEngine {
        guard libcurlLoaded else {
            let reason = ccurl_load().map { String(cString: $0) } ?? "libcurl is not loaded"
            throw LoadError(.unsupportedURL, url: request.url, reason: reason)
        }
        let server = Server(request.url, options: options)
        return try engines.withLock { engines in
            var entries = engines[server] ?? []
            defer { engines[server] = entries.isEmpty ? nil : entries }
            // An idle one that ran a load of the same session (it may hold the connection that load left logged in),
            // else the oldest idle one, else a new one, else the least used.
            let session = request.sessionIdentifier
            let index: Int
            if let session, let known = entries.firstIndex(where: { $0.users == 0 && $0.sessions.contains(session) }) {
                index = known
            } else if let idle = entries.firstIndex(where: { $0.users == 0 }) {
                index = idle
            } else if entries.count < enginesPerServer {
                entries.append(Entry(engine: try CurlEngine(server: server, url: request.url), users: 0))
                index = entries.count - 1
            } else {
                index = entries.indices.min { entries[$0].users < entries[$1].users }!
            }
            entries[index].users += 1
            entries[index].noteUse(by: session)
            return entries[index].engine
        }
    }

    /// A load that took this engine from ``engine(for:options:)`` has ended.
    func release() {
        Self.engines.withLock { engines in
            guard let index = engines[server]?.firstIndex(where: { $0.engine === self }) else { return }
            engines[server]![index].users = max(0, engines[server]![index].users - 1)
        }
    }

    /// Hands `command` to every running engine (a session's end concerns each server's kept connections).
    static func submitToAll(_ command: Command) {
        // Under the table's lock: an engine still in the table has not retired, so its multi handle is not freed.
        engines.withLock { engines in engines.values.joined().forEach { $0.engine.submit(command) } }
    }

    /// How long an engine with no transfer, kept connection or user waits for work before its thread ends.
    static let retireAfter: UInt64 = 10_000_000_000

    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer, LoadError)
        case resume(CurlTransfer)
        /// A session ended: its kept connections close as soon as no transfer uses them.
        case sessionEnded(Int)
    }

    private let server: Server
    private let multi: UnsafeMutableRawPointer
    /// Commands for the engine's thread, and whether that thread has ended (its multi handle freed or about to be).
    private let inbox = Locked<(commands: [Command], retired: Bool)>(([], false))
    /// When the engine last had nothing to do (monotonic nanoseconds; engine thread).
    private var idleSince: UInt64?
    private var transfers: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var cancelledEarly: Set<ObjectIdentifier> = []
    /// Transfers holding bytes for their readers.
    private var batches: [CurlTransfer] = []
    /// Each session's kept control connections (libcurl share handles), freed once idle for their timeout.
    private var shares = ConnectionShares<CurlTransfer.ShareKey, UnsafeMutableRawPointer>()
    /// The longest the engine sleeps with nothing to do, in milliseconds: only a cap, since `submit` wakes it.
    /// Tests lengthen it, so that a lost wake-up shows as a hang rather than as a second's delay.
    static let idleWait = Atomic<Int32>(1000)
    /// Milliseconds to sleep while transfers run with no socket watched (see `run`).
    static let socketlessWait: Int32 = 5
    /// How many times in a row the engine runs libcurl again before handing batches over, while a socket is ready.
    private static let readsPerBatch = 8
    /// Below this many bytes (half a batch buffer) a batch waits a little for more before it is handed over.
    private static let smallBatch = 256 * 1024

    private init(server: Server, url: URL) throws {
        guard let multi = ccurl_multi_init() else { throw LoadError(.unknown, url: url, reason: "libcurl could not make a multi handle") }
        self.server = server
        self.multi = multi
        // A plain thread, not a dispatch or Swift concurrency one: libcurl blocks in it at times.
        // Named for its server's port (a thread's name holds 15 bytes): `top -H` and the tests tell the engines apart.
        let started = Self.detachThread(named: "ftp-curl-\(server.port)") { [self] in run() }
        guard started == 0 else {
            ccurl_multi_cleanup(multi)
            throw LoadError(.unknown, url: url, reason: "cannot start the FTP thread: \(Errno(rawValue: started))")
        }
    }

    /// Runs `transfer` to its end: returns when it finished, throws its ``LoadError`` when it failed or
    /// was cancelled (the handle is freed either way).
    func run(_ transfer: CurlTransfer) async throws {
        try await transfer.startUpload()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (completion: CheckedContinuation<Void, any Error>) in
                transfer.setCompletion(completion)
                submit(.add(transfer))
            }
        } onCancel: {
            transfer.markStopped()
            self.submit(.cancel(transfer, LoadError(.cancelled, url: transfer.url)))
        }
    }

    /// Hands a command to the engine's thread and wakes it.
    func submit(_ command: Command) {
        inbox.withLock { inbox in
            // A retired engine's transfers have all ended: what comes for them now has nothing left to act on.
            // Woken under the lock, so that the retiring thread cannot free the handle meanwhile.
            guard !inbox.retired else { return }
            inbox.commands.append(command)
            ccurl_multi_wakeup(multi)
        }
    }

    // MARK: The engine's thread

    private func run() {
        var running: Int32 = 0
        var numfds: Int32 = 0
        var readsInARow = 0
        while true {
            for command in inbox.withLock({ inbox in defer { inbox.commands.removeAll(keepingCapacity: true) }; return inbox.commands }) {
                apply(command)
            }
            if retireIfIdle() { return }
            ccurl_multi_perform(multi, &running)
            collectFinished()
            if !batches.isEmpty {
                // While a socket is ready, run libcurl again first, so that a batch gathers what is already
                // waiting and the reader is woken once for it. The count covers every socket libcurl
                // watches (an upload's writable one too), hence the bound on rounds. `curl_multi_wait`, not
                // `curl_multi_poll`: the latter empties libcurl's wake-up pipe, so a command submitted meanwhile
                // lost its wake-up and waited in the inbox for the whole sleep below (a new transfer started as
                // the previous one ended, in 4 of 10 runs of four downloads in a row).
                // While every batch is still small, each round waits up to a millisecond for more bytes, so
                // that a reader is woken about half as often (pyftpdlib's sends come some 100 KB at a time);
                // a trickle is held at most `readsPerBatch` milliseconds. A command waits about one: each
                // round goes back to the inbox first.
                if readsInARow < Self.readsPerBatch {
                    let small = batches.allSatisfy { $0.pendingBytes < Self.smallBatch }
                    ccurl_multi_wait(multi, nil, 0, small ? 1 : 0, &numfds)
                    if numfds > 0 {
                        readsInARow += 1
                        continue
                    }
                }
                readsInARow = 0
                let ready = batches
                batches.removeAll(keepingCapacity: true)
                ready.forEach { $0.deliverBatch() }
            }
            // Before sleeping, not in the look-ahead rounds above: closes the connections of sessions idle past
            // their timeout, and the sleep ends in time for the next.
            let untilIdleClose = shares.isEmpty ? nil : closeIdleConnections()
            // Sleeps until a socket is ready, a timer of libcurl's is due, or `submit` wakes it. With transfers running
            // and no socket watched, libcurl (7.88) sets no timer either: seen right after an EPSV reply, before the
            // data connection, where each file then waited the whole sleep (1 s; curl's own CLI alike). So it comes
            // back in 5 ms then: shorter than the 100 ms curl_multi_fdset's manual suggests for that state, since here
            // it stands for a whole round trip per file. The check is for the handle as a whole: a transfer in that
            // state still waits while another watches a quiet socket.
            var wait = min(Self.idleWait.load(ordering: .relaxed), untilIdleClose ?? .max)
            if let idleSince {
                // Back in time to retire.
                let now = Self.now()
                wait = min(wait, Int32(clamping: (Self.retireAfter - min(Self.retireAfter, now - min(now, idleSince))) / 1_000_000 + 1))
            }
            // (Not for transfers libcurl holds paused for their readers or upload bodies: it watches none of theirs.)
            if running > 0, transfers.values.contains(where: { !$0.isPaused }), ccurl_multi_watches_sockets(multi) == 0 {
                wait = min(wait, Self.socketlessWait)
            }
            ccurl_multi_poll(multi, nil, 0, wait, &numfds)
        }
    }

    /// Ends the engine (its thread returns after this) when it has had nothing to do for ``retireAfter`` and no load
    /// uses it: takes it out of the table, then frees its multi handle.
    private func retireIfIdle() -> Bool {
        guard transfers.isEmpty, batches.isEmpty, shares.isEmpty else {
            idleSince = nil
            return false
        }
        let now = Self.now()
        guard let since = idleSince else {
            idleSince = now
            return false
        }
        guard now - min(now, since) >= Self.retireAfter else { return false }
        // The table's lock, then the inbox's (as `submitToAll`): a load that took the engine keeps it until its
        // release, and a command already in the inbox is run first.
        let retired = Self.engines.withLock { engines -> Bool in
            guard let entries = engines[server], let index = entries.firstIndex(where: { $0.engine === self }),
                  entries[index].users == 0 else { return false }
            return inbox.withLock { inbox in
                guard inbox.commands.isEmpty else { return false }
                inbox.retired = true
                engines[server]!.remove(at: index)
                if engines[server]!.isEmpty { engines[server] = nil }
                return true
            }
        }
        if retired {
            ccurl_multi_cleanup(multi)
        } else {
            // A load holds it with no transfer yet (an upload waiting for its body, a login for a delegate's answer):
            // the clock starts again, rather than the engine coming back every millisecond to ask.
            idleSince = now
        }
        return retired
    }

    /// Notes that `transfer` holds bytes to hand over once the engine has read what is waiting.
    func noteBatch(_ transfer: CurlTransfer) {
        batches.append(transfer)
    }

    private func apply(_ command: Command) {
        switch command {
        case .add(let transfer):
            if cancelledEarly.remove(ObjectIdentifier(transfer)) != nil {
                transfer.end(.failure(LoadError(.cancelled, url: transfer.url)))
                return
            }
            transfers[transfer.easy] = transfer
            shareConnections(with: transfer)
            let added = ccurl_multi_add_handle(multi, transfer.easy)
            if added != CURLM_OK {
                // Out of memory, or libcurl's own fault: the load ends now, not at its timeout.
                transfers.removeValue(forKey: transfer.easy)
                end(transfer, .failure(LoadError(.unknown, url: transfer.url, reason: "libcurl would not take the transfer (CURLMcode \(added.rawValue))")))
            }
        case .cancel(let transfer, let error):
            // Compared by identity: a freed handle's address may already belong to a newer transfer.
            guard transfers[transfer.easy] === transfer, transfers.removeValue(forKey: transfer.easy) != nil else {
                // Not added yet (or already ended): remember, so that an `add` still in the inbox ends at once.
                if !transfer.hasEnded { cancelledEarly.insert(ObjectIdentifier(transfer)) }
                return
            }
            ccurl_multi_remove_handle(multi, transfer.easy)
            end(transfer, .failure(error))
        case .sessionEnded(let session):
            shares.expireSoon { $0.session == session }
        case .resume(let transfer):
            // CURLPAUSE_CONT is 0: a macro Swift does not import.
            if transfers[transfer.easy] === transfer {
                transfer.noteResumed()
                ccurl_easy_pause(transfer.easy, 0)
            }
        }
    }

    private func collectFinished() {
        var left: Int32 = 0
        while let message = ccurl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            guard let transfer = transfers.removeValue(forKey: easy) else { continue }
            ccurl_multi_remove_handle(multi, easy)
            end(transfer, code == CURLE_OK ? .success(()) : .failure(transfer.error(for: code)))
        }
    }

    /// Ends a transfer that was in the multi handle (which frees its easy handle), then counts it out of its share.
    private func end(_ transfer: CurlTransfer, _ result: Result<Void, LoadError>) {
        transfer.end(result)
        if let share = transfer.ownShare {
            // The transfer's handle is freed: the share is no longer in use.
            transfer.ownShare = nil
            Self.closer.close([share])
        }
        if transfer.usesSharedConnections, let reuse = transfer.connectionReuse {
            shares.release(reuse.key, now: Self.now())
        }
    }

    // MARK: Kept connections

    /// Gives `transfer` its session's share handle, before it joins the multi handle (which picks the
    /// connection cache then): a connection it leaves logged in serves the session's next load.
    private func shareConnections(with transfer: CurlTransfer) {
        guard let reuse = transfer.connectionReuse else {
            // A connection of its own, in a share of its own, freed off this thread once the transfer ends: its `QUIT`,
            // whose reply libcurl awaits up to two minutes, then holds up no transfer here.
            guard let share = ccurl_share_connections() else {
                transfer.useConnectionOfItsOwn()
                return
            }
            if ccurl_setopt_pointer(transfer.easy, CURLOPT_SHARE, share) == CURLE_OK {
                transfer.ownShare = share
            } else {
                Self.free([share])
                transfer.useConnectionOfItsOwn()
            }
            return
        }
        guard let share = shares.acquire(reuse.key, idleTimeout: reuse.idleTimeout, make: { ccurl_share_connections() }) else {
            // Without a share the multi handle's own cache would mix sessions and TLS settings.
            transfer.useConnectionOfItsOwn()
            return
        }
        if ccurl_setopt_pointer(transfer.easy, CURLOPT_SHARE, share) == CURLE_OK {
            transfer.usesSharedConnections = true
            return
        }
        shares.release(reuse.key, now: Self.now())
        transfer.useConnectionOfItsOwn()
    }

    /// Frees the shares no transfer has used for their idle timeout, which closes their connections (with a
    /// `QUIT`); returns how long the engine may sleep before the next one runs out, in milliseconds.
    private func closeIdleConnections() -> Int32? {
        let now = Self.now()
        let expired = shares.takeExpired(now: now)
        // Nothing else refers to these shares any more.
        if !expired.isEmpty { Self.closer.close(expired) }
        return shares.nextExpiry.map { Int32(clamping: ($0 - min($0, now)) / 1_000_000 + 1) }
    }

    /// The process's closing threads, shared by every engine.
    private static let closer = ShareCloser()

    /// Frees share handles, which closes their connections, on at most ``limit`` threads of their own: libcurl waits
    /// for each connection's reply to `QUIT`, up to two minutes from a server gone silent, which must hold up neither
    /// an engine's transfers nor a dispatch or Swift concurrency thread; and a silent server's connections, closed one
    /// load after another, must not take a thread each. A thread ends when nothing is left to free.
    private final class ShareCloser: @unchecked Sendable {
        // @unchecked: the handles are only passed through the locked queue.
        private struct Queue {
            var waiting: [UnsafeMutableRawPointer] = []
            var threads = 0
        }
        private let queue = Locked(Queue())
        static let limit = 8

        func close(_ shares: [UnsafeMutableRawPointer]) {
            let startThread = queue.withLock { queue -> Bool in
                queue.waiting += shares
                guard queue.threads < Self.limit else { return false }
                queue.threads += 1
                return true
            }
            guard startThread else { return }
            if CurlEngine.detachThread(named: "ftp-close", { [self] in drain() }) != 0 {
                // No thread to be had: the ones running take the handles; with none running, they are freed here
                // rather than left with their connections open.
                let alone = queue.withLock { queue -> [UnsafeMutableRawPointer] in
                    queue.threads -= 1
                    guard queue.threads == 0 else { return [] }
                    defer { queue.waiting = [] }
                    return queue.waiting
                }
                CurlEngine.free(alone)
            }
        }

        private func drain() {
            while let share = queue.withLock({ queue -> UnsafeMutableRawPointer? in
                if queue.waiting.isEmpty {
                    queue.threads -= 1
                    return nil
                }
                return queue.waiting.removeFirst()
            }) {
                CurlEngine.free([share])
            }
        }
    }

    private static func free(_ shares: [UnsafeMutableRawPointer]) {
        // CURLSHE_IN_USE cannot come: a share is freed only once no handle uses it.
        for share in shares { ccurl_share_cleanup(share) }
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Runs `body` on a new detached thread named `name` (at most 15 bytes); returns `pthread_create`'s result.
    fileprivate static func detachThread(named name: String, _ body: @escaping () -> Void) -> Int32 {
        let context = Unmanaged.passRetained(ThreadBody(name: name, body)).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            let thread = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
            ccurl_name_this_thread(thread.name)
            thread.body()
            return nil
        }, context)
        if started == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<ThreadBody>.fromOpaque(context).release()
        }
        return started
    }
}

/// What a thread started by `CurlEngine.detachThread` runs, handed to it through `pthread_create`'s argument.
private final class ThreadBody {
    let name: String
    let body: () -> Void
    init(name: String, _ body: @escaping () -> Void) {
        self.name = name
        self.body = body
    }
}
