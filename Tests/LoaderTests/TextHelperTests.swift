import Foundation
@testable import Loader
import Testing

/// The small text helpers that replace Foundation's (the loader's modules import FoundationEssentials only),
/// checked against what Foundation and C's printf give for the same input.
@Suite("Text helpers without Foundation")
struct TextHelperTests {
    @Test("fixed(_:) prints as printf's %.Nf does, ties to even included",
          arguments: [0.0, 1.5, -1.5, 2.5, 0.125, 0.0000004, 2.675, 123456.789, 1e12 + 0.25, 0.999_999_9])
    func fixedDecimals(value: Double) {
        for places in [0, 1, 2, 3, 6] {
            #expect(value.fixed(places) == String(format: "%.\(places)f", value), "\(value) with \(places) places")
        }
    }

    @Test("zeroPadded(_:) prints as printf's %0Nd does", arguments: [0, 7, 42, 404, 2026, -5, 123_456])
    func zeroPadded(value: Int) {
        #expect(value.zeroPadded(3) == String(format: "%03d", value))
        #expect(value.zeroPadded(4) == String(format: "%04d", value))
    }

    @Test("trimmingSpaces() removes spaces and tabs at both ends only, as HTTP's optional whitespace")
    func trimming() {
        #expect(" \t gzip \t".trimmingSpaces() == "gzip")
        #expect("a b".trimmingSpaces() == "a b")
        #expect("   ".trimmingSpaces() == "")
        #expect("".trimmingSpaces() == "")
        #expect("\u{00A0}x".trimmingSpaces() == "\u{00A0}x")  // not HTTP whitespace
        #expect(" é\tx ".trimmingSpaces() == "é\tx")
        #expect("\t 42 ".dropFirst().trimmingSpaces() == "42")
        #expect("[::1]".trimming(while: { $0 == "[" || $0 == "]" }) == "::1")
    }

    @Test("firstRange(ofIgnoringCase:) finds ASCII text in any case")
    func caseInsensitiveSearch() throws {
        let header = #"Basic REALM="x", charset=UTF-8"#
        let range = try #require(header.firstRange(ofIgnoringCase: "realm="))
        #expect(header[range] == "REALM=")
        #expect(header[range.upperBound...].hasPrefix("\"x\""))
        #expect("Basic".firstRange(ofIgnoringCase: "realm=") == nil)
        #expect("réalm=realm=".firstRange(ofIgnoringCase: "realm=").map { "réalm=realm="[$0.lowerBound...] } == "realm=")
    }

    @Test("lastPathComponent matches NSString's for the names a server may send")
    func lastComponent() {
        for path in ["a.txt", "dir/a.txt", "/etc/passwd", "../../x", "dir/", "a//b//", "/"] {
            let ours = String(path.lastPathComponent)
            let foundation = (path as NSString).lastPathComponent
            #expect(ours == foundation || (path == "/" && ours.isEmpty), "\(path): \(ours) vs \(foundation)")
        }
    }

    @Test("IMF-fixdate matches Foundation's HTTP date format across the years it can show, and is nil outside them",
          arguments: [0, 784_111_777, -1, -86_400, -86_401, 951_782_400, 4_102_444_800, -12_219_292_800, 253_402_300_799])
    func imfFixdate(seconds: Int) throws {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let ours = try #require(IMFFixdate.string(fromUnixTime: seconds))
        #expect(ours == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))), "\(seconds)")
    }

    @Test("IMF-fixdate's first representable second is 1 January of year 0, proleptic Gregorian (ICU's calendar turns Julian before 1582)")
    func imfFixdateYearZero() {
        #expect(IMFFixdate.string(fromUnixTime: -62_167_219_200) == "Sat, 01 Jan 0000 00:00:00 GMT")
    }

    @Test("IMF-fixdate of a time past 9999 or before year 0 is nil, not a crash",
          arguments: [253_402_300_800, -62_167_219_201, 67_768_036_191_676_799, Int.max, Int.min, -Int.max])
    func imfFixdateOutOfRange(seconds: Int) {
        #expect(IMFFixdate.string(fromUnixTime: seconds) == nil)
    }

    @Test("A URL's password shows as *** in messages; nothing else of the URL changes",
          arguments: [
              ("ftp://ann:pw@host/x", "ftp://ann:***@host/x"),
              ("http://u:p%40ss@h:8080/a?b=c", "http://u:***@h:8080/a?b=c"),
              ("http://a:b:c@[::1]:8080/", "http://a:***@[::1]:8080/"),
              ("http://ann@host/", "http://ann@host/"),
              ("http://host/a@b:c", "http://host/a@b:c"),
              ("http://host?x=u:p@y", "http://host?x=u:p@y"),
              ("data:,a:b@c", "data:,a:b@c"),
              ("data:,http://a:b@c/", "data:,http://a:b@c/"),
          ])
    func passwordHidden(url: String, shown: String) throws {
        let parsed = try #require(URL(string: url))
        #expect(parsed.absoluteStringHidingPassword == shown)
        let message = LoadError(.fileDoesNotExist, url: parsed, reason: "gone").description
        #expect(message == "\(LoadError.Code.fileDoesNotExist): \(shown) (gone)")
    }
}
