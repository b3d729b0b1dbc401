import ArchiveScheme
import ArgumentParser
import Cookies
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import FTPScheme
import HTTPScheme
import HTTPTypes
import Loader
import StandardSchemes

// What the options make of each request and of the session.
extension LoadURL {
    /// The `-d` pieces with the `--data-raw` ones ArgumentParser read apart (``parseQuickly(_:)`` puts them among the
    /// `-d` ones, marked, in their place).
    var formData: [String] { data + dataRaw.map { String(Self.rawDataMark) + $0 } }

    /// The session settings the options ask for. `checkingOnly`: for the options' checks alone, before anything runs
    /// (`--next`), which then warns of nothing and reads no `-H @FILE`: the run that follows does both.
    /// The most seconds `-m`, `--connect-timeout` and the retry options take: about 31 million years, far inside what
    /// Swift's `Duration` holds (it traps past about 1.7e20 s).
    static let longestSeconds = 1e15

    func makeConfiguration(checkingOnly: Bool = false) throws -> LoaderSession.Configuration {
        let warns = !checkingOnly && (!silent || showError)
        var configuration = LoaderSession.Configuration.default
        for (option, value) in [("--retry", Double(retries)), ("--retry-delay", retryDelay), ("--retry-max-time", retryMaxTime)] where value < 0 {
            throw ValidationError("\(option) wants a number of 0 or more, not \(value.printed("%g"))")
        }
        // As curl ("too large number"): seconds past what a timer holds are a usage error, not a trap where one is set.
        let seconds = [("-m", maxTime), ("--connect-timeout", connectTimeout), ("--retry-delay", retryDelay), ("--retry-max-time", retryMaxTime)]
        for case let (option, value?) in seconds where !(value <= Self.longestSeconds) {
            throw ValidationError("\(option) wants a number of seconds up to \(Self.longestSeconds.printed("%g")), not \(value.printed("%g"))")
        }
        if let method, HTTPRequest.Method(method) == nil {
            throw ValidationError("-X wants a request method (a token: letters, digits and !#$%&'*+-.^_`|~), not '\(method)'")
        }
        // As curl: more than its limit is its limit, 0 its default (50); a negative number is no number of transfers.
        if parallelMax < 0 { throw ValidationError("--parallel-max wants a number of transfers from 1 to \(Self.parallelLimit), not \(parallelMax)") }
        // As curl: the file -C goes on with must be known before the server names one.
        if remoteHeaderName, continueAt != nil { throw ValidationError("-J cannot go with -C") }
        if let continueAt {
            guard ContinueAt(continueAt) != nil else { throw ValidationError("-C wants a byte offset or '-', not '\(continueAt)'") }
            // A range of an encoded body cannot be decoded alone; an upload is never resumed here.
            if compressed { throw ValidationError("-C cannot go with --compressed: the rest of a compressed body cannot be decoded alone") }
            if uploadFile != nil || !formData.isEmpty || !dataBinary.isEmpty || !dataURLEncoded.isEmpty || !json.isEmpty || !form.isEmpty || !formString.isEmpty {
                throw ValidationError("-C resumes downloads only, not -T, -d, --json or -F")
            }
            // The head would go into the file between its bytes and the rest (-i), or replace them (-I).
            if include || headOnly { throw ValidationError("-C cannot go with -i or -I: the head would be written into the file being completed") }
        }
        if !form.isEmpty || !formString.isEmpty {
            // One body per request, as curl's "you can only select one HTTP request method".
            if uploadFile != nil || !formData.isEmpty || !dataBinary.isEmpty || !dataURLEncoded.isEmpty || !json.isEmpty || headOnly {
                throw ValidationError("-F cannot go with -d, --data-binary, --data-urlencode, --json, -T or -I: a request has one body")
            }
            for option in form {
                do throws(FormPart.Malformed) {
                    let part = try FormPart(option)
                    for setting in part.skipped where warns {
                        StandardStreams.error("loadurl: warning: -F '\(option)': skipped the unknown setting '\(setting)'\n")
                    }
                } catch {
                    throw ValidationError(error.description)
                }
            }
            for option in formString {
                do throws(FormPart.Malformed) { _ = try FormPart(literal: option) } catch { throw ValidationError(error.description) }
            }
        }
        // A HEAD sends no body: -d's pieces go with -I only in the query (-G), as curl's "you can only select one HTTP
        // request method" has it. (-T's file wins over -d's pieces, as in curl, where the upload makes the request a PUT.)
        if headOnly, !dataInQuery, !formData.isEmpty || !dataBinary.isEmpty || !dataURLEncoded.isEmpty {
            throw ValidationError("-I cannot go with -d, --data-binary or --data-urlencode (but with -G, which puts them in the query): a HEAD request sends no body")
        }
        // Checked here: header checks are off on the wire, and a line break would start another field there.
        if let bearerToken, bearerToken.isEmpty || !HTTPField.isValidValue(bearerToken) {
            throw ValidationError("--oauth2-bearer wants a token that can stand in a field value (no line breaks)")
        }
        if !json.isEmpty {
            // curl 7.88 would append them to a -d body with '&', which makes neither a form nor JSON.
            if !formData.isEmpty || !dataBinary.isEmpty || !dataURLEncoded.isEmpty || uploadFile != nil || headOnly || dataInQuery {
                throw ValidationError("--json cannot go with -d, --data-binary, --data-urlencode, -T, -I or -G: it is the request's whole body")
            }
        }
        if dataInQuery, !form.isEmpty || !formString.isEmpty || uploadFile != nil {
            throw ValidationError("-G cannot go with -F or -T: it sends the -d pieces in the URL, with GET")
        }
        if let range = byteRange {
            if range != self.range, warns {
                StandardStreams.error("loadurl: warning: -r wants a dash; asking for the bytes from \(self.range ?? "") on\n")
            }
            // Digits and dashes in comma-separated pairs, each with a number on at least one side, as curl takes them.
            let valid = range.split(separator: ",", omittingEmptySubsequences: false).allSatisfy { pair in
                let sides = pair.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
                return sides.count == 2 && sides.allSatisfy { $0.allSatisfy { $0.isASCII && $0.isNumber } } && !(sides[0].isEmpty && sides[1].isEmpty)
            }
            guard valid else { throw ValidationError("-r wants FIRST-LAST, FIRST- or -LAST_N (comma-separated), not '\(range)'") }
            if continueAt != nil { throw ValidationError("-r cannot go with -C: each asks for its own part") }
        }
        if let maxFileSize, Self.byteCount(maxFileSize) == nil {
            throw ValidationError("--max-filesize wants a number of bytes (with K, M or G), not '\(maxFileSize)'")
        }
        if let limitRate, Self.byteCount(limitRate) == nil {
            throw ValidationError("--limit-rate wants a number of bytes per second (with K, M or G), not '\(limitRate)'")
        }
        if let connectTimeout, !(connectTimeout >= 0) { throw ValidationError("--connect-timeout wants a number of seconds, 0 or more, not \(connectTimeout.printed("%g"))") }
        // As curl 7.88: one or the other.
        if failOnHTTPError, failWithBody { throw ValidationError("-f and --fail-with-body cannot go together: choose one") }
        // Heads of transfers at once would cross the ordered bodies on standard output.
        if dumpHeader == "-", parallel, urls.count > 1 { throw ValidationError("-D - cannot go with -Z: the heads would cross the bodies") }
        if let maxTime, maxTime > 0 { configuration.timeoutIntervalForResource = maxTime }
        // As curl: no limit on how long a transfer may go without progress (the session's default is 60 s);
        // -m bounds the whole transfer.
        configuration.timeoutIntervalForRequest = .infinity
        // -y/-Y: a transfer that sends nothing for -y's seconds is below any limit; the session's idle timeout says so
        // even while nothing comes for the body's loop to look at.
        if let speedTime, !(speedTime >= 0) { throw ValidationError("--speed-time wants a number of seconds, 0 or more, not \(speedTime.printed("%g"))") }
        if let speedLimit, speedLimit < 0 { throw ValidationError("--speed-limit wants a number of bytes per second, 0 or more, not \(speedLimit)") }
        if let lowSpeedLimit { configuration.timeoutIntervalForRequest = lowSpeedLimit.seconds }
        configuration.redirectLimit = followRedirects || locationTrusted ? (maxRedirects < 0 ? Int.max : maxRedirects) : 0
        // `-L --max-redirs 0` fails at the first redirect (47), as curl's does; without -L a redirect is the result.
        if followRedirects || locationTrusted, maxRedirects == 0 { configuration.middleware.append(RedirectMiddleware(limit: 0)) }
        // As with curl, bodies arrive as the server sends them unless --compressed asks for decoding.
        configuration.contentDecoding = compressed ? .automatic : .off
        // And whatever -H asks for, as curl's --compressed decodes what it gets then.
        configuration.contentDecoding.decodesRequestedCodings = compressed
        var http = HTTPClientOptions()
        http.tls.additionalTrustRootsPEMFile = caCertificates
        http.tls.verifiesCertificates = !insecure
        if let pinnedPublicKey { http.tls.pinnedPublicKeys = try Self.pins(pinnedPublicKey) }
        if let tlsMinimum { http.tls.minimumVersion = tlsMinimum.version }
        if let tlsMaximum { http.tls.maximumVersion = try TLSVersionChoice.maximum(tlsMaximum) }
        if let clientCertificate {
            (http.tls.clientCertificatePEMFile, http.tls.clientPrivateKeyPassphrase) = Self.split(certificate: clientCertificate, passphrase: clientKeyPassphrase)
            http.tls.clientPrivateKeyPEMFile = clientKey
        } else if clientKey != nil || clientKeyPassphrase != nil {
            throw ValidationError("--key and --pass need --cert (the client certificate they belong to)")
        }
        // With -y or -Y, -Z opens as many connections to a host as transfers run at once, as curl (which has no limit per
        // host): a transfer waiting for one of the pool's eight would wait for others to end, its -y time running. Not
        // otherwise: 32 connections measured no faster than eight (20,000 small transfers 32 at once, medians of four
        // alternated runs: 15,076 a second against 18,422, then 14,820 against 16,382).
        if parallel, lowSpeedLimit != nil {
            http.maximumConnectionsPerHost = max(http.maximumConnectionsPerHost, parallelMax == 0 ? 50 : min(parallelMax, Self.parallelLimit))
        }
        http.allowsHTTP2 = httpVersion != .http1_1
        http.http2PriorKnowledge = httpVersion == .http2PriorKnowledge
        // -A '' and -H 'User-Agent:' send none, as curl's: not the handler's own either. (A malformed -H is each
        // request's failure, reported as it is made.)
        let removed = checkingOnly ? [] : (try? HeaderLines(headers).removed) ?? []
        if userAgent == "" || removed.contains(.userAgent) { http.userAgent = nil }
        // 0, as in curl: the default.
        if let connectTimeout, connectTimeout > 0 {
            http.connectTimeout = connectTimeout
            configuration.handlerOptions[FTPOptions.self].connectTimeout = connectTimeout
        }
        for entry in resolve {
            // HOST:PORT:ADDRESS, where ADDRESS may itself contain colons (IPv6, optionally bracketed).
            let parts = entry.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, Int(parts[1]) != nil else { throw ValidationError("--resolve wants HOST:PORT:ADDRESS, not \(entry)") }
            let (key, address) = ("\(parts[0].lowercased()):\(parts[1])", String(parts[2].trimming(while: { $0 == "[" || $0 == "]" })))
            http.resolve[key] = address
            configuration.handlerOptions[FTPOptions.self].resolve[key] = address
        }
        for entry in connectTo {
            guard let (from, to) = Self.connectionRedirect(entry) else {
                throw ValidationError("--connect-to wants HOST1:PORT1:HOST2:PORT2 (any part may be empty), not \(entry)")
            }
            // The first given for a HOST1:PORT1 wins, as curl's.
            if http.connectTo[from] == nil {
                http.connectTo[from] = to
                configuration.handlerOptions[FTPOptions.self].connectTo[from] = to
            }
        }
        http.unixSocketPath = unixSocket
        if let ipVersion {
            http.addressFamily = ipVersion.family
            configuration.handlerOptions[FTPOptions.self].addressFamily = ipVersion.family
        }
        try setProxies(&http, environment: ProcessInfo.processInfo.environment)
        let proxyFields = try Self.proxyFields(proxyHeaders)
        http.httpProxy?.headerFields.append(contentsOf: proxyFields)
        http.httpsProxy?.headerFields.append(contentsOf: proxyFields)
        configuration.handlerOptions[HTTPClientOptions.self] = http
        setFTPProxy(&configuration.handlerOptions[FTPOptions.self], environment: ProcessInfo.processInfo.environment)
        // libcurl's own spelling of an empty value: `Name;` (it drops `Name: `).
        configuration.handlerOptions[FTPOptions.self].proxyHeaderLines = proxyFields.map { $0.value.isEmpty ? "\($0.name.rawName);" : "\($0.name.rawName): \($0.value)" }
        // As curl: an FTP file's time costs a round trip (MDTM), asked only when the head is printed or -z compares it.
        configuration.handlerOptions[FTPOptions.self].readsModificationDate = include || headOnly || remoteTime || timeCondition != nil
        if requireTLS || tryTLS { configuration.handlerOptions[FTPOptions.self].tls = requireTLS ? .required : .ifAvailable }
        configuration.handlerOptions[FTPOptions.self].usesActiveMode = ftpPort != nil && !ftpPassive
        if let ftpPort, ftpPort != "-" { configuration.handlerOptions[FTPOptions.self].activeModeAddress = ftpPort }
        configuration.handlerOptions[FTPOptions.self].createsMissingDirectories = ftpCreateDirectories
        configuration.handlerOptions[FTPOptions.self].appendsUploads = appendUpload
        configuration.handlerOptions[FTPOptions.self].listsNamesOnly = listOnly
        for command in quote {
            guard !FTPOptions.breaksLine(command) else { throw ValidationError("-Q: an FTP command cannot hold a line break: \(command.debugDescription)") }
            switch command.first {
            case "-": configuration.handlerOptions[FTPOptions.self].commandsAfterTransfer.append(String(command.dropFirst()))
            case "+": configuration.handlerOptions[FTPOptions.self].commandsBeforeTransfer.append(String(command.dropFirst()))
            default: configuration.handlerOptions[FTPOptions.self].commandsAfterLogin.append(command)
            }
        }
        // -k, --cacert and -E hold for FTPS as for HTTPS.
        configuration.handlerOptions[FTPOptions.self].verifiesCertificates = !insecure
        configuration.handlerOptions[FTPOptions.self].pinnedPublicKeys = http.tls.pinnedPublicKeys
        configuration.handlerOptions[FTPOptions.self].minimumTLSVersion = http.tls.minimumVersion
        configuration.handlerOptions[FTPOptions.self].maximumTLSVersion = http.tls.maximumVersion
        configuration.handlerOptions[FTPOptions.self].trustRootsPEMFile = caCertificates
        configuration.handlerOptions[FTPOptions.self].clientCertificatePEMFile = http.tls.clientCertificatePEMFile
        configuration.handlerOptions[FTPOptions.self].clientPrivateKeyPEMFile = http.tls.clientPrivateKeyPEMFile
        configuration.handlerOptions[FTPOptions.self].clientPrivateKeyPassphrase = http.tls.clientPrivateKeyPassphrase
        return configuration
    }

