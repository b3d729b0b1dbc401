import FoundationEssentials
import HTTPTypes
import Loader

/// What `-w FORMAT` can print after each transfer, in curl's `%{name}` spelling.
struct TransferSummary {
    var url: URL
    var response: LoadResponse?
    var bytes: Int64 = 0
    var seconds: Double = 0
    var exitCode: Int32 = 0
    var error: LoadError?
    /// What `%{errormsg}` says of a failure that is no load error (`-f`'s HTTP error status), as curl's words.
    var failureMessage: String?
    /// The transfer's exchanges with servers (``TransferEvents``), when the format asks about them.
    var transactions: [LoadTransactionMetrics] = []
    /// Redirects followed (``TransferEvents``), when the format asks about exchanges.
    var redirects = 0
    /// The URL's place among the command line's, from 0 (`%{urlnum}`).
    var urlIndex = 0
    /// The file the body went to (`-o`, `-O`), `nil` for standard output (`%{filename_effective}`).
    var filename: String?
    /// The method of the request as made, for `%{method}` when no exchange was kept.
    var method: String?
    /// Request body bytes the last hop sent (`%{size_upload}`).
    var bytesSent: Int64 = 0

    /// The variables read from ``transactions``: a format without them collects none.
    static let metricsVariables = ["remote_ip", "remote_port", "local_ip", "local_port", "num_connects", "num_redirects",
                                   "time_namelookup", "time_connect", "time_appconnect", "time_pretransfer", "time_starttransfer",
                                   "time_redirect", "size_header", "size_request", "size_upload", "speed_upload", "method", "json",
                                   "size_download", "speed_download"]

    /// Every variable `%{…}` may name; curl warns of any other, and so do we.
    static let knownVariables: Set<String> = Set(metricsVariables + jsonVariables + ["response_code", "stderr", "stdout"])

    /// What `%{json}` holds, in this order: every variable above but `json`, the exchanges' among them.
    static let jsonVariables = ["url", "url_effective", "urlnum", "filename_effective", "method", "scheme", "http_code",
                                "http_version", "content_type", "num_headers", "redirect_url", "size_download", "speed_download",
                                "time_total", "exitcode", "errormsg", "remote_ip", "remote_port", "local_ip", "local_port",
                                "num_connects", "num_redirects", "time_namelookup", "time_connect", "time_appconnect",
                                "time_pretransfer", "time_redirect", "time_starttransfer", "size_header", "size_request",
                                "size_upload", "speed_upload"]
    /// The ones `%{json}` gives as numbers.
    static let jsonNumbers: Set<String> = ["urlnum", "http_code", "num_headers", "size_download", "speed_download", "time_total",
                                           "exitcode", "remote_port", "local_port", "num_connects", "num_redirects", "time_namelookup",
                                           "time_connect", "time_appconnect", "time_pretransfer", "time_redirect", "time_starttransfer",
                                           "size_header", "size_request", "size_upload", "speed_upload"]

    /// The names `format`'s `%{…}` give that are no variable, in order, each once: what curl warns of.
    static func unknownVariables(in format: String?) -> [String] {
        guard let format else { return [] }
        var unknown: [String] = []
        var rest = Substring(format)
        while let percent = rest.firstIndex(of: "%") {
            let after = rest[rest.index(after: percent)...]
            // `%%` is a percent sign, whatever follows it.
            if after.first == "%" {
                rest = after.dropFirst()
            } else if after.first == "{", let close = after.firstIndex(of: "}") {
                let name = String(after[after.index(after: after.startIndex)..<close])
                if !knownVariables.contains(name), !unknown.contains(name) { unknown.append(name) }
                rest = after[after.index(after: close)...]
            } else {
                rest = after
            }
        }
        return unknown
    }

    /// Whether `format` names a variable of ``metricsVariables``.
    static func needsMetrics(_ format: String?) -> Bool {
        guard let format else { return false }
        return metricsVariables.contains { format.contains("%{\($0)}") }
    }

