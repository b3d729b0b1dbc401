import Foundation
import NIOCore

/// The body buffers of one read burst, copied once into the `Data` the reader gets.
struct PendingBody {
    private var buffers: [ByteBuffer] = []
    private var count = 0

    mutating func append(_ buffer: ByteBuffer) {
        guard buffer.readableBytes > 0 else { return }
        buffers.append(buffer)
        count += buffer.readableBytes
    }

    /// The bytes gathered so far as one chunk, or `nil` if there are none; empties the batch.
    mutating func take() -> Data? {
        guard count > 0 else { return nil }
        defer {
            buffers.removeAll(keepingCapacity: true)
            count = 0
        }
        if buffers.count == 1 { return Data(buffers[0].readableBytesView) }
        var data = Data(capacity: count)
        for buffer in buffers { data.append(contentsOf: buffer.readableBytesView) }
        return data
    }
}
