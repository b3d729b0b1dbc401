/// Punycode (RFC 3492), the encoding of a Unicode domain label in letters, digits and hyphens that IDNA puts
/// after `xn--`. Only what matching domains against the Public Suffix List needs: the list writes some rules
/// in Unicode, hosts arrive in either form, and both are compared in their ASCII form.
enum Punycode {
    private static let base = 36
    private static let tMin = 1
    private static let tMax = 26
    private static let skew = 38
    private static let damp = 700
    private static let initialBias = 72
    private static let initialN = 128

    /// `label`'s ASCII form: itself if it is all ASCII, else `xn--` and its Punycode; `nil` if it cannot be
    /// encoded (too long for the arithmetic).
    static func asciiLabel(_ label: Substring) -> String? {
        if label.utf8.allSatisfy({ $0 < 0x80 }) { return String(label) }
        return encode(Array(label.unicodeScalars.map(\.value))).map { "xn--" + $0 }
    }

    /// The Punycode of `codePoints`, without the `xn--` prefix.
    static func encode(_ codePoints: [UInt32]) -> String? {
        var output = codePoints.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN, delta = 0, bias = initialBias
        while handled < codePoints.count {
            // The smallest code point not yet handled: each round inserts every occurrence of it.
            guard let next = codePoints.lazy.map({ Int($0) }).filter({ $0 >= n }).min() else { return nil }
            let (grown, overflow) = (next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow, delta <= Int(Int32.max) - grown else { return nil }
            delta += grown
            n = next
            for point in codePoints.lazy.map({ Int($0) }) {
                if point < n { delta += 1 }
                guard point == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = threshold(k, bias: bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, count: handled + 1, first: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    private static func threshold(_ k: Int, bias: Int) -> Int {
        k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
    }

    private static func adapt(_ delta: Int, count: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / count
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + ((base - tMin + 1) * delta) / (delta + skew)
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? 97 + value : 22 + value)))
    }
}
