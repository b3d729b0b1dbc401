import Foundation
import Loader

/// A cookie store that records the `Set-Cookie` values it is given and, once it holds any, sends `field` as the
/// `Cookie` field: enough to see a redirect's or a challenge's cookie kept and sent on.
final class RecordingReplayCookieStore: CookieStore {
    let field: String
    let saved = Locked<[String]>([])

    init(sending field: String) { self.field = field }

    func cookieField(for url: URL) -> String? { saved.withLock { $0.isEmpty ? nil : field } }
    func save(setCookie values: [String], from url: URL) { saved.withLock { $0 += values } }
}
