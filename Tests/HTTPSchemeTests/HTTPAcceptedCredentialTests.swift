import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

@Suite("http: a Basic credential the server accepted goes with later requests unasked (an in-process NIO server)")
struct HTTPAcceptedCredentialTests {
    private let good = Credential(user: "u", password: "p")

    private static func field(_ userAndPassword: String) -> String {
        "Basic " + Data(userAndPassword.utf8).base64EncodedString()
    }

    private static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    /// A scripted server, and a session whose delegate answered u:p at `/area/a`: the session keeps it for `/area/`.
    private func learnt() async throws -> (ScriptedServer, LoaderSession) {
        let server = try ScriptedServer()
        let session = plainHTTPSession()
        let (_, response) = try await session.data(from: server.url("/area/a"), delegate: ChallengeAnswerer([.useCredential(good)]))
        #expect(response.status == .ok)
        return (server, session)
    }

    /// A scripted server, and a session whose credential store holds u:p for its Basic space (not yet learnt).
    private func storeHolding() throws -> (ScriptedServer, CredentialStore, ProtectionSpace, LoaderSession) {
        let server = try ScriptedServer()
        let store = CredentialStore()
        let space = ProtectionSpace(url: server.url("/area/a"), realm: nil, authenticationMethod: "Basic")
        store.set(good, for: space)
        return (server, store, space, plainHTTPSession { $0.credentialStore = store })
    }

    @Test("Below the accepted request's directory later loads send it at once; above it, or to another host name, they are challenged")
    func belowTheDirectory() async throws {
        let server = try ScriptedServer()
        let session = plainHTTPSession()
        let answerer = ChallengeAnswerer([.useCredential(good)])
        let (_, response) = try await session.data(from: server.url("/area/docs/a"), delegate: answerer)
        #expect(response.status == .ok)
        // No delegate from here on: only a kept credential can get past the server.
        for path in ["/area/docs/b", "/area/docs/sub/c?x=1", "/area/docs/"] {
            let (data, response) = try await session.data(from: server.url(path))
            #expect(response.status == .ok, "\(path)")
            #expect(Self.text(data) == "welcome " + Self.field("u:p"), "\(path)")
        }
        #expect(server.areaChallengeCount == 1)
        #expect(answerer.seen.withLock { $0.count } == 1)

        let (_, above) = try await session.data(from: server.url("/area/other"))
        #expect(above.status == .unauthorized)
        let (_, otherName) = try await session.data(from: server.url("/area/docs/b", host: "localhost"))
        #expect(otherName.status == .unauthorized)
        let (_, otherSession) = try await plainHTTPSession().data(from: server.url("/area/docs/b"))
        #expect(otherSession.status == .unauthorized)
        #expect(server.areaChallengeCount == 4)
    }

    @Test("A kept credential the server refuses is forgotten: the next load goes without it; the delegate's new answer is kept instead")
    func refused() async throws {
        let (server, session) = try await learnt()

        // The password is q here: u:p goes unasked, is refused, and nobody answers.
        let (_, refused) = try await session.data(from: server.url("/area/b?password=q"))
        #expect(refused.status == .unauthorized)
        // p would pass here, but it is no longer sent.
        let (_, forgotten) = try await session.data(from: server.url("/area/c"))
        #expect(forgotten.status == .unauthorized)
        #expect(server.areaChallengeCount == 3)

        let newer = Credential(user: "u", password: "q")
        let answerer = ChallengeAnswerer([.useCredential(newer)])
        let (data, response) = try await session.data(from: server.url("/area/d?password=q"), delegate: answerer)
        #expect(response.status == .ok)
        #expect(Self.text(data) == "welcome " + Self.field("u:q"))
        let (again, _) = try await session.data(from: server.url("/area/e?password=q"))
        #expect(Self.text(again) == "welcome " + Self.field("u:q"))
        #expect(server.areaChallengeCount == 4)
    }