    /// `-E`'s file and passphrase as curl reads them: `FILE:PASSPHRASE`, split at the first `:` not escaped as `\:`
    /// (unless the whole argument names an existing file); `--pass`, when given, is the passphrase.
    public static func split(certificate: String, passphrase: String?) -> (file: String, passphrase: String?) {
        if FileManager.default.fileExists(atPath: certificate) { return (certificate, passphrase) }
        var file = ""
        var rest = certificate[...]
        while let character = rest.popFirst() {
            if character == "\\", rest.first == ":" {
                file.append(rest.removeFirst())
            } else if character == ":" {
                return (file, passphrase ?? String(rest))
            } else {
                file.append(character)
            }
        }
        return (file, passphrase)
    }

    /// The pins `--pinnedpubkey` gives, as curl reads it: `sha256//BASE64` hashes joined with `;`, or a file holding a
    /// public key (PEM or DER). Checked before any transfer: a hash that is no SHA-256, or a file that cannot be read or
    /// holds no key, is a usage error (curl reads the file as it connects, and fails the transfer with 90).
    static func pins(_ value: String) throws -> Set<String> {
        if value.hasPrefix("sha256//") {
            let pins = value.split(separator: ";").map { String($0.trimmingSpaces()) }
            // A SHA-256 is 32 bytes: 44 characters of base64.
            guard pins.allSatisfy({ $0.hasPrefix("sha256//") && Data(base64Encoded: String($0.dropFirst(8)))?.count == 32 }) else {
                throw ValidationError("--pinnedpubkey wants 'sha256//BASE64' hashes joined with ';', or a public key file, not '\(value)'")
            }
            return Set(pins)
        }
        guard let contents = try? InputFile.contents(of: value) else {
            throw ValidationError("--pinnedpubkey: cannot read the public key file \(value)")
        }
        guard let pin = PublicKeyPins.pin(ofPublicKeyFile: contents) else {
            throw ValidationError("--pinnedpubkey: \(value) holds no public key (PEM 'BEGIN PUBLIC KEY' or DER)")
        }
        return [pin]
    }

