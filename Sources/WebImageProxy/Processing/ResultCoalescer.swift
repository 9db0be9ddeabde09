import Foundation
import Locking
import WebImage

/// One piece of work per result: the first request for a key starts the work, every request for the same
/// key that arrives before it ends waits for the same outcome.
///
/// The work runs in its own task, so a waiter that gives up (its deadline passed, its client left) leaves
/// the others, and the result still reaches the cache. The entry is removed only when the work ends,
/// after the work stored its result, so a request arriving later finds the cache filled.
final class ResultCoalescer: Sendable {
    /// The work's result: the encoded image or the error to answer with.
    typealias Outcome = Result<Data, ProxyError>

    /// What a waiter gets: the outcome, and whether it joined work another request started.
    struct Shared: Sendable {
        var outcome: Outcome
        var joined: Bool
    }

    private struct Entry {
        var starter: Int
        var waiters: [Int: CheckedContinuation<Shared, Never>]
    }

    private struct State {
        var entries: [ProcessedImageKey: Entry] = [:]
        var lastWaiter = 0
    }

    private let state = Lock(State())

    /// The outcome for `key`: from work already running for it, or from `work`, started now. Cancelling
    /// the caller ends its wait with a 504 outcome; the work goes on for the others.
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
                let decision = state.withLock { state -> Registration in
                    if Task.isCancelled { return .cancelled }
                    if state.entries[key] != nil {
                        state.entries[key]?.waiters[id] = continuation
                        return .joined
                    }
                    state.entries[key] = Entry(starter: id, waiters: [id: continuation])
                    return .started
                }
                switch decision {
                case .cancelled:
                    continuation.resume(returning: Shared(outcome: .failure(Self.gaveUp), joined: false))
                case .joined:
                    break
                case .started:
                    Task { self.finish(key, with: await work()) }
                }
            }
        } onCancel: {
            let waiter = state.withLock { $0.entries[key]?.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: Shared(outcome: .failure(Self.gaveUp), joined: false))
        }
    }

    /// How many requests wait for a result now, the ones that started its work included.
    var waiterCount: Int { state.withLock { $0.entries.values.reduce(0) { $0 + $1.waiters.count } } }

    private enum Registration {
        case cancelled, joined, started
    }

    private func finish(_ key: ProcessedImageKey, with outcome: Outcome) {
        guard let entry = state.withLock({ $0.entries.removeValue(forKey: key) }) else { return }
        for (id, waiter) in entry.waiters {
            waiter.resume(returning: Shared(outcome: outcome, joined: id != entry.starter))
        }
    }

    private static let gaveUp = ProxyError(status: 504, "the request took longer than its deadline")
}
