import Foundation
import WebImage

/// Runs shards: downloads their rows (`concurrency` connections at a time, `perHost` per host, with retries),
/// resizes and encodes the images, and writes each shard's files atomically, stats last.
struct BulkShardRunner: Sendable {
    let downloader: ImageDownloader
    let settings: BulkSettings
    let directory: URL
    /// Told of every finished row (the progress events).
    var progress: BulkProgress?
    /// Where each finished shard's files go after they are written in `directory`; nil keeps them there.
    var publisher: (any ShardPublishing)?
    /// The output's index of kept files, with ``BulkDeduplication/exact``.
    var deduplicationIndex: (any BulkDeduplicationIndexing)?
    /// The output's index of kept pictures, with ``BulkDeduplication/phash``.
    var perceptualIndex: (any BulkPerceptualIndexing)?
    /// Decodes the images rows carry (a webdataset input's) with the downloader's decoding settings.
    let embeddedDecoder: EmbeddedImageDecoder
    /// The run's DNS stage (`--dns-concurrency`, `--resolver`), also the downloader's address provider;
    /// nil leaves resolution to curl.
    var hostResolver: BulkHostResolver?
    /// Rows under way at once; nil is ``BulkSettings/rowsUnderWay``. An input whose rows carry their
    /// images has fewer (``embeddedRowSlots``): its rows wait on no network, and each holds its image.
    var rowSlots: Int?

    /// The row slots of an input whose rows carry their images: two per core, enough to keep every core
    /// decoding or encoding while the next rows are read, and a bound on the images held (each at most
    /// ``WebDatasetRowReader/maximumImageBytes``).
    static var embeddedRowSlots: Int { max(2, 2 * ProcessInfo.processInfo.activeProcessorCount) }

    /// A runner that downloads with `downloader` under `settings` and writes shards in `directory`.
    init(downloader: ImageDownloader, settings: BulkSettings, directory: URL) {
        self.downloader = downloader
        self.settings = settings
        self.directory = directory
        embeddedDecoder = EmbeddedImageDecoder(config: downloader.config)
    }

    /// The files of a shard whose names start with `stem` (`00003`, or `00003-retry1` for a retry).
    static func names(stem: String) -> ShardFileNames {
        ShardFileNames(
            tar: stem + ".tar", tfrecord: stem + ".tfrecord", jsonl: stem + ".jsonl", parquet: stem + ".parquet",
            stats: stem + "_stats.json",
            folder: stem)
    }

    /// Shards open at once, counting finished ones whose files the publisher is still taking. The next
    /// shard starts as soon as the last row of the one before is under way, so a slow row (a trickling
    /// server, a long `Retry-After`) holds only its own shard's files open and its own row slot, not the
    /// process's connections. Each open shard keeps its open files and its finished rows' Parquet columns
    /// (``ShardParquetWriter``); four bound that while leaving room for a few shards that each wait on a
    /// straggler.
    static let maximumOpenShards = 4

    /// Shard `shard` (of the plan) under `lock`: the rows `nextRow` reads, keyed by their index in it as
    /// `keys` names them.
    static func job(
        shard: Int, keys: BulkKeyFormat, lock: ShardLock, rows nextRow: @escaping () throws -> BulkRow?
    ) -> ShardJob {
        var index = 0
        return ShardJob(stem: keys.stem(shard: shard), shard: shard, lock: lock) {
            guard let row = try nextRow() else { return nil }
            defer { index += 1 }
            return (keys.key(shard: shard, index: index), row)
        }
    }

    /// Runs the jobs `next` hands out, in that order, until it returns nil: at most
    /// ``BulkSettings/rowsUnderWay`` rows under way at once (``DownloadSlots``) across all open shards (at most ``maximumOpenShards``),
    /// each shard's files written and renamed, stats last, the moment its last row is done; `finished`
    /// is then told. `next` is called only when a new shard may open, once the rows of the job before are
    /// all read, and a job's rows are read one at a time as they start (``ShardJob/nextRow``): the caller
    /// reads its input a row at a time, and no shard's rows are all in memory. A row waiting for its
    /// host's turn or to retry (`Retry-After`, in the downloader) holds a row slot but no connection and
    /// no queue slot, so the next rows, other hosts' included, run meanwhile.
    ///
    /// Samples are written in completion order: a slow or retried row never holds finished ones back, so
    /// at most ``BulkSettings/rowsUnderWay`` samples are in memory. Each image's bytes are the same in every run; only
    /// the order of the members in a tar and of the lines in a jsonl varies.
    func run(jobs next: () throws -> ShardJob?, finished: (BulkShardStats) -> Void) async throws {
        let slots = DownloadSlots(count: rowSlots ?? settings.rowsUnderWay)
        var state = RunState()
        do {
            try await withThrowingTaskGroup(of: RowEvent.self) { group in
                while true {
                    try await startRows(&state, group: &group, slots: slots, jobs: next, finished: finished)
                    if state.granted {  // no row could take it
                        state.granted = false
                        await slots.release()
                    }
                    guard let event = try await group.next() else { break }
                    try handle(event, &state, group: &group, finished: finished)
                }
            }
        } catch {
            for shard in state.open.values { shard.sink.abandon() }
            throw error
        }
    }

