import FoundationEssentials
@testable import FTPScheme
import Testing

@Suite("BatchBuffers: a transfer's batch buffers, reused once the reader lets go")
struct BatchBuffersTests {
    @Test("A buffer handed out as Data comes back when the Data goes, and is the next one taken")
    func reuse() {
        let buffers = BatchBuffers(size: 4096)
        let first = buffers.take()
        first.storeBytes(of: 7, as: UInt8.self)
        withExtendedLifetime(buffers.data(in: first, count: 4096)) { data in
            #expect(data.first == 7)
            #expect(buffers.idleCount == 0)
        }
        #expect(buffers.idleCount == 1)
        #expect(buffers.take() == first)
        #expect(buffers.idleCount == 0)
        first.deallocate()
    }

    @Test("After a burst of twelve out at once, all twelve wait for the next burst; a thirteenth is freed")
    func burst() {
        let buffers = BatchBuffers(size: 4096)
        let taken = (0..<13).map { _ in buffers.take() }
        do {
            // The reader holds all of them, then lets go of them together.
            let chunks = taken.map { buffers.data(in: $0, count: 4096) }
            #expect(chunks.count == 13)
        }
        #expect(buffers.idleCount == 12)
        let again = (0..<12).map { _ in buffers.take() }
        #expect(Set(again).isSubset(of: Set(taken)))
        #expect(buffers.idleCount == 0)
        again.forEach { $0.deallocate() }
    }

    @Test("Once closed, the idle buffers are freed and none given back is kept")
    func closed() {
        let buffers = BatchBuffers(size: 4096)
        let held = buffers.data(in: buffers.take(), count: 4096)
        do { _ = buffers.data(in: buffers.take(), count: 4096) }
        #expect(buffers.idleCount == 1)
        buffers.close()
        #expect(buffers.idleCount == 0)
        _ = consume held
        #expect(buffers.idleCount == 0)
    }
}
