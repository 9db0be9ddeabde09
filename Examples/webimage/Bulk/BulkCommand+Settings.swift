import ArgumentParser
import Foundation
import WebImageDataset

/// `webimage bulk`'s options as the library's ``BulkJob``, which checks them and makes the engine.
extension WebImageCLI.Bulk {
    /// The job the options describe; ``BulkJob/validate()`` checks it.
    func makeJob() throws -> BulkJob {
        var job = BulkJob(input: input, output: output)
        job.format = format.sampleFormat
        job.shardSize = shardSize
        job.shardDigits = shardDigits
        job.maxLineBytes = maxLineBytes
        job.maxInputBytes = maxInputBytes
        job.objectStoreStallTimeout = s3StallTimeout
        job.urlColumn = urlCol
        job.captionColumn = captionCol
        job.savedColumns =
            saveCols.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
        job.boxesColumn = bboxCol
        job.verifyHashColumn = verifyHash
        job.resizeMode = resizeMode.engineMode
        job.size = size
        job.resizeOnlyIfBigger = resizeOnlyIfBigger
        job.encoding = encode.jobEncoding
        job.quality = quality
        job.lossless = lossless
        job.optimizesJPEGHuffmanTables = optimizeJpeg
        job.skipsReencoding = skipReencode
        job.minimumImageSize = minImageSize
        job.maximumImageArea = maxImageArea
        job.maximumAspectRatio = maxAspectRatio
        job.allowsPartial = allowPartial
        job.hashAlgorithm = computeHash.algorithm
        job.extractsEXIF = extractExif
        job.maxShardRetry = maxShardRetry
        switch dedup {
        case nil: break
        case "exact": job.deduplication = .exact
        case "phash": job.deduplication = .phash
        case let other?: throw ValidationError("--dedup takes exact or phash, got '\(other)'.")
        }
        job.deduplicationThreshold = dedupThreshold
        job.concurrency = concurrency
        job.perHost = perHost
        job.retries = retries
        job.timeout = timeout
        job.stallTimeout = stallTimeout
        job.userAgent = userAgent
        job.userAgentToken = userAgentToken
        job.disallowedHeaderDirectives = disallowedHeaderDirectives.map { $0.split(separator: ",").map(String.init) }
        job.ignoresRobotsTag = ignoreRobotsTag
        job.allowedDestinations = allowDestinations
        job.allowsPrivateDestinations = allowPrivateDestinations
        job.acceptsAnyCertificate = insecure
        job.dnsConcurrency = dnsConcurrency
        job.resolver = resolver
        job.shardIndex = shardIndex
        job.shardCount = shardCount
        job.shards = try explicitShards()
        return job
    }

    /// `--shards 3,7,12`; nil without it.
    private func explicitShards() throws -> [Int]? {
        try shards.map { text in
            try text.split(separator: ",").map { part -> Int in
                guard let value = Int(part.trimmingCharacters(in: .whitespaces)), value >= 0 else {
                    throw ValidationError("--shards takes shard numbers, got '\(part)'.")
                }
                return value
            }
        }
    }
}
