import FoundationEssentials
import Loader
import Synchronization
import SystemPackage

/// Where `-D` writes each HTTP response head, every transfer's in turn: a file, made anew when the command starts,
/// or standard output (`-`).
final class HeaderDump: Sendable {
    /// The file; `nil` for standard output.
    private let file: Mutex<FileDescriptor?>

    /// Opens `path` (`-` for standard output), emptying a file that is there.
    /// - Throws: `Errno` when the file cannot be made.
    init(path: String) throws {
        guard path != "-" else {
            file = Mutex(nil)
            return
        }
        let descriptor = try FileDescriptor.open(path, .writeOnly, options: [.create, .truncate, .closeOnExec],
                                                 permissions: [.ownerReadWrite, .groupReadWrite, .otherReadWrite])  // as OutputFile's: the umask decides
        file = Mutex(descriptor)
    }

    deinit {
        file.withLock { try? $0?.close() }
    }

    /// Writes `head` whole; returns why it could not be, if it could not (a full disk).
    func write(_ head: String) -> (any Error)? {
        file.withLock { descriptor in
            guard let descriptor else {
                StandardStreams.output(head)
                return nil
            }
            do {
                _ = try descriptor.writeAll(head.utf8)
                return nil
            } catch {
                return error
            }
        }
    }
}
