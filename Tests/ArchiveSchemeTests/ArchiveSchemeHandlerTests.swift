import ArchiveScheme
import Foundation
import HandlerConformance
import HTTPTypes
import Loader
import TestSupport
import Testing

@Suite("archive: entries of local archives through libarchive")
struct ArchiveSchemeHandlerTests {
    private func session() -> LoaderSession {
        var configuration = LoaderSession.Configuration.ephemeral
        configuration.handlerClasses = [ArchiveSchemeHandler.self]
        return LoaderSession(configuration: configuration)
    }

    @Test("An entry of a zip, and of tar archives compressed with gzip, xz and bzip2, with its type, length and time")
    func entries() async throws {
        let fixtures = try await ArchiveFixtures.make()
        defer { fixtures.remove() }
        for archive in ["site.zip", "site.tar.gz", "site.tar.xz", "site.tar.bz2"] {
            let (index, response) = try await session().data(from: fixtures.url(archive, "docs/index.html"))
            #expect(index == ArchiveFixtures.index, "\(archive)")
            #expect(response.mimeType == "text/html", "\(archive)")
            #expect(response.expectedContentLength == Int64(ArchiveFixtures.index.count), "\(archive)")
            let (medium, _) = try await session().data(from: fixtures.url(archive, "docs/img/logo.bin"))
            #expect(Bytes.difference(medium, ArchiveFixtures.medium) == nil, "\(archive)")
            let (accents, _) = try await session().data(from: fixtures.url(archive, "naïve name.txt"))
            #expect(accents == Data("accents\n".utf8), "\(archive)")
        }
        let (_, tarHead) = try await session().data(from: fixtures.url("site.tar.gz", "README"))
        #expect(tarHead.headerFields[.lastModified] == "Tue, 14 Nov 2023 22:13:20 GMT")
    }

    @Test("HEAD answers the entry's head without its body")
    func head() async throws {
        let fixtures = try await ArchiveFixtures.make()
        defer { fixtures.remove() }
        var request = LoadRequest(url: fixtures.url("site.zip", "docs/img/logo.bin"))
        request.method = .head
        let (body, response) = try await session().data(for: request)
        #expect(body.isEmpty)
        #expect(response.expectedContentLength == 600_000)
    }

    @Test("A folder is listed: its entries sorted, folders with a slash, folders only implied by deeper entries too")
    func listing() async throws {
        let fixtures = try await ArchiveFixtures.make()
        defer { fixtures.remove() }
        for archive in ["site.zip", "site.tar.gz"] {
            let (top, response) = try await session().data(from: fixtures.url(archive, ""))
            #expect(String(decoding: top, as: UTF8.self) == "README\ndocs/\nnaïve name.txt\n", "\(archive)")
            #expect(response.mimeType == "text/plain")
            let (docs, _) = try await session().data(from: fixtures.url(archive, "docs/"))
            #expect(String(decoding: docs, as: UTF8.self) == "img/\nindex.html\n", "\(archive)")
        }
    }

    @Test("Errors name the URL: a missing archive or entry, a folder asked for as a file, noise, a cut-short archive")
    func errors() async throws {
        let fixtures = try await ArchiveFixtures.make()
        defer { fixtures.remove() }
        let cases: [(URL, LoadError.Code)] = [
            (fixtures.url("absent.zip", "a.txt"), .fileDoesNotExist),
            (fixtures.url("site.zip", "docs/absent.txt"), .fileDoesNotExist),
            (fixtures.url("site.zip", "absent/"), .fileDoesNotExist),
            (fixtures.url("site.tar.gz", "docs"), .fileIsDirectory),
            (fixtures.url("noise.zip", "a.txt"), .cannotDecodeContentData),
            (fixtures.url("cut.tar.gz", "big.bin"), .cannotDecodeContentData),
            (URL(string: "archive:http://127.0.0.1/a.zip!/a.txt")!, .unsupportedURL),
            (URL(string: "archive:file:///tmp/a.zip")!, .badURL),
        ]
        for (url, code) in cases {
            let error = await loadError { _ = try await session().data(from: url) }
            #expect(error?.code == code, "\(url): \(String(describing: error))")
            #expect(error?.url == url)
        }
    }

