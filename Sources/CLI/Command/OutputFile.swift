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

    /// The file written, once opened: the one asked for, or under `--no-clobber` the first free `NAME.N`.
    private(set) var path: String?
    private let createDirectories: Bool
    /// `--no-clobber`: a file already there is not written over; the body goes to `NAME.1` … `NAME.100` instead.
    private let keepsExisting: Bool
    /// Whether the body goes on at the end of the file (`-C`) rather than replacing it.
    private let appends: Bool
    private let url: URL
    private var descriptor: FileDescriptor?
    /// Whether a file was opened for writing (and so replaced or created, unless it is appended to).
    private(set) var opened = false

    init(path: String?, createDirectories: Bool, url: URL, appends: Bool = false, keepsExisting: Bool = false) throws {
        self.path = path
        self.createDirectories = createDirectories
        self.keepsExisting = keepsExisting && !appends
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
        // Under --no-clobber the name, then NAME.1 to NAME.100, each created only if not there (curl's count).
        let candidates = keepsExisting ? [path] + (1...100).map { "\(path).\($0)" } : [path]
        for candidate in candidates {
            do {
                let options: FileDescriptor.OpenOptions = appends ? [.create, .append] : keepsExisting ? [.create, .exclusiveCreate] : [.create, .truncate]
                let opened = try FileDescriptor.open(FilePath(candidate), .writeOnly, options: options,
                                                     permissions: [.ownerReadWrite, .groupReadWrite, .otherReadWrite])
                descriptor = opened
                self.opened = true
                self.path = candidate
                return opened
            } catch Errno.fileExists where keepsExisting {
                continue
            } catch {
                throw Failure(error: LoadError(.cannotCreateFile, url: url, reason: "cannot create \(candidate): \(error)", underlying: error))
            }
        }
        throw Failure(error: LoadError(.cannotCreateFile, url: url, reason: "--no-clobber: \(path) and \(path).1 to \(path).100 exist already"))
    }
}
