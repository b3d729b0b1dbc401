import Foundation
import FTPScheme
import HTTPTypes
import Loader
import TestSupport
import Testing

extension FTPServerTests {
@Suite("ftp: downloads, listings, ranges and errors against pyftpdlib")
struct FTPDownloadTests {
    @Test("A download gives the file byte for byte, with Content-Length, Content-Type and Last-Modified")
    func download() async throws {
        let (text, response) = try await FTPServers.session().data(from: try FTPServers.url("/hello.txt"))
        #expect(String(decoding: text, as: UTF8.self) == "Hello from FTP\n")
        #expect(response.expectedContentLength == 15)
        #expect(response.mimeType == "text/plain")
        #expect(response.status == nil)
        #expect(response.headerFields[.lastModified]?.hasSuffix(" GMT") == true)
        let (binary, _) = try await FTPServers.session().data(from: try FTPServers.url("/300k.bin"))
        #expect(binary == (try FTPServers.file("/300k.bin")))
    }

    /// Keeps the transactions a task's metrics tell of.
    final class TransactionRecorder: LoadTaskDelegate {
        let collected = Locked<[LoadTransactionMetrics]>([])
        func loadTask(_ task: LoadTask, didCollect transaction: LoadTransactionMetrics) { collected.withLock { $0.append(transaction) } }
    }

    @Test("A task with a delegate gets one transaction per load: the dialogue up to the transfer (a refusal's too), and the server's address")
    func dialogue() async throws {
        let server = try FTPServers.require()
        let session = FTPServers.session()
        let recorder = TransactionRecorder()
        _ = try await session.data(for: LoadRequest(url: try FTPServers.url("/hello.txt")), delegate: recorder)
        let missing = try FTPServers.url("/missing.txt")
        let error = await loadError { _ = try await session.data(for: LoadRequest(url: missing), delegate: recorder) }
        #expect(error?.code == .fileDoesNotExist, "\(String(describing: error))")
        let transactions = recorder.collected.withLock { $0 }
        try #require(transactions.count == 2, "\(transactions.map(\.dialogue))")
        let (first, second) = (transactions[0], transactions[1])
        #expect(first.dialogue.first?.hasPrefix("< 220") == true, "\(first.dialogue)")
        #expect(first.dialogue.contains("> USER anonymous"), "\(first.dialogue)")
        // The password is masked (the anonymous login's is an address).
        #expect(first.dialogue.contains("> PASS ****"), "\(first.dialogue)")
        #expect(!first.dialogue.joined().contains("@example"), "\(first.dialogue)")
        #expect(first.dialogue.contains("> RETR hello.txt"), "\(first.dialogue)")
        #expect(first.remoteAddress == "127.0.0.1" && first.remotePort == server.port)
        #expect(first.networkProtocolName == "ftp")
        #expect(!first.isReusedConnection)
        // The session kept the control connection: no greeting or login again.
        #expect(second.isReusedConnection)
        #expect(!second.dialogue.contains("> USER anonymous"), "\(second.dialogue)")
        #expect(second.dialogue.last?.hasPrefix("< 550") == true, "\(second.dialogue)")
        // No server reached: no transaction (a connect refused says nothing).
        let refused = await loadError {
            _ = try await session.data(for: LoadRequest(url: URL(string: "ftp://127.0.0.1:1/x")!), delegate: recorder)
        }
        #expect(refused?.code == .cannotConnectToHost, "\(String(describing: refused))")
        #expect(recorder.collected.withLock { $0.count } == 2)
    }

    @Test("Asked for names alone (NLST), a folder's listing is its entries' names, a line each")
    func namesOnly() async throws {
        var request = LoadRequest(url: try FTPServers.url("/folder/"))
        request.options[FTPOptions.self].listsNamesOnly = true
        let (data, response) = try await FTPServers.session().data(for: request)
        #expect(response.mimeType == "text/plain")
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init)
        #expect(lines.sorted() == ["a.txt", "b.txt", "sub"], "\(lines)")
    }

