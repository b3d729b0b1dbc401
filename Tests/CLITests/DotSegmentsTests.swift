import Foundation
@testable import LoadURLCommand
import TestSupport
import Testing

/// The dot segments `loadurl` takes out of a URL's path unless `--path-as-is` is given, as curl does.
@Suite("loadurl: a path's . and .. segments (RFC 3986 §5.2.4), and --path-as-is")
struct DotSegmentsTests {
    @Test("RFC 3986's cases: the worked example, the two in its text, and .. never above the root", arguments: [
        ("/a/b/c/./../../g", "/a/g"),
        ("mid/content=5/../6", "mid/6"),
        ("/a/b/../c/./d", "/a/c/d"),
        ("/../../x", "/x"),
        ("/a/..", "/"),
        ("/a/.", "/a/"),
        ("/a/b/..", "/a/"),
        ("/a/.hidden/..x/...", "/a/.hidden/..x/..."),
        ("/a//../b", "/a/b"),
        ("/%2E%2E/b", "/%2E%2E/b"),
        ("", ""),
    ])
    func paths(_ path: String, _ expected: String) {
        #expect(DotSegments.removed(fromPath: path) == expected)
    }

    @Test("A URL keeps its scheme, host, port, user, query and fragment; an opaque URL is left as it is")
    func urls() {
        let url = URL(string: "http://user@example.com:8080/a/./b/../c?x=/../y#/./z")!
        #expect(DotSegments.removed(from: url).absoluteString == "http://user@example.com:8080/a/c?x=/../y#/./z")
        #expect(DotSegments.removed(from: URL(string: "file:///tmp/a/../b.txt")!).absoluteString == "file:///tmp/b.txt")
        #expect(DotSegments.removed(from: URL(string: "data:,a/../b")!).absoluteString == "data:,a/../b")
    }

    @Test("loadurl sends /a/../hello.txt as /hello.txt, as curl; with --path-as-is as written (nginx answers both)")
    func onTheWire() async throws {
        let server = try TestServers.requireNginx()
        let url = "http://127.0.0.1:\(server.httpPort)/a/b/../../hello.txt"
        let cleaned = try await LoadURLProcess.run(["-v", url])
        #expect(cleaned.status == 0, "\(cleaned.stderr)")
        #expect(cleaned.stdout == "Hello from nginx\n")
        #expect(cleaned.stderr.contains("> GET /hello.txt HTTP/1.1\n"), "\(cleaned.stderr)")
        let asIs = try await LoadURLProcess.run(["-v", "--path-as-is", url])
        #expect(asIs.status == 0, "\(asIs.stderr)")
        #expect(asIs.stderr.contains("> GET /a/b/../../hello.txt HTTP/1.1\n"), "\(asIs.stderr)")
    }
}
