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
