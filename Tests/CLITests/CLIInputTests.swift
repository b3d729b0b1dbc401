import Foundation
import TestSupport
import Testing

/// Standard input down a pipe (`cmd | loadurl -d @- URL`) and pipes named as files (`-d @<(cmd)`), which give their
/// bytes once: each option that reads them gets the whole input, and so does each URL. Sent to nginx's echo of a
/// whole body, whose answer is a line with the length and type nginx read, then the body.
@Suite("loadurl: standard input and pipes as the files of -d, --data-urlencode, -F, -T and -w",
       .enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/nginx/modules/ngx_http_echo_module.so"),
                "nginx's echo module (libnginx-mod-http-echo) gives /echo-body"))
struct CLIInputTests {
    private func echoURL() throws -> String {
        "http://127.0.0.1:\(try TestServers.requireNginx().httpPort)/echo-body"
    }

    /// A FIFO at a new path whose writer, a thread of its own, gives `bytes` to its first reader and closes it, as
    /// bash's `<(cmd)` does; the writer gives up after 30 s without a reader.
    private func fifo(_ bytes: Data) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cli-input-\(UUID().uuidString).fifo")
        guard mkfifo(url.path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let path = url.path
        Thread.detachNewThread {
            // Without a reader a non-blocking open fails (ENXIO): tried until loadurl opens its end. Close-on-exec: a
            // child another test starts meanwhile must not hold the write end, or the reader would wait for its exit.
            var descriptor: Int32 = -1
            for _ in 0..<3000 {
                descriptor = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                if descriptor >= 0 { break }
                usleep(10_000)
            }
            guard descriptor >= 0 else { return }
            _ = fcntl(descriptor, F_SETFL, 0)
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(descriptor)
        }
        return url
    }

