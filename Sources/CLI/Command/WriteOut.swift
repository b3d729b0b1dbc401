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
    /// The transfer's exchanges with servers (``TransferEvents``), when the format asks about them.
    var transactions: [LoadTransactionMetrics] = []
    /// Redirects followed (``TransferEvents``), when the format asks about exchanges.
    var redirects = 0

    /// The variables read from ``transactions``: a format without them collects none.
    static let metricsVariables = ["remote_ip", "remote_port", "local_ip", "local_port", "num_connects", "num_redirects",
                                   "time_connect", "time_appconnect", "time_pretransfer", "time_starttransfer"]

    /// Whether `format` names a variable of ``metricsVariables``.
    static func needsMetrics(_ format: String?) -> Bool {
        guard let format else { return false }
        return metricsVariables.contains { format.contains("%{\($0)}") }
    }

    /// Expands `%{url}`, `%{url_effective}`, `%{http_code}`/`%{response_code}`, `%{content_type}`,
    /// `%{size_download}`, `%{time_total}`, `%{speed_download}`, `%{exitcode}`, `%{errormsg}`, `%{scheme}`, `%{http_version}`,
    /// ``metricsVariables`` (the last exchange's addresses, connections opened, redirects followed, and seconds from the
    /// first exchange's start to the last new connection and to the last response's head),
    /// `%%` for a percent sign, and the escapes `\n`, `\r`, `\t`; unknown variables print nothing.
    func format(_ template: String) -> String {
        var out = ""
        var rest = Substring(template)
        while let index = rest.firstIndex(where: { $0 == "%" || $0 == "\\" }) {
            out += rest[..<index]
            rest = rest[index...]
            if rest.hasPrefix("%%") {
                out += "%"
                rest = rest.dropFirst(2)
            } else if rest.hasPrefix("%{"), let close = rest.firstIndex(of: "}") {
                let name = rest[rest.index(rest.startIndex, offsetBy: 2)..<close]
                out += value(String(name))
                rest = rest[rest.index(after: close)...]
            } else if rest.hasPrefix("\\"), rest.count >= 2 {
                let next = rest[rest.index(after: rest.startIndex)]
                switch next {
                case "n": out += "\n"
                case "r": out += "\r"
                case "t": out += "\t"
                case "\\": out += "\\"
                default: out += "\\\(next)"
                }
                rest = rest.dropFirst(2)
            } else {
                out += String(rest.first!)
                rest = rest.dropFirst()
            }
        }
        return out + rest
    }

    private func value(_ name: String) -> String {
        switch name {
        case "url": return url.absoluteStringHidingPassword
        case "url_effective": return (response?.url ?? url).absoluteStringHidingPassword
        case "http_code", "response_code": return response?.status.map { $0.code.zeroPadded(3) } ?? "000"
        case "content_type": return response?.headerFields[.contentType] ?? ""
        case "size_download": return String(bytes)
        case "time_total": return seconds.fixed(6)
        case "speed_download": return String(Int64(Double(bytes) / max(seconds, 1e-9)))
        case "exitcode": return String(exitCode)
        case "errormsg": return error.map { String(describing: $0) } ?? ""
        case "scheme": return url.scheme?.uppercased() ?? ""
        case "http_version":
            // As curl: "2", "1.1", or "0" when no HTTP response came.
            switch response?.networkProtocolName {
            case "h2": return "2"
            case "http/1.1": return "1.1"
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
        case "time_appconnect": return since(transactions.last { $0.secureConnectionEndDate != nil }?.secureConnectionEndDate)
        case "time_pretransfer": return since(transactions.last?.requestStartDate)
        case "time_starttransfer": return since(transactions.last?.responseStartDate)
        default: return ""
        }
    }

    /// Seconds from the first exchange's start to `date`; 0 without either, as curl prints a step that did not happen.
    private func since(_ date: Date?) -> String {
        guard let date, let start = transactions.first?.fetchStartDate else { return 0.0.fixed(6) }
        return max(0, date.timeIntervalSince(start)).fixed(6)
    }
}