    /// Expands `%{url}`, `%{url_effective}`, `%{http_code}`/`%{response_code}`, `%{content_type}`,
    /// `%{size_download}`, `%{time_total}`, `%{speed_download}`, `%{exitcode}`, `%{errormsg}`, `%{scheme}`, `%{http_version}`,
    /// ``metricsVariables`` (the last exchange's addresses, connections opened, redirects followed, seconds from the
    /// first exchange's start to the last new connection's start, TCP connect and TLS end, to the last request going out,
    /// to the last hop's start and to the last response's head, and the bytes of the heads and bodies), `%{urlnum}`,
    /// `%{filename_effective}`, `%{method}`, `%{num_headers}`, `%{redirect_url}`, `%{json}` (all of them as one JSON object),
    /// `%header{NAME}` (the last response's field), `%%` for a percent sign, and the escapes `\n`, `\r`, `\t`; unknown
    /// variables print nothing (``unknownVariables(in:)`` names them for a warning). What follows `%{stderr}` goes to
    /// standard error, and what follows `%{stdout}` back to standard output, as curl's: the result holds the pieces for
    /// each, in the template's order.
    func format(_ template: String) -> WriteOutText {
        var text = WriteOutText()
        var toError = false
        var rest = Substring(template)
        func append(_ piece: some StringProtocol) {
            guard !piece.isEmpty else { return }
            if let last = text.pieces.last, last.toError == toError {
                text.pieces[text.pieces.count - 1].text += piece
            } else {
                text.pieces.append((toError, String(piece)))
            }
        }
        while let index = rest.firstIndex(where: { $0 == "%" || $0 == "\\" }) {
            append(rest[..<index])
            rest = rest[index...]
            if rest.hasPrefix("%{stderr}") || rest.hasPrefix("%{stdout}") {
                toError = rest.hasPrefix("%{stderr}")
                rest = rest.dropFirst("%{stderr}".count)
            } else if rest.hasPrefix("%%") {
                append("%")
                rest = rest.dropFirst(2)
            } else if rest.hasPrefix("%{"), let close = rest.firstIndex(of: "}") {
                let name = rest[rest.index(rest.startIndex, offsetBy: 2)..<close]
                append(value(String(name)))
                rest = rest[rest.index(after: close)...]
            } else if rest.hasPrefix("%header{"), let close = rest.firstIndex(of: "}") {
                let name = rest[rest.index(rest.startIndex, offsetBy: 8)..<close]
                append(header(String(name)))
                rest = rest[rest.index(after: close)...]
            } else if rest.hasPrefix("\\"), rest.count >= 2 {
                let next = rest[rest.index(after: rest.startIndex)]
                switch next {
                case "n": append("\n")
                case "r": append("\r")
                case "t": append("\t")
                // Any other, a backslash too, as written (curl prints `\\` as two).
                default: append("\\\(next)")
                }
                rest = rest.dropFirst(2)
            } else {
                append(String(rest.first!))
                rest = rest.dropFirst()
            }
        }
        append(rest)
        return text
    }

    private func value(_ name: String) -> String {
        switch name {
        case "url": return url.absoluteStringHidingPassword
        case "url_effective": return (response?.url ?? url).absoluteStringHidingPassword
        case "http_code", "response_code": return response?.status.map { $0.code.zeroPadded(3) } ?? "000"
        case "content_type": return response?.headerFields[.contentType] ?? ""
        case "size_download": return String(downloaded)
        case "time_total": return seconds.fixed(6)
        case "speed_download": return String(Int64(Double(downloaded) / max(seconds, 1e-9)))
        case "exitcode": return String(exitCode)
        case "errormsg": return error.map { String(describing: $0) } ?? failureMessage ?? ""
        case "scheme": return url.scheme?.uppercased() ?? ""
        case "http_version":
            // As curl 7.88: "2", "1.1", "1" for HTTP/1.0, or "0" when no HTTP response came.
            switch response?.networkProtocolName {
            case "h2": return "2"
            case "http/1.1": return "1.1"
            case "http/1.0": return "1"
            default: return "0"
            }
        case "remote_ip": return transactions.last?.remoteAddress ?? ""
        case "remote_port": return String(transactions.last?.remotePort ?? 0)
        case "local_ip": return transactions.last?.localAddress ?? ""
        case "local_port": return String(transactions.last?.localPort ?? 0)
        case "num_connects": return String(transactions.count { !$0.isReusedConnection })
        case "num_redirects": return String(redirects)
        case "time_connect":
            // The last new connection's TCP connect: when its TLS began (right after), else when it was ready.
            let opened = transactions.last { $0.connectEndDate != nil }
            return since(opened?.secureConnectionStartDate ?? opened?.connectEndDate)
        case "time_appconnect":
            // The same connection as time_connect's: 0 when the last new one had no TLS.
            return since(transactions.last { $0.connectEndDate != nil }?.secureConnectionEndDate)
        case "time_pretransfer": return since(transactions.last?.requestStartDate)
        case "time_starttransfer": return since(transactions.last?.responseStartDate)
        case "time_namelookup":
            // The metrics have no lookup of their own: it is part of the connect, so this is when the last new connection
            // began (its lookup, then its TCP connect, which time_connect ends).
            return since(transactions.last { $0.connectStartDate != nil }?.connectStartDate)
        case "time_redirect":
            // Until the last hop began: the redirects before it, as curl's; 0 without one.
            return redirects > 0 ? since(transactions.last?.fetchStartDate) : since(nil)
        case "size_header": return String(transactions.compactMap(\.response).reduce(0) { $0 + $1.printableHead.utf8.count })
        case "size_request":
            // The heads as -v shows them, and the bodies sent.
            return String(transactions.reduce(Int64(0)) { $0 + Int64(Self.requestHeadSize($1)) + ($1.request.body?.knownLength ?? 0) })
        case "size_upload": return String(uploaded)
        case "speed_upload": return String(Int64(Double(uploaded) / max(seconds, 1e-9)))
        case "urlnum": return String(urlIndex)
        case "filename_effective": return filename ?? ""
        case "method": return transactions.last?.request.method.rawValue ?? method ?? ""
        case "num_headers": return String(response?.headerFields.count ?? 0)
        case "redirect_url": return redirectURL ?? ""
        case "json": return json
        default: return ""
        }
    }

