import Foundation
@testable import LoadURLCommand
import TestSupport
import Testing

/// URL globs as curl reads them: `{a,b}` sets and `[1-9]`, `[01-10:2]`, `[a-z]` ranges, a URL per value.
@Suite("loadurl: URL globs ({a,b}, [1-9], [a-z]) and -o's #N, as curl's")
struct CLIGlobTests {
    private func urls(_ text: String) throws -> [String] { try URLGlob(text).expanded().map(\.url) }

    @Test("Sets and ranges name a URL per value, the last glob varying fastest; numbers keep the first's zeros; steps")
    func expansion() throws {
        #expect(try urls("http://h/{a,b}/[1-3]") == ["http://h/a/1", "http://h/a/2", "http://h/a/3", "http://h/b/1", "http://h/b/2", "http://h/b/3"])
        #expect(try urls("http://h/[08-11]") == ["http://h/08", "http://h/09", "http://h/10", "http://h/11"])
        #expect(try urls("http://h/[1-10:4]") == ["http://h/1", "http://h/5", "http://h/9"])
        #expect(try urls("http://h/[x-z][A-B:1]") == ["http://h/xA", "http://h/xB", "http://h/yA", "http://h/yB", "http://h/zA", "http://h/zB"])
        #expect(try urls("http://h/{,s}") == ["http://h/", "http://h/s"], "an empty value is a value")
        #expect(try urls("http://h/[0-0]/[7-7:1]") == ["http://h/0/7"])
        #expect(try urls("http://h/[a-e:4]") == ["http://h/a", "http://h/e"])
        #expect(try URLGlob("http://h/{a,b}[0-99]").expanded().count == 200)
    }

    @Test("An IPv6 address in brackets, [] and what \\ escapes are taken as written; a URL without globs is itself")
    func literals() throws {
        #expect(try urls("http://[::1]:8080/{a,b}") == ["http://[::1]:8080/a", "http://[::1]:8080/b"])
        #expect(try urls("http://[fe80::1%25eth0]/") == ["http://[fe80::1%25eth0]/"])
        #expect(try urls("http://h/?a[]=1&b[]=[1-2]") == ["http://h/?a[]=1&b[]=1", "http://h/?a[]=1&b[]=2"])
        // Outside a set \\ escapes the four brackets only (a \\, stays); inside one, any character.
        #expect(try urls("data:,\\{a\\,b\\}\\[1-2\\]") == ["data:,{a\\,b}[1-2]"])
        #expect(try urls("data:,{x\\,y,\\}z\\q}") == ["data:,x,y", "data:,}zq"])
        #expect(try URLGlob("http://h/plain").pieces == [.literal("http://h/plain")])
    }

    @Test("A malformed glob is refused, saying what and where (1-based)", arguments: [
        ("http://h/[3-1]", "bad range '[3-1]'", 10), ("http://h/[1-]", "bad range '[1-]'", 10), ("http://h/[1-5:0]", "bad range '[1-5:0]'", 10),
        ("http://h/[a-Z]", "bad range '[a-Z]'", 10), ("http://h/[a-9]", "bad range '[a-9]'", 10), ("http://h/{a,b", "unmatched brace", 10),
        ("http://h/{a,{b}}", "nested brace", 13), ("http://h/a}", "unmatched brace", 11), ("http://h/[1-2", "unmatched bracket", 10),
        ("http://h/{a,[1-2]}", "bracket within braces", 13), ("http://h/[1-5:10]", "bad range '[1-5:10]'", 10),
        ("http://h/[0-0:2]", "bad range '[0-0:2]'", 10), ("http://h/[a-b:256]", "bad range '[a-b:256]'", 10),
        ("http://h/[+1-5]", "bad range '[+1-5]'", 10), ("http://h/[10:20]", "bad range '[10:20]'", 10),
        ("http://h/[1-99999999999999999999]", "bad range '[1-99999999999999999999]'", 10), ("http://h/x{}", "empty string within braces", 11),
    ])
    func malformed(text: String, problem: String, position: Int) {
        let error = #expect(throws: URLGlob.Malformed.self) { _ = try URLGlob(text) }
        #expect(error?.problem == problem)
        #expect(error?.position == position)
    }

