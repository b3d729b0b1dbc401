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

/// The `loadurl` command: loads each URL in turn, of any registered scheme, and writes its body out.
///
/// Options are spelled as curl spells them. Run it in-process with ``execute()`` (tests do, after
/// registering schemes of their own); the executable calls `LoadURL.main()`.
public struct LoadURL: AsyncParsableCommand, Sendable {
    /// The command's name, help text and exit codes.
    public static let configuration = CommandConfiguration(
        commandName: "loadurl",
        abstract: "Load URLs of any registered scheme (data:, file:, …) and write their bodies out.",
        discussion: """
        Each URL's body goes to standard output in order, or to the file given by the -o or -O that pairs \
        with it (the first -o/-O with the first URL, and so on). A failed URL does not stop the others \
        (unless --fail-early); the exit status is that of the last failure. With -Z the transfers run at once, and standard output still \
        gets the bodies and -w lines in the order of the URLs.

        --next (-:) starts another operation: the options after it hold for the URLs after it, but -v, -s, -S, \
        --no-progress-meter, -Z and --parallel-max hold for every operation. Operations run one after another \
        (with -Z, all their transfers at once) and share their cookies (in those that -b or -c turn the jar on for).

        Exit status (curl's numbers):
          0  success                          35  TLS failure
          1  unsupported scheme               36  -C, -r: the offset is past the end
          2  usage                            37  file missing or unreadable
          3  malformed URL                    47  too many redirects
          5  proxy's name not found           52  closed without a response
          6  host not found                   56  connection lost, bad response,
          7  cannot connect                       client certificate refused
          9  FTP folder not entered           58  client certificate unusable
         16  server broke HTTP/2
         18  body cut short                   60  untrusted or mismatched certificate
         21  FTP command (-Q) refused         61  cannot decode body
         22  HTTP error with -f               63  body too large
         23  cannot write output              67  login denied
         25  server refused the upload        78  remote resource not found
         26  cannot read upload or -K file    90  pinned public key not matched
         28  timed out (-m, -y/-Y too)        92  server reset the HTTP/2 stream
         33  -C: the rest cannot be had       97  SOCKS proxy refused or failed
                                              99  other
                                             130  cancelled
        """
    )

    /// The URLs to load, in order.
    @Argument(help: "URLs to load, e.g. data:,Hello file:///etc/hostname (without a scheme, http:// is assumed).")
    public var urls: [String] = []

    /// URLs given with curl's `--url`, whatever they start with: ``parseQuickly(_:)`` puts each among ``urls`` in its
    /// place, so this stays empty but for a command ArgumentParser parses itself (`parse(_:)`).
    @Option(name: .customLong("url"), help: "Load URL (as a URL given alone, even one that starts with -).")
    public var urlOptions: [String] = []

    /// Output files, paired with the URLs in order; `-` is standard output.
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the next URL's body to FILE ('-' for stdout).")
    public var outputs: [String] = []