    /// The response body's bytes as they came, as curl counts them: before `--compressed`'s decoding, from the last
    /// exchange when it brought the response (not a cached one) and ended; else the bytes read.
    private var downloaded: Int64 {
        guard let last = transactions.last, last.responseEndDate != nil, let response,
              last.request.url == response.url else { return bytes }
        return last.countOfResponseBodyBytesReceived
    }

    /// The last request's body bytes, as curl counts them: its length when known (the progress the handler reports
    /// may come after the response), else what the handler reported sent.
    private var uploaded: Int64 { max(bytesSent, transactions.last?.request.body?.knownLength ?? 0) }

    /// The bytes of `transaction`'s request head: its request line and fields, as -v shows them.
    private static func requestHeadSize(_ transaction: LoadTransactionMetrics) -> Int {
        let request = transaction.request
        let target = transaction.requestTarget ?? request.url.path(percentEncoded: true)
        let line = request.method.rawValue.utf8.count + 1 + target.utf8.count + " HTTP/1.1\r\n".utf8.count
        return request.headerFields.reduce(line + 2) { $0 + $1.name.rawName.utf8.count + 2 + $1.value.utf8.count + 2 }
    }

    /// `%header{name}`: the last response's fields of that name (any case), joined by `, ` as curl joins several.
    private func header(_ name: String) -> String {
        guard let fieldName = HTTPField.Name(name), let fields = response?.headerFields[values: fieldName] else { return "" }
        return fields.joined(separator: ", ")
    }

    /// Where the last response would have sent a client that followed it: its `Location`, made absolute, when it is
    /// a redirect (one `-L` did not follow).
    private var redirectURL: String? {
        guard let response, response.status?.kind == .redirection, let location = response.headerFields[.location],
              let target = URL(leniently: location, relativeTo: response.url) else { return nil }
        return target.absoluteURL.absoluteStringHidingPassword
    }

    /// `%{json}`: the variables of ``jsonVariables`` as one JSON object, numbers as numbers.
    private var json: String {
        let members = Self.jsonVariables.map { name -> String in
            let text = value(name)
            // A number as JSON writes it: `%{http_code}`'s "000" is 0 (a leading zero is not JSON).
            let number = Self.jsonNumbers.contains(name) ? Int(text).map(String.init) ?? Double(text).map { _ in text } : nil
            return "\"\(name)\":" + (number ?? Self.jsonString(text))
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// `text` as a JSON string, by FoundationEssentials' encoder (quotes, backslashes and control characters escaped).
    static func jsonString(_ text: String) -> String {
        (try? JSONEncoder().encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }

    /// Seconds from the first exchange's start to `date`; 0 without either, as curl prints a step that did not happen.
    private func since(_ date: Date?) -> String {
        guard let date, let start = transactions.first?.fetchStartDate else { return 0.0.fixed(6) }
        return max(0, date.timeIntervalSince(start)).fixed(6)
    }
}

/// `-w`'s text for one transfer: pieces for standard output and standard error (`%{stderr}`), in the template's order.
struct WriteOutText {
    var pieces: [(toError: Bool, text: String)] = []

    /// The text for standard output, the pieces joined.
    var output: String { pieces.filter { !$0.toError }.map(\.text).joined() }
    /// The text for standard error, the pieces joined.
    var error: String { pieces.filter(\.toError).map(\.text).joined() }
}
