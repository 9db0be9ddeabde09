import ArgumentParser
import Foundation
import WebImage
import WebImageDataset

/// `webimage bulk`'s options turned into the engine's settings and destination policy, and the shard index
/// taken from the options or an array job's environment.
extension WebImageCLI.Bulk {
    /// Public addresses only, plus --allow-destination's networks; every address with
    /// --allow-private-destinations.
    func destinationPolicy() throws -> DestinationPolicy {
        if let invalid = allowDestinations.first(where: { !DestinationPolicy.isValidNetwork($0) }) {
            throw ValidationError(
                "--allow-destination takes a network such as 10.1.0.0/16 or ::1/128, got '\(invalid)'.")
        }
        guard !allowPrivateDestinations else {
            guard allowDestinations.isEmpty else {
                throw ValidationError("--allow-destination and --allow-private-destinations exclude each other.")
            }
            return .allowAll
        }
        return DestinationPolicy.publicOnly.allowing(allowDestinations)
    }

    func makeSettings() throws -> BulkSettings {
        guard (1...10_000).contains(shardSize) else {
            throw ValidationError("--shard-size must be between 1 and 10000, got \(shardSize).")
        }
        guard (1...4096).contains(concurrency) else { throw ValidationError("--concurrency must be 1…4096.") }
        guard perHost >= 1 else { throw ValidationError("--per-host must be at least 1.") }
        guard retries >= 0 else { throw ValidationError("--retries must not be negative.") }
        guard (1...100).contains(quality) else { throw ValidationError("--quality must be 1…100.") }
        guard size >= 1 else { throw ValidationError("--size must be at least 1.") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive.") }
        guard stallTimeout > 0 else { throw ValidationError("--stall-timeout must be positive.") }
        guard maxInputBytes.map({ $0 >= 1 }) ?? true else {
            throw ValidationError("--max-input-bytes must be at least 1.")
        }
        guard s3StallTimeout.map({ (1...86_400).contains($0) }) ?? true else {
            throw ValidationError("--s3-stall-timeout must be 1…86400.")
        }
        guard maxLineBytes >= 1 else { throw ValidationError("--max-line-bytes must be at least 1.") }
        guard progressInterval >= 0.05 else { throw ValidationError("--progress-interval must be at least 0.05.") }
        guard !userAgent.isEmpty else { throw ValidationError("--user-agent must not be empty.") }
        var settings = BulkSettings()
        settings.outputFormat = format.sampleFormat
        settings.concurrency = concurrency
        guard minImageSize >= 0 else { throw ValidationError("--min-image-size must not be negative.") }
        guard maxImageArea.map({ $0 >= 1 }) ?? true else {
            throw ValidationError("--max-image-area must be at least 1.")
        }
        guard maxAspectRatio.map({ $0 >= 1 }) ?? true else {
            throw ValidationError("--max-aspect-ratio must be at least 1 (the longer side over the shorter).")
        }
        settings.minimumSize = minImageSize
        settings.maximumArea = maxImageArea
        settings.maximumAspectRatio = maxAspectRatio
        if let token = userAgentToken {
            let trimmed = token.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.contains(where: { $0 == ":" || $0 == ";" || $0.isNewline }) else {
                throw ValidationError("--user-agent-token takes a name without ':', ';' or line breaks.")
            }
            settings.userAgentToken = trimmed.lowercased()
        }
        if let list = disallowedHeaderDirectives {
            guard !ignoreRobotsTag else {
                throw ValidationError("--disallowed-header-directives and --ignore-robots-tag exclude each other.")
            }
            settings.disallowedHeaderDirectives = Set(
                list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter {
                    !$0.isEmpty
                })
        } else if ignoreRobotsTag {
            settings.disallowedHeaderDirectives = []
        }
        settings.hashAlgorithm = computeHash.algorithm
        if verifyHash != nil {
            guard computeHash != .none else {
                throw ValidationError(
                    "--verify-hash checks the --compute-hash digest: it needs one other than none.")
            }
            settings.verifiesHash = true
        }
        settings.allowsPartial = allowPartial
        settings.savedColumns =
            saveCols.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
        // An input column never overwrites a field of the record: a `status` column would turn a failure
        // into a success, a `key` column would name the files --retry-failed writes.
        if let clash = settings.savedColumns.first(where: BulkSampleRecord.fieldNames.contains) {
            throw ValidationError(
                "--save-cols cannot keep '\(clash)': the record has a field of that name "
                    + "(\(BulkSampleRecord.fieldNames.sorted().joined(separator: ", "))).")
        }
        settings.writesCaptions = captionCol != nil
        let encodeFormat = encode.format
        if resizeOnlyIfBigger && resizeMode == .none {
            throw ValidationError("--resize-only-if-bigger needs a --resize-mode other than none.")
        }
        if let mode = resizeMode.engineMode {
            settings.resize = BulkResize(
                mode: mode, size: size, onlyIfBigger: resizeOnlyIfBigger,
                borderColor: encodeFormat == .jpeg ? .white : .clear)
        }
        if lossless && encode != .webp {
            throw ValidationError("--lossless applies to --encode webp only, not \(encode.rawValue).")
        }
        if optimizeJpeg && encode != .jpeg {
            throw ValidationError("--optimize-jpeg applies to --encode jpeg only, not \(encode.rawValue).")
        }
        if encodeFormat == .jpeg {
            settings.encoder = JPEGEncoder(quality: quality, optimizesHuffmanTables: optimizeJpeg)
        } else if let encodeFormat {
            settings.encoder = encodeFormat.encoder(quality: quality, lossless: lossless)
        } else {
            guard resizeMode == .none else {
                throw ValidationError("--encode none keeps the downloaded bytes: it needs --resize-mode none.")
            }
            guard bboxCol == nil else {
                throw ValidationError("--encode none keeps the downloaded bytes: --bbox-col needs an encoder.")
            }
        }
        return settings
    }

    /// This process's shard index and the process count, from the options or the engine's environment.
    static func resolveIndex(index: Int?, count: Int?, environment: [String: String]) throws -> (Int, Int) {
        var index = index
        var count = count
        if index == nil {
            if let value = environment["JOB_COMPLETION_INDEX"] {
                index = Int(value)
            } else if let value = environment["SLURM_ARRAY_TASK_ID"] {
                index = Int(value)
                if count == nil, let total = environment["SLURM_ARRAY_TASK_COUNT"] { count = Int(total) }
                if let minimum = environment["SLURM_ARRAY_TASK_MIN"].flatMap(Int.init), let shifted = index {
                    index = shifted - minimum  // arrays may start at 1
                }
            } else if let value = environment["AWS_BATCH_JOB_ARRAY_INDEX"] {
                index = Int(value)
            }
        }
        guard let index else {
            if count != nil { throw ValidationError("--shard-count needs --shard-index (or an engine's index).") }
            return (0, 1)
        }
        guard let count, count >= 1 else {
            throw ValidationError("a shard index (\(index)) needs --shard-count N (or SLURM_ARRAY_TASK_COUNT).")
        }
        guard (0..<count).contains(index) else {
            throw ValidationError("shard index \(index) is outside 0..<\(count).")
        }
        return (index, count)
    }
}
