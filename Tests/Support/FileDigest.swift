import Foundation

/// The SHA-256 of the file at `path` as 64 hex digits, worked out by coreutils' `sha256sum` (not by the code under test),
/// for a conformance fixture's `largeSHA256`.
public func sha256sum(ofFile path: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let digest = String(decoding: data.prefix(64), as: UTF8.self)
    guard process.terminationStatus == 0, digest.count == 64 else {
        throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: path])
    }
    return digest
}
