import Foundation
import LocalImageServer
import Locking
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage

/// The stages a complete body goes through (decode, then transform and encode per distinct output): callers
/// of one URL asking for different outputs are processed at the same time, identical ones share one job,
/// and a job whose callers all left is never run. Every wait is on an event, with a generous limit.
@Suite(.timeLimit(.minutes(5))) struct ProcessingStageTests {
    /// How many transforms are inside `transform` now, and the most that ever were at once.
    final class Rendezvous: @unchecked Sendable {
        // @unchecked Sendable: every field is read and written only while `condition` is locked.
        private let condition = NSCondition()
        private var inside = 0
        private var peak = 0

        /// Enters, then waits until `count` transforms are inside at once (or `seconds` passed); true when
        /// they were.
        func meet(_ count: Int, seconds: Double = 60) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            inside += 1
            peak = max(peak, inside)
            condition.broadcast()
            let deadline = Date(timeIntervalSinceNow: seconds)
            while peak < count, condition.wait(until: deadline) {}
            inside -= 1
            return peak >= count
        }

        var peakInside: Int {
            condition.lock()
            defer { condition.unlock() }
            return peak
        }
    }

    /// A resize that, before resizing, waits for `count` transforms to be running at once, and fails the
    /// caller when they never were: on a processing stage that runs one output after another it fails.
    struct MeetingTransformer: ImageTransforming {
        let side: Int
        let rendezvous: Rendezvous
        let count: Int
        var key: String { "meeting-\(side)" }

        func transform(_ image: Image) throws -> Image {
            guard rendezvous.meet(count) else {
                throw ImageCodecError(.badImageData, "the other transforms never ran at the same time")
            }
            return try ImageTransformer.resize(to: PixelSize(width: side, height: side)).transform(image)
        }
    }

    @Test("a stage runs at most its width of jobs at once; the others wait for a running one to end")
    func aStageIsBounded() {
        let stage = WorkStage(width: 2, target: DispatchQueue(label: "test.stage", attributes: .concurrent))
        let (started, gate, done) = (
            DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)
        )
        let load = Locked((inside: 0, peak: 0, ran: [Int]()))
        for job in 0..<5 {
            stage.submit {
                load.update {
                    $0.inside += 1
                    $0.peak = max($0.peak, $0.inside)
                    $0.ran.append(job)
                }
                started.signal()
                _ = gate.wait(timeout: .now() + 120)
                load.update { $0.inside -= 1 }
                done.signal()
            }
        }
        #expect(stage.runningCount == 2, "five jobs submitted to a stage two wide")
        for _ in 0..<2 { #expect(started.wait(timeout: .now() + 120) == .success) }
        gate.signal()
        #expect(done.wait(timeout: .now() + 120) == .success)
        #expect(started.wait(timeout: .now() + 120) == .success, "the ended job's slot went to a waiting one")
        for _ in 0..<4 { gate.signal() }
        for _ in 0..<4 { #expect(done.wait(timeout: .now() + 120) == .success) }
        #expect(load.value.peak == 2)
        #expect(load.value.ran.sorted() == Array(0..<5))
    }

    @Test("different outputs of one source are transformed at the same time")
    func differentOutputsOfOneSourceRunInParallel() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let outputs = 3
        let downloader = server.downloader { $0.maximumConcurrentProcessing = outputs }
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let rendezvous = Rendezvous()
        let recorder = CallbackRecorder()
        // Every caller is attached before the body arrives (the gate), so all are served from one body.
        let url = server.url("/files/horse-rgba.png?gate=sizes")
        for tag in 0..<outputs {
            var context = ImageDownloadContext()
            context.transformer = MeetingTransformer(side: 50 + tag * 10, rendezvous: rendezvous, count: outputs)
            downloader.downloadImage(with: url, context: context, completed: recorder.completion(tag))
        }
        server.openGate("sizes")
        #expect(recorder.waitForTerminal(outputs, seconds: 240))
        #expect(server.count(for: "/files/horse-rgba.png") == 1)
        #expect(rendezvous.peakInside == outputs, "the outputs were made one after another")
        for tag in 0..<outputs {
            let terminals = recorder.terminals(tag: tag)
            #expect(terminals.count == 1)
            #expect(terminals.first?.error == nil, "\(terminals.first?.error?.description ?? "")")
            #expect(terminals.first?.image?.width == 50 + tag * 10)
        }
    }

    /// An encoder that counts its calls and, when given a gate, waits at it before encoding.
    struct CountingEncoder: ImageEncoding {
        let name: String
        let calls: Locked<Int>
        var entered: DispatchSemaphore?
        var gate: DispatchSemaphore?
        var format: ImageFormat { .png }
        var key: String { "counting-\(name)" }

        func encode(_ image: Image) throws -> Data {
            calls.update { $0 += 1 }
            entered?.signal()
            if let gate, gate.wait(timeout: .now() + 120) == .timedOut {
                throw ImageCodecError(.badImageData, "the test never opened the gate")
            }
            return try PNGEncoder().encode(image)
        }
    }

    @Test("callers asking for the same output share one transform and one encode")
    func identicalRequestsCoalesce() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader()
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let encodes = Locked(0)
        let otherEncodes = Locked(0)
        let recorder = CallbackRecorder()
        let url = server.url("/files/horse-rgba.png?gate=same")
        func context(_ encoder: CountingEncoder) -> ImageDownloadContext {
            var context = ImageDownloadContext()
            context.transformer = ImageTransformer.resize(to: PixelSize(width: 80, height: 80))
            context.encoder = encoder
            return context
        }
        for tag in 0..<4 {
            downloader.downloadImage(
                with: url, context: context(CountingEncoder(name: "same", calls: encodes)),
                completed: recorder.completion(tag))
        }
        downloader.downloadImage(
            with: url, context: context(CountingEncoder(name: "other", calls: otherEncodes)),
            completed: recorder.completion(4))
        server.openGate("same")
        #expect(recorder.waitForTerminal(5, seconds: 120))
        #expect(encodes.value == 1, "four identical callers, one encode")
        #expect(otherEncodes.value == 1)
        let same = (0..<4).compactMap { recorder.terminals(tag: $0).first?.data }
        #expect(same.count == 4 && Set(same).count == 1)
        #expect(recorder.terminals.count == 5 && recorder.terminals.allSatisfy { $0.error == nil })
    }

    @Test("a caller cancelled while its output waits for the stage gets cancelled once, and its job never runs")
    func aCancelledCallersJobIsDropped() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        // One job at a time: the first output holds the stage while the second waits behind it.
        let downloader = server.downloader { $0.maximumConcurrentProcessing = 1 }
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let (entered, gate) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let (heldEncodes, droppedEncodes) = (Locked(0), Locked(0))
        let recorder = CallbackRecorder()
        let url = server.url("/files/horse-rgba.png?gate=cancel")
        var held = ImageDownloadContext()
        held.encoder = CountingEncoder(name: "held", calls: heldEncodes, entered: entered, gate: gate)
        var dropped = ImageDownloadContext()
        dropped.encoder = CountingEncoder(name: "dropped", calls: droppedEncodes)
        downloader.downloadImage(with: url, context: held, completed: recorder.completion(1))
        let leaving = downloader.downloadImage(with: url, context: dropped, completed: recorder.completion(2))
        server.openGate("cancel")
        // Both outputs are planned once the body is decoded, in the order their callers came: the held one
        // takes the stage, and the other caller leaves while its encode waits behind it.
        #expect(entered.wait(timeout: .now() + 120) == .success, "no encode started")
        leaving?.cancel()
        #expect(recorder.waitForTerminal(1, seconds: 60))
        gate.signal()
        #expect(recorder.waitForTerminal(1, seconds: 120))
        downloader.drainCallbacks()
        #expect(recorder.terminals(tag: 2).map { $0.error?.code } == [.cancelled])
        #expect(recorder.terminals(tag: 1).count == 1 && recorder.terminals(tag: 1).first?.error == nil)
        #expect(heldEncodes.value == 1)
        #expect(droppedEncodes.value == 0, "the encode of a caller who left was run")
    }

    @Test("a job another caller still waits for runs when one of its callers leaves")
    func aJobStillWaitedForRuns() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        let downloader = server.downloader { $0.maximumConcurrentProcessing = 1 }
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let (entered, gate) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let (heldEncodes, sharedEncodes) = (Locked(0), Locked(0))
        let recorder = CallbackRecorder()
        let url = server.url("/files/horse-rgba.png?gate=stay")
        var held = ImageDownloadContext()
        held.encoder = CountingEncoder(name: "held", calls: heldEncodes, entered: entered, gate: gate)
        var shared = ImageDownloadContext()
        shared.encoder = CountingEncoder(name: "shared", calls: sharedEncodes, entered: entered)
        downloader.downloadImage(with: url, context: held, completed: recorder.completion(1))
        let leaving = downloader.downloadImage(with: url, context: shared, completed: recorder.completion(2))
        downloader.downloadImage(with: url, context: shared, completed: recorder.completion(3))
        server.openGate("stay")
        #expect(entered.wait(timeout: .now() + 120) == .success, "no encode started")
        leaving?.cancel()
        gate.signal()
        #expect(recorder.waitForTerminal(3, seconds: 120))
        downloader.drainCallbacks()
        let leaver = recorder.terminals(tag: 2)
        #expect(leaver.count == 1)
        // Cancelled, unless the shared encode was the one already running when the cancel came: then the
        // caller may have been served first. Either way it got exactly one terminal callback.
        #expect(recorder.terminals(tag: 3).count == 1 && recorder.terminals(tag: 3).first?.error == nil)
        #expect(recorder.terminals(tag: 1).count == 1 && recorder.terminals(tag: 1).first?.error == nil)
        #expect(sharedEncodes.value == 1 && heldEncodes.value == 1)
    }
}

