import Foundation
import Locking

/// A dependency that is satisfied when its owner *starts*, used to run LIFO without serializing the queue.
///
/// With plain dependency chaining (each older operation depends on the next newer one, SDWebImage's
/// way), an older operation waits for the newer one to *finish*, so only one download runs at a time
/// (SDWebImage #2826). Here the newest not-yet-started operation depends on the new operation's gate,
/// and the gate opens as soon as the new operation starts: the next-newest becomes ready while the
/// newest runs, so every free slot takes the newest waiting operation.
///
/// The gate is never added to a queue: it is started by hand, which corelibs supports for any
/// operation, and which finishes it synchronously and marks its dependents ready.
final class StartGate: Operation, @unchecked Sendable {
    // @unchecked Sendable: `state` is behind a Lock; Operation's own state has its own locks.

    private enum State {
        case closed([Operation])
        /// `start()` is running; dependents added now may still be counted, so they are kept too.
        case opening([Operation])
        case open
    }

    /// corelibs keeps *unretained* pointers to the operations that depend on this one and walks them when
    /// this one finishes; an operation released before that would be a dangling pointer (SIGSEGV). The
    /// gate therefore keeps every dependent alive until its own finish notification has returned.
    private let state = Lock(State.closed([]))

    /// Makes `operation` wait for this gate. Returns false once the gate has opened (nothing to wait for).
    @discardableResult
    func hold(_ operation: Operation) -> Bool {
        let added = state.withLock { state -> Bool in
            switch state {
            case .closed(let list): state = .closed(list + [operation])
            case .opening(let list): state = .opening(list + [operation])
            case .open: return false
            }
            return true
        }
        // Added outside our lock: corelibs takes its own operation locks, and a dependency that finishes
        // concurrently is simply not counted.
        if added { operation.addDependency(self) }
        return added
    }

    /// Opens the gate once; later calls do nothing.
    func open() {
        let shouldStart = state.withLock { state -> Bool in
            guard case .closed(let list) = state else { return false }
            state = .opening(list)
            return true
        }
        guard shouldStart else { return }
        start()  // runs the empty main() and posts isFinished, which readies the dependents
        state.withLock { $0 = .open }  // only now may the dependents be released
    }
}
