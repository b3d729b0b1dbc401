import Foundation
import HTTPTypes
@testable import Loader
import Testing

/// What the loader reads from a response's head and a request's body without loading anything.
@Suite("Response names and body lengths")
struct ResponseHeadTests {
    private func suggestedName(_ disposition: String?, url: String = "http://127.0.0.1/dir/file.bin") -> String {
        var fields = HTTPFields()
        if let disposition { fields[HTTPField.Name("Content-Disposition")!] = disposition }
        return LoadResponse(url: URL(string: url)!, headerFields: fields).suggestedFilename
    }

    @Test("suggestedFilename: Content-Disposition's filename, unquoted and unescaped, never a path")
    func suggestedFilename() {
        #expect(suggestedName(#"attachment; filename="report.pdf""#) == "report.pdf")
        #expect(suggestedName("attachment; filename=plain.txt") == "plain.txt")
        #expect(suggestedName(#"attachment; FILENAME="spaced name.txt" "#) == "spaced name.txt")
        #expect(suggestedName(#"attachment; filename="a \"quoted\" b.txt""#) == #"a "quoted" b.txt"#)
        #expect(suggestedName(#"attachment; filename="x;y.txt"; size=3"#) == "x;y.txt")
        #expect(suggestedName(#"attachment; name="field"; filename="second.txt""#) == "second.txt")
        #expect(suggestedName(#"attachment; filename="../../etc/passwd""#) == "passwd")
        #expect(suggestedName(#"attachment; filename="/""#) == "file.bin")
        #expect(suggestedName(#"attachment; filename="..""#) == "file.bin")
        #expect(suggestedName("inline") == "file.bin")
        #expect(suggestedName(nil, url: "http://127.0.0.1/") == "index")
    }

    @Test("suggestedFilename: filename* (RFC 8187) before filename, UTF-8 names kept, and a URL's name held to the same rules")
    func suggestedFilenameExtended() {
        #expect(suggestedName("attachment; filename*=UTF-8''na%C3%AFve%20file.txt") == "naïve file.txt")
        #expect(suggestedName(#"attachment; filename="fallback.txt"; filename*=utf-8'en'%E2%82%AC%20rates.txt"#) == "€ rates.txt")
        #expect(suggestedName("attachment; filename*=iso-8859-1''caf%E9.txt") == "café.txt")
        // A charset RFC 8187 does not ask for, or bytes that are not UTF-8: the plain filename instead.
        #expect(suggestedName("attachment; filename*=koi8-r''x.txt; filename=plain.txt") == "plain.txt")
        #expect(suggestedName("attachment; filename*=UTF-8''%FF.txt; filename=plain.txt") == "plain.txt")
        #expect(suggestedName("attachment; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd") == "passwd")
        // Raw UTF-8 in a quoted filename, which servers send though the RFC says not to.
        #expect(suggestedName(#"attachment; filename="报告.pdf""#) == "报告.pdf")
        // The URL's last component, which Foundation percent-decodes after splitting, is held to the same rules.
        #expect(suggestedName(nil, url: "http://127.0.0.1/x/..%2F..%2Fetc%2Fpasswd") == "passwd")
        #expect(suggestedName(nil, url: "http://127.0.0.1/%2E%2E") == "index")
        #expect(suggestedName(nil, url: "http://127.0.0.1/a%00b") == "index")
        #expect(suggestedName(nil, url: "http://127.0.0.1/" + String(repeating: "n", count: 256)) == "index")
        #expect(suggestedName(nil, url: "data:text/plain;base64,SGVsbG8=") == "index")
        // A right-to-left override would show invoice\u{202E}fdp.exe as "invoiceexe.pdf"; a C1 control is no name.
        #expect(suggestedName("attachment; filename*=UTF-8''invoice%E2%80%AEfdp.exe") == "file.bin")
        #expect(suggestedName("attachment; filename*=iso-8859-1''a%85b.txt") == "file.bin")
        #expect(suggestedName(#"attachment; filename="hello.txt""#, url: "data:,Hello") == "hello.txt")
    }

    @Test("Content-Type as Fetch's 'extract a MIME type' reads it: repeated or listed values, */* passed over, an earlier charset kept for the same type")
    func contentTypeExtraction() {
        func type(_ values: [String]) -> String? {
            var fields = HTTPFields()
            for value in values { fields.append(HTTPField(name: .contentType, value: value)) }
            return LoadResponse(url: URL(string: "http://127.0.0.1/")!, headerFields: fields).contentType?.description
        }
        #expect(type(["text/html", "text/html"]) == "text/html")
        #expect(type(["text/plain;charset=gbk", "text/plain"]) == "text/plain;charset=gbk")
        #expect(type(["text/plain;charset=gbk", "text/html"]) == "text/html")
        #expect(type(["text/html;charset=gbk", "*/*"]) == "text/html;charset=gbk")
        #expect(type(["text/plain;charset=gbk, text/plain"]) == "text/plain;charset=gbk")
        #expect(type([#"text/plain;charset="a,b""#]) == #"text/plain;charset="a,b""#)
        #expect(type(["text/html", "bogus"]) == "text/html")
        #expect(type(["bogus"]) == nil)
        #expect(type([]) == nil)
        var fields = HTTPFields()
        fields.append(HTTPField(name: .contentType, value: "text/html; charset=utf-8"))
        fields.append(HTTPField(name: .contentType, value: "text/html"))
        let response = LoadResponse(url: URL(string: "http://127.0.0.1/")!, headerFields: fields)
        #expect(response.mimeType == "text/html")
        #expect(response.textEncodingName == "utf-8")
    }

    @Test("Content-Length is a length only when it is all digits", arguments: [("42", Int64(42)), ("0", 0), ("+5", nil), ("-1", nil), ("", nil), ("4 2", nil), ("99999999999999999999", nil)])
    func contentLengthDigits(value: String, length: Int64?) {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .contentLength, value: value))
        #expect(LoadResponse(url: URL(string: "http://127.0.0.1/")!, headerFields: fields).expectedContentLength == length)
    }

    @Test("A parameter name is held to ASCII token characters before it is lowercased: the Kelvin sign is not k")
    func parameterNameASCII() {
        #expect(MIMEType("text/plain;\u{212A}ey=v")?.parameter("key") == nil)
        #expect(MIMEType("text/plain;KEY=v")?.parameter("key") == "v")
    }

    @Test("Header parameters by the MIME rules: order kept, names lowercased, the first of a name kept, a bare name or a stray quote does not stop the rest")
    func parameters() {
        let parsed = MIMETypeParser.parameters(of: #"form-data; Name="a\\b"; flag; x=1 ;x=2; y="unterminated"#)
        #expect(parsed.map(\.name) == ["name", "x", "y"])
        #expect(parsed.map(\.value) == [#"a\b"#, "1", "unterminated"])
        #expect(MIMETypeParser.parameters(of: "attachment").isEmpty)
    }

    @Test("A file body's known length is the file's size; a missing file's is unknown")
    func fileBodyLength() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("body-\(UUID().uuidString).bin")
        try Data(count: 12_345).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(RequestBody.file(url).knownLength == 12_345)
        #expect(RequestBody.file(url.appendingPathExtension("missing")).knownLength == nil)
        #expect(RequestBody.bytes(Data("abc".utf8)).knownLength == 3)
    }
}