    /// The proxy the command line names: `-x`'s, or a `--socks5`, `--socks5-hostname`, `--socks4` or `--socks4a` one as
    /// that scheme's URL; `nil` for none. curl takes the last of these given: the options here are read without their
    /// order, so more than one is a usage error that says so.
    func chosenProxy() throws -> String? {
        let socks = [("socks5", socks5), ("socks5h", socks5Hostname), ("socks4", socks4), ("socks4a", socks4a)]
            .compactMap { scheme, value in value.map { (scheme, $0) } }
        guard let (scheme, value) = socks.first else { return proxy }
        let names = ["socks5": "--socks5", "socks5h": "--socks5-hostname", "socks4": "--socks4", "socks4a": "--socks4a"]
        guard socks.count == 1 else {
            throw ValidationError("give one of --socks5, --socks5-hostname, --socks4 and --socks4a, not \(socks.map { names[$0.0]! }.joined(separator: " and ")) (curl takes the last; this tool does not know their order)")
        }
        if let proxy, !proxy.isEmpty {
            throw ValidationError("give -x or \(names[scheme]!), not both (curl takes the last; this tool does not know their order)")
        }
        let url = value.contains("://") ? value : scheme + "://" + value
        guard HTTPClientOptions.Proxy(url) != nil else {
            throw ValidationError("\(names[scheme]!) wants HOST[:PORT], not '\(value)'")
        }
        return url
    }