    @Test("A URL ending in / (or with no path) lists the folder as text/plain; FTPListing parses it")
    func listing() async throws {
        let (data, response) = try await FTPServers.session().data(from: try FTPServers.url("/folder/"))
        #expect(response.mimeType == "text/plain")
        let entries = FTPListing.parse(String(decoding: data, as: UTF8.self))
        #expect(entries.map(\.name).sorted() == ["a.txt", "b.txt", "sub"])
        #expect(entries.first { $0.name == "b.txt" }?.size == 2)
        #expect(entries.first { $0.name == "b.txt" }?.kind == .file)
        #expect(entries.first { $0.name == "sub" }?.kind == .directory)
        // A URL with no path at all names the root folder, listed alike.
        let (root, rootResponse) = try await FTPServers.session().data(from: try FTPServers.url(""))
        #expect(rootResponse.mimeType == "text/plain", "\(rootResponse.headerFields)")
        let names = FTPListing.parse(String(decoding: root, as: UTF8.self)).map(\.name)
        #expect(names.contains("hello.txt") && names.contains("folder"), "\(names)")
    }

    @Test("A body arrives byte for byte whether its chunks are kept to the end or dropped as they come")
    func chunksKeptOrDropped() async throws {
        // Holds three copies of 8 MiB: not while another test measures the process's peak memory.
        try await ExclusiveGate.memory.exclusive {
            // Large chunks are handed on in buffers that come back for reuse when dropped: keeping every chunk
            // checks that no buffer is reused under a chunk still held (and that chunks outlive the transfer);
            // dropping each checks that a reused buffer carries the new bytes only.
            let url = try FTPServers.url("/8m.bin")
            let expected = try FTPServers.file("/8m.bin")
            let (kept, _) = try await FTPServers.session().bytes(from: url)
            var chunks: [Data] = []
            for try await chunk in kept.chunks { chunks.append(chunk) }
            #expect(chunks.count > 1)
            var whole = Data(capacity: expected.count)
            for chunk in chunks { whole.append(chunk) }
            #expect(Bytes.difference(whole, expected) == nil, "the kept chunks")

            let (dropped, _) = try await FTPServers.session().bytes(from: url)
            var offset = 0
            var mismatches = 0
            for try await chunk in dropped.chunks {
                let end = offset + chunk.count
                if end > expected.count || !chunk.elementsEqual(expected[offset..<end]) { mismatches += 1 }
                offset = end
            }
            #expect(offset == expected.count)
            #expect(mismatches == 0, "\(mismatches) chunks differ from the file at their offsets")
        }
    }

    @Test("A byte range starts the transfer at its offset (REST) and stops at its end, and says so in Content-Range")
    func ranges() async throws {
        let whole = try FTPServers.file("/300k.bin")
        var request = LoadRequest(url: try FTPServers.url("/300k.bin"))
        request.headerFields[.range] = "bytes=100-199"
        let (middle, middleResponse) = try await FTPServers.session().data(for: request)
        #expect(middle == whole.subdata(in: 100..<200))
        // Stopped at its own end: the file's size is not known from this transfer.
        #expect(middleResponse.headerFields[.contentRange] == "bytes 100-199/*")
        request.headerFields[.range] = "bytes=299990-"
        let (tail, tailResponse) = try await FTPServers.session().data(for: request)
        #expect(tail == whole.suffix(10))
        #expect(tailResponse.headerFields[.contentRange] == "bytes 299990-299999/300000")
        // From the file's size: nothing to send, and a head that says so (libcurl's length was the file's).
        request.headerFields[.range] = "bytes=300000-"
        let (nothing, nothingResponse) = try await FTPServers.session().data(for: request)
        #expect(nothing.isEmpty)
        #expect(nothingResponse.headerFields[.contentLength] == "0")
        #expect(nothingResponse.headerFields[.contentRange] == nil)
        request.headerFields[.range] = "bytes=5-1"
        let error = await loadError { _ = try await FTPServers.session().data(for: request) }
        #expect(error?.code == .resourceUnavailable)
    }

    @Test("HEAD gives the size without the body")
    func head() async throws {
        let (data, response) = try await FTPServers.session().data(for: LoadRequest(url: try FTPServers.url("/300k.bin"), method: .head))
        #expect(data.isEmpty)
        #expect(response.expectedContentLength == 300_000)
    }

    @Test("A missing file is fileDoesNotExist naming the URL, carrying libcurl's message and the server's own words")
    func missing() async throws {
        let url = try FTPServers.url("/nope.txt")
        let error = await loadError { _ = try await FTPServers.session().data(from: url) }
        #expect(error?.code == .fileDoesNotExist)
        #expect(error?.url == url)
        #expect(error?.description.contains("libcurl 78") == true, "\(String(describing: error))")
        // The reply that refused it (pyftpdlib: "550 No such file or directory."): what tells a missing file from
        // a forbidden one, which FTP answers with the same code.
        #expect(error?.description.contains("the server said: 550 ") == true, "\(String(describing: error))")
        // And the reply itself, for a caller to read: a 5xx, not worth trying again.
        let reply = error?.underlying as? FTPReply
        #expect(reply?.code == 550 && reply?.isTransient == false && reply?.text.hasPrefix("550 ") == true, "\(String(describing: reply))")
    }