    /// Where one ``run(jobs:finished:)`` stands: its open shards and its claim on the download slots.
    private struct RunState {
        /// The shards opened and not yet closed, by id.
        var open: [Int: OpenShard] = [:]
        /// The shard whose rows are being started.
        var feeding: OpenShard?
        var opened = 0
        /// Whether the jobs have run out.
        var exhausted = false
        /// Whether a `.slotFree` task is in the group.
        var waitingForSlot = false
        /// Whether that task acquired a slot not yet given to a row.
        var granted = false
        /// Finished shards whose files the publisher is taking.
        var publishing = 0
    }

    private typealias RowGroup = ThrowingTaskGroup<RowEvent, any Error>

    /// Starts rows, opening shards as the rows of the one before run out, until no slot is free or no
    /// shard may open.
    private func startRows(
        _ state: inout RunState, group: inout RowGroup, slots: DownloadSlots, jobs next: () throws -> ShardJob?,
        finished: (BulkShardStats) -> Void
    ) async throws {
        while true {
            if state.feeding == nil {
                guard !state.exhausted, state.open.count + state.publishing < Self.maximumOpenShards else { return }
                guard let job = try next() else {
                    state.exhausted = true
                    return
                }
                let shard = try OpenShard(id: state.opened, job: job, directory: directory, settings: settings)
                state.opened += 1
                state.open[shard.id] = shard
                if shard.upcoming == nil {
                    state.open[shard.id] = nil
                    try complete(shard, &state, group: &group, finished: finished)
                    continue
                }
                state.feeding = shard
            }
            guard let shard = state.feeding, let (key, row) = shard.upcoming else { return }
            if state.granted {
                state.granted = false
            } else if state.waitingForSlot {
                return
            } else if !(await slots.tryAcquire()) {
                // Every slot is taken: this task takes the next one that comes free (a row that
                // ends, or one that starts waiting to retry) and wakes the loop with it.
                group.addTask {
                    await slots.acquire()
                    return .slotFree
                }
                state.waitingForSlot = true
                return
            }
            let id = shard.id
            group.addTask {
                let sample = await process(key: key, row: row)
                await slots.release()
                return .finished(job: id, sample: sample)
            }
            shard.started += 1
            shard.upcoming = try shard.job.nextRow()
            if shard.upcoming == nil { state.feeding = nil }
        }
    }

    /// Takes what a task of the group reports.
    private func handle(
        _ event: RowEvent, _ state: inout RunState, group: inout RowGroup, finished: (BulkShardStats) -> Void
    ) throws {
        switch event {
        case .published(let stats):
            state.publishing -= 1
            finished(stats)
        case .slotFree:
            state.waitingForSlot = false
            state.granted = true
        case .finished(let id, let sample):
            guard let shard = state.open[id] else { return }
            try shard.record(sample)
            progress?.recordImage(succeeded: sample.succeeded)
            if shard.upcoming == nil, shard.finished == shard.started {
                state.open[id] = nil
                try complete(shard, &state, group: &group, finished: finished)
            }
        }
    }

    /// Closes a finished shard. It is counted done at once, or once the publisher has its files: that runs
    /// as a task of the group, so rows keep starting meanwhile.
    private func complete(
        _ shard: OpenShard, _ state: inout RunState, group: inout RowGroup, finished: (BulkShardStats) -> Void
    ) throws {
        let stats = try close(shard)
        guard let publisher else { return finished(stats) }
        state.publishing += 1
        let (names, lock, directory) = (shard.names, shard.job.lock, directory)
        let written = names.written(in: directory)
        group.addTask {
            do {
                try await publisher.publish(names: written, stats: names.stats, in: directory)
            } catch {
                // Not published, not done: the stats here would make another pass skip the shard.
                try? FileManager.default.removeItem(at: directory.appendingPathComponent(names.stats))
                throw error
            }
            lock?.finish()
            return .published(stats)
        }
    }

    /// What a task of ``run(jobs:finished:)`` reports: a row done, a download slot come free, or a shard
    /// published.
    private enum RowEvent: Sendable {
        /// The publisher has taken a finished shard's files.
        case published(BulkShardStats)
        case finished(job: Int, sample: BulkSample)
        case slotFree
    }

