import HTTPTypes
import Loader

extension LoadResponse {
    /// The head as `-i` prints it: an HTTP status line when the scheme has a status, then one
    /// `Name: value` line per field and a blank line, with CRLF line ends as curl prints them.
    var printableHead: String {
        var text = ""
        if let status {
            switch networkProtocolName {
            // HTTP/2 has no reason phrase: curl prints the code and a space.
            case "h2": text += "HTTP/2 \(status.code) \r\n"
            case "http/1.0": text += "HTTP/1.0 \(status.code) \(status.reasonPhrase)\r\n"
            default: text += "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"
            }
        }
        for field in headerFields {
            text += "\(field.name.rawName): \(field.value)\r\n"
        }
        return text + "\r\n"
    }
}

extension LoadURL {
    /// What `-i` and `-I` print: every HTTP response head of the transfer as it came, as curl prints them (each
    /// redirect's and challenge's before the last; under `--compressed`, with the `Content-Encoding` and
    /// `Content-Length` the server sent); the response's own head when no exchange told of it (a scheme without
    /// exchanges, or a response that is not the last exchange's).
    static func includedHeads(_ response: LoadResponse, transactions: [LoadTransactionMetrics]) -> String {
        let heads = transactions.compactMap(\.response).filter { $0.status != nil }
        guard let last = heads.last, last.status == response.status, last.url == response.url else { return response.printableHead }
        return heads.map(\.printableHead).joined()
    }
}
