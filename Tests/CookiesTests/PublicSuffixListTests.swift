@testable import Cookies
import Foundation
import TestSupport
import Testing

@Suite("Public Suffix List: publicsuffix.org's test vectors and the list shipped")
struct PublicSuffixListTests {
    /// The cases of `test_psl.txt`: `checkPublicSuffix('host', 'registrable')`, either side possibly `null`.
    private static func cases() throws -> [(host: String?, expected: String?)] {
        let text = try String(contentsOf: Corpora.url("publicsuffix/test_psl.txt"), encoding: .utf8)
        return try text.split(separator: "\n").compactMap { line -> (String?, String?)? in
            guard line.hasPrefix("checkPublicSuffix(") else { return nil }
            let arguments = line.dropFirst("checkPublicSuffix(".count).prefix { $0 != ")" }
            let parts = arguments.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            try #require(parts.count == 2, "cannot read \(line)")
            func value(_ text: String) -> String? { text == "null" ? nil : String(text.dropFirst().dropLast()) }
            return (value(parts[0]), value(parts[1]))
        }
    }

    @Test("Every case of publicsuffix/test_psl.txt gives the expected registrable domain, with the corpus's own list")
    func corpusVectors() throws {
        let list = PublicSuffixList(rules: try String(contentsOf: Corpora.url("publicsuffix/public_suffix_list.dat"), encoding: .utf8))
        var passed = 0
        let cases = try Self.cases()
        for (host, expected) in cases {
            let found = host.flatMap { list.registrableDomain(of: $0) }
            if found == expected {
                passed += 1
            } else {
                Issue.record("checkPublicSuffix(\(host.debugDescription)): expected \(expected.debugDescription), got \(found.debugDescription)")
            }
        }
        print("Public Suffix List test_psl.txt: \(passed)/\(cases.count) passed")
        #expect(cases.count == 78)
        #expect(passed == cases.count)
    }

    @Test("The list shipped in the package has the corpus's rules, all in order, and gives the same answers")
    func shippedList() throws {
        func rules(_ text: String) -> [Substring] {
            text.split(whereSeparator: \.isNewline).compactMap { line in
                line.split(whereSeparator: \.isWhitespace).first.flatMap { $0.hasPrefix("//") ? nil : $0 }
            }
        }
        let corpus = try String(contentsOf: Corpora.url("publicsuffix/public_suffix_list.dat"), encoding: .utf8)
        let shipped = rules(PublicSuffixList.shippedRules)
        #expect(shipped.count == 10_248)
        #expect(shipped == rules(corpus), "scripts/public-suffix-list writes the rules again")
        for (host, expected) in try Self.cases() {
            #expect(host.flatMap { PublicSuffixList.shipped.registrableDomain(of: $0) } == expected, "\(host.debugDescription)")
        }
    }

    @Test("Public suffixes, wildcards and exceptions; IP addresses and empty labels are not domain names")
    func suffixes() {
        let list = PublicSuffixList(rules: "// a comment\ncom\nco.uk\n\n*.kobe.jp\n!city.kobe.jp\n公司.cn\n")
        #expect(list.publicSuffix(of: "www.example.co.uk") == "co.uk")
        #expect(list.isPublicSuffix("co.uk"))
        #expect(list.isPublicSuffix("example") == true, "the implicit * rule")
        #expect(!list.isPublicSuffix("example.com"))
        #expect(list.publicSuffix(of: "a.b.kobe.jp") == "b.kobe.jp")
        #expect(list.publicSuffix(of: "www.city.kobe.jp") == "kobe.jp")
        #expect(list.registrableDomain(of: "WWW.Example.COM") == "example.com")
        // A rule in Unicode matches a host in Punycode, and the answer keeps the host's form.
        #expect(list.registrableDomain(of: "www.xn--85x722f.xn--55qx5d.cn") == "xn--85x722f.xn--55qx5d.cn")
        #expect(list.registrableDomain(of: "www.食狮.公司.cn") == "食狮.公司.cn")
        // And the other way: a host in Unicode meets a rule in Punycode ("bücher" is RFC 3492's "bcher-kva").
        #expect(PublicSuffixList(rules: "xn--bcher-kva.example").publicSuffix(of: "www.Bücher.example") == "bücher.example")
        #expect(list.registrableDomain(of: "127.0.0.1") == nil)
        #expect(list.registrableDomain(of: "::1") == nil)
        #expect(list.registrableDomain(of: "a..example.com") == nil)
        #expect(list.registrableDomain(of: "") == nil)
    }
}
