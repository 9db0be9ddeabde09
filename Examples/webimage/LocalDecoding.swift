import WebImage

/// Files read from disk (`info`, `convert`) are decoded under the limits downloads have: one memory
/// budget of `ImageDownloaderConfig.maximumDecodeMemory` (1 GiB) shared by the command's decodes and
/// transformers, and the same frame and colour-profile limits, so a small hostile file cannot make a
/// command allocate more than a download of it would.
enum LocalDecoding {
    static let budget = DecodeMemoryBudget(limit: ImageDownloaderConfig.default.maximumDecodeMemory)

    /// Decoding options with the downloader's default limits and `budget`.
    static func options() -> ImageDecodingOptions {
        let config = ImageDownloaderConfig.default
        var options = ImageDecodingOptions(maximumImagePixels: config.maximumImagePixels)
        options.maximumAnimationFrames = config.maximumAnimationFrames
        options.maximumColorProfileBytes = config.maximumColorProfileBytes
        options.memoryBudget = budget
        return options
    }
}
