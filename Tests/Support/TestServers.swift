import Foundation

/// The real servers `scripts/test-servers` runs on 127.0.0.1; started on first use if not running.
public enum TestServers {
    /// Where nginx listens and what it serves.
    public struct Nginx: Sendable {
        /// The plain HTTP port.
        public let httpPort: Int
        /// The HTTPS port (certificate for `localhost`, signed by ``caFile``).
        public let httpsPort: Int
        /// The same site as ``httpsPort`` over HTTP/2 (ALPN `h2`); ``httpsPort`` offers HTTP/1.1 alone.
        public let h2Port: Int
        /// The same site in cleartext HTTP/2 with prior knowledge (h2c, no upgrade).
        public let h2cPort: Int
        /// HTTP/2 with a GOAWAY after every fifth request on a connection (`keepalive_requests 5`), serving the
        /// same folder, each response with `X-Connection`.
        public let h2GoAwayPort: Int
        /// HTTP/2 allowing four streams at once on a connection (`http2_max_concurrent_streams 4`), serving the same
        /// folder, each response with `X-Connection`.
        public let h2FewStreamsPort: Int
        /// An HTTPS port whose certificate (for `localhost`, from the test CA) expired in 2020.
        public let expiredPort: Int
        /// An HTTPS port that speaks TLS 1.2 alone (`ssl_protocols TLSv1.2`), serving the same folder; the others speak
        /// 1.2 and 1.3.
        public let tls12Port: Int
        /// Whether nginx also listens on `[::1]` (the HTTP port), which it does where the machine has IPv6.
        public let ipv6: Bool
        /// The PEM file of the test CA.
        public let caFile: String
        /// The folder nginx serves.
        public let root: String
        /// A Unix socket where nginx serves the same site in cleartext.
        public let unixSocket: String
        /// A Unix socket where nginx serves the same site over TLS (its certificate for `localhost`).
        public let tlsUnixSocket: String
        /// A Unix socket where nginx serves the same site in cleartext HTTP/2 with prior knowledge.
        public let h2cUnixSocket: String

        /// Where nginx logs each request under `/cache/`, a line each: method, URI, status, and the
        /// `If-None-Match` and `If-Modified-Since` it carried (`inm=… ims=…`, `-` when absent).
        public var cacheLog: String {
            URL(fileURLWithPath: root).deletingLastPathComponent().appendingPathComponent("logs/cache.log").path
        }
    }

    /// Where the FTP servers (pyftpdlib) listen and what they serve.
    public struct FTP: Sendable {
        /// Plain FTP: anonymous read-only, and `user`/`secret` who may write in `/upload`.
        public let port: Int
        /// Explicit FTPS (`AUTH TLS` required), certificate for `localhost` from the test CA.
        public let tlsPort: Int
        /// Downloads throttled to about 8 kB/s.
        public let slowPort: Int
        /// Drops the data connection after about 100 kB of any file.
        public let cutPort: Int
        /// Plain FTP like ``port`` that never answers `QUIT` (the connection stays open).
        public let silentToQuitPort: Int
        /// Plain FTP like ``port`` that sends each `226` (transfer complete) 15 s late.
        public let lateAcknowledgingPort: Int
        /// Plain FTP like ``port`` (the same files and logins), writing each login and each closed control
        /// connection, a line each, to ``countedEvents``.
        public let countedPort: Int
        /// The file ``countedPort`` writes to: lines of `login USER PORT`, `quit PORT`, `mdtm PORT`, `closed PORT`
        /// and `hung-up PORT`.
        public let countedEvents: String
        /// Like ``countedPort``, for the CLI's tests (which run beside the library's), writing to ``countedCLIEvents``.
        public let countedCLIPort: Int
        /// The file ``countedCLIPort`` writes to.
        public let countedCLIEvents: String
        /// Explicit FTPS like ``tlsPort``, taking only clients that show a certificate the test CA signed
        /// (``MutualTLS`` has them).
        public let clientCertificatePort: Int
        /// Explicit FTPS like ``tlsPort``, speaking TLS 1.2 alone.
        public let tls12Port: Int
        /// Explicit FTPS like ``tlsPort``, speaking TLS 1.3 alone.
        public let tls13Port: Int
        /// The folder served as `/`.
        public let root: String
        /// The PEM file of the test CA.
        public let caFile: String
    }

