import Foundation

/// The body of one response while it arrives: appended on the transport thread, handed over once as
/// `Data` when the transfer completes.
///
/// A body announced by Content-Length as at least `BodyBufferPool.minimumSize` is written into a pooled
/// buffer (see BodyBufferPool); smaller or unannounced bodies into a `Data` reserved up front. A server
/// that sends more than it announced (curl normally stops that) moves the bytes so far into a `Data`.
final class ResponseBody {
    private let pool: BodyBufferPool
    private var data = Data()
    private var buffer: BodyBufferPool.Buffer?
    private var bufferCount = 0

    init(pool: BodyBufferPool = .shared) {
        self.pool = pool
    }

    deinit {
        if let buffer { pool.recycle(buffer) }
    }

    /// Prepares room for `expected` bytes (the declared length, already bounded by the size limit). A
    /// length the pool cannot serve falls back to an ordinary `Data`.
    func reserve(_ expected: Int) {
        guard buffer == nil, data.isEmpty, expected > 0 else { return }
        if expected >= BodyBufferPool.minimumSize, let pooled = pool.take(atLeast: expected) {
            buffer = pooled
        } else {
            data.reserveCapacity(expected)
        }
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        if let buffer {
            if let base = bytes.baseAddress, bufferCount + bytes.count <= buffer.capacity {
                (buffer.pointer + bufferCount).copyMemory(from: base, byteCount: bytes.count)
                bufferCount += bytes.count
                return
            }
            guard bytes.count > 0 else { return }
            data = Data(bytes: buffer.pointer, count: bufferCount)
            pool.recycle(buffer)
            self.buffer = nil
            bufferCount = 0
        }
        data.append(bytes.bindMemory(to: UInt8.self))
    }

    /// A copy of the bytes so far (for a progressive decode).
    var snapshot: Data {
        guard let buffer else { return data }
        return Data(bytes: buffer.pointer, count: bufferCount)
    }

    /// The whole body; the object is empty afterwards.
    func take() -> Data {
        if let buffer {
            self.buffer = nil
            defer { bufferCount = 0 }
            return pool.data(buffer, count: bufferCount)
        }
        defer { data = Data() }
        return data
    }
}
