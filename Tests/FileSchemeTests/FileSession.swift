import FileScheme
import Foundation
import Loader

/// A session with the `file:` handler only.
func fileSession(timeout: TimeInterval = 30, configure: (inout LoaderSession.Configuration) -> Void = { _ in }) -> LoaderSession {
    var configuration = LoaderSession.Configuration.ephemeral
    configuration.handlerClasses = [FileSchemeHandler.self]
    configuration.timeoutIntervalForRequest = timeout
    configure(&configuration)
    return LoaderSession(configuration: configuration)
}
