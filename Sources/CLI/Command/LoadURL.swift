import ArgumentParser
import Foundation
import Loader
import StandardSchemes

/// The `loadurl` command: loads each URL in turn, of any registered scheme, and writes its body out.
///
/// Options are spelled as curl spells them. Run it in-process with ``execute()`` (tests do, after
/// registering schemes of their own); the executable calls `LoadURL.main()`.
public struct LoadURL: AsyncParsableCommand {
    /// The command's name, help text and exit codes.
    public static let configuration = CommandConfiguration(
        commandName: "loadurl",
        abstract: "Load URLs of any registered scheme (data:, file:, …) and write their bodies out.",
        discussion: """
        Each URL's body goes to standard output in order, or to the file given by the -o or -O that pairs
        with it (the first -o/-O with the first URL, and so on). A failed URL does not stop the others; the
        exit status is that of the last failure.

        Exit status: 0 success; 1 unsupported scheme; 2 usage; 3 malformed URL; 6 host not found;
        7 cannot connect; 22 HTTP error with -f; 23 cannot write output; 26 cannot read upload; 28 timed out;
        35 TLS failure; 37 file missing, a directory or unreadable; 47 too many redirects; 56 connection lost
        or bad response; 61 cannot decode body; 63 body too large; 67 login denied; 78 remote resource not
        found; 130 cancelled; 99 other.
        """
    )

    /// The URLs to load, in order.
    @Argument(help: "URLs to load, e.g. data:,Hello file:///etc/hostname")
    public var urls: [String] = []

    /// Output files, paired with the URLs in order; `-` is standard output.
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the next URL's body to FILE ('-' for stdout).")
    public var outputs: [String] = []

