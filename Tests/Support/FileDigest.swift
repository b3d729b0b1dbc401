import Foundation

/// The SHA-256 of the file at `path` as 64 hex digits, worked out by coreutils' `sha256sum` (not by the code under test),
/// for a conformance fixture's `largeSHA256`. Waited for on a thread of its own (``offCooperativePool(_:)``): reading
/// 512 MiB from disk held a cooperative thread for seconds, and other suites' loads ran out of their request timeouts.
public func sha256sum(ofFile path: String) async throws -> String {
    try await offCooperativePool { try digest(ofFile: path) }
}

/// What ``sha256sum(ofFile:)`` does, blocking.
private func digest(ofFile path: String) throws -> String {
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