/// `OperationLifecycle.takeCallersToServe(where:)`, which the stages use to serve each output's callers as
/// it is made, as a plain value.
@Suite struct ServingCallersByOutputTests {
    struct Caller: LifecycleCaller, Equatable {
        let id: UInt64
    }

    @Test("callers are handed out by output, each once, only while processing; served() then finishes")
    func takeCallersByOutput() {
        var lifecycle = OperationLifecycle<Caller, Int, String>()
        for id in 1...4 { _ = lifecycle.attach(Caller(id: UInt64(id))) }
        let beforeStart = lifecycle.takeCallersToServe(where: { _ in true })
        _ = lifecycle.start()
        _ = lifecycle.transferMade(7)
        let whileTransferring = lifecycle.takeCallersToServe(where: { _ in true })
        #expect(beforeStart.isEmpty && whileTransferring.isEmpty, "handed out before processing")
        _ = lifecycle.transferCompleted(succeeded: true)
        let even = lifecycle.takeCallersToServe(where: { $0.id % 2 == 0 })
        let evenAgain = lifecycle.takeCallersToServe(where: { $0.id % 2 == 0 })
        #expect(even.map(\.id) == [2, 4])
        #expect(evenAgain.isEmpty, "handed out twice")
        let cancelled = lifecycle.cancelCaller(3)
        #expect(cancelled.callers.map(\.id) == [3] && !cancelled.cancelsOperation)
        let rest = lifecycle.takeCallersToServe(where: { _ in true })
        #expect(rest.map(\.id) == [1])
        let finishes = lifecycle.served()
        #expect(finishes && lifecycle.isFinished)
    }
}