    /// The proxies on 127.0.0.1: tinyproxy's HTTP ones (``port`` open, ``authPort`` asking for `user`/`secret`) and
    /// dante's SOCKS5 ones (``socksPort`` open, ``socksLogin`` asking for a user name and password).
    public struct Proxies: Sendable {
        /// An open proxy: forwards `http` requests (adding `Via: 1.1 … (tinyproxy/…)`) and tunnels to any port.
        public let port: Int
        /// The same, answering 407 without `Proxy-Authorization: Basic` for `user:secret`, and 401 (with
        /// `WWW-Authenticate`) to a wrong one.
        public let authPort: Int
        /// ``port``'s proxy as an HTTPS proxy (TLS to the proxy, stunnel in front of tinyproxy), with the test CA's
        /// certificate for `localhost`.
        public let tlsPort: Int
        /// ``authPort``'s proxy (asking for `user:secret`) as an HTTPS proxy, as ``tlsPort``.
        public let tlsAuthPort: Int
        /// The open one over TLS 1.3 alone, wanting a client certificate from the test CA.
        public let tlsClientCertificatePort: Int
        /// A SOCKS5 proxy (dante) without authentication.
        public let socksPort: Int
        /// A SOCKS5 proxy (dante) that takes only a user name and password (RFC 1929): its port, and the system user
        /// and password it takes (the user this checkout's own, the password made anew at each start); `nil` when it
        /// could not be started (it needs root).
        public let socksLogin: (port: Int, user: String, password: String)?
        /// Where the SOCKS proxy logs each tunnel it opens: a line with `pass(` and the server's address as
        /// `127.0.0.1.PORT` (dante's way of writing an address and port).
        public let socksLog: String
    }

    /// The running proxies, or `nil` if they could not be started.
    public static let proxies: Proxies? = {
        guard let port = environment["PROXY_PORT"].flatMap(Int.init), let auth = environment["PROXY_AUTH_PORT"].flatMap(Int.init),
              let socks = environment["SOCKS_PORT"].flatMap(Int.init), let socksLog = environment["SOCKS_LOG"],
              let tls = environment["PROXY_TLS_PORT"].flatMap(Int.init), let tlsAuth = environment["PROXY_TLS_AUTH_PORT"].flatMap(Int.init),
              let tlsClientCertificate = environment["PROXY_TLS_MTLS_PORT"].flatMap(Int.init) else { return nil }
        var login: (port: Int, user: String, password: String)?
        if let port = environment["SOCKS_AUTH_PORT"].flatMap(Int.init), let user = environment["SOCKS_AUTH_USER"],
           let password = environment["SOCKS_AUTH_PASSWORD"], !password.isEmpty {
            login = (port, user, password)
        }
        return Proxies(port: port, authPort: auth, tlsPort: tls, tlsAuthPort: tlsAuth, tlsClientCertificatePort: tlsClientCertificate, socksPort: socks, socksLogin: login, socksLog: socksLog)
    }()

    /// The WebSocket servers (scripts/ws-server.py): see that script for their paths.
    public struct WebSockets: Sendable {
        /// Plain `ws:`.
        public let port: Int
        /// `wss:`, certificate for `localhost` from the test CA.
        public let tlsPort: Int
        /// A Unix socket where the plain server listens too.
        public let unixSocket: String
    }

    /// The running WebSocket servers, or `nil` if they could not be started.
    public static let webSockets: WebSockets? = {
        guard let port = environment["WS_PORT"].flatMap(Int.init), let tls = environment["WSS_PORT"].flatMap(Int.init),
              let socket = environment["WS_UNIX_SOCKET"] else { return nil }
        return WebSockets(port: port, tlsPort: tls, unixSocket: socket)
    }()

    /// lighttpd, asking for HTTP Digest authentication (`user`/`secret`, realm `loader digest`): `/digest/` with
    /// MD5, `/digest-sha256/` with SHA-256; `hello.txt` in each.
    public struct Lighttpd: Sendable {
        /// The plain HTTP port.
        public let digestPort: Int
    }

    /// The running lighttpd, or `nil` if it could not be started.
    public static let lighttpd: Lighttpd? = environment["DIGEST_PORT"].flatMap(Int.init).map(Lighttpd.init)

    /// Servers that ask for a client certificate (mutual TLS), and the certificates to show them: one the test CA
    /// signed (subject `CN=loader test client`) and a stranger's, self-signed.
    public struct MutualTLS: Sendable {
        /// nginx over TLS (HTTP/2 offered), requiring a certificate from the test CA: it answers `400` without one or
        /// with one it does not trust, else `200` with `subject=… verify=…` naming the certificate's subject.
        public let port: Int
        /// openssl s_server, which ends the handshake with an alert when the client shows no certificate
        /// (`certificate required`) or one the test CA did not sign (`unknown CA`). It takes `h2` when offered, but
        /// answers only HTTP/1.0 (a status page for `GET /`, naming the client's certificate).
        public let strictPort: Int
        /// The client certificate (PEM).
        public let certificate: String
        /// Its private key (PEM, unencrypted).
        public let key: String
        /// The certificate and its key in one PEM file.
        public let combined: String
        /// The same key, encrypted with ``passphrase``.
        public let encryptedKey: String
        /// The encrypted key's passphrase, made anew at each start.
        public let passphrase: String
        /// A self-signed certificate and its key, trusted by neither server.
        public let strangerCertificate: String
        /// The stranger's key.
        public let strangerKey: String
    }

