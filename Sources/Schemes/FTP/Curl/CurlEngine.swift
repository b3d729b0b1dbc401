import CCurl
import Foundation
import Loader

/// Drives every FTP transfer of the process: one libcurl multi handle on a thread of its own, so no
/// libcurl call blocks Swift's cooperative pool and all of them happen on one thread (libcurl handles are
/// not thread-safe). Other threads talk to it through an inbox and `curl_multi_wakeup`.
final class CurlEngine: @unchecked Sendable {
    // @unchecked: `multi` and `transfers` are used on the engine's thread only; `inbox` is locked.
    static let shared = CurlEngine()

    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer, LoadError)
        case resume(CurlTransfer)
    }

    private let multi: UnsafeMutableRawPointer
    private let inbox = Locked<[Command]>([])
    private var transfers: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var cancelledEarly: Set<ObjectIdentifier> = []

    private init() {
        // CURL_GLOBAL_ALL (SSL | WIN32): a macro Swift does not import. Called once, before any handle.
        curl_global_init(3)
        guard let multi = curl_multi_init() else { fatalError("libcurl could not make a multi handle") }
        self.multi = multi
        let thread = Thread { [unowned self] in self.run() }
        thread.name = "loader-ftp-curl"
        thread.start()
    }

    /// Runs `transfer` to its end: returns when it finished, throws its ``LoadError`` when it failed or
    /// was cancelled (the handle is freed either way).
    func run(_ transfer: CurlTransfer) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (completion: CheckedContinuation<Void, any Error>) in
                transfer.setCompletion(completion)
                submit(.add(transfer))
            }
        } onCancel: {
            self.submit(.cancel(transfer, LoadError(.cancelled, url: transfer.url)))
        }
    }

    /// Hands a command to the engine's thread and wakes it.
    func submit(_ command: Command) {
        inbox.withLock { $0.append(command) }
        curl_multi_wakeup(multi)
    }

    // MARK: The engine's thread

    private func run() {
        var running: Int32 = 0
        var numfds: Int32 = 0
        while true {
            for command in inbox.withLock({ inbox in defer { inbox.removeAll(keepingCapacity: true) }; return inbox }) {
                apply(command)
            }
            curl_multi_perform(multi, &running)
            collectFinished()
            // Sleeps until a socket is ready, a timer of libcurl's is due, or `submit` wakes it.
            curl_multi_poll(multi, nil, 0, 1000, &numfds)
        }
    }

    private func apply(_ command: Command) {
        switch command {
        case .add(let transfer):
            if cancelledEarly.remove(ObjectIdentifier(transfer)) != nil {
                transfer.end(.failure(LoadError(.cancelled, url: transfer.url)))
                return
            }
            transfers[transfer.easy] = transfer
            curl_multi_add_handle(multi, transfer.easy)
        case .cancel(let transfer, let error):
            // Compared by identity: a freed handle's address may already belong to a newer transfer.
            guard transfers[transfer.easy] === transfer, transfers.removeValue(forKey: transfer.easy) != nil else {
                // Not added yet (or already ended): remember, so that an `add` still in the inbox ends at once.
                if !transfer.hasEnded { cancelledEarly.insert(ObjectIdentifier(transfer)) }
                return
            }
            curl_multi_remove_handle(multi, transfer.easy)
            transfer.end(.failure(error))
        case .resume(let transfer):
            // CURLPAUSE_CONT is 0: a macro Swift does not import.
            if transfers[transfer.easy] === transfer { curl_easy_pause(transfer.easy, 0) }
        }
    }

    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            guard let transfer = transfers.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(multi, easy)
            transfer.end(code == CURLE_OK ? .success(()) : .failure(transfer.error(for: code)))
        }
    }
}
