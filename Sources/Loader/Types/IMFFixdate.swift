import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Formats dates as HTTP's IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), without locale or time zone
/// surprises: the `Last-Modified` of responses from schemes that know a file's time.
public enum IMFFixdate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The first and last second the format can show (0000-01-01 and 9999-12-31 23:59:59 UTC, in seconds
    /// since 1970): four digits of year.
    private static let representable = -62_167_219_200...253_402_300_799

    /// The IMF-fixdate of a time in seconds since 1970 (UTC), or `nil` for a time outside the years 0000–9999,
    /// which the format cannot show: a file's owner may set any time, and such a field is better left out.
    public static func string(fromUnixTime seconds: Int) -> String? {
        guard representable.contains(seconds) else { return nil }
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return nil }
        let dayCount = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let weekday = days[((dayCount % 7) + 7) % 7]
        return "\(weekday), \(parts.tm_mday.zeroPadded(2)) \(months[Int(parts.tm_mon)]) \((Int(parts.tm_year) + 1900).zeroPadded(4)) "
            + "\(parts.tm_hour.zeroPadded(2)):\(parts.tm_min.zeroPadded(2)):\(parts.tm_sec.zeroPadded(2)) GMT"
    }
}
