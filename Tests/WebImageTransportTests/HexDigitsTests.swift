import Foundation
import Testing

@testable import WebImageTransport

@Suite("HexDigits")
struct HexDigitsTests {
    @Test("two lowercase digits a byte, high nibble first, as printf's %02x writes them")
    func matchesPrintf() {
        #expect(HexDigits.lowercase([]) == "")
        #expect(HexDigits.lowercase([0x00, 0x0F, 0xA5, 0xFF, 0x10]) == "000fa5ff10")
        let bytes = (0...255).map { UInt8($0) }
        #expect(HexDigits.lowercase(bytes) == bytes.map { String(format: "%02x", $0) }.joined())
        #expect(HexDigits.lowercase(bytes.lazy.filter { $0 > 250 }) == "fbfcfdfeff")
    }
}
