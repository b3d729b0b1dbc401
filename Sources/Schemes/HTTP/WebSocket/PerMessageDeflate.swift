import FoundationEssentials
import Loader

/// Per-message compression of a WebSocket (RFC 7692, `permessage-deflate`): what the handshake offers, and what the
/// server's answer agreed to.
///
/// The offer asks for nothing but the extension: no window sizes, so the server may not limit ours
/// (`client_max_window_bits` is answered only when offered), and either side may keep its compression context
/// from message to message unless the answer says it does not.
struct PerMessageDeflate: Equatable {
    /// The handshake's `Sec-WebSocket-Extensions` value.
    static let offer = "permessage-deflate"

    /// The server starts each message with a fresh context (`server_no_context_takeover`): our inflater is reset too.
    var serverNoContextTakeover = false
    /// We must start each message with a fresh context (`client_no_context_takeover`).
    var clientNoContextTakeover = false

    /// What the server's `Sec-WebSocket-Extensions` answer (`nil` for none) agreed to, for the handshake's `offered`
    /// field (`nil` for none): `nil` for no compression. Throws a reason when the answer breaks RFC 7692 or RFC 6455
    /// §9.1: an extension not offered, a parameter unknown, repeated or out of range, `permessage-deflate` twice, or
    /// `client_max_window_bits` (even where a request of its own offered it: our compressor keeps a 15-bit window).
    static func agreed(in answer: String?, offered: String?) throws(Refusal) -> PerMessageDeflate? {
        guard let answer else { return nil }
        let extensions = answer.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        guard !extensions.isEmpty else { return nil }
        guard let offered, offered.lowercased().contains(offer) else {
            throw Refusal("the server answered with the extension \(answer), which was not offered")
        }
        guard extensions.count == 1 else { throw Refusal("the server answered with several extensions (\(answer)) where one was offered") }
        var parts = extensions[0].split(separator: ";").map { $0.trimmingSpaces() }
        let name = parts.removeFirst()
        guard name.lowercased() == offer else { throw Refusal("the server answered with the extension \(name), which was not offered") }
        var agreed = PerMessageDeflate()
        var seen: Set<String> = []
        for part in parts {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
            let key = pair[0].lowercased()
            guard seen.insert(key).inserted else { throw Refusal("the server's permessage-deflate answer names \(key) twice") }
            let value = pair.count > 1 ? String(pair[1].trimming(while: { $0 == "\"" })) : nil
            switch key {
            case "server_no_context_takeover" where value == nil:
                agreed.serverNoContextTakeover = true
            case "client_no_context_takeover" where value == nil:
                agreed.clientNoContextTakeover = true
            case "server_max_window_bits":
                // Any window up to 15 bits inflates with a 15-bit one.
                guard let value, let bits = Int(value), (8...15).contains(bits) else {
                    throw Refusal("the server's permessage-deflate answer has server_max_window_bits=\(value ?? "") (8 to 15 allowed)")
                }
            default:
                // client_max_window_bits included: the offer did not name it, so the server may not (RFC 7692 §7.1.2.2).
                throw Refusal("the server's permessage-deflate answer has \(part), which the offer did not allow")
            }
        }
        return agreed
    }

    /// Why a server's answer cannot be taken.
    struct Refusal: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
