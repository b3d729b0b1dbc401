import FoundationEssentials
import Loader

/// The buffers a transfer gathers its batches in, reused once the reader lets go of them.
///
/// A fresh buffer of 512 KiB for every batch cost more than the copy into it: glibc gave each freed one back
/// to the kernel, so every batch faulted its pages in and zeroed them again. A buffer that comes back here
/// is kept for the next batch instead. Once the transfer ends, ``close()`` frees the idle ones and every one
/// given back later, so a reader that keeps chunks does not keep spares too.
///
/// Up to 12 are kept idle: a reader that falls behind holds its body buffer's worth (2 MiB of bytes, in batches
/// of about 370 KiB each in 512 KiB buffers) and more while the transfer pauses, and up to eleven were out at
/// once in a 256 MiB download here. Keeping only two, the rest were freed whenever the reader caught up and
/// made anew when it fell behind again: 46 fresh buffers per download and 25,000-40,000 page faults per four
/// downloads, against 4,000-8,000 now. Idle buffers never outnumber those that were out at once, so a
/// transfer holds no more than its peak, but it keeps that until it ends.
final class BatchBuffers: Sendable {
    /// The size of each buffer.
    let size: Int
    /// How many idle buffers are kept at most.
    private let idleLimit: Int
    private let state = Locked(State())

    // @unchecked: the idle buffers are owned by this list alone (none is handed out while idle), under the lock.
    private struct State: @unchecked Sendable {
        var idle: [UnsafeMutableRawPointer] = []
        var isClosed = false
    }

    /// Buffers of `size` bytes, keeping at most `idleLimit` of them idle.
    init(size: Int, idleLimit: Int = 12) {
        self.size = size
        self.idleLimit = idleLimit
    }

    deinit {
        state.withLock { $0.idle.forEach { $0.deallocate() } }
    }

    /// How many buffers wait idle for the next batch.
    var idleCount: Int { state.withLock { $0.idle.count } }

    /// An idle buffer, or a new one.
    func take() -> UnsafeMutableRawPointer {
        state.withLock { $0.idle.popLast() } ?? UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    }

    /// The first `count` bytes of `buffer` (one of this pool's) as `Data`, which gives the buffer back when
    /// the last copy of it goes.
    func data(in buffer: UnsafeMutableRawPointer, count: Int) -> Data {
        Data(bytesNoCopy: buffer, count: count, deallocator: .custom { [self] pointer, _ in giveBack(pointer) })
    }

    /// Keeps `buffer` for the next batch, or frees it when enough are idle or the transfer has ended.
    func giveBack(_ buffer: UnsafeMutableRawPointer) {
        let kept = state.withLock { state in
            guard !state.isClosed, state.idle.count < idleLimit else { return false }
            state.idle.append(buffer)
            return true
        }
        if !kept { buffer.deallocate() }
    }

    /// Frees the idle buffers, and from now on every buffer given back.
    func close() {
        let idle = state.withLock { state in
            state.isClosed = true
            defer { state.idle = [] }
            return state.idle
        }
        idle.forEach { $0.deallocate() }
    }
}
