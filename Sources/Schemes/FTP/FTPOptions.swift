import FoundationEssentials
import Loader

/// Settings of the FTP handler, set per session (`configuration.handlerOptions[FTPOptions.self]`) or per
/// request (`request.options[FTPOptions.self]`). A request's settings change only what the request sets, as
/// with ``HandlerSetting``: two values are equal when every setting reads the same.
public struct FTPOptions: Sendable, Hashable, HandlerOptionKey {
    /// The settings when none were set.
    public static var defaultValue: FTPOptions { FTPOptions() }

    /// Whether an `ftp://` URL's control and data connections use TLS (`AUTH TLS`, explicit FTPS).
    /// `ftps://` URLs always do (implicit FTPS, port 990).
    @HandlerSetting public var tls: TLSUse = .never
    /// Active mode (the server connects back to us, `PORT`/`EPRT`) instead of passive (`EPSV`/`PASV`).
    @HandlerSetting public var usesActiveMode = false
    /// In active mode, where the server connects back to: an IPv4 or IPv6 address, a host name or a network
    /// interface's name, with a port or a range of them to listen on (`127.0.0.1:40000-40099`), as curl's `-P` takes
    /// it; `nil`, the address of the control connection and any free port (curl's `-P -`).
    @HandlerSetting public var activeModeAddress: String? = nil
    /// Whether an upload creates the folders its path names that do not exist yet.
    @HandlerSetting public var createsMissingDirectories = false
    /// Whether an upload adds to the end of the file it names (`APPE`) rather than replacing it (`STOR`): libcurl's
    /// `CURLOPT_APPEND`, curl's `-a`/`--append`. A file not there yet is made.
    @HandlerSetting public var appendsUploads = false
    /// FTP commands sent as they are, each on a line of its own, once logged in and before the transfer (in the login
    /// folder, before the path's `CWD`): libcurl's `CURLOPT_QUOTE`, curl's `-Q CMD`. A load with commands goes on a
    /// connection of its own, closed after it: they may change its state for the loads after. A refusal fails the load (its
    /// `underlying` an ``FTPCommandRefused``) before anything is transferred, unless the command begins with `*`. A command
    /// holding a line break is refused before anything is sent.
    @HandlerSetting public var commandsAfterLogin: [String] = []
    /// FTP commands sent right before the transfer, in the path's folder: libcurl's `CURLOPT_PREQUOTE`, curl's `-Q +CMD`.
    @HandlerSetting public var commandsBeforeTransfer: [String] = []
    /// FTP commands sent after the transfer succeeded, in the path's folder (`DELE` a file fetched, `RNFR`/`RNTO` one
    /// stored): libcurl's `CURLOPT_POSTQUOTE`, curl's `-Q -CMD`. A refusal fails the load, the transfer done.
    @HandlerSetting public var commandsAfterTransfer: [String] = []
    /// Whether a folder's listing gives the entries' names alone (`NLST`), one per line, rather than the server's long
    /// listing (`LIST`): libcurl's `CURLOPT_DIRLISTONLY`, curl's `-l`/`--list-only`.
    @HandlerSetting public var listsNamesOnly = false
    /// Which IP version the control and data connections use, curl's `-4` and `-6`; `.any` (the default) either.
    @HandlerSetting public var addressFamily: AddressFamily = .any
    /// Seconds the connection and login may take.
    @HandlerSetting public var connectTimeout: TimeInterval = 30
    /// A PEM file of the CA certificates to trust for FTPS, instead of the system's.
    @HandlerSetting public var trustRootsPEMFile: String? = nil
    /// Whether to verify the FTPS server's certificate and host name.
    @HandlerSetting public var verifiesCertificates = true
    /// A PEM file holding the certificate to show an FTPS server that asks for one, then any intermediates: curl's
    /// `--cert`. Its private key is read from ``clientPrivateKeyPEMFile``, or from this file when that is not set.
    @HandlerSetting public var clientCertificatePEMFile: String? = nil
    /// A PEM file holding the private key of ``clientCertificatePEMFile``: curl's `--key`. A request that sets its
    /// own certificate takes its own key and passphrase too (none if it sets none), not its session's.
    @HandlerSetting public var clientPrivateKeyPEMFile: String? = nil
    /// The passphrase of an encrypted private key: curl's `--pass`.
    @HandlerSetting public var clientPrivateKeyPassphrase: String? = nil
    /// The public keys an FTPS server's certificate may have, each `sha256//` and the base64 of the SHA-256 of its
    /// SubjectPublicKeyInfo (libcurl's `CURLOPT_PINNEDPUBLICKEY`, curl's `--pinnedpubkey`). Empty (the default): any
    /// key. Another key fails the load with ``LoadError/Code/serverCertificateUntrusted``, its `underlying` a
    /// ``Loader/PublicKeyPinMismatch``.
    @HandlerSetting public var pinnedPublicKeys: Set<String> = []

