import Foundation
import HTTPTypes
import Loader

/// What a ``DiskResponseCache`` row keeps beside the body: the response head, the request values it varies on,
/// and its two times, as JSON.
struct StoredHead: Codable {
    var url: String
    var status: Int?
    var reason: String?
    /// Name and value pairs, in order (a field may repeat).
    var fields: [[String]]
    var varying: [[String]]
    var requestedAt: Double
    var storedAt: Double

    init(_ entry: CachedResponse) {
        // Without a password, kept off the disk (the entry is served under the request's URL).
        url = entry.response.url.absoluteStringHidingPassword
        status = entry.response.status?.code
        reason = entry.response.status?.reasonPhrase
        fields = entry.response.headerFields.map { [$0.name.rawName, $0.value] }
        // Digests, not the values: a cookie or a token a response varies on stays off the disk (the entry is matched
        // by digest).
        varying = entry.varyingFields.map { [$0.name.rawName, CacheRules.varyingDigest($0.value)] }
        requestedAt = entry.requestedAt.timeIntervalSince1970
        storedAt = entry.storedAt.timeIntervalSince1970
    }

    /// The entry, with `body`; `nil` if a value does not read back (a row written by something else).
    func entry(body: Data) -> CachedResponse? {
        guard let url = URL(string: url), let fields = Self.fields(fields), let varying = Self.fields(varying),
              status.map({ (100...999).contains($0) }) ?? true else { return nil }
        let status = status.map { HTTPResponse.Status(code: $0, reasonPhrase: reason ?? "") }
        return CachedResponse(response: LoadResponse(url: url, status: status, headerFields: fields), data: body,
                              requestedAt: Date(timeIntervalSince1970: requestedAt), storedAt: Date(timeIntervalSince1970: storedAt),
                              varyingFields: varying)
    }

    private static func fields(_ pairs: [[String]]) -> HTTPFields? {
        var fields = HTTPFields()
        for pair in pairs {
            guard pair.count == 2, let name = HTTPField.Name(pair[0]) else { return nil }
            fields.append(HTTPField(name: name, value: pair[1]))
        }
        return fields
    }
}
