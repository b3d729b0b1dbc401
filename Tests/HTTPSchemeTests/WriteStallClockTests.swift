@testable import HTTPScheme
import NIOCore
import Testing

/// The clock that tells a WebSocket's server has stopped reading: bytes waiting with none leaving for its limit.
@Suite("ws: write stall clock")
struct WriteStallClockTests {
    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    private func at(_ milliseconds: Int64) -> NIODeadline { start + .milliseconds(milliseconds) }

    @Test("Nothing waiting is clear, however long")
    func nothingWaiting() {
        var clock = WriteStallClock(limit: .seconds(1))
        #expect(clock.look(handed: 100, waiting: 0, at: at(0)) == .clear)
        #expect(clock.look(handed: 100, waiting: 0, at: at(60_000)) == .clear)
    }

    @Test("Bytes waiting with none leaving stall at the limit, counted from when they began to wait")
    func stallsAtLimit() {
        var clock = WriteStallClock(limit: .seconds(1))
        #expect(clock.look(handed: 1_000, waiting: 400, at: at(0)) == .waiting)
        #expect(clock.look(handed: 1_000, waiting: 400, at: at(999)) == .waiting)
        #expect(clock.look(handed: 1_000, waiting: 400, at: at(1_000)) == .stalled)
    }

    @Test("More bytes handed over while none leave is no progress")
    func moreHandedIsNoProgress() {
        var clock = WriteStallClock(limit: .seconds(1))
        #expect(clock.look(handed: 1_000, waiting: 400, at: at(0)) == .waiting)
        #expect(clock.look(handed: 5_000, waiting: 4_400, at: at(600)) == .waiting)
        #expect(clock.look(handed: 9_000, waiting: 8_400, at: at(1_200)) == .stalled)
    }

    @Test("Bytes leaving between looks start the clock again, so a slow reader never stalls")
    func progressRestarts() {
        var clock = WriteStallClock(limit: .seconds(1))
        var waiting = 10_000
        for step in 0..<20 {
            waiting -= 100
            // Handed more each time too: what counts is what left, not what waits.
            #expect(clock.look(handed: 20_000 + UInt64(step) * 50, waiting: waiting + step * 50, at: at(Int64(step) * 900)) == .waiting)
        }
        // Then nothing leaves for the limit.
        #expect(clock.look(handed: 21_000, waiting: waiting + 1_000, at: at(19 * 900 + 1_000)) == .stalled)
    }

    @Test("Once all is written the next wait is timed afresh")
    func clearResets() {
        var clock = WriteStallClock(limit: .seconds(1))
        #expect(clock.look(handed: 1_000, waiting: 400, at: at(0)) == .waiting)
        #expect(clock.look(handed: 1_000, waiting: 0, at: at(900)) == .clear)
        #expect(clock.look(handed: 2_000, waiting: 1_000, at: at(1_500)) == .waiting)
        #expect(clock.look(handed: 2_000, waiting: 1_000, at: at(2_400)) == .waiting)
        #expect(clock.look(handed: 2_000, waiting: 1_000, at: at(2_500)) == .stalled)
    }
}