    /// The lowest TLS version FTPS accepts (libcurl's `CURLOPT_SSLVERSION`, curl's `--tlsv1.2` and `--tlsv1.3`).
    @HandlerSetting public var minimumTLSVersion: TLSProtocolVersion = .tls12
    /// The highest TLS version FTPS offers (curl's `--tls-max`). Below ``minimumTLSVersion``, FTPS loads fail with
    /// ``LoadError/Code/secureConnectionFailed``.
    @HandlerSetting public var maximumTLSVersion: TLSProtocolVersion = .tls13

    /// Whether a download asks the server for the file's time (`MDTM`) to give `Last-Modified`: one more round
    /// trip per file, which curl makes only with `-R` (and `loadurl` only when it prints the response head).
    @HandlerSetting public var readsModificationDate = true
    /// Seconds a control connection, logged in, is kept after its load for the session's next load of the same
    /// server with the same login and TLS settings, which then skips connecting and logging in (as curl does
    /// for several URLs). 0 closes it at the end of each load.
    @HandlerSetting public var idleConnectionTimeout: TimeInterval = 60
    /// The proxy FTP loads go through, as libcurl takes it: `socks5h://[USER:PASSWORD@]HOST[:PORT]` (SOCKS5, the proxy
    /// resolving the name), `socks5://…`, `socks4a://[USER@]HOST[:PORT]`, `socks4://…`, or an HTTP proxy (`[http://][USER:PASSWORD@]HOST[:PORT]`, or
    /// `https://…` reached over TLS), asked for a tunnel (`CONNECT`) for the control connection and each data
    /// connection. `nil`: none, whatever the environment's variables say, as for HTTP (a tool reads them itself, as
    /// `loadurl` does).
    @HandlerSetting public var proxy: String? = nil
    /// For an HTTPS ``proxy``: a PEM file of the CA certificates to trust for its certificate, instead of the system's
    /// (curl's `--proxy-cacert`; ``trustRootsPEMFile`` is for FTPS servers).
    @HandlerSetting public var proxyTrustRootsPEMFile: String? = nil
    /// For an HTTPS ``proxy``: whether to verify its certificate and host name (curl's `--proxy-insecure` turns it off).
    @HandlerSetting public var proxyVerifiesCertificates = true
    /// For an HTTP ``proxy``: fields for the proxy alone, each `Name: value`, sent with each `CONNECT` (libcurl's
    /// `CURLOPT_PROXYHEADER`, curl's `--proxy-header`); never to the FTP server.
    @HandlerSetting public var proxyHeaderLines: [String] = []
    /// The hosts reached directly though ``proxy`` is set, as libcurl's `NOPROXY` list reads them: comma-separated
    /// names (each covering the domain beneath it), addresses and blocks (`10.0.0.0/8`), or `*` for every host.
    @HandlerSetting public var noProxy: String? = nil

    /// Whether `line` (a command or a field to send) holds a line break or a NUL, which would end it early and start a
    /// line its writer never wrote.
    package static func breaksLine(_ line: String) -> Bool {
        line.contains { $0.isNewline || $0 == "\0" }
    }

    /// ``idleConnectionTimeout`` in nanoseconds, or `nil` for none kept (0, negative or undefined).
    var idleConnectionNanoseconds: UInt64? {
        guard idleConnectionTimeout > 0 else { return nil }
        return UInt64(min(idleConnectionTimeout, 1e9) * 1e9)
    }

    /// ``connectTimeout`` as libcurl takes it: milliseconds, at least 1 and at most `Int32.max` (about 24
    /// days), so that an infinite, huge or undefined (NaN) setting means no timeout in effect rather than
    /// overflowing the conversion, and 0 does not become libcurl's default of 300 s.
    var connectTimeoutMilliseconds: Int {
        guard !connectTimeout.isNaN else { return Int(Int32.max) }
        return Int(min(max(1, (connectTimeout * 1000).rounded(.up)), Double(Int32.max)))
    }

    /// Name-resolution overrides, curl's `--resolve`: `"host:port"` → an address to connect to instead (libcurl's
    /// `CURLOPT_RESOLVE`). The URL keeps its host name for TLS. A request's entries are added to its session's.
    @HandlerSetting public var resolve: [String: String] = [:]
    /// Connection redirects, curl's `--connect-to`: `"host:port"` → `"otherhost:otherport"`, either side's host or port
    /// empty for any or for the request's own (libcurl's `CURLOPT_CONNECT_TO`). Merged as ``resolve`` is.
    @HandlerSetting public var connectTo: [String: String] = [:]

    /// ``resolve`` and ``connectTo`` as libcurl's lists take them: `HOST:PORT:ADDRESS` and `HOST1:PORT1:HOST2:PORT2`, IPv6
    /// addresses in brackets; the redirects most specific first (`host:port`, `host:`, `:port`, `:`), as HTTP picks them,
    /// since libcurl takes the first that matches.
    package var resolveLines: [String] {
        resolve.sorted { $0.key < $1.key }.map { key, address in "\(key):\(Self.bracketed(address))" }
    }
    package var connectToLines: [String] {
        func parts(_ hostAndPort: String) -> (host: String, port: String) {
            let colon = hostAndPort.lastIndex(of: ":") ?? hostAndPort.endIndex
            return (String(hostAndPort[..<colon]), String(hostAndPort[colon...].dropFirst()))
        }
        func specificity(_ from: String) -> Int {
            let (host, port) = parts(from)
            return (host.isEmpty ? 0 : 2) + (port.isEmpty ? 0 : 1)
        }
        return connectTo.sorted { (specificity($0.key), $1.key) > (specificity($1.key), $0.key) }.map { from, to in
            let (fromHost, fromPort) = parts(from), (toHost, toPort) = parts(to)
            return "\(Self.bracketed(fromHost)):\(fromPort):\(Self.bracketed(toHost)):\(toPort)"
        }
    }

