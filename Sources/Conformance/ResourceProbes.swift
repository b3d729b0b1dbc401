import Foundation

/// Process resources read from `/proc/self`: what the memory and descriptor checks measure.
enum ResourceProbes {
    static func status(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }

    /// Resets `VmHWM` to the current resident set (Linux `clear_refs` 5), so a later peak is ours.
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    static func openDescriptors() -> Set<String> {
        let directory = "/proc/self/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return Set(entries.compactMap { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(entry)")).map { "\(entry)→\($0)" }
        })
    }
}
