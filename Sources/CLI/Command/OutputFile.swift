import FoundationEssentials
import Loader
import SystemPackage

/// Where one URL's body goes: standard output, or a file created when the first byte (or head) is written.
final class OutputFile {
    /// A failure to write the output, told apart from the load's own failures: a local file that cannot be
    /// written is curl's 23, whatever the URL.
    struct Failure: Error {
        /// The error to report, naming the URL whose body was being written.
        let error: LoadError
    }

    private let path: String?
    private let createDirectories: Bool
    /// Whether the body goes on at the end of the file (`-C`) rather than replacing it.
    private let appends: Bool
    private let url: URL
    private var descriptor: FileDescriptor?
    /// Whether a file was opened for writing (and so replaced or created, unless it is appended to).
    private(set) var opened = false

    init(path: String?, createDirectories: Bool, url: URL, appends: Bool = false) throws {
        self.path = path
        self.createDirectories = createDirectories
        self.appends = appends
        self.url = url
        if path == nil { descriptor = .standardOutput }
    }

    func write(_ data: Data) throws {
        let descriptor = try open()
        do {
            _ = try data.withUnsafeBytes { try descriptor.writeAll($0) }
        } catch {
            throw Failure(error: LoadError(.cannotWriteToFile, url: url, reason: "cannot write \(path ?? "standard output"): \(error)", underlying: error))
        }
    }

    /// Ends a body that arrived whole: creates an empty file for an empty body, as curl does, and closes
    /// the file, reporting a failure to close (a network file system or a quota may tell only then).
    func finish() throws {
        let descriptor = try open()
        guard let path else { return }
        self.descriptor = nil
        do {
            try descriptor.close()
        } catch {
            throw Failure(error: LoadError(.cannotWriteToFile, url: url, reason: "cannot finish writing \(path): \(error)", underlying: error))
        }
    }

    /// Closes the file, if still open, after a failure (whose error is the one reported).
    func close() {
        if path != nil { try? descriptor?.close() }
    }

    private func open() throws -> FileDescriptor {
        if let descriptor { return descriptor }
        guard let path else { return .standardOutput }
        if createDirectories {
            let parent = URL(fileURLWithPath: path).deletingLastPathComponent()
            try? FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        }
        do {
            let opened = try FileDescriptor.open(FilePath(path), .writeOnly, options: appends ? [.create, .append] : [.create, .truncate],
                                                 permissions: [.ownerReadWrite, .groupReadWrite, .otherReadWrite])
            descriptor = opened
            self.opened = true
            return opened
        } catch {
            throw Failure(error: LoadError(.cannotCreateFile, url: url, reason: "cannot create \(path): \(error)", underlying: error))
        }
    }
}
