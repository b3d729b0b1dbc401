import ArchiveScheme
import Loader
import StandardSchemes

// What `-V` prints: curl's three lines (the version, the protocols, the features), for this tool.
extension LoadURL {
    /// The tool's version.
    public static let version = "0.1"

    /// Registers the schemes the tool loads besides any the process registered (once; again does nothing).
    static func registerBuiltInSchemes() {
        StandardSchemes.register()
        if !SchemeRegistry.default.handlers.contains(where: { $0 == ArchiveSchemeHandler.self }) {
            SchemeRegistry.default.register(ArchiveSchemeHandler.self)
        }
    }

    /// `-V`'s text: the version with the libraries that do the work, the schemes registered in this process (the
    /// built-in ones, and any an embedding app registered before running the command), and what the tool can do.
    static func versionText() -> String {
        registerBuiltInSchemes()
        // WebSockets are no handler's: the tool opens them itself (``webSocketTransfer``).
        let schemes = Set(SchemeRegistry.default.handlers.flatMap { $0.supportedSchemes } + ["ws", "wss"]).sorted()
        return """
            loadurl \(version) (swift-url-loader \(version); SwiftNIO for HTTP and WebSocket, libcurl for FTP)
            Protocols: \(schemes.joined(separator: " "))
            Features: brotli cookies HTTP2 IPv6 libz parallel SOCKS5 SSL UnixSockets zstd

            """
    }
}
