import FoundationEssentials

/// The TLS alerts by which a server refuses a client's certificate, or its absence, found in a TLS library's error
/// text: BoringSSL names an alert it received `TLSV1_ALERT_UNKNOWN_CA`, OpenSSL (through libcurl) `tlsv1 alert
/// unknown ca`. One reading for the HTTP handler (NIOSSL) and the FTP handler (libcurl).
package enum ClientCertificateAlert {
    /// The alert's names, as words, and what each makes of the load.
    private static let alerts: [(words: String, code: LoadError.Code)] = [
        ("alert certificate required", .clientCertificateRequired),
        // Some servers answer a missing certificate with these too.
        ("alert unknown ca", .clientCertificateRejected),
        ("alert bad certificate", .clientCertificateRejected),
        ("alert certificate unknown", .clientCertificateRejected),
        ("alert unsupported certificate", .clientCertificateRejected),
        ("alert certificate expired", .clientCertificateRejected),
        ("alert certificate revoked", .clientCertificateRejected),
    ]

    /// The load's error when `text` names such an alert, saying so before `detail`; `nil` otherwise.
    package static func error(in text: String, url: URL, detail: String, underlying: (any Error)? = nil) -> LoadError? {
        let words = text.lowercased().replacing("_", with: " ")
        guard let code = alerts.first(where: { words.contains($0.words) })?.code else { return nil }
        let what = code == .clientCertificateRequired
            ? "the server asks for a TLS client certificate" : "the server refused the TLS client certificate (or its absence)"
        return LoadError(code, url: url, reason: "\(what): \(detail)", underlying: underlying)
    }
}
