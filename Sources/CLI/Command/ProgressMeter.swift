import FoundationEssentials

/// A one-line progress bar on standard error, for transfers that take a while on a terminal.
///
/// Silent for the first half second (short loads show nothing) and redrawn at most five times a second.
struct ProgressMeter {
    private let started = Date()
    private var lastDraw = Date.distantPast
    private var drew = false
    let enabled: Bool
    let label: String

    init(enabled: Bool, label: String) {
        self.enabled = enabled
        self.label = label
    }

    mutating func update(received: Int64, expected: Int64?) {
        guard enabled else { return }
        let now = Date()
        guard now.timeIntervalSince(started) > 0.5, now.timeIntervalSince(lastDraw) > 0.2 else { return }
        lastDraw = now
        drew = true
        let rate = Double(received) / max(0.001, now.timeIntervalSince(started))
        var line: String
        if let expected, expected > 0 {
            let fraction = min(1, Double(received) / Double(expected))
            let width = 30
            let filled = Int(fraction * Double(width))
            line = "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "]"
            let percent = String(Int(fraction * 100))
            line += " " + String(repeating: " ", count: 3 - percent.count) + percent + "%  \(Self.bytes(received)) / \(Self.bytes(expected))"
        } else {
            line = Self.bytes(received)
        }
        line += "  \(Self.bytes(Int64(rate)))/s  \(label.prefix(40))"
        StandardStreams.error("\r\u{1B}[K" + line)
    }

    /// Clears the meter's line (once: an error message may follow on it).
    mutating func finish() {
        guard enabled, drew else { return }
        drew = false
        StandardStreams.error("\r\u{1B}[K")
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : "\(value.fixed(1)) \(units[unit])"
    }
}