    @Test("A refused kept credential counts as the load's first failure: the challenge says 1 and proposes it, as URLSession's does",
          arguments: [false, true])
    func refusedIsProposed(withResponseCache: Bool) async throws {
        // With a response cache (not a built-in layer) the authentication layer runs in the ordinary chain.
        let server = try ScriptedServer()
        let session = plainHTTPSession { if withResponseCache { $0.responseCache = MemoryResponseCache() } }
        let (_, learnt) = try await session.data(from: server.url("/area/a"), delegate: ChallengeAnswerer([.useCredential(good)]))
        #expect(learnt.status == .ok)
        let newer = Credential(user: "u", password: "q")
        let answerer = ChallengeAnswerer([.useCredential(newer)])
        // u:p goes unasked and is refused here; the delegate answers u:q.
        let (data, response) = try await session.data(from: server.url("/area/b?password=q"), delegate: answerer)
        #expect(response.status == .ok && Self.text(data) == "welcome " + Self.field("u:q"))
        let seen = answerer.seen.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.first?.previousFailureCount == 1)
        #expect(seen.first?.proposedCredential == good)
        #expect(seen.first?.failureResponse?.status == .unauthorized)
        #expect(server.areaChallengeCount == 2)
    }

    @Test("A stale Digest challenge after a Basic answer is a new challenge: the delegate is asked, nothing goes unasked")
    func staleAfterBasic() async throws {
        let server = try ScriptedServer()
        let answerer = ChallengeAnswerer([.useCredential(good), .rejectProtectionSpace])
        let (body, response) = try await plainHTTPSession().data(from: server.url("/basic-then-stale"), delegate: answerer)
        #expect(response.status == .unauthorized)
        #expect(Self.text(body) == "stale?")
        let seen = answerer.seen.withLock { $0 }
        #expect(seen.map(\.protectionSpace.authenticationMethod) == ["Basic", "Digest"])
        #expect(seen.last?.previousFailureCount == 1)
    }

    @Test("A kept credential from the store that the server refuses is not sent again by default handling: the 401 goes to the caller")
    func refusedStoreCredentialNotResent() async throws {
        let (server, _, _, session) = try storeHolding()
        let (_, first) = try await session.data(from: server.url("/area/a"))
        #expect(first.status == .ok)
        #expect(server.areaChallengeCount == 1)
        // The store still holds u:p, so it goes unasked; the server wants u:q here and refuses it. Sending it again
        // would be one more refusal.
        let (_, refused) = try await session.data(from: server.url("/area/b?password=q"))
        #expect(refused.status == .unauthorized)
        #expect(server.areaChallengeCount == 2)
        // Forgotten: the next load is challenged, and the store's u:p, right there, is learnt again.
        let (_, relearnt) = try await session.data(from: server.url("/area/c"))
        #expect(relearnt.status == .ok)
        #expect(server.areaChallengeCount == 3)
    }

    @Test("A load that went without the credential it would have had (dropped, the store no longer holds it) is no refusal of another")
    func droppedIsNoRefusal() async throws {
        let (server, store, space, session) = try storeHolding()
        // Kept for /area/docs/ from the store, then for /area/ from the delegate.
        let (_, docs) = try await session.data(from: server.url("/area/docs/a"))
        #expect(docs.status == .ok)
        let (_, area) = try await session.data(from: server.url("/area/a"), delegate: ChallengeAnswerer([.useCredential(good)]))
        #expect(area.status == .ok)
        #expect(server.areaChallengeCount == 2)

        // The store no longer holds it: /area/docs/'s entry is dropped and the request goes without a credential.
        store.remove(for: space)
        let answerer = ChallengeAnswerer([.rejectProtectionSpace])
        let (_, unanswered) = try await session.data(from: server.url("/area/docs/b"), delegate: answerer)
        #expect(unanswered.status == .unauthorized)
        let seen = answerer.seen.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.first?.previousFailureCount == 0)
        #expect(seen.first?.proposedCredential == nil)
        // The delegate's entry for /area/ was not refused, and still goes unasked.
        let (data, stillKept) = try await session.data(from: server.url("/area/c"))
        #expect(stillKept.status == .ok && Self.text(data) == "welcome " + Self.field("u:p"))
        #expect(server.areaChallengeCount == 3)
    }

    @Test("One the credential store gave goes unasked only while the store holds it: removed or replaced there, the challenge is answered again")
    func heldByTheStore() async throws {
        let (server, store, space, session) = try storeHolding()
        let (_, first) = try await session.data(from: server.url("/area/a"))
        #expect(first.status == .ok)
        let (_, ahead) = try await session.data(from: server.url("/area/b"))
        #expect(ahead.status == .ok)
        #expect(server.areaChallengeCount == 1, "sent ahead while the store holds it")

        store.remove(for: space)
        let (_, removed) = try await session.data(from: server.url("/area/c"))
        #expect(removed.status == .unauthorized)
        #expect(server.areaChallengeCount == 2)

        // Another credential in the store: used at the next challenge, and kept in its turn.
        store.set(Credential(user: "u", password: "q"), for: space)
        let (data, replaced) = try await session.data(from: server.url("/area/d?password=q"))
        #expect(replaced.status == .ok && Self.text(data) == "welcome " + Self.field("u:q"))
        let (_, keptAgain) = try await session.data(from: server.url("/area/e?password=q"))
        #expect(keptAgain.status == .ok)
        #expect(server.areaChallengeCount == 3)
        // Changed in the store: the kept u:q no longer goes; the challenge is answered with the store's u:p.
        store.set(good, for: space)
        let (changedData, changed) = try await session.data(from: server.url("/area/f"))
        #expect(changed.status == .ok && Self.text(changedData) == "welcome " + Self.field("u:p"))
        #expect(server.areaChallengeCount == 4)
    }

    @Test("Only an accepted credential is kept: not one answered with 403, nor one from a URL's user info")
    func onlyAccepted() async throws {
        let server = try ScriptedServer()
        let session = plainHTTPSession()
        let (_, forbidden) = try await session.data(from: server.url("/area/forbidden"), delegate: ChallengeAnswerer([.useCredential(good)]))
        #expect(forbidden.status == .forbidden)
        let (_, afterForbidden) = try await session.data(from: server.url("/area/a"))
        #expect(afterForbidden.status == .unauthorized)

        let withUserInfo = try #require(URL(string: "http://u:p@127.0.0.1:\(server.port)/area/b"))
        let (_, userInfo) = try await session.data(from: withUserInfo)
        #expect(userInfo.status == .ok)
        let (_, afterUserInfo) = try await session.data(from: server.url("/area/c"))
        #expect(afterUserInfo.status == .unauthorized)
        #expect(server.areaChallengeCount == 4)
    }

    @Test("A redirect to another origin carries no kept credential")
    func notAcrossOrigins() async throws {
        let (server, session) = try await learnt()
        // The kept credential passes /area/elsewhere, whose 302 leads to localhost: challenged there, not answered.
        let (body, response) = try await session.data(from: server.url("/area/elsewhere"))
        #expect(response.status == .unauthorized)
        #expect(response.url.host() == "localhost")
        #expect(Self.text(body) == "who are you?")
        #expect(server.areaChallengeCount == 2)
    }

    @Test("A request's own Authorization field goes instead of the kept credential, and a URL's user info is used when challenged")
    func ownCredentialsFirst() async throws {
        let (server, session) = try await learnt()

        var request = LoadRequest(url: server.url("/area/b?password=q"))
        request.headerFields[.authorization] = Self.field("u:q")
        let (own, ownResponse) = try await session.data(for: request)
        #expect(ownResponse.status == .ok)
        #expect(Self.text(own) == "welcome " + Self.field("u:q"))
        #expect(server.areaChallengeCount == 1)

        let withUserInfo = try #require(URL(string: "http://u:q@127.0.0.1:\(server.port)/area/c?password=q"))
        let (userInfo, userInfoResponse) = try await session.data(from: withUserInfo)
        #expect(userInfoResponse.status == .ok)
        #expect(Self.text(userInfo) == "welcome " + Self.field("u:q"))
        // Challenged once for it: the kept credential did not go with a URL that names its own.
        #expect(server.areaChallengeCount == 2)
    }
}
