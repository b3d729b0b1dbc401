import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

@Suite("http: authentication challenges against nginx (Basic)")
struct HTTPAuthenticationTests {
    private let good = Credential(user: "user", password: "secret")

    @Test("With nobody to answer, the 401 reaches the caller at once (no hang)")
    func unanswered() async throws {
        let (_, response) = try await Nginx.session().data(from: Nginx.http("/private"))
        #expect(response.status == .unauthorized)
    }

    @Test("Credentials in the URL's user info answer the challenge")
    func userInfo() async throws {
        let port = try Nginx.require().httpPort
        let (data, response) = try await Nginx.session().data(from: URL(string: "http://user:secret@127.0.0.1:\(port)/private")!)
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "Hello from nginx\n")
    }

    @Test("The task delegate's credential is used; it sees the realm and the failure count")
    func delegateCredential() async throws {
        let answerer = ChallengeAnswerer([.useCredential(Credential(user: "user", password: "wrong")), .useCredential(good)])
        let (_, response) = try await Nginx.session().data(from: Nginx.http("/private"), delegate: answerer)
        #expect(response.status == .ok)
        let seen = answerer.seen.withLock { $0 }
        #expect(seen.map(\.previousFailureCount) == [0, 1])
        #expect(seen.first?.protectionSpace.realm == "loader tests")
        #expect(seen.last?.proposedCredential?.password == "wrong")
    }

    @Test("Wrong credentials every time end with the 401 after the attempt limit")
    func attemptLimit() async throws {
        let wrong = ChallengeDisposition.useCredential(Credential(user: "user", password: "nope"))
        let answerer = ChallengeAnswerer(Array(repeating: wrong, count: 10))
        let (_, response) = try await Nginx.session().data(from: Nginx.http("/private"), delegate: answerer)
        #expect(response.status == .unauthorized)
        #expect(answerer.seen.withLock { $0.count } == 3)
    }

    @Test("Cancelling the challenge fails the load with userCancelledAuthentication")
    func cancelled() async throws {
        let url = try Nginx.http("/private")
        let error = await loadError { _ = try await Nginx.session().data(from: url, delegate: ChallengeAnswerer([.cancelAuthenticationChallenge])) }
        #expect(error?.code == .userCancelledAuthentication)
        #expect(error?.url == url)
    }

    @Test("Default handling finds a credential in the session's credential store")
    func store() async throws {
        let store = CredentialStore()
        let port = try Nginx.require().httpPort
        store.set(good, for: ProtectionSpace(host: "127.0.0.1", port: port, scheme: "http", realm: "loader tests", authenticationMethod: "Basic"))
        let session = try Nginx.session { $0.credentialStore = store }
        let (_, response) = try await session.data(from: Nginx.http("/private"))
        #expect(response.status == .ok)
    }
}

@Suite("http: challenges a scripted server lists (an in-process NIO server)")
struct HTTPChallengeListTests {
    @Test("A Basic challenge after another scheme, in a field of its own, is answered; its quoted realm is read whole")
    func basicAmongOthers() async throws {
        let answerer = ChallengeAnswerer([.useCredential(Credential(user: "u", password: "p"))])
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [HTTPSchemeHandler.self]
        let session = LoaderSession(configuration: configuration)
        let (data, response) = try await session.data(from: ScriptedServer.shared.url("/401-multi"), delegate: answerer)
        #expect(response.status == .ok)
        #expect(String(decoding: data, as: UTF8.self) == "welcome Basic dTpw")
        let seen = answerer.seen.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.first?.protectionSpace.realm == #"multi, "quoted""#)
        #expect(seen.first?.protectionSpace.authenticationMethod == "Basic")
    }
}
