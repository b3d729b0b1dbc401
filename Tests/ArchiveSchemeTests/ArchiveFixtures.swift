import Foundation
import TestSupport

/// Archives made for the tests by Python's `zipfile` and `tarfile` (another implementation than the one that reads
/// them), in a folder of their own.
struct ArchiveFixtures {
    let folder: URL

    static let index = Data("<h1>docs</h1>\n".utf8)
    /// 600,000 bytes: more than two of the handler's reads.
    static let medium = Data((0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    /// Makes the archives in a new folder, on a thread of its own: Python runs for a second or more (several with
    /// `large`), and a test that waited for it on Swift's cooperative pool held one of its two threads meanwhile;
    /// a few side by side stalled every other suite's loads until their request timeouts fired (fresh-clone runs
    /// at f7fb308 and 129ba24 failed so).
    static func make(large: Bool = false) async throws -> ArchiveFixtures {
        try await offCooperativePool { try ArchiveFixtures(large: large) }
    }

    /// Makes the archives in a new folder, blocking; `large` adds large.tar.gz, a 160 MiB entry (seconds of CPU to
    /// make). Tests call ``make(large:)``.
    private init(large: Bool) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("archives-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let script = """
            import io, os, sys, tarfile, zipfile
            out = sys.argv[1]
            index = b"<h1>docs</h1>\\n"
            medium = bytes((i * 7) & 255 for i in range(600000))
            files = {"docs/index.html": index, "docs/img/logo.bin": medium, "na\\u00efve name.txt": b"accents\\n", "README": b"read me\\n"}
            with zipfile.ZipFile(os.path.join(out, "site.zip"), "w", zipfile.ZIP_DEFLATED) as z:
                for name, data in files.items():
                    z.writestr(name, data)
            for mode, name in (("w:gz", "site.tar.gz"), ("w:xz", "site.tar.xz"), ("w:bz2", "site.tar.bz2")):
                with tarfile.open(os.path.join(out, name), mode) as t:
                    for folder in ("./docs", "./docs/img"):
                        info = tarfile.TarInfo(folder); info.type = tarfile.DIRTYPE; info.mtime = 1700000000
                        t.addfile(info)
                    for path, data in files.items():
                        info = tarfile.TarInfo("./" + path); info.size = len(data); info.mtime = 1700000000
                        t.addfile(info, io.BytesIO(data))
            # An archive cut short inside a 1 MB entry of random bytes (which gzip cannot shrink).
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w:gz") as t:
                data = os.urandom(1000000)
                info = tarfile.TarInfo("big.bin"); info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            whole = buffer.getvalue()
            open(os.path.join(out, "cut.tar.gz"), "wb").write(whole[: len(whole) // 2])
            open(os.path.join(out, "noise.zip"), "wb").write(os.urandom(4096))
            # A tar whose second header is damaged (its checksum no longer adds up): first.txt, [second.txt], third.txt.
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as t:
                for name, data in (("first.txt", b"one\\n"), ("second.txt", b"two\\n"), ("third.txt", b"three\\n")):
                    info = tarfile.TarInfo(name); info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
            damaged = bytearray(buffer.getvalue())
            damaged[1024] ^= 0x20  # the first byte of second.txt's name, in the block after first.txt's header and data
            open(os.path.join(out, "damaged.tar"), "wb").write(bytes(damaged))
            # Links, a name that repeats, and a name that climbs out.
            with tarfile.open(os.path.join(out, "links.tar"), "w") as t:
                def add(name, data=b"", kind=tarfile.REGTYPE, link=""):
                    info = tarfile.TarInfo(name); info.type = kind; info.linkname = link; info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
                add("data/real.txt", b"real\\n")
                add("data/hard.txt", kind=tarfile.LNKTYPE, link="data/real.txt")
                add("data/sym.txt", kind=tarfile.SYMTYPE, link="real.txt")
                add("data/up.txt", kind=tarfile.SYMTYPE, link="../../etc/hostname")
                add("data/loop.txt", kind=tarfile.SYMTYPE, link="loop.txt")
                add("data/dup.txt", b"first\\n")
                add("data/dup.txt", b"second\\n")
                add("../escape.txt", b"out\\n")
            import shutil
            shutil.copy(os.path.join(out, "site.zip"), os.path.join(out, "my site.zip"))
            # 160 MiB of zeros, compressed to little: the conformance suite's large body (seconds of CPU: asked for).
            if sys.argv[2] == "large":
                with tarfile.open(os.path.join(out, "large.tar.gz"), "w:gz", compresslevel=1) as t:
                    info = tarfile.TarInfo("large.bin"); info.size = 160 * 1024 * 1024
                    class Zeros:
                        def read(self, n): return bytes(n)
                    t.addfile(info, Zeros())
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, folder.path, large ? "large" : "small"]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw FixtureError(message: message) }
    }

    /// `archive:` + the archive's file URL + `!/` + `entry` (percent-encoded here).
    func url(_ archive: String, _ entry: String) -> URL {
        let encoded = entry.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? entry
        return URL(string: "archive:" + folder.appendingPathComponent(archive).absoluteString + "!/" + encoded)!
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }

    struct FixtureError: Error, CustomStringConvertible {
        let message: String
        var description: String { "the archives could not be made: \(message)" }
    }
}
