import Dispatch
import Foundation
import WebImage

/// Decodes the images a row carries (``BulkRow/image``, a webdataset input's) as the run's downloader
/// decodes a downloaded body: its decoder registry, pixel, frame and colour-profile limits, a memory budget
/// of its size, the first frame only, and the row's transformer after. At most one image per core is
/// decoded at once, on Dispatch threads, so the Swift cooperative pool stays free for the run's own work.
struct EmbeddedImageDecoder: Sendable {
    private let registry: ImageDecoderRegistry
    private let options: ImageDecodingOptions
    private let slots: DownloadSlots

    /// A decoder with `config`'s decoding settings.
    init(config: ImageDownloaderConfig) {
        registry = config.decoderRegistry
        var options = ImageDecodingOptions(
            maximumImagePixels: config.maximumImagePixels, decodeFirstFrameOnly: true)
        options.maximumAnimationFrames = config.maximumAnimationFrames
        options.maximumColorProfileBytes = config.maximumColorProfileBytes
        options.memoryBudget = DecodeMemoryBudget(limit: config.maximumDecodeMemory)
        self.options = options
        slots = DownloadSlots(count: max(1, config.maximumConcurrentDecodes))
    }

    /// `data` decoded and given to `transformer`; a failure is an ``ImageDownloaderError`` of code
    /// `badImageData`, as a downloaded body's would be.
    func image(_ data: Data, transformer: (any ImageTransforming)?, member: String) async -> Result<Image, any Error> {
        await slots.acquire()
        var options = options
        options.minimumDecodeSize = transformer?.minimumDecodeSize
        let (registry, decodeOptions) = (registry, options)
        let result: Result<Image, any Error> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    returning: Result {
                        do {
                            let image = try registry.decode(data, options: decodeOptions)
                            guard image.width > 0, image.height > 0, !image.frames.isEmpty else {
                                throw ImageDownloaderError(.badImageData, "the image has no pixels")
                            }
                            return try transformer?.transform(image, budget: decodeOptions.memoryBudget) ?? image
                        } catch let error as ImageDownloaderError {
                            throw error
                        } catch {
                            let detail = (error as? ImageCodecError)?.message ?? String(describing: error)
                            throw ImageDownloaderError(
                                .badImageData, "the member '\(member.prefix(200))' could not be decoded: \(detail)")
                        }
                    })
            }
        }
        await slots.release()
        return result
    }
}