    /// The proxies `-x`, `-U` and `--noproxy` ask for, or, without `-x`, those of `environment`'s variables, as
    /// curl reads them (`http_proxy` for http, `https_proxy` for https, `all_proxy` for both, `no_proxy`).
    func setProxies(_ http: inout HTTPClientOptions, environment: [String: String]) throws {
        if let proxy = try chosenProxy() {
            let chosen = try proxy.isEmpty ? nil : HTTPClientOptions.Proxy(proxy)
                ?? { throw ValidationError("-x wants an HTTP, HTTPS, SOCKS5 or SOCKS4 proxy, [http://][USER:PASSWORD@]HOST[:PORT], https://[USER:PASSWORD@]HOST[:PORT], socks5h://[USER:PASSWORD@]HOST[:PORT] or socks4a://[USER@]HOST[:PORT], not '\(proxy)'") }()
            http.httpProxy = chosen
            http.httpsProxy = chosen
        } else {
            // A variable this tool cannot use fails its loads (``proxyRefusal(environment:)``), never goes direct.
            http.httpProxy = HTTPClientOptions.Proxy.fromEnvironment(environment, scheme: "http")
            http.httpsProxy = HTTPClientOptions.Proxy.fromEnvironment(environment, scheme: "https")
        }
        if let proxyUser {
            let credential = Self.credential(proxyUser)
            // A login written in the proxy's URL wins, as curl 7.88 keeps it (and as the FTP proxy's does).
            for keyPath in [\HTTPClientOptions.httpProxy, \HTTPClientOptions.httpsProxy]
            where http[keyPath: keyPath] != nil && http[keyPath: keyPath]?.user == nil {
                http[keyPath: keyPath]?.user = credential.user
                http[keyPath: keyPath]?.password = credential.password
            }
        }
        // An HTTPS proxy's certificate is checked with the system's roots and --proxy-cacert's, as curl checks it: not with
        // --cacert's, nor unchecked under -k, which are for the servers.
        var proxyTLS = HTTPClientOptions.TLSOptions()
        proxyTLS.additionalTrustRootsPEMFile = proxyCACertificates
        proxyTLS.verifiesCertificates = !proxyInsecure
        for keyPath in [\HTTPClientOptions.httpProxy, \HTTPClientOptions.httpsProxy] where http[keyPath: keyPath]?.usesTLS == true {
            http[keyPath: keyPath]?.tls = proxyTLS
        }
        http.tunnelsThroughProxy = proxyTunnel
        http.noProxy = noProxy.map(HTTPClientOptions.Proxy.exceptions(in:)) ?? HTTPClientOptions.Proxy.exceptions(fromEnvironment: environment)
    }

    /// Without `-x`, why a load of a URL may not go: a proxy variable for its scheme (`http` for `http` and `ws`, `https`
    /// for `https` and `wss`) that this tool cannot use (an unknown scheme, `ftp://`) and no `no_proxy` exception
    /// for its host. Such a load fails (7) rather than go direct, which the user, who set a proxy, did not ask for.
    /// `nil` when no variable needs it.
    func proxyRefusal(environment: [String: String]) -> (@Sendable (URL) -> LoadError?)? {
        // -x (or a --socks option) chooses the proxy; --unix-socket uses none.
        guard (try? chosenProxy()) == nil, unixSocket == nil else { return nil }
        var unusable: [String: String] = [:]
        for scheme in ["http", "https"] {
            if let (name, value) = HTTPClientOptions.Proxy.environmentVariable(environment, scheme: scheme), HTTPClientOptions.Proxy(value) == nil {
                unusable[scheme] = "\(name) ('\(value)')"
            }
        }
        guard !unusable.isEmpty else { return nil }
        let named = unusable
        let exceptions = noProxy.map(HTTPClientOptions.Proxy.exceptions(in:)) ?? HTTPClientOptions.Proxy.exceptions(fromEnvironment: environment)
        return { url in
            guard let scheme = url.scheme?.lowercased(), let proxy = named[scheme == "wss" ? "https" : scheme == "ws" ? "http" : scheme],
                  var host = url.host(percentEncoded: false)?.lowercased() else { return nil }
            if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
            guard !HTTPClientOptions.Proxy.bypasses(host, exceptions: exceptions) else { return nil }
            return LoadError(.cannotConnectToHost, url: url,
                             reason: "the proxy \(proxy) is not one this tool can use (an HTTP, HTTPS, SOCKS5 or SOCKS4 proxy); not connecting without it")
        }
    }

