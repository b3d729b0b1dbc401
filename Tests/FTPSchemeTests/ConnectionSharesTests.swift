@testable import FTPScheme
import Testing

@Suite("ConnectionShares: when a session's kept FTP connections are made and closed")
struct ConnectionSharesTests {
    @Test("One share per session, made once; freed only when no transfer uses it and its idle time has passed")
    func lifecycle() {
        var shares = ConnectionShares<Int, String>()
        var made = 0
        #expect(shares.acquire(1, idleTimeout: 100) { made += 1; return "one" } == "one")
        #expect(shares.acquire(1, idleTimeout: 100) { made += 1; return "again" } == "one")
        #expect(shares.acquire(2, idleTimeout: 100) { made += 1; return "two" } == "two")
        #expect(made == 2)
        #expect(shares.nextExpiry == nil, "nothing is idle while transfers run")

        shares.release(1, now: 1_000)
        #expect(shares.takeExpired(now: 5_000).isEmpty, "session 1 still has a transfer running")
        shares.release(1, now: 1_000)
        shares.release(2, now: 1_050)
        #expect(shares.nextExpiry == 1_100)
        #expect(shares.takeExpired(now: 1_099).isEmpty)
        #expect(shares.takeExpired(now: 1_100) == ["one"])
        #expect(shares.nextExpiry == 1_150)
        #expect(shares.takeExpired(now: 1_150) == ["two"])
        #expect(shares.isEmpty)
        #expect(shares.acquire(1, idleTimeout: 100) { "new" } == "new", "a freed session's next load makes a new share")
    }

    @Test("A share reused before its time is not freed; a failed make leaves no entry; a clock behind idleSince expires nothing")
    func edges() {
        var shares = ConnectionShares<Int, Int>()
        _ = shares.acquire(7, idleTimeout: 10) { 70 }
        shares.release(7, now: 100)
        _ = shares.acquire(7, idleTimeout: 50) { 71 }
        #expect(shares.takeExpired(now: 200).isEmpty, "in use again")
        shares.release(7, now: 200)
        #expect(shares.nextExpiry == 250, "the latest transfer's idle timeout counts")
        #expect(shares.takeExpired(now: 150).isEmpty)
        shares.release(7, now: 300)  // one release too many: ignored
        #expect(shares.nextExpiry == 250)

        #expect(shares.acquire(8, idleTimeout: 10) { nil } == nil)
        #expect(shares.takeExpired(now: .max) == [70])
        #expect(shares.isEmpty)
    }

    @Test("A session that ended expires its shares once unused, and a late transfer does not bring the timeout back")
    func sessionEnded() {
        var shares = ConnectionShares<Int, String>()
        _ = shares.acquire(1, idleTimeout: 1_000) { "one" }
        _ = shares.acquire(2, idleTimeout: 1_000) { "two" }
        shares.release(2, now: 100)
        shares.expireSoon { $0 == 1 || $0 == 2 }
        #expect(shares.takeExpired(now: 100) == ["two"], "the idle one at once; the one in use waits")
        _ = shares.acquire(1, idleTimeout: 1_000) { "new" }
        shares.release(1, now: 200)
        shares.release(1, now: 200)
        #expect(shares.nextExpiry == 200)
        #expect(shares.takeExpired(now: 200) == ["one"])
        #expect(shares.isEmpty)
    }
}