    /// The running mutual-TLS servers, or `nil` if they could not be started.
    public static let mutualTLS: MutualTLS? = {
        let values = environment
        guard let port = values["MTLS_PORT"].flatMap(Int.init), let strict = values["MTLS_STRICT_PORT"].flatMap(Int.init),
              let certificate = values["CLIENT_CERT"], let key = values["CLIENT_KEY"], let combined = values["CLIENT_COMBINED"],
              let encrypted = values["CLIENT_KEY_ENCRYPTED"], let passphrase = values["CLIENT_KEY_PASSPHRASE"],
              let stranger = values["STRANGER_CERT"], let strangerKey = values["STRANGER_KEY"]
        else { return nil }
        return MutualTLS(port: port, strictPort: strict, certificate: certificate, key: key, combined: combined, encryptedKey: encrypted,
                         passphrase: passphrase, strangerCertificate: stranger, strangerKey: strangerKey)
    }()

    /// The running nginx, or `nil` if it could not be started.
    public static let nginx: Nginx? = {
        let values = environment
        guard let http = values["HTTP_PORT"].flatMap(Int.init), let https = values["HTTPS_PORT"].flatMap(Int.init),
              let h2 = values["H2_PORT"].flatMap(Int.init), let h2c = values["H2C_PORT"].flatMap(Int.init), let h2GoAway = values["H2_GOAWAY_PORT"].flatMap(Int.init),
              let h2Few = values["H2_FEW_STREAMS_PORT"].flatMap(Int.init),
              let expired = values["EXPIRED_PORT"].flatMap(Int.init), let tls12 = values["TLS12_PORT"].flatMap(Int.init),
              let ca = values["CA"], let www = values["ROOT"],
              let socket = values["HTTP_UNIX_SOCKET"], let tlsSocket = values["HTTPS_UNIX_SOCKET"], let h2cSocket = values["H2C_UNIX_SOCKET"]
        else { return nil }
        return Nginx(httpPort: http, httpsPort: https, h2Port: h2, h2cPort: h2c, h2GoAwayPort: h2GoAway, h2FewStreamsPort: h2Few, expiredPort: expired, tls12Port: tls12,
                     ipv6: values["IPV6"] == "1", caFile: ca, root: www, unixSocket: socket, tlsUnixSocket: tlsSocket,
                     h2cUnixSocket: h2cSocket)
    }()

    /// The running FTP servers, or `nil` if they could not be started.
    public static let ftp: FTP? = {
        let values = environment
        guard let port = values["FTP_PORT"].flatMap(Int.init), let tls = values["FTPS_PORT"].flatMap(Int.init),
              let slow = values["FTP_SLOW_PORT"].flatMap(Int.init), let cut = values["FTP_CUT_PORT"].flatMap(Int.init),
              let silent = values["FTP_SILENT_QUIT_PORT"].flatMap(Int.init), let late = values["FTP_LATE_226_PORT"].flatMap(Int.init),
              let counted = values["FTP_COUNTED_PORT"].flatMap(Int.init), let countedCLI = values["FTP_COUNTED_CLI_PORT"].flatMap(Int.init),
              let mutual = values["FTPS_MTLS_PORT"].flatMap(Int.init), let tls12 = values["FTPS_TLS12_PORT"].flatMap(Int.init),
              let tls13 = values["FTPS_TLS13_PORT"].flatMap(Int.init),
              let root = values["FTP_ROOT"], let ca = values["CA"]
        else { return nil }
        // The servers write beside the served folder, not in it.
        let parent = URL(fileURLWithPath: root).deletingLastPathComponent()
        return FTP(port: port, tlsPort: tls, slowPort: slow, cutPort: cut, silentToQuitPort: silent, lateAcknowledgingPort: late,
                   countedPort: counted, countedEvents: parent.appendingPathComponent("counted-events").path,
                   countedCLIPort: countedCLI, countedCLIEvents: parent.appendingPathComponent("counted-cli-events").path,
                   clientCertificatePort: mutual, tls12Port: tls12, tls13Port: tls13, root: root, caFile: ca)
    }()

    /// What `scripts/test-servers start` wrote to `.build/test-servers/env` (it starts the servers if they
    /// are not running); empty if it failed.
    static let environment: [String: String] = {
        var root = URL(fileURLWithPath: #filePath)
        while root.pathComponents.count > 1, !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
            root.deleteLastPathComponent()
        }
        // system(3), not Process: it reaps the script itself. Process's wait never returned once the script
        // had left a server running in the background (the child stayed a zombie, the tests hung).
        let script = root.appendingPathComponent("scripts/test-servers").path
        guard system("/bin/bash '\(script)' start < /dev/null") == 0,
              let text = try? String(contentsOf: root.appendingPathComponent(".build/test-servers/env"), encoding: .utf8)
        else { return [:] }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let pair = line.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { values[String(pair[0])] = String(pair[1]) }
        }
        return values
    }()
}

/// A fixture the test servers' script could not set up.
extension TestServers {
    /// The running nginx; a test that needs it fails (rather than skips) when `scripts/test-servers` could not start it.
    public static func requireNginx() throws -> Nginx {
        guard let nginx else { throw TestServerError("nginx could not be started by scripts/test-servers (see its output)") }
        return nginx
    }
}

public struct TestServerError: Error, CustomStringConvertible {
    /// What is missing.
    public let description: String
    init(_ description: String) { self.description = description }
}
