import ArgumentParser
import FoundationEssentials
import SystemPackage
#if canImport(Glibc)
import Glibc
// Named, because ArgumentParser's `exit(withError:)` hides the C library's `exit` inside the command.
private let exitProcess = Glibc.exit
#elseif canImport(Musl)
import Musl
private let exitProcess = Musl.exit
#elseif canImport(Darwin)
import Darwin
private let exitProcess = Darwin.exit
#endif

extension LoadURL {
    /// The options that take a value, besides `-o`/`--output` (which this file reads itself), each spelling
    /// with the option's long name. A test checks them against ArgumentParser's own description of the command.
    public static let longNamesOfOptionsWithValues: [String: String] = [
        "--output-dir": "--output-dir", "-z": "--time-cond", "--time-cond": "--time-cond", "-w": "--write-out", "--write-out": "--write-out", "-m": "--max-time",
        "--max-time": "--max-time", "-X": "--request", "--request": "--request", "-H": "--header", "--header": "--header",
        "-d": "--data", "--data": "--data", "--data-binary": "--data-binary", "-F": "--form", "--form": "--form", "--form-string": "--form-string", "-T": "--upload-file",
        "--upload-file": "--upload-file", "--max-redirs": "--max-redirs", "-u": "--user", "--user": "--user",
        "--cacert": "--cacert", "-E": "--cert", "--cert": "--cert", "--key": "--key", "--pass": "--pass", "--resolve": "--resolve", "--connect-to": "--connect-to", "--stderr": "--stderr", "--etag-compare": "--etag-compare", "--etag-save": "--etag-save", "--unix-socket": "--unix-socket", "-b": "--cookie", "--cookie": "--cookie", "-c": "--cookie-jar",
        "--cookie-jar": "--cookie-jar", "--hsts": "--hsts", "--pinnedpubkey": "--pinnedpubkey", "--tls-max": "--tls-max", "-x": "--proxy", "--proxy": "--proxy", "--socks5": "--socks5", "--socks5-hostname": "--socks5-hostname", "--socks4": "--socks4", "--socks4a": "--socks4a", "--proxy-cacert": "--proxy-cacert", "--noproxy": "--noproxy", "-U": "--proxy-user",
        "--proxy-user": "--proxy-user", "-C": "--continue-at", "--continue-at": "--continue-at", "--parallel-max": "--parallel-max", "--retry": "--retry", "--retry-delay": "--retry-delay", "--retry-max-time": "--retry-max-time",
        "-A": "--user-agent", "--user-agent": "--user-agent", "-e": "--referer", "--referer": "--referer", "--data-urlencode": "--data-urlencode",
        "--connect-timeout": "--connect-timeout", "-D": "--dump-header", "--dump-header": "--dump-header", "-r": "--range", "--range": "--range",
        "--max-filesize": "--max-filesize", "--json": "--json", "--limit-rate": "--limit-rate", "-Q": "--quote", "--quote": "--quote", "--proxy-header": "--proxy-header", "-Y": "--speed-limit", "--speed-limit": "--speed-limit", "-y": "--speed-time", "--speed-time": "--speed-time", "--url": "--url", "--netrc-file": "--netrc-file", "--data-ascii": "--data-ascii", "--oauth2-bearer": "--oauth2-bearer", "-K": "--config", "--config": "--config",
        "-P": "--ftp-port", "--ftp-port": "--ftp-port",
    ]

    /// The spellings of the options that take a value (the keys of ``longNamesOfOptionsWithValues``, and `--data-raw`,
    /// which ``parseQuickly(_:)`` reads as a `-d` piece).
    public static let optionsWithValues = Set(longNamesOfOptionsWithValues.keys).union(["--data-raw"])

    /// Marks a `--data-raw` piece among the `-d` ones (a NUL cannot stand in an argument): sent as written, a leading
    /// `@` too, in its place among them.
    static let rawDataMark: Character = "\u{0}"

    /// Whether `option` takes the next argument as its value, whatever that looks like (`-d -K`, `-d --next`).
    static func takesValue(_ option: String) -> Bool {
        option == "-o" || option == "--output" || optionsWithValues.contains(option)
    }

    /// The most `-K` files one command line may read, nested ones included: a file that names itself ends there.
    static let configFileLimit = 32
    /// The largest `-K` file read: `-K /dev/zero` fails rather than filling memory.
    static let configFileSize = 10 * 1024 * 1024

