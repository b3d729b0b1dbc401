import NIOHTTP2

/// The server ended an HTTP/2 stream with `RST_STREAM` before its response was complete (RFC 9113 §6.4): the
/// `underlying` error of the load's ``Loader/LoadError`` (`networkConnectionLost`), which `loadurl` exits with as curl
/// does for an HTTP/2 stream error (92).
///
/// A stream the server refused (`REFUSED_STREAM`), or one after the last its `GOAWAY` let through, is not one of
/// these: the server never processed its request, which is sent again (RFC 9113 §8.7).
public struct HTTP2StreamReset: Error, Sendable, CustomStringConvertible {
    /// The stream's identifier on its connection.
    public let streamID: Int
    /// The error code the server gave, as RFC 9113 §7 numbers it (2 is `INTERNAL_ERROR`, 8 `CANCEL`).
    public let errorCode: Int

    init(streamID: Int, errorCode: Int) {
        self.streamID = streamID
        self.errorCode = errorCode
    }

    init(_ closed: NIOHTTP2Errors.StreamClosed) {
        self.init(streamID: Int(closed.streamID), errorCode: closed.errorCode.networkCode)
    }

    /// The code's name in RFC 9113 §7, or its number for one the RFC does not name.
    public var errorCodeName: String {
        let names = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
                     "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
                     "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]
        return names.indices.contains(errorCode) ? names[errorCode] : "0x" + String(errorCode, radix: 16)
    }

    /// What happened, for the load's error: "the server reset HTTP/2 stream 3 with INTERNAL_ERROR".
    public var description: String { "the server reset HTTP/2 stream \(streamID) with \(errorCodeName)" }
}
