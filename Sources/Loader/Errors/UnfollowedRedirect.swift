/// The redirect response a load stopped at: the underlying error of a ``LoadError`` when a redirect was not followed
/// (``LoadError/Code/httpTooManyRedirects``; a `Location` that is not a URL, or leads to a scheme the session does not
/// redirect to or that would be sent the request's body). Its status and fields are the caller's to show, as curl's `%{http_code}` shows the last one.
public struct UnfollowedRedirect: Error, Sendable, CustomStringConvertible {
    /// The redirect's response (its body is not kept).
    public let response: LoadResponse

    /// Makes the error for `response`.
    public init(response: LoadResponse) {
        self.response = response
    }

    /// The redirect, in words.
    public var description: String {
        "the " + (response.status.map { "\($0.code) " } ?? "") + "redirect from \(response.url.absoluteStringHidingPassword) was not followed"
    }
}
