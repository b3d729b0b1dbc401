import Loader
import TestSupport

/// Answers challenges from a script, recording what it was asked; past the script, it rejects the space.
final class ChallengeAnswerer: LoadTaskDelegate {
    let answers: [ChallengeDisposition]
    let seen = Locked<[AuthenticationChallenge]>([])
    init(_ answers: [ChallengeDisposition]) { self.answers = answers }
    func loadTask(_ task: LoadTask, didReceive challenge: AuthenticationChallenge) async -> ChallengeDisposition {
        let index = seen.withLock { seen -> Int in
            seen.append(challenge)
            return seen.count - 1
        }
        return index < answers.count ? answers[index] : .rejectProtectionSpace
    }
}
