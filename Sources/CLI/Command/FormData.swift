import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Loader
import Synchronization
import SystemPackage

/// One `-F` option, read as curl reads `name=content`: `name=text` a text part, `name=@FILE` the file uploaded
/// (with its name and a type from its extension), `name=<FILE` the file's contents as a text part; `-` is
/// standard input. The content is split at `;` into the value and settings: `type=TYPE` (with any `;param=value`
/// after it, as `type=text/plain;charset=utf-8`) and `filename=NAME` are read, other settings skipped with a
/// warning, as curl does. A word that starts with `"` runs to the closing quote, `;` included (`\"` and `\\`
/// inside). `--form-string` sends its value as written (``init(literal:)``).
struct FormPart: Equatable, Sendable {
    enum Content: Equatable, Sendable {
        /// The value itself.
        case text(String)
        /// A file uploaded as a file (`@`): its bytes, its name as the part's `filename`.
        case file(path: String)
        /// A file's contents as the part's value (`<`), with no file name.
        case fileContents(path: String)

        /// The file a part reads, if any.
        var path: String? {
            switch self {
            case .text: nil
            case .file(let path), .fileContents(let path): path
            }
        }
    }

    var name: String
    var content: Content
    /// `;type=`: the part's `Content-Type`.
    var type: String?
    /// `;filename=`: the name sent in place of the file's own.
    var filename: String?
    /// Settings skipped (curl warns "skip unknown form field"); not part of the part's identity.
    private(set) var skipped: [String] = []

    /// Why a `-F` option cannot be read.
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    init(name: String, content: Content, type: String? = nil, filename: String? = nil) {
        self.name = name
        self.content = content
        self.type = type
        self.filename = filename
    }

    static func == (a: FormPart, b: FormPart) -> Bool {
        a.name == b.name && a.content == b.content && a.type == b.type && a.filename == b.filename
    }

    /// Reads one `--form-string` option: `name=value`, the value as written.
    init(literal option: String) throws(Malformed) {
        guard let equals = option.firstIndex(of: "="), equals != option.startIndex else {
            throw Malformed(description: "--form-string wants 'name=value', not '\(option)'")
        }
        self.init(name: String(option[..<equals]), content: .text(String(option[option.index(after: equals)...])))
    }

    /// Reads one `-F` option.
    init(_ option: String) throws(Malformed) {
        guard let equals = option.firstIndex(of: "="), equals != option.startIndex else {
            throw Malformed(description: "-F wants 'name=content', not '\(option)'")
        }
        name = String(option[..<equals])
        var rest = option[option.index(after: equals)...]
        let marker = rest.first.flatMap { $0 == "@" || $0 == "<" ? $0 : nil }
        if marker != nil { rest = rest.dropFirst() }
        var words = try Self.words(rest, option: option)
        let first = words.removeFirst()
        switch marker {
        case "@"?: content = .file(path: first)
        case "<"?: content = .fileContents(path: first)
        default: content = .text(first)
        }
        if marker != nil, first.isEmpty { throw Malformed(description: "-F '\(option)' names no file") }
        var inType = false
        for word in words {
            let trimmed = word.drop { $0 == " " }
            if trimmed.hasPrefix("type=") {
                type = String(trimmed.dropFirst(5))
                inType = true
            } else if trimmed.hasPrefix("filename=") {
                filename = String(trimmed.dropFirst(9))
                inType = false
            } else if inType, trimmed.contains("="), !trimmed.hasPrefix("headers="), !trimmed.hasPrefix("encoder=") {
                // A parameter of the type (`charset=utf-8`), kept with it as curl keeps it.
                type! += ";" + word
            } else if !trimmed.isEmpty {
                skipped.append(String(trimmed))
                inType = false
            }
        }
    }

