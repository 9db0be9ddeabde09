import Testing

/// The README's codecs example (READMECodecsExample) run: six bytes of a GIF header are not an image, so its
/// `thumbnail(ofUpload:)` says why and returns nil.
@Suite("README: the codecs example")
struct READMECodecsExampleTests {
    @Test("a GIF header alone is refused with the codec's message, and the thumbnail is nil")
    func aGIFHeaderAloneIsNotAnImage() throws {
        let printed = try READMECodecsExample.main()
        #expect(printed.count == 2)
        #expect(printed.first?.hasPrefix("not an image: ") == true)
        #expect(printed.first.map { $0.count > "not an image: ".count } == true)
        #expect(printed.last == "true")
    }
}
