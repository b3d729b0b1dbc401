import ArgumentParser
import Foundation
@testable import LoadURLCommand
import TestSupport
import Testing

/// `-K`/`--config`: options read from a file, one per line, as curl reads them.
@Suite("loadurl: -K config files, as curl's")
struct CLIConfigFileTests {
    private func configFile(_ text: String) throws -> TempFile { try TempFile(text, name: "loadurl.conf") }

    @Test("Each line is an option in the -K's place: with or without dashes, = or : or a space before the value, quoted values with escapes, url =, comments")
    func lines() throws {
        let config = try configFile("""
            # a comment, then a blank line

              silent
            --show-error
            -L
            output = "out file.txt"
            header: "X-A: one two"
            write-out "%{http_code}\\t\\"done\\"\\n"
            url = "http://h/a"
            max-time=5\r
            url http://h/b
            """)
        let command = try LoadURL.parseQuickly(["-K", config.url.path, "-o", "second.txt", "http://h/c", "--url", "-o", "--url=http://h/e"])
        // A url (in the file or as --url) is a URL whatever it starts with.
        #expect(command.urls == ["http://h/a", "http://h/b", "http://h/c", "-o", "http://h/e"])
        #expect(command.outputs == ["out file.txt", "second.txt"], "pairs with the URLs in order, the file's first")
        #expect(command.silent && command.showError && command.followRedirects)
        #expect(command.headers == ["X-A: one two"])
        #expect(command.writeOut == "%{http_code}\t\"done\"\n")
        #expect(command.maxTime == 5)
        // --config=FILE and -KFILE too; the line's later options still win over the file's.
        let later = try LoadURL.parseQuickly(["--config=\(config.url.path)", "-m", "9"])
        #expect(later.maxTime == 9)
        #expect(try LoadURL.parseQuickly(["-K\(config.url.path)"]).urls == ["http://h/a", "http://h/b"])
    }

    @Test("A -K inside a file is read in its place; a file that names itself stops at the limit; a value that looks like -K is a value")
    func nesting() throws {
        let inner = try configFile("url = \"http://h/inner\"\n")
        let outer = try configFile("url = \"http://h/first\"\nconfig = \"\(inner.url.path)\"\nurl = \"http://h/last\"\n")
        #expect(try LoadURL.parseQuickly(["-K", outer.url.path]).urls == ["http://h/first", "http://h/inner", "http://h/last"])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-config-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let looping = folder.appendingPathComponent("loop.conf")
        try Data("-K \(looping.path)\n".utf8).write(to: looping)
        let loop = #expect(throws: ValidationError.self) { _ = try LoadURL.parseQuickly(["-K", looping.path]) }
        #expect(loop?.message == "-K: more than 32 config files (does one name itself?)")
        let valued = try LoadURL.parseQuickly(["-d", "-K", "http://h/"])
        #expect(valued.data == ["-K"] && valued.urls == ["http://h/"])
        // In a cluster: -K last reads its file, a flag taking a value takes -K as its value.
        let clustered = try LoadURL.parseQuickly(["-sK", inner.url.path, "-Ld", "-K", "http://h/"])
        #expect(clustered.silent && clustered.followRedirects)
        #expect(clustered.urls == ["http://h/inner", "http://h/"] && clustered.data == ["-K"])
        // A URL is never read as short options (file: would be -i -l -e), before a -K or after.
        #expect(try LoadURL.parseQuickly(["file:///etc/hostname", "-K", inner.url.path]).urls == ["file:///etc/hostname", "http://h/inner"])
        // A line of options run together wants a value if its last one does, and takes only its own.
        let clusters = try configFile("-sH \"X-A: 1\"\n-XPUT\n-Lo out.txt\n")
        let fromFile = try LoadURL.parseQuickly(["-K", clusters.url.path, "-o", "page.html", "http://h/"])
        #expect(fromFile.headers == ["X-A: 1"] && fromFile.method == "PUT" && fromFile.silent && fromFile.followRedirects)
        #expect(fromFile.outputs == ["out.txt", "page.html"] && fromFile.urls == ["http://h/"])
        let lone = try configFile("-sH\n")
        let wanting = #expect(throws: ValidationError.self) { _ = try LoadURL.parseQuickly(["-K", lone.url.path, "-o", "page.html", "http://h/"]) }
        #expect(wanting?.message == "-K \(lone.url.path), line 1: -sH wants a value")
        // Spellings that would lose their place are refused.
        #expect(throws: ValidationError.self) { _ = try LoadURL.parseQuickly(["--remote-name=", "http://h/a", "-o", "b.txt", "http://h/b"]) }
        let endless = #expect(throws: ConfigFileUnreadable.self) { _ = try LoadURL.parseQuickly(["-K", "/dev/zero"]) }
        #expect(endless?.description == "-K: cannot read /dev/zero: File too large")
    }

    @Test("A line that is no option is a usage error naming the file and line; a file that cannot be read is an error naming it", arguments: [
        ("silent yes\n", "line 1: --silent takes no value, not 'yes'"),
        ("\n# ok\noutput\n", "line 3: --output wants a value"),
        ("header = \"X-A: 1\n", "line 1: the quoted value has no closing quote"),
        ("user-agent one two\n", "line 1: 'two' after the value (a value with spaces goes in double quotes)"),
        ("url =\n", "line 1: url wants a URL"),
        ("silent\n--\n", "line 2: '--' names no option"), ("=x\n", "line 1: '=x' names no option"), ("  -\n", "line 1: '-' names no option"),
    ])
    func malformed(text: String, problem: String) throws {
        let config = try configFile(text)
        let error = #expect(throws: ValidationError.self) { _ = try LoadURL.parseQuickly(["-K", config.url.path, "http://h/"]) }
        #expect(error?.message == "-K \(config.url.path), \(problem)")
        let missing = #expect(throws: ConfigFileUnreadable.self) { _ = try LoadURL.parseQuickly(["-K", "/no/such/config"]) }
        #expect(missing?.description == "-K: cannot read /no/such/config: No such file or directory")
    }

    @Test("loadurl -K - reads the options from a pipe and loads its URLs; an unknown option in a file is a usage error (2), an unreadable file 26")
    func fromStandardInput() async throws {
        let run = try await LoadURLProcess.run(["-K", "-", "data:,third"], input: Data("url = \"data:,first\"\n-w \"[%{url}]\"\nurl data:,second\n".utf8),
                                               inputThroughPipe: true)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "first[data:,first]second[data:,second]third[data:,third]")
        let unknown = try configFile("no-such-option\n")
        let refused = try await LoadURLProcess.run(["-K", unknown.url.path, "data:,x"])
        #expect(refused.status == 2 && refused.stderr.contains("no-such-option"), "\(refused.stderr)")
        // A file that cannot be read is curl's 26, named, with no usage after it; nothing is loaded.
        let missing = try await LoadURLProcess.run(["-K", "/no/such/config", "data:,x"])
        #expect(missing.status == 26, "\(missing.stderr)")
        #expect(missing.stderr == "Error: -K: cannot read /no/such/config: No such file or directory\n" && missing.stdout.isEmpty)
    }
}