    /// An IPv6 address in brackets, as libcurl's lists take one; anything else as it is.
    private static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// Makes the default settings: plain FTP, passive mode, verified certificates.
    public init() {}

    /// The session's settings with those the request set in their place: a request that sets one setting
    /// keeps its session's others (its trust roots, its TLS use).
    public static func merged(_ requestValue: FTPOptions, over sessionValue: FTPOptions) -> FTPOptions {
        var merged = requestValue
        merged.$tls = requestValue.$tls.over(sessionValue.$tls)
        merged.$usesActiveMode = requestValue.$usesActiveMode.over(sessionValue.$usesActiveMode)
        merged.$activeModeAddress = requestValue.$activeModeAddress.over(sessionValue.$activeModeAddress)
        merged.$createsMissingDirectories = requestValue.$createsMissingDirectories.over(sessionValue.$createsMissingDirectories)
        merged.$appendsUploads = requestValue.$appendsUploads.over(sessionValue.$appendsUploads)
        merged.$listsNamesOnly = requestValue.$listsNamesOnly.over(sessionValue.$listsNamesOnly)
        merged.$commandsAfterLogin = requestValue.$commandsAfterLogin.over(sessionValue.$commandsAfterLogin)
        merged.$commandsBeforeTransfer = requestValue.$commandsBeforeTransfer.over(sessionValue.$commandsBeforeTransfer)
        merged.$commandsAfterTransfer = requestValue.$commandsAfterTransfer.over(sessionValue.$commandsAfterTransfer)
        merged.$connectTimeout = requestValue.$connectTimeout.over(sessionValue.$connectTimeout)
        merged.$addressFamily = requestValue.$addressFamily.over(sessionValue.$addressFamily)
        merged.$trustRootsPEMFile = requestValue.$trustRootsPEMFile.over(sessionValue.$trustRootsPEMFile)
        merged.$verifiesCertificates = requestValue.$verifiesCertificates.over(sessionValue.$verifiesCertificates)
        merged.$pinnedPublicKeys = requestValue.$pinnedPublicKeys.over(sessionValue.$pinnedPublicKeys)
        merged.$minimumTLSVersion = requestValue.$minimumTLSVersion.over(sessionValue.$minimumTLSVersion)
        merged.$maximumTLSVersion = requestValue.$maximumTLSVersion.over(sessionValue.$maximumTLSVersion)
        // A request's own certificate comes with its own key and passphrase (or none).
        if !requestValue.$clientCertificatePEMFile.isSet {
            merged.$clientCertificatePEMFile = sessionValue.$clientCertificatePEMFile
            merged.$clientPrivateKeyPEMFile = requestValue.$clientPrivateKeyPEMFile.over(sessionValue.$clientPrivateKeyPEMFile)
            merged.$clientPrivateKeyPassphrase = requestValue.$clientPrivateKeyPassphrase.over(sessionValue.$clientPrivateKeyPassphrase)
        }
        merged.$readsModificationDate = requestValue.$readsModificationDate.over(sessionValue.$readsModificationDate)
        merged.$idleConnectionTimeout = requestValue.$idleConnectionTimeout.over(sessionValue.$idleConnectionTimeout)
        merged.$proxy = requestValue.$proxy.over(sessionValue.$proxy)
        merged.$proxyTrustRootsPEMFile = requestValue.$proxyTrustRootsPEMFile.over(sessionValue.$proxyTrustRootsPEMFile)
        merged.$proxyVerifiesCertificates = requestValue.$proxyVerifiesCertificates.over(sessionValue.$proxyVerifiesCertificates)
        merged.$noProxy = requestValue.$noProxy.over(sessionValue.$noProxy)
        merged.$proxyHeaderLines = requestValue.$proxyHeaderLines.over(sessionValue.$proxyHeaderLines)
        merged.$resolve = sessionValue.$resolve
        if requestValue.$resolve.isSet { merged.resolve.merge(requestValue.resolve) { _, requested in requested } }
        merged.$connectTo = sessionValue.$connectTo
        if requestValue.$connectTo.isSet { merged.connectTo.merge(requestValue.connectTo) { _, requested in requested } }
        return merged
    }

    /// When to use TLS on an `ftp://` URL.
    public enum TLSUse: Sendable, Hashable {
        /// Plain FTP.
        case never
        /// TLS if the server offers it, plain FTP otherwise.
        case ifAvailable
        /// TLS or fail with ``LoadError/Code/secureConnectionFailed``.
        case required
    }
}
