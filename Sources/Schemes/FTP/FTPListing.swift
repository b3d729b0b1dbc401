import FoundationEssentials

/// One entry of an FTP directory listing.
public struct FTPListingEntry: Sendable, Hashable {
    /// What the entry is.
    public enum Kind: Sendable, Hashable {
        /// A regular file.
        case file
        /// A folder.
        case directory
        /// A symbolic link (``FTPListingEntry/linkTarget`` says to what, when the server says).
        case symbolicLink
        /// Anything else (devices, sockets), or a format that does not say.
        case other
    }

    /// The entry's name.
    public var name: String
    /// What it is.
    public var kind: Kind
    /// Its size in bytes, when the listing gives it.
    public var size: Int64?
    /// Its modification date as the listing wrote it (`Nov 22 10:15`, `2019`, `11-22-26 10:15AM`): FTP
    /// listings carry no time zone and often no year, so the text is given as is.
    public var dateText: String?
    /// For a symbolic link, the path it points to.
    public var linkTarget: String?

    /// Makes an entry.
    public init(name: String, kind: Kind, size: Int64?, dateText: String?, linkTarget: String?) {
        self.name = name
        self.kind = kind
        self.size = size
        self.dateText = dateText
        self.linkTarget = linkTarget
    }
}

/// Parses the listings FTP servers send for `LIST`: the Unix `ls -l` format most servers use, and the
/// MS-DOS format of IIS. Lines in neither format (a `total` line, a banner) are skipped.
public enum FTPListing {
    /// The entries of a listing, in the server's order.
    public static func parse(_ text: String) -> [FTPListingEntry] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            parseUnix(line) ?? parseDOS(line)
        }
    }

    /// `drwxr-xr-x 2 owner group 4096 Nov 22 10:15 name` (the link count, owner and group may be missing).
    static func parseUnix(_ line: Substring) -> FTPListingEntry? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 6, let mode = fields.first, mode.count >= 10,
              "-dlcbps".contains(mode.first!) else { return nil }
        // The date is three fields (month, day, time-or-year) right before the name; the size precedes it.
        // All four are checked, so that an owner or group named like a month (`jan`) is not taken for one.
        guard let monthIndex = fields.indices.dropFirst(2).first(where: { isDate(fields, at: $0) }),
              let size = Int64(fields[monthIndex - 1])
        else { return nil }
        let date = fields[monthIndex...(monthIndex + 2)].joined(separator: " ")
        // The name is the rest of the line after the date's third field, spaces included.
        let nameStart = fields[monthIndex + 2].endIndex
        var name = line[nameStart...].drop { $0 == " " }
        guard !name.isEmpty else { return nil }
        var target: String?
        let kind: FTPListingEntry.Kind
        switch mode.first {
        case "-": kind = .file
        case "d": kind = .directory
        case "l":
            kind = .symbolicLink
            if let arrow = name.firstRange(of: " -> ") {
                target = String(name[arrow.upperBound...])
                name = name[..<arrow.lowerBound]
            }
        default: kind = .other
        }
        return FTPListingEntry(name: String(name), kind: kind, size: size, dateText: date, linkTarget: target)
    }

    /// `11-22-26  10:15AM       <DIR>          name` or `… 1234 name`.
    static func parseDOS(_ line: Substring) -> FTPListingEntry? {
        let fields = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
        guard fields.count == 4, fields[0].count == 8 || fields[0].count == 10, fields[0].contains("-"),
              fields[1].hasSuffix("AM") || fields[1].hasSuffix("PM") || fields[1].contains(":")
        else { return nil }
        let date = "\(fields[0]) \(fields[1])"
        let name = String(fields[3].drop { $0 == " " })
        if fields[2] == "<DIR>" {
            return FTPListingEntry(name: name, kind: .directory, size: nil, dateText: date, linkTarget: nil)
        }
        guard let size = Int64(fields[2]) else { return nil }
        return FTPListingEntry(name: name, kind: .file, size: size, dateText: date, linkTarget: nil)
    }

    /// Whether `fields[index]` starts a date: a month after a size, then a day of one or two digits, then a
    /// time (`10:15`) or a year (`2025`).
    private static func isDate(_ fields: [Substring], at index: Int) -> Bool {
        guard index + 2 < fields.count, months.contains(fields[index].lowercased()), Int64(fields[index - 1]) != nil else { return false }
        let day = fields[index + 1], last = fields[index + 2]
        guard (1...2).contains(day.count), day.allSatisfy({ $0.isASCII && $0.isNumber }) else { return false }
        return last.contains(":") || (last.count == 4 && last.allSatisfy { $0.isASCII && $0.isNumber })
    }

    private static let months: Set<String> = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
}