    /// How many URLs (in order, after those given -o) are saved under their remote names.
    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: "Save the next URL's body under its remote file name.")
    public var remoteNames: Int

    /// Save every URL under its remote name.
    @Flag(name: .customLong("remote-name-all"), help: "Save every URL's body under its remote file name.")
    public var remoteNameAll = false

    /// The folder for -o and -O files.
    @Option(name: .customLong("output-dir"), help: "Put -o and -O files in DIR.")
    public var outputDirectory: String?

    /// Create missing folders for output files.
    @Flag(name: .customLong("create-dirs"), help: "Create the folders an output file needs.")
    public var createDirectories = false

    /// Print each response's head before its body.
    @Flag(name: [.customShort("i"), .customLong("include")], help: "Print the response head (status and header fields) before the body.")
    public var include = false

    /// No progress meter and no error messages.
    @Flag(name: [.customShort("s"), .customLong("silent")], help: "Silent: no progress meter, no error messages.")
    public var silent = false

    /// With -s, still print error messages.
    @Flag(name: [.customShort("S"), .customLong("show-error")], help: "With -s, still print error messages.")
    public var showError = false

    /// Treat an HTTP status of 400 or more as a failure (exit 22) and print no body.
    @Flag(name: [.customShort("f"), .customLong("fail")], help: "Fail (exit 22) on an HTTP status of 400 or more, printing no body.")
    public var failOnHTTPError = false

    /// A summary printed after each transfer.
    @Option(name: [.customShort("w"), .customLong("write-out")], help: "Print FORMAT after each transfer: %{url} %{http_code} %{content_type} %{size_download} %{time_total} %{exitcode} %{errormsg}.")
    public var writeOut: String?

    /// The longest a single transfer may take.
    @Option(name: [.customShort("m"), .customLong("max-time")], help: "Fail a transfer that takes longer than SECONDS.")
    public var maxTime: Double?

    /// Never draw the progress meter.
    @Flag(name: .customLong("no-progress-meter"), help: "Never draw the progress meter.")
    public var noProgressMeter = false

    /// Makes the command with no arguments; ArgumentParser fills it in.
    public init() {}

    /// Runs the command and exits with its status.
    public func run() async throws {
        let status = await execute()
        if status != 0 { throw ExitCode(status) }
    }

    /// Loads every URL and returns the exit status, without exiting. Registers the built-in schemes into
    /// the process-wide registry if they are not there yet.
    public func execute() async -> Int32 {
        StandardSchemes.register()
        signal(SIGPIPE, SIG_IGN)
        guard !urls.isEmpty else {
            report("no URL given (try --help)", status: LoadURLExit.usage)
            return LoadURLExit.usage
        }
        var configuration = LoaderSession.Configuration.default
        if let maxTime, maxTime > 0 { configuration.timeoutIntervalForResource = maxTime }
        let session = LoaderSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }

        var lastFailure: Int32 = 0
        for (index, text) in urls.enumerated() {
            let status = await transfer(text, index: index, session: session)
            if status != 0 { lastFailure = status }
        }
        return lastFailure
    }

    /// Loads one URL to its output; returns its exit status.
    private func transfer(_ text: String, index: Int, session: LoaderSession) async -> Int32 {
        let started = Date()
        guard let url = URL(string: text), url.scheme != nil else {
            let error = LoadError(.badURL, reason: "'\(text.prefix(200))' is not a URL with a scheme")
            report(error.description, status: 3)
            summarize(TransferSummary(url: URL(string: "about:blank")!, exitCode: 3, error: error))
            return 3
        }
        var summary = TransferSummary(url: url)
        defer {
            summary.seconds = Date().timeIntervalSince(started)
            summarize(summary)
        }
        let destination = outputPath(for: url, index: index)
        var meter = ProgressMeter(enabled: showsProgress(toStdout: destination == nil), label: url.lastPathComponent)
        defer { meter.finish() }
        do {
            let (bytes, response) = try await session.bytes(from: url)
            summary.response = response
            if failOnHTTPError, let status = response.status, status.code >= 400 {
                bytes.task.cancel()
                summary.exitCode = LoadURLExit.httpError
                report("The requested URL returned error: \(status.code) (\(url.absoluteString))", status: LoadURLExit.httpError)
                return LoadURLExit.httpError
            }
            let output = try OutputFile(path: destination, createDirectories: createDirectories, url: url)
            defer { output.close() }
            if include { try output.write(Data(response.printableHead.utf8)) }
            for try await chunk in bytes.chunks {
                try output.write(chunk)
                summary.bytes += Int64(chunk.count)
                meter.update(received: summary.bytes, expected: response.expectedContentLength)
            }
            try output.finish()
            return 0
        } catch {
            let failure = LoadError.wrapping(error, url: url)
            let status = LoadURLExit.status(for: failure.code)
            summary.exitCode = status
            summary.error = failure
            report(failure.description, status: status)
            return status
        }
    }

    /// The file for the URL at `index`, or `nil` for standard output.
    private func outputPath(for url: URL, index: Int) -> String? {
        var name: String?
        if index < outputs.count {
            name = outputs[index] == "-" ? nil : outputs[index]
        } else if remoteNameAll || index - outputs.count < remoteNames {
            let remote = url.lastPathComponent
            name = remote.isEmpty || remote == "/" ? "index" : remote
        }
        guard let name else { return nil }
        if let outputDirectory, !name.hasPrefix("/") {
            return (outputDirectory as NSString).appendingPathComponent(name)
        }
        return name
    }

    private func showsProgress(toStdout: Bool) -> Bool {
        !silent && !noProgressMeter && isatty(STDERR_FILENO) == 1 && !(toStdout && isatty(STDOUT_FILENO) == 1)
    }

    private func report(_ message: String, status: Int32) {
        guard !silent || showError else { return }
        FileHandle.standardError.write(Data("loadurl: (\(status)) \(message)\n".utf8))
    }

    private func summarize(_ summary: TransferSummary) {
        guard let writeOut else { return }
        FileHandle.standardOutput.write(Data(summary.format(writeOut).utf8))
    }
}
