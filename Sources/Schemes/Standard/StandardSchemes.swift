import DataScheme
import FileScheme
import FTPScheme
import HTTPScheme
import Loader

/// The handlers built into the loader, registered in one call.
///
/// ```swift
/// import StandardSchemes
/// StandardSchemes.register()
/// ```
public enum StandardSchemes {
    /// The built-in handler classes, in the order they are registered.
    public static var handlers: [SchemeHandler.Type] {
        [DataSchemeHandler.self, FileSchemeHandler.self, HTTPSchemeHandler.self, FTPSchemeHandler.self]
    }

    /// Registers each built-in handler that `registry` does not hold yet, so calling it again never
    /// demotes a handler an app registered after the first call.
    /// - Parameter registry: Where to register; the process-wide registry by default.
    public static func register(in registry: SchemeRegistry = .default) {
        let present = registry.handlers
        for handler in handlers where !present.contains(where: { $0 == handler }) {
            registry.register(handler)
        }
    }
}
