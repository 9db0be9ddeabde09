import ArgumentParser
import WebImageDataset

/// `bulk --format` values: the engine's output formats.
enum BulkFormatOption: String, CaseIterable, ExpressibleByArgument {
    case webdataset, files, parquet, tfrecord, dummy

    /// The engine's format of this name.
    var sampleFormat: SampleOutputFormat {
        switch self {
        case .webdataset: .webdataset
        case .files: .files
        case .parquet: .parquet
        case .tfrecord: .tfrecord
        case .dummy: .dummy
        }
    }
}

/// `bulk --resize-mode` values: img2dataset's modes under their names and the `--fit` names, or none.
enum BulkResizeMode: String, CaseIterable, ExpressibleByArgument {
    case keepRatio = "keep-ratio"
    case centerCrop = "center-crop"
    case keepRatioLargest = "keep-ratio-largest"
    case border, fit, fill, pad, longest, none

    /// The engine's mode; nil for `none`. `fill` is `center-crop`, `pad` is `border`, and `fit` and
    /// `longest` are `keep-ratio-largest` (the box is a square, so the three are one).
    var engineMode: BulkResize.Mode? {
        switch self {
        case .keepRatio: .keepRatio
        case .centerCrop, .fill: .centerCrop
        case .keepRatioLargest, .fit, .longest: .keepRatioLargest
        case .border, .pad: .border
        case .none: nil
        }
    }
}

/// `bulk --encode` values: jpeg, webp, png or avif, or none to keep the downloaded bytes.
enum BulkEncoding: String, CaseIterable, ExpressibleByArgument {
    case jpeg, webp, png, avif, none

    /// The job's encoding; nil for `none`.
    var jobEncoding: BulkJob.Encoding? { BulkJob.Encoding(rawValue: rawValue) }
}

/// `bulk --compute-hash` values: a ``BulkHashAlgorithm``, or none.
enum BulkHashOption: String, CaseIterable, ExpressibleByArgument {
    case md5, sha256, sha512, none

    /// The algorithm; nil for `none`.
    var algorithm: BulkHashAlgorithm? { BulkHashAlgorithm(rawValue: rawValue) }
}
