#if canImport(Glibc)
    import Glibc
#endif

/// Which sanitizer the test binary (and the products built with it) runs under.
package enum Sanitizers {
    /// Whether AddressSanitizer's runtime is linked in (`swift test --sanitize=address`).
    package static let addressSanitizerIsOn = linked("__asan_init")
    /// Whether a sanitizer that maps terabytes of shadow memory (address or thread) is linked in: such a
    /// process cannot run under an address-space limit (`ulimit -v`).
    package static let shadowMemorySanitizerIsOn = linked("__asan_init") || linked("__tsan_init")

    private static func linked(_ symbol: String) -> Bool {
        // RTLD_DEFAULT (a null handle): search every object the process has loaded.
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), symbol) != nil
    }
}
