import Foundation

/// img2dataset's command line, rewritten into `webimage bulk`'s before the argument parser reads it.
///
/// img2dataset 1.47's options are the parameters of its `download()` (`img2dataset/main.py`), which
/// python-fire turns into `--name value` or `--name=value`, with `_` or `-` in the name, booleans as
/// `--flag`, `--flag True`, `--flag=False` or `--noflag`, and lists as `'["a","b"]'` or `a,b`.
/// swift-argument-parser takes one spelling per option, so this rewrite maps each img2dataset name (either
/// spelling) to WebImage's option and value: `--output_folder out` becomes `--output out`, `--resize_mode
/// keep_ratio` becomes `--resize-mode keep-ratio`, `--processes_count 4 --thread_count 32` becomes
/// `--concurrency 128`. WebImage's own names and values pass through unchanged, so `--help` and the
/// parser's messages keep them. An img2dataset option whose meaning webimage does not have is refused
/// with a message saying so (``Unsupported``), never dropped; one whose value is img2dataset's default
/// behaviour and webimage's too (`--distributor multiprocessing`) is accepted.
///
/// ```swift
/// let arguments = try Img2datasetArguments.rewrite(["urls.txt", "--output_folder", "out", "--image_size", "64"])
/// // ["urls.txt", "--output", "out", "--size", "64"]
/// ```
enum Img2datasetArguments {
    /// An img2dataset option, or value, that `webimage bulk` does not have: `description` says which and
    /// why. The command exits with 64, as for an unknown option.
    struct Unsupported: Error, CustomStringConvertible {
        /// The sentence, naming the option as img2dataset spells it.
        let description: String

        init(_ description: String) { self.description = description }
    }