    /// `text` split at the `;` outside quotes. A quote that opens a word, or the value of a `key=` setting, runs
    /// to the next unescaped `"` and is taken off, with `\"` and `\\` inside undone (any other `\` kept), and what
    /// follows it up to the next `;` is dropped (curl 7.88 does the same); a quote elsewhere is an ordinary character.
    private static func words(_ text: Substring, option: String) throws(Malformed) -> [String] {
        var words: [String] = []
        var index = text.startIndex
        while true {
            var word = ""
            while index < text.endIndex, text[index] != ";" {
                let opensQuote = text[index] == "\"" && (word.isEmpty || (word.last == "=" && word.dropLast().allSatisfy(\.isLetter)))
                guard opensQuote else {
                    word.append(text[index])
                    index = text.index(after: index)
                    continue
                }
                index = text.index(after: index)
                var closed = false
                while index < text.endIndex {
                    let character = text[index]
                    index = text.index(after: index)
                    if character == "\"" {
                        closed = true
                        break
                    }
                    if character == "\\", index < text.endIndex, text[index] == "\"" || text[index] == "\\" {
                        word.append(text[index])
                        index = text.index(after: index)
                    } else {
                        word.append(character)
                    }
                }
                guard closed else { throw Malformed(description: "-F '\(option)' has an unclosed quote") }
                while index < text.endIndex, text[index] != ";" { index = text.index(after: index) }
            }
            words.append(word)
            guard index < text.endIndex else { return words }
            index = text.index(after: index)  // the `;`
        }
    }
}

/// The `multipart/form-data` body (RFC 7578) of the `-F` parts, in order. Text and `<FILE` parts are read when
/// the body is made; `@FILE` parts are read as the body is sent, 64 KiB at a time, so that a large upload does
/// not sit in memory. The length is announced (`Content-Length`) from the files' sizes, and a file that gives
/// other than its size while being sent fails the upload, naming it.
struct MultipartForm: Sendable {
    /// A piece of the body: bytes made beforehand, or a file to read when sending.
    enum Segment: Sendable {
        case bytes(Data)
        case file(path: String, size: Int64)
    }

    let boundary: String
    let segments: [Segment]

    /// The `Content-Type` field's value: `multipart/form-data` with the boundary.
    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The body's size in bytes.
    var length: Int64 {
        segments.reduce(0) { total, segment in
            switch segment {
            case .bytes(let data): total + Int64(data.count)
            case .file(_, let size): total + size
            }
        }
    }

    /// The form of `parts`, their files read (``InputFile``) or, for a regular file uploaded with `@`, read as the form
    /// is sent. Throws a `LoadError` naming `url` when a file cannot be read.
    init(_ parts: [FormPart], url: URL, boundary: String = MultipartForm.newBoundary()) throws {
        self.boundary = boundary
        var segments: [Segment] = []
        var pending = Data()
        func read(_ path: String) throws -> Data {
            do {
                return try InputFile.contents(of: path)
            } catch {
                throw LoadError(.requestBodyStreamExhausted, url: url, reason: "-F: \(error)", underlying: error.cause)
            }
        }
        for part in parts {
            var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(part.name))\""
            switch part.content {
            case .text(let value):
                head += part.type.map { "\r\nContent-Type: \($0)" } ?? ""
                pending.append(Data((head + "\r\n\r\n" + value + "\r\n").utf8))
            case .fileContents(let path):
                head += part.type.map { "\r\nContent-Type: \($0)" } ?? ""
                pending.append(Data((head + "\r\n\r\n").utf8))
                pending.append(try read(path))
                pending.append(Data("\r\n".utf8))
            case .file(let path):
                let filename = part.filename ?? (path == "-" ? "-" : URL(fileURLWithPath: path).lastPathComponent)
                head += "; filename=\"\(Self.quoted(filename))\"\r\nContent-Type: \(part.type ?? PathContentTypes.type(forPath: filename))"
                pending.append(Data((head + "\r\n\r\n").utf8))
                var info = stat()
                if !InputFile.isReadableRegularFile(path) || stat(path, &info) != 0 {
                    // Standard input, a pipe: read whole, once for every URL (what cannot be read fails there).
                    pending.append(try read(path))
                } else {
                    segments.append(.bytes(pending))
                    pending = Data()
                    segments.append(.file(path: path, size: Int64(info.st_size)))
                }
                pending.append(Data("\r\n".utf8))
            }
        }
        pending.append(Data("--\(boundary)--\r\n".utf8))
        segments.append(.bytes(pending))
        self.segments = segments
    }

    /// A boundary as curl makes them: dashes and random hex digits, which no part's bytes are likely to hold.
    static func newBoundary() -> String {
        "------------------------" + (0..<16).map { _ in String(Int.random(in: 0..<16), radix: 16) }.joined()
    }

    /// A name or file name for a quoted parameter: `"`, CR and LF percent-encoded, as browsers (and RFC 7578's
    /// advice) do, so that it cannot end the quotes or the line.
    private static func quoted(_ name: String) -> String {
        var quoted = ""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\"": quoted += "%22"
            case "\r": quoted += "%0D"
            case "\n": quoted += "%0A"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted
    }

    /// The body: bytes when no file is read while sending, else a stream that reads each file as it is pulled.
    func requestBody(url: URL) -> RequestBody {
        if segments.count == 1, case .bytes(let data) = segments[0] { return .bytes(data) }
        let segments = self.segments
        return .stream(length: length) {
            let reader = SegmentReader(segments: segments, url: url)
            return AsyncThrowingStream(unfolding: { try reader.next() })
        }
    }
}