    @Test("More URLs than the limit, or more globs, is refused at the glob that passes it, before its values are made")
    func limit() {
        let error = #expect(throws: URLGlob.Malformed.self) { _ = try URLGlob("http://h/[0-999][0-999][0-9]") }
        #expect(error?.problem == "the globs name more than 1000000 URLs")
        #expect(error?.position == 24)
        let wide = #expect(throws: URLGlob.Malformed.self) { _ = try URLGlob("http://h/[1-2000000]") }
        #expect(wide?.problem == "the globs name more than 1000000 URLs")
        // Each glob of one value: the count stays 1, the number of globs is what is refused.
        let many = #expect(throws: URLGlob.Malformed.self) { _ = try URLGlob("http://h/" + String(repeating: "{a}", count: 101)) }
        #expect(many?.problem == "more than 100 globs")
        #expect(throws: URLGlob.Malformed.self) { _ = try URLGlob("http://h/" + String(repeating: "[0-999999]", count: 300)) }
    }

    @Test("-o names take the values with #N; a # without a glob's number stays")
    func fill() {
        #expect(URLGlob.fill("out_#1-#2.txt", with: ["a", "07"]) == "out_a-07.txt")
        #expect(URLGlob.fill("#3#0#x##1", with: ["v"]) == "#3#0#x#v")
    }

    @Test("Each expanded URL takes its argument's output: -o filled in, -O, --remote-name-all, standard output; -g expands nothing")
    func outputs() throws {
        let command = try LoadURL.parseQuickly(["-o", "page_#1.html", "http://h/{a,b}", "http://h/one", "-O", "http://h/f[1-2].txt"])
        let expanded = try command.expandingGlobs()
        #expect(expanded.urls == ["http://h/a", "http://h/b", "http://h/one", "http://h/f1.txt", "http://h/f2.txt"])
        // As curl pairs them: -o and -O with the URL arguments in order, whatever their place on the line.
        #expect(expanded.outputs == ["page_a.html", "page_b.html", LoadURL.remoteNameSlot, "-", "-"])
        let all = try LoadURL.parseQuickly(["--remote-name-all", "http://h/{a,b}"]).expandingGlobs()
        #expect(all.outputs == [LoadURL.remoteNameSlot, LoadURL.remoteNameSlot])
        let off = try LoadURL.parseQuickly(["-g", "http://h/{a,b}"]).expandingGlobs()
        #expect(off.urls == ["http://h/{a,b}"])
        let plain = try LoadURL.parseQuickly(["-o", "x", "http://h/a"]).expandingGlobs()
        #expect(plain.urls == ["http://h/a"] && plain.outputs == ["x"])
    }

    @Test("loadurl fetches each URL a glob names from nginx into the -o files it fills; a bad glob exits 3 before any transfer")
    func fetched() async throws {
        let server = try TestServers.requireNginx()
        try await withTemporaryFolder("cli-glob") { folder in
            let run = try await LoadURLProcess.run(["-sS", "-w", "%{http_code} %{size_download}\n", "-o", folder.path + "/got_#1.bin",
                                                    "http://127.0.0.1:\(server.httpPort)/{1k,1m,300k}.bin"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "200 1024\n200 1048576\n200 300000\n")
            for (name, size) in [("1k", 1024), ("1m", 1_048_576), ("300k", 300_000)] {
                let attributes = try FileManager.default.attributesOfItem(atPath: folder.path + "/got_\(name).bin")
                #expect(attributes[.size] as? Int == size, "got_\(name).bin")
            }
        }
        let bad = try await LoadURLProcess.run(["-w", "%{http_code}", "http://127.0.0.1:\(server.httpPort)/[2-1]k.bin", "data:,x"])
        #expect(bad.status == 3)
        #expect(bad.stdout.isEmpty, "nothing fetched")
        #expect(bad.stderr.contains("bad range '[2-1]' at position"), "\(bad.stderr)")
    }
}
