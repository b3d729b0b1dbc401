import Foundation

/// `LoaderBench SCENARIO CLIENT ARGS…` runs one scenario once and prints one RESULT line:
///   sequential CLIENT URL COUNT        concurrent CLIENT URL COUNT IN_FLIGHT [CONNECTIONS_PER_HOST]
///   stream CLIENT URL [TIMES]          tofile CLIENT URL
///   data CLIENT MIB TIMES              noop loader HANDLERS COUNT
///   manystreams loader URL COUNT
/// CLIENT is loader, loader-el (tasks on an HTTP event loop), urlsession or asynchttpclient (data: loader, foundation, urlsession);
/// sequential and concurrent also take nio-minimal and nio-minimal-el, the floor (see MinimalNIOClient), and
/// handler and handler-el, our HTTP handler without the loader around it (see HandlerDirectClient).
/// CONNECTIONS_PER_HOST sets the pool limit of the loader, URLSession and AsyncHTTPClient (each its own
/// default when absent); the minimal client opens one connection per request in flight.
let arguments = Array(CommandLine.arguments.dropFirst())

func run() async throws {
    guard arguments.count >= 3 else { throw BenchError.usage("usage: LoaderBench SCENARIO CLIENT ARGS…") }
    let (scenario, clientName) = (arguments[0], arguments[1])
    func int(_ index: Int) throws -> Int {
        guard index < arguments.count, let value = Int(arguments[index]) else { throw BenchError.usage("argument \(index) must be a number") }
        return value
    }
    let url = URL(string: arguments[2])
    let measurement: Measurement
    switch scenario {
    case "sequential":
        let client = try Scenarios.client(clientName)
        let count = try int(3)
        measurement = try await Probe.measure(client: clientName, scenario: scenario) { try await Scenarios.sequential(client, url!, count: count) }
    case "concurrent":
        let client = try Scenarios.client(clientName, connectionsPerHost: arguments.count > 5 ? try int(5) : nil)
        let (count, inFlight) = (try int(3), try int(4))
        measurement = try await Probe.measure(client: clientName, scenario: scenario) {
            try await Scenarios.concurrent(client, url!, count: count, inFlight: inFlight)
        }
    case "stream":
        let client = try Scenarios.client(clientName)
        // TIMES streams one after the other in one run: a transfer of a few tens of milliseconds is mostly noise.
        let times = arguments.count > 3 ? try int(3) : 1
        measurement = try await Probe.measure(client: clientName, scenario: scenario) {
            var bytes = 0
            for _ in 0..<times { bytes += try await client.stream(url!) }
            return (times, bytes)
        }
    case "tofile":
        let client = try Scenarios.client(clientName)
        // Removed once timed, failed or not, as curl's output is (run.py removes it before curl's next run).
        var file: URL?
        defer { if let file { try? FileManager.default.removeItem(at: file) } }
        measurement = try await Probe.measure(client: clientName, scenario: scenario) {
            let written = try await client.downloadToFile(url!)
            file = written
            let size = try FileManager.default.attributesOfItem(atPath: written.path)[.size] as? NSNumber
            return (1, size?.intValue ?? 0)
        }
    case "data":
        let (mebibytes, times) = (try int(2), try int(3))
        let (dataURL, base64) = Scenarios.dataURL(mebibytes: mebibytes)
        measurement = try await Probe.measure(client: clientName, scenario: scenario) {
            try await Scenarios.decode(clientName, url: dataURL, base64: base64, times: times)
        }
    case "manystreams":
        let count = try int(3)
        measurement = try await Probe.measure(client: clientName, scenario: scenario) { try await Scenarios.manyStreams(url!, count: count) }
    case "noop":
        let (handlers, count) = (try int(2), try int(3))
        let session = try await Scenarios.noopSession(handlers: handlers)
        measurement = try await Probe.measure(client: clientName, scenario: "noop\(handlers)") { try await Scenarios.noop(session, count: count) }
    default:
        throw BenchError.usage("unknown scenario \(scenario)")
    }
    print(measurement.line)
}

do {
    try await run()
} catch {
    FileHandle.standardError.write(Data("LoaderBench: \(error)\n".utf8))
    exit(1)
}
