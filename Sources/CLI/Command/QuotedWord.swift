/// A word in double quotes, as curl's config and `.netrc` files write one: `\"`, `\\`, `\t`, `\n`, `\r` and `\v`
/// escaped inside, a backslash before any other character taking that character.
enum QuotedWord {
    /// Reads the quoted word at the start of `text` (which starts with `"`) and leaves `text` after its closing quote;
    /// `nil` when the quote is never closed.
    static func read(from text: inout Substring) -> String? {
        var characters = text.dropFirst()
        var word = ""
        while let character = characters.popFirst() {
            if character == "\"" {
                text = characters
                return word
            }
            guard character == "\\", let escaped = characters.popFirst() else {
                word.append(character)
                continue
            }
            word.append(escapes[escaped] ?? escaped)
        }
        return nil
    }

    private static let escapes: [Character: Character] = ["t": "\t", "n": "\n", "r": "\r", "v": "\u{0B}"]
}
