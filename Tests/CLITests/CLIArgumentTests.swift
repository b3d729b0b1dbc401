import Foundation
import LoadURLCommand
import Testing

@Suite("loadurl: reading long command lines")
struct CLIArgumentTests {
    /// The parts of a parsed command these tests compare; the quick reader's `-O` places count as `-O` flags
    /// (ArgumentParser keeps no order between `-o` and `-O`).
    private func summary(_ command: LoadURL) -> String {
        let names = command.outputs.filter { $0 != LoadURL.remoteNameSlot }
        let remoteNames = command.remoteNames + command.outputs.count - names.count
        return "\(command.urls) \(names) \(remoteNames) \(command.headers) \(command.silent) "
            + "\(command.showError) \(command.method ?? "-") \(command.writeOut ?? "-") \(command.followRedirects)"
    }

    @Test("The quick reader gives what ArgumentParser gives", arguments: [
        ["data:,a", "-o", "/tmp/a", "data:,b", "-o", "-"],
        ["-sS", "-H", "X-A: 1", "-H", "data:,not-a-url", "data:,x", "--output=/tmp/o", "-O", "http://h/p"],
        ["-L", "-X", "PUT", "-w", "%{http_code}", "--", "-not-an-option", "data:,y"],
        ["-sO", "http://h/a", "http://h/b"],           // short flags run together with O, split by the quick reader too
        ["-sSL", "data:,z", "-o", "/tmp/z"],            // short flags run together without o or O
        ["--remote-name", "-o", "x", "data:,1", "data:,2", "--silent"],
        ["-sSLo", "/tmp/a", "data:,a", "-LO", "http://h/b"],  // run together, the last taking the next argument
        ["-X", "POST", "data:,p", "-w", "", "-H", "X-A: 1"],  // an empty value
    ])
    func sameAsArgumentParser(_ arguments: [String]) async throws {
        #expect(summary(try LoadURL.parseQuickly(arguments)) == summary(try LoadURL.parse(arguments)))
    }

    @Test("Every option ArgumentParser reads with a value is one the quick reader lets take the next argument")
    func quickReaderKnowsEveryValue() {
        // "-z, --time-cond <time-cond>": each spelling before the value's name.
        let lines = LoadURL.helpMessage(columns: 10_000).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let spellings = lines.filter { $0.hasPrefix("-") && $0.contains(" <") }.flatMap { line in
            line.prefix { $0 != "<" }.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init).filter { $0.hasPrefix("-") }
        }
        #expect(spellings.count > 40, "\(spellings)")
        // -o and --output, --url, -K and --config are read apart from the rest.
        let apart: Set<String> = ["-o", "--output", "--url", "-K", "--config"]
        let missing = spellings.filter { !LoadURL.optionsWithValues.contains($0) && !apart.contains($0) }
        #expect(missing.isEmpty, "options whose value the quick reader would take for a URL: \(missing)")
    }

    @Test("-E FILE:PASSPHRASE splits at the first colon not written \\:, unless the whole names a file; --pass wins")
    func certificateArgument() throws {
        #expect(LoadURL.split(certificate: "client.pem:secret:more", passphrase: nil) == ("client.pem", "secret:more"))
        #expect(LoadURL.split(certificate: "a\\:b.pem:secret", passphrase: nil) == ("a:b.pem", "secret"))
        #expect(LoadURL.split(certificate: "client.pem:secret", passphrase: "given") == ("client.pem", "given"))
        #expect(LoadURL.split(certificate: "client.pem", passphrase: nil) == ("client.pem", nil))
        let named = FileManager.default.temporaryDirectory.appendingPathComponent("cert:\(UUID().uuidString).pem").path
        #expect(FileManager.default.createFile(atPath: named, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: named) }
        #expect(LoadURL.split(certificate: named, passphrase: nil) == (named, nil))
    }

    @Test("An unknown option is still a usage error")
    func unknownOption() {
        #expect(throws: (any Error).self) { try LoadURL.parseQuickly(["--no-such-option", "data:,x"]) }
    }

    @Test("A lone - is an unknown option (exit 2), as curl says, not a URL; as -T's value it is standard input; after -- a URL")
    func loneDash() async throws {
        let run = try await LoadURLProcess.run(["-", "data:,x"])
        #expect(run.status == 2 && run.stdout.isEmpty, "\(run.stdout)")
        #expect(run.stderr.contains("option -: is unknown"), "\(run.stderr)")
        #expect(try LoadURL.parseQuickly(["-T", "-", "data:,x"]).urls == ["data:,x"])
        #expect(try LoadURL.parseQuickly(["--", "-"]).urls == ["-"])
    }

    @Test("ArgumentParser's own --experimental- options count only first: as an option's value they are that value")
    func toolOptionsOnlyFirst() async throws {
        let run = try await LoadURLProcess.run(["-w", "--experimental-dump-help", "data:,x"])
        #expect(run.status == 0 && run.stdout == "x--experimental-dump-help", "\(run.stdout.prefix(200))")
    }

    @Test("-w's %{stderr} sends what follows to standard error, %{stdout} back to standard output")
    func writeOutStreams() async throws {
        let run = try await LoadURLProcess.run(["-w", "%{stderr}%{size_download} bytes\\n%{stdout}.", "data:,hey"])
        #expect(run.status == 0 && run.stdout == "hey." && run.stderr == "3 bytes\n", "\(run.stdout) | \(run.stderr)")
    }

    @Test("The options that take a value are the ones ArgumentParser describes")
    func optionListMatches() async throws {
        let run = try await LoadURLProcess.run(["--experimental-dump-help"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let command = try #require(json["command"] as? [String: Any])
        var described = Set<String>()
        for case let argument as [String: Any] in try #require(command["arguments"] as? [Any]) where argument["kind"] as? String == "option" {
            for case let name as [String: Any] in argument["names"] as? [Any] ?? [] {
                let text = name["name"] as? String ?? ""
                described.insert(name["kind"] as? String == "short" ? "-" + text : "--" + text)
            }
        }
        described.subtract(["-o", "--output"])
        #expect(described == LoadURL.optionsWithValues)
    }

    @Test("3,000 URLs on one command line, each with its -o, all load into their files")
    func thousandsOfURLs() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("loadurl-many-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var arguments = ["-s", "--create-dirs"]
        for index in 0..<3000 {
            arguments += ["data:,body-\(index)", "-o", directory.appendingPathComponent("f\(index)").path]
        }
        let run = try await LoadURLProcess.run(arguments, timeout: 300)
        #expect(run.status == 0, "stderr: \(run.stderr.prefix(500))")
        for index in [0, 1, 1499, 2999] {
            let body = try String(contentsOf: directory.appendingPathComponent("f\(index)"), encoding: .utf8)
            #expect(body == "body-\(index)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count == 3000)
    }
}
