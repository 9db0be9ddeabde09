import ArgumentParser
import Foundation
import WebImageDataset
import WebImageObjectStore

extension WebImageCLI {
    /// `webimage bulk INPUT --output DIR`: a URL list to an image dataset, in shards.
    struct Bulk: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download a URL list into a dataset of shards (webdataset tars or folders).",
            discussion: """
                The input (.txt, .csv, .tsv, .json or .jsonl, optionally .gz, or .parquet) is cut into shards of \
                --shard-size rows (DIR/plan.json). Each shard writes {shard:05}.tar (or the folder {shard:05}/, or \
                {shard:05}.tfrecord: --format), {shard:05}.jsonl and {shard:05}.parquet with one row per input URL \
                (with --format parquet the images are in it), and {shard:05}_stats.json last: a shard with stats \
                is done, and a rerun of the same command skips it. Files appear under their final names only when \
                complete.

                Reprocessing: INPUT may be webdataset shards (a .tar, or a folder of .tar files, such as an earlier \
                run's output or img2dataset's): each sample's image is decoded, resized and encoded again, nothing \
                is downloaded; its json gives the url and columns, its txt the caption.

                Scale-out: --shard-index I --shard-count N runs the shards with shard % N == I; the index may \
                come from JOB_COMPLETION_INDEX (Kubernetes Indexed Job), SLURM_ARRAY_TASK_ID with \
                SLURM_ARRAY_TASK_COUNT (Slurm), or AWS_BATCH_JOB_ARRAY_INDEX. --shards 3,7,12 runs exactly those.

                Destinations: only public addresses are connected to, whatever the URL's spelling, on every \
                redirect; a row whose host is loopback, private, link-local or reserved fails with error code \
                destinationNotAllowed, and nothing is sent to it. --allow-destination CIDR permits a network \
                (repeatable), --allow-private-destinations every address. Behind a proxy the policy judges the \
                proxy's address.

                Processes may share DIR: each locks a shard (DIR/.{shard:05}.lock) while it writes it, and skips, \
                with a message, a shard another live process holds.

                Object storage: INPUT may be s3://bucket/key and --output s3://bucket/prefix (AWS_ACCESS_KEY_ID, \
                AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION; AWS_ENDPOINT_URL for MinIO, Ceph, R2 or GCS, \
                path-style; AWS_MAX_ATTEMPTS). Each shard is made under TMPDIR, then uploaded whole, its stats \
                object last; a rerun skips the shards whose stats object exists. An s3:// input is downloaded to \
                TMPDIR, at most --max-input-bytes; a store request moving under 1 KiB/s for --s3-stall-timeout \
                seconds fails and is tried again.

                Exit status: 0 when every assigned shard is done, 1 for a failure a retry may fix (network, \
                disk, a shard skipped while another process writes it), 2 for one it cannot (bad input, bad \
                option values, or every row failed for one reason an option changes, which a message names), \
                64 for an unknown option or a value outside an option's choices.

                img2dataset's option names and values are accepted too (--output_folder, --image_size, \
                --resize_mode keep_ratio, --processes_count, … with _ or -) and mean what they mean there; one \
                webimage does not have is refused (exit 64). The README lists them.

                Example:
                  webimage bulk urls.csv.gz --url-col url --caption-col caption --output dataset \\
                    --resize-mode fill --size 256 --encode jpeg --quality 90 --concurrency 64 --per-host 8
                """)

        @Argument(
            help: """
                The URL list: .txt, .csv, .tsv, .json (an array of objects) or .jsonl, optionally .gz, or .parquet; \
                a path or s3://bucket/key. Or webdataset shards to reprocess: a .tar, or a folder of them.
                """)
        var input: String

        @Option(
            help: ArgumentHelp(
                "The output directory, or s3://bucket/prefix (credentials from AWS_ACCESS_KEY_ID and friends).",
                valueName: "dir"))
        var output: String

        @Option(
            help: ArgumentHelp(
                "The largest s3:// input downloaded (a larger object exits with 2); 16 GiB by default.",
                valueName: "bytes"))
        var maxInputBytes: Int64?

        @Option(
            help: ArgumentHelp(
                "Seconds an object-store request may move under 1 KiB/s before it fails (and is tried again); 60 by default.",
                valueName: "seconds"))
        var s3StallTimeout: Double?

        @Option(
            help: ArgumentHelp(
                """
                webdataset (tar shards), files (a folder per shard), parquet (the images in {shard:05}.parquet, \
                a binary column named jpg, png, webp or avif after --encode; jpg with --encode none), tfrecord \
                ({shard:05}.tfrecord, a tf.train.Example per image, features named as the json's) or dummy \
                (download and count: only {shard:05}_stats.json is written).
                """, valueName: "format"))
        var format: BulkFormatOption = .webdataset

        @Option(
            help: """
                Rows per shard (at most 1,000,000). A sample's key is shard × 10^d + row, with d the fewest \
                digits that hold a row number (4 for 10,000 rows), written with --shard-digits + d digits, as \
                img2dataset writes its keys.
                """)
        var shardSize: Int = 10_000

        @Option(
            help: ArgumentHelp(
                "The least digits of a shard's number in its files' names and keys (img2dataset's oom_shard_count).",
                valueName: "digits"))
        var shardDigits: Int = 5

        @Option(
            help: ArgumentHelp(
                "Refuse (exit 2) an input line longer than this; a CSV record counts with its quoted line breaks.",
                valueName: "bytes"))
        var maxLineBytes: Int = TextRowReader.defaultMaxLineBytes

        @Option(help: "The column that holds the URL (.csv, .tsv, .json, .jsonl, .parquet); url by default.")
        var urlCol: String?

        @Option(help: "The column that holds the caption (written as {key}.txt).")
        var captionCol: String?

        @Option(
            help: ArgumentHelp(
                """
                Other columns to keep in each sample's record, comma-separated (a Parquet input's keep their \
                type). A name of the record's own fields \
                (key, url, status, error, error_code, caption, ms, attempts, width, height, original_width, \
                original_height, md5, sha256, sha512) is refused.
                """, valueName: "a,b"))
        var saveCols: String?

        @Option(
            help: ArgumentHelp(
                """
                The column of regions to blur (faces): a list of [x0, y0, x1, y1] boxes, fractions of the width \
                and height, per row (a Parquet list of lists, a JSON array of arrays; JSON text in CSV or TSV). \
                The blur grows with the box, as img2dataset's bbox_col.
                """, valueName: "column"))
        var bboxCol: String?

        @Option(
            help: ArgumentHelp(
                """
                keep-ratio (the shorter side becomes --size), center-crop (and crop to the square; also fill), \
                keep-ratio-largest (the longer side becomes --size; also fit, longest), border (and pad to the \
                square, white for jpeg, transparent otherwise; also pad) or none.
                """, valueName: "mode"))
        var resizeMode: BulkResizeMode = .centerCrop

        @Flag(
            help: """
                Never enlarge: an image whose side that --resize-mode scales to --size (the shorter for \
                keep-ratio and center-crop, the longer otherwise) is not above --size keeps its size, uncropped \
                and unpadded, as img2dataset's resize_only_if_bigger.
                """)
        var resizeOnlyIfBigger = false

        @Option(help: "The resize box's side in pixels.")
        var size: Int = 256

        @Option(
            help: ArgumentHelp("jpeg, webp, png or avif; none keeps the downloaded bytes.", valueName: "format"))
        var encode: BulkEncoding = .jpeg

        @Option(help: "Quality of jpeg, webp or avif (1…100).")
        var quality: Int = 95

        @Flag(help: "Encode WebP losslessly (--quality is then the effort); only with --encode webp.")
        var lossless = false

        @Flag(
            help: """
                JPEG Huffman tables made for each image: files a few percent smaller, about four times the \
                encode's CPU. Off by default: the standard tables, as img2dataset (OpenCV) writes them.
                """)
        var optimizeJpeg = false

        @Flag(
            help: """
                Keep a file already in the --encode format byte for byte when the resize and blur leave it as it \
                was (same size, no boxes) and it has no alpha channel, as img2dataset's skip_reencode.
                """)
        var skipReencode = false

        @Option(
            name: [.customLong("min-image-size"), .customLong("min-size")],
            help: ArgumentHelp(
                "Fail (error_code tooSmall) an image whose smaller side is below this, before resizing.",
                valueName: "pixels"))
        var minImageSize: Int = 0

        @Option(
            help: ArgumentHelp(
                "Fail (error_code areaTooLarge) an image of more pixels than this (width × height, before resizing).",
                valueName: "pixels"))
        var maxImageArea: Int?

        @Option(
            help: ArgumentHelp(
                "Fail (error_code aspectRatio) an image whose longer side is more than this many times the shorter.",
                valueName: "ratio"))
        var maxAspectRatio: Double?

        @Option(help: "Downloads (connections) at once, all hosts together.")
        var concurrency: Int = 64

        @Option(help: "Downloads at once per host; rows waiting for their host's turn take no --concurrency slot.")
        var perHost: Int = 8

        @Option(
            help: ArgumentHelp(
                """
                Resolve each row's host before its download in a DNS stage of its own, this many lookups at once, \
                each host once while its answer lasts (failures for 60 s). Without it (and without --resolver) curl \
                resolves as it connects.
                """, valueName: "n"))
        var dnsConcurrency: Int?

        @Option(
            help: ArgumentHelp(
                """
                The DNS server the stage asks instead of the system's (a local unbound, say): ADDRESS, ADDRESS:PORT \
                or [IPV6]:PORT. Every host, a redirect's included, is resolved there; --dns-concurrency is 32 unless \
                given.
                """, valueName: "address"))
        var resolver: String?

        @Option(help: "Retries for timeouts, lost connections, 5xx and 429 (honouring Retry-After). 0 by default.")
        var retries: Int = 0

        @Option(help: ArgumentHelp("Seconds a whole download may take, redirects included.", valueName: "seconds"))
        var timeout: Double = 30

        @Option(
            help: ArgumentHelp(
                "Seconds a download may receive nothing (connecting included) before it fails; at most --timeout.",
                valueName: "seconds"))
        var stallTimeout: Double = 15

        @Option(help: "The User-Agent sent: name your project and a contact.")
        var userAgent: String = BulkDownloadSettings.defaultUserAgent

        @Option(
            help: ArgumentHelp(
                """
                Added to the User-Agent as "(compatible; TOKEN)", and the agent whose scoped X-Robots-Tag \
                directives ("TOKEN: noai") count, as img2dataset's user_agent_token.
                """, valueName: "token"))
        var userAgentToken: String?

        @Option(
            help: ArgumentHelp(
                """
                X-Robots-Tag directives that fail a row (error code robotsTag), comma-separated; an empty value \
                for none. noai,noimageai,noindex,noimageindex by default (img2dataset's).
                """, valueName: "a,b"))
        var disallowedHeaderDirectives: String?

        @Flag(help: "Ignore X-Robots-Tag (the same as --disallowed-header-directives '').")
        var ignoreRobotsTag = false

        @Option(
            help: ArgumentHelp(
                """
                The digest of each downloaded file the record carries, in a field of the algorithm's name: md5, \
                sha256 or sha512; none for no field.
                """, valueName: "algorithm"))
        var computeHash: BulkHashOption = .sha256

        @Option(
            help: ArgumentHelp(
                """
                exact: a row whose downloaded file is byte for byte one another row kept fails with error code \
                duplicate (its error_message names the kept key); phash: one whose image's 64-bit perceptual hash \
                (the record's phash field) is within --dedup-threshold bits of a kept one. The index is in \
                DIR/.dedup, shared by every process writing DIR (with s3://: objects under the prefix's \
                .dedup/, made by conditional PUTs).
                """, valueName: "exact|phash"))
        var dedup: String?

        @Option(help: "The most bits two perceptual hashes may differ in to be one picture (--dedup phash), 0…7.")
        var dedupThreshold = 4

        @Option(
            help: """
                When a shard fails (its files, the object store), the pass stops and the shards not done run \
                again, up to this many more times (img2dataset's max_shard_retry); finished shards stay done.
                """)
        var maxShardRetry = 1

        @Flag(
            inversion: .prefixedNo,
            help: """
                Give each record img2dataset's exif field: the downloaded file's EXIF tags as a JSON object's \
                text, as img2dataset writes it (exifread's names and values), {} without EXIF, null for a \
                failed row or a HEIC file (as img2dataset's reader gives).
                """)
        var extractExif = true

        @Option(
            help: ArgumentHelp(
                """
                The column holding each file's expected digest (hex, in --compute-hash's algorithm): a file \
                that differs, or a row without one, fails with error code hashMismatch.
                """, valueName: "column"))
        var verifyHash: String?

        @Option(
            name: .customLong("allow-destination"),
            help: ArgumentHelp(
                "Also connect to this network, e.g. 10.1.0.0/16 or ::1/128 (repeatable); only public addresses "
                    + "by default.", valueName: "cidr"))
        var allowDestinations: [String] = []

        @Flag(help: "Connect to any address, private and loopback ones included (only public ones by default).")
        var allowPrivateDestinations = false

        @Flag(help: "Accept any TLS certificate and host name (certificates are checked by default).")
        var insecure = false

        @Flag(
            help: """
                Keep an image whose file ends early (decoded to the rows that arrived); by default its row \
                fails with error code truncated.
                """)
        var allowPartial = false

        @Option(help: "This process's index among --shard-count processes.")
        var shardIndex: Int?

        @Option(help: "How many processes share the shards.")
        var shardCount: Int?

        @Option(help: ArgumentHelp("Run exactly these shards, comma-separated.", valueName: "a,b,c"))
        var shards: String?

        @Flag(
            help: """
                Re-download the failed rows of finished shards (not those a retry cannot change: robots tag, \
                filters, invalid URLs) into new files {shard:05}-retryN.*, keys unchanged.
                """)
        var retryFailed = false

        @Flag(
            help: """
                Write (or check) DIR/plan.json, print it on stdout and exit: how a driver (Spark, Ray) learns the \
                number of shards to hand out with --shards.
                """)
        var planOnly = false

        @Flag(
            help: """
                Print JSON lines on stdout: {"event":"progress",…} every --progress-interval seconds (shards, \
                images, images/s, success rate, ETA), {"event":"shard",…} per finished shard (its stats) and \
                {"event":"summary",…} at the end.
                """)
        var json = false

        @Option(help: "Seconds between --json progress lines.")
        var progressInterval: Double = 5

        /// img2dataset's `--input_format` (``Img2datasetArguments``): webimage reads the format from the
        /// input's name, so the two must agree.
        @Option(name: .customLong("img2dataset-input-format"), help: .hidden)
        var img2datasetInputFormat: String?

        /// Checks the options that need no file: a bad value exits with 2 and a message, as a bad input does.
        func validate() throws {
            do {
                guard progressInterval >= 0.05 else {
                    throw ValidationError("--progress-interval must be at least 0.05.")
                }
                try checkInputFormat()
                if retryFailed && format == .dummy {
                    throw ValidationError(
                        "--retry-failed reads the finished shards' jsonl, which --format dummy does not write.")
                }
                try makeJob().validate()
            } catch let error as ValidationError {
                Console.write("webimage bulk: \(error.message)\n", to: .standardError)
                throw ExitCode(2)
            } catch let error as BulkJobError {
                Console.write("webimage bulk: \(error.description)\n", to: .standardError)
                throw ExitCode(2)
            }
        }

        func run() async throws {
            do {
                try await execute()
            } catch let error as BulkInputError {
                Console.write("webimage bulk: \(error.description)\n", to: .standardError)
                throw ExitCode(2)
            } catch let error as BulkJobError {
                Console.write("webimage bulk: \(error.description)\n", to: .standardError)
                throw ExitCode(2)
            } catch let error as ValidationError {
                Console.write("webimage bulk: \(error.message)\n", to: .standardError)
                throw ExitCode(2)
            } catch let error as BulkFileError {
                throw CLIError(error.description)
            } catch let error as S3Error {
                // Credentials, configuration, a missing bucket: no rerun fixes them (2); the store's or the
                // network's failures may pass (1).
                let hint = error.kind == .tooLarge ? "; --max-input-bytes raises the bound" : ""
                Console.write("webimage bulk: \(error.description)\(hint)\n", to: .standardError)
                throw ExitCode(error.isPermanent ? 2 : 1)
            }
        }

        private func execute() async throws {
            let clock = ContinuousClock()
            let start = clock.now
            func wallSeconds() -> Double {
                let elapsed = clock.now - start
                return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            }
            let job = try makeJob()
            let assignment = try job.assignment(environment: ProcessInfo.processInfo.environment)
            // s3:// input and output are staged under TMPDIR; a local input and directory pass through.
            let workspace = try await job.open()
            defer { workspace.removeTemporaryFiles() }
            let plan: BulkPlan
            do {
                plan = try await job.plan(in: workspace)
            } catch {
                workspace.removeCreatedDirectories()
                throw error
            }
            if planOnly {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                Console.write(String(decoding: try encoder.encode(plan), as: UTF8.self) + "\n", to: .standardOutput)
                return
            }
            let assigned = plan.assigned(assignment)
            let engine = try await job.makeEngine(plan: plan, assigned: assigned, in: workspace, retrying: retryFailed)
            // A retry's row count is known only as it reads the finished shards' jsonl: no progress line.
            let mode: BulkRenderer.Mode =
                retryFailed ? .silent : json ? .json : Console.stderrIsTerminal ? .terminal : .silent
            let renderer = BulkRenderer(mode: mode, json: json)
            let rendering = Task { await renderer.render(engine.events) { engine.progressSnapshot() } }
            // The engine stops its downloader before its run returns or throws.
            func stop() async {
                await rendering.value
                renderer.finish(engine.progressSnapshot())
            }

            if retryFailed {
                let summary: BulkRetrySummary
                do {
                    summary = try await engine.retryFailed()
                } catch {
                    await stop()
                    throw error
                }
                await stop()
                Console.write(
                    "retried \(summary.retriedRows) failed row(s): \(summary.succeeded) ok, \(summary.failed) failed "
                        + "in \(Self.seconds(wallSeconds()))\n", to: .standardError)
                try Self.checkBusy(summary.busy)
                return
            }
            let ticks: BulkProgressTicks? =
                switch mode {
                case .silent: nil
                case .terminal: BulkProgressTicks(interval: 0.25, startsImmediately: true)
                case .json: BulkProgressTicks(interval: progressInterval, startsImmediately: false)
                }
            let summary: BulkRunSummary
            do {
                summary = try await engine.run(progress: ticks)
            } catch {
                await stop()
                throw error
            }
            await stop()
            report(summary, assigned: assigned.count, shards: plan.shards, seconds: wallSeconds())
            try Self.checkBusy(summary.busy)
            try Self.checkAllFailed(succeeded: summary.succeeded, failures: summary.failures)
        }

        /// The run's last line: a JSON summary event with `--json`, else a sentence on stderr.
        private func report(_ summary: BulkRunSummary, assigned: Int, shards: Int, seconds: Double) {
            if json {
                BulkRenderer.writeJSONLine([
                    "event": "summary", "written": summary.written, "skipped": summary.skipped, "busy": summary.busy,
                    "assigned": assigned, "shards": shards, "ok": summary.succeeded,
                    "failed": summary.failed, "wall_seconds": (seconds * 1000).rounded() / 1000,
                ])
            } else {
                Console.write(
                    "\(summary.written) shard(s) written, \(summary.skipped) already done, \(assigned) assigned "
                        + "of \(shards): \(summary.succeeded) ok, \(summary.failed) failed in "
                        + "\(Self.seconds(seconds))\n", to: .standardError)
            }
        }

        /// `seconds` for people: `2.4 s`, `3m05s`, `1h02m`.
        static func seconds(_ seconds: Double) -> String {
            seconds < 60 ? String(format: "%.1f s", seconds) : BulkRenderer.duration(seconds)
        }

        /// Shards another process was writing are not done by this run: exit 1, as a rerun (which skips
        /// them once they are finished) may fix it.
        private static func checkBusy(_ busy: Int) throws {
            guard busy > 0 else { return }
            Console.write(
                "webimage bulk: \(busy) shard(s) skipped while another process writes them; run again to check them\n",
                to: .standardError)
            throw ExitCode(1)
        }
    }
}
