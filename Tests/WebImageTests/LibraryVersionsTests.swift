import Testing

@testable import WebImage

@Suite(.timeLimit(.minutes(5))) struct LibraryVersionsTests {
    @Test func everyCLibraryLinksAndReportsAVersion() {
        for (name, version) in LibraryVersions.all {
            let parts = version.split(separator: ".")
            #expect(parts.count >= 2 || name == "TLS", "\(name) reported \(version)")
        }
        #expect(LibraryVersions.curl.hasPrefix("7.") || LibraryVersions.curl.hasPrefix("8."))
        #expect(LibraryVersions.png.hasPrefix("1.6"))
    }
}
