import Dispatch

/// Everything about one operation that changes after it was created, behind the operation's one lock:
/// its lifecycle (the state machine and the callers) and what the transfer has told so far.
struct OperationState {
    var lifecycle = OperationLifecycle<DownloadCaller, any TransportTransfer>()
    var response: TransferResponse?
    /// The decoded body length the response announced, -1 when unknown.
    var expectedSize: Int64 = -1
    var lastProgressTime: DispatchTime = .init(uptimeNanoseconds: 0)
    /// The serial decode queue and incremental decoder, made on first use (progressive or final decoding).
    var decoderBox: IncrementalDecoderBox?
    /// With `.useURLCache` on a request the cache may serve: the exchange with the cache.
    var httpCache: HTTPCacheExchange?
}