/// Reads a form's segments in order, a file 64 KiB at a time; one per sending of the body.
private final class SegmentReader: Sendable {
    private struct State {
        var index = 0
        var file: OpenFile?
        var readFromFile: Int64 = 0
    }

    private let segments: [MultipartForm.Segment]
    private let url: URL
    private let state = Mutex(State())

    init(segments: [MultipartForm.Segment], url: URL) {
        self.segments = segments
        self.url = url
    }

    /// The next chunk, or `nil` after the last segment.
    func next() throws -> Data? {
        try state.withLock { state throws -> Data? in
            while state.index < segments.count {
                switch segments[state.index] {
                case .bytes(let data):
                    state.index += 1
                    if !data.isEmpty { return data }
                case .file(let path, let size):
                    // Each turn returns, throws or moves to the next segment: the loop cannot spin.
                    let remaining = size - state.readFromFile
                    guard remaining > 0 else {
                        // One byte more would be more than was announced: the file grew while being sent.
                        if let file = state.file, try !read(upTo: 1, of: file, path: path).isEmpty {
                            throw LoadError(.requestBodyStreamExhausted, url: url,
                                            reason: "-F: \(path) grew past its \(size) bytes while being sent")
                        }
                        state.file = nil  // closes it
                        state.readFromFile = 0
                        state.index += 1
                        continue
                    }
                    let file: OpenFile
                    if let open = state.file {
                        file = open
                    } else {
                        do {
                            file = try OpenFile(FileDescriptor.open(FilePath(path), .readOnly))
                        } catch {
                            throw LoadError(.requestBodyStreamExhausted, url: url, reason: "-F: cannot read \(path) (\(error))")
                        }
                        state.file = file
                    }
                    let chunk = try read(upTo: Int(min(64 * 1024, remaining)), of: file, path: path)
                    guard !chunk.isEmpty else {
                        throw LoadError(.requestBodyStreamExhausted, url: url,
                                        reason: "-F: \(path) gave \(state.readFromFile) of its \(size) bytes (it changed while being sent)")
                    }
                    state.readFromFile += Int64(chunk.count)
                    return chunk
                }
            }
            return nil
        }
    }

    /// Up to `count` bytes of `file`, empty at its end; a failure named as `path`'s.
    private func read(upTo count: Int, of file: OpenFile, path: String) throws -> Data {
        do {
            return try file.read(upTo: count)
        } catch {
            throw LoadError(.requestBodyStreamExhausted, url: url, reason: "-F: cannot read \(path) (\(error))")
        }
    }
}
