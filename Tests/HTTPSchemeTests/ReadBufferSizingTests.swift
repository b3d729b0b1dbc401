import Foundation
@testable import HTTPScheme
import NIOCore
import Testing

/// How many bytes a connection reads at once, and the shared allowance that bounds large reads.
@Suite("http: read sizes and their budget")
struct ReadBufferSizingTests {
    /// Records `reads` reads that each fill the buffer, returning the sizes offered before each.
    private func fill(_ sizer: inout ReadBufferSizer, reads: Int) -> [Int] {
        (0..<reads).map { _ in
            let size = sizer.nextBufferSize()!
            _ = sizer.record(actualReadBytes: size)
            return size
        }
    }

    @Test("Full reads double the size up to 64 KiB without touching the budget")
    func growsToBaseFreely() {
        let budget = ReadBufferBudget(bytes: 0)
        var sizer = ReadBufferSizer(grant: ReadBufferGrant(from: budget))
        #expect(fill(&sizer, reads: 8) == [2048, 4096, 8192, 16384, 32768, 65536, 65536, 65536])
        #expect(budget.available == 0)
    }

    @Test("Past 64 KiB, reads grow only with bytes from the budget, and stop at 1 MiB")
    func growsPastBaseWithBudget() {
        let budget = ReadBufferBudget(bytes: 10 << 20)
        var sizer = ReadBufferSizer(grant: ReadBufferGrant(from: budget))
        let sizes = fill(&sizer, reads: 12)
        #expect(sizes.suffix(6) == [131072, 262144, 524288, 1 << 20, 1 << 20, 1 << 20])
        #expect(budget.available == (10 << 20) - ((1 << 20) - 65536))
    }

    @Test("Without a grant (a TLS connection), reads stop at 64 KiB")
    func noGrantStopsAtBase() {
        var sizer = ReadBufferSizer(grant: nil)
        #expect(fill(&sizer, reads: 9).suffix(3) == [65536, 65536, 65536])
    }

    @Test("A budget too small for the next doubling keeps the size where it is")
    func stopsWhenBudgetIsShort() {
        let budget = ReadBufferBudget(bytes: 100_000)
        var sizer = ReadBufferSizer(grant: ReadBufferGrant(from: budget))
        #expect(fill(&sizer, reads: 10).suffix(3) == [131072, 131072, 131072])
        #expect(budget.available == 100_000 - 65536)
    }

    @Test("Two short reads in a row halve the size; growing again within the grant takes nothing more")
    func shrinksAndRegrows() {
        let budget = ReadBufferBudget(bytes: 1 << 20)
        var sizer = ReadBufferSizer(grant: ReadBufferGrant(from: budget))
        _ = fill(&sizer, reads: 6)
        #expect(sizer.nextBufferSize() == 131072)
        _ = sizer.record(actualReadBytes: 100)
        #expect(sizer.nextBufferSize() == 131072, "one short read is not enough")
        _ = sizer.record(actualReadBytes: 100)
        #expect(sizer.nextBufferSize() == 65536)
        let left = budget.available
        _ = fill(&sizer, reads: 1)
        #expect(sizer.nextBufferSize() == 131072)
        #expect(budget.available == left)
    }

    @Test("A connection's bytes go back to the budget when it is gone, not before")
    func grantGivesBack() {
        let budget = ReadBufferBudget(bytes: 4 << 20)
        do {
            var first = ReadBufferSizer(grant: ReadBufferGrant(from: budget))
            var second = ReadBufferSizer(grant: ReadBufferGrant(from: budget))
            _ = fill(&first, reads: 12)
            _ = fill(&second, reads: 12)
            #expect(budget.available == (4 << 20) - 2 * ((1 << 20) - 65536))
            _ = first.record(actualReadBytes: 10)
            _ = first.record(actualReadBytes: 10)
            // Both connections are still alive here, however early the optimizer would end their lifetimes.
            withExtendedLifetime((first, second)) {
                #expect(budget.available == (4 << 20) - 2 * ((1 << 20) - 65536), "shrinking keeps the grant")
            }
        }
        #expect(budget.available == 4 << 20)
    }

    @Test("Many connections growing at once never take more than the budget")
    func concurrentGrantsStayWithinBudget() async {
        let budget = ReadBufferBudget(bytes: 3 << 20)
        let grants = (0..<64).map { _ in ReadBufferGrant(from: budget) }
        let granted = await withTaskGroup(of: Int.self) { group in
            for grant in grants {
                group.addTask { grant.raise(to: 1 << 20) ? 1 : 0 }
            }
            return await group.reduce(0, +)
        }
        // Each grant past 64 KiB to 1 MiB takes 960 KiB: three fit in 3 MiB, a fourth does not.
        #expect(granted == 3)
        #expect(budget.available == (3 << 20) - 3 * ((1 << 20) - 65536))
    }
}