    /// The proxy of FTP loads as curl picks it: `-x`'s (`-x ''`, none), else `ftp_proxy`, `FTP_PROXY`, `all_proxy` or
    /// `ALL_PROXY`; with `--noproxy`'s or `no_proxy`'s exceptions; `-U`'s login in its URL, unless it has one.
    func setFTPProxy(_ ftp: inout FTPOptions, environment: [String: String]) {
        let chosen = (try? chosenProxy()) ?? ["ftp_proxy", "FTP_PROXY", "all_proxy", "ALL_PROXY"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        ftp.proxy = chosen.flatMap { $0.isEmpty ? nil : $0 }.map { proxy in proxyUser.map { Self.proxy(proxy, login: Self.credential($0)) } ?? proxy }
        ftp.noProxy = noProxy ?? environment["no_proxy"] ?? environment["NO_PROXY"]
        ftp.proxyTrustRootsPEMFile = proxyCACertificates
        ftp.proxyVerifiesCertificates = !proxyInsecure
    }

    /// The options that shape each request, read once: ArgumentParser's property wrappers look up generic
    /// metadata on every read, about 1% of a run of many small transfers when read for each URL.
    struct RequestOptions: Sendable {
        /// The -H fields, their files read; lines that are no field are each URL's failure.
        let headerLines: Result<HeaderLines, HeaderLines.Invalid>
        let user: String?
        /// The -F parts (checked already by ``makeConfiguration()``).
        let form: [FormPart]
        let uploadFile: String?
        let headOnly: Bool
        let method: String?
        /// Where downloads go on from (`-C`), if anywhere.
        let continueAt: ContinueAt?
        /// The -w format, read from its file once when given as `@FILE` (`@-`: standard input), as curl does.
        var writeOut: String? = nil
        /// The --retry options, read once rather than for each URL.
        var retry = RetryPolicy()
        /// Whether the -w format names a variable about connections (``TransferSummary/metricsVariables``).
        var writeOutNeedsMetrics = false
        /// The -d, --data-binary, --data-urlencode and --json pieces, their files read once; a file that cannot be read is each
        /// URL's failure (26), found when its request is made.
        var bodyPieces: Result<BodyPieces, BodyPieces.Unreadable> = .success(BodyPieces.none)
        /// -G: the pieces go in the URL's query.
        var dataInQuery = false
        /// -A's `User-Agent`.
        var userAgent: String?
        /// -e's `Referer` (without curl's `;auto`): the first request's, and each redirect's too unless ``autoReferer``.
        var referer: String?
        /// -e's `;auto`: each redirect sends the URL it comes from as its `Referer`.
        var autoReferer = false
        /// --max-filesize's limit in bytes; `nil` for none.
        var maxFileSize: Int64?
        /// --limit-rate's bytes per second; `nil` for none.
        var rateLimit: Int64?
        /// -Y and -y; `nil` for neither.
        var lowSpeed: LowSpeedLimit?
        /// Whether -T's file is read whole once, for several URLs to upload it: standard input from a pipe, a FIFO, which
        /// can be read only once (the second URL would upload nothing). A regular file is read as each upload is sent.
        var readsUploadOnce = false
        /// Whether a --retry can send -T's file again: not one read as it is sent that cannot be read again (standard
        /// input, a pipe, a FIFO), whose second try would upload nothing or wait for ever.
        var uploadCanBeSentAgain = true
        /// Where -D writes the heads.
        var headerDump: HeaderDump?
        /// The `.netrc` of -n, --netrc-optional or --netrc-file, read once; `nil` without them or when the file cannot be
        /// read (warned of, as curl goes on without it); a file curl would not read either fails each URL with 26.
        var netrc: Result<Netrc, Netrc.Malformed>?
        /// Whether the `.netrc`'s password wins over a URL's own (-n, --netrc-file: curl's "required"), or only a URL
        /// without one takes it (--netrc-optional).
        var netrcOverridesURL = true
        /// -z's condition, read once; `nil` without -z or when its time could not be read (warned of, as curl goes on).
        var timeCondition: TimeCondition?
        /// --etag-compare's ETag, read once; a file that cannot be read is each URL's failure (26), as curl's, unless
        /// --etag-save will write it (then an empty ETag, `""`).
        var etagToMatch: Result<String, InputFile.Unreadable>?
        /// ``LoadURL/proxyRefusal(environment:)``: why a URL (typed, or a redirect's) may not be loaded.
        var proxyRefusal: (@Sendable (URL) -> LoadError?)?
    }

    /// This command's ``RequestOptions``; reads the files the body pieces and `-w @FILE` name.
    var requestOptions: RequestOptions {
        // -F parts before --form-string ones: ArgumentParser keeps each option's own order only (as with -d).
        let parts = form.compactMap { try? FormPart($0) } + formString.compactMap { try? FormPart(literal: $0) }
        var options = RequestOptions(headerLines: Result { () throws(HeaderLines.Invalid) in try HeaderLines(headers) }, user: user, form: parts, uploadFile: uploadFile,
                                     headOnly: headOnly, method: method, continueAt: continueAt.flatMap(ContinueAt.init))
        options.retry = retryPolicy
        options.proxyRefusal = proxyRefusal(environment: ProcessInfo.processInfo.environment)
        if let writeOut, writeOut.hasPrefix("@") {
            do {
                // Without its line breaks, as curl reads a -w file (and a -d one): `\n` in it says where lines end.
                let bytes = try InputFile.contents(of: String(writeOut.dropFirst())).filter { $0 != 0x0A && $0 != 0x0D }
                options.writeOut = String(decoding: bytes, as: UTF8.self)
            } catch {
                if !silent || showError { StandardStreams.error("loadurl: warning: -w: \(error); no summary is printed\n") }
                options.writeOut = ""
            }
        } else {
            options.writeOut = writeOut
        }
        options.writeOutNeedsMetrics = TransferSummary.needsMetrics(options.writeOut)
        // Standard input that is a regular file (`< file`) is opened again for each (on Linux, from its start): a large
        // one is not held in memory.
        options.readsUploadOnce = urls.count > 1 && uploadFile.map { !InputFile.isReadableRegularFile($0) } ?? false
        options.uploadCanBeSentAgain = uploadFile.map { options.readsUploadOnce || ($0 != "-" && InputFile.isReadableRegularFile($0)) } ?? true
        // Pipes that several requests read are read now, before any transfer: each request's, made on the event loop
        // (-Z), must not wait there on a writer. What cannot be read fails each URL from the memo.
        var pipes = parts.compactMap(\.content.path).filter { !InputFile.isReadableRegularFile($0) }
        if options.readsUploadOnce, let uploadFile { pipes.append(uploadFile) }
        for path in pipes { _ = try? InputFile.contents(of: path) }
        if netrc || netrcOptional || netrcFile != nil {
            let path = netrcFile ?? Self.homeFolder + "/.netrc"
            do {
                let text = String(decoding: try InputFile.contents(of: path, maximumSize: Self.configFileSize), as: UTF8.self)
                options.netrc = Result { () throws(Netrc.Malformed) in try Netrc(text) }
            } catch {
                // As curl: the transfers go on without the logins (a missing file is no error there).
                if !silent || showError { StandardStreams.error("loadurl: warning: -n: \(error); no .netrc logins are used\n") }
            }
            options.netrcOverridesURL = !netrcOptional
        }
        options.bodyPieces = Result { () throws(BodyPieces.Unreadable) in
            try BodyPieces(form: formData, binary: dataBinary, encoded: dataURLEncoded, json: json, streams: !dataInQuery)
        }
        options.dataInQuery = dataInQuery
        options.userAgent = userAgent
        // `;auto` asks for one on each redirect (``TransferEvents``); an empty one sends none, as curl's.
        // A -H Referer (or 'Referer:', none) wins on every request, as curl's.
        let ownReferer = (try? options.headerLines.get()).map { $0.added.contains { $0.name == .referer } || $0.removed.contains(.referer) } ?? false
        let auto = referer?.hasSuffix(";auto") == true
        options.autoReferer = auto && !ownReferer
        options.referer = referer.map { auto ? String($0.dropLast(5)) : $0 }.flatMap { $0.isEmpty ? nil : $0 }
        if let timeCondition {
            options.timeCondition = TimeCondition(timeCondition)
            if options.timeCondition == nil, !silent || showError {
                StandardStreams.error("loadurl: warning: -z: '\(timeCondition)' is no date this reads nor a file's name: no time condition\n")
            }
        }
        if let etagCompare {
            // The file's first line, as curl reads it (an empty file: an empty ETag, sent as `""`).
            let read = Result { () throws(InputFile.Unreadable) in try InputFile.contents(of: etagCompare, maximumSize: 64 * 1024) }
                .map { String(decoding: $0, as: UTF8.self).prefix { $0 != "\n" && $0 != "\r" } }
                .map { $0.isEmpty ? "\"\"" : String($0) }
            // Not there yet, with --etag-save to write it: the first run of a mirroring script.
            options.etagToMatch = etagSave != nil ? .success((try? read.get()) ?? "\"\"") : read
        }
        options.maxFileSize = maxFileSize.flatMap(Self.byteCount).flatMap { $0 == 0 ? nil : $0 }
        options.rateLimit = limitRate.flatMap(Self.byteCount).flatMap { $0 == 0 ? nil : $0 }
        options.lowSpeed = lowSpeedLimit
        return options
    }

    /// `--proxy-header`'s fields, read as `-H`'s are (``HeaderLines``: `Name;` for an empty value, `Name:` for none of
    /// that name, `@FILE`); a line that is no field, or one that would frame the message, is a usage error.
    static func proxyFields(_ lines: [String]) throws -> [HTTPField] {
        let fields: [HTTPField]
        do {
            fields = try HeaderLines(lines, option: "--proxy-header").fields
        } catch {
            throw ValidationError(error.description)
        }
        if let framing = fields.first(where: { HTTPClientOptions.Proxy.framingFields.contains($0.name) }) {
            throw ValidationError("--proxy-header cannot set \(framing.name.rawName): the client frames what it sends")
        }
        return fields
    }

    /// `-Y` and `-y` as curl reads them: either alone sets the other to its default (1 byte per second, 30 s); either at
    /// 0 turns the check off.
    var lowSpeedLimit: LowSpeedLimit? {
        guard speedLimit != nil || speedTime != nil else { return nil }
        let limit = LowSpeedLimit(bytesPerSecond: speedLimit ?? 1, seconds: speedTime ?? 30)
        return limit.bytesPerSecond > 0 && limit.seconds > 0 ? limit : nil
    }

    /// `--connect-to`'s `HOST1:PORT1:HOST2:PORT2` as ``HTTPClientOptions/connectTo`` takes it (`"host1:port1"` →
    /// `"host2:port2"`, the first host lowercased, brackets around an IPv6 address left out); `nil` for another shape.
    static func connectionRedirect(_ entry: String) -> (from: String, to: String)? {
        var rest = Substring(entry)
        // A host (bracketed, or up to the next colon), then its port (digits, or none) and the colon after it.
        func part(endsLine: Bool) -> (host: Substring, port: Substring)? {
            let host: Substring
            if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { return nil }
                host = rest[rest.index(after: rest.startIndex)..<close]
                rest = rest[rest.index(after: close)...]
            } else {
                host = rest.prefix { $0 != ":" }
                rest = rest.dropFirst(host.count)
            }
            // The target's port may be left out with its colon (curl takes `h:80:x` as `h:80:x:`).
            if endsLine, rest.isEmpty { return (host, "") }
            guard rest.hasPrefix(":") else { return nil }
            rest = rest.dropFirst()
            let port = endsLine ? rest : rest.prefix { $0 != ":" }
            rest = rest.dropFirst(port.count)
            guard port.allSatisfy({ $0.isASCII && $0.isNumber }), port.isEmpty || (Int(port) ?? .max) <= 65_535 else { return nil }
            if !endsLine {
                guard rest.hasPrefix(":") else { return nil }
                rest = rest.dropFirst()
            }
            return (host, port)
        }
        guard let from = part(endsLine: false), let to = part(endsLine: true) else { return nil }
        return ("\(from.host.lowercased()):\(from.port)", "\(to.host):\(to.port)")
    }

