import Foundation
@testable import Loader
import Testing

@Suite("Digest authentication: the challenge and its answer (RFC 7616, RFC 2617)")
struct DigestChallengeTests {
    private func challenge(_ value: String) -> DigestChallenge? {
        AuthenticationChallengeList(value).challenges.first.flatMap(DigestChallenge.init)
    }

    /// The value of `name` in an `Authorization: Digest …` value.
    private func parameter(_ name: String, in authorization: String) -> String? {
        AuthenticationChallengeList(authorization).challenges.first?.parameters[name]
    }

    // RFC 7616 §3.9.1: the same exchange with SHA-256 and with MD5.
    private let rfc7616 = #"realm="http-auth@example.org", qop="auth, auth-int", nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#
    private let mufasa7616 = Credential(user: "Mufasa", password: "Circle of Life")
    private let cnonce7616 = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"

    @Test("RFC 7616's SHA-256 example gives its response, and the answer carries every field the server needs")
    func rfc7616SHA256() throws {
        let digest = try #require(challenge("Digest " + rfc7616 + ", algorithm=SHA-256"))
        let answer = digest.authorization(for: mufasa7616, method: "GET", uri: "/dir/index.html", cnonce: cnonce7616)
        #expect(answer.hasPrefix("Digest "))
        #expect(parameter("response", in: answer) == "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")
        #expect(parameter("username", in: answer) == "Mufasa")
        #expect(parameter("realm", in: answer) == "http-auth@example.org")
        #expect(parameter("uri", in: answer) == "/dir/index.html")
        #expect(parameter("algorithm", in: answer) == "SHA-256")
        #expect(parameter("qop", in: answer) == "auth")
        #expect(parameter("nc", in: answer) == "00000001")
        #expect(parameter("cnonce", in: answer) == cnonce7616)
        #expect(parameter("opaque", in: answer) == "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS")
    }

    @Test("RFC 7616's MD5 example gives its response")
    func rfc7616MD5() throws {
        let digest = try #require(challenge("Digest " + rfc7616 + ", algorithm=MD5"))
        let answer = digest.authorization(for: mufasa7616, method: "GET", uri: "/dir/index.html", cnonce: cnonce7616)
        #expect(parameter("response", in: answer) == "8ca523f5e9506fed4657c9700eebdbec")
    }

    @Test("RFC 2617's example (no algorithm named: MD5, and none named in the answer) gives its response")
    func rfc2617() throws {
        let digest = try #require(challenge(#"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#))
        let answer = digest.authorization(for: Credential(user: "Mufasa", password: "Circle Of Life"), method: "GET",
                                          uri: "/dir/index.html", cnonce: "0a4f113b")
        #expect(parameter("response", in: answer) == "6629fae49393a05397450978507c4ef1")
        #expect(parameter("algorithm", in: answer) == nil)
    }

    @Test("Without qop the answer has RFC 2069's form: no qop, nc or cnonce, and a response over the nonce alone")
    func withoutQOP() throws {
        let digest = try #require(challenge(#"Digest realm="r", nonce="n""#))
        let answer = digest.authorization(for: Credential(user: "u", password: "p"), method: "GET", uri: "/", cnonce: "c")
        #expect(parameter("qop", in: answer) == nil)
        #expect(parameter("nc", in: answer) == nil)
        #expect(parameter("cnonce", in: answer) == nil)
        // Worked out apart (Python's hashlib): MD5(MD5("u:r:p") + ":n:" + MD5("GET:/")).
        #expect(parameter("response", in: answer) == "f23121ca97143c6b358da620220c83b4")
    }

    @Test("A session algorithm hashes the nonces into the first hash")
    func sessionAlgorithm() throws {
        let digest = try #require(challenge(#"Digest realm="r", nonce="n", qop="auth", algorithm=SHA-256-sess"#))
        let answer = digest.authorization(for: Credential(user: "u", password: "p"), method: "PUT", uri: "/x", cnonce: "c")
        // Worked out apart (hashlib): the first hash is SHA-256(SHA-256("u:r:p") + ":n:c").
        #expect(parameter("response", in: answer) == "af8569b1e243a8a4f17ff597763da7a17af3e1d9095892b986329bab1d61a231")
        #expect(parameter("algorithm", in: answer) == "SHA-256-sess")
    }

