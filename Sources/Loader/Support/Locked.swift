#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a mutex: every read and write goes through ``withLock(_:)``.
///
/// It wraps a `pthread_mutex_t` rather than the standard library's `Mutex` because the thread sanitizer
/// understands pthread locks; on Linux `Mutex` waits on a futex the sanitizer cannot see, so each
/// correctly locked access would be reported as a race. Handler authors can use it for a subclass's
/// mutable state.
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched inside `withLock`, which holds `mutex`.
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// Guards `value`.
    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock. Do not call out to foreign code inside.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body(&valueStorage)
    }

    @usableFromInline
    var valueStorage: Value {
        get { value }
        _modify { yield &value }
    }

    @usableFromInline
    func lock() { pthread_mutex_lock(mutex) }

    @usableFromInline
    func unlock() { pthread_mutex_unlock(mutex) }
}
