import Foundation
import TestSupport
import Testing

/// `loadurl --pinnedpubkey` against nginx; the pin worked out with the openssl command line, as curl's documentation does.
@Suite("loadurl: --pinnedpubkey")
struct CLIPinnedKeyTests {
    private func openssl(_ script: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script, "sh"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        return data
    }

    @Test("sha256// hashes (one right among several: 0) and a PEM or DER key file load, over HTTPS and FTPS; another key exits 90; a malformed value is a usage error")
    func pins() async throws {
        let nginx = try TestServers.requireNginx()
        let certificate = URL(fileURLWithPath: nginx.caFile).deletingLastPathComponent().appendingPathComponent("server.pem").path
        let hash = String(decoding: try openssl("openssl x509 -in \"$1\" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
                                                [certificate]), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let url = "https://localhost:\(nginx.httpsPort)/hello.txt"
        let wrong = "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
        let right = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "--pinnedpubkey", "\(wrong);sha256//\(hash)", url])
        #expect(right.status == 0 && right.stdout == "Hello from nginx\n", "\(right.status) \(right.stderr)")
        let mismatch = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "--pinnedpubkey", wrong, url])
        #expect(mismatch.status == 90 && mismatch.stdout.isEmpty, "\(mismatch.status) \(mismatch.stderr)")
        #expect(mismatch.stderr.contains("sha256//\(hash)"), "the server's pin is told: \(mismatch.stderr)")

        let folder = try scratchFolder("loadurl-pins")
        defer { try? FileManager.default.removeItem(at: folder) }
        let pem = folder.appendingPathComponent("key.pem")
        try openssl("openssl x509 -in \"$1\" -pubkey -noout", [certificate]).write(to: pem)
        let der = folder.appendingPathComponent("key.der")
        try openssl("openssl x509 -in \"$1\" -pubkey -noout | openssl pkey -pubin -outform der", [certificate]).write(to: der)
        for file in [pem, der] {
            let run = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "--pinnedpubkey", file.path, url])
            #expect(run.status == 0 && run.stdout == "Hello from nginx\n", "\(file.lastPathComponent): \(run.status) \(run.stderr)")
        }
        // FTPS as well, through libcurl's CURLOPT_PINNEDPUBLICKEY: pyftpdlib shows the same certificate.
        let ftp = try #require(TestServers.ftp, "pyftpdlib could not be started by scripts/test-servers")
        let ftps = "ftp://localhost:\(ftp.tlsPort)/hello.txt"
        let pinnedFTPS = try await LoadURLProcess.run(["-sS", "--ssl-reqd", "--cacert", nginx.caFile, "--pinnedpubkey", "sha256//\(hash)", ftps])
        #expect(pinnedFTPS.status == 0 && pinnedFTPS.stdout == "Hello from FTP\n", "\(pinnedFTPS.status) \(pinnedFTPS.stderr)")
        let wrongFTPS = try await LoadURLProcess.run(["-sS", "--ssl-reqd", "--cacert", nginx.caFile, "--pinnedpubkey", wrong, ftps])
        #expect(wrongFTPS.status == 90 && wrongFTPS.stdout.isEmpty, "\(wrongFTPS.status) \(wrongFTPS.stderr)")

        let malformed = try await LoadURLProcess.run(["-sS", "--pinnedpubkey", "sha256//not base64!", url])
        #expect(malformed.status == 2, "\(malformed.status) \(malformed.stderr)")
    }
}
