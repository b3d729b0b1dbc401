@testable import Loader
import Testing

@Suite("WWW-Authenticate: the list of challenges (RFC 9110 §11.6.1)")
struct ChallengeListTests {
    typealias Challenge = AuthenticationChallengeList.Challenge

    @Test("Schemes, parameters, token68 and quoted strings are told apart", arguments: [
        (#"Basic realm="x""#, [Challenge(scheme: "Basic", parameters: ["realm": "x"])]),
        (#"Negotiate, Basic realm="a, b""#, [Challenge(scheme: "Negotiate"), Challenge(scheme: "Basic", parameters: ["realm": "a, b"])]),
        (#"Bearer realm="api", error="invalid_token", Basic realm=site"#,
         [Challenge(scheme: "Bearer", parameters: ["realm": "api", "error": "invalid_token"]), Challenge(scheme: "Basic", parameters: ["realm": "site"])]),
        (#"Negotiate a87421000492aa874209af8bc028==, basic REALM = "q\"uote\\d""#,
         [Challenge(scheme: "Negotiate", parameters: ["a87421000492aa874209af8bc028": ""]), Challenge(scheme: "basic", parameters: ["realm": #"q"uote\d"#])]),
        (#"Basic realm="unclosed"#, [Challenge(scheme: "Basic", parameters: ["realm": "unclosed"])]),
        ("", []),
    ])
    func parses(value: String, expected: [Challenge]) {
        #expect(AuthenticationChallengeList(value).challenges == expected)
    }

    @Test("The Basic challenge is found wherever it stands, its scheme compared without case")
    func findsBasic() {
        let list = AuthenticationChallengeList(#"Digest realm="d", nonce="n", BASIC realm="b""#)
        #expect(list.first(scheme: "basic")?.parameters["realm"] == "b")
        #expect(list.first(scheme: "ntlm") == nil)
    }
}
