import Loader

/// Lets one test of a kind run at a time, across every suite and target of the process: those that measure
/// the process's memory, those that fill the shared full disk.
public final class ExclusiveGate: Sendable {
    /// The gate of the tests that measure the process's memory.
    public static let memory = ExclusiveGate()
    /// The gate of the tests that fill the full-disk fixture (``TestServers/withFullDisk(_:)``).
    public static let fullDisk = ExclusiveGate()
    private let state = Locked<(busy: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Runs `body` when no other `exclusive` body is running.
    public func exclusive<T>(_ body: () async throws -> T) async throws -> T {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let enter = state.withLock { state -> Bool in
                if state.busy {
                    state.waiters.append(waiter)
                    return false
                }
                state.busy = true
                return true
            }
            if enter { waiter.resume() }
        }
        defer {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if state.waiters.isEmpty {
                    state.busy = false
                    return nil
                }
                return state.waiters.removeFirst()
            }
            next?.resume()
        }
        return try await body()
    }
}
