import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension WebImageCLI.Serve {
    /// glibc's `mallopt` settings `webimage serve` makes at start: blocks under 16 MiB come from the heap, and
    /// a heap gives memory back to the kernel only when more than 32 MiB is free at its top.
    ///
    /// Why: glibc's defaults move with the first large blocks a process frees (its "dynamic threshold"), so
    /// whether each request's decode, resample and encode buffers are kept for the next request or handed
    /// back and faulted in again depended on the order of a run's first frees. Measured on the serve
    /// benchmark's 256×256 JPEG job: 27 minor page faults a request with them handed back, none kept, and
    /// the zeroing and cache misses that come with the faults. A source larger than 16 MiB decoded (a 2000×2000
    /// photo at full size and up) still gets its own mapping, which is unmapped when it is freed, so a burst
    /// of large images does not leave the heaps large.
    ///
    /// Nothing is changed when the environment sets glibc's malloc tunables (`GLIBC_TUNABLES` naming
    /// `glibc.malloc`, or `MALLOC_TRIM_THRESHOLD_` / `MALLOC_MMAP_THRESHOLD_`): an operator's choice stands.
    static let allocatorSettings: [(option: Int32, value: Int32)] = [
        (-3, 16 << 20),  // M_MMAP_THRESHOLD
        (-1, 32 << 20),  // M_TRIM_THRESHOLD
    ]

    /// Applies ``allocatorSettings`` unless `environment` sets glibc's malloc tunables; returns whether it did.
    /// `mallopt` is looked up at run time: Swift's Glibc module does not import `malloc.h`'s tuning calls.
    @discardableResult
    static func tuneAllocator(environment: [String: String]) -> Bool {
        #if canImport(Glibc)
            if environment["GLIBC_TUNABLES"]?.contains("glibc.malloc") == true
                || environment["MALLOC_TRIM_THRESHOLD_"] != nil || environment["MALLOC_MMAP_THRESHOLD_"] != nil
            {
                return false
            }
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return false }
            typealias MallOpt = @convention(c) (Int32, Int32) -> Int32
            let mallopt = unsafeBitCast(symbol, to: MallOpt.self)
            return allocatorSettings.allSatisfy { mallopt($0.option, $0.value) == 1 }
        #else
            return false
        #endif
    }
}