    /// The user's home folder, for `~/.netrc`: `HOME`, else the password database's, as curl finds it.
    static var homeFolder: String {
        if let home = ProcessInfo.processInfo.environment["HOME"], !home.isEmpty { return home }
        guard let entry = getpwuid(getuid()), let folder = entry.pointee.pw_dir else { return "" }
        return String(cString: folder)
    }

    /// The `Authorization` a redirect to `url` sends under `-n` (the `.netrc`'s login for its host, Basic), as curl
    /// looks the file up for each host it goes to; `nil` when -n, --basic or the file give none, or -u or -H decide.
    func netrcAuthorization(options: RequestOptions) -> (@Sendable (URL) -> String?)? {
        guard options.user == nil, authMethod == .basic, case .success(let file)? = options.netrc,
              let lines = try? options.headerLines.get(),
              !lines.added.contains(where: { $0.name == .authorization }), !lines.removed.contains(.authorization) else { return nil }
        let overrides = options.netrcOverridesURL
        return { url in
            guard ["http", "https", "ws", "wss"].contains(url.scheme?.lowercased() ?? ""),
                  let (login, password) = file.credential(for: url, overridesURL: overrides) else { return nil }
            return Credential(user: login, password: password).basicAuthorization
        }
    }

    /// What answers HTTP challenges under `--digest` or `--anyauth`, with `-u`'s credentials or else the URL's user
    /// info (under `--basic`, `-u`'s go unasked with each request instead), or `nil`.
    var challengeAnswers: UserCredentials? {
        guard authMethod != .basic else { return nil }
        return UserCredentials(user.map(Self.credential), methods: authMethod.answers)
    }

