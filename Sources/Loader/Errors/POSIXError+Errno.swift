import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension POSIXError {
    /// The error for a C library `errno`, as a handler puts it in ``LoadError/underlying``; `nil` for 0 or a code
    /// the platform does not name.
    package init?(errno code: Int32) {
        guard let known = POSIXErrorCode(rawValue: code) else { return nil }
        self.init(known)
    }
}