    /// How many URLs (in order, after those given -o) are saved under their remote names, for a command ArgumentParser
    /// parses itself (`parse(_:)`); ``parseQuickly(_:)`` puts each `-O` in its place in ``outputs`` instead.
    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: "Save the next URL's body under its remote file name.")
    public var remoteNames: Int

    /// Config files whose lines are read as options in their place, curl's `-K`: read by
    /// ``parseQuickly(_:)`` before the rest, so that this stays empty (it names the option for `--help`).
    @Option(name: [.customShort("K"), .customLong("config")], help: "Read options from FILE ('-' for stdin), one per line as curl's -K: 'silent', 'output = a.txt', 'url = \"URL\"', '# comment'.")
    public var config: [String] = []

    /// Take `{}` and `[]` in the URLs as written, not as globs, curl's `-g`.
    @Flag(name: [.customShort("g"), .customLong("globoff")], help: "Take {} and [] in URLs as written: no globs (by default {a,b} and [1-9], [a-z], [01-10:2] name a URL per value, and -o's #1, #2 take the values).")
    public var globOff = false

    /// Save every URL under its remote name.
    @Flag(name: .customLong("remote-name-all"), help: "Save every URL's body under its remote file name.")
    public var remoteNameAll = false

    /// The folder for -o and -O files.
    @Option(name: .customLong("output-dir"), help: "Put -o and -O files in DIR.")
    public var outputDirectory: String?

    /// Create missing folders for output files.
    @Flag(name: .customLong("create-dirs"), help: "Create the folders an output file needs.")
    public var createDirectories = false

    /// Print each response's head before its body.
    @Flag(name: [.customShort("i"), .customLong("include")], help: "Print the response head (status and header fields) before the body.")
    public var include = false

    /// Print the version, the schemes and the features, as curl's `-V` does, and load nothing.
    @Flag(name: [.customShort("V"), .customLong("version")], help: "Print the version, the schemes it loads and its features, then exit.")
    public var showsVersion = false

    /// No progress meter and no error messages.
    @Flag(name: [.customShort("s"), .customLong("silent")], help: "Silent: no progress meter, no error messages.")
    public var silent = false

    /// Tell each exchange with a server on standard error, as curl's `-v` does.
    @Flag(name: [.customShort("v"), .customLong("verbose")],
          help: "Tell each exchange with a server on standard error: the connection, the request as sent (> lines), the response head (< lines).")
    public var verbose = false

    /// With -s, still print error messages.
    @Flag(name: [.customShort("S"), .customLong("show-error")], help: "With -s, still print error messages.")
    public var showError = false

    /// Treat an HTTP status of 400 or more as a failure (exit 22) and print no body.
    @Flag(name: [.customShort("f"), .customLong("fail")], help: "Fail (exit 22) on an HTTP status of 400 or more, printing no body.")
    public var failOnHTTPError = false

    /// As -f, but the body of an error response is written out too.
    @Flag(name: .customLong("fail-with-body"), help: "Fail (exit 22) on an HTTP status of 400 or more, after writing its body.")
    public var failWithBody = false

    /// Where each HTTP response head goes, curl's `-D`.
    @Option(name: [.customShort("D"), .customLong("dump-header")], help: "Write each HTTP response head received (a redirect's too) to FILE ('-' for stdout, not with -Z).")
    public var dumpHeader: String?

    /// A summary printed after each transfer.
    @Option(name: [.customShort("w"), .customLong("write-out")], help: "Print FORMAT (or @FILE's contents) after each transfer: %{url} %{http_code} %{http_version} %{content_type} %{size_download} %{time_total} %{exitcode} %{errormsg} %{remote_ip} %{remote_port} %{local_ip} %{local_port} %{num_connects} %{num_redirects} %{time_connect} %{time_appconnect} %{time_pretransfer} %{time_starttransfer} %{urlnum} %{filename_effective} %{method} %{num_headers} %{redirect_url} %{json} %header{NAME}.")
    public var writeOut: String?

    /// The longest a single transfer may take.
    @Option(name: [.customShort("m"), .customLong("max-time")], help: "Fail a transfer that takes longer than SECONDS.")
    public var maxTime: Double?

    /// The method, curl's `-X`.
    @Option(name: [.customShort("X"), .customLong("request")], help: "Use METHOD instead of GET (or POST with -d, PUT with -T).")
    public var method: String?

    /// Extra header fields, `Name: value`.
    @Option(name: [.customShort("H"), .customLong("header")], help: "Send the header field 'Name: value' (repeatable).")
    public var headers: [String] = []

    /// Pieces of a body to POST, as text (`@file` reads a file, `@-` standard input, without their line breaks),
    /// sent as a form unless -H sets a Content-Type. Pieces of -d and --data-binary are joined with `&`, as curl does.
    @Option(name: [.customShort("d"), .customLong("data"), .customLong("data-ascii")], help: "POST DATA (or @FILE, line breaks removed) as application/x-www-form-urlencoded (repeatable, joined with &).")
    public var data: [String] = []

    /// Pieces of a form body sent as written, a leading `@` too (curl's `--data-raw`, which browsers' "Copy as cURL"
    /// writes). ``parseQuickly(_:)`` keeps them among the `-d` pieces, in the line's order (``rawDataMark``).
    @Option(name: .customLong("data-raw"), help: "POST DATA as -d does, but as written: a leading @ names no file (repeatable, joined with &).")
    public var dataRaw: [String] = []

    /// Log in with the `.netrc` file in the home folder, curl's `-n`: the login and password of the URL's host, over
    /// the URL's own, unless `-u` gives one.
    @Flag(name: [.customShort("n"), .customLong("netrc")], help: "Log in with ~/.netrc's login and password for the URL's host (not with -u or a URL's own).")
    public var netrc = false

    /// As ``netrc``, with no failure when the file is missing, curl's `--netrc-optional`.
    @Flag(name: .customLong("netrc-optional"), help: "As -n, but a missing ~/.netrc is no failure.")
    public var netrcOptional = false

    /// As ``netrc`` with another file, curl's `--netrc-file`.
    @Option(name: .customLong("netrc-file"), help: "As -n, with FILE instead of ~/.netrc.")
    public var netrcFile: String?

    /// A bearer token sent as `Authorization: Bearer TOKEN` to HTTP(S) and WebSocket URLs (a -H Authorization, or -u's
    /// Basic, wins), curl's `--oauth2-bearer`; like `-u`'s credentials, it is not sent on to another origin after a redirect.
    @Option(name: .customLong("oauth2-bearer"), help: "Send TOKEN as an OAuth 2 bearer token (Authorization: Bearer TOKEN).")
    public var bearerToken: String?

    /// The `User-Agent` to send, curl's `-A` (a `-H User-Agent:` wins).
    @Option(name: [.customShort("A"), .customLong("user-agent")], help: "Send NAME as the User-Agent.")
    public var userAgent: String?

    /// The `Referer` to send, curl's `-e`.
    @Option(name: [.customShort("e"), .customLong("referer")], help: "Send URL as the Referer; with ';auto' (URL;auto or ;auto), each redirect followed sends the URL it comes from.")
    public var referer: String?

    /// Pieces of a form body, URL-encoded as curl's `--data-urlencode` does.
    @Option(name: .customLong("data-urlencode"), help: "POST DATA URL-encoded: 'content', '=content', 'name=content', '@FILE' or 'name@FILE' (repeatable, joined with &).")
    public var dataURLEncoded: [String] = []

    /// The -d pieces go in the URL's query, with GET, curl's `-G`.
    @Flag(name: [.customShort("G"), .customLong("get")], help: "Put the -d, --data-binary and --data-urlencode pieces in the URL's query and send GET (HEAD with -I).")
    public var dataInQuery = false

    /// curl's `--etag-compare`: sends the ETag this file holds as `If-None-Match`; over HTTP(S).
    @Option(name: .customLong("etag-compare"), help: "Send the ETag FILE holds as If-None-Match (a missing FILE with --etag-save: an empty ETag). HTTP(S).")
    public var etagCompare: String?

    /// curl's `--etag-save`: writes the response's ETag to this file (empty without one); over HTTP(S).
    @Option(name: .customLong("etag-save"), help: "Write the response's ETag to FILE (an empty file without one). HTTP(S).")
    public var etagSave: String?

    /// curl's `-z`: only a resource modified after this date (or the named file's time), or with a leading `-` one not
    /// modified since; over HTTP(S).
    @Option(name: [.customShort("z"), .customLong("time-cond")],
            help: "Only if modified after TIME (a date, or a file's modification time; -TIME: only if not modified since). HTTP(S).")
    public var timeCondition: String?

    /// The bytes to ask for, curl's `-r`: `FIRST-LAST`, `FIRST-`, `-SUFFIX`, comma-separated.
    @Option(name: [.customShort("r"), .customLong("range")], help: "Ask for these bytes only: FIRST-LAST, FIRST- or -LAST_N (HTTP may take several, comma-separated).")
    public var range: String?

    /// Give the output file the resource's modification time, curl's `-R`.
    @Flag(name: [.customShort("R"), .customLong("remote-time")], help: "Give an output file the time the server says the resource was last modified.")
    public var remoteTime = false

    /// The largest body to take, curl's `--max-filesize`: bytes, or with a `K`, `M` or `G` suffix; 0 for no limit.
    @Option(name: .customLong("max-filesize"), help: "Fail (63) a transfer whose body is larger than BYTES (K, M, G suffixes; 0: no limit), before it starts when the size is announced.")
    public var maxFileSize: String?

    /// The most bytes per second each transfer's body may come at, curl's `--limit-rate`: bytes, or with a `K`, `M` or
    /// `G` suffix; 0 for no limit.
    @Option(name: .customLong("limit-rate"), help: "Take each response body at most SPEED bytes per second on average (K, M, G suffixes; 0: no limit).")
    public var limitRate: String?

    /// curl's `-Y`/`--speed-limit`: the slowest rate, in bytes per second, a transfer may keep up for `--speed-time`.
    @Option(name: [.customShort("Y"), .customLong("speed-limit")], help: "Abort (28) a transfer slower than SPEED bytes per second for --speed-time seconds (30 unless given).")
    public var speedLimit: Int64?

    /// curl's `-y`/`--speed-time`: for how long a transfer may be slower than `--speed-limit` before it is aborted.
    @Option(name: [.customShort("y"), .customLong("speed-time")], help: "Abort (28) a transfer slower than --speed-limit (1 byte per second unless given) for SECONDS on end.")
    public var speedTime: Double?

    /// The longest opening a connection may take, curl's `--connect-timeout`.
    @Option(name: .customLong("connect-timeout"), help: "Give up opening a connection after SECONDS (TLS included; 0: the default, 30).")
    public var connectTimeout: Double?

    /// Pieces of a body to POST, byte for byte (`@file` reads a file, `@-` standard input).
    @Option(name: .customLong("data-binary"), help: "POST DATA (or @FILE) byte for byte (repeatable, joined with &).")
    public var dataBinary: [String] = []

    /// Pieces of a JSON body to POST, byte for byte and joined with nothing between them (`@file` reads a file, `@-`
    /// standard input), with `Content-Type` and `Accept` set to `application/json` (a -H of either name wins), curl's `--json`.
    @Option(name: .customLong("json"), help: "POST DATA (or @FILE) as JSON, byte for byte, with Content-Type and Accept application/json (repeatable, joined with nothing).")
    public var json: [String] = []

    /// Parts of a `multipart/form-data` POST, as curl's -F: `name=value`, `name=@FILE` (the file uploaded),
    /// `name=<FILE` (its contents as the value); see ``FormPart``.
    @Option(name: [.customShort("F"), .customLong("form")], help: "POST a multipart form part: name=VALUE, name=@FILE (uploaded, ;type= ;filename=), name=<FILE (contents as value) (repeatable).")
    public var form: [String] = []

    /// Parts of a `multipart/form-data` POST whose value is sent as written: no `@`, `<` or `;` read.
    @Option(name: .customLong("form-string"), help: "POST a multipart form part name=VALUE, the value as written (repeatable).")
    public var formString: [String] = []

    /// A file to upload with PUT (`-` for standard input); to a URL ending in `/`, under the file's own name.
    @Option(name: [.customShort("T"), .customLong("upload-file")], help: "PUT the contents of FILE ('-' for stdin), streamed; to a URL ending in / under FILE's name.")
    public var uploadFile: String?

    /// Follow redirects (curl does not without it).
    @Flag(name: [.customShort("L"), .customLong("location")], help: "Follow redirects.")
    public var followRedirects = false

    /// `-L`, and the request's `Authorization` (from `-u`, `-H` or `--oauth2-bearer`) sent to every host it leads to.
    @Flag(name: .customLong("location-trusted"), help: "Like -L, and send the credentials (-u, -H Authorization, --oauth2-bearer) to every host a redirect leads to.")
    public var locationTrusted = false

    /// With `-L`, a `POST` stays a `POST`, with its body, after a 301 (curl's `--post301`).
    @Flag(name: .customLong("post301"), help: "With -L, keep a POST (and its body) a POST after a 301.")
    public var post301 = false

    /// With `-L`, a `POST` stays a `POST` after a 302 (curl's `--post302`).
    @Flag(name: .customLong("post302"), help: "With -L, keep a POST (and its body) a POST after a 302.")
    public var post302 = false

    /// With `-L`, a `POST` stays a `POST` after a 303 (curl's `--post303`).
    @Flag(name: .customLong("post303"), help: "With -L, keep a POST (and its body) a POST after a 303.")
    public var post303 = false

    /// The redirect statuses after which a `POST` stays a `POST` (``post301``, ``post302``, ``post303``).
    var statusesKeepingPOST: Set<Int> {
        Set([(post301, 301), (post302, 302), (post303, 303)].compactMap { $0.0 ? $0.1 : nil })
    }

    /// The most redirects to follow with -L; -1 for no limit.
    @Option(name: .customLong("max-redirs"), help: "Follow at most NUM redirects with -L (default 50, -1 for no limit).")
    public var maxRedirects: Int = 50

    /// Credentials for Basic authentication (or an FTP login); without a `:`, the password is asked for on the
    /// terminal (read from standard input when there is none).
    @Option(name: [.customShort("u"), .customLong("user")], help: "Send USER:PASSWORD with Basic authentication (with --digest or --anyauth, in answer to the server's challenge), answer a ws or wss handshake's Basic or Digest challenge with them, or log in to FTP with them.")
    public var user: String?

    /// Extra trusted root certificates.
    @Option(name: .customLong("cacert"), help: "Trust the CA certificates in the PEM FILE too.")
    public var caCertificates: String?

    /// The client certificate to show a server that asks for one, optionally with the key's passphrase after a `:`.
    @Option(name: [.customShort("E"), .customLong("cert")],
            help: "Show the client certificate in the PEM FILE (with its key unless --key; FILE:PASSPHRASE for an encrypted key) to a server that asks for one.")
    public var clientCertificate: String?

    /// The client certificate's private key, when it is not in the certificate's file.
    @Option(name: .customLong("key"), help: "The client certificate's private key, in the PEM FILE.")
    public var clientKey: String?

    /// The passphrase of an encrypted client key.
    @Option(name: .customLong("pass"), help: "The PASSPHRASE of the client certificate's encrypted key.")
    public var clientKeyPassphrase: String?

    /// Skip certificate verification.
    @Flag(name: [.customShort("k"), .customLong("insecure")], help: "Do not verify the server's certificate (dangerous).")
    public var insecure = false

    /// Public keys the server must have (curl's `--pinnedpubkey`).
    @Option(name: .customLong("pinnedpubkey"), help: ArgumentHelp("Refuse an https or wss server whose public key is not one of these: 'sha256//BASE64' (several joined with ';'), or a PEM or DER public key file (exit 90 on a mismatch).", valueName: "hashes"))
    public var pinnedPublicKey: String?

    /// The lowest TLS version: `--tlsv1.2` or `--tlsv1.3`, the last given winning, as in curl.
    @Flag(exclusivity: .chooseLast)
    public var tlsMinimum: TLSVersionChoice?

    /// The highest TLS version offered (curl's `--tls-max`).
    @Option(name: .customLong("tls-max"), help: ArgumentHelp("Offer no TLS version above VERSION: 1.2, 1.3 or default (https, wss, FTPS).", valueName: "VERSION"))
    public var tlsMaximum: String?

    /// `--ssl-reqd`: FTP over TLS (`AUTH TLS`) or fail.
    @Flag(name: .customLong("ssl-reqd"), help: "Require TLS for ftp:// URLs (AUTH TLS, explicit FTPS), or fail.")
    public var requireTLS = false

    /// `--ftp-create-dirs`: an FTP upload creates the folders its path names that are missing.
    @Flag(name: .customLong("ftp-create-dirs"), help: "With -T to an ftp:// URL, create the folders of its path that are missing.")
    public var ftpCreateDirectories = false

    /// `-a`/`--append`: an FTP upload adds to the end of its file rather than replacing it.
    @Flag(name: [.customShort("a"), .customLong("append")], help: "With -T to an ftp:// URL, append to the file (APPE) instead of replacing it.")
    public var appendUpload = false

    /// `--proxy-header`: fields for an HTTP proxy alone, curl's.
    @Option(name: .customLong("proxy-header"), help: ArgumentHelp("Send the field 'NAME: VALUE' to an HTTP proxy alone: with each CONNECT, and with each request it forwards.", valueName: "header"))
    public var proxyHeaders: [String] = []

    /// `-Q`/`--quote`: FTP commands to send, curl's: after login, or with `-` after the transfer, with `+` right before it.
    @Option(name: [.customShort("Q"), .customLong("quote")],
            help: ArgumentHelp("Send the FTP command CMD once logged in, before the transfer; -CMD after the transfer, +CMD right before it; *CMD (after any - or +) goes on if the server refuses it. A refusal exits 21.", valueName: "CMD"))
    public var quote: [String] = []

    /// `-l`/`--list-only`: an FTP folder's listing gives the names alone.
    @Flag(name: [.customShort("l"), .customLong("list-only")], help: "List an ftp:// folder's names alone (NLST), not the server's long listing.")
    public var listOnly = false

    /// `-P`/`--ftp-port`: active FTP, the server connecting back to the address given (an address, a host name or an
    /// interface, with `:port` or `:first-last` to listen on), or with `-` to the control connection's own address.
    @Option(name: [.customShort("P"), .customLong("ftp-port")],
            help: ArgumentHelp("Active FTP: the server connects back to <address> (an IP address, host name or interface, with :port or :first-last), or with - to this host's address on the control connection.", valueName: "address"))
    public var ftpPort: String?

    /// `--ftp-pasv`: passive FTP, the default; of it and `-P`, the one given last wins.
    @Flag(name: .customLong("ftp-pasv"), help: "Passive FTP (the default); of it and -P, the last given wins.")
    public var ftpPassive = false

    /// `--ssl`: FTP over TLS when the server offers it.
    @Flag(name: .customLong("ssl"), help: "Use TLS for ftp:// URLs (AUTH TLS) when the server offers it.")
    public var tryTLS = false

    /// How `-u` answers an HTTP server: `--basic` (the default), `--digest` or `--anyauth`; the last given wins.
    @Flag(exclusivity: .chooseLast)
    public var authMethod: AuthMethodChoice = .basic

    /// Which HTTP versions https offers, and whether http speaks HTTP/2: `--http2` (the default), `--http1.1` or
    /// `--http2-prior-knowledge`; the last given wins, as in curl.
    @Flag(exclusivity: .chooseLast)
    public var httpVersion: HTTPVersionChoice = .http2

    /// HEAD: print the response head only.
    @Flag(name: [.customShort("I"), .customLong("head")], help: "Send HEAD and print the response head only.")
    public var headOnly = false

    /// Where what goes to standard error goes instead, curl's `--stderr` (`-`: standard output); for the whole command
    /// line, run as the executable (``mainQuickly(_:)``): run in a process of one's own (``execute()``), standard error
    /// is left as it is.
    @Option(name: .customLong("stderr"), help: "Write what goes to standard error to FILE instead ('-': standard output).")
    public var standardErrorPath: String?

    /// Connection redirects, curl's `--connect-to HOST1:PORT1:HOST2:PORT2` (any part may be empty).
    @Option(name: .customLong("connect-to"), help: "For HOST1:PORT1 connect to HOST2:PORT2 instead (HOST1:PORT1:HOST2:PORT2, any part may be empty; repeatable). HTTP(S) and FTP.")
    public var connectTo: [String] = []

    /// Name-resolution overrides, `HOST:PORT:ADDRESS`.
    @Option(name: .customLong("resolve"), help: "Connect to ADDRESS for HOST:PORT (HOST:PORT:ADDRESS, repeatable).")
    public var resolve: [String] = []

    /// With `-O`, the name the server gives in `Content-Disposition` in place of the URL's.
    @Flag(name: [.customShort("J"), .customLong("remote-header-name")], help: "With -O, save under the name the server's Content-Disposition gives (its last part only), not the URL's; an existing file is not overwritten (exit 23).")
    public var remoteHeaderName = false

    /// Send the URL's path as written, its `.` and `..` segments too.
    @Flag(name: .customLong("path-as-is"), help: "Send the URL's path as written: without it, /./ and /../ segments are taken out first, as curl does.")
    public var pathAsIs = false

    /// `-4` or `-6`: the IP version connections use; either when neither is given.
    @Flag(exclusivity: .chooseLast)
    public var ipVersion: IPVersionChoice?

    /// A Unix socket that HTTP(S) and WebSocket connections go to instead of the network.
    @Option(name: .customLong("unix-socket"), help: ArgumentHelp("Connect to the Unix socket PATH instead of the network (HTTP, HTTPS, WebSocket); no proxy is used.", valueName: "PATH"))
    public var unixSocket: String?

    /// Where a download goes on from: `-` for the end of its output file, or a byte offset.
    @Option(name: [.customShort("C"), .customLong("continue-at")], help: "Go on with a download from byte OFFSET, or with '-' from the end of its output file, appending the rest; a partial file is left as it was if the server cannot send the rest (exit 33).")
    public var continueAt: String?

    /// Ask for a compressed response and decode it.
    @Flag(name: .customLong("compressed"), help: "Ask for a gzip, deflate or brotli (br) response and write it decoded.")
    public var compressed = false

    /// Cookies to send (`NAME=VALUE; …`), or files of cookies to start the jar with.
    @Option(name: [.customShort("b"), .customLong("cookie")], help: "Send 'NAME=VALUE; …' as cookies, or read FILE's cookies (Netscape format, as curl writes) into the cookie jar (repeatable).")
    public var cookies: [String] = []

    /// Where the jar's cookies are written when the transfers end.
    @Option(name: [.customShort("c"), .customLong("cookie-jar")], help: "Keep cookies between the URLs and write them all to FILE at the end ('-' for stdout), in Netscape format.")
    public var cookieJar: String?

    /// The HSTS cache file (curl's `--hsts`): HTTP Strict Transport Security is on only with it.
    @Option(name: .customLong("hsts"), help: "Keep HTTP Strict Transport Security: go to https for the hosts FILE names, and write back to FILE, at the end, the hosts whose servers asked for it (curl's format; '' keeps them in memory alone).")
    public var hsts: String?

    /// Leave session cookies out of the -b files.
    @Flag(name: [.customShort("j"), .customLong("junk-session-cookies")], help: "Leave the session cookies of -b files out, as a new browser session would.")
    public var junkSessionCookies = false

    /// The HTTP proxy for every http and https URL; `""` for none, whatever the environment says.
    @Option(name: [.customShort("x"), .customLong("proxy")], help: "Send http, https, ws and wss requests through the proxy [http://][USER:PASSWORD@]HOST[:PORT], https://[USER:PASSWORD@]HOST[:PORT] (TLS to the proxy; port 443 if none), socks5h://[USER:PASSWORD@]HOST[:PORT] or socks4a://[USER@]HOST[:PORT] (socks5:// and socks4:// resolve the name here; port 1080 if none); '' for none. Without it, http_proxy, https_proxy and all_proxy are read, as curl reads them.")
    public var proxy: String?

    /// curl's `--socks5`: `-x socks5://` with this host and port.
    @Option(name: .customLong("socks5"), help: ArgumentHelp("As -x socks5://HOST[:PORT]: a SOCKS5 proxy, the name resolved here.", valueName: "host[:port]"))
    public var socks5: String?
    /// curl's `--socks5-hostname`: `-x socks5h://` with this host and port.
    @Option(name: .customLong("socks5-hostname"), help: ArgumentHelp("As -x socks5h://HOST[:PORT]: a SOCKS5 proxy that resolves the name.", valueName: "host[:port]"))
    public var socks5Hostname: String?
    /// curl's `--socks4`: `-x socks4://` with this host and port.
    @Option(name: .customLong("socks4"), help: ArgumentHelp("As -x socks4://HOST[:PORT]: a SOCKS4 proxy, the name resolved here.", valueName: "host[:port]"))
    public var socks4: String?
    /// curl's `--socks4a`: `-x socks4a://` with this host and port.
    @Option(name: .customLong("socks4a"), help: ArgumentHelp("As -x socks4a://HOST[:PORT]: a SOCKS4a proxy that resolves the name.", valueName: "host[:port]"))
    public var socks4a: String?

    /// Extra trusted root certificates for an HTTPS proxy (not --cacert's, as curl keeps them apart).
    @Option(name: .customLong("proxy-cacert"), help: "Trust the CA certificates in the PEM FILE too, for an HTTPS proxy's certificate (--cacert's are for servers).")
    public var proxyCACertificates: String?

    /// Skip the HTTPS proxy's certificate verification.
    @Flag(name: .customLong("proxy-insecure"), help: "Do not verify an HTTPS proxy's certificate (dangerous).")
    public var proxyInsecure = false

    /// `http` requests through an HTTP proxy's tunnel too.
    @Flag(name: [.customShort("p"), .customLong("proxytunnel")], help: "Send http requests too through an HTTP proxy in a CONNECT tunnel, rather than forwarded by it.")
    public var proxyTunnel = false

    /// Hosts reached directly even with a proxy.
    @Option(name: .customLong("noproxy"), help: "Reach these hosts directly (comma-separated; each covers the hosts beneath it; '*' for all), in place of no_proxy.")
    public var noProxy: String?

    /// The proxy's credentials.
    @Option(name: [.customShort("U"), .customLong("proxy-user")], help: "Log in to the proxy as USER:PASSWORD (Basic to an HTTP proxy, RFC 1929 to a SOCKS5 one; to a SOCKS4 one the user goes as its user ID, the password unused).")
    public var proxyUser: String?

    /// Never draw the progress meter.
    @Flag(name: .customLong("no-progress-meter"), help: "Never draw the progress meter.")
    public var noProgressMeter = false

    /// How many times a transfer is tried again after a transient failure.
    @Option(name: .customLong("retry"),
            help: "Try a transfer up to NUM more times after a transient failure: a timeout, an HTTP 408, 429, 500, 502, 503 or 504, an FTP 4xx reply.")
    public var retries = 0

    /// The wait before each retry.
    @Option(name: .customLong("retry-delay"),
            help: "Wait SECONDS before each retry (0: 1 s, doubling up to 10 minutes); a server's Retry-After goes first.")
    public var retryDelay: Double = 0

    /// How long after a transfer's first start a retry may begin.
    @Option(name: .customLong("retry-max-time"), help: "Begin no retry later than SECONDS after the transfer's first start (0: no limit).")
    public var retryMaxTime: Double = 0

    /// Whether a refused connection is retried.
    @Flag(name: .customLong("retry-connrefused"), help: "With --retry, retry after a refused connection too.")
    public var retryConnectionRefused = false

    /// Whether every failure is retried.
    @Flag(name: .customLong("retry-all-errors"), help: "With --retry, retry after any failure of the load.")
    public var retryAllErrors = false

    /// Runs the transfers at once, up to ``parallelMax``.
    @Flag(name: [.customShort("Z"), .customLong("parallel")],
          help: "Run the transfers at once (at most --parallel-max); what goes to standard output still comes out in the order of the URLs.")
    public var parallel = false

    /// Taken as curl's `-N` is, with nothing to turn off: output is never buffered here (each piece of a body is
    /// written as it comes).
    @Flag(name: [.customShort("N"), .customLong("no-buffer")], help: "Taken for curl's sake: output is never buffered (each piece is written as it comes).")
    public var noBuffer = false

    /// Taken as curl's `-#` is: the progress meter here is a bar already (on a terminal, for a transfer that takes a while).
    @Flag(name: [.customShort("#"), .customLong("progress-bar")], help: "Taken for curl's sake: the progress meter is a bar already.")
    public var progressBar = false

    /// Taken as curl's `-q` is, with nothing to turn off: no `.curlrc` is ever read here.
    @Flag(name: [.customShort("q"), .customLong("disable")], help: "Taken for curl's sake: no .curlrc is ever read.")
    public var disablesConfigFile = false

    /// Never write over a file that is there: the body goes to `NAME.1` … `NAME.100` instead, as curl's `--no-clobber`.
    @Flag(name: .customLong("no-clobber"), help: "Never write over an output file already there: use NAME.1 … NAME.100 instead (not with -C).")
    public var noClobber = false

    /// Remove the output file a transfer wrote when the transfer fails, as curl's `--remove-on-error`, but not one it
    /// appended to with `-C` (curl 7.88 removes that too, losing what an earlier transfer had fetched) nor one it never
    /// opened.
    @Flag(name: .customLong("remove-on-error"), help: "Remove the output file of a transfer that fails (not one it appended to with -C).")
    public var removeOnError = false

    /// Stop at the first transfer that fails, as curl's `--fail-early`: no later transfer starts, and the exit status is
    /// that failure's. With `-Z` the transfers already running are cancelled and nothing more goes to standard output.
    @Flag(name: .customLong("fail-early"), help: "Stop at the first transfer that fails: no later one starts; exit with its status.")
    public var failEarly = false

    /// With ``parallel``, how many transfers run at once.
    @Option(name: .customLong("parallel-max"), help: "With -Z, run at most NUM transfers at once (1 to 300; 0 for the default, 50).")
    public var parallelMax = 50

    /// Makes the command with no arguments; ArgumentParser fills it in.
    public init() {}

    /// Runs the command and exits with its status.
    public func run() async throws {
        let status = await execute()
        if status != 0 { throw ExitCode(status) }
    }

    /// Loads every URL and returns the exit status, without exiting. Registers the built-in schemes and the
    /// `archive:` plugin into the process-wide registry if they are not there yet.
    ///
    /// `@concurrent`: the loop runs on Swift's global executor, not on the main actor that calls it, so that
    /// each load does not hop to the main thread and back (measured: 5.8 → 3.4 context switches per URL,
    /// 5,000 URLs in 0.58–0.66 s instead of 0.71–1.02 s).
    @concurrent public func execute() async -> Int32 {
        await execute(cookieJar: nil)
    }

    /// ``execute()`` with the cookie jar that the operations of one command line share (``execute(_:)``): used
    /// when this command turns the jar on; `nil`, it makes its own.
    @concurrent func execute(cookieJar: CookieJar?) async -> Int32 {
        // -V: the version alone, whatever else the line asks, as curl's.
        if showsVersion {
            StandardStreams.output(Self.versionText())
            return 0
        }
        let operation: PreparedOperation
        switch prepared(cookieJar: cookieJar) {
        case .success(let ready): operation = ready
        case .failure(let failure): return failure.status
        }
        // The transfers start on an HTTP event loop: an HTTP response then wakes this loop where it is, not
        // a thread of the global executor (5,000 small GETs: 0.67–0.79 s → 0.53–0.68 s, a quarter less
        // CPU). A large body is written out from the global executor (see `transfer`), so that the socket
        // is read on one core while the output is written on the other. Handlers that block (file:, FTP)
        // run off the loop anyway (see `SchemeHandler.startLoading()`).
        let status = await withTaskExecutorPreference(HTTPSchemeHandler.taskExecutor()) {
            let command = operation.command
            guard parallel, command.urls.count > 1 else {
                var statuses: [Int32] = []
                for (index, text) in command.urls.enumerated() {
                    statuses.append(await command.transfer(text, index: index, session: operation.session, options: operation.options, ordered: nil))
                    if failEarly, statuses.last != 0 { break }
                }
                return LoadURLExit.lastFailure(statuses)
            }
            return LoadURLExit.lastFailure(await Self.transferAll(command.urls.indices.map { (operation, $0) }, width: parallelMax,
                                                                  failingEarly: failEarly))
        }
        return operation.finish(status: status)
    }

    /// The command made ready to run (``PreparedOperation``): the built-in schemes registered, its URLs expanded, its
    /// session open; or the status of why it cannot run, already reported.
    func prepared(cookieJar: CookieJar?) -> Result<PreparedOperation, PreparationFailure> {
        Self.registerBuiltInSchemes()
        signal(SIGPIPE, SIG_IGN)
        guard !urls.isEmpty else {
            report("no URL given (try --help)", status: LoadURLExit.usage)
            return .failure(PreparationFailure(status: LoadURLExit.usage))
        }
        var command: LoadURL
        do {
            command = try expandingGlobs()
        } catch {
            report(error.description, status: LoadURLExit.malformedURL)
            return .failure(PreparationFailure(status: LoadURLExit.malformedURL))
        }
        // -u USER and -U USER without a password: asked for, as curl asks, once per operation (after every operation's
        // options were checked); not -u's with --oauth2-bearer, whose token is the credential.
        if command.bearerToken == nil { command.user = TerminalPrompt.completing(command.user, whose: "host") }
        command.proxyUser = TerminalPrompt.completing(command.proxyUser, whose: "proxy")
        var configuration: LoaderSession.Configuration
        do {
            configuration = try command.makeConfiguration()
        } catch {
            // A usage error is told whatever -s says, as curl's are (and as the checks of several operations tell it).
            StandardStreams.error("loadurl: (\(LoadURLExit.usage)) \(error)\n")
            return .failure(PreparationFailure(status: LoadURLExit.usage))
        }
        let cookieEngine = CookieEngine(cookieArguments: cookies, jarPath: self.cookieJar, junkSessionCookies: junkSessionCookies,
                                        sharedJar: cookieJar)
        configuration.cookieStore = cookieEngine.store
        // As curl: no HSTS without --hsts.
        let hstsFile = hsts.map(HSTSCacheFile.init(path:))
        configuration.hstsStore = hstsFile?.store
        if insecure, !silent {
            StandardStreams.error("loadurl: warning: -k: server certificates are not verified\n")
        }
        if proxyInsecure, !silent {
            StandardStreams.error("loadurl: warning: --proxy-insecure: the HTTPS proxy's certificate is not verified\n")
        }
        var requestOptions = command.requestOptions
        // As curl, -s or not: a misspelt variable would otherwise print nothing, unnoticed.
        for name in TransferSummary.unknownVariables(in: requestOptions.writeOut) {
            StandardStreams.error("loadurl: warning: unknown --write-out variable: '\(name)'\n")
        }
        if let dumpHeader {
            do {
                requestOptions.headerDump = try HeaderDump(path: dumpHeader)
            } catch {
                report("-D: cannot write \(dumpHeader): \(error)", status: LoadURLExit.cannotWriteOutput)
                return .failure(PreparationFailure(status: LoadURLExit.cannotWriteOutput))
            }
        }
        let session = LoaderSession(configuration: configuration, delegate: command.challengeAnswers)
        return .success(PreparedOperation(command: command, session: session, options: requestOptions, cookieEngine: cookieEngine,
                                          hstsFile: hstsFile))
    }
}