    @Test("A folder of the path the server will not enter is fileDoesNotExist (cannotCreateFile for an upload), its underlying error FTPFolderRefused with the reply")
    func missingFolder() async throws {
        let url = try FTPServers.url("/no-such-folder/file.txt")
        let error = await loadError { _ = try await FTPServers.session().data(from: url) }
        #expect(error?.code == .fileDoesNotExist && error?.url == url, "\(String(describing: error))")
        let refusal = error?.underlying as? FTPFolderRefused
        #expect(refusal?.reply?.code == 550, "\(String(describing: error))")
    }

    @Test("A busy server's 450 to the download is resourceUnavailable carrying the reply, which says to try again")
    func busy() async throws {
        let url = try FTPServers.url("/busy-1-\(UUID().uuidString).txt")
        let error = await loadError { _ = try await FTPServers.session().data(from: url) }
        #expect(error?.code == .resourceUnavailable && error?.url == url, "\(String(describing: error))")
        let reply = error?.underlying as? FTPReply
        #expect(reply?.code == 450 && reply?.isTransient == true, "\(String(describing: reply))")
        // The server's second answer for that name is the file (hello.txt in its place).
        let (data, _) = try await FTPServers.session().data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from FTP\n")
    }

    @Test("A server that drops the data connection mid-file is networkConnectionLost, never a short success")
    func cutShort() async throws {
        let url = try FTPServers.url("/300k.bin", port: try FTPServers.require().cutPort)
        let error = await loadError { _ = try await FTPServers.session().data(from: url) }
        #expect(error?.code == .networkConnectionLost, "\(String(describing: error))")
        #expect(error?.url == url)
    }

    @Test("A connect timeout out of range (infinite, NaN) neither crashes nor stalls a download")
    func connectTimeoutOutOfRange() async throws {
        for timeout in [TimeInterval.infinity, .nan, 1e300] {
            let session = FTPServers.session { $0.handlerOptions[FTPOptions.self].connectTimeout = timeout }
            let (text, _) = try await session.data(from: try FTPServers.url("/hello.txt"))
            #expect(String(decoding: text, as: UTF8.self) == "Hello from FTP\n", "connect timeout \(timeout)")
        }
    }

    @Test("A refused connection is cannotConnectToHost, its cause ECONNREFUSED as a POSIXError")
    func refused() async throws {
        // A port nobody listens on: bind one, note it, close it.
        let listener = LoopbackPorts.closed()
        let url = URL(string: "ftp://127.0.0.1:\(listener)/x")!
        let error = await loadError { _ = try await FTPServers.session().data(from: url) }
        #expect(error?.code == .cannotConnectToHost)
        #expect((error?.underlying as? POSIXError)?.code == .ECONNREFUSED, "\(String(describing: error?.underlying))")
    }

    @Test("A 512 MiB download streams in bounded memory and arrives whole")
    func largeInBoundedMemory() async throws {
        let url = try FTPServers.url("/512m.bin")
        let (growth, count) = try await ResourceProbes.measuringPeakGrowth {
            let (bytes, response) = try await FTPServers.session().bytes(from: url)
            #expect(response.expectedContentLength == 512 << 20)
            var count = 0
            for try await chunk in bytes.chunks {
                count += chunk.count
            }
            return count
        }
        #expect(count == 512 << 20)
        #expect(growth < ResourceProbes.peakGrowthLimit, "peak RSS grew \(growth >> 20) MiB")
    }

    @Test("Cancelling mid-transfer ends the load cancelled, before the file is whole")
    func cancel() async throws {
        // The throttled server sends 300 kB at about 8 kB/s: half a minute, unless the cancel stops it.
        let url = try FTPServers.url("/300k.bin", port: try FTPServers.require().slowPort)
        let session = FTPServers.session()
        let (bytes, _) = try await session.bytes(from: url)
        var received = 0
        let error = await loadError {
            for try await chunk in bytes.chunks {
                received += chunk.count
                // Cancelled as soon as the transfer is under way, from inside the reading loop.
                bytes.task.cancel()
            }
        }
        #expect(error?.code == .cancelled)
        #expect(error?.url == url)
        #expect(received < 300_000)
        #expect(session.allTasks.isEmpty)
    }
}
}
