import Foundation
import FTPScheme
import Loader
import TestSupport
import Testing

/// The FTP servers `scripts/test-servers` runs; a test that needs them fails (not skips) when they are not up.
enum FTPServers {
    static func require() throws -> TestServers.FTP {
        try #require(TestServers.ftp, "the FTP servers could not be started by scripts/test-servers (see its output)")
    }

    static func url(_ path: String, port: Int? = nil, userInfo: String? = nil, host: String = "127.0.0.1") throws -> URL {
        let server = try require()
        let user = userInfo.map { $0 + "@" } ?? ""
        return URL(string: "ftp://\(user)\(host):\(port ?? server.port)\(path)")!
    }

    /// A session with the FTP handler only.
    static func session(
        delegate: (any LoaderSessionDelegate)? = nil,
        configure: (inout LoaderSession.Configuration) -> Void = { _ in }
    ) -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [FTPSchemeHandler.self]
        configure(&configuration)
        return LoaderSession(configuration: configuration, delegate: delegate)
    }

    static func file(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: try require().root + path))
    }
}

/// Answers login challenges with a credential, recording them; counts upload progress.
final class FTPDelegate: LoaderSessionDelegate {
    let answer: ChallengeDisposition
    let challenges = Locked<[AuthenticationChallenge]>([])
    let sent = Locked<[Int64]>([])
    init(answer: ChallengeDisposition = .performDefaultHandling) { self.answer = answer }
    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        challenges.withLock { $0.append(challenge) }
        return answer
    }
    func loadTask(_ task: LoadTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
        sent.withLock { $0.append(totalBytesSent) }
    }
}
