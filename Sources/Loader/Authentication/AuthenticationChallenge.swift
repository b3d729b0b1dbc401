import FoundationEssentials
import HTTPTypes

/// Where credentials apply: a host, port and scheme, and the server's realm and method; or a proxy
/// (``isProxy``), with its host, port and realm.
public struct ProtectionSpace: Sendable, Hashable {
    /// The host, lowercased.
    public var host: String
    /// The port.
    public var port: Int
    /// The URL scheme, such as `https`.
    public var scheme: String
    /// The realm the server named, if any.
    public var realm: String?
    /// The authentication scheme, such as `Basic`.
    public var authenticationMethod: String
    /// For a proxy's space, the protocol spoken with the proxy (`"http"` for an HTTP proxy, as URLSession's
    /// `proxyType`); `nil` for a server's. A credential stored for a proxy is never used for a server on the
    /// same host and port, nor the other way round.
    public var proxyType: String?

    /// Whether this is a proxy's space rather than a server's.
    public var isProxy: Bool { proxyType != nil }

    /// Makes a protection space.
    public init(host: String, port: Int, scheme: String, realm: String?, authenticationMethod: String) {
        self.host = host.lowercased()
        self.port = port
        self.scheme = scheme.lowercased()
        self.realm = realm
        self.authenticationMethod = authenticationMethod
    }

    /// The protection space of a challenge from the server `url` names: its host, its port (the scheme's
    /// default when it names none: 443 for `https`, else 80) and its scheme.
    public init(url: URL, realm: String?, authenticationMethod: String) {
        let scheme = url.scheme?.lowercased() ?? "http"
        self.init(host: url.host(percentEncoded: false) ?? "", port: url.port ?? (scheme == "https" ? 443 : 80), scheme: scheme,
                  realm: realm, authenticationMethod: authenticationMethod)
    }

    /// The space of a proxy's challenge (a `407` with `Proxy-Authenticate`): the proxy's host and port, the
    /// protocol spoken with it as `proxyType` (and as ``scheme``), the realm it named.
    public init(proxyHost: String, port: Int, proxyType: String = "http", realm: String?, authenticationMethod: String) {
        self.init(host: proxyHost, port: port, scheme: proxyType, realm: realm, authenticationMethod: authenticationMethod)
        self.proxyType = proxyType.lowercased()
    }

    /// Whether `url` names this space's server (scheme, host and port), whatever the realm and method; never
    /// for a proxy's space.
    public func isServer(of url: URL) -> Bool {
        let other = ProtectionSpace(url: url, realm: nil, authenticationMethod: authenticationMethod)
        return !isProxy && other.scheme == scheme && other.host == host && other.port == port
    }
}

/// A user name and password.
public struct Credential: Sendable, Hashable {
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// Makes a credential.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// The value of an `Authorization` or `Proxy-Authorization` field that sends this credential in the
    /// `Basic` scheme (RFC 7617): `Basic ` and the base64 of `user:password`.
    public var basicAuthorization: String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// The credential a ``basicAuthorization`` value carries, split at its first `:` as a server splits it; `nil`
    /// for a value of another scheme or not base64 of UTF-8.
    init?(basicAuthorization value: String) {
        guard value.prefix(6).lowercased() == "basic ",
              let decoded = Data(base64Encoded: String(value.dropFirst(6))),
              let text = String(validating: decoded, as: UTF8.self),
              let colon = text.firstIndex(of: ":") else { return nil }
        self.init(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }
}

/// A question for the delegate, as URLSession asks it: a server's demand for credentials (an HTTP 401 with
/// `WWW-Authenticate`), or whether to trust a TLS server (``serverTrust`` is set, and the protection
/// space's method is ``ServerTrust/authenticationMethod``).
public struct AuthenticationChallenge: Sendable {
    /// Where the credentials would apply.
    public var protectionSpace: ProtectionSpace
    /// How many credentials for this load the server has already refused.
    public var previousFailureCount: Int
    /// The credential refused last, if any.
    public var proposedCredential: Credential?
    /// The 401 response; `nil` for a server-trust challenge.
    public var failureResponse: LoadResponse?
    /// What the TLS server presented, for a server-trust challenge.
    public var serverTrust: ServerTrust?

    /// Makes a challenge (handlers make server-trust challenges; the session makes credential ones).
    public init(
        protectionSpace: ProtectionSpace,
        previousFailureCount: Int = 0,
        proposedCredential: Credential? = nil,
        failureResponse: LoadResponse? = nil,
        serverTrust: ServerTrust? = nil
    ) {
        self.protectionSpace = protectionSpace
        self.previousFailureCount = previousFailureCount
        self.proposedCredential = proposedCredential
        self.failureResponse = failureResponse
        self.serverTrust = serverTrust
    }
}

/// What to do with a challenge, as URLSession's delegates answer.
public enum ChallengeDisposition: Sendable {
    /// Send this credential.
    case useCredential(Credential)
    /// Trust the TLS server whatever the default evaluation says (a server-trust challenge only; for a
    /// 401 it means ``rejectProtectionSpace``).
    case trustServer
    /// Do what the session would do with no delegate: for a 401, the URL's user info, then the credential
    /// store, else hand the 401 response to the caller; for server trust, the default evaluation.
    case performDefaultHandling
    /// Fail the load: ``LoadError/Code/userCancelledAuthentication`` for a 401,
    /// ``LoadError/Code/cancelled`` for server trust.
    case cancelAuthenticationChallenge
    /// Hand the 401 response to the caller; for server trust, refuse the server
    /// (``LoadError/Code/serverCertificateUntrusted``) even if the default evaluation accepts it.
    case rejectProtectionSpace
}

/// Credentials kept for protection spaces. Sessions use ``shared`` unless their configuration is
/// ephemeral (then each has its own) or names another.
public final class CredentialStore: Sendable {
    /// The process-wide store.
    public static let shared = CredentialStore()
    private let entries = Locked<[ProtectionSpace: Credential]>([:])

    /// An empty store.
    public init() {}

    /// Keeps `credential` for `space`.
    public func set(_ credential: Credential, for space: ProtectionSpace) {
        entries.withLock { $0[space] = credential }
    }

    /// Removes the credential for `space`.
    public func remove(for space: ProtectionSpace) {
        entries.withLock { $0[space] = nil }
    }

    /// The credential for `space`: one stored for exactly it, else one for the same host, port and
    /// scheme stored without a realm.
    public func credential(for space: ProtectionSpace) -> Credential? {
        entries.withLock { entries in
            if let exact = entries[space] { return exact }
            var anyRealm = space
            anyRealm.realm = nil
            return entries[anyRealm]
        }
    }
}
