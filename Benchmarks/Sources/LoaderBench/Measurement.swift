import Foundation

/// What one run of a scenario measured, printed as one `RESULT` line for `run.py` to read.
struct Measurement {
    var client: String
    var scenario: String
    var seconds: Double
    var requests: Int = 0
    var bytes: Int = 0
    /// CPU time (user + system) the process used during the run.
    var cpuSeconds: Double = 0
    /// Peak resident set of the process (VmHWM), in KiB.
    var peakRSSKiB: Int = 0
    /// Allocator calls during the run, or -1 when the allocation counter is not preloaded.
    var allocations: Int = -1

    var line: String {
        "RESULT client=\(client) scenario=\(scenario) seconds=\(String(format: "%.6f", seconds)) requests=\(requests) "
            + "bytes=\(bytes) cpu=\(String(format: "%.4f", cpuSeconds)) rss_kib=\(peakRSSKiB) allocations=\(allocations)"
    }
}

/// Process probes: CPU time from getrusage, peak memory from /proc/self/status.
enum Probe {
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func peakRSSKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// The allocation counter's total, when run.py preloaded `libAllocationCounter.so` (found by name, so that
    /// LoaderBench never links it and the timed runs pay nothing for counting).
    static let allocationCount: (@convention(c) () -> UInt)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "bench_allocation_count") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) () -> UInt).self)
    }()

    /// Runs `body`, timing it on the wall clock and in CPU time, counting allocations when it can.
    static func measure(client: String, scenario: String, _ body: () async throws -> (requests: Int, bytes: Int)) async throws -> Measurement {
        let counter = allocationCount
        let allocationsBefore = counter?()
        let cpu = cpuSeconds()
        let start = ContinuousClock.now
        let (requests, bytes) = try await body()
        let elapsed = ContinuousClock.now - start
        let cpuAfter = cpuSeconds()
        let allocations = counter.map { Int($0() - (allocationsBefore ?? 0)) } ?? -1
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Measurement(client: client, scenario: scenario, seconds: seconds, requests: requests, bytes: bytes,
                           cpuSeconds: cpuAfter - cpu, peakRSSKiB: peakRSSKiB(), allocations: allocations)
    }
}
