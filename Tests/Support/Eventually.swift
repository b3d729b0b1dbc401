import Foundation

/// Polls `condition` every 10 ms, `seconds` × 100 times at most; whether it came true.
///
/// Bounded by the number of looks, not by the clock: when other suites hold Swift's task pool (two threads
/// here) for seconds, the work this waits for is held up as long as the looks are, and a clock's deadline
/// would pass with the condition never given its chance (a middleware test among the failures of the run at
/// 129ba24, whose pool a fixture's blocking wait held). Each look after the first follows a sleep: the wait stays
/// bounded (`seconds` is clamped to 0…3600, so that no caller's figure can make it endless or trap).
public func eventually(within seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    let looks = seconds.isNaN ? 1 : Int(min(max(seconds, 0), 3600) * 100)
    for _ in 0..<max(1, looks) {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
