import Foundation
import Loader

/// Where one URL's body goes: standard output, or a file created when the first byte (or head) is written.
final class OutputFile {
    private let path: String?
    private let createDirectories: Bool
    private let url: URL
    private var handle: FileHandle?

    init(path: String?, createDirectories: Bool, url: URL) throws {
        self.path = path
        self.createDirectories = createDirectories
        self.url = url
        if path == nil { handle = FileHandle.standardOutput }
    }

    func write(_ data: Data) throws {
        do {
            try open().write(contentsOf: data)
        } catch let error as LoadError {
            throw error
        } catch {
            throw LoadError(.cannotWriteToFile, url: url, reason: "cannot write \(path ?? "standard output")", underlying: error)
        }
    }

    /// Creates an empty file for an empty body, as curl does.
    func finish() throws {
        _ = try open()
    }

    func close() {
        if path != nil { try? handle?.close() }
    }

    private func open() throws -> FileHandle {
        if let handle { return handle }
        guard let path else { return FileHandle.standardOutput }
        let fileURL = URL(fileURLWithPath: path)
        if createDirectories {
            try? FileManager.default.createDirectory(at: fileURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw LoadError(.cannotCreateFile, url: url, reason: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let opened = try FileHandle(forWritingTo: fileURL)
        handle = opened
        return opened
    }
}
