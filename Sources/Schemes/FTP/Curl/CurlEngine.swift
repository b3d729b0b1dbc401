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

/// Drives every FTP transfer of the process: one libcurl multi handle on a thread of its own, so no
/// libcurl call blocks Swift's cooperative pool and all of them happen on one thread (libcurl handles are
/// not thread-safe). Other threads talk to it through an inbox and `curl_multi_wakeup`.
final class CurlEngine: @unchecked Sendable {
    // @unchecked: `multi`, `transfers` and `batches` are used on the engine's thread only; `inbox` is locked.
    /// The process's engine, started by the first FTP load; `nil` when libcurl could not be loaded.
    private static let shared: CurlEngine? = ccurl_load() == nil ? CurlEngine() : nil

    /// The engine, or an ``LoadError/Code/unsupportedURL`` naming `url` and why libcurl is missing.
    static func engine(for url: URL) throws -> CurlEngine {
        guard let engine = shared else {
            let reason = ccurl_load().map { String(cString: $0) } ?? "libcurl is not loaded"
            throw LoadError(.unsupportedURL, url: url, reason: reason)
        }
        return engine
    }

    /// The engine if an FTP load has started it, without starting it (nor loading libcurl) otherwise.
    static var ifStarted: CurlEngine? { started.load(ordering: .acquiring) ? shared : nil }
    private static let started = Atomic<Bool>(false)

    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer, LoadError)
        case resume(CurlTransfer)
        /// A session ended: its kept connections close as soon as no transfer uses them.
        case sessionEnded(Int)
    }

    private let multi: UnsafeMutableRawPointer
    private let inbox = Locked<[Command]>([])
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

    private init() {
        guard let multi = ccurl_multi_init() else { fatalError("libcurl could not make a multi handle") }
        self.multi = multi
        // A plain thread: the engine lives as long as the process.
        let started = Self.detachThread(named: "loader-ftp-curl") { [self] in run() }
        precondition(started == 0, "cannot start the FTP thread: \(Errno(rawValue: started))")
        Self.started.store(true, ordering: .releasing)
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
        inbox.withLock { $0.append(command) }
        ccurl_multi_wakeup(multi)
    }

    // MARK: The engine's thread

    private func run() {
        var running: Int32 = 0
        var numfds: Int32 = 0
        var readsInARow = 0
        while true {
            for command in inbox.withLock({ inbox in defer { inbox.removeAll(keepingCapacity: true) }; return inbox }) {
                apply(command)
            }
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
            // (Not for transfers libcurl holds paused for their readers or upload bodies: it watches none of theirs.)
            if running > 0, transfers.values.contains(where: { !$0.isPaused }), ccurl_multi_watches_sockets(multi) == 0 {
                wait = min(wait, Self.socketlessWait)
            }
            ccurl_multi_poll(multi, nil, 0, wait, &numfds)
        }
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
        if transfer.usesSharedConnections, let reuse = transfer.connectionReuse {
            shares.release(reuse.key, now: Self.now())
        }
    }

    // MARK: Kept connections

    /// Gives `transfer` its session's share handle, before it joins the multi handle (which picks the
    /// connection cache then): a connection it leaves logged in serves the session's next load.
    private func shareConnections(with transfer: CurlTransfer) {
        guard let reuse = transfer.connectionReuse else { return }
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
        // On a thread of its own: libcurl waits for each connection's reply to QUIT, up to two minutes from a
        // server gone silent, which must hold up neither the engine's transfers nor a dispatch or Swift
        // concurrency thread. Nothing else refers to these shares any more; with no thread to be had they are
        // freed here rather than left with their connections open.
        if !expired.isEmpty, Self.detachThread(named: "loader-ftp-close", { Self.free(expired) }) != 0 {
            Self.free(expired)
        }
        return shares.nextExpiry.map { Int32(clamping: ($0 - min($0, now)) / 1_000_000 + 1) }
    }

    private static func free(_ shares: [UnsafeMutableRawPointer]) {
        for share in shares { ccurl_share_cleanup(share) }
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Runs `body` on a new detached thread named `name` (at most 15 bytes); returns `pthread_create`'s result.
    private static func detachThread(named name: String, _ body: @escaping () -> Void) -> Int32 {
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
