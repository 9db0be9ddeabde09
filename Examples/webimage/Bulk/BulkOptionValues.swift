import ArgumentParser
import WebImageDataset

/// `bulk --format` values: the engine's output formats.
enum BulkFormatOption: String, CaseIterable, ExpressibleByArgument {
    case webdataset, files

    /// The engine's format of this name.
    var sampleFormat: SampleOutputFormat {
        switch self {
        case .webdataset: .webdataset
        case .files: .files
        }
    }
}

/// `bulk --resize-mode` values: a ``FitMode``, or none.
enum BulkResizeMode: String, CaseIterable, ExpressibleByArgument {
    case fit, fill, pad, longest, none

    /// The resize; nil for `none`.
    var fitMode: FitMode? { FitMode(rawValue: rawValue) }
}

/// `bulk --encode` values: jpeg, webp or png, or none to keep the downloaded bytes.
enum BulkEncoding: String, CaseIterable, ExpressibleByArgument {
    case jpeg, webp, png, none

    /// The encoder's format; nil for `none`.
    var format: OutputFormat? { OutputFormat(rawValue: rawValue) }
}