    /// `arguments` (after `bulk`) with every img2dataset option rewritten into WebImage's.
    static func rewrite(_ arguments: [String]) throws(Unsupported) -> [String] {
        var output: [String] = []
        var given: [Name: (spelling: String, value: String)] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2, let option = Option(argument) else {
                output.append(argument)
                if argument == "--" {
                    // Everything after `--` is positional.
                    output += arguments[index...]
                    index = arguments.count
                }
                continue
            }
            var value = option.inlineValue
            if value == nil {
                if option.name.isBoolean {
                    // `--flag` alone is True; a next word is its value only when it is a boolean, so a
                    // WebImage flag before the input (`--resize-only-if-bigger urls.txt`) stays a flag.
                    if !option.negated, index < arguments.count, Self.boolean(arguments[index]) != nil {
                        value = arguments[index]
                        index += 1
                    } else {
                        value = option.negated ? "False" : "True"
                    }
                } else {
                    guard index < arguments.count else {
                        throw Unsupported("\(option.spelling) needs a value.")
                    }
                    value = arguments[index]
                    index += 1
                }
            } else if option.negated {
                throw Unsupported("\(option.spelling) takes no value.")
            }
            given[option.name] = (option.spelling, value ?? "")
            output += try translate(option.name, spelling: option.spelling, value: value ?? "")
        }
        output += try combined(given)
        return output
    }

    // MARK: Names

    /// The parameters of img2dataset 1.47's `download()`.
    enum Name: String, CaseIterable {
        case urlList = "url_list"
        case imageSize = "image_size"
        case outputFolder = "output_folder"
        case processesCount = "processes_count"
        case resizeMode = "resize_mode"
        case resizeOnlyIfBigger = "resize_only_if_bigger"
        case upscaleInterpolation = "upscale_interpolation"
        case downscaleInterpolation = "downscale_interpolation"
        case encodeQuality = "encode_quality"
        case encodeFormat = "encode_format"
        case skipReencode = "skip_reencode"
        case outputFormat = "output_format"
        case inputFormat = "input_format"
        case urlCol = "url_col"
        case captionCol = "caption_col"
        case bboxCol = "bbox_col"
        case threadCount = "thread_count"
        case numberSamplePerShard = "number_sample_per_shard"
        case extractExif = "extract_exif"
        case saveAdditionalColumns = "save_additional_columns"
        case timeout
        case enableWandb = "enable_wandb"
        case wandbProject = "wandb_project"
        case oomShardCount = "oom_shard_count"
        case computeHash = "compute_hash"
        case verifyHash = "verify_hash"
        case distributor
        case subjobSize = "subjob_size"
        case retries
        case disableAllReencoding = "disable_all_reencoding"
        case minImageSize = "min_image_size"
        case maxImageArea = "max_image_area"
        case maxAspectRatio = "max_aspect_ratio"
        case incrementalMode = "incremental_mode"
        case maxShardRetry = "max_shard_retry"
        case userAgentToken = "user_agent_token"
        case disallowedHeaderDirectives = "disallowed_header_directives"
        case ignoreSSLCertificate = "ignore_ssl_certificate"

        /// Whether python-fire reads it as a boolean (`--flag` alone is True).
        var isBoolean: Bool {
            switch self {
            case .resizeOnlyIfBigger, .skipReencode, .extractExif, .enableWandb, .disableAllReencoding,
                .ignoreSSLCertificate:
                true
            default: false
            }
        }
    }

    /// One `--name`, `--name=value` or `--noname` word whose name is img2dataset's.
    private struct Option {
        var name: Name
        /// The name as written, for messages (`--output_folder`).
        var spelling: String
        var inlineValue: String?
        /// `--noflag`: python-fire's False.
        var negated = false

        init?(_ word: String) {
            let body = word.dropFirst(2)
            let equals = body.firstIndex(of: "=")
            let written = equals.map { body[..<$0] } ?? body
            inlineValue = equals.map { String(body[body.index(after: $0)...]) }
            spelling = "--" + written
            let normalized = written.replacingOccurrences(of: "-", with: "_")
            if let name = Name(rawValue: normalized) {
                self.name = name
            } else if normalized.hasPrefix("no"), let name = Name(rawValue: String(normalized.dropFirst(2))),
                name.isBoolean
            {
                self.name = name
                negated = true
            } else {
                return nil
            }
        }
    }

    // MARK: Values

    /// python-fire's booleans as img2dataset scripts write them; nil for another word.
    static func boolean(_ text: String) -> Bool? {
        switch text {
        case "True", "true", "1": true
        case "False", "false", "0": false
        default: nil
        }
    }

    /// A python-fire list (`["a","b"]`, `('a', 'b')`, `[a,b]` or `a,b`) as its words; `[]` is empty.
    static func list(_ text: String) -> [String] {
        var body = text.trimmingCharacters(in: .whitespaces)
        if let first = body.first, let last = body.last, body.count >= 2,
            (first == "[" && last == "]") || (first == "(" && last == ")")
        {
            body = String(body.dropFirst().dropLast())
        }
        return body.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
        }.filter { !$0.isEmpty }
    }

    /// A number that Python writes `inf` for no limit; nil for `inf`.
    private static func finite(_ text: String) -> String? {
        ["inf", "+inf", "infinity", "float('inf')", "float(\"inf\")"].contains(text.lowercased()) ? nil : text
    }

    /// The WebImage words for one img2dataset option given alone; those that depend on other options
    /// come from ``combined(_:)``.
    private static func translate(_ name: Name, spelling: String, value: String) throws(Unsupported) -> [String] {
        let option = GivenOption(spelling: spelling, value: value)
        if let words = renamed(name, value: value) { return words }
        if let words = try imageOption(name, option) { return words }
        return try runOption(name, option)
    }

    /// One img2dataset option as given: its spelling and value, for messages.
    private struct GivenOption {
        let spelling: String
        let value: String

        func unsupported(_ why: String) -> Unsupported {
            Unsupported("img2dataset's \(spelling) is not supported by webimage bulk\(why)")
        }

        /// `yes` for True, nothing for False; with `why`, True is refused.
        func flag(_ yes: [String], unsupportedWhenTrue why: String? = nil) throws(Unsupported) -> [String] {
            guard let on = Img2datasetArguments.boolean(value) else {
                throw Unsupported("\(spelling) takes True or False, got '\(value)'.")
            }
            if on, let why { throw unsupported(why) }
            return on ? yes : []
        }
    }

    /// The options that are WebImage's under another name, with the same value; nil for the others.
    private static func renamed(_ name: Name, value: String) -> [String]? {
        switch name {
        case .urlList: [value]
        case .imageSize: ["--size", value]
        case .outputFolder: ["--output", value]
        case .urlCol: ["--url-col", value]
        case .captionCol: ["--caption-col", value]
        case .bboxCol: ["--bbox-col", value]
        case .numberSamplePerShard: ["--shard-size", value]
        case .oomShardCount: ["--shard-digits", value]
        case .maxShardRetry: ["--max-shard-retry", value]
        case .encodeQuality: []  // ``combined(_:)``: its meaning depends on --encode_format.
        case .timeout: ["--timeout", value]
        case .retries: ["--retries", value]
        case .minImageSize: ["--min-image-size", value]
        case .userAgentToken: ["--user-agent-token", value]
        case .processesCount, .threadCount, .verifyHash, .disableAllReencoding: []
        case .saveAdditionalColumns: ["--save-cols", list(value).joined(separator: ",")]
        case .disallowedHeaderDirectives: ["--disallowed-header-directives", list(value).joined(separator: ",")]
        case .computeHash: ["--compute-hash", value == "None" ? "none" : value]
        case .maxAspectRatio: finite(value).map { ["--max-aspect-ratio", $0] } ?? []
        default: nil
        }
    }

    /// The options about the images and files (input, resize, encode, output format); nil for the others.
    private static func imageOption(_ name: Name, _ option: GivenOption) throws(Unsupported) -> [String]? {
        switch name {
        case .inputFormat:
            let formats = ["txt", "csv", "tsv", "json", "jsonl", "parquet", "webdataset"]
            let base = option.value.hasSuffix(".gz") ? String(option.value.dropLast(3)) : option.value
            guard formats.contains(base), !(["parquet", "webdataset"].contains(base) && option.value.hasSuffix(".gz"))
            else {
                throw Unsupported(
                    "\(option.spelling) takes txt, csv, tsv, json, jsonl, parquet or webdataset (txt, csv, tsv, json "
                        + "and jsonl also with .gz), got '\(option.value)'.")
            }
            return ["--img2dataset-input-format", option.value]
        case .resizeMode:
            let modes = [
                "no": "none", "keep_ratio": "keep-ratio", "keep_ratio_largest": "keep-ratio-largest",
                "center_crop": "center-crop",
            ]
            return ["--resize-mode", modes[option.value] ?? option.value]
        case .resizeOnlyIfBigger: return try option.flag(["--resize-only-if-bigger"])
        case .upscaleInterpolation, .downscaleInterpolation:
            // WebImage resizes with Lanczos-3 both ways (its support widened when it shrinks, so every source
            // pixel counts, as OpenCV's area does): img2dataset's defaults, lanczos up and area down, and
            // lanczos either way are what it does; a cheaper filter of choice is not.
            let accepted = name == .upscaleInterpolation ? ["lanczos", "lanczos4"] : ["area", "lanczos", "lanczos4"]
            guard accepted.contains(option.value.lowercased()) else {
                let known = ["nearest", "linear", "bilinear", "cubic", "bicubic", "area", "lanczos", "lanczos4"]
                guard known.contains(option.value.lowercased()) else {
                    throw Unsupported(
                        "\(option.spelling) takes one of \(known.joined(separator: ", ")), got '\(option.value)'.")
                }
                throw option.unsupported(
                    " as \(option.value) (it resizes with Lanczos-3: give \(accepted.joined(separator: " or ")))")
            }
            return []
        case .encodeFormat:
            let formats = ["jpg": "jpeg", "png": "png", "webp": "webp"]
            guard let format = formats[option.value] else {
                throw Unsupported("\(option.spelling) takes jpg, png or webp, got '\(option.value)'.")
            }
            return ["--encode", format]
        case .skipReencode: return try option.flag(["--skip-reencode"])
        case .outputFormat:
            switch option.value {
            case "files", "webdataset", "parquet", "tfrecord", "dummy": return ["--format", option.value]
            default:
                throw Unsupported(
                    "\(option.spelling) takes files, webdataset, parquet, tfrecord or dummy, got '\(option.value)'.")
            }
        case .extractExif:
            // On by default, as in img2dataset.
            return try option.flag(["--extract-exif"]).isEmpty ? ["--no-extract-exif"] : ["--extract-exif"]
        default: return nil
        }
    }

    /// The options about the run (hashing, distribution, limits, retries, TLS, logging).
    private static func runOption(_ name: Name, _ option: GivenOption) throws(Unsupported) -> [String] {
        switch name {
        case .enableWandb: return try option.flag([], unsupportedWhenTrue: " (no Weights & Biases logging)")
        case .wandbProject: throw option.unsupported(" (no Weights & Biases logging)")
        case .distributor:
            guard option.value == "multiprocessing" else {
                throw option.unsupported(
                    " as \(option.value): run webimage bulk on each worker with --shard-index and --shard-count, or "
                        + "--shards (deploy/ has Spark and Ray drivers)")
            }
            return []
        case .subjobSize: throw option.unsupported(" (shards are the unit of work: --shard-size, --shards)")
        case .maxImageArea:
            guard let area = finite(option.value) else { return [] }
            // webimage's bound is a whole number of pixels; a fractional bound admits the same images as
            // its floor, since an area is whole.
            if let number = Double(area), number.isFinite, number >= 1, number < 0x1p62 {
                return ["--max-image-area", String(Int(number.rounded(.down)))]
            }
            return ["--max-image-area", area]
        case .incrementalMode:
            switch option.value {
            case "incremental": return []
            case "overwrite", "extend":
                throw option.unsupported(" as \(option.value) yet (finished shards are skipped, as incremental)")
            default:
                throw Unsupported("\(option.spelling) takes incremental, overwrite or extend, got '\(option.value)'.")
            }
        case .ignoreSSLCertificate: return try option.flag(["--insecure"])

        default:
            // Every other name is answered by `renamed` or `imageOption` first.
            throw option.unsupported("")
        }
    }

    /// The WebImage words of the img2dataset options whose meaning depends on others: the downloads at
    /// once (`processes_count` × `thread_count`), the quality (not PNG's compression level), the digest
    /// check (`[column, algorithm]`, the algorithm `compute_hash`'s) and `disable_all_reencoding`.
    private static func combined(
        _ given: [Name: (spelling: String, value: String)]
    ) throws(Unsupported) -> [String] {
        var words: [String] = []
        if given[.processesCount] != nil || given[.threadCount] != nil {
            // img2dataset runs thread_count downloads in each of processes_count processes; webimage runs
            // them in one process, so the product is its --concurrency. Each missing one is img2dataset's
            // default (1 process, 256 threads).
            func count(_ name: Name, default fallback: Int) throws(Unsupported) -> Int {
                guard let (spelling, value) = given[name] else { return fallback }
                guard let number = Int(value), number >= 1 else {
                    throw Unsupported("\(spelling) takes a whole number of at least 1, got '\(value)'.")
                }
                return number
            }
            let processes = try count(.processesCount, default: 1)
            let threads = try count(.threadCount, default: 256)
            let (product, overflow) = processes.multipliedReportingOverflow(by: threads)
            guard !overflow, product <= 4096 else {
                throw Unsupported(
                    "--processes_count × --thread_count is the downloads at once (webimage bulk runs them in one "
                        + "process, --concurrency), at most 4096: got \(processes) × \(threads).")
            }
            words += ["--concurrency", String(product)]
        }
        if let (spelling, value) = given[.encodeQuality] {
            if given[.encodeFormat]?.value == "png" {
                throw Unsupported(
                    "img2dataset's \(spelling) with --encode_format png (the compression level) is not supported by "
                        + "webimage bulk: PNG is written at one level.")
            }
            words += ["--quality", value]
        }
        if let (spelling, value) = given[.verifyHash] {
            let parts = list(value)
            if value.hasPrefix("[") || value.hasPrefix("(") || parts.count == 2 {
                guard parts.count == 2 else {
                    throw Unsupported("\(spelling) takes [column, algorithm], got '\(value)'.")
                }
                // img2dataset checks with the algorithm compute_hash names, and refuses two different ones.
                let computed = given[.computeHash]?.value ?? "sha256"
                guard parts[1] == computed else {
                    throw Unsupported(
                        "\(spelling) checks a \(parts[1]) digest but --compute_hash is \(computed): they must be "
                            + "the same.")
                }
                words += ["--verify-hash", parts[0]]
            } else {
                words += ["--verify-hash", value]
            }
        }
        if let (spelling, value) = given[.disableAllReencoding] {
            guard let on = boolean(value) else {
                throw Unsupported("\(spelling) takes True or False, got '\(value)'.")
            }
            // img2dataset then keeps every file's bytes and ignores the resize and the format; the later
            // value of an option wins, so these come last.
            if on { words += ["--encode", "none", "--resize-mode", "none"] }
        }
        return words
    }
}
