import ArgumentParser
import Cookies
import HTTPScheme

extension LoadURL {
    /// The spellings of curl's `--next`, which ends one operation's options and URLs and starts the next one's.
    static let nextSpellings: Set<String> = ["--next", "-:"]

    /// The options that, as in curl, hold for the whole command line rather than for one operation, wherever they
    /// stand. Each spelling with its long name.
    static let globalFlags: [String: String] = [
        "-v": "--verbose", "--verbose": "--verbose", "-s": "--silent", "--silent": "--silent",
        "-S": "--show-error", "--show-error": "--show-error", "--no-progress-meter": "--no-progress-meter",
        "-Z": "--parallel", "--parallel": "--parallel", "--fail-early": "--fail-early",
    ]

    /// The global options that take a value.
    static let globalOptionsWithValues: Set<String> = ["--parallel-max", "--stderr"]

    /// `arguments` (with `-K` files read and short options split, ``expandingConfigFiles(_:)``) cut at each `--next`
    /// into the operations curl would make of them, each parsed as ``parseQuickly(_:)`` parses: an operation's options
    /// hold for its own URLs only, but for the global ones (`-v`, `-s`, `-S`, `--no-progress-meter`, `-Z`, `--fail-early`,
    /// `--parallel-max`), which hold for every operation wherever they stand (the last `--parallel-max` anywhere, unless an
    /// operation gives its own). An
    /// option's value is never taken for a `--next` (`-d --next`), nor is anything after `--`. An operation with no
    /// URL, or with options that cannot go together, is a usage error before anything runs, as curl's.
    public static func operations(_ arguments: [String]) throws -> [LoadURL] {
        let expanded = try expandingConfigFiles(arguments)
        var groups: [[String]] = [[]]
        // The global options met so far, by long name, each with its value (or nil), in the order first given.
        var globals: [(name: String, value: String?)] = []
        var index = 0
        while index < expanded.count {
            let argument = expanded[index]
            index += 1
            if argument == "--" {
                groups[groups.count - 1] += expanded[(index - 1)...]
                break
            }
            if nextSpellings.contains(argument) {
                groups.append([])
                continue
            }
            groups[groups.count - 1].append(argument)
            if let long = globalFlags[argument], !globals.contains(where: { $0.name == long }) {
                globals.append((long, nil))
            } else if globalOptionsWithValues.contains(argument), index < expanded.count {
                globals.removeAll { $0.name == argument }
                globals.append((argument, expanded[index]))
            } else if let name = globalOptionsWithValues.first(where: { argument.hasPrefix($0 + "=") }) {
                globals.removeAll { $0.name == name }
                globals.append((name, String(argument.dropFirst(name.count + 1))))
            }
            // A value is taken as it is, whatever it looks like.
            if takesValue(argument), index < expanded.count {
                groups[groups.count - 1].append(expanded[index])
                index += 1
            }
        }
        // Read once: each group is parsed as it stands, not expanded again.
        guard groups.count > 1 else { return [try parseExpanded(groups[0])] }
        // Each operation gets the global options first: its own, later in it, still have the last word for it.
        let prefix = globals.flatMap { global in [global.name] + (global.value.map { [$0] } ?? []) }
        let commands = try groups.map { try parseExpanded(prefix + $0) }
        if let empty = commands.firstIndex(where: \.urls.isEmpty) {
            throw ValidationError(empty == commands.count - 1 ? "no URL after the last --next" : "no URL before --next")
        }
        // Every operation's transfers run together with -Z: one's heads on standard output would cross another's bodies.
        if commands[0].parallel, commands.contains(where: { $0.dumpHeader == "-" }) {
            throw ValidationError("-D - cannot go with -Z: the heads would cross the bodies")
        }
        // What only a run would find (-F with -d, say): found for every operation before the first runs.
        for command in commands {
            do {
                _ = try command.makeConfiguration(checkingOnly: true)
            } catch {
                throw ValidationError(String(describing: error))
            }
        }
        return commands
    }

    /// Runs `commands` (``operations(_:)``) and returns the exit status of the last that failed (0 if none did). They
    /// share one cookie jar, as curl's operations share their cookies: an operation that turns the jar on (`-b FILE`,
    /// `-b ''` or `-c`) sees the cookies the ones before it received and read. One after another; with `-Z` (which holds
    /// for all), every operation's transfers run at once, at most `--parallel-max` in all (the last given anywhere, as
    /// curl's global option), standard output still in the order of the URLs, and each sees the cookies received so far.
    static func execute(_ commands: [LoadURL]) async -> Int32 {
        // -V anywhere: the version alone, whatever else the line asks, as curl's.
        if commands.contains(where: \.showsVersion) {
            StandardStreams.output(versionText())
            return 0
        }
        guard commands.count > 1 else { return await commands.first?.execute() ?? LoadURLExit.usage }
        let jar = CookieJar()
        if commands[0].parallel { return await executeAtOnce(commands, cookieJar: jar) }
        var statuses: [Int32] = []
        for command in commands {
            statuses.append(await command.execute(cookieJar: jar))
            // --fail-early (global): no operation after a failed one.
            if command.failEarly, statuses.last != 0 { break }
        }
        return LoadURLExit.lastFailure(statuses)
    }

    /// ``execute(_:)`` with `-Z`: every operation made ready first, then all their transfers in one run, in the order
    /// of the operations and of their URLs.
    @concurrent private static func executeAtOnce(_ commands: [LoadURL], cookieJar: CookieJar) async -> Int32 {
        // Each operation's status, in order: the one it failed to start with, or its transfers' last failure.
        var statuses = [Int32](repeating: 0, count: commands.count)
        var ready: [(slot: Int, operation: PreparedOperation)] = []
        for (slot, command) in commands.enumerated() {
            switch command.prepared(cookieJar: cookieJar) {
            case .success(let operation): ready.append((slot, operation))
            case .failure(let failure): statuses[slot] = failure.status
            }
        }
        let transfers = ready.flatMap { entry in entry.operation.command.urls.indices.map { (operation: entry.operation, index: $0) } }
        let results = await withTaskExecutorPreference(HTTPSchemeHandler.taskExecutor()) {
            // The last operation's is the last given anywhere: its own if it gave one, else the last of the others'.
            await transferAll(transfers, width: commands[commands.count - 1].parallelMax, failingEarly: commands[0].failEarly)
        }
        var position = 0
        for (slot, operation) in ready {
            let count = operation.command.urls.count
            statuses[slot] = operation.finish(status: LoadURLExit.lastFailure(results[position..<(position + count)]))
            position += count
        }
        return LoadURLExit.lastFailure(statuses)
    }
}
