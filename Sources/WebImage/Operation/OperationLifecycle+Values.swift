// The lifecycle's value types: the states' payloads, the state's case alone, and the progress clock.

extension OperationLifecycle {
    /// What a running transfer has told so far.
    struct Transferring {
        let transfer: Transfer
        /// The incremental decoder, made on first use; it goes on to `processing`, where the final
        /// decode reuses it.
        var decoder: Decoder?
        /// The final response head, once it arrived.
        var response: TransferResponse?
        /// With `.useURLCache` on a request the cache may serve: the exchange with the cache.
        var cache: HTTPCacheExchange?
    }

    /// What a transfer being stopped keeps: its head, and what a 304 may still teach the cache.
    struct Stopping {
        var response: TransferResponse?
        var cache: HTTPCacheExchange?
    }

    /// What serving the outcome needs from before.
    struct Processing {
        /// The response head (the network's, or the cache's on a fresh hit); nil for a processed-image
        /// cache hit and some failures.
        var response: TransferResponse?
        /// The incremental decoder the partial decodes used, or the final decode makes.
        var decoder: Decoder?
    }

    /// The cases of `State`, without their payloads.
    enum Phase {
        case waiting, cancelledWaiting, preparing, cancelledPreparing, transferring, stopping, processing, finished
    }

    /// What the body's chunks read and set while transferring: only plain values.
    struct ProgressClock {
        /// Whether partial images are decoded as the body arrives.
        var decodesProgressively = false
        /// A progressive decode is under way (one at a time).
        var decodingPartial = false
        /// The decoded body length the response announced, -1 when unknown.
        var expectedSize: Int64 = -1
        /// When progress was last reported (uptime nanoseconds), for the throttle.
        var lastProgress: UInt64 = 0
    }
}

extension OperationLifecycle.State {
    /// This state's case.
    var phase: OperationLifecycle.Phase {
        switch self {
        case .waiting: .waiting
        case .cancelledWaiting: .cancelledWaiting
        case .preparing: .preparing
        case .cancelledPreparing: .cancelledPreparing
        case .transferring: .transferring
        case .stopping: .stopping
        case .processing: .processing
        case .finished: .finished
        }
    }
}
