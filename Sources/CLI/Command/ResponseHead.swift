import HTTPTypes
import Loader

extension LoadResponse {
    /// The head as `-i` prints it: an HTTP status line when the scheme has a status, then one
    /// `Name: value` line per field and a blank line, with CRLF line ends as curl prints them.
    var printableHead: String {
        var text = ""
        if let status {
            // HTTP/2 has no reason phrase: curl prints the code and a space.
            text += networkProtocolName == "h2" ? "HTTP/2 \(status.code) \r\n" : "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"
        }
        for field in headerFields {
            text += "\(field.name.rawName): \(field.value)\r\n"
        }
        return text + "\r\n"
    }
}
