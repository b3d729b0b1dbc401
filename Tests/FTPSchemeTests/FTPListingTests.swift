import FTPScheme
import Testing

@Suite("FTPListing: Unix and MS-DOS listing formats")
struct FTPListingTests {
    @Test("Unix ls -l lines: files, folders, links, names with spaces; other lines skipped")
    func unix() {
        let text = """
        total 12
        -rw-r--r--   1 owner    group        1234 Nov 22 10:15 notes.txt
        drwxr-xr-x   2 owner    group        4096 Jan  3  2019 old stuff
        lrwxrwxrwx   1 owner    group           7 Feb 14 09:00 latest -> v1.2.3
        -rw-r--r--   1 ftp      ftp   5368709120 Mar  1 12:00 big.iso
        """
        let entries = FTPListing.parse(text)
        #expect(entries.count == 4)
        #expect(entries[0] == FTPListingEntry(name: "notes.txt", kind: .file, size: 1234, dateText: "Nov 22 10:15", linkTarget: nil))
        #expect(entries[1].name == "old stuff")
        #expect(entries[1].kind == .directory)
        #expect(entries[1].dateText == "Jan 3 2019")
        #expect(entries[2].kind == .symbolicLink)
        #expect(entries[2].name == "latest")
        #expect(entries[2].linkTarget == "v1.2.3")
        #expect(entries[3].size == 5_368_709_120)
    }

    @Test("An owner or group named like a month, and a name holding a date, do not shift the fields")
    func monthLikeNames() {
        let line = "-rw-r--r--   1 jan      may          1234 Nov 22 10:15 minutes of dec 1 2020.txt"
        #expect(FTPListing.parse(line) == [
            FTPListingEntry(name: "minutes of dec 1 2020.txt", kind: .file, size: 1234, dateText: "Nov 22 10:15", linkTarget: nil),
        ])
    }

    @Test("MS-DOS (IIS) lines: folders and files")
    func dos() {
        let text = """
        11-22-26  10:15AM       <DIR>          Reports 2026
        01-03-19  09:00PM              1234567 data.csv
        """
        let entries = FTPListing.parse(text)
        #expect(entries.count == 2)
        #expect(entries[0].name == "Reports 2026")
        #expect(entries[0].kind == .directory)
        #expect(entries[1] == FTPListingEntry(name: "data.csv", kind: .file, size: 1_234_567, dateText: "01-03-19 09:00PM", linkTarget: nil))
    }

    @Test("Text in neither format gives no entries")
    func junk() {
        #expect(FTPListing.parse("226 Transfer complete\nhello world\n").isEmpty)
    }
}
