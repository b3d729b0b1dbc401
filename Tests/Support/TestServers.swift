import Foundation

/// The real servers `scripts/test-servers` runs on 127.0.0.1; started on first use if not running.
public enum TestServers {
    /// Where nginx listens and what it serves.
    public struct Nginx: Sendable {
        /// The plain HTTP port.
        public let httpPort: Int
        /// The HTTPS port (certificate for `localhost`, signed by ``caFile``).
        public let httpsPort: Int
        /// An HTTPS port whose certificate (for `localhost`, from the test CA) expired in 2020.
        public let expiredPort: Int
        /// Whether nginx also listens on `[::1]` (the HTTP port), which it does where the machine has IPv6.
        public let ipv6: Bool
        /// The PEM file of the test CA.
        public let caFile: String
        /// The folder nginx serves.
        public let root: String
    }

    /// The running nginx, or `nil` if it could not be started.
    public static let nginx: Nginx? = {
        var root = URL(fileURLWithPath: #filePath)
        while root.pathComponents.count > 1, !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
            root.deleteLastPathComponent()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [root.appendingPathComponent("scripts/test-servers").path, "start"]
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let text = try? String(contentsOf: root.appendingPathComponent(".build/test-servers/env"), encoding: .utf8)
        else { return nil }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let pair = line.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { values[String(pair[0])] = String(pair[1]) }
        }
        guard let http = values["HTTP_PORT"].flatMap(Int.init), let https = values["HTTPS_PORT"].flatMap(Int.init),
              let expired = values["EXPIRED_PORT"].flatMap(Int.init), let ca = values["CA"], let www = values["ROOT"]
        else { return nil }
        return Nginx(httpPort: http, httpsPort: https, expiredPort: expired, ipv6: values["IPV6"] == "1", caFile: ca, root: www)
    }()
}