    /// `arguments` with each `-K FILE` (`--config`, `-KFILE`, `--config=FILE`; `-` for standard input) replaced by the
    /// arguments its lines stand for (``ConfigFile``), in its place, as curl reads them, and short options run together
    /// split (``splitCluster(_:)``). A file that cannot be read throws ``ConfigFileUnreadable`` (curl's 26); one that holds
    /// a line that is no option is a usage error naming it. Linear in the arguments: nothing is spliced into the middle of an array.
    static func expandingConfigFiles(_ arguments: [String]) throws -> [String] {
        // What is left to read, last first: a file's lines and a cluster's pieces are pushed back in their place.
        var pending = Array(arguments.reversed())
        var expanded: [String] = []
        expanded.reserveCapacity(arguments.count)
        var read = 0
        while let argument = pending.popLast() {
            if argument == "--" {
                expanded.append(argument)
                expanded += pending.reversed()
                break
            }
            let file: String
            if argument == "-K" || argument == "--config" {
                guard let named = pending.popLast() else {
                    expanded.append(argument)  // ArgumentParser says the value is missing.
                    break
                }
                file = named
            } else if argument.hasPrefix("--config=") {
                file = String(argument.dropFirst("--config=".count))
            } else if argument.count > 2, let split = splitCluster(argument) {
                // Short options run together (`-sK FILE`, `-KFILE`, `-sd -K`): read one by one.
                pending += split.reversed()
                continue
            } else {
                expanded.append(argument)
                // A value is taken as it is, whatever it looks like (`-d -K`).
                if takesValue(argument), let value = pending.popLast() { expanded.append(value) }
                continue
            }
            read += 1
            guard read <= configFileLimit else {
                throw ValidationError("-K: more than \(configFileLimit) config files (does one name itself?)")
            }
            let text: String
            do {
                // Its options are not another option's bytes: a later `@-` finds standard input empty, as with curl.
                text = String(decoding: try InputFile.contents(of: file, maximumSize: configFileSize, consuming: true), as: UTF8.self)
            } catch {
                throw ConfigFileUnreadable(file: file, cause: error)
            }
            do throws(ConfigFile.Malformed) {
                // A line's own value only: for options run together, the last piece says (`-sH` wants one, `-XPUT` has it).
                let lines = try ConfigFile.arguments(in: text, file: file) { option in
                    takesValue(option.count > 2 ? splitCluster(option)?.last ?? option : option)
                }
                // Read in its place: its options may name further -K files, read next.
                pending += lines.reversed()
            } catch {
                throw ValidationError(error.description)
            }
        }
        return expanded
    }

    /// The executable's entry point: parses `arguments` into operations (``operations(_:)``, each read by
    /// ``parseQuickly(_:)``; one unless `--next` divides them), runs them in turn and exits with the status of the
    /// last that failed. A usage error anywhere exits with 2 before anything runs, as curl's do (ArgumentParser
    /// would use 64).
    public static func mainQuickly(_ arguments: [String]) async -> Never {
        // ArgumentParser's own tool options (help dumps, completion scripts) go to its main.
        // Only as the first argument: anywhere else it may be an option's value (`-H --experimental-x`).
        if let first = arguments.first, first.hasPrefix("--experimental-") || first.hasPrefix("--generate-completion") {
            await main(arguments)
            exitProcess(0)
        }
        do {
            let commands = try operations(arguments)
            if let path = commands.last?.standardErrorPath { redirectStandardError(to: path) }
            exitProcess(await execute(commands))
        } catch let error as ConfigFileUnreadable {
            StandardStreams.error("Error: \(error)\n")
            exitProcess(LoadURLExit.unreadableConfig)
        } catch {
            if exitCode(for: error) == .validationFailure {
                StandardStreams.error(fullMessage(for: error) + "\n")
                exitProcess(LoadURLExit.usage)
            }
            exit(withError: error)
        }
    }

