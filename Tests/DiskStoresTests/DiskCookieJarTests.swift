import Cookies
import DiskStores
import Foundation
import HTTPScheme
import Loader
import TestSupport
import Testing

@Suite("DiskCookieJar: persistent cookies kept between runs")
struct DiskCookieJarTests {
    private let site = URL(string: "https://shop.example.com/cart")!

    private func folder() -> URL { temporaryFolder("disk-cookies") }

    @Test("Cookies with an expiry read back from a new instance, with every attribute; session cookies do not")
    func persists() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try DiskCookieJar(directory: directory)
        first.save(setCookie: ["keep=1; Max-Age=3600; Domain=example.com; Path=/; Secure; HttpOnly; SameSite=Lax", "session=2"],
                   from: site)
        #expect(first.cookieField(for: site) == "keep=1; session=2")
        await first.synchronize()
        let kept = try #require(first.cookies.first { $0.name == "keep" })

        let second = try DiskCookieJar(directory: directory)
        #expect(second.cookieField(for: site) == "keep=1")
        let read = try #require(second.cookies.first)
        #expect(read.domain == "example.com" && !read.isHostOnly && read.path == "/")
        #expect(read.isSecure && read.isHTTPOnly && read.sameSite == "Lax")
        #expect(read.expires.map { abs($0.timeIntervalSince(kept.expires!)) < 0.001 } == true)
        #expect(abs(read.created.timeIntervalSince(kept.created)) < 0.001)
    }

    @Test("A changed value, a deleted cookie and removeAll reach the disk")
    func changes() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let jar = try DiskCookieJar(directory: directory)
        jar.save(setCookie: ["a=1; Max-Age=3600", "b=1; Max-Age=3600"], from: site)
        jar.save(setCookie: ["a=2; Max-Age=3600", "b=gone; Max-Age=0"], from: site)
        await jar.synchronize()
        #expect(try DiskCookieJar(directory: directory).cookieField(for: site) == "a=2")
        jar.removeAll()
        await jar.synchronize()
        #expect(try DiskCookieJar(directory: directory).cookies.isEmpty)
    }

    @Test("A session cookie that replaces a lasting one, and a change of expiry alone, reach the disk")
    func replacements() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let jar = try DiskCookieJar(directory: directory)
        jar.save(setCookie: ["a=1; Max-Age=3600", "b=1; Max-Age=3600"], from: site)
        await jar.synchronize()
        jar.save(setCookie: ["a=1", "b=1; Max-Age=7200"], from: site)
        await jar.synchronize()
        let reopened = try DiskCookieJar(directory: directory)
        #expect(reopened.cookieField(for: site) == "b=1", "a is a session cookie now: not kept")
        let b = try #require(reopened.cookies.first)
        #expect(b.expires.map { $0.timeIntervalSinceNow > 3700 } == true, "the later expiry was written")
    }

    @Test("A write that failed on a full disk is made again once there is room: nothing set meanwhile is lost")
    func fullDiskRetried() async throws {
        try await TestServers.withFullDisk { folder in
            let directory = folder.appendingPathComponent("cookies")
            let jar = try DiskCookieJar(directory: directory)
            // Fill what is left, 4 KiB at a time (the file system is 256 KiB).
            let filler = folder.appendingPathComponent("filler")
            _ = FileManager.default.createFile(atPath: filler.path, contents: nil)
            let handle = try FileHandle(forWritingTo: filler)
            for _ in 0..<128 {
                do { try handle.write(contentsOf: Data(count: 4096)) } catch { break }
            }
            try? handle.close()
            jar.save(setCookie: ["a=1; Max-Age=3600; Path=/" + String(repeating: "p", count: 2000)], from: site)
            // The caller hears that the disk does not hold it.
            #expect(await jar.synchronize() == false)
            #expect((try? DiskCookieJar(directory: directory))?.cookies.isEmpty != false, "the fixture: the write failed")
            try FileManager.default.removeItem(at: filler)
            jar.save(setCookie: ["b=1; Max-Age=3600"], from: site)
            #expect(await jar.synchronize())
            let names = try DiskCookieJar(directory: directory).cookies.map(\.name).sorted()
            #expect(names == ["a", "b"])
        }
    }

    @Test("A file that is not a database fails to open, naming the folder")
    func openFails() throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(repeating: 0x42, count: 4096).write(to: directory.appendingPathComponent("cookies.sqlite"))
        #expect {
            _ = try DiskCookieJar(directory: directory)
        } throws: { error in
            (error as? DiskStoreOpenError)?.description.contains(directory.path) == true
        }
    }

    @Test("A login's lasting cookie, set through a session against nginx, goes with a request of a later session")
    func acrossSessions() async throws {
        let nginx = try #require(TestServers.nginx, "scripts/test-servers could not start nginx")
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        func session(_ jar: DiskCookieJar) -> LoaderSession {
            var configuration = LoaderSession.Configuration.ephemeral
            configuration.handlerClasses = [HTTPSchemeHandler.self]
            configuration.cookieStore = jar
            return LoaderSession(configuration: configuration)
        }
        let base = "http://127.0.0.1:\(nginx.httpPort)"
        let first = try DiskCookieJar(directory: directory)
        // Sets `session` (no expiry) and `theme` (an hour, Path=/cookies), then shows what it was sent.
        let (shown, _) = try await session(first).data(from: URL(string: base + "/cookies/login")!)
        #expect(String(decoding: shown, as: UTF8.self) == "cookie=theme=dark; session=s3cr3t\n")
        await first.synchronize()
        let later = try DiskCookieJar(directory: directory)
        let (again, _) = try await session(later).data(from: URL(string: base + "/cookies/show")!)
        #expect(String(decoding: again, as: UTF8.self) == "cookie=theme=dark\n")
    }
}
