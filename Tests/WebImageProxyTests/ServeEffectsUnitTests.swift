import Foundation
import Testing
import WebImage
import WebImageProxy

/// imgproxy's effect options (`bg`, `bl`, `sh`, `pix`, `fl`) parsed without a server.
@Suite("serve: effect options")
struct ServeEffectsUnitTests {
    static func options(_ segments: String) throws(ProxyError) -> ProcessingOptions {
        try ProxyURL(path: "/insecure/\(segments)/plain/http://h/a.jpg").options
    }

    @Test("long and short names parse the same; R:G:B, rrggbb and rgb are one colour; empty turns bg off")
    func aliases() throws {
        let pairs = [
            ("bg:255:0:16", "background:ff0010"), ("bg:f0a", "bg:ff00aa"), ("bl:2.5", "blur:2.5"),
            ("sh:0.7", "sharpen:0.7"), ("pix:8", "pixelate:8"), ("fl:1:0", "flip:t"), ("fl::1", "flip:false:true"),
        ]
        for (short, long) in pairs {
            let a = try Self.options(short)
            let b = try Self.options(long)
            #expect(a == b, "\(short) and \(long)")
            #expect(a != ProcessingOptions(), "\(short) changes something")
        }
        let all = try Self.options("bg:10:20:30/bl:3/sh:1/pix:4/fl:1:1").effects
        #expect(all.background == ImageColor(red: 10, green: 20, blue: 30))
        #expect(all.blur == 3 && all.sharpen == 1 && all.pixelate == 4 && all.flipHorizontal && all.flipVertical)
        #expect(try Self.options("bg:10:20:30/bg:").effects.background == nil)
        #expect(try Self.options("pix:\(1 << 40)").effects.pixelate == 1 << 30)
    }

    @Test("each effect changes the canonical spelling (ETag, result cache key); defaults leave it as before")
    func canonical() throws {
        let plain = try Self.options("w:10").canonical
        #expect(try Self.options("w:10/bl:0/sh:0/pix:1/fl:0:0/bg:").canonical == plain)
        var seen: Set<String> = [plain]
        for segment in ["bg:0:0:0", "bg:1:0:0", "bl:1", "bl:1.5", "sh:1", "pix:2", "pix:3", "fl:1", "fl:0:1", "fl:1:1"]
        {
            let canonical = try Self.options("w:10/\(segment)").canonical
            #expect(seen.insert(canonical).inserted, "\(segment): \(canonical)")
        }
    }

    @Test("a bad argument is 400 naming the option; sigmas are 0…100, blocks whole pixels, colours 0…255")
    func badArguments() {
        for (segment, named) in [
            ("bl:-1", "bl"), ("bl:101", "bl"), ("blur:x", "blur"), ("bl:", "bl"), ("bl:1:2", "bl"), ("bl:inf", "bl"),
            ("sh:1e3", "sh"), ("sharpen:-0.5", "sharpen"), ("pix:-1", "pix"), ("pix:1.5", "pix"),
            ("pixelate:", "pixelate"), ("bg:256:0:0", "R"), ("bg:0:-1:0", "G"), ("bg:0:0:+5", "B"), ("bg:1:2", "bg"),
            ("bg:12345", "hex"), ("bg:gg0000", "hex"), ("background:1:2:3:4", "background"), ("fl:maybe", "horizontal"),
            ("fl:1:2", "vertical"), ("flip:1:1:1", "flip"),
        ] {
            do {
                _ = try Self.options(segment)
                Issue.record("\(segment) was accepted")
            } catch {
                #expect(error.status == 400 && error.message.contains(named), "\(segment): \(error.message)")
            }
        }
    }
}