    /// `USER:PASSWORD` as `-u` and `-U` take it: the password after the first colon, empty without one.
    static func credential(_ text: String) -> Credential {
        let pair = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        return Credential(user: pair[0], password: pair.count > 1 ? pair[1] : "")
    }

    /// The request for `url` that `options` describe.
    func makeRequest(_ url: URL, options: RequestOptions) throws -> LoadRequest {
        var request = LoadRequest(url: url)
        let lines: HeaderLines
        do {
            lines = try options.headerLines.get()
        } catch {
            switch error {
            case .malformed: throw LoadError(.badURL, url: url, reason: error.description)
            case .unreadable(let cause, _): throw LoadError(.requestBodyStreamExhausted, url: url, reason: error.description, underlying: cause.cause)
            }
        }
        let (added, removed) = (lines.added, lines.removed)
        request.headerFields.append(contentsOf: added)
        // -n: the URL's host's login from .netrc, unless -u gives one: for HTTP(S) under --basic sent ahead as -u's is
        // (and looked up again for each redirect's host, ``TransferEvents``), else as the URL's user info, which the
        // FTP handler logs in with and --digest or --anyauth answer a challenge with.
        if options.user == nil, let netrc = options.netrc {
            let file: Netrc
            do {
                file = try netrc.get()
            } catch {
                throw LoadError(.requestBodyStreamExhausted, url: url, reason: "-n: \(error)", underlying: error)
            }
            if let (login, password) = file.credential(for: url, overridesURL: options.netrcOverridesURL),
               var parts = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
                let ahead = authMethod == .basic && ["http", "https", "ws", "wss"].contains(request.scheme)
                (parts.user, parts.password) = ahead ? (nil, nil) : (login, password)
                if let withLogin = parts.url { request.url = withLogin }
                if ahead, request.headerFields[.authorization] == nil, !removed.contains(.authorization) {
                    request.headerFields[.authorization] = Credential(user: login, password: password).basicAuthorization
                }
            }
        }
        if let user = options.user, authMethod == .basic || !(request.scheme == "http" || request.scheme == "https") {
            if request.scheme == "http" || request.scheme == "https" {
                // A -H Authorization (or -H 'Authorization:', none) wins, as curl's custom fields win over its own.
                if request.headerFields[.authorization] == nil, !removed.contains(.authorization) {
                    request.headerFields[.authorization] = Self.credential(user).basicAuthorization
                }
            } else if url.user == nil, var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) {
                // Other schemes (FTP) log in with the URL's user info, as curl's -u does for them.
                let credential = Self.credential(user)
                parts.user = credential.user
                parts.password = credential.password
                if let withUser = parts.url { request.url = withUser }
            }
        }
        // The URL's own user and password, with no -u, go ahead as Basic, as curl sends them, rather than only in answer to
        // a challenge (a server that answers 403 or 404 to a request without them sends none); after -H and -n, which win.
        if options.user == nil, authMethod == .basic, request.scheme == "http" || request.scheme == "https",
           let user = request.url.user(percentEncoded: false), request.headerFields[.authorization] == nil,
           !removed.contains(.authorization) {
            let password = request.url.password(percentEncoded: false) ?? ""
            request.headerFields[.authorization] = Credential(user: user, password: password).basicAuthorization
        }
        // --oauth2-bearer after -H and -u, whose Authorization (or -H 'Authorization:', none) wins.
        if let bearerToken, ["http", "https", "ws", "wss"].contains(request.scheme), request.headerFields[.authorization] == nil,
           !removed.contains(.authorization) {
            request.headerFields[.authorization] = "Bearer " + bearerToken
        }
        // After -H, whose fields of these names win, as curl's do.
        if let userAgent = options.userAgent, !userAgent.isEmpty, request.headerFields[.userAgent] == nil {
            request.headerFields[.userAgent] = userAgent
        }
        if let referer = options.referer, request.headerFields[.referer] == nil { request.headerFields[.referer] = referer }
        if let range = byteRange { request.headerFields[.range] = "bytes=" + range }
        // -z's and --etag-compare's conditions, over HTTP(S), unless -H states the field (or takes it away), as curl's
        // custom fields win.
        if request.scheme == "http" || request.scheme == "https" {
            let etag: String?
            do {
                etag = try options.etagToMatch?.get()
            } catch {
                throw LoadError(.requestBodyStreamExhausted, url: url, reason: "--etag-compare: \(error)", underlying: error)
            }
            let conditions = [options.timeCondition?.field, etag.map { HTTPField(name: .ifNoneMatch, value: $0) }].compactMap { $0 }
            for field in conditions where request.headerFields[field.name] == nil && !removed.contains(field.name) {
                request.headerFields.append(field)
            }
        }
        // As curl's, -d and -F post, and -X names a method, for HTTP alone: an ftp: or file: URL is read (its handler would
        // refuse a POST or another method, and only -T stores a file there).
        let posts = !["ftp", "ftps", "file"].contains(request.scheme)
        let pieces: BodyPieces
        do {
            pieces = posts ? try options.bodyPieces.get() : .none
        } catch {
            throw LoadError(.requestBodyStreamExhausted, url: url, reason: error.description, underlying: error.cause.cause)
        }
        if options.dataInQuery, !pieces.isEmpty {
            // -G: joined as a body would be, after the query the URL has (with `&`).
            if var parts = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
                let added = Self.queryText(pieces.joined)
                parts.percentEncodedQuery = parts.percentEncodedQuery.map { $0.isEmpty ? added : $0 + "&" + added } ?? added
                guard let withQuery = parts.url else {
                    throw LoadError(.badURL, url: url, reason: "-G: the pieces do not make a query ('\(added.prefix(200))')")
                }
                request.url = withQuery
            } else {
                throw LoadError(.badURL, url: url, reason: "-G: the URL's query cannot be taken apart to add the pieces")
            }
        } else if !pieces.isEmpty {
            request.method = .post
            request.body = pieces.streamedFile.map { .file(URL(fileURLWithPath: $0)) } ?? .bytes(pieces.joined)
            if pieces.isForm, request.headerFields[.contentType] == nil {
                request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            }
            if pieces.isJSON {
                if request.headerFields[.contentType] == nil { request.headerFields[.contentType] = "application/json" }
                if request.headerFields[.accept] == nil { request.headerFields[.accept] = "application/json" }
            }
        }
        if !options.form.isEmpty, posts {
            request.method = .post
            // A type of the caller's own (-H) is kept, with the boundary added as curl does, or with its own
            // boundary, which the body then uses.
            let own = request.headerFields[.contentType].flatMap { $0.isEmpty ? nil : $0 }
            let ownBoundary = own.flatMap { MIMEType($0)?.parameter("boundary") }.flatMap { $0.isEmpty ? nil : $0 }
            let form = try MultipartForm(options.form, url: url,
                                         boundary: ownBoundary ?? MultipartForm.newBoundary())
            request.body = form.requestBody(url: url)
            if let own {
                request.headerFields[.contentType] = ownBoundary != nil ? own : own + "; boundary=" + form.boundary
            } else {
                request.headerFields[.contentType] = form.contentType
            }
        }
        if let uploadFile = options.uploadFile {
            request.method = .put
            let file = URL(fileURLWithPath: uploadFile == "-" ? "/dev/stdin" : uploadFile)
            // Checked before connecting, as curl does: a server told to store a file empties the one it has.
            var isFolder = false
            guard uploadFile == "-" || (FileManager.default.fileExists(atPath: file.path, isDirectory: &isFolder) && !isFolder
                                        && FileManager.default.isReadableFile(atPath: file.path)) else {
                throw LoadError(.requestBodyStreamExhausted, url: url, reason: "cannot read \(uploadFile)")
            }
            if options.readsUploadOnce {
                do {
                    request.body = .bytes(try InputFile.contents(of: uploadFile))
                } catch {
                    throw LoadError(.requestBodyStreamExhausted, url: url, reason: "-T: \(error)", underlying: error.cause)
                }
            } else {
                request.body = .file(file)
            }
            // To a URL that names a folder, under the file's own name, as curl does.
            let path = request.url.path(percentEncoded: true)
            if uploadFile != "-", path.isEmpty || path.hasSuffix("/"),
               var parts = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
                parts.percentEncodedPath = (path.isEmpty ? "/" : path) + Self.percentEncodedSegment(file.lastPathComponent)
                if let named = parts.url { request.url = named }
            }
        }
        if options.headOnly { request.method = .head }
        // As given, as curl sends it: methods are case-sensitive (checked to be a token by makeConfiguration).
        if posts, let method = options.method, let given = HTTPRequest.Method(method) { request.method = given }
        // Any type will do, as curl says on every HTTP request (-H 'Accept:' takes it away below): some servers and
        // proxies answer a request without Accept with a 406, or with another representation.
        if request.scheme == "http" || request.scheme == "https", request.headerFields[.accept] == nil {
            request.headerFields[.accept] = "*/*"
        }
        for name in removed { request.headerFields[name] = nil }
        return request
    }

    /// `bytes` as they may stand in a URL's query: a byte no query may hold (a space, a quote, a byte above ASCII, a `%`
    /// that starts no `%XX`) as `%XX`, the rest as given, so that `-G -d 'a=b c'` goes as `a=b%20c` (as curl sends it)
    /// and an encoded piece stays as it is.
    static func queryText(_ bytes: Data) -> String {
        let kept = Set("!$&'()*+,;=:@/?".utf8)
        return PercentEncoding.encode(bytes: bytes, keepingEscapes: true) { PercentEncoding.isUnreserved($0) || kept.contains($0) }
    }

    /// `-r`'s range as it is asked for: a lone number `N` is `N-`, as curl reads it.
    var byteRange: String? {
        guard let range, !range.isEmpty, range.allSatisfy({ $0.isASCII && $0.isNumber }) else { return range }
        return range + "-"
    }

    /// A size as curl's `--max-filesize` takes it: bytes, or a number with `K`, `M` or `G` (powers of 1024, either
    /// case); `nil` when it is none.
    static func byteCount(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["k": 1 << 10, "m": 1 << 20, "g": 1 << 30]
        guard let last = text.last else { return nil }
        let unit = units[Character(last.lowercased())]
        guard let number = Int64(unit == nil ? text : String(text.dropLast())), number >= 0 else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: unit ?? 1)
        return overflow ? nil : bytes
    }

    /// `proxy` (a URL, or `host:port`, as libcurl reads one) with `login` as its user info, the user and password
    /// percent-encoded (libcurl decodes them); one with a login of its own keeps it, as curl 7.88 does with `-U`.
    static func proxy(_ proxy: String, login: Credential) -> String {
        let encode = { (text: String) in PercentEncoding.encode(text) { PercentEncoding.isUnreserved($0) } }
        let schemeEnd = proxy.firstRange(of: "://")?.upperBound ?? proxy.startIndex
        let rest = proxy[schemeEnd...]
        // A login already there comes before the host, so before any path.
        guard !rest[..<(rest.firstIndex(of: "/") ?? rest.endIndex)].contains("@") else { return proxy }
        return String(proxy[..<schemeEnd]) + encode(login.user) + ":" + encode(login.password) + "@" + String(rest)
    }

    /// `name` as one path segment: every byte but letters, digits and `-._~!$&'()*+,=:@` percent-encoded.
    static func percentEncodedSegment(_ name: String) -> String {
        let kept = Set("!$&'()*+,=:@".utf8)
        return PercentEncoding.encode(name) { PercentEncoding.isUnreserved($0) || kept.contains($0) }
    }
}
