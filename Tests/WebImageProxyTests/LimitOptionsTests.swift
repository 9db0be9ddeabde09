import Foundation
import Testing
import WebImage
import WebImageProxy

/// imgproxy's per-URL security options (`msr`, `msfs`, `maf`, `mafr`, `mrd`) and `preserve_hdr`, parsed
/// without a server, and the limits they give under the server's.
@Suite("serve: per-URL limit options")
struct LimitOptionsTests {
    static func options(_ segments: String) throws(ProxyError) -> ProcessingOptions {
        try ProxyURL(path: "/insecure/\(segments)/plain/http://h/a.jpg").options
    }

    @Test("each option's long and short names parse to the same limits, in imgproxy's units")
    func aliases() throws {
        let pairs = [
            ("msr:2.5", "max_src_resolution:2.5"), ("msfs:1048576", "max_src_file_size:1048576"),
            ("maf:3", "max_animation_frames:3"), ("mafr:0.25", "max_animation_frame_resolution:0.25"),
            ("mrd:640", "max_result_dimension:640"),
        ]
        for (short, long) in pairs {
            let a = try Self.options(short)
            let b = try Self.options(long)
            #expect(a == b, "\(short) and \(long)")
            #expect(a.limits.isSet, "\(short) sets a limit")
        }
        let limits = try Self.options("msr:2.5/msfs:1048576/maf:3/mafr:0.25/mrd:640").limits
        #expect(limits.maximumSourcePixels == 2_500_000)
        #expect(limits.maximumSourceBytes == 1_048_576)
        #expect(limits.maximumAnimationFrames == 3)
        #expect(limits.maximumAnimationFramePixels == 250_000)
        #expect(limits.maximumResultDimension == 640)
        // imgproxy's `int(f*1000000)` rounds down.
        #expect(try Self.options("msr:0.0000015").limits.maximumSourcePixels == 1)
        #expect(try Self.options("msr:0").limits.maximumSourcePixels == 0)
        #expect(try !Self.options("w:10").limits.isSet)
    }

    @Test("bad arguments are 400s naming the option; an empty one is an error, as in imgproxy")
    func badArguments() {
        for segment in [
            "msr:", "msr:-1", "msr:abc", "msr:1:2", "msr:inf", "msfs:-5", "msfs:1.5", "msfs:", "maf:0", "maf:-1",
            "maf:", "mafr:x", "mrd:-1", "mrd:1e3", "ph:", "ph:maybe", "ph:1:1", "msfs:+5",
        ] {
            do {
                _ = try Self.options(segment)
                Issue.record("\(segment) was accepted")
            } catch {
                #expect(error.status == 400, "\(segment): \(error)")
                let name = String(segment.prefix { $0 != ":" })
                #expect(error.message.contains(name), "\(segment): \(error.message)")
            }
        }
    }

    @Test("numbers past any limit are held far above every limit, not refused and not wrapped")
    func hugeNumbers() throws {
        let limits = try Self.options("msfs:99999999999999999999999/mrd:99999999999999999999/msr:1e300").limits
        #expect(limits.sourceBytes(under: 32 << 20) == 32 << 20)
        #expect(limits.resultDimension(under: 8192) == 8192)
        #expect(limits.sourcePixels(under: 16_800_000) == 16_800_000)
    }

    @Test("limits only lower the server's: a larger value, or imgproxy's 0 for none, leaves the server's")
    func underTheServers() throws {
        let lower = try Self.options("msr:1/msfs:1000/maf:2/mrd:100").limits
        #expect(lower.sourcePixels(under: 16_800_000) == 1_000_000)
        #expect(lower.sourceBytes(under: 32 << 20) == 1000)
        #expect(lower.animationFrames(under: 256) == 2)
        #expect(lower.resultDimension(under: 8192) == 100)
        let higher = try Self.options("msr:100/msfs:999999999/maf:1000/mrd:20000").limits
        #expect(higher.sourcePixels(under: 16_800_000) == 16_800_000)
        #expect(higher.sourceBytes(under: 32 << 20) == 32 << 20)
        #expect(higher.animationFrames(under: 256) == 256)
        #expect(higher.resultDimension(under: 8192) == 8192)
        let none = try Self.options("msfs:0/mrd:0").limits
        #expect(none.sourceBytes(under: 32 << 20) == 32 << 20 && none.resultDimension(under: 8192) == 8192)
        // msr:0 refuses every source, as imgproxy's does.
        #expect(try Self.options("msr:0").limits.sourcePixels(under: 16_800_000) == 0)
    }

    @Test("each limit changes the canonical spelling (ETag, result cache key), and so does preserve_hdr on")
    func canonical() throws {
        let plain = try Self.options("w:10").canonical
        var spellings = Set([plain])
        for segment in ["msr:1", "msr:2", "msfs:100", "msfs:200", "maf:2", "maf:3", "mafr:1", "mrd:50", "mrd:60"] {
            let canonical = try Self.options("w:10/\(segment)").canonical
            #expect(spellings.insert(canonical).inserted, "\(segment): \(canonical)")
        }
        #expect(try Self.options("w:10/msr:1").canonical == Self.options("w:10/max_src_resolution:1.0").canonical)
        // A 16-bit PNG source gives a 16-bit result with ph on: another result, another key.
        #expect(try Self.options("w:10/ph:1").canonical == Self.options("w:10/preserve_hdr:true").canonical)
        #expect(try Self.options("w:10/ph:1").canonical != plain)
        #expect(try Self.options("w:10/ph:f").canonical == plain)
    }

    @Test("a preset may carry limits, as in imgproxy")
    func presets() throws {
        let presets = try ProxyPresets(["small=msfs:5000/mrd:64"])
        let options = try ProxyURL(path: "/insecure/pr:small/plain/http://h/a.jpg", presets: presets).options
        #expect(options.limits.maximumSourceBytes == 5000 && options.limits.maximumResultDimension == 64)
    }

    @Test("without allowsSecurityOptions a URL with a limit is 403 before anything is fetched; with it, not")
    func refusedUnlessAllowed() async throws {
        var configuration = ImageProxyConfiguration()
        configuration.allowsUnsigned = true
        // An address nothing listens on: a request that got as far as the fetch would be a 502 or a 403.
        let source = "http://127.0.0.1:9/a.png"
        for segment in ["msr:1", "max_src_file_size:100", "maf:2", "mafr:1", "mrd:10"] {
            let refused = await ImageProxy(configuration: configuration).respond(
                to: ProxyRequest(path: "/insecure/\(segment)/plain/\(source)"))
            #expect(refused.status == 403, "\(segment)")
            #expect(String(decoding: refused.body, as: UTF8.self).contains("security processing options"))
        }
        let plain = await ImageProxy(configuration: configuration).respond(
            to: ProxyRequest(path: "/insecure/ph:1/plain/\(source)"))
        #expect(plain.status != 403 || !String(decoding: plain.body, as: UTF8.self).contains("security"))
        configuration.allowsSecurityOptions = true
        let allowed = await ImageProxy(configuration: configuration).respond(
            to: ProxyRequest(path: "/insecure/mrd:10/plain/\(source)"))
        #expect(!String(decoding: allowed.body, as: UTF8.self).contains("security processing options"))
    }
}
