import Foundation
import NIOCore
import NIOHTTP1

/// Serves the requests of one HTTP/1 connection, one at a time (`HTTPServerPipelineHandler` in front of
/// it holds pipelined requests back until the previous response's `.end` has been written), or the one
/// request of an HTTP/2 stream (behind `HTTP2FramePayloadToHTTP1ServerCodec`, which turns the stream's
/// frames into the same HTTP/1 parts). A stream is not a connection: it never counts as one closing,
/// and closing it early (a `close-mid-body` route, an error) resets that stream only.
///
/// Everything here runs on the channel's event loop, so the handler's own state needs no lock; the
/// shared log and counters live in `ServerCore` behind its mutex.
package final class ConnectionHandler: ChannelInboundHandler {
    package typealias InboundIn = HTTPServerRequestPart
    package typealias OutboundOut = HTTPServerResponsePart

    /// One response being produced.
    private struct Exchange {
        let sequence: Int
        let keepAlive: Bool
        let version: HTTPVersion
        /// A `HEAD` request or a status that never has a body (1xx, 204, 304).
        let bodyless: Bool
        let response: LocalImageServer.Response
        var headSent = false
        /// Body bytes handed to the channel so far.
        var offset = 0
        /// The pending delayed start or next drip; cancelled when the connection closes.
        var scheduled: Scheduled<Void>?
    }

    private enum State {
        case idle
        case receiving(head: HTTPRequestHead, sequence: Int, arrival: Date, body: ByteBuffer?)
        case responding(Exchange)
        case closed
    }

    /// What the handler's channel is.
    package enum Carrier {
        /// A TCP (or TLS) connection speaking HTTP/1.x.
        case http1Connection
        /// One stream of an HTTP/2 connection.
        case http2Stream
    }

    private let core: ServerCore
    private let connectionID: Int
    private let carrier: Carrier
    private var state = State.idle
    /// Set while `pump` runs: a write can re-enter the pipeline (writability changes, the next pipelined
    /// request, a close), and the outer `pump` loop re-reads `state` after every write anyway.
    private var pumping = false

    package init(core: ServerCore, connectionID: Int, carrier: Carrier = .http1Connection) {
        self.core = core
        self.connectionID = connectionID
        self.carrier = carrier
    }

    // MARK: Inbound events

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .idle):
            let request = makeRequest(head, body: nil, arrival: Date())
            state = .receiving(
                head: head, sequence: core.requestStarted(request), arrival: request.arrival, body: nil)
        case (.body(var chunk), .receiving(let head, let sequence, let arrival, var body)):
            if body == nil {
                body = chunk
            } else {
                body?.writeBuffer(&chunk)
            }
            state = .receiving(head: head, sequence: sequence, arrival: arrival, body: body)
        case (.end, .receiving(let head, let sequence, let arrival, let body)):
            respond(
                context: context, head: head, sequence: sequence,
                request: makeRequest(head, body: body, arrival: arrival))
        default:
            // A part out of order after the connection failed; the decoder reports real protocol errors.
            break
        }
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pump(context: context) }
        context.fireChannelWritabilityChanged()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        switch state {
        case .receiving(_, let sequence, _, _):
            core.requestEnded(sequence, outcome: .connectionClosed)
        case .responding(let exchange):
            exchange.scheduled?.cancel()
            core.requestEnded(exchange.sequence, outcome: .connectionClosed)
        case .idle, .closed:
            break
        }
        if case .closed = state {} else if carrier == .http1Connection { core.connectionClosed() }
        state = .closed
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: Error) {
        // Resets, TLS handshake failures, protocol errors: the connection is done; channelInactive follows.
        context.close(promise: nil)
    }

    // MARK: Responding

    private func makeRequest(_ head: HTTPRequestHead, body: ByteBuffer?, arrival: Date) -> LocalImageServer.Request {
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return LocalImageServer.Request(
            method: head.method.rawValue,
            path: String(parts[0]),
            query: parts.count > 1 ? String(parts[1]) : nil,
            headers: head.headers.map { ($0.name, $0.value) },
            body: body.map { Data($0.readableBytesView) } ?? Data(),
            connectionID: connectionID,
            arrival: arrival,
            httpVersion: head.version.major == 2 ? "2" : "\(head.version.major).\(head.version.minor)"
        )
    }

    private func respond(
        context: ChannelHandlerContext, head: HTTPRequestHead, sequence: Int, request: LocalImageServer.Request
    ) {
        let response = core.response(for: request)
        let bodyless = head.method == .HEAD || response.status < 200 || response.status == 204 || response.status == 304
        state = .responding(
            Exchange(
                // A stream ends with its response; only an HTTP/1 connection can be asked to close.
                sequence: sequence, keepAlive: carrier == .http2Stream || head.isKeepAlive, version: head.version,
                bodyless: bodyless,
                response: response))
        if let gate = response.gate {
            // The gate may open on any thread; the handler and its context belong to the event loop, so the
            // opening hops there. A connection closed meanwhile has left `.responding` and ignores it.
            let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            core.whenGateOpens(gate) {
                eventLoop.execute {
                    let (handler, context) = loopBound.value
                    handler.gateOpened(sequence: sequence, context: context)
                }
            }
        } else {
            startResponse(context: context)
        }
    }

    private func gateOpened(sequence: Int, context: ChannelHandlerContext) {
        guard case .responding(let exchange) = state, exchange.sequence == sequence, !exchange.headSent else { return }
        startResponse(context: context)
    }

    /// Sends the head now, or after the response's delay.
    private func startResponse(context: ChannelHandlerContext) {
        guard case .responding(let exchange) = state else { return }
        if exchange.response.delay > .zero {
            schedule(context: context, after: exchange.response.delay) { $0.sendHead(context: context) }
        } else {
            sendHead(context: context)
        }
    }

    /// Runs `action` after `delay` unless the connection closes first, remembering the task in the exchange.
    private func schedule(
        context: ChannelHandlerContext, after delay: Duration, _ action: @escaping (ConnectionHandler) -> Void
    ) {
        guard case .responding(var exchange) = state else { return }
        let (seconds, attoseconds) = delay.components
        let amount = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        exchange.scheduled = context.eventLoop.assumeIsolated().scheduleTask(in: amount) {
            guard case .responding(var current) = self.state else { return }
            current.scheduled = nil
            self.state = .responding(current)
            action(self)
        }
        state = .responding(exchange)
    }

    private func sendHead(context: ChannelHandlerContext) {
        guard case .responding(var exchange) = state else { return }
        exchange.scheduled = nil
        let response = exchange.response
        if case .hang = response.delivery, !exchange.bodyless {
            state = .responding(exchange)
            return
        }

        var headers = HTTPHeaders(response.headers.map { ($0.name, $0.value) })
        let hasFraming = headers.contains(name: "Content-Length") || headers.contains(name: "Transfer-Encoding")
        let noBodyStatus = response.status < 200 || response.status == 204 || response.status == 304
        if !hasFraming && !noBodyStatus {
            if case .chunked = response.delivery, !exchange.bodyless {
                headers.add(name: "Transfer-Encoding", value: "chunked")
            } else {
                headers.add(name: "Content-Length", value: String(response.body.count))
            }
        }
        if !exchange.keepAlive && !headers.contains(name: "Connection") {
            headers.add(name: "Connection", value: "close")
        }
        let head = HTTPResponseHead(
            version: exchange.version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        exchange.headSent = true
        state = .responding(exchange)
        core.responseHeadSent(exchange.sequence, status: response.status)
        context.write(wrapOutboundOut(.head(head)), promise: nil)

        if exchange.bodyless || response.body.count == 0 {
            finish(context: context)
        } else {
            pump(context: context)
        }
    }

    /// Writes as much body as the delivery allows now; continues on writability or on the drip timer.
    private func pump(context: ChannelHandlerContext) {
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }

        while case .responding(var exchange) = state, exchange.headSent, exchange.scheduled == nil {
            let total = exchange.response.body.count
            let start = exchange.offset
            switch exchange.response.delivery {
            case .contentLength, .chunked:
                guard start < total else { return finish(context: context) }
                guard context.channel.isWritable else { return }
                var pieceSize = 65_536
                if case .chunked(let chunkSize) = exchange.response.delivery { pieceSize = max(chunkSize, 1) }
                exchange.offset = min(start + pieceSize, total)
                state = .responding(exchange)
                writeBody(context: context, exchange: exchange, range: start..<exchange.offset)
            case .drip(let chunkSize, let interval):
                exchange.offset = min(start + max(chunkSize, 1), total)
                state = .responding(exchange)
                writeBody(context: context, exchange: exchange, range: start..<exchange.offset)
                guard case .responding = state else { return }
                if exchange.offset >= total { return finish(context: context) }
                return schedule(context: context, after: interval) { $0.pump(context: context) }
            case .closeAfter(let bytes):
                exchange.offset = min(max(bytes, 0), total)
                state = .responding(exchange)
                // Close only once the partial body has reached the socket; closing earlier would discard it.
                let written = writeBody(context: context, exchange: exchange, range: start..<exchange.offset)
                written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
                return
            case .hang:
                // Unreachable in practice: `sendHead` sends no head for a hang, and `pump` needs one.
                return
            }
        }
    }

    @discardableResult
    private func writeBody(context: ChannelHandlerContext, exchange: Exchange, range: Range<Int>) -> EventLoopFuture<
        Void
    > {
        let buffer = context.channel.allocator.buffer(bytes: exchange.response.body.bytes(range))
        let written = context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))))
        let core = self.core
        let sequence = exchange.sequence
        let count = range.count
        // Counted when the socket accepted the bytes, so an aborted download shows how far it got.
        written.whenSuccess { core.bodyBytesSent(sequence, count: count) }
        return written
    }

    private func finish(context: ChannelHandlerContext) {
        guard case .responding(let exchange) = state else { return }
        // Become idle and leave the in-flight count before writing `.end`: the pipeline handler may hand
        // us the next pipelined request from inside that write.
        state = .idle
        core.requestEnded(exchange.sequence, outcome: .completed)
        let ended = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !exchange.keepAlive {
            ended.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}
