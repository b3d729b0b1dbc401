import Foundation
import FTPScheme
import Loader
import TestSupport
import Testing

/// Each FTP server gets engines (a thread and a libcurl multi handle each) of its own; an idle one ends.
@Suite("FTP engines, of each server")
struct FTPEngineLifetimeTests {
    /// The process's threads named `name` (their names are read from /proc).
    static func threads(named name: String) throws -> Int {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        return tasks.filter { task in
            let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    /// The names of the process's threads.
    static func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }.sorted()
    }

    /// The engine threads of the servers at `ports` (each named `ftp-curl-PORT`).
    static func engines(_ ports: [Int]) throws -> Int {
        try ports.reduce(0) { $0 + (try threads(named: "ftp-curl-\($1)")) }
    }

    // ProcessWide: it counts the process's threads, which other suites' loads of the same servers would add to. Of
    // servers no other test of that pass loads, whose engines none of them kept.
    @Test("Loads of three servers run on three engines, whose threads end once they have had nothing to do for 10 s")
    func idleEnginesEndProcessWide() async throws {
        let server = try FTPServers.require()
        let ports = [server.silentToQuitPort, server.cutPort, server.slowPort]
        let session = FTPSlowServerTests.sessionKeepingNone()
        for port in ports {
            let (body, _) = try await session.data(from: try FTPServers.url("/hello.txt", port: port))
            #expect(body == FTPSlowServerTests.hello)
        }
        // Bounded: an engine of one of these servers that an earlier test of the pass left was ending as this one began
        // (two threads of one name were seen once in a full run); its thread goes within a moment.
        let three = await eventually(within: 3) { (try? Self.engines(ports)) == 3 }
        #expect(three, "threads: \((try? Self.names()) ?? [])")
        // Bounded: 10 s idle, then at most a second's sleep before the check.
        var left = -1
        for _ in 0..<60 {
            left = try Self.engines(ports)
            if left == 0 { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(left == 0, "\(left) engine threads are still running")
        // A load after that starts an engine again.
        let (again, _) = try await session.data(from: try FTPServers.url("/hello.txt", port: server.cutPort))
        #expect(again == FTPSlowServerTests.hello)
    }
}