    /// Renames a shard's files into place and writes its stats, last. Without a publisher the shard is
    /// done and its lock removed; with one, the lock stays until the publisher has the files.
    private func close(_ shard: OpenShard) throws -> BulkShardStats {
        try shard.sink.finish()
        var stats = shard.stats
        stats.duration = Double(DispatchTime.now().uptimeNanoseconds - shard.opened) / 1e9
        stats.startTime = shard.openedAt
        stats.endTime = Date().timeIntervalSince1970
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(
            try encoder.encode(stats) + Data("\n".utf8), to: directory.appendingPathComponent(shard.names.stats))
        if publisher == nil { shard.job.lock?.finish() }
        return stats
    }

    /// Downloads (retrying what may succeed later), checks, resizes and encodes one row; a row that carries
    /// its image (``BulkRow/image``) is decoded instead. Called holding one of the row slots.
    private func process(key: String, row: BulkRow) async -> BulkSample {
        var sample = BulkSample(key: key, row: row)
        let started = DispatchTime.now().uptimeNanoseconds
        if let embedded = row.image {
            await processEmbedded(&sample, embedded)
            sample.row.image = nil  // the sample keeps only what its files need
        } else {
            await download(&sample)
        }
        sample.milliseconds = Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        return sample
    }

    /// Downloads the sample's row, then ``finish(_:data:image:)``.
    private func download(_ sample: inout BulkSample) async {
        let row = sample.row
        guard let url = URL(string: row.url), url.host?.isEmpty == false,
            ["http", "https"].contains(url.scheme?.lowercased() ?? "")
        else {
            sample.fail(.invalidURL, "not an http(s) URL: \(row.url.prefix(200))")
            return
        }
        var context = ImageDownloadContext()
        context.transformer = transformer(for: row)
        let robots = RobotsTagCheck(
            disallowed: settings.disallowedHeaderDirectives, userAgentToken: settings.userAgentToken)
        if !robots.disallowed.isEmpty { context.responseModifier = robots }
        // Retries (`--retries`) are the downloader's (`config.retryPolicy`): a row waiting for its next
        // attempt holds no connection and no queue slot, only its row slot.
        // One frame is all a sample keeps: an animation's other frames are never decoded or resized.
        var options: ImageDownloaderOptions = .decodeFirstFrameOnly
        if settings.download.acceptsAnyCertificate { options.insert(.allowInvalidSSLCertificates) }
        let result = await resolvingDownload(url, options: options, context: context)
        switch result {
        case .success(let downloaded):
            sample.attempts = downloaded.metrics?.attempts ?? 1
            await finish(&sample, data: downloaded.data, image: downloaded.image)
        case .failure(let error):
            let failure = error as? ImageDownloaderError
            sample.attempts = failure?.attempts ?? 1
            if let failure, failure.code == .invalidDownloadResponse, !robots.disallowed.isEmpty {
                sample.fail(.robotsTag, "use of image disallowed by X-Robots-Tag directive")
            } else {
                sample.fail(BulkFailure(error: error), failure?.message ?? "\(error)")
            }
        }
    }

    /// The download of `url`, its host (and a redirect's, when the stage must resolve every host) resolved
    /// by the run's DNS stage first, when there is one. A host that does not resolve fails the row with
    /// `cannotResolveHost` and the resolver's words, before any connection.
    private func resolvingDownload(
        _ url: URL, options: ImageDownloaderOptions, context: ImageDownloadContext
    ) async -> Result<ImageDownloadResult, any Error> {
        var pending = hostResolver != nil ? url.host : nil
        var rounds = 0
        while true {
            if let host = pending, let resolver = hostResolver, !Self.isAddressLiteral(host) {
                if case .failure(let failure) = await resolver.resolve(host) {
                    return .failure(ImageDownloaderError(.cannotResolveHost, failure.message, url: url))
                }
            }
            do {
                return .success(try await downloader.image(for: url, options: options, context: context))
            } catch {
                // A redirect to a host the stage had not resolved: resolve it, then download again.
                guard let unresolved = error.underlying as? UnresolvedHost, rounds < 8 else { return .failure(error) }
                pending = unresolved.host
                rounds += 1
            }
        }
    }

