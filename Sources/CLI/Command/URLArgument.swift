import FoundationEssentials
import Loader

/// A URL as typed on `loadurl`'s command line, read as curl reads one.
enum URLArgument {
    /// The URL `text` names, guessing a scheme where it has none (`localhost:8080/a`, `127.0.0.1/a`,
    /// `ftp.example/a`), as curl does: `ftp://` for a host starting `ftp.`, else `http://`.
    ///
    /// A prefix counts as a scheme when `//` follows its colon (curl's rule) or when `registry` has a
    /// handler for it, so that `data:,hi` and a plugin's `note:x` stay as typed while `localhost:8080`
    /// is a host and port. `nil` when even the guess is not a URL.
    static func url(_ text: String, registry: SchemeRegistry) -> URL? {
        if let url = URL(leniently: text), let scheme = url.scheme {
            let afterColon = text.dropFirst(scheme.utf8.count + 1)
            if afterColon.hasPrefix("/") || registry.handlerClass(for: LoadRequest(url: url)) != nil {
                return url
            }
        }
        // Only a scheme-like prefix with "//" after it is taken as a scheme the loader lacks: that URL
        // then fails as an unsupported scheme, naming it, rather than being sent to a host of that name.
        if let separator = text.firstRange(of: "://"), URL.isSchemeName(text[..<separator.lowerBound].utf8) {
            return URL(leniently: text)
        }
        // A space or a control character is no host or path curl would guess at either ("not a url").
        guard !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return nil }
        let scheme = text.lowercased().hasPrefix("ftp.") ? "ftp" : "http"
        guard let guessed = URL(leniently: scheme + "://" + text), guessed.host != nil else { return nil }
        return guessed
    }
}
