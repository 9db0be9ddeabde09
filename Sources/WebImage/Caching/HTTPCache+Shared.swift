extension HTTPCache {
    /// The process-wide cache downloaders use with `.useURLCache` when their config names none:
    /// 20 MB in memory, 150 MB on disk under `HTTPCache.defaultDirectory`. Opened on first use.
    public static let shared = HTTPCache()
}
