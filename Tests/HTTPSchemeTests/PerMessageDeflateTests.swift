@testable import HTTPScheme
import Testing

/// What a server's `Sec-WebSocket-Extensions` answer agrees to, read as RFC 7692 §7.1 allows for our offer.
@Suite("ws: the permessage-deflate answer, as plain values")
struct PerMessageDeflateTests {
    @Test("Answers that agree: no extension, the bare extension, each context setting, a server window (quoted too)", arguments: [
        (nil, nil),
        ("", nil),
        ("permessage-deflate", PerMessageDeflate()),
        ("Permessage-Deflate ;server_no_context_takeover", PerMessageDeflate(serverNoContextTakeover: true)),
        ("permessage-deflate; client_no_context_takeover; server_no_context_takeover",
         PerMessageDeflate(serverNoContextTakeover: true, clientNoContextTakeover: true)),
        ("permessage-deflate; server_max_window_bits=10", PerMessageDeflate()),
        ("permessage-deflate; server_max_window_bits=\"8\"", PerMessageDeflate()),
    ] as [(String?, PerMessageDeflate?)])
    func agreed(_ answer: String?, _ expected: PerMessageDeflate?) throws {
        #expect(try PerMessageDeflate.agreed(in: answer, offered: PerMessageDeflate.offer) == expected)
    }

    @Test("Answers refused: an extension not offered, two, a window not offered or out of range, a parameter unknown, repeated or with a value", arguments: [
        "x-webkit-deflate-frame",
        "permessage-deflate, permessage-deflate",
        "permessage-deflate; client_max_window_bits=10",
        "permessage-deflate; client_max_window_bits",
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; unheard_of",
    ])
    func refused(_ answer: String) {
        #expect(throws: PerMessageDeflate.Refusal.self) { try PerMessageDeflate.agreed(in: answer, offered: PerMessageDeflate.offer) }
    }

    @Test("With nothing offered, or another extension offered, a permessage-deflate answer is refused; with no answer there is none")
    func notOffered() throws {
        for offered in [nil, "x-webkit-deflate-frame"] as [String?] {
            #expect(throws: PerMessageDeflate.Refusal.self) { try PerMessageDeflate.agreed(in: "permessage-deflate", offered: offered) }
            #expect(try PerMessageDeflate.agreed(in: nil, offered: offered) == nil)
        }
    }
}
