import Foundation
import Testing
import WebImage
import WebImageProxy

/// imgproxy's output, handling and request options and presets, parsed without a server.
@Suite("serve: output and request options, presets")
struct ServeRequestOptionsUnitTests {
    static func options(_ segments: String, presets: ProxyPresets = ProxyPresets()) throws(ProxyError)
        -> ProcessingOptions
    {
        try ProxyURL(path: "/insecure/\(segments)/plain/http://h/a.jpg", presets: presets).options
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }

    @Test("each option's long and short names parse to the same options")
    func aliases() throws {
        let pairs = [
            ("fq:jpg:50:webp:60", "format_quality:jpeg:50:webp:60"), ("mb:1000", "max_bytes:1000"),
            ("sm:0", "strip_metadata:false"), ("kcr:f", "keep_copyright:0"), ("scp:0", "strip_color_profile:0"),
            ("eth:1", "enforce_thumbnail:t"), ("skp:png:jpg", "skip_processing:jpeg:png"), ("raw:1", "raw:true"),
            ("cb:v2", "cachebuster:v2"), ("exp:4102444800", "expires:4102444800"), ("fn:photo", "filename:photo"),
            ("att:1", "return_attachment:1"),
        ]
        for (short, long) in pairs {
            let a = try Self.options(short)
            let b = try Self.options(long)
            #expect(a == b, "\(short) and \(long)")
            #expect(a != ProcessingOptions(), "\(short) changes something")
        }
        let options = try Self.options("fq:jpg:50:webp:60/mb:1000/skp:png:gif/cb:v2/exp:-5/fn:photo/att:1")
        #expect(options.formatQuality == [.jpeg: 50, .webp: 60])
        #expect(options.maximumBytes == 1000)
        #expect(options.skipProcessing == [.png, .gif])
        #expect(options.cacheBuster == "v2" && options.expires == -5)
        #expect(options.filename == "photo" && options.returnAttachment)
        #expect(try Self.options("fq:jpg:0").formatQuality.isEmpty, "0 is the format's default")
    }

    @Test("fn:NAME:1 is unpadded base64url of UTF-8, which may hold anything a path cannot")
    func encodedFilename() throws {
        let name = "a/b:\"c\" é\n"
        #expect(try Self.options("fn:\(Self.base64URL(name)):1").filename == name)
        #expect(try Self.options("fn:\(Self.base64URL(name)):0").filename == Self.base64URL(name))
        #expect(throws: ProxyError.self) { try Self.options("fn:!!!:1") }
    }

    @Test("cachebuster, format_quality, max_bytes and filename change the canonical spelling (ETag); expires does not")
    func canonical() throws {
        let plain = try Self.options("w:10").canonical
        var spellings = Set([plain])
        for segment in ["cb:1", "cb:2", "fq:jpg:50", "mb:100", "fn:x", "att:1", "skp:png", "raw:1", "scp:0"] {
            let canonical = try Self.options("w:10/\(segment)").canonical
            #expect(spellings.insert(canonical).inserted, "\(segment): \(canonical)")
        }
        #expect(try Self.options("w:10/exp:4102444800").canonical == plain)
        // Free text with separators cannot collide with other options.
        #expect(try Self.options("cb:a/fn:b").canonical != Self.options("fn:a/cb:b").canonical)
    }

    @Test("a bad argument is 400 naming the option; numbers are range-checked")
    func badArguments() {
        for (segment, named) in [
            ("fq:jpg", "fq"), ("fq:bmp:50", "bmp"), ("fq:jpg:101", "fq"), ("fq:jpg:-1", "fq"), ("mb:-1", "mb"),
            ("mb:\(1 << 41)", "mb"), ("mb:9223372036854775808", "mb"), ("mb:1.5", "mb"), ("sm:maybe", "strip_metadata"),
            ("scp:", "strip_color_profile"), ("skp:svg", "svg"), ("skp:", "skp"), ("raw:1:1", "raw"),
            ("exp:soon", "exp"), ("exp:9223372036854775808", "exp"), ("fn:a:b:c", "fn"), ("fn:a:maybe", "encoded"),
            ("cb:" + String(repeating: "x", count: 257), "cb"), ("att:2", "return_attachment"), ("q:101", "q"),
            ("pr:nope", "nope"), ("pr:", "preset"),
        ] {
            do {
                _ = try Self.options(segment)
                Issue.record("\(segment) was accepted")
            } catch {
                #expect(error.status == 400 && error.message.contains(named), "\(segment): \(error.message)")
            }
        }
    }