    @Test("Down a pipe, -d @- sends the whole input to each URL; --data-urlencode @-, -F <- and -F @- read it as well")
    func standardInputPipe() async throws {
        let url = try echoURL()
        let posted = try await LoadURLProcess.run(["-sS", "-d", "@-", url, url], input: Data("a=1\nb=2\n".utf8), inputThroughPipe: true)
        #expect(posted.status == 0, "\(posted.stderr)")
        // -d takes a file's line breaks out.
        let once = "length=6 type=application/x-www-form-urlencoded\na=1b=2"
        #expect(posted.stdout == once + once)
        // Standard input by either name is one input, read once: both pieces get it whole.
        let twice = try await LoadURLProcess.run(["-sS", "-d", "@-", "--data-urlencode", "x@/dev/stdin", url], input: Data("a=1\n".utf8),
                                                 inputThroughPipe: true)
        #expect(twice.stdout == "length=14 type=application/x-www-form-urlencoded\na=1&x=a%3D1%0A", "\(twice.stderr)")
        let encoded = try await LoadURLProcess.run(["-sS", "--data-urlencode", "q@-", url], input: Data("x y\n".utf8), inputThroughPipe: true)
        #expect(encoded.stdout == "length=8 type=application/x-www-form-urlencoded\nq=x+y%0A", "\(encoded.stderr)")
        let form = try await LoadURLProcess.run(["-sS", "-F", "note=<-", "-F", "doc=@-", url], input: Data("from stdin\n".utf8),
                                                inputThroughPipe: true)
        #expect(form.status == 0, "\(form.stderr)")
        #expect(form.stdout.contains("name=\"note\"\r\n\r\nfrom stdin\n\r\n"), "\(form.stdout)")
        #expect(form.stdout.contains("name=\"doc\"; filename=\"-\"\r\nContent-Type: application/octet-stream\r\n\r\nfrom stdin\n\r\n"),
                "\(form.stdout)")
    }

    @Test("Down a pipe, -T - streams the input to one URL and sends it whole to each of several, -Z too")
    func uploadFromPipe() async throws {
        let url = try echoURL()
        let input = Data("piped\n".utf8)
        let each = "length=6 type=\npiped\n"
        let one = try await LoadURLProcess.run(["-sS", "-T", "-", url], input: input, inputThroughPipe: true)
        #expect(one.stdout == each, "\(one.stderr)")
        let several = try await LoadURLProcess.run(["-sS", "-T", "-", url, url], input: input, inputThroughPipe: true)
        #expect(several.status == 0, "\(several.stderr)")
        #expect(several.stdout == each + each)
        let parallel = try await LoadURLProcess.run(["-sS", "-Z", "-T", "-", url, url, url], input: input, inputThroughPipe: true)
        #expect(parallel.status == 0, "\(parallel.stderr)")
        #expect(parallel.stdout == each + each + each)
    }

    @Test("A FIFO named by -d @FILE, --data-urlencode and -T (as <(cmd) gives) is read once, and each URL gets its whole bytes")
    func namedPipes() async throws {
        let url = try echoURL()
        let data = try fifo(Data("k=v\n".utf8))
        let encoded = try fifo(Data("é".utf8))
        let upload = try fifo(Data("uploaded\n".utf8))
        defer { for file in [data, encoded, upload] { try? FileManager.default.removeItem(at: file) } }
        let posted = try await LoadURLProcess.run(["-sS", "-d", "@\(data.path)", "--data-urlencode", "e@\(encoded.path)", url, url])
        #expect(posted.status == 0, "\(posted.stderr)")
        let once = "length=12 type=application/x-www-form-urlencoded\nk=v&e=%C3%A9"
        #expect(posted.stdout == once + once)
        let put = try await LoadURLProcess.run(["-sS", "-T", upload.path, url, url])
        #expect(put.status == 0, "\(put.stderr)")
        #expect(put.stdout == "length=9 type=\nuploaded\n" + "length=9 type=\nuploaded\n")
    }

    @Test("--json @- posts JSON down a pipe with its type; -H @FILE reads fields from a FIFO")
    func jsonAndHeadersFromPipes() async throws {
        let url = try echoURL()
        let json = try await LoadURLProcess.run(["-sS", "--json", "@-", url], input: Data("{\"x\": 1}\n".utf8), inputThroughPipe: true)
        #expect(json.stdout == "length=9 type=application/json\n{\"x\": 1}\n", "\(json.stderr)")
        let fields = try fifo(Data("Content-Type: text/x-piped\r\n".utf8))
        defer { try? FileManager.default.removeItem(at: fields) }
        let typed = try await LoadURLProcess.run(["-sS", "-H", "@\(fields.path)", "-d", "x", url, url])
        let once = "length=1 type=text/x-piped\nx"
        #expect(typed.stdout == once + once, "\(typed.stderr)")
    }

    @Test("-K - reads options down a pipe, and leaves standard input empty for a later @-, as curl does")
    func configFromPipe() async throws {
        let run = try await LoadURLProcess.run(["-sS", "-K", "-", "-d", "@-", try echoURL()], input: Data("-w \"[%{http_code}]\"\n".utf8),
                                               inputThroughPipe: true)
        #expect(run.stdout == "length=0 type=application/x-www-form-urlencoded\n[200]", "\(run.stderr)")
    }

    @Test("-w @- reads the format down a pipe")
    func writeOutFromPipe() async throws {
        let run = try await LoadURLProcess.run(["-sS", "-o", "/dev/null", "-w", "@-", "-d", "x", try echoURL()],
                                               input: Data("code %{http_code}".utf8), inputThroughPipe: true)
        #expect(run.stdout == "code 200", "\(run.stderr)")
    }

    @Test("A -d or --data-binary file that cannot be read fails each URL with 26, naming the file and the system's reason")
    func unreadable() async throws {
        let url = try echoURL()
        let missing = try await LoadURLProcess.run(["-sS", "-d", "@/no/such/file", url])
        #expect(missing.status == 26)
        #expect(missing.stderr.contains("-d '@/no/such/file': cannot read /no/such/file: No such file or directory"), "\(missing.stderr)")
        let folder = try await LoadURLProcess.run(["-sS", "--data-binary", "@/tmp", url, url])
        #expect(folder.status == 26)
        #expect(folder.stderr.components(separatedBy: "cannot read /tmp: Is a directory").count == 3, "\(folder.stderr)")
    }
}
