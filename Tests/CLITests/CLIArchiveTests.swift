import Foundation
import Loader
import LoadURLCommand
import TestSupport
import Testing

@Suite("loadurl: the archive: plugin")
struct CLIArchiveTests {
    @Test("An entry of a zip is written out, a folder of it listed, and a missing entry is exit 37 with its message")
    func archive() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-archive-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let zip = directory.appendingPathComponent("site.zip")
        // Waited for on a thread of its own, not on the cooperative pool the other suites' loads need.
        let status = try await offCooperativePool { () throws -> Int32 in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", """
                import sys, zipfile
                with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                    z.writestr("docs/readme.txt", "inside\\n")
                """, zip.path]
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        #expect(status == 0)
        let base = "archive:" + zip.absoluteString + "!/"
        let entry = directory.appendingPathComponent("entry"), listing = directory.appendingPathComponent("listing")
        let command = try LoadURL.parse(["-o", entry.path, "-o", listing.path, base + "docs/readme.txt", base + "docs/"])
        #expect(await command.execute() == 0)
        #expect(try String(contentsOf: entry, encoding: .utf8) == "inside\n")
        #expect(try String(contentsOf: listing, encoding: .utf8) == "readme.txt\n")
        let missing = try LoadURL.parse(["-s", "-o", directory.appendingPathComponent("none").path, base + "docs/absent.txt"])
        #expect(await missing.execute() == 37, "curl's exit status for a file it cannot read")
    }
}
