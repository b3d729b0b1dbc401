import FoundationEssentials

/// What `-d`, `--data-binary`, `--data-urlencode` and `--json` send, their files read once for all the URLs of a run, as
/// curl reads them with its options: each URL gets the same bytes, from standard input or a pipe too.
struct BodyPieces: Sendable {
    /// The pieces, joined with `&` when sent: `-d`'s (a file's without its line breaks), then `--data-urlencode`'s
    /// encoded, then `--data-binary`'s. ArgumentParser keeps each option's own order only, where curl keeps the line's.
    let pieces: [Data]
    /// A lone `--data-binary @FILE` of a regular file, read as it is sent rather than into memory.
    let streamedFile: String?
    /// Whether they go as a form, with its `Content-Type`: any `-d`, `--data-urlencode` or `--data-binary` piece, as
    /// curl sends them all (`--data-binary` differs from `-d` only in keeping a file's line breaks).
    let isForm: Bool
    /// Whether the body is `--json`'s (the one piece), sent with JSON's `Content-Type` and `Accept`.
    let isJSON: Bool

    /// A piece whose file could not be read: the option, its argument, and why.
    struct Unreadable: Error, CustomStringConvertible {
        /// The option, as `-d`.
        let option: String
        /// Its argument, as `@file`.
        let argument: String
        /// Why the file could not be read.
        let cause: InputFile.Unreadable

        /// The option, its argument and the cause, as error messages name them.
        var description: String { "\(option) '\(argument)': \(cause)" }
    }

    /// No pieces: a request without a body.
    static let none = BodyPieces(pieces: [], streamedFile: nil, isForm: false, isJSON: false)

    private init(pieces: [Data], streamedFile: String?, isForm: Bool, isJSON: Bool) {
        (self.pieces, self.streamedFile, self.isForm, self.isJSON) = (pieces, streamedFile, isForm, isJSON)
    }

    /// The pieces of the options' arguments; `streams` lets a lone `--data-binary @FILE` be read as it is sent.
    /// `--json`'s, which go alone (``LoadURL/makeConfiguration()`` sees to it), are joined into one piece, with nothing
    /// between them, as curl joins them.
    init(form: [String], binary: [String], encoded: [String], json: [String] = [], streams: Bool) throws(Unreadable) {
        isForm = !form.isEmpty || !encoded.isEmpty || !binary.isEmpty
        isJSON = !json.isEmpty
        if streams, form.isEmpty, encoded.isEmpty, binary.count == 1, let only = binary.first, only.hasPrefix("@"), only != "@-",
           InputFile.isReadableRegularFile(String(only.dropFirst())) {
            (pieces, streamedFile) = ([], String(only.dropFirst()))
            return
        }
        func piece(_ text: String, option: String, stripsLineBreaks: Bool) throws(Unreadable) -> Data {
            // A --data-raw piece among -d's, sent as written.
            if option == "-d", text.first == LoadURL.rawDataMark { return Data(text.dropFirst().utf8) }
            guard text.hasPrefix("@") else { return Data(text.utf8) }
            let read: Data
            do {
                read = try InputFile.contents(of: String(text.dropFirst()))
            } catch {
                throw Unreadable(option: option, argument: text, cause: error)
            }
            return stripsLineBreaks ? read.filter { $0 != 0x0A && $0 != 0x0D } : read
        }
        var pieces: [Data] = []
        for text in form { pieces.append(try piece(text, option: "-d", stripsLineBreaks: true)) }
        for argument in encoded {
            do {
                pieces.append(Data(try URLEncodedPiece(argument).encoded().utf8))
            } catch {
                throw Unreadable(option: "--data-urlencode", argument: argument, cause: error)
            }
        }
        for text in binary { pieces.append(try piece(text, option: "--data-binary", stripsLineBreaks: false)) }
        if isJSON {
            var whole = Data()
            for text in json { whole.append(try piece(text, option: "--json", stripsLineBreaks: false)) }
            pieces.append(whole)
        }
        (self.pieces, streamedFile) = (pieces, nil)
    }

    /// No pieces: the options sent no body.
    var isEmpty: Bool { pieces.isEmpty && streamedFile == nil }

    /// The pieces as one body, joined with `&`.
    var joined: Data { Data(pieces.joined(separator: Data("&".utf8))) }

}
