import Foundation
import ServerTestSupport
import TestSupport
import Testing
import WebImage
import WebImageProxy

/// The proxy's URL grammar, resize arithmetic, signature check and format negotiation, without a server.
@Suite("serve: URL parser, resize plan, signatures, formats")
struct ServeProxyUnitTests {
    // MARK: URL parser

    @Test("a plain source with an extension, options in any spelling")
    func plainSource() throws {
        let url = try ProxyURL(
            path: "/sig/rs:fill:300:200:1/q:75/dpr:2/g:ce/plain/https://example.com/a%20b.jpg%3Fv%3D1@webp")
        #expect(url.signature == "sig")
        #expect(url.signedPath == "/rs:fill:300:200:1/q:75/dpr:2/g:ce/plain/https://example.com/a%20b.jpg%3Fv%3D1@webp")
        #expect(url.source.absoluteString == "https://example.com/a%20b.jpg?v=1")
        var expected = ProcessingOptions()
        expected.resizeType = .fill
        expected.width = 300
        expected.height = 200
        expected.enlarge = true
        expected.quality = 75
        expected.dpr = 2
        expected.format = .webp
        #expect(url.options == expected)
        #expect(url.options.scaledWidth == 600 && url.options.scaledHeight == 400)
    }

    @Test("a base64url source split by slashes, with and without an extension")
    func encodedSource() throws {
        let source = "http://example.com/images/curiosity.jpg"
        let encoded = Data(source.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let split = "\(encoded.prefix(16))/\(encoded.dropFirst(16))"
        let withExtension = try ProxyURL(path: "/x/w:100/\(split).png")
        #expect(withExtension.source.absoluteString == source)
        #expect(withExtension.options.format == .png)
        #expect(withExtension.options.width == 100)
        let without = try ProxyURL(path: "/x/\(encoded)")
        #expect(without.source.absoluteString == source)
        #expect(without.options.format == nil)
        #expect(without.options == ProcessingOptions())
    }

    @Test("aliases: resize, width, height, format, ext and the extension agree")
    func aliases() throws {
        let short = try ProxyURL(path: "/s/rs:force:10:20:0/f:jpg/plain/http://h/a.png")
        let long = try ProxyURL(path: "/s/resize:force/width:10/height:20/enlarge:0/format:jpeg/plain/http://h/a.png")
        let ext = try ProxyURL(path: "/s/rs:force:10:20/plain/http://h/a.png@jpg")
        #expect(short.options == long.options)
        #expect(short.options == ext.options)
        #expect(short.options.canonical == "rs:force:10:20:0/g:ce")
        let resizeType = try ProxyURL(path: "/s/rs:fill-down/plain/http://h/a.png").options.resizeType
        #expect(resizeType == .fillDown)
    }

    @Test("geometry options: long and short names, every argument form, parse to the same options")
    func geometryAliases() throws {
        func options(_ segments: String) throws -> ProcessingOptions {
            try ProxyURL(path: "/s/\(segments)/plain/http://h/a.png").options
        }
        let pairs = [
            ("rs:fill:10:20:1:1:soea:5:6", "resize:fill:10:20:t:true:soea:5:6"),
            ("rs:fill:10:20:1:1:soea:5:6", "rt:fill/s:10:20:1:1:soea:5:6"),
            ("s:10:20", "size:10:20"),
            ("s:10:20", "width:10/height:20"),
            ("rt:force", "resizing_type:force"),
            ("mw:5/mh:6", "min-width:5/min-height:6"),
            ("z:2", "zoom:2:2"),
            ("el:1", "enlarge:True"),
            ("ex:1:no:0:3", "extend:1:no::3"),
            ("exar:1:fp:0.5:0.25", "extend_ar:1:fp:0.5:0.25"),
            ("exar:1", "extend_aspect_ratio:1:ce"),
            ("g:nowe:10:0.5", "gravity:nowe:10:0.5"),
            ("c:0.5:100:sowe", "crop:0.5:100:sowe"),
            ("pd:5", "padding:5:5:5:5"),
            ("pd:5:6", "pd:5:6:5:6"),
            ("pd:5:6:7", "pd:5:6:7:6"),
            ("ar:0", "auto_rotate:false"),
            ("rot:-90", "rotate:270"),
            ("rot:450", "rot:90"),
        ]
        for (short, long) in pairs {
            #expect(try options(short) == options(long), "\(short) and \(long)")
            #expect(try options(short).canonical == options(long).canonical, "\(short) and \(long)")
        }
        let parsed = try options("rs:fill:10:20:1:1:soea:5:6/mw:5/z:2:3/c:0.5:100/pd:1:2:3:4/ar:0/rot:180/g:fp:0.1:0.9")
        #expect(parsed.extend == ExtendOption(enabled: true, gravity: Gravity(.southEast, x: 5, y: 6)))
        #expect(parsed.zoomWidth == 2 && parsed.zoomHeight == 3 && parsed.minWidth == 5)
        #expect(parsed.crop == CropOption(width: 0.5, height: 100))
        #expect(parsed.padding == PaddingOption(top: 1, right: 2, bottom: 3, left: 4))
        #expect(!parsed.autoRotate && parsed.rotation == 180)
        #expect(parsed.gravity == Gravity(.focusPoint, x: 0.1, y: 0.9))
        #expect(parsed.canonical != ProcessingOptions().canonical)
    }

    @Test(
        "errors are 400 and name what is wrong",
        arguments: [
            ("/s/duotone:5/plain/http://h/a.jpg", "duotone"),
            ("/s/rs:stretch:1:1/plain/http://h/a.jpg", "stretch"),
            ("/s/w:-1/plain/http://h/a.jpg", "w"),
            ("/s/q:101/plain/http://h/a.jpg", "quality"),
            ("/s/ex:1:sm/plain/http://h/a.jpg", "smart gravity"),
            ("/s/dpr:0/plain/http://h/a.jpg", "dpr"),
            ("/s/rs:fit:1:1:maybe/plain/http://h/a.jpg", "enlarge"),
            ("/s/w:10/plain/http://h/a.jpg@bmp", "bmp"),
            ("/s/w:10/plain/file:///etc/passwd", "http"),
            ("/s/w:10/enc/abc", "encrypted"),
            ("/s/w:10", "no source"),
            ("/only-a-signature", "signature"),
            ("/s/w:10/!!!!", "Base64"),
        ])
    func errors(path: String, named: String) {
        let error = #expect(throws: ProxyError.self) { try ProxyURL(path: path) }
        #expect(error?.status == 400)
        #expect(error?.message.contains(named) == true, "\(path): \(String(describing: error))")
    }

    // MARK: Resize plan

    @Test(
        "the plan for a 600×400 source",
        arguments: [
            ("rs:fit:300:300", 300, 200),
            ("rs:fit:0:0", 600, 400),
            ("rs:fill:300:300", 300, 300),
            ("rs:fill:900:300", 600, 300),
            ("rs:fill:900:300:1", 900, 300),
            ("rs:fill-down:900:300", 600, 200),
            ("rs:force:100:300", 100, 300),
            ("rs:force:1200:200", 600, 100),
            ("rs:force:1200:200:1", 1200, 200),
            ("rs:auto:200:100", 200, 100),
            ("rs:auto:100:200", 100, 67),
            ("w:300/dpr:1.5", 450, 300),
            ("h:800", 600, 400),
            ("h:800/el:1", 1200, 800),
        ])
    func plan(options: String, width: Int, height: Int) throws {
        let url = try ProxyURL(path: "/s/\(options)/plain/http://h/a.jpg")
        let plan = ResizePlan.make(options: url.options, source: PixelSize(width: 600, height: 400))
        #expect(plan.size == PixelSize(width: width, height: height), "\(options)")
        #expect(plan.coversCanvas, "\(options): no background without extend or padding")
    }

    @Test("ImageTransformer's stretch mode gives exactly the size asked, aspect ratio not kept")
    func stretch() throws {
        let frame = ImageFrame(
            width: 60, height: 40, bytesPerRow: 240, pixels: [UInt8](repeating: 200, count: 60 * 40 * 4))
        let image = Image(format: .png, width: 60, height: 40, frames: [frame])
        let resized = try ImageTransformer.resize(to: PixelSize(width: 10, height: 30), mode: .stretch).transform(image)
        #expect(resized.width == 10 && resized.height == 30)
        #expect(resized.frames.first?.pixels.count == 10 * 30 * 4)
    }

    // MARK: Signatures

    static let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"

    @Test("a signature made by Python's hmac is accepted; a changed path, key or signature is not")
    func signature() async throws {
        let path = "/rs:fill:300:400:0/g:ce/plain/http://example.com/images/curiosity.jpg@png"
        let fromPython = try await ServeProcess.sign(path, key: Self.key, salt: Self.salt)
        let pair = try #require(SigningKey(hexKey: Self.key, hexSalt: Self.salt))
        let checker = URLSignature(keys: [pair])
        #expect(checker.isValid(signature: fromPython, for: path))
        #expect(checker.sign(path) == fromPython)
        #expect(!checker.isValid(signature: fromPython, for: path + "x"))
        #expect(!checker.isValid(signature: String(fromPython.dropLast()), for: path))
        #expect(!checker.isValid(signature: "insecure", for: path))
        #expect(!checker.isValid(signature: "", for: path))
        // Rotation: any configured pair signs.
        let old = try #require(SigningKey(hexKey: "00ff", hexSalt: ""))
        let oldSignature = try await ServeProcess.sign(path, key: "00ff", salt: "")
        #expect(URLSignature(keys: [pair, old]).isValid(signature: oldSignature, for: path))
        #expect(!checker.isValid(signature: oldSignature, for: path))
        #expect(!URLSignature(keys: []).isValid(signature: fromPython, for: path))
    }

    @Test("keys and salts are hex")
    func hexKeys() {
        #expect(SigningKey(hexKey: "abc", hexSalt: "00") == nil)
        #expect(SigningKey(hexKey: "zz", hexSalt: "00") == nil)
        #expect(SigningKey(hexKey: "", hexSalt: "00") == nil)
        #expect(SigningKey(hexKey: "0A0b", hexSalt: "")?.key == Data([0x0A, 0x0B]))
    }

    // MARK: Formats

    @Test("Accept negotiation as imgproxy's: nothing by default; AVIF, then WebP, as detection allows; enforce wins")
    func negotiation() {
        let avifFirst = "image/avif,image/webp,*/*"
        var both = FormatNegotiation()
        both.webp = .auto
        both.avif = .auto
        var webpOnly = FormatNegotiation()
        webpOnly.webp = .auto
        // imgproxy's defaults: Accept chooses nothing (Chromium's Accept gets JPEG, not a costly AVIF).
        #expect(FormatChoice(format: nil, accept: avifFirst, avifAvailable: true) == .jpegOrPNG)
        #expect(FormatChoice(format: nil, accept: "image/webp", avifAvailable: true) == .jpegOrPNG)
        #expect(FormatNegotiation().isOn == false && webpOnly.isOn)
        #expect(
            FormatChoice(format: nil, accept: avifFirst, negotiation: both, avifAvailable: true) == .negotiated(.avif))
        #expect(
            FormatChoice(format: nil, accept: avifFirst, negotiation: webpOnly, avifAvailable: true)
                == .negotiated(.webp))
        #expect(
            FormatChoice(format: nil, accept: "image/avif", negotiation: webpOnly, avifAvailable: true) == .jpegOrPNG)
        #expect(
            FormatChoice(format: nil, accept: avifFirst, negotiation: both, avifAvailable: false) == .negotiated(.webp))
        #expect(
            FormatChoice(
                format: nil, accept: "image/avif;q=0, image/WebP;q=0.5", negotiation: both, avifAvailable: true)
                == .negotiated(.webp))
        #expect(FormatChoice(format: nil, accept: "image/*,*/*;q=0.8", negotiation: both) == .jpegOrPNG)
        #expect(FormatChoice(format: nil, accept: nil, negotiation: both) == .jpegOrPNG)
        // The URL's format wins over detection, not over enforcement (imgproxy's ENFORCE_*).
        #expect(
            FormatChoice(format: .png, accept: avifFirst, negotiation: both, avifAvailable: true) == .explicit(.png))
        var enforced = both
        enforced.webp = .enforced
        #expect(
            FormatChoice(format: .png, accept: avifFirst, negotiation: enforced, avifAvailable: true)
                == .negotiated(.webp))
        #expect(FormatChoice(format: .png, accept: "image/jpeg", negotiation: enforced) == .explicit(.png))
        // Without a format in the URL, the order of preference holds: an enforced WebP does not beat AVIF.
        #expect(
            FormatChoice(format: nil, accept: avifFirst, negotiation: enforced, avifAvailable: true)
                == .negotiated(.avif))
        // GIF only from the URL, JPEG XL only with its detection; the animated formats decode every frame.
        #expect(FormatChoice(format: nil, accept: "image/jxl,image/gif", negotiation: both) == .jpegOrPNG)
        #expect(
            FormatChoice(format: nil, accept: "image/jxl,image/gif,image/webp", negotiation: both) == .negotiated(.webp)
        )
        var jxl = both
        jxl.jxl = .auto
        #expect(FormatChoice(format: nil, accept: "image/jxl,image/webp", negotiation: jxl) == .negotiated(.jxl))
        #expect(ProxyOutputFormat(extension: "GIF") == .gif && ProxyOutputFormat(extension: "jxl") == .jxl)
        #expect(ProxyOutputFormat.allCases.filter(\.animates) == [.webp, .gif, .jxl])
    }

    // MARK: The engine without a server

    @Test("ImageProxy: health, 405 for POST, 403 before 400, and a 304 decided without the source")
    func engine() async throws {
        var configuration = ImageProxyConfiguration()
        configuration.allowsUnsigned = true
        // The refusal is immediate, but on two loaded cores the request may wait minutes for a thread: the
        // default 30-second deadline would turn the 403 into a 504.
        configuration.requestDeadline = .seconds(600)
        let proxy = ImageProxy(configuration: configuration)
        #expect(await proxy.respond(to: ProxyRequest(path: "/health")).status == 200)
        let post = await proxy.respond(to: ProxyRequest(method: "POST", path: "/insecure/w:1/plain/http://h.invalid/a"))
        #expect(post.status == 405 && post.header("Allow") == "GET, HEAD")
        // A bad signature is refused before the options are read: no hint about the grammar.
        let unsigned = await proxy.respond(to: ProxyRequest(path: "/wrong/duotone:1/plain/http://h.invalid/a"))
        #expect(unsigned.status == 403)
        let unknown = await proxy.respond(to: ProxyRequest(path: "/insecure/duotone:1/plain/http://h.invalid/a"))
        #expect(unknown.status == 400)
        // The default policy refuses loopback before connecting: a 304 that tried to fetch would be a 403.
        let path = "/insecure/rs:fill:10:10/plain/http://127.0.0.1:9/a.jpg"
        // `*` vouches only for a result that exists: this source is refused, so it is answered as such.
        let first = await proxy.respond(to: ProxyRequest(path: path, accept: "image/webp", ifNoneMatch: "*"))
        #expect(first.status == 403)

        // The ETag of a result made once answers later validators without a fetch, weak or among others.
        let origin = try Fixtures.server()
        defer { origin.shutdown() }
        configuration.allowedDestinations = ["127.0.0.0/8"]
        // With WebP detection on, the 304 says, as the 200 would, that the answer depends on Accept.
        configuration.formatNegotiation.webp = .auto
        let local = ImageProxy(configuration: configuration)
        let made = "/insecure/rs:fill:10:10/plain/\(origin.url("/files/coffee-progressive.jpg"))"
        let etag = try #require(await local.respond(to: ProxyRequest(path: made, accept: "image/webp")).header("ETag"))
        let weak = await local.respond(
            to: ProxyRequest(path: made, accept: "image/webp", ifNoneMatch: "\"x\", W/\(etag)"))
        #expect(weak.status == 304 && weak.header("Vary") == "Accept")
        #expect(origin.count(for: "/files/coffee-progressive.jpg") == 1, "the 304 fetched nothing")
        let other = await proxy.respond(to: ProxyRequest(path: path, accept: "image/png", ifNoneMatch: etag))
        #expect(other.status == 403, "another source, another ETag: fetched and refused")
    }
}