    private static func isAddressLiteral(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    /// The resize and blur of `row`; nil when it needs neither. An image the filters refuse is left as
    /// it is, so only its file's size is recorded.
    private func transformer(for row: BulkRow) -> BulkImageTransformer? {
        guard settings.resize != nil || !row.boxes.isEmpty else { return nil }
        var transformer = BulkImageTransformer(resize: settings.resize, boxes: row.boxes)
        let filters = settings
        transformer.leavesAlone = { filters.rejection(width: $0, height: $1) != nil }
        return transformer
    }

    /// A row that carries its image: decoded, checked, resized and encoded as a downloaded one is.
    private func processEmbedded(_ sample: inout BulkSample, _ embedded: BulkRowImage) async {
        switch embedded {
        case .unusable(let reason):
            sample.fail(.unusableSample, reason)
        case .file(let data, let member):
            switch await embeddedDecoder.image(data, transformer: transformer(for: sample.row), member: member) {
            case .success(let image):
                await finish(&sample, data: data, image: image)
            case .failure(let error):
                sample.downloadedBytes = data.count
                sample.fail(BulkFailure(error: error), (error as? ImageDownloaderError)?.message ?? "\(error)")
            }
        }
    }

    /// `--dedup exact`: fails the sample when another row of the output kept the same file.
    private func isDuplicateFile(_ sample: inout BulkSample, data: Data) async -> Bool {
        guard let index = deduplicationIndex else { return false }
        let digest = settings.hashAlgorithm == .sha256 ? sample.hash ?? "" : BulkHashAlgorithm.sha256.hex(data)
        let claim = await index.claim(digest: digest, key: sample.key)
        return failIfDuplicate(&sample, claim, what: "file (sha256 \(digest))")
    }

    /// `--dedup phash`: records the image's perceptual hash, and fails the sample when another row of the
    /// output kept a picture within the threshold.
    private func isDuplicatePicture(_ sample: inout BulkSample, image: Image) async -> Bool {
        guard let index = perceptualIndex, let frame = image.frames.first else { return false }
        let hash = PerceptualHash.hash(frame)
        let hex = PerceptualHash.hex(hash)
        sample.phash = hex
        let claim = await index.claim(hash: hash, key: sample.key)
        return failIfDuplicate(&sample, claim, what: "picture (phash \(hex))")
    }

    private func failIfDuplicate(_ sample: inout BulkSample, _ claim: BulkDeduplicationClaim, what: String) -> Bool {
        switch claim {
        case .kept:
            return false
        case .duplicate(let holder):
            sample.fail(.duplicate, "duplicate of \(holder): the same \(what)")
        case .failed(let message):
            sample.fail(.download(code: "deduplicationIndex"), message)
        }
        return true
    }

    /// Filters, then encodes (or keeps the downloaded bytes when no encoder is set).
    private func finish(_ sample: inout BulkSample, data: Data, image: Image?) async {
        sample.downloadedBytes = data.count
        guard let image else {
            sample.fail(.download(code: ImageDownloaderError.Code.badImageData.description), "nothing decoded")
            return
        }
        // The digest first, as img2dataset checks it before it decodes: a file that is not the expected
        // one gets no sizes either.
        if let algorithm = settings.hashAlgorithm {
            let hash = algorithm.hex(data)
            if let column = sample.row.expectedHash.map({ $0.trimmingCharacters(in: .whitespaces).lowercased() })
                ?? (settings.verifiesHash ? "" : nil), column != hash
            {
                sample.fail(
                    .hashMismatch,
                    column.isEmpty
                        ? "hash mismatch: the row has no expected \(algorithm.rawValue)"
                        : "hash mismatch: \(algorithm.rawValue) \(hash), expected \(column.prefix(200))")
                return
            }
            sample.hash = hash
        }
        if settings.extractsEXIF { sample.exif = EXIFSummary.json(of: data) }
        if image.isPartial && !settings.allowsPartial {
            sample.fail(.truncated, "the image data ends early: only part of it decoded (--allow-partial keeps it)")
            return
        }
        sample.originalWidth = image.originalWidth
        sample.originalHeight = image.originalHeight
        // A filtered image was left unresized (BulkImageTransformer.leavesAlone): only its file's size is
        // recorded.
        if let (failure, message) = settings.rejection(width: image.originalWidth, height: image.originalHeight) {
            sample.fail(failure, message)
            return
        }
        // A row claims its file or picture only once it would be kept: a failed row holds no claim.
        if await isDuplicateFile(&sample, data: data) { return }
        if await isDuplicatePicture(&sample, image: image) { return }
        sample.width = image.width
        sample.height = image.height
        if let encoder = settings.encoder, settings.skipsReencoding, image.format == encoder.format, !image.hasAlpha,
            sample.row.boxes.isEmpty, image.width == image.originalWidth, image.height == image.originalHeight
        {
            // As img2dataset's skip_reencode: the encoder would only write the same pixels again.
            sample.bytes = data
            sample.fileExtension = encoder.format == .jpeg ? "jpg" : encoder.format.rawValue
        } else if let encoder = settings.encoder {
            do {
                sample.bytes = try encoder.encode(image)
                sample.fileExtension = encoder.format == .jpeg ? "jpg" : encoder.format.rawValue
            } catch {
                sample.fail(.encoding, "\(error)")
            }
        } else {
            sample.bytes = data
            let format = ImageFormat.detect(data)
            sample.fileExtension = format == .jpeg ? "jpg" : (format == .unknown ? "bin" : format.rawValue)
        }
    }
}
