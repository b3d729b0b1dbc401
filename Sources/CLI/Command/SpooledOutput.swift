import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader
import SystemPackage

/// Standard output for a transfer run at once with others (`-Z`) whose turn has not come: its bytes are kept until
/// then, in memory up to ``memoryLimit`` and past that in a temporary file with no name (removed as it is made, so
/// nothing is left behind), and written out in order at its turn.
///
/// The load reads on meanwhile. Held back instead, a body larger than the session's buffer would keep its
/// connection from the pool while it waits, and a transfer before it that needs a connection (to follow a redirect,
/// answer a challenge) could wait behind it in turn.
final class SpooledOutput {
    /// Bytes kept in memory before the rest goes to a file.
    static let memoryLimit = 1 << 20

    private let url: URL
    private let directory: String
    private var held: [Data] = []
    private var heldBytes = 0
    private var file: FileDescriptor?

    /// - Parameters:
    ///   - url: The transfer's URL, for errors.
    ///   - directory: Where the temporary file goes, if one is needed.
    init(url: URL, directory: String) {
        self.url = url
        self.directory = directory
    }

    /// Keeps `data` after what came before it.
    func write(_ data: Data) throws {
        if file == nil, heldBytes + data.count <= Self.memoryLimit {
            held.append(data)
            heldBytes += data.count
            return
        }
        let file = try openFile()
        do {
            _ = try data.withUnsafeBytes { try file.writeAll($0) }
        } catch {
            throw failure("cannot keep the body for its turn in \(directory): \(error)", error)
        }
    }

    /// Writes everything kept to `output`, in order, and lets it go.
    func drain(into output: OutputFile) throws {
        for chunk in held { try output.write(chunk) }
        held = []
        heldBytes = 0
        guard let file else { return }
        defer { close() }
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        do {
            try file.seek(offset: 0, from: .start)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try file.read(into: $0) }
                if count == 0 { break }
                try output.write(Data(buffer[..<count]))
            }
        } catch let failure as OutputFile.Failure {
            throw failure
        } catch {
            throw self.failure("cannot read back the body kept for its turn: \(error)", error)
        }
    }

    /// Lets go of what is kept (after a failure, or once drained).
    func close() {
        try? file?.close()
        file = nil
        held = []
        heldBytes = 0
    }

    /// The temporary file, made (and its name removed) on first use.
    private func openFile() throws -> FileDescriptor {
        if let file { return file }
        var template = Array((directory.hasSuffix("/") ? directory : directory + "/").utf8CString.dropLast()) + Array("loadurl-spool-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            let error = Errno(rawValue: errno)
            throw failure("cannot make a file in \(directory) to keep the body for its turn: \(error)", error)
        }
        // Not inherited by a process this one might start.
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        // Gone from the folder at once: the file lives as long as it is open, whatever ends the process.
        _ = template.withUnsafeBufferPointer { unlink($0.baseAddress!) }
        let opened = FileDescriptor(rawValue: descriptor)
        file = opened
        return opened
    }

    private func failure(_ reason: String, _ underlying: any Error) -> OutputFile.Failure {
        OutputFile.Failure(error: LoadError(.cannotWriteToFile, url: url, reason: reason, underlying: underlying))
    }
}
