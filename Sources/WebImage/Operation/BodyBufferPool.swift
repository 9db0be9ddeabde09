import Dispatch
import Foundation
import Locking

/// Large body buffers, kept after their `Data` is released so the next large download writes into
/// memory that is already mapped.
///
/// A fresh multi-megabyte allocation is fresh pages from the kernel: storing a 5 MiB body faults in
/// 1,280 pages, and on a virtual machine each fault costs microseconds — more than receiving the bytes.
/// Bodies with a Content-Length of at least `minimumSize` are therefore written into a pooled buffer
/// and handed to callers as `Data` that returns the buffer here when the last copy of it goes away.
///
/// Bounded: at most `maximumIdleBytes` wait here, a buffer is reused only for a body at least half its
/// size, and idle buffers are freed after `idleLifetime` seconds without use.
final class BodyBufferPool: Sendable {
    /// One heap buffer. A plain pointer and size; whoever holds the value owns the memory.
    struct Buffer: @unchecked Sendable {
        // @unchecked Sendable: a buffer is owned by one holder at a time (the pool's idle list, one
        // ResponseBody, or the deallocator of one Data); ownership moves, it is never shared.
        let pointer: UnsafeMutableRawPointer
        let capacity: Int
    }

    private struct Idle {
        var buffers: [(buffer: Buffer, since: DispatchTime)] = []
        var bytes = 0
        var trimScheduled = false
    }

    /// The pool every downloader uses.
    static let shared = BodyBufferPool()

    /// Bodies smaller than this use an ordinary `Data`.
    static let minimumSize = 1 << 20

    let maximumIdleBytes: Int
    let idleLifetime: Double
    private let idle = Lock(Idle())

    init(maximumIdleBytes: Int = 48 << 20, idleLifetime: Double = 10) {
        self.maximumIdleBytes = maximumIdleBytes
        self.idleLifetime = idleLifetime
    }

    /// Bytes of idle buffers held now.
    var idleBytes: Int { idle.withLock { $0.bytes } }

    /// A buffer of at least `size` bytes: the smallest idle one that fits and is not more than twice as
    /// large, or a new one; nil when memory cannot be allocated.
    func take(atLeast size: Int) -> Buffer? {
        // A declared length comes from the network: no arithmetic on it may overflow.
        guard size > 0, size <= Int.max / 2 else { return nil }
        let reused = idle.withLock { idle -> Buffer? in
            let fitting = idle.buffers.indices.filter { (size...2 * size).contains(idle.buffers[$0].buffer.capacity) }
            guard let best = fitting.min(by: { idle.buffers[$0].buffer.capacity < idle.buffers[$1].buffer.capacity })
            else { return nil }
            let buffer = idle.buffers.remove(at: best).buffer
            idle.bytes -= buffer.capacity
            return buffer
        }
        if let reused { return reused }
        return Self.allocate(atLeast: size)
    }

    /// A new buffer, rounded up to a whole MiB so bodies of similar size share buffers.
    ///
    /// Not huge-page backed: `MADV_HUGEPAGE` buffers were twice as fast in a warm loop, but in the 5 MiB
    /// benchmark on the VM it runs on, every other run spent half its CPU zeroing huge pages
    /// (`clear_page_erms`); over six alternating runs they cost about 1.4× the CPU of plain pages.
    private static func allocate(atLeast size: Int) -> Buffer? {
        let capacity = (size + (1 << 20) - 1) & ~((1 << 20) - 1)
        return malloc(capacity).map { Buffer(pointer: $0, capacity: capacity) }
    }

    /// Takes a buffer back: kept while the idle total stays within bounds, freed otherwise.
    func recycle(_ buffer: Buffer) {
        let (kept, scheduleTrim) = idle.withLock { idle -> (Bool, Bool) in
            guard idle.bytes + buffer.capacity <= maximumIdleBytes else { return (false, false) }
            idle.buffers.append((buffer, .now()))
            idle.bytes += buffer.capacity
            let schedule = !idle.trimScheduled
            idle.trimScheduled = true
            return (true, schedule)
        }
        if !kept { free(buffer.pointer) }
        if scheduleTrim { scheduleTrimming() }
    }

    /// Frees every idle buffer unused for `idleLifetime`; runs again while buffers remain.
    private func scheduleTrimming() {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + idleLifetime) { [self] in
            let now = DispatchTime.now().uptimeNanoseconds
            let lifetime = UInt64(idleLifetime * 1e9)
            let (expired, again) = idle.withLock { idle -> ([Buffer], Bool) in
                // `since` is never later than `now`: the subtraction cannot wrap.
                let isExpired = { (entry: (buffer: Buffer, since: DispatchTime)) in
                    now - entry.since.uptimeNanoseconds >= lifetime
                }
                let expired = idle.buffers.filter(isExpired).map(\.buffer)
                idle.buffers.removeAll(where: isExpired)
                idle.bytes -= expired.reduce(0) { $0 + $1.capacity }
                idle.trimScheduled = !idle.buffers.isEmpty
                return (expired, idle.trimScheduled)
            }
            for buffer in expired { free(buffer.pointer) }
            if again { scheduleTrimming() }
        }
    }

    /// `count` bytes of `buffer` as `Data` that gives the buffer back to this pool when released.
    func data(_ buffer: Buffer, count: Int) -> Data {
        Data(bytesNoCopy: buffer.pointer, count: count, deallocator: .custom { [self] _, _ in recycle(buffer) })
    }
}
