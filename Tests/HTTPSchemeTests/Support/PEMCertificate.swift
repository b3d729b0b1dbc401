import Foundation
import Testing

/// The DER bytes of the first certificate in the PEM file at `path`, as a server-trust question shows a certificate.
func derOfPEM(_ path: String) throws -> Data {
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let body = text.components(separatedBy: "-----BEGIN CERTIFICATE-----")[1].components(separatedBy: "-----END CERTIFICATE-----")[0]
    return try #require(Data(base64Encoded: body.filter { !$0.isWhitespace }))
}
