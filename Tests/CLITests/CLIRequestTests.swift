import ArgumentParser
import Foundation
import FTPScheme
import HTTPScheme
import HTTPTypes
import Loader
@testable import LoadURLCommand
import Testing

/// The requests and session settings `loadurl`'s options make, read as curl reads the same options.
@Suite("loadurl: the requests its options make, as curl's")
struct CLIRequestTests {
    private func command(_ arguments: [String]) throws -> LoadURL { try LoadURL.parseQuickly(arguments) }

    private func request(_ arguments: [String]) throws -> LoadRequest {
        let command = try command(arguments)
        let text = try #require(command.urls.first)
        let url = try #require(URL(string: text))
        return try command.makeRequest(url, options: command.requestOptions)
    }

    private func bytes(_ body: RequestBody?) -> String? {
        guard case .bytes(let data)? = body else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    private func temporaryFile(_ text: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cli-request-\(UUID().uuidString).txt")
        try Data(text.utf8).write(to: file)
        return file
    }

    @Test("Seconds past what a timer holds (-m, --connect-timeout, --retry-delay, --retry-max-time: 1e21, inf, nan) are a usage error naming the option, as curl's 'too large number', not a crash", arguments: [
        ["-m", "1e21", "ws://127.0.0.1:1/"], ["--connect-timeout", "nan", "http://127.0.0.1:1/"],
        ["--retry", "1", "--retry-delay", "1e21", "--retry-connrefused", "http://127.0.0.1:1/"],
        ["--retry", "1", "--retry-delay", "inf", "http://127.0.0.1:1/"], ["--retry-max-time", "1e300", "http://127.0.0.1:1/"],
    ])
    func secondsTooLarge(arguments: [String]) async throws {
        let run = try await LoadURLProcess.run(["-S"] + arguments)
        let option = arguments.first { $0.hasPrefix("-") && $0 != "--retry" && $0 != "--retry-connrefused" } ?? ""
        #expect(run.status == 2, "\(run.status): \(run.stderr)")
        #expect(run.stderr.contains(option + " wants a number of seconds"), "\(run.stderr)")
    }

    @Test("-s does not hide a usage error (curl prints them whatever -s says): exit 2 with the option named")
    func usageErrorUnderSilent() async throws {
        for arguments in [["-s", "-C", "abc", "data:,x"], ["-s", "--retry-delay", "inf", "data:,x"]] {
            let run = try await LoadURLProcess.run(arguments)
            #expect(run.status == 2 && run.stderr.contains(arguments[1]), "\(arguments): \(run.status) \(run.stderr)")
        }
    }

    @Test("-d pieces are joined with &, a -d file without its line breaks; --data-binary keeps them; a lone --data-binary @file streams; all go as a form")
    func dataPieces() throws {
        let form = try temporaryFile("b=2\r\nc=3\n")
        let binary = try temporaryFile("x\ny\n")
        defer { try? FileManager.default.removeItem(at: form); try? FileManager.default.removeItem(at: binary) }
        let joined = try request(["-d", "a=1", "-d", "@\(form.path)", "--data-binary", "@\(binary.path)", "http://h/"])
        #expect(joined.method == .post)
        #expect(bytes(joined.body) == "a=1&b=2c=3&x\ny\n")
        #expect(joined.headerFields[.contentType] == "application/x-www-form-urlencoded")
        let streamed = try request(["--data-binary", "@\(binary.path)", "http://h/"])
        guard case .file(let file)? = streamed.body else {
            Issue.record("a lone --data-binary @file is not streamed from the file: \(String(describing: streamed.body))")
            return
        }
        #expect(file.path == binary.path)
        // A --data-binary body goes as a form too, as curl's does, unless -H gives a type or takes it away.
        #expect(streamed.headerFields[.contentType] == "application/x-www-form-urlencoded")
        #expect(try request(["--data-binary", "x", "-H", "Content-Type: text/plain", "http://h/"]).headerFields[.contentType] == "text/plain")
        #expect(try request(["--data-binary", "x", "-H", "Content-Type:", "http://h/"]).headerFields[.contentType] == nil)
        let missing = #expect(throws: LoadError.self) { _ = try request(["-d", "a=1", "-d", "@/no/such/file", "http://h/"]) }
        #expect(missing?.code == .requestBodyStreamExhausted)
    }

    @Test("--data-raw sends its piece as written, a leading @ too, in its place among the -d pieces; --data-ascii is -d")
    func dataRaw() throws {
        let file = try temporaryFile("f=1\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let sent = try request(["-d", "a=1", "--data-raw", "@\(file.path)", "--data-ascii", "@\(file.path)", "--data-raw=b=2\n", "http://h/"])
        #expect(bytes(sent.body) == "a=1&@\(file.path)&f=1&b=2\n")
        #expect(sent.method == .post && sent.headerFields[.contentType] == "application/x-www-form-urlencoded")
        // Read by ArgumentParser alone (LoadURL.parse), the raw pieces still go as written.
        let whole = try LoadURL.parse(["-d", "a", "--data-raw", "@x", "http://h/"])
        #expect(bytes(try whole.makeRequest(URL(string: "http://h/")!, options: whole.requestOptions).body) == "a&@x")
        #expect(throws: ValidationError.self) { _ = try command(["--data-raw", "x", "-F", "a=1", "http://h/"]).makeConfiguration() }
    }

    @Test("-i prints the status line in the response's own version: HTTP/1.0, HTTP/1.1, or HTTP/2 with no reason phrase")
    func statusLineVersion() {
        func line(_ version: String?) -> String {
            let response = LoadResponse(url: URL(string: "http://h/")!, status: .ok, headerFields: [:], networkProtocolName: version)
            return response.printableHead.components(separatedBy: "\r\n")[0]
        }
        #expect(line("http/1.0") == "HTTP/1.0 200 OK" && line("http/1.1") == "HTTP/1.1 200 OK" && line("h2") == "HTTP/2 200 ")
    }

    @Test("Every HTTP(S) request says Accept: */*, as curl's do, unless -H gives an Accept or takes it away, or --json asks for JSON")
    func acceptAny() throws {
        #expect(try request(["http://h/"]).headerFields[.accept] == "*/*")
        #expect(try request(["-d", "a=1", "https://h/"]).headerFields[.accept] == "*/*")
        #expect(try request(["-H", "Accept: text/html", "http://h/"]).headerFields[.accept] == "text/html")
        #expect(try request(["-H", "Accept:", "http://h/"]).headerFields[.accept] == nil)
        #expect(try request(["--json", "{}", "http://h/"]).headerFields[.accept] == "application/json")
        #expect(try request(["ftp://h/f"]).headerFields[.accept] == nil)
    }

    @Test("--oauth2-bearer sends Authorization: Bearer to HTTP(S) and WebSocket URLs; a -H Authorization (or none) wins; a token with a line break is refused")
    func bearer() throws {
        #expect(try request(["--oauth2-bearer", "t0k.en", "http://h/"]).headerFields[.authorization] == "Bearer t0k.en")
        #expect(try request(["--oauth2-bearer", "t", "wss://h/"]).headerFields[.authorization] == "Bearer t")
        #expect(try request(["--oauth2-bearer", "t", "-H", "Authorization: Basic eA==", "http://h/"]).headerFields[.authorization] == "Basic eA==")
        #expect(try request(["--oauth2-bearer", "t", "-H", "Authorization:", "http://h/"]).headerFields[.authorization] == nil)
        #expect(try request(["--oauth2-bearer", "t", "ftp://h/f"]).headerFields[.authorization] == nil)
        // -u's Basic gives way to a -H Authorization too, as curl's own fields do.
        #expect(try request(["-u", "x:y", "-H", "Authorization: Bearer t", "http://h/"]).headerFields[.authorization] == "Bearer t")
        #expect(try request(["-u", "x:y", "-H", "Authorization:", "http://h/"]).headerFields[.authorization] == nil)
        #expect(try request(["-u", "x:y", "http://h/"]).headerFields[.authorization] == Credential(user: "x", password: "y").basicAuthorization)
        let refused = #expect(throws: ValidationError.self) { _ = try command(["--oauth2-bearer", "t\r\nX-Evil: 1", "http://h/"]).makeConfiguration() }
        #expect(refused?.message.contains("--oauth2-bearer") == true)
    }

    @Test("-H with a name given twice sends both fields; 'Name;' sends one with an empty value; a line without either is refused")
    func headerFields() throws {
        let sent = try request(["-H", "X-A: 1", "-H", "X-A: 2", "-H", "X-Empty;", "http://h/"])
        #expect(sent.headerFields[values: HTTPField.Name("X-A")!] == ["1", "2"])
        #expect(sent.headerFields[values: HTTPField.Name("X-Empty")!] == [""])
        #expect(throws: LoadError.self) { _ = try request(["-H", "no separator", "http://h/"]) }
    }

    @Test("-w @FILE reads the format from FILE once, without its line breaks, as curl 7.88 does; a plain -w is the format itself")
    func writeOutFromFile() throws {
        let file = try temporaryFile("%{http_code} %{url}\\n\r\n%{size_download}\n")
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try command(["-w", "@\(file.path)", "http://h/"]).requestOptions.writeOut == "%{http_code} %{url}\\n%{size_download}")
        #expect(try command(["-w", "%{url}", "http://h/"]).requestOptions.writeOut == "%{url}")
        #expect(try command(["-s", "-w", "@/nonexistent/format", "http://h/"]).requestOptions.writeOut == "")
        #expect(try command(["http://h/"]).requestOptions.writeOut == nil)
    }

    @Test("-H 'Name:' sends no such field: not an earlier -H's, not the Content-Type that -d adds")
    func headerRemoved() throws {
        let sent = try request(["-H", "X-A: 1", "-H", "X-A:", "-H", "Content-Type:", "-H", "X-B:  ", "-d", "a=1", "http://h/"])
        #expect(sent.headerFields[HTTPField.Name("X-A")!] == nil)
        #expect(sent.headerFields[HTTPField.Name("X-B")!] == nil)
        #expect(sent.headerFields[.contentType] == nil)
        #expect(sent.method == .post)
        let form = try request(["-H", "X-A:", "-d", "a=1", "http://h/"])
        #expect(form.headerFields[.contentType] == "application/x-www-form-urlencoded")
    }

    @Test("-H @FILE adds a field for each line of FILE (CRLF or LF, blank lines skipped), with -H's forms; a bad line or file fails the URL")
    func headerFile() throws {
        let file = try temporaryFile("X-A: 1\r\nX-Empty;\n\n  \nAccept:\nX-A: 2\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let sent = try request(["-H", "Accept: text/plain", "-H", "@\(file.path)", "-H", "X-B: 3", "http://h/"])
        #expect(sent.headerFields[values: HTTPField.Name("X-A")!] == ["1", "2"])
        #expect(sent.headerFields[values: HTTPField.Name("X-Empty")!] == [""])
        #expect(sent.headerFields[.accept] == nil, "the file's 'Accept:' removes the earlier one")
        #expect(sent.headerFields[HTTPField.Name("X-B")!] == "3")
        let bad = try temporaryFile("X-A: 1\nno separator\n")
        defer { try? FileManager.default.removeItem(at: bad) }
        let malformed = #expect(throws: LoadError.self) { _ = try request(["-H", "@\(bad.path)", "http://h/"]) }
        #expect(malformed?.code == .badURL)
        #expect(malformed?.reason?.contains("'no separator'") == true, "\(String(describing: malformed))")
        let missing = #expect(throws: LoadError.self) { _ = try request(["-H", "@/no/such/headers", "http://h/"]) }
        #expect(missing?.code == .requestBodyStreamExhausted, "curl's 26")
        #expect(missing?.reason == "-H: cannot read /no/such/headers: No such file or directory", "\(String(describing: missing))")
    }

    @Test("--json posts its pieces joined with nothing, a file's as they are, with JSON's Content-Type and Accept (a -H of either wins); it goes alone")
    func json() throws {
        let file = try temporaryFile("\"b\": [1,\n2]}")
        defer { try? FileManager.default.removeItem(at: file) }
        let sent = try request(["--json", "{\"a\": 1, ", "--json", "@\(file.path)", "http://h/"])
        #expect(sent.method == .post)
        #expect(bytes(sent.body) == "{\"a\": 1, \"b\": [1,\n2]}")
        #expect(sent.headerFields[.contentType] == "application/json")
        #expect(sent.headerFields[.accept] == "application/json")
        let own = try request(["-H", "Accept: application/x-ndjson", "-H", "Content-Type: application/merge-patch+json", "-X", "PATCH",
                               "--json", "{}", "http://h/"])
        #expect(own.headerFields[.accept] == "application/x-ndjson")
        #expect(own.headerFields[.contentType] == "application/merge-patch+json")
        #expect(own.method == .patch)
        for other in [["-d", "a=1"], ["--data-binary", "x"], ["--data-urlencode", "a"], ["-F", "a=1"], ["-T", "/etc/hostname"], ["-I"], ["-G"]] {
            let refused = #expect(throws: ValidationError.self, "--json with \(other)") {
                _ = try command(["--json", "{}"] + other + ["http://h/"]).makeConfiguration()
            }
            #expect(refused?.message.contains("cannot go with") == true, "\(String(describing: refused))")
        }
        let missing = #expect(throws: LoadError.self) { _ = try request(["--json", "@/no/such/file", "http://h/"]) }
        #expect(missing?.code == .requestBodyStreamExhausted)
    }

    @Test("-u USER without a password sends an empty one (USER:), never a pair without its colon")
    func userWithoutPassword() throws {
        let sent = try request(["-u", "user", "http://h/"])
        #expect(sent.headerFields[.authorization] == "Basic " + Data("user:".utf8).base64EncodedString())
        let pair = try request(["-u", "user:pw", "http://h/"])
        #expect(pair.headerFields[.authorization] == "Basic " + Data("user:pw".utf8).base64EncodedString())
    }

    @Test("-T to a URL ending in / uploads under the file's name; a missing or folder -T fails before any connection")
    func uploadFile() throws {
        let file = try temporaryFile("up")
        defer { try? FileManager.default.removeItem(at: file) }
        let named = try request(["-T", file.path, "ftp://h/upload/"])
        #expect(named.url.absoluteString == "ftp://h/upload/" + file.lastPathComponent)
        #expect(named.method == .put)
        let bare = try request(["-T", file.path, "ftp://h"])
        #expect(bare.url.absoluteString == "ftp://h/" + file.lastPathComponent)
        let kept = try request(["-T", file.path, "ftp://h/upload/other.txt"])
        #expect(kept.url.absoluteString == "ftp://h/upload/other.txt")
        for path in ["/no/such/file", FileManager.default.temporaryDirectory.path] {
            let error = #expect(throws: LoadError.self) { _ = try request(["-T", path, "ftp://h/upload/x"]) }
            #expect(error?.code == .requestBodyStreamExhausted, "\(path)")
            #expect(error?.url?.absoluteString == "ftp://h/upload/x", "\(path)")
        }
        let stdin = try request(["-T", "-", "ftp://h/upload/x"])
        guard case .file(let input)? = stdin.body else {
            Issue.record("-T - does not read standard input: \(String(describing: stdin.body))")
            return
        }
        #expect(input.path == "/dev/stdin")
    }

    @Test("--retry sends -T's file again only when it can be read again: a regular file, not standard input or a FIFO read as it is sent")
    func uploadSentAgain() throws {
        let file = try temporaryFile("x")
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("cli-request-\(UUID().uuidString).fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        defer { try? FileManager.default.removeItem(at: file); try? FileManager.default.removeItem(at: fifo) }
        let regular = try command(["-T", file.path, "http://h/a", "http://h/b"]).requestOptions
        #expect(regular.uploadCanBeSentAgain && !regular.readsUploadOnce)
        #expect(try command(["-T", fifo.path, "http://h/"]).requestOptions.uploadCanBeSentAgain == false)
        #expect(try command(["-T", "-", "http://h/"]).requestOptions.uploadCanBeSentAgain == false)
        #expect(try command(["http://h/"]).requestOptions.uploadCanBeSentAgain)
    }

    @Test("Values that start with a dash are values, as in curl; --max-redirs -1 is no limit")
    func dashValues() throws {
        let parsed = try command(["-L", "--max-redirs", "-1", "-d", "-1", "-w", "-> %{http_code}", "-H", "X-A: -", "http://h/"])
        #expect(parsed.maxRedirects == -1)
        #expect(parsed.data == ["-1"])
        #expect(parsed.writeOut == "-> %{http_code}")
        #expect(parsed.headers == ["X-A: -"])
        #expect(parsed.urls == ["http://h/"])
        // An empty value (an empty POST), and values attached to short options, starting with a dash or not.
        #expect(try command(["-d", "", "http://h/"]).data == [""])
        // (ArgumentParser alone refuses values attached to short options; curl takes them.)
        // A value attached inside a cluster is the value of the option before it, and -o keeps its pairing with --url.
        let clustered = try command(["-sofirst.html", "--url", "http://a/", "http://b/", "-o", "second.html", "-Ld-1"])
        #expect(clustered.silent && clustered.followRedirects && clustered.data == ["-1"])
        #expect(clustered.urls == ["http://a/", "http://b/"] && clustered.outputs == ["first.html", "second.html"])
        let attached = try command(["-XPOST", "-d-1", "-w", "-x", "-o/tmp/out", "http://h/"])
        #expect(attached.method == "POST" && attached.data == ["-1"] && attached.writeOut == "-x")
        #expect(attached.outputs == ["/tmp/out"])
        #expect(try parsed.makeConfiguration().redirectLimit == Int.max)
        #expect(try command(["-L", "--max-redirs", "3", "http://h/"]).makeConfiguration().redirectLimit == 3)
        #expect(try command(["--max-redirs", "3", "http://h/"]).makeConfiguration().redirectLimit == 0, "no -L, no redirects followed")
        #expect(try command(["--max-redirs", "0", "http://h/"]).makeConfiguration().middleware.isEmpty)
        // Every spelling of an option with a value maps to a long name that is itself one.
        for (spelling, long) in LoadURL.longNamesOfOptionsWithValues {
            #expect(LoadURL.longNamesOfOptionsWithValues[long] == long, "\(spelling) → \(long)")
            #expect(spelling.hasPrefix("--") ? spelling == long : spelling.count == 2, "\(spelling) → \(long)")
        }
    }

    @Test("-k and --cacert hold for FTPS as for HTTPS; no limit on time without progress unless -m bounds the transfer")
    func sessionSettings() throws {
        let configuration = try command(["-k", "--cacert", "/tmp/ca.pem", "-m", "5", "ftps://h/"]).makeConfiguration()
        #expect(configuration.handlerOptions[FTPOptions.self].verifiesCertificates == false)
        #expect(configuration.handlerOptions[FTPOptions.self].trustRootsPEMFile == "/tmp/ca.pem")
        #expect(configuration.handlerOptions[HTTPClientOptions.self].tls.verifiesCertificates == false)
        #expect(configuration.handlerOptions[HTTPClientOptions.self].tls.additionalTrustRootsPEMFile == "/tmp/ca.pem")
        #expect(configuration.timeoutIntervalForRequest == .infinity)
        #expect(configuration.timeoutIntervalForResource == 5)
        let verifying = try command(["ftps://h/"]).makeConfiguration()
        #expect(verifying.handlerOptions[FTPOptions.self].verifiesCertificates == true)
        #expect(verifying.handlerOptions[FTPOptions.self].trustRootsPEMFile == nil)
    }

    @Test("-A and -e send User-Agent and Referer, a -H of the same name winning; --connect-timeout holds for HTTP and FTP")
    func agentRefererConnectTimeout() throws {
        let sent = try request(["-A", "agent/1", "-e", "http://from/", "http://h/"])
        #expect(sent.headerFields[.userAgent] == "agent/1" && sent.headerFields[.referer] == "http://from/")
        let own = try request(["-A", "agent/1", "-H", "User-Agent: mine", "-H", "Referer: there", "-e", "http://from/", "http://h/"])
        #expect(own.headerFields[values: .userAgent] == ["mine"] && own.headerFields[values: .referer] == ["there"])
        // -A '' and -H 'User-Agent:' send none, as curl's: not the handler's own either.
        #expect(try command(["-A", "", "http://h/"]).makeConfiguration().handlerOptions[HTTPClientOptions.self].userAgent == nil)
        #expect(try command(["-H", "User-Agent:", "http://h/"]).makeConfiguration().handlerOptions[HTTPClientOptions.self].userAgent == nil)
        #expect(try command(["http://h/"]).makeConfiguration().handlerOptions[HTTPClientOptions.self].userAgent == "swift-url-loader/0.1")
        // -e 'URL;auto' sends URL first (the redirects' own are CLIVerboseTests'); an empty -e sends none.
        #expect(try request(["-e", "http://from/;auto", "http://h/"]).headerFields[.referer] == "http://from/")
        #expect(try request(["-e", "", "http://h/"]).headerFields[.referer] == nil)
        let configuration = try command(["--connect-timeout", "2.5", "http://h/"]).makeConfiguration()
        #expect(configuration.handlerOptions[HTTPClientOptions.self].connectTimeout == 2.5)
        #expect(configuration.handlerOptions[FTPOptions.self].connectTimeout == 2.5)
        // 0 is the default, as in curl; less is a usage error.
        let unset = try command(["--connect-timeout", "0", "http://h/"]).makeConfiguration()
        #expect(unset.handlerOptions[HTTPClientOptions.self].connectTimeout == HTTPClientOptions().connectTimeout)
        #expect(throws: (any Error).self) { _ = try command(["--connect-timeout", "-1", "http://h/"]).makeConfiguration() }
        #expect(throws: (any Error).self) { _ = try command(["-f", "--fail-with-body", "http://h/"]).makeConfiguration() }
    }

    @Test("--max-filesize takes bytes with K, M or G, 0 for no limit; anything else is a usage error")
    func maxFileSizeValues() throws {
        #expect(LoadURL.byteCount("1000") == 1000 && LoadURL.byteCount("2k") == 2048 && LoadURL.byteCount("3M") == 3 << 20)
        #expect(LoadURL.byteCount("1G") == 1 << 30 && LoadURL.byteCount("0") == 0)
        #expect(["", "k", "-1", "1.5M", "1T", "99999999999999999G"].allSatisfy { LoadURL.byteCount($0) == nil })
        #expect(try command(["--max-filesize", "0", "http://h/"]).requestOptions.maxFileSize == nil)
        #expect(try command(["--max-filesize", "1K", "http://h/"]).requestOptions.maxFileSize == 1024)
        #expect(throws: (any Error).self) { _ = try command(["--max-filesize", "lots", "http://h/"]).makeConfiguration() }
    }

    @Test("--data-urlencode encodes as curl: content, =content, name=content, @FILE, name@FILE; joined with -d's pieces by &; no body piece with -F, -C or -I (but -I -G)")
    func dataURLEncode() throws {
        let file = try temporaryFile("a b\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let sent = try request(["-d", "raw=1&x", "--data-urlencode", "plain text", "--data-urlencode", "=a=b@c",
                                "--data-urlencode", "name=é & ü~", "--data-urlencode", "@\(file.path)", "--data-urlencode", "f@\(file.path)", "http://h/"])
        #expect(sent.method == .post && sent.headerFields[.contentType] == "application/x-www-form-urlencoded")
        // What curl 7.88 sends for the same arguments, byte for byte (a space as +).
        #expect(bytes(sent.body) == "raw=1&x&plain+text&a%3Db%40c&name=%C3%A9+%26+%C3%BC~&a+b%0A&f=a+b%0A")
        let missing = #expect(throws: LoadError.self) { _ = try request(["--data-urlencode", "f@/no/such/file", "http://h/"]) }
        #expect(missing?.code == .requestBodyStreamExhausted && missing?.reason?.contains("f@/no/such/file") == true)
        // A = anywhere comes before an @, as curl reads them.
        #expect(bytes(try request(["--data-urlencode", "a@b=c d", "http://h/"]).body) == "a@b=c+d")
        // One body per request: not with -F; not with -C.
        #expect(throws: (any Error).self) { _ = try command(["-F", "a=1", "--data-urlencode", "b=2", "http://h/"]).makeConfiguration() }
        #expect(throws: (any Error).self) { _ = try command(["-C", "-", "--data-urlencode", "b=2", "http://h/"]).makeConfiguration() }
        // Nor with -I, a HEAD, unless -G puts the pieces in the query.
        for piece in [["-d", "a=1"], ["--data-binary", "x"], ["--data-urlencode", "b=2"]] {
            let refused = #expect(throws: ValidationError.self, "-I with \(piece)") { _ = try command(["-I"] + piece + ["http://h/"]).makeConfiguration() }
            #expect(refused?.message.contains("cannot go with") == true, "\(String(describing: refused))")
        }
        #expect(try request(["-I", "-G", "-d", "a=1", "http://h/"]).method == .head)
    }

    @Test("-G puts the pieces in the query (after one the URL has) and sends GET, HEAD with -I; it cannot go with -F or -T")
    func dataInQuery() throws {
        let sent = try request(["-G", "-d", "a=1", "--data-urlencode", "b=x y", "http://h/p?q=0"])
        #expect(sent.method == .get && sent.body == nil)
        #expect(sent.url.absoluteString == "http://h/p?q=0&a=1&b=x+y")
        #expect(try request(["-G", "-d", "a=1", "http://h/p"]).url.absoluteString == "http://h/p?a=1")
        // A raw -d piece goes in encoded where a query cannot hold it as written; a %XX stays.
        #expect(try request(["-G", "-d", "a=b c\"é%zz%2F", "http://h/p"]).url.absoluteString == "http://h/p?a=b%20c%22%C3%A9%25zz%2F")
        #expect(try request(["-G", "-I", "-d", "a=1", "http://h/"]).method == .head)
        #expect(throws: (any Error).self) { _ = try command(["-G", "-F", "a=1", "http://h/"]).makeConfiguration() }
    }

    @Test("-r asks for its bytes with Range, as curl's; a malformed range, or one with -C, is a usage error")
    func byteRange() throws {
        #expect(try request(["-r", "0-4", "http://h/"]).headerFields[.range] == "bytes=0-4")
        #expect(try request(["-r", "-5", "file:///x"]).headerFields[.range] == "bytes=-5")
        #expect(try request(["-r", "0-1,5-", "http://h/"]).headerFields[.range] == "bytes=0-1,5-")
        // A lone number is from there on, as curl reads it.
        #expect(try request(["-r", "100", "http://h/"]).headerFields[.range] == "bytes=100-")
        for bad in ["abc", "-", "1-2-3", "1-,", "x-1", ""] {
            #expect(throws: (any Error).self, "\(bad)") { _ = try command(["-r", bad, "http://h/"]).makeConfiguration() }
        }
        #expect(throws: (any Error).self) { _ = try command(["-r", "0-1", "-C", "5", "http://h/"]).makeConfiguration() }
    }

    @Test("-w: %% is a percent sign; unknown variables print nothing")
    func writeOutPercent() {
        let summary = TransferSummary(url: URL(string: "data:,x")!, bytes: 7)
        #expect(summary.format("100%% %{size_download}%{nope}\\n").output == "100% 7\n")
        // %{stderr} sends what follows to standard error, %{stdout} back, the pieces in the template's order.
        let split = summary.format("a%{stderr}%{size_download}\\n%{stdout}b")
        #expect(split.pieces.map(\.toError) == [false, true, false] && split.pieces.map(\.text) == ["a", "7\n", "b"])
        #expect(split.output == "ab" && split.error == "7\n")
    }

    @Test("-w %{http_version} is curl 7.88's: 1 for HTTP/1.0, 1.1, 2, and 0 with no HTTP response")
    func writeOutHTTPVersion() {
        func version(_ name: String?) -> String {
            let response = name.map { LoadResponse(url: URL(string: "http://h/")!, status: .ok, headerFields: [:], networkProtocolName: $0) }
            return TransferSummary(url: URL(string: "http://h/")!, response: response).format("%{http_version}").output
        }
        #expect(version("http/1.0") == "1" && version("http/1.1") == "1.1" && version("h2") == "2" && version(nil) == "0")
    }

    @Test("-z reads dates as curl does (HTTP's forms, YYYYMMDD, YYYY-MM-DD, day, month and year in any order, a time, a zone, a weekday), else a file's time; no impossible date")
    func timeConditionDates() throws {
        let expected = 948_362_400  // 2000-01-20 10:00:00 UTC
        for text in ["Thu, 20 Jan 2000 10:00:00 GMT", "Thursday, 20-Jan-00 10:00:00 GMT", "Thu Jan 20 10:00:00 2000",
                     "20000120 10:00:00", "2000-01-20 10:00:00", "20 Jan 2000 10:00:00", "Thu, 20 Jan 2000 10:00:00 UTC"] {
            #expect(TimeCondition.date(text) == expected, "\(text)")
        }
        #expect(TimeCondition.date("20 January 2000") == expected - 36_000)
        // As curl reads them too: month first, the time anywhere, a numeric zone, two-digit years, years before 1970.
        #expect(TimeCondition.date("Jan 20 2000 10:00:00") == expected && TimeCondition.date("10:00:00 20000120") == expected)
        #expect(TimeCondition.date("20 Jan 2000 11:00:00 +0100") == expected && TimeCondition.date("20 Jan 00 10:00:00") == expected)
        #expect(TimeCondition.date("1 Jan 1960") == -315_619_200)
        #expect(TimeCondition.date("20000231") == nil && TimeCondition.date("2000-13-01") == nil && TimeCondition.date("soon") == nil)
        #expect(TimeCondition("+20 Jan 2000 10:00:00") == TimeCondition("20 Jan 2000 10:00:00"))
        let older = try #require(TimeCondition("-20000120"))
        #expect(older.unmodified && older.field.name == .ifUnmodifiedSince && older.field.value == "Thu, 20 Jan 2000 00:00:00 GMT")
        // Not a date: a file's modification time.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("time-cond-\(UUID().uuidString)")
        try Data().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: Double(expected))], ofItemAtPath: file.path)
        #expect(TimeCondition(file.path) == TimeCondition("20 Jan 2000 10:00:00"))
        #expect(TimeCondition("/nonexistent/no-date") == nil)
    }

    @Test("--connect-to's HOST1:PORT1:HOST2:PORT2 is read as curl reads it: empty parts, bracketed IPv6 addresses; other shapes are refused")
    func connectToEntries() {
        #expect(LoadURL.connectionRedirect("Example.COM:443:node1.example:8443")! == ("example.com:443", "node1.example:8443"))
        #expect(LoadURL.connectionRedirect("::127.0.0.1:81")! == (":", "127.0.0.1:81"))
        #expect(LoadURL.connectionRedirect("h:80::")! == ("h:80", ":"))
        #expect(LoadURL.connectionRedirect("[::1]:80:[fe80::2]:8080")! == ("::1:80", "fe80::2:8080"))
        #expect(LoadURL.connectionRedirect("h:80:x")! == ("h:80", "x:"), "the target's port left out, as curl takes it")
        for bad in ["h:port:x:1", "[::1:80:h:1", "h:80:h:1:2", "h:80:x:70000", "h:８０:x:1", ""] {
            #expect(LoadURL.connectionRedirect(bad) == nil, "\(bad)")
        }
    }

    @Test("-U's login goes into an FTP proxy's URL, percent-encoded, unless it has one")
    func ftpProxyLogin() {
        let login = Credential(user: "us@er", password: "p:w/d")
        #expect(LoadURL.proxy("http://127.0.0.1:3128", login: login) == "http://us%40er:p%3Aw%2Fd@127.0.0.1:3128")
        // A login of its own stays, as curl 7.88 keeps it over -U's.
        #expect(LoadURL.proxy("socks5h://old:pw@proxy:1080/", login: login) == "socks5h://old:pw@proxy:1080/")
        #expect(LoadURL.proxy("proxy:3128", login: login) == "us%40er:p%3Aw%2Fd@proxy:3128")
    }

    @Test("A URL without a scheme gets http:// (ftp:// for an ftp. host), as curl guesses; a registered scheme stays as typed")
    func schemelessURLs() {
        let registry = SchemeRegistry(handlers: [ShoutHandler.self])
        func read(_ text: String) -> String? { URLArgument.url(text, registry: registry)?.absoluteString }
        #expect(read("localhost:8080/a?b=1") == "http://localhost:8080/a?b=1")
        #expect(read("127.0.0.1/x") == "http://127.0.0.1/x")
        #expect(read("[::1]:81/") == "http://[::1]:81/")
        #expect(read("ftp.local/pub/") == "ftp://ftp.local/pub/")
        #expect(read("user:secret@host/a") == "http://user:secret@host/a")
        #expect(read("shout:hello") == "shout:hello")
        #expect(read("file:/etc/hostname") == "file:/etc/hostname")
        #expect(read("gopher://h/") == "gopher://h/")
        #expect(read("not a url:// x") == nil)
        #expect(read("not a url") == nil)
        #expect(read("host/a b") == nil)
        // Escapes kept beside bytes that need encoding, with the scheme guessed too.
        #expect(read("host:8080/a|b%41") == "http://host:8080/a%7Cb%41")
        #expect(read("") == nil)
    }
}
