import Foundation
import TestSupport
import Testing

/// `loadurl ws://…` against the real WebSocket servers (scripts/ws-server.py).
@Suite("loadurl: ws and wss URLs")
struct CLIWebSocketTests {
    private func servers() throws -> TestServers.WebSockets {
        try #require(TestServers.webSockets, "the WebSocket servers could not be started by scripts/test-servers")
    }

    @Test("The server's messages are written out in order until its normal close (exit 0); -d goes out as a message; -m bounds an open socket (28)")
    func messages() async throws {
        let port = try servers().port
        let many = try await LoadURLProcess.run(["-sS", "-w", "%{size_download}", "ws://127.0.0.1:\(port)/many"])
        #expect(many.status == 0, "\(many.stderr)")
        let digits = (0..<200).map(String.init).joined()
        #expect(many.stdout == digits + String(digits.utf8.count))
        // -m counts from the process's start: 3 s leaves a process started in the main pass's crowded first seconds
        // the time to connect and hear its echo (the socket stays open until -m, so the exit is 28).
        let echo = try await LoadURLProcess.run(["-sS", "-d", "hello", "-m", "3", "ws://127.0.0.1:\(port)/echo"])
        #expect(echo.status == 28, "\(echo.stderr)")
        #expect(echo.stdout == "hello")
        #expect(echo.stderr.contains("-m allows"), "\(echo.stderr)")
        let tls = try servers().tlsPort
        let nginx = try #require(TestServers.nginx, "nginx (and its test CA) could not be started")
        let secure = try await LoadURLProcess.run(["-sS", "--cacert", nginx.caFile, "-d", "over TLS", "-m", "3", "wss://localhost:\(tls)/echo"])
        #expect(secure.stdout == "over TLS" && secure.status == 28, "\(secure.stderr)")
        // -b's cookies and -H's fields go with the handshake (the server answers with its Cookie and X-Greeting fields).
        let fields = try await LoadURLProcess.run(["-sS", "-b", "a=1", "-H", "X-Greeting: hi", "-m", "3", "ws://127.0.0.1:\(port)/cookie"])
        #expect(fields.stdout == "a=1hi", "\(fields.stderr)")
    }

    @Test("-u answers the handshake's Basic or Digest challenge; without it the 401 exits 67 (login denied) naming the URL")
    func credentials() async throws {
        let port = try servers().port
        for path in ["/auth-basic", "/auth-digest"] {
            let signedIn = try await LoadURLProcess.run(["-sS", "-u", "wsuser:wspass", "-d", "hi", "-m", "3", "ws://127.0.0.1:\(port)\(path)"])
            #expect(signedIn.status == 28 && signedIn.stdout == "welcomehi", "\(path): \(signedIn.stderr)")
        }
        let url = "ws://127.0.0.1:\(port)/auth-basic"
        let denied = try await LoadURLProcess.run(["-sS", url])
        #expect(denied.status == 67 && denied.stdout.isEmpty, "\(denied.stderr)")
        #expect(denied.stderr.contains(url) && denied.stderr.contains("401"), "\(denied.stderr)")
    }

    @Test("A close with another code, a refused handshake and a dropped connection exit 56 naming the URL and the cause")
    func failures() async throws {
        let port = try servers().port
        let closed = try await LoadURLProcess.run(["-sS", "ws://127.0.0.1:\(port)/close"])
        #expect(closed.status == 56 && closed.stdout == "closing", "\(closed.stderr)")
        #expect(closed.stderr.contains("4000") && closed.stderr.contains("'done'") && closed.stderr.contains("ws://127.0.0.1:\(port)/close"), "\(closed.stderr)")
        let refused = try await LoadURLProcess.run(["-sS", "ws://127.0.0.1:\(port)/nowhere"])
        #expect(refused.status == 56 && refused.stderr.contains("404"), "\(refused.stderr)")
        let dropped = try await LoadURLProcess.run(["-sS", "ws://127.0.0.1:\(port)/drop"])
        #expect(dropped.status == 56 && dropped.stdout == "dropping", "\(dropped.stderr)")
        #expect(dropped.stderr.contains("without a WebSocket close frame"), "\(dropped.stderr)")
    }
}
