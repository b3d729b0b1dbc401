import NIOHTTP2

/// An HTTP/2 stream was reset before its response was complete (RFC 9113 §6.4): by the server's `RST_STREAM`, or by
/// NIOHTTP2 for the server's breach of the protocol on that stream. The `underlying` error of the load's
/// ``Loader/LoadError`` (`networkConnectionLost`), which `loadurl` exits with as curl does for an HTTP/2 stream
/// error (92). The request is not sent again: the server may have processed it.
///
/// A stream the server refused (`REFUSED_STREAM`), or one after the last its `GOAWAY` let through, is not one of
/// these: the server never processed its request, which is sent again (RFC 9113 §8.7).
public struct HTTP2StreamReset: Error, Sendable, CustomStringConvertible {
    /// The stream's identifier on its connection.
    public let streamID: Int
    /// The reset's error code, as RFC 9113 §7 numbers it (2 is `INTERNAL_ERROR`, 8 `CANCEL`).
    public let errorCode: Int

    init(_ closed: NIOHTTP2Errors.StreamClosed) {
        streamID = Int(closed.streamID)
        errorCode = closed.errorCode.networkCode
    }

    /// RFC 9113 §7's names, by code.
    private static let codeNames = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
                                    "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
                                    "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]

    /// The code's name in RFC 9113 §7, or its number for one the RFC does not name.
    public var errorCodeName: String {
        Self.codeNames.indices.contains(errorCode) ? Self.codeNames[errorCode] : "0x" + String(errorCode, radix: 16)
    }

    /// What happened, for the load's error: "HTTP/2 stream 3 was reset with INTERNAL_ERROR before the response was complete".
    public var description: String { "HTTP/2 stream \(streamID) was reset with \(errorCodeName) before the response was complete" }
}