    @Test("presets: pr applies in order where it stands, default first, a cycle ends, later options win")
    func presets() throws {
        let presets = try ProxyPresets([
            "default=q:70/w:5", " small = rs:fit:50:50 ", "webp=f:webp/pr:small", "loop=pr:loop/h:7", "# comment", "",
        ])
        #expect(presets.names == ["default", "loop", "small", "webp"])
        let plain = try Self.options("h:1", presets: presets)
        #expect(plain.quality == 70 && plain.width == 5 && plain.height == 1 && plain.presets == ["default"])
        let small = try Self.options("pr:small/q:90", presets: presets)
        #expect(small.width == 50 && small.height == 50 && small.quality == 90)
        #expect(small.presets == ["default", "small"])
        let nested = try Self.options("w:9/preset:webp", presets: presets)
        #expect(nested.format == .webp && nested.width == 50 && nested.presets == ["default", "webp", "small"])
        let both = try Self.options("pr:small:loop", presets: presets)
        #expect(both.width == 50 && both.height == 7, "presets apply left to right")
        // The presets' effect, not their names, is the identity: the same options share a result.
        #expect(
            try Self.options("pr:small", presets: presets).canonical
                == Self.options("rs:fit:50:50", presets: presets).canonical)
    }

    @Test("a preset definition that is malformed, names an unknown preset or has a bad option is refused by name")
    func badPresets() {
        for (definitions, named, reason) in [
            (["thumb"], "thumb", "name=options"), (["=w:1"], "=w:1", "name"), (["thumb="], "thumb", "no options"),
            (["thumb=w:1=2"], "thumb=w:1=2", "name=options"), (["thumb=w:x"], "thumb", "option w"),
            (["thumb=pr:other"], "thumb", "unknown preset \"other\""), (["thumb=plain"], "thumb", "plain"),
            (["a=w:1", "b=duotone:2"], "b", "unknown option \"duotone\""),
        ] {
            do {
                _ = try ProxyPresets(definitions)
                Issue.record("\(definitions) was accepted")
            } catch {
                #expect(error.name == named && error.reason.contains(reason), "\(definitions): \(error)")
            }
        }
    }

    @Test("only presets: the options segment is preset names, anything else is 400")
    func onlyPresets() throws {
        let presets = try ProxyPresets(["small=w:50", "sharp=q:95", "default=h:5"])
        let url = try ProxyURL(
            path: "/insecure/small:sharp/plain/http://h/a.jpg@png", presets: presets, onlyPresets: true)
        #expect(url.options.width == 50 && url.options.quality == 95 && url.options.height == 5)
        #expect(url.options.format == .png && url.source.absoluteString == "http://h/a.jpg")
        let encoded = try ProxyURL(
            path: "/insecure/small/\(Self.base64URL("http://h/b.jpg")).webp", presets: presets, onlyPresets: true)
        #expect(encoded.source.absoluteString == "http://h/b.jpg" && encoded.options.format == .webp)
        for path in [
            "/insecure/w:10/plain/http://h/a.jpg", "/insecure/small/w:10/plain/http://h/a.jpg",
            "/insecure/nope/plain/http://h/a.jpg", "/insecure/small:/plain/http://h/a.jpg", "/insecure/small",
        ] {
            #expect(throws: ProxyError.self, "\(path)") {
                try ProxyURL(path: path, presets: presets, onlyPresets: true)
            }
        }
    }
}
