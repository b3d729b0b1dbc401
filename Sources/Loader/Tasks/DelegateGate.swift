#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Lets one delegate call of a task run at a time, as ``LoadTaskDelegate`` promises: the response and its body
/// are reported from the reader's side while upload progress comes from the handler's, and a server may answer
/// while the upload still goes out.
///
/// Recursive, so that a delegate may call back into its task (cancel it, read its progress) from a callback on
/// the same thread. A pthread mutex, which the thread sanitizer understands (see ``Locked``).
final class DelegateGate: @unchecked Sendable {
    // @unchecked: the mutex is only used through pthread calls, which are thread-safe.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() {
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` while no other delegate call of the task runs.
    func run(_ body: () -> Void) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        body()
    }
}
