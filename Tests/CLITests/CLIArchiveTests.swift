import Foundation
import Loader
import LoadURLCommand
import TestSupport
import Testing

@Suite("loadurl: the archive: plugin")
struct CLIArchiveTests {
    @Test("An entry of a zip is written out, a folder of it listed, and a missing entry is exit 37 with its message")
    func archive() async throws {
        let (directory, zip) = try await Self.makeZip()
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = "archive:" + zip.absoluteString + "!/"
        let entry = directory.appendingPathComponent("entry"), listing = directory.appendingPathComponent("listing")
        let command = try LoadURL.parse(["-o", entry.path, "-o", listing.path, base + "docs/readme.txt", base + "docs/"])
        #expect(await command.execute() == 0)
        #expect(try String(contentsOf: entry, encoding: .utf8) == "inside\n")
        #expect(try String(contentsOf: listing, encoding: .utf8) == "readme.txt\n")
        let missing = try LoadURL.parse(["-s", "-o", directory.appendingPathComponent("none").path, base + "docs/absent.txt"])
        #expect(await missing.execute() == 37, "curl's exit status for a file it cannot read")
    }

    @Test("libarchive is loaded when the first archive: URL comes: a run without one never maps it")
    func libarchiveLoadedOnDemand() async throws {
        let (directory, zip) = try await Self.makeZip()
        defer { try? FileManager.default.removeItem(at: directory) }
        // The dynamic loader's own trace of every library it opens.
        let trace = ["LD_DEBUG": "files"]
        let other = try await LoadURLProcess.run(["data:,x"], environment: trace)
        #expect(other.status == 0)
        #expect(other.stderr.contains("file=libswiftCore.so"), "the loader's trace is missing: \(other.stderr.prefix(300))")
        #expect(!other.stderr.contains("libarchive"))
        let entry = try await LoadURLProcess.run(["archive:" + zip.absoluteString + "!/docs/readme.txt"], environment: trace)
        #expect(entry.status == 0)
        #expect(entry.stdout == "inside\n")
        #expect(entry.stderr.contains("file=libarchive.so.13"))
    }

    @Test("Without libarchive an archive: URL fails with exit 1 and says why; the other URLs still load")
    func withoutLibarchive() async throws {
        let (directory, zip) = try await Self.makeZip()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = "archive:" + zip.absoluteString + "!/docs/readme.txt"
        let run = try await LoadURLProcess.run([url, "data:,after"], environment: ["CARCHIVE_LIBRARY": "/nonexistent/libarchive.so.13"])
        #expect(run.status == 1)
        #expect(run.stderr.contains(url))
        #expect(run.stderr.contains("cannot load libarchive"))
        #expect(run.stderr.contains("/nonexistent/libarchive.so.13"))
        #expect(run.stdout == "after")
    }

    /// A new folder holding `site.zip`, whose one entry is `docs/readme.txt` ("inside\n"); the caller removes it.
    private static func makeZip() async throws -> (directory: URL, zip: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-archive-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
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
        return (directory, zip)
    }
}
