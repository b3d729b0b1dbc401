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

    /// Expands `%{url}`, `%{url_effective}`, `%{http_code}`/`%{response_code}`, `%{content_type}`,
    /// `%{size_download}`, `%{time_total}`, `%{speed_download}`, `%{exitcode}`, `%{errormsg}`, `%{scheme}`, `%{http_version}`,
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
        default: return ""
        }
    }
}
