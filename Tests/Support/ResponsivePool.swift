import Foundation

/// Waits until Swift's task pool answers promptly: `calmLooks` sleeps of 20 ms in a row each end within 100 ms of
/// their start. Bounded: after `seconds` (clamped to 0…600) it returns anyway.
///
/// For a test whose idle timeout must not count a stall of the whole process: a run of every suite starts hundreds
/// of tests at once on two pool threads, and in a slow spell of the machine the first seconds have held a load's
/// every step for over 20 s (the slow-upload test failed so twice on 2026-11-29, no progress for its 20 s). Waiting
/// for a calm pool first tests what the test means to, not the run's start.
public func poolIsResponsive(within seconds: Double = 90, calmLooks: Int = 5) async {
    let deadline = Date().addingTimeInterval(seconds.isNaN ? 0 : min(max(seconds, 0), 600))
    var calm = 0
    while calm < calmLooks, Date() < deadline {
        let start = Date()
        try? await Task.sleep(for: .milliseconds(20))
        calm = Date().timeIntervalSince(start) < 0.1 ? calm + 1 : 0
    }
}
