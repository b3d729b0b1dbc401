import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Loader

/// Turns an `errno` from a file operation into a ``LoadError`` that names the URL, the path and the cause.
enum FileErrors {
    static func reading(_ code: Int32, path: String, url: URL) -> LoadError {
        let kind: LoadError.Code
        switch code {
        case ENOENT, ENOTDIR, ELOOP: kind = .fileDoesNotExist
        case EACCES, EPERM: kind = .noPermissionsToReadFile
        case EISDIR: kind = .fileIsDirectory
        default: kind = .unknown
        }
        return error(kind, code, path: path, url: url)
    }

    static func writing(_ code: Int32, path: String, url: URL) -> LoadError {
        let kind: LoadError.Code
        switch code {
        case EISDIR: kind = .fileIsDirectory
        case ENOENT, ENOTDIR, EACCES, EPERM, EROFS: kind = .cannotCreateFile
        default: kind = .cannotWriteToFile
        }
        return error(kind, code, path: path, url: url)
    }

    static func error(_ kind: LoadError.Code, _ code: Int32, path: String, url: URL) -> LoadError {
        LoadError(kind, url: url, reason: "\(path): \(String(cString: strerror(code)))",
                  underlying: POSIXError(errno: code))
    }
}
