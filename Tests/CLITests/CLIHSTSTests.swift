import Foundation
import TestSupport
import Testing

/// `loadurl --hsts FILE` against nginx, whose `/hsts` sends `Strict-Transport-Security: max-age=3600; includeSubDomains`:
/// a plain `http` request to nginx's HTTPS port gets its 400, so whether a request went as `https` shows in the output.
@Suite("loadurl: --hsts (HTTP Strict Transport Security, curl's cache file)")
struct CLIHSTSTests {
    @Test("--hsts FILE writes the policies the transfers learnt in curl's format, and a later run goes to https for its hosts; without --hsts nothing is upgraded")
    func learnsAndKeeps() async throws {
        let nginx = try TestServers.requireNginx()
        let folder = try scratchFolder("loadurl-hsts")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = folder.appendingPathComponent("hsts.txt").path
        let plain = "http://localhost:\(nginx.httpsPort)/hello.txt"

        let first = try await LoadURLProcess.run(["-sS", "--hsts", cache, "--cacert", nginx.caFile, "https://localhost:\(nginx.httpsPort)/hsts"])
        #expect(first.status == 0 && first.stdout == "hsts on\n", "\(first.stderr)")
        let written = try String(contentsOfFile: cache, encoding: .utf8)
        let lines = written.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(lines.count == 1 && lines[0].hasPrefix(".localhost \"") && lines[0].hasSuffix("\""), "\(written)")
        // The stamp is an hour ahead, in UTC: compared with the date's own formatting of now + 3600 s.
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd HH:mm"
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.locale = Locale(identifier: "en_US_POSIX")
        let expected = [-60.0, 0, 60].map { formatter.string(from: Date().addingTimeInterval(3600 + $0)) }
        #expect(expected.contains { lines.first?.contains("\"\($0):") == true }, "\(written) against \(expected)")

        let upgraded = try await LoadURLProcess.run(["-sS", "--hsts", cache, "--cacert", nginx.caFile, plain])
        #expect(upgraded.status == 0 && upgraded.stdout == "Hello from nginx\n", "\(upgraded.status) \(upgraded.stderr)")
        let without = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "-w", "%{http_code}", "-o", "/dev/null", plain])
        #expect(without.stdout == "400", "no --hsts, no upgrade: \(without.stdout)")

        // A policy ended by max-age=0 leaves the file; an entry written by hand ("unlimited") is read, and kept.
        let off = try await LoadURLProcess.run(["-sS", "--hsts", cache, "--cacert", nginx.caFile, "https://localhost:\(nginx.httpsPort)/hsts-off"])
        #expect(off.status == 0 && off.stdout == "hsts off\n")
        #expect(try String(contentsOfFile: cache, encoding: .utf8).split(separator: "\n").allSatisfy { $0.hasPrefix("#") })
        try "# by hand\nlocalhost \"unlimited\"\nnot a line\n.expired.test \"20000101 00:00:00\"\n.future.test \"20991231 23:59:58\"\n"
            .write(toFile: cache, atomically: true, encoding: .utf8)
        // In another time zone: the stamps are UTC, read and written alike.
        let byHand = try await LoadURLProcess.run(["-sS", "--hsts", cache, "--cacert", nginx.caFile, plain], environment: ["TZ": "America/New_York"])
        #expect(byHand.status == 0 && byHand.stdout == "Hello from nginx\n", "\(byHand.status) \(byHand.stderr)")
        let kept = try String(contentsOfFile: cache, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(kept == [".future.test \"20991231 23:59:58\"", "localhost \"unlimited\""],
                "the expired entry and the junk line are gone, the others written back as read: \(kept)")

        // A proxy variable is judged for the URL as it goes: https_proxy, unusable here, refuses an http URL sent as https.
        let proxied = try await LoadURLProcess.run(["-sS", "--hsts", cache, "--cacert", nginx.caFile, plain], environment: ["https_proxy": "ftp://127.0.0.1:9"])
        #expect(proxied.status == 7 && proxied.stderr.contains("https_proxy ('ftp://127.0.0.1:9')"), "\(proxied.status) \(proxied.stderr)")

        // '' keeps them in memory: learnt and used within the run, no file written.
        let memory = try await LoadURLProcess.run(["-sS", "--hsts", "", "--cacert", nginx.caFile, "https://localhost:\(nginx.httpsPort)/hsts", plain])
        #expect(memory.status == 0 && memory.stdout == "hsts on\nHello from nginx\n", "\(memory.status) \(memory.stderr)")
    }
}
