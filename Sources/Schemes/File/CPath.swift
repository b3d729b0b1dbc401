/// A path's bytes as the C string a system call takes: the bytes of a `file:` URL's path need not be UTF-8, so they
/// go to the system as they are, not through a `String`.
enum CPath {
    /// Calls `body` with `bytes` (which hold no NUL) followed by a NUL.
    static func with<Result>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try (bytes + [0]).withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }
}
