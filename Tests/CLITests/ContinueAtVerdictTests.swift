import Foundation
import HTTPTypes
import Loader
@testable import LoadURLCommand
import Testing

/// `-C`'s judgement of an answer to a request for the bytes from an offset on, as plain values.
@Suite("loadurl: -C judges each answer before touching the file")
struct ContinueAtVerdictTests {
    private let url = URL(string: "http://127.0.0.1/file.bin")!

    private func response(_ status: Int?, contentRange: String? = nil) -> LoadResponse {
        var fields = HTTPFields()
        if let contentRange { fields[.contentRange] = contentRange }
        return LoadResponse(url: url, status: status.map { HTTPResponse.Status(code: $0) }, headerFields: fields)
    }

    @Test("The option reads '-' or a byte offset, nothing else")
    func parsing() {
        #expect(ContinueAt("-")?.origin == .outputFile)
        #expect(ContinueAt("0")?.origin == .offset(0))
        #expect(ContinueAt("1234")?.origin == .offset(1234))
        for bad in ["", "-1", "x", "12k", "--"] { #expect(ContinueAt(bad) == nil, "\(bad)") }
    }

    @Test("Only a 206 that starts at the offset is appended; a 416 of the same length means whole")
    func http() {
        #expect(ContinueAt.verdict(on: response(206, contentRange: "bytes 100-199/200"), offset: 100) == .append)
        #expect(ContinueAt.verdict(on: response(416, contentRange: "bytes */100"), offset: 100) == .complete)
        var multipart = response(206, contentRange: "bytes 100-199/200")
        multipart.headerFields[.contentType] = "multipart/byteranges; boundary=x"
        var encoded = response(206, contentRange: "bytes 100-199/200")
        encoded.headerFields[.contentEncoding] = "gzip"
        // A resource whose own type is multipart, sent as one range, is appended.
        var mixed = response(206, contentRange: "bytes 100-199/200")
        mixed.headerFields[.contentType] = "multipart/mixed; boundary=y"
        #expect(ContinueAt.verdict(on: mixed, offset: 100) == .append)
        let cases: [(LoadResponse, Int32)] = [
            (response(206, contentRange: "bytes 0-199/200"), ContinueAt.rangeError),  // starts elsewhere
            (response(206), ContinueAt.rangeError),  // says nothing of where it starts
            (multipart, ContinueAt.rangeError),
            (encoded, ContinueAt.rangeError),
            (response(200), ContinueAt.rangeError),  // the whole, range ignored
            (response(412), ContinueAt.rangeError),  // changed since the partial file was written
            (response(404), ContinueAt.rangeError),
            (response(416), ContinueAt.rangeError),  // no length said
            (response(416, contentRange: "bytes */90"), ContinueAt.pastTheEnd),  // shorter than what is here
        ]
        for (answer, status) in cases {
            guard case .refuse(_, let given) = ContinueAt.verdict(on: answer, offset: 100) else {
                Issue.record("\(answer.status.map { "\($0.code)" } ?? "-") \(answer.headerFields) was not refused")
                continue
            }
            #expect(given == status)
        }
    }

    @Test("Without a status (file:, ftp:), a range from the offset is appended; anything else asks the size, which decides")
    func statusless() {
        #expect(ContinueAt.verdict(on: response(nil, contentRange: "bytes 100-149/150"), offset: 100) == .append)
        #expect(ContinueAt.verdict(on: response(nil), offset: 100) == .askSize)
        #expect(ContinueAt.verdict(on: response(nil, contentRange: "bytes 0-149/150"), offset: 100) == .askSize)
        #expect(ContinueAt.verdict(size: 100, offset: 100) == .complete)
        #expect(ContinueAt.verdict(size: 99, offset: 100) == .refuse("the resource is 99 bytes, and 100 are here already", status: ContinueAt.pastTheEnd))
        guard case .refuse(_, ContinueAt.rangeError) = ContinueAt.verdict(size: 150, offset: 100) else {
            Issue.record("a larger resource that did not send the rest was not refused as a range error")
            return
        }
        guard case .refuse(_, ContinueAt.rangeError) = ContinueAt.verdict(size: nil, offset: 100) else {
            Issue.record("an unknown size was not refused")
            return
        }
    }

    @Test("Content-Range takes digits only, a last byte before the length, and the unsatisfied form")
    func contentRange() {
        #expect(ContentRange("bytes 5-9/10").map { [$0.first, $0.last, $0.complete] } == [5, 9, 10])
        #expect(ContentRange("bytes */10")?.complete == 10)
        #expect(ContentRange("bytes */10")?.first == nil)
        for bad in ["bytes +1-2/3", "bytes  5-9/10", "bytes 5-4/10", "bytes 5-10/10", "bytes */*", "items 1-2/3", "bytes 1-2"] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
    }
}
