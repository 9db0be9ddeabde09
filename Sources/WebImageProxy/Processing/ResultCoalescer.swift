import Foundation
import Locking
import WebImage

/// One piece of work per result: the first request for a key starts the work, every request for the same
/// key that arrives before it ends waits for the same outcome.
///
/// The work runs in its own task, so a waiter that gives up (its deadline passed, its client left) leaves
/// the others. The work lives only while someone waits for it: when its last waiter leaves, the entry is
/// removed and the work's task cancelled, so nothing is made for no one (a later request for the key
/// starts new work). Otherwise the entry is removed when the work ends, after the work stored its result,
/// so a request arriving later finds the cache filled.
final class ResultCoalescer: Sendable {
    /// The work's result: the encoded image or the error to answer with.
    typealias Outcome = Result<Made, ProxyError>

    /// An encoded image, with the source's header fields the answer may pass on (`SourceFields`).
    struct Made: Sendable, Equatable {
        var data: Data
        var sourceFields: SourceFields = SourceFields()
    }

    /// What a waiter gets: the outcome, and whether it joined work another request started.
    struct Shared: Sendable {
        var outcome: Outcome
        var joined: Bool
    }

    private struct Entry {
        /// The waiter that started the work; it also names the work, so an ending work never removes the
        /// entry of newer work for the same key.
        var starter: Int
        var waiters: [Int: CheckedContinuation<Shared, Never>]
        var work: Task<Void, Never>
    }

    private struct State {
        var entries: [ProcessedImageKey: Entry] = [:]
        var lastWaiter = 0
    }

    private let state = Lock(State())

    /// The outcome for `key`: from work already running for it, or from `work`, started now. Cancelling
    /// the caller ends its wait with a 504 outcome; the work goes on for the others, and is cancelled when
    /// there are none.
    func result(for key: ProcessedImageKey, work: @escaping @Sendable () async -> Outcome) async -> Shared {
        let id = state.withLock { state in
            state.lastWaiter += 1
            return state.lastWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Shared, Never>) in
                // Checking for cancellation under the lock pairs with `onCancel` taking it: either this
                // sees the flag and answers now, or `onCancel` runs after the waiter is registered and
                // removes it. No waiter is left behind by a cancel that came in between.
                let cancelled = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    if state.entries[key] != nil {
                        state.entries[key]?.waiters[id] = continuation
                    } else {
                        // Made under the lock so the entry holds its task before any waiter can leave; the
                        // task itself runs later, and takes the lock only in `finish`.
                        let task = Task { self.finish(key, starter: id, with: await work()) }
                        state.entries[key] = Entry(starter: id, waiters: [id: continuation], work: task)
                    }
                    return false
                }
                if cancelled {
                    continuation.resume(returning: Shared(outcome: .failure(Self.gaveUp), joined: false))
                }
            }
        } onCancel: {
            let (waiter, abandoned) = state.withLock {
                state -> (CheckedContinuation<Shared, Never>?, Task<Void, Never>?) in
                guard let waiter = state.entries[key]?.waiters.removeValue(forKey: id) else { return (nil, nil) }
                guard let entry = state.entries[key], entry.waiters.isEmpty else { return (waiter, nil) }
                state.entries[key] = nil
                return (waiter, entry.work)
            }
            abandoned?.cancel()
            waiter?.resume(returning: Shared(outcome: .failure(Self.gaveUp), joined: false))
        }
    }

    /// How many requests wait for a result now, the ones that started its work included.
    var waiterCount: Int { state.withLock { $0.entries.values.reduce(0) { $0 + $1.waiters.count } } }

    private func finish(_ key: ProcessedImageKey, starter: Int, with outcome: Outcome) {
        let entry = state.withLock { state -> Entry? in
            guard state.entries[key]?.starter == starter else { return nil }  // abandoned: nobody waits
            return state.entries.removeValue(forKey: key)
        }
        guard let entry else { return }
        for (id, waiter) in entry.waiters {
            waiter.resume(returning: Shared(outcome: outcome, joined: id != entry.starter))
        }
    }

    private static let gaveUp = ProxyError(status: 504, "the request took longer than its deadline")
}
