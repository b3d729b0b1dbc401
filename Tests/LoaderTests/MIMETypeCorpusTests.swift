import Foundation
import Loader
import TestSupport
import Testing

@Suite("MIME types: the WPT mimesniff vectors")
struct MIMETypeCorpusTests {
    @Test("Every case of wpt-mimesniff/mime-types.json parses and serializes as specified")
    func corpus() throws {
        let url = Corpora.url("wpt-mimesniff/mime-types.json")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [Any], "cannot read \(url.path)")
        var total = 0, passed = 0
        for case let entry as [String: Any] in entries {
            total += 1
            let input = try #require(entry["input"] as? String)
            let expected = entry["output"] as? String
            let actual = MIMEType(input)?.description
            if actual == expected {
                passed += 1
            } else {
                Issue.record("MIME \(input.debugDescription): expected \(expected.debugDescription), got \(actual.debugDescription)")
            }
        }
        print("WPT mime-types: \(passed)/\(total) passed")
        #expect(total == 74)
        #expect(passed == total)
    }

    @Test("Parameters are looked up case-insensitively and the first of a name wins")
    func parameters() throws {
        let type = try #require(MIMEType("Text/HTML; Charset=\"utf-8\"; charset=latin1; q=\"a\\\"b\""))
        #expect(type.essence == "text/html")
        #expect(type.parameter("CHARSET") == "utf-8")
        #expect(type.parameter("q") == "a\"b")
        #expect(type.description == "text/html;charset=utf-8;q=\"a\\\"b\"")
    }
}
