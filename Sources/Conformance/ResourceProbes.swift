import Foundation

/// Process resources read from `/proc/self`: what the memory and descriptor checks measure.
enum ResourceProbes {
    /// Where the probes read: `/proc/self`; another folder in the suite's own tests, to stand for a system without it.
    @TaskLocal static var root = "/proc/self"

    /// Whether the probes can read this process's memory and descriptors (Linux's `/proc`): without them the checks
    /// that need them are not checked, rather than passed with nothing seen.
    static var available: Bool {
        FileManager.default.isReadableFile(atPath: root + "/status") && FileManager.default.isReadableFile(atPath: root + "/fd")
    }

    /// Why the properties that need the probes were not checked.
    static var unavailable: String {
        "this system gives no \(root)/status and \(root)/fd (Linux's /proc) to read the process's memory and descriptors from"
    }

    static func status(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: root + "/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }

    /// Resets `VmHWM` to the current resident set (Linux `clear_refs` 5), so a later peak is ours.
    static func resetPeak() {
        try? "5".write(toFile: root + "/clear_refs", atomically: false, encoding: .utf8)
    }

    static func openDescriptors() -> Set<String> {
        let directory = root + "/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return Set(entries.compactMap { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(entry)")).map { "\(entry)→\($0)" }
        })
    }
}
