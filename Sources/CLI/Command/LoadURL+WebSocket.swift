import FoundationEssentials
import HTTPScheme
import Loader

extension LoadURL {
    /// A `ws:` or `wss:` URL, as curl takes one: the socket opens with the request's header fields, the `-d` or
    /// `--data-binary` body (if any) goes out as one message, and every message the server sends is written to
    /// the output as it comes, text and binary alike, with nothing between them, until the server closes.
    /// A close with 1000, 1001 or no code is success; any other close code is 56, as a connection that ended
    /// badly. `-m` bounds the whole socket (28 when it runs out).
    func webSocketTransfer(_ url: URL, to destination: String?, session: LoaderSession, options: RequestOptions,
                           summary: inout TransferSummary) async -> Int32 {
        var output: OutputFile?
        defer { output?.close() }
        let socket: WebSocketTask
        let firstMessage: WebSocketTask.Message?
        do {
            // The body -d makes (read once, by makeRequest) goes out as the first message, not with the handshake.
            var request = try makeRequest(url, options: options)
            firstMessage = try Self.message(from: request.body, url: url)
            request.body = nil
            socket = session.webSocketTask(with: request)
        } catch {
            return fail(LoadError.wrapping(error, url: url), summary: &summary)
        }
        // -m: the socket is closed when the time is up, and the receive that waits fails.
        let limit = maxTime.flatMap { $0 > 0 ? $0 : nil }
        let watchdog = limit.map { seconds in
            Task {
                try await Task.sleep(for: .seconds(seconds))
                socket.cancel(with: .goingAway, reason: nil)
            }
        }
        defer { watchdog?.cancel() }
        do {
            if let firstMessage { try await socket.send(firstMessage) }
            summary.response = socket.response
            output = try OutputFile(path: destination, createDirectories: createDirectories, url: url)
            while true {
                let message = try await socket.receive()
                let bytes: Data
                switch message {
                case .string(let text): bytes = Data(text.utf8)
                case .data(let data): bytes = data
                }
                try output?.write(bytes)
                summary.bytes += Int64(bytes.count)
            }
        } catch {
            if let failure = error as? OutputFile.Failure {
                socket.cancel(with: .goingAway, reason: nil)
                return fail(failure.error, status: LoadURLExit.cannotWriteOutput, summary: &summary)
            }
            summary.response = socket.response
            let failure = LoadError.wrapping(error, url: url)
            if failure.code == .cancelled, let limit {
                return fail(LoadError(.timedOut, url: url, reason: "the WebSocket was open for the \(limit.printed("%g")) s that -m allows"), summary: &summary)
            }
            // The server's close: a normal one ends the transfer well.
            if let code = socket.closeCode, [.normalClosure, .goingAway, .noStatusReceived].contains(code), failure.code == .networkConnectionLost {
                try? output?.finish()
                return 0
            }
            return fail(failure, summary: &summary)
        }
    }

    /// The message a `-d` or `--data-binary` body makes: text when it is UTF-8, else binary.
    private static func message(from body: RequestBody?, url: URL) throws -> WebSocketTask.Message? {
        let data: Data
        switch body {
        case .bytes(let bytes)?: data = bytes
        case .file(let file)?:
            do {
                data = try InputFile.contents(of: file.path)
            } catch {
                throw LoadError(.requestBodyStreamExhausted, url: url, reason: "\(error)", underlying: error.cause)
            }
        default: return nil
        }
        return String(validating: data, as: UTF8.self).map { .string($0) } ?? .data(data)
    }

    private func fail(_ error: LoadError, status: Int32? = nil, summary: inout TransferSummary) -> Int32 {
        let code = status ?? LoadURLExit.status(for: error)
        summary.exitCode = code
        summary.error = error
        report(error.description, status: code)
        return code
    }
}
