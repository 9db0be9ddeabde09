#if canImport(Glibc)
import Glibc
#endif

/// Which sanitizer the test binary (and the products built with it) runs under.
enum Sanitizers {
    /// Whether AddressSanitizer's runtime is linked in (`swift test --sanitize=address`).
    static let addressSanitizerIsOn: Bool = {
        // RTLD_DEFAULT (a null handle): search every object the process has loaded.
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
    }()
}
