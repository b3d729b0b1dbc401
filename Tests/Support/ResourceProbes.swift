import Foundation
import Loader
import Synchronization

/// Process resources as tests measure them: peak memory and open descriptors, read from `/proc/self`.
public enum ResourceProbes {
    /// A value of `/proc/self/status` such as `VmHWM`, in bytes.
    public static func status(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }

    /// Whether this process runs under the thread sanitizer, whose shadow memory and per-thread state
    /// add to the resident set whatever the code under test does.
    public static let isThreadSanitized: Bool = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil

    /// The most the resident set may grow while a large body streams: 64 MiB, or 192 MiB under the thread
    /// sanitizer (a body held whole would still pass it by far).
    public static var peakGrowthLimit: Int { isThreadSanitized ? 192 << 20 : 64 << 20 }

    /// Resets the peak resident set (`VmHWM`) to the current one, so a peak measured afterwards belongs
    /// to what ran afterwards (Linux's `clear_refs` value 5).
    public static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// The paths that the process's open descriptors refer to.
    public static func openPaths() -> [String] {
        let directory = "/proc/self/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\($0)") }
    }

    /// Runs `prepare` then `body` alone among the other memory-measuring tests of the process, and
    /// returns how far the resident set rose during `body` above where it stood when `body` began.
    /// Large inputs are made in `prepare` so that they are inside the gate but outside the measurement.
    public static func measuringPeakGrowth<Input, T>(
        prepare: () throws -> Input,
        _ body: (Input) async throws -> T
    ) async throws -> (growth: Int, value: T) {
        try await ExclusiveGate.memory.exclusive {
            let input = try prepare()
            resetPeak()
            let baseline = status("VmRSS")
            let value = try await body(input)
            return (status("VmHWM") - baseline, value)
        }
    }

    /// ``measuringPeakGrowth(prepare:_:)`` with nothing to prepare.
    public static func measuringPeakGrowth<T>(_ body: () async throws -> T) async throws -> (growth: Int, value: T) {
        try await measuringPeakGrowth(prepare: {}, { _ in try await body() })
    }
}

/// The WPT and Public Suffix corpora beside the project (`../shared/corpora`).
public enum Corpora {
    /// The URL of `path` inside the corpora folder.
    public static func url(_ path: String, file: String = #filePath) -> URL {
        var root = URL(fileURLWithPath: file)
        while root.pathComponents.count > 1, !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
            root.deleteLastPathComponent()
        }
        return root.appendingPathComponent("../shared/corpora/\(path)").standardizedFileURL
    }
}

/// Runs `body` and returns the `LoadError` it throws, or `nil` if it throws none (another error becomes
/// an `unknown` LoadError saying so, so that the test's expectation on the code fails visibly).
public func loadError(_ body: () async throws -> Void) async -> LoadError? {
    do {
        try await body()
        return nil
    } catch let error as LoadError {
        return error
    } catch {
        return LoadError(.unknown, reason: "not a LoadError: \(error)")
    }
}