    @Test("A nonce answered again counts its uses in nc, which enters the response")
    func nonceCount() throws {
        let digest = try #require(challenge(#"Digest realm="r", nonce="n", qop="auth""#))
        let answer = digest.authorization(for: Credential(user: "u", password: "p"), method: "GET", uri: "/", cnonce: "c", nonceCount: 2)
        #expect(parameter("nc", in: answer) == "00000002")
        #expect(parameter("response", in: answer) == "f1202435231f48ff4a8404e67cf5613f")
    }

    @Test("What cannot be answered is not read: no nonce, an unknown algorithm, auth-int alone, a session hash without qop", arguments: [
        #"Digest realm="r""#,
        #"Digest realm="r", nonce="n", algorithm=SHA-512-256"#,
        #"Digest realm="r", nonce="n", qop="auth-int""#,
        #"Digest realm="r", nonce="n", algorithm=MD5-sess"#,
        #"Basic realm="r""#,
    ])
    func unanswerable(value: String) {
        #expect(challenge(value) == nil)
    }

    @Test("userhash=true sends the user name hashed with the realm, and says so")
    func hashedUserName() throws {
        let digest = try #require(challenge(#"Digest realm="r", nonce="n", qop="auth", algorithm=SHA-256, userhash=true"#))
        let answer = digest.authorization(for: Credential(user: "Jäsøn", password: "p"), method: "GET", uri: "/", cnonce: "c")
        // SHA-256 of "Jäsøn:r" in UTF-8 (hashlib).
        #expect(parameter("username", in: answer) == "76c0575202e95aa187aeaed1ccfe819dcd065dd2d752593e902e6f2245de4e8c")
        #expect(parameter("userhash", in: answer) == "true")
    }

    @Test("A user name outside ASCII goes as username* (RFC 8187); quotes in one inside it are escaped")
    func userNames() throws {
        let digest = try #require(challenge(#"Digest realm="r", nonce="n", qop="auth""#))
        let accented = digest.authorization(for: Credential(user: "Jäsøn Doe", password: "p"), method: "GET", uri: "/", cnonce: "c")
        #expect(accented.contains("username*=UTF-8''J%C3%A4s%C3%B8n%20Doe"))
        #expect(parameter("username", in: accented) == nil)
        let quoted = digest.authorization(for: Credential(user: #"a"b\c"#, password: "p"), method: "GET", uri: "/", cnonce: "c")
        #expect(parameter("username", in: quoted) == #"a"b\c"#)
    }

    @Test("Among the challenges a server lists, the first Digest one that can be answered comes first, then Basic")
    func choice() throws {
        let url = URL(string: "http://example.test:8080/x")!
        let list = #"Basic realm="b", Digest realm="d", nonce="1", algorithm=SHA-512-256, Digest realm="d", nonce="2", algorithm=SHA-256"#
        let offers = ChallengeAnswering.offers(in: list, url: url)
        #expect(offers.map(\.space.authenticationMethod) == ["Digest", "Basic"])
        #expect(offers.map(\.space.realm) == ["d", "b"])
        #expect(offers.allSatisfy { $0.space.port == 8080 && $0.space.host == "example.test" })
        guard case .digest(let digest) = offers.first?.offer else {
            Issue.record("expected a Digest offer first, got \(offers)")
            return
        }
        #expect(digest.nonce == "2")
        #expect(digest.algorithm == .sha256)
        let basicOnly = ChallengeAnswering.offers(in: #"Negotiate, Basic realm="b""#, url: url)
        #expect(basicOnly.map(\.offer) == [.basic])
        #expect(ChallengeAnswering.offers(in: "Negotiate, Bearer", url: url).isEmpty)
    }

    @Test("Client nonces are 32 hexadecimal digits, new each time")
    func clientNonces() {
        let nonces = Set((0..<50).map { _ in DigestChallenge.makeClientNonce() })
        #expect(nonces.count == 50)
        #expect(nonces.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }
}