    @Test("A damaged header in a tar is skipped, as tar skips it: the entries after it are served; the damaged one, or a listing that would miss it, fails naming the damage")
    func damagedHeader() async throws {
        let fixtures = try await ArchiveFixtures.make()
        defer { fixtures.remove() }
        let session = session()
        let (third, _) = try await session.data(from: fixtures.url("damaged.tar", "third.txt"))
        #expect(third == Data("three\n".utf8))
        let (first, _) = try await session.data(from: fixtures.url("damaged.tar", "first.txt"))
        #expect(first == Data("one\n".utf8))
        for url in [fixtures.url("damaged.tar", "second.txt"), URL(string: fixtures.url("damaged.tar", "").absoluteString)!] {
            let error = await loadError { _ = try await session.data(from: url) }
            #expect(error?.code == .cannotDecodeContentData, "\(url): \(String(describing: error))")
            #expect(error?.reason?.contains("damaged header") == true, "\(String(describing: error))")
            #expect(error?.url == url)
        }
    }

    @Test("Links are followed inside the archive (not out of it, not forever); a repeated name serves its first entry")
    func links() async throws {
        let fixtures = try await ArchiveFixtures.make()
        defer { fixtures.remove() }
        for name in ["data/real.txt", "data/hard.txt", "data/sym.txt"] {
            let (body, _) = try await session().data(from: fixtures.url("links.tar", name))
            #expect(body == Data("real\n".utf8), "\(name)")
        }
        let (first, _) = try await session().data(from: fixtures.url("links.tar", "data/dup.txt"))
        #expect(first == Data("first\n".utf8))
        for name in ["data/up.txt", "data/loop.txt"] {
            let error = await loadError { _ = try await session().data(from: fixtures.url("links.tar", name)) }
            #expect(error?.code == .fileDoesNotExist, "\(name): \(String(describing: error))")
        }
        let (top, _) = try await session().data(from: fixtures.url("links.tar", ""))
        #expect(String(decoding: top, as: UTF8.self) == "data/\n", "the entry named ../escape.txt is left out")
    }

    @Test("A folder a zip only implies is a folder; a raw space in the URL is read; a FIFO or a query in the archive's place is refused")
    func edges() async throws {
        let fixtures = try await ArchiveFixtures.make()
        defer { fixtures.remove() }
        let folder = await loadError { _ = try await session().data(from: fixtures.url("site.zip", "docs")) }
        #expect(folder?.code == .fileIsDirectory, "\(String(describing: folder))")
        let raw = try #require(URL(string: "archive:file://" + fixtures.folder.path + "/my site.zip!/docs/index.html"))
        let (index, _) = try await session().data(from: raw)
        #expect(index == ArchiveFixtures.index)
        let fifo = fixtures.folder.appendingPathComponent("pipe.zip")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let piped = await loadError { _ = try await session().data(from: fixtures.url("pipe.zip", "a.txt")) }
        #expect(piped?.code == .cannotDecodeContentData, "\(String(describing: piped))")
        let query = URL(string: "archive:" + fixtures.folder.appendingPathComponent("site.zip").absoluteString + "?x!/README")!
        #expect(await loadError { _ = try await session().data(from: query) }?.code == .badURL)
    }

    @Test("archive: passes the conformance suite")
    func conformance() async throws {
        let fixtures = try await ArchiveFixtures.make(large: true)
        defer { fixtures.remove() }
        let suiteFixtures = ConformanceFixtures(
            success: [
                .init(url: fixtures.url("site.zip", "docs/index.html"), body: ArchiveFixtures.index),
                .init(url: fixtures.url("site.tar.xz", "docs/img/logo.bin"), body: ArchiveFixtures.medium),
            ],
            missing: fixtures.url("site.zip", "missing.txt"),
            missingErrorCode: .fileDoesNotExist,
            large: fixtures.url("large.tar.gz", "large.bin")
        )
        let report = try await ExclusiveGate.memory.exclusive { await ConformanceSuite.run(ArchiveSchemeHandler.self, fixtures: suiteFixtures) }
        print(report)
        #expect(report.allPassed, "\(report)")
        #expect(report.outcome(of: .slowReaderBoundsMemory) == .passed)
        #expect(report.outcome(of: .cancellationReleasesResources) == .passed)
    }
}
