#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a mutex: every read and write goes through ``withLock(_:)``. Copies share the
/// value and its lock.
///
/// It wraps a `pthread_mutex_t` rather than the standard library's `Mutex` because the thread sanitizer
/// understands pthread locks; on Linux `Mutex` waits on a futex the sanitizer cannot see, so each
/// correctly locked access would be reported as a race. Handler authors can use it for a subclass's
/// mutable state.
public struct Locked<Value> {

    /// The value and its mutex in one allocation (a load makes several of these).
    @usableFromInline
    final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                _ = mutex.deinitialize(count: 1)
            }
        }
    }

    @usableFromInline
    let storage: Storage

    /// Guards `value`.
    @inlinable
    public init(_ value: consuming Value) {
        // Inlinable, so that callers in other modules specialise it: unspecialised, each lock made looked
        // its storage class's generic metadata up at run time (a hashed search, seen in request profiles).
        // Moved into the buffer, not copied: a copy of a state with many references (a load's event state,
        // a task's) costs a retain for each now and a release for each when the original goes.
        var slot = Optional(value)
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in slot.take()! }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
    }

    /// Runs `body` with the value while holding the lock. Do not call out to foreign code inside.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { value, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}

// @unchecked: the value is only touched inside `withLock`, which holds the mutex; only a Sendable value may be shared so,
// since `withLock` can hand it (a reference) out.
extension Locked: @unchecked Sendable where Value: Sendable {}
