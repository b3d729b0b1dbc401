/// An active-mode transfer that could not set up its data connection's listening end: no port free in the range
/// ``FTPOptions/activeModeAddress`` names, an address that is not this host's, or a `PORT`/`EPRT` the server refused.
/// The ``Loader/LoadError/underlying`` error of such a failure (``Loader/LoadError/Code/cannotConnectToHost``), so
/// that a caller can tell it from a server it could not reach (curl's exit status 30, not 7).
public struct FTPActiveModeFailure: Error, Sendable, Equatable {}
