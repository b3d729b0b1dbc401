import Foundation
import HTTPTypes
import Loader
@testable import LoadURLCommand
import TestSupport
import Testing

/// `-F`: multipart/form-data bodies, read as curl reads the option, sent to nginx's echo of a whole body.
@Suite("loadurl: -F, multipart forms")
struct CLIFormTests {
    private func temporaryFile(_ text: String, name: String = "part.txt") throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-form-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file
    }

    @Test("A -F option is read as curl 7.88 reads it: settings after ;, quoted words, type parameters; malformed ones are refused")
    func parsing() throws {
        // Each expectation is what curl 7.88 sent for the same option (to nginx's /echo-body).
        let skipping = try FormPart("a=1 2;3")
        #expect(skipping == FormPart(name: "a", content: .text("1 2")))
        #expect(skipping.skipped == ["3"])
        #expect(try FormPart("a=1;type=text/x") == FormPart(name: "a", content: .text("1"), type: "text/x"))
        #expect(try FormPart(#"a="x;y"z"#) == FormPart(name: "a", content: .text("x;y")))
        #expect(try FormPart(#"a=say "hi""#) == FormPart(name: "a", content: .text(#"say "hi""#)))
        #expect(try FormPart(#"a="q\"w\n""#) == FormPart(name: "a", content: .text(#"q"w\n"#)))
        let upload = try FormPart(#"doc=@/tmp/x.bin;type=text/plain;charset=utf-8;filename="a;b \"c\".bin""#)
        #expect(upload == FormPart(name: "doc", content: .file(path: "/tmp/x.bin"), type: "text/plain;charset=utf-8", filename: #"a;b "c".bin"#))
        #expect(try FormPart("note=</tmp/n.txt") == FormPart(name: "note", content: .fileContents(path: "/tmp/n.txt")))
        #expect(try FormPart("f=@x;size=3").skipped == ["size=3"])
        #expect(try FormPart("empty=") == FormPart(name: "empty", content: .text("")))
        #expect(try FormPart(literal: "raw=@not;a file") == FormPart(name: "raw", content: .text("@not;a file")))
        for bad in ["no-equals", "=value", "f=@", #"f=@"unclosed"#] {
            #expect(throws: FormPart.Malformed.self, "\(bad)") { _ = try FormPart(bad) }
        }
    }

    @Test("A text-only form is one buffer, byte for byte as RFC 7578 lays it out; a form with a file streams it, with its length")
    func bodies() async throws {
        let url = URL(string: "http://h/")!
        let form = try MultipartForm([FormPart(name: "a", content: .text("1")), FormPart(name: #"q"x"#, content: .text("é"), type: "text/x")],
                                     url: url, boundary: "BOUNDARY")
        let expected = "--BOUNDARY\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n"
            + "--BOUNDARY\r\nContent-Disposition: form-data; name=\"q%22x\"\r\nContent-Type: text/x\r\n\r\né\r\n--BOUNDARY--\r\n"
        guard case .bytes(let data) = form.requestBody(url: url) else {
            Issue.record("a text-only form is not one buffer")
            return
        }
        #expect(String(decoding: data, as: UTF8.self) == expected)
        #expect(form.length == Int64(data.count))
        let file = try temporaryFile("0123456789")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let withFile = try MultipartForm([FormPart(name: "f", content: .file(path: file.path))], url: url, boundary: "B")
        guard case .stream(let length, _) = withFile.requestBody(url: url) else {
            Issue.record("a form with a file is not streamed")
            return
        }
        let head = "--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"part.txt\"\r\nContent-Type: text/plain\r\n\r\n"
        let whole = head + "0123456789" + "\r\n--B--\r\n"
        #expect(length == Int64(whole.utf8.count))
        // Sent twice (a 307 sends the body again): each sending reads the file from its start.
        #expect(try await Self.collect(withFile.requestBody(url: url)) == whole)
        #expect(try await Self.collect(withFile.requestBody(url: url)) == whole)
        // A file that shrank or grew after the form was made fails the sending, never a body of the wrong length.
        try Data("01234".utf8).write(to: file)
        await #expect(throws: LoadError.self) { _ = try await Self.collect(withFile.requestBody(url: url)) }
        try Data("0123456789AB".utf8).write(to: file)
        await #expect(throws: LoadError.self) { _ = try await Self.collect(withFile.requestBody(url: url)) }
        #expect(throws: LoadError.self) {
            _ = try MultipartForm([FormPart(name: "f", content: .file(path: "/no/such/file"))], url: url)
        }
    }

    /// The bytes a stream body gives, as text.
    private static func collect(_ body: RequestBody) async throws -> String {
        guard case .stream(_, let makeStream) = body else { return "(not a stream)" }
        var data = Data()
        for try await chunk in makeStream() { data.append(chunk) }
        return String(decoding: data, as: UTF8.self)
    }

    @Test("-F makes a POST with the form's type and boundary; a -H Content-Type of the caller's own keeps it, with the boundary")
    func request() throws {
        let command = try LoadURL.parseQuickly(["-F", "a=1", "http://h/"])
        let request = try command.makeRequest(URL(string: "http://h/")!, options: command.requestOptions)
        #expect(request.method == .post)
        let type = try #require(request.headerFields[.contentType])
        #expect(type.hasPrefix("multipart/form-data; boundary=------------------------"))
        let mixed = try LoadURL.parseQuickly(["-F", "a=1", "-H", "Content-Type: multipart/mixed", "http://h/"])
        let own = try mixed.makeRequest(URL(string: "http://h/")!, options: mixed.requestOptions)
        #expect(own.headerFields[.contentType]?.hasPrefix("multipart/mixed; boundary=------------------------") == true)
        // A boundary of the caller's own is the one the body uses.
        let given = try LoadURL.parseQuickly(["-F", "a=1", "-H", "Content-Type: multipart/form-data; boundary=XyZ", "http://h/"])
        let chosen = try given.makeRequest(URL(string: "http://h/")!, options: given.requestOptions)
        #expect(chosen.headerFields[.contentType] == "multipart/form-data; boundary=XyZ")
        guard case .bytes(let body)? = chosen.body else {
            Issue.record("a text form is not one buffer")
            return
        }
        #expect(String(decoding: body, as: UTF8.self).hasPrefix("--XyZ\r\n"))
    }

    @Test("loadurl -F sends text, an uploaded file of 3 MiB and a file's contents; nginx receives exactly that body",
          .enabled(if: FileManager.default.fileExists(atPath: "/usr/lib/nginx/modules/ngx_http_echo_module.so"),
                   "nginx's echo module (libnginx-mod-http-echo) gives /echo-body"))
    func sent() async throws {
        let server = try TestServers.requireNginx()
        let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"
        let large = String(repeating: line, count: 3 * 1024 * 1024 / line.utf8.count)
        let upload = try temporaryFile(large, name: "big.txt")
        let note = try temporaryFile("a note\n", name: "note.txt")
        defer {
            try? FileManager.default.removeItem(at: upload.deletingLastPathComponent())
            try? FileManager.default.removeItem(at: note.deletingLastPathComponent())
        }
        let run = try await LoadURLProcess.run(["-sS", "-F", "title=hello world", "-F", "doc=@\(upload.path);type=text/x-test",
                                                "-F", "note=<\(note.path)", "http://127.0.0.1:\(server.httpPort)/echo-body"])
        #expect(run.status == 0, "\(run.stderr)")
        // The echo's first line: what nginx read of the head; the rest: the body as it arrived.
        let firstLine = try #require(run.stdout.split(separator: "\n", maxSplits: 1).first)
        let boundary = try #require(firstLine.split(separator: "boundary=").last).trimmingCharacters(in: .whitespaces)
        let body = String(run.stdout.dropFirst(firstLine.count + 1))
        let expected = "--\(boundary)\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nhello world\r\n"
            + "--\(boundary)\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"big.txt\"\r\nContent-Type: text/x-test\r\n\r\n"
            + large + "\r\n"
            + "--\(boundary)\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\na note\n\r\n"
            + "--\(boundary)--\r\n"
        #expect(firstLine.hasPrefix("length=\(expected.utf8.count) type=multipart/form-data; boundary="))
        #expect(body.utf8.count == expected.utf8.count)
        #expect(body == expected)
        let missing = try await LoadURLProcess.run(["-sS", "-F", "doc=@/no/such/file", "http://127.0.0.1:\(server.httpPort)/echo-body"])
        #expect(missing.status == 26, "curl's exit status for a file it cannot read")
        #expect(missing.stderr.contains("/no/such/file"))
        let malformed = try await LoadURLProcess.run(["-F", "no-equals", "http://127.0.0.1:\(server.httpPort)/echo-body"])
        #expect(malformed.status == 2)
    }
}
