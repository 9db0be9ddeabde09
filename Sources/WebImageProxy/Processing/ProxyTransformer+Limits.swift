import WebImageCodecs

extension ProxyTransformer {
    /// imgproxy's answer to an animation frame over `max_animation_frame_resolution` (its
    /// `ImageResolutionError`, "Source image frame resolution is too big").
    static let frameTooLarge = ProxyError(status: 422, "the source's animation frames have more pixels than allowed")
    /// The answer to any source under `msr:0`, which imgproxy refuses whatever its size.
    static let noPixelsAllowed = ProxyError(status: 422, "the source image has more pixels than allowed (msr:0)")

    /// The URL's limits the decoder cannot check (`LimitOptions`), before any pixel work: `msr:0` (the
    /// decoder was given 1 pixel, as no decoder is asked for a limit of 0), and `mafr` for a result that
    /// keeps an animation of more than one frame, as imgproxy checks it. The decoder has no limit per
    /// frame, so `mafr` is checked on the decoded source; the decode itself stayed under the source pixel
    /// limit, which counts every frame, so it held no more memory than any other source.
    func checkLimits(_ image: Image) throws(ProxyError) {
        if options.limits.maximumSourcePixels == 0 { throw Self.noPixelsAllowed }
        guard keepsAnimation, image.frameCount > 1, let limit = options.limits.maximumAnimationFramePixels, limit > 0
        else { return }
        let (pixels, overflow) = image.originalWidth.multipliedReportingOverflow(by: image.originalHeight)
        if overflow || pixels > limit { throw Self.frameTooLarge }
    }
}