    /// `--stderr`: standard error becomes `path` (created or truncated), or standard output for `-`; a file that cannot be
    /// opened is warned of on standard error, which stays, as curl does.
    static func redirectStandardError(to path: String) {
        if path == "-" {
            _ = dup2(STDOUT_FILENO, STDERR_FILENO)
            return
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else {
            StandardStreams.error("loadurl: warning: --stderr: cannot open \(path): \(Errno(rawValue: errno))\n")
            return
        }
        // Standard error closed at the start: the file took its number, and is standard error already.
        guard descriptor != STDERR_FILENO else { return }
        _ = dup2(descriptor, STDERR_FILENO)
        close(descriptor)
    }

    /// `-sSLO` as `-s`, `-S`, `-L`, `-O`, and `-sofile` as `-s`, `-o`, `file`: short options run together, the
    /// first that takes a value taking the rest of the argument (`-XPUT`, `-d-1`) or else the next one. `nil` when a
    /// character before it is no option letter.
    static func splitCluster(_ argument: String) -> [String]? {
        guard argument.hasPrefix("-"), !argument.hasPrefix("--") else { return nil }
        let letters = Array(argument.dropFirst())
        var split: [String] = []
        for (position, letter) in letters.enumerated() {
            guard letter.isASCII, letter.isLetter || letter.isNumber else { return nil }
            let flag = "-" + String(letter)
            split.append(flag)
            if takesValue(flag) {
                if position < letters.count - 1 { split.append(String(letters[(position + 1)...])) }
                break
            }
        }
        return split
    }

    /// Stands in ``outputs`` for a `-O` read by ``parseQuickly(_:)``, keeping its place among the `-o` names,
    /// as curl pairs them with the URLs in the order given (a file name cannot hold a NUL).
    public static let remoteNameSlot = "\u{0}remote-name"

    /// Parses `arguments` as ``parse(_:)`` does, in time proportional to their number.
    ///
    /// ArgumentParser takes time quadratic in the number of arguments, which a command line of
    /// thousands of URLs (each with its `-o`) makes seconds long. So the URLs, the `-o` files and the
    /// `-O` flags, which are most of such a line, are picked out here and only the other options go
    /// through ArgumentParser. Each `-O` takes its place among the `-o` names (``remoteNameSlot``), so that
    /// URLs are paired with them in order, as curl pairs them. Short options run together and `-K` files are read
    /// first (``expandingConfigFiles(_:)``).
    public static func parseQuickly(_ arguments: [String]) throws -> LoadURL {
        try parseExpanded(expandingConfigFiles(arguments))
    }

    /// ``parseQuickly(_:)`` of arguments whose `-K` files are read and short options split already
    /// (``expandingConfigFiles(_:)``), as ``operations(_:)`` has them.
    static func parseExpanded(_ arguments: [String]) throws -> LoadURL {
        var rest: [String] = [], urls: [String] = [], outputs: [String] = []
        // Of -P and --ftp-pasv the last given wins, as in curl: ArgumentParser keeps no order between two options.
        var passiveLast: Bool?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                urls += arguments[index...]
                break
            }
            if argument == "--ftp-pasv" {
                passiveLast = true
            } else if argument == "-P" || argument == "--ftp-port" || argument.hasPrefix("--ftp-port=") {
                passiveLast = false
            }
            // A lone `-` is no option and, as curl reads it, no URL either (after `--` it is a URL).
            if argument == "-" { throw ValidationError("option -: is unknown") }
            guard argument.hasPrefix("-") else {
                urls.append(argument)
                continue
            }
            if argument == "-o" || argument == "--output" {
                guard index < arguments.count else {
                    rest.append(argument)  // ArgumentParser says the value is missing.
                    continue
                }
                outputs.append(arguments[index])
                index += 1
            } else if argument.hasPrefix("--output=") {
                outputs.append(String(argument.dropFirst("--output=".count)))
            } else if argument == "--url" || argument.hasPrefix("--url=") {
                // A URL in its place among the others, whatever it starts with.
                if argument == "--url" {
                    guard index < arguments.count else {
                        rest.append(argument)  // ArgumentParser says the value is missing.
                        continue
                    }
                    urls.append(arguments[index])
                    index += 1
                } else {
                    urls.append(String(argument.dropFirst("--url=".count)))
                }
            } else if argument == "--data-raw" || argument.hasPrefix("--data-raw=") {
                let value: String
                if argument == "--data-raw" {
                    guard index < arguments.count else {
                        rest.append(argument)  // ArgumentParser says the value is missing.
                        continue
                    }
                    value = arguments[index]
                    index += 1
                } else {
                    value = String(argument.dropFirst("--data-raw=".count))
                }
                rest.append("--data=" + String(rawDataMark) + value)
            } else if argument == "-O" || argument == "--remote-name" {
                outputs.append(remoteNameSlot)
            } else if let long = longNamesOfOptionsWithValues[argument] {
                guard index < arguments.count else {
                    rest.append(argument)  // ArgumentParser says the value is missing.
                    continue
                }
                // As `--name=value`: the next argument is the value whatever it is, as in curl (`-d -1`,
                // `-w '-> %{http_code}'`), where ArgumentParser would take one starting with `-` for an option.
                // An empty value stays a separate argument: ArgumentParser reads `--name=` as `--name` alone.
                let value = arguments[index]
                rest += value.isEmpty ? [long, value] : ["\(long)=\(value)"]
                index += 1
            } else {
                rest.append(argument)
            }
        }
        var command = try unexpanded(parse(rest))
        if let passiveLast { command.ftpPassive = passiveLast }
        command.urls = urls
        command.outputs = outputs
        return command
    }

    /// `command`, checked to have nothing left that the reading above puts in its place (a spelling it does not
    /// know, as `--remote-name=`): a `-K` would be dropped unread, an `-O` or a `--url` would lose its place.
    private static func unexpanded(_ command: LoadURL) throws -> LoadURL {
        guard command.config.isEmpty else { throw ValidationError("-K \(command.config[0]): cannot be read where it stands; give -K FILE apart") }
        guard command.remoteNames == 0, command.urlOptions.isEmpty else {
            throw ValidationError("-O and --url take their place among the URLs: give them without '='")
        }
        return command
    }
}
