import FoundationEssentials

extension WebSocketTask {
    /// One WebSocket message: text or bytes.
    public enum Message: Sendable, Hashable {
        /// A text message (its bytes are UTF-8).
        case string(String)
        /// A binary message.
        case data(Data)
    }

    /// Why a WebSocket closed: the status code of a close frame (RFC 6455 §7.4).
    public struct CloseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code as sent.
        public var rawValue: Int
        /// Makes a code from its number.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// 1000: the purpose of the connection was fulfilled.
        public static let normalClosure = CloseCode(rawValue: 1000)
        /// 1001: an end is going away (a server going down, a page left).
        public static let goingAway = CloseCode(rawValue: 1001)
        /// 1002: a protocol error.
        public static let protocolError = CloseCode(rawValue: 1002)
        /// 1003: a kind of data the end cannot take.
        public static let unsupportedData = CloseCode(rawValue: 1003)
        /// 1005: the close frame had no code (never sent).
        public static let noStatusReceived = CloseCode(rawValue: 1005)
        /// 1006: the connection ended without a close frame (never sent).
        public static let abnormalClosure = CloseCode(rawValue: 1006)
        /// 1007: a text message that is not UTF-8.
        public static let invalidFramePayloadData = CloseCode(rawValue: 1007)
        /// 1008: a message that breaks the end's policy.
        public static let policyViolation = CloseCode(rawValue: 1008)
        /// 1009: a message too big to take.
        public static let messageTooBig = CloseCode(rawValue: 1009)
        /// 1011: the server met an unexpected condition.
        public static let internalServerError = CloseCode(rawValue: 1011)

        /// Whether a close frame may carry the code (RFC 6455 §7.4): those defined for use (1000–1003, 1007–1014) and
        /// those left to applications (3000–4999); never 1005, 1006 or 1015, which only report.
        var maySend: Bool {
            (1000...1003).contains(rawValue) || (1007...1014).contains(rawValue) || (3000...4999).contains(rawValue)
        }

        /// The number and, for the codes above, their name: `1000 (normal closure)`.
        public var description: String {
            let names = [1000: "normal closure", 1001: "going away", 1002: "protocol error", 1003: "unsupported data",
                         1005: "no status received", 1006: "abnormal closure", 1007: "invalid payload data",
                         1008: "policy violation", 1009: "message too big", 1011: "internal server error"]
            return names[rawValue].map { "\(rawValue) (\($0))" } ?? String(rawValue)
        }
    }
}
