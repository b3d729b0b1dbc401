import FoundationEssentials

/// A `-K`/`--config` file read as curl reads one: an option per line, with or without its leading dashes (`silent`,
/// `--silent`, `-s`); its value after whitespace, or after `=` or `:` for a name without dashes (`output = a.txt`);
/// a value in double quotes when it holds whitespace or starts with `=` or `:` (`\\`, `\"`, `\t`, `\n`, `\r`, `\v`
/// escaped inside); `url = …` for a URL; a line whose first non-blank character is `#` is a comment.
enum ConfigFile {
    /// A line that is no option: which file and line, and why.
    struct Malformed: Error, CustomStringConvertible {
        let file: String
        let line: Int
        let problem: String

        var description: String { "-K \(file == "-" ? "standard input" : file), line \(line): \(problem)" }
    }

    /// The command-line arguments the file's lines stand for, in order. `takesValue` says whether an option (by any
    /// of its spellings) takes a value.
    static func arguments(in text: String, file: String, takesValue: (String) -> Bool) throws(Malformed) -> [String] {
        var arguments: [String] = []
        // CR LF is one Character to Swift: split at it too, or a file from Windows would be one line.
        for (offset, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            func fail(_ problem: String) -> Malformed { Malformed(file: file, line: offset + 1, problem: problem) }
            var line = rawLine.drop { $0 == " " || $0 == "\t" }
            if line.last == "\r" { line = line.dropLast() }
            guard let first = line.first, first != "#" else { continue }
            let dashed = first == "-"
            let name = line.prefix { !($0 == " " || $0 == "\t" || (!dashed && ($0 == "=" || $0 == ":"))) }
            var rest = line[name.endIndex...].drop { $0 == " " || $0 == "\t" }
            if !dashed, let separator = rest.first, separator == "=" || separator == ":" {
                rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
            }
            let value: String?
            if rest.first == "\"" {
                guard let unquoted = QuotedWord.read(from: &rest) else { throw fail("the quoted value has no closing quote") }
                value = unquoted
            } else if rest.isEmpty {
                value = nil
            } else {
                let word = rest.prefix { !($0 == " " || $0 == "\t") }
                rest = rest[word.endIndex...]
                value = String(word)
            }
            let trailing = rest.drop { $0 == " " || $0 == "\t" }
            guard trailing.isEmpty || trailing.first == "#" else {
                throw fail("'\(trailing.prefix(40))' after the value (a value with spaces goes in double quotes)")
            }
            let option = dashed ? String(name) : "--" + name
            // `--` would end the options of the whole line, `-` is no option.
            guard !name.isEmpty, name != "-", name != "--" else { throw fail("'\(line.prefix(40))' names no option") }
            if option == "--url" {
                guard let value else { throw fail("url wants a URL") }
                // As --url: a URL even when it starts with `-` (taken alone, it would be an option).
                arguments += ["--url", value]
            } else if takesValue(option) {
                guard let value else { throw fail("\(option) wants a value") }
                arguments += [option, value]
            } else {
                guard value == nil else { throw fail("\(option) takes no value, not '\(value ?? "")'") }
                arguments.append(option)
            }
        }
        return arguments
    }
}
