import Dispatch
import Foundation
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageTransport

@Suite(.timeLimit(.minutes(5))) struct QueueChannelTests {
    @Test func blocksRunOnTheQueueInTheOrderSentFromSeveralThreads() {
        let queue = namedQueue("test.channel")
        let channel = QueueChannel(queue: queue)
        let seen = Locked<[(thread: Int, index: Int, onQueue: Bool)]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<500 {
                channel.async {
                    let onQueue = DispatchQueue.getSpecific(key: testQueueName) == "test.channel"
                    seen.update { $0.append((thread, index, onQueue)) }
                }
            }
        }
        queue.sync {}  // the drain scheduled by the first block has run everything sent before this
        let calls = seen.value
        #expect(calls.count == 2000)
        let offQueue = calls.filter { !$0.onQueue }.count
        #expect(offQueue == 0)
        for thread in 0..<4 {
            #expect(
                calls.filter { $0.thread == thread }.map(\.index) == Array(0..<500), "thread \(thread) out of order")
        }
    }

    @Test func aDrainBatchHoldsTheHopUntilItIsFlushed() {
        let queue = DispatchQueue(label: "test.channel.batch")
        let channel = QueueChannel(queue: queue)
        let ran = Locked(0)
        let batch = DrainBatch()
        batch.install()
        channel.async { ran.update { $0 += 1 } }
        channel.async { ran.update { $0 += 1 } }
        queue.sync {}
        #expect(ran.value == 0, "the drain was scheduled before the batch was flushed")
        batch.uninstall()  // flushes
        queue.sync {}
        #expect(ran.value == 2)
        #expect(DrainBatch.current == nil)
    }

    @Test func offloadedWorkLeavesTheThreadInOneBlockAtTheFlush() {
        let ran = Locked<[(index: Int, thread: UInt)]>([])
        let done = DispatchSemaphore(value: 0)
        let batch = DrainBatch()
        batch.install()
        for index in 0..<3 {
            DrainBatch.offload {
                ran.update { $0.append((index, UInt(bitPattern: Int(pthread_self())))) }
                if index == 2 { done.signal() }
            }
        }
        #expect(ran.value.isEmpty, "offloaded work ran before the flush")
        batch.uninstall()  // flushes
        #expect(done.wait(timeout: .now() + 10) == .success)
        let calls = ran.value
        #expect(calls.map(\.index) == [0, 1, 2])
        let here = UInt(bitPattern: Int(pthread_self()))
        #expect(calls.allSatisfy { $0.thread != here }, "offloaded work ran on the offloading thread")
        #expect(Set(calls.map(\.thread)).count == 1, "the work of one turn was split over several blocks")
    }

    @Test func heldHopsLeaveAfterTheOffloadedWorkOfTheirTurn() {
        // An operation finished on the transport thread is announced to its queue before any callback of
        // the same turn runs, although the callback was sent first.
        let queue = DispatchQueue(label: "test.channel.order")
        let channel = QueueChannel(queue: queue)
        let order = Locked<[String]>([])
        let batch = DrainBatch()
        batch.install()
        channel.async { order.update { $0.append("callback") } }
        DrainBatch.offload { order.update { $0.append("finish") } }
        batch.uninstall()
        #expect(poll { order.value.count == 2 })
        #expect(order.value == ["finish", "callback"])
    }

    @Test func withoutABatchOffloadedWorkRunsAtOnce() {
        #expect(DrainBatch.current == nil)
        let ran = Locked(0)
        DrainBatch.offload { ran.update { $0 += 1 } }
        #expect(ran.value == 1)
    }

    @Test func withoutABatchTheDrainIsScheduledAtOnce() {
        // The same `async` on a thread with no batch (every thread but CurlTransport's loop): the block
        // is on its queue before `async` returns, so a `sync` after it finds it already run.
        #expect(DrainBatch.current == nil)
        let queue = DispatchQueue(label: "test.channel.unbatched")
        let channel = QueueChannel(queue: queue)
        let ran = Locked(0)
        channel.async { ran.update { $0 += 1 } }
        queue.sync {}
        #expect(ran.value == 1)
    }
}
