import Loader
import Testing

@Suite("Basic authentication: the field value a credential sends (RFC 7617)")
struct BasicAuthorizationTests {
    @Test("RFC 7617's example gives its field value")
    func rfcExample() {
        #expect(Credential(user: "Aladdin", password: "open sesame").basicAuthorization == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
    }

    @Test("Non-ASCII text goes as UTF-8 (RFC 7617 §2.1's charset example), and a colon in the password is kept")
    func utf8AndColon() {
        #expect(Credential(user: "test", password: "123\u{A3}").basicAuthorization == "Basic dGVzdDoxMjPCow==")
        // base64("u:p:w")
        #expect(Credential(user: "u", password: "p:w").basicAuthorization == "Basic dTpwOnc=")
        // An empty password still sends its colon: base64("u:").
        #expect(Credential(user: "u", password: "").basicAuthorization == "Basic dTo=")
    }
}
