import Foundation
@testable import LoadURLCommand
import TestSupport
import Testing

/// `loadurl -Y`/`--speed-limit` and `-y`/`--speed-time`, curl's low-speed abort, against nginx's `/slow/` (256 KiB/s) and
/// a socket that never answers.
@Suite("loadurl: -Y/--speed-limit and -y/--speed-time")
struct CLILowSpeedTests {
    @Test("A body slower than -Y for -y seconds is aborted (28), keeping what came; one above it loads; 0 turns the check off")
    func slowBody() async throws {
        let nginx = try TestServers.requireNginx()
        let folder = try scratchFolder("loadurl-speed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("partial")
        let slow = try await LoadURLProcess.run(["-sS", "-Y", "1000000", "-y", "1", "-o", file.path, "http://127.0.0.1:\(nginx.httpPort)/slow/4m.bin"])
        #expect(slow.status == 28 && slow.stderr.contains("too slow") && slow.stderr.contains("/slow/4m.bin"), "\(slow.status) \(slow.stderr)")
        let kept = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? -1
        #expect(kept > 0 && kept < 4 * 1024 * 1024, "the bytes that came are kept, as curl's: \(kept)")
        let fastEnough = try await LoadURLProcess.run(["-sS", "-Y", "1000", "-y", "2", "-w", "%{size_download}", "-o", "/dev/null",
                                                      "http://127.0.0.1:\(nginx.httpPort)/slow/300k.bin"])
        #expect(fastEnough.status == 0 && fastEnough.stdout == "300000", "\(fastEnough.status) \(fastEnough.stderr)")
        let off = try await LoadURLProcess.run(["-sS", "-Y", "1000000", "-y", "0", "-w", "%{size_download}", "-o", "/dev/null",
                                               "http://127.0.0.1:\(nginx.httpPort)/slow/300k.bin"])
        #expect(off.status == 0 && off.stdout == "300000", "\(off.status) \(off.stderr)")
    }

    @Test("A server that never answers is aborted after -y's seconds (28), with -y alone (1 byte per second)")
    func silentServer() async throws {
        let (port, fd) = LoopbackPorts.held()
        defer { close(fd) }
        let run = try await LoadURLProcess.run(["-sS", "-y", "1", "http://127.0.0.1:\(port)/"], timeout: 30)
        #expect(run.status == 28 && run.stdout.isEmpty, "\(run.status) \(run.stderr)")
    }

    @Test("A negative limit or time is a usage error (2)")
    func usage() async throws {
        for options in [["-Y", "-5"], ["-y", "-1"], ["--speed-limit", "fast"]] {
            let run = try await LoadURLProcess.run(["-sS"] + options + ["http://127.0.0.1:1/"])
            #expect(run.status == 2, "\(options): \(run.status) \(run.stderr)")
        }
    }

    @Test("The rule: slower than the limit for the time on end, judged over a second at least; a fast second starts it again")
    func rule() {
        let limit = LowSpeedLimit(bytesPerSecond: 1000, seconds: 3)
        /// What the watch says after each (bytes, seconds) sample, in order.
        func verdicts(_ samples: [(Int64, Double)]) -> [Bool] {
            var watch = LowSpeedLimit.Watch()
            return samples.map { watch.tooSlow(total: $0.0, at: $0.1, under: limit) }
        }
        // Chunks under a second apart are not judged; three slow seconds from the start are too many.
        #expect(verdicts([(10, 0.5), (20, 1.0), (30, 2.0), (40, 3.0)]) == [false, false, false, true])
        // A fast second starts the count again: slow again from 2 s, too slow at 5 s.
        #expect(verdicts([(10, 1), (5_000, 2), (5_010, 3), (5_020, 4), (5_030, 5)]) == [false, false, false, false, true])
    }
}
