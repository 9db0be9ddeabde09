/// A tag exifread 3.0 knows (img2dataset's reader, ``EXIFSummary``): its name, and how its value is
/// printed when not as numbers or text.
struct EXIFTag: Sendable {
    /// How a tag's value is printed.
    enum Printing: Sendable {
        /// Each value's label, or its own text.
        case labels([Int: String])
        /// exifread's `make_string` (``EXIFValues/madeString()``).
        case text
        /// exifread's `make_string_uc` (``EXIFValues/userComment()``).
        case userComment
        /// An offset to another IFD, whose tags are read too.
        case subIFD(SubIFD)
    }

    /// The IFDs a tag points to.
    enum SubIFD: Sendable {
        case gps, interoperability

        /// The IFD's name before its tags' names.
        var name: String { self == .gps ? "GPS" : "Interoperability" }
        var table: [Int: EXIFTag] { self == .gps ? EXIFTag.gps : EXIFTag.interoperability }
    }

    let name: String
    let printing: Printing?

    init(_ name: String, _ printing: Printing? = nil) {
        self.name = name
        self.printing = printing
    }
}

/// The tables: the names of TIFF/EXIF 2.3, and the value labels exifread prints.
extension EXIFTag {
    /// The tags of the IFD chain and the EXIF IFD.
    static let main: [Int: EXIFTag] = [
        0x00FE: EXIFTag(
            "SubfileType",
            .labels([
                0: "Full-resolution Image", 1: "Reduced-resolution image", 2: "Single page of multi-page image",
                3: "Single page of multi-page reduced-resolution image", 4: "Transparency mask",
                5: "Transparency mask of reduced-resolution image", 6: "Transparency mask of multi-page image",
                7: "Transparency mask of reduced-resolution multi-page image",
                65537: "Alternate reduced-resolution image", 4_294_967_295: "invalid ",
            ])),
        0x00FF: EXIFTag(
            "OldSubfileType",
            .labels([1: "Full-resolution image", 2: "Reduced-resolution image", 3: "Single page of multi-page image"])),
        0x0100: EXIFTag("ImageWidth"),
        0x0101: EXIFTag("ImageLength"),
        0x0102: EXIFTag("BitsPerSample"),
        0x0103: EXIFTag(
            "Compression",
            .labels([
                1: "Uncompressed", 2: "CCITT 1D", 3: "T4/Group 3 Fax", 4: "T6/Group 4 Fax", 5: "LZW",
                6: "JPEG (old-style)", 7: "JPEG", 8: "Adobe Deflate", 9: "JBIG B&W", 10: "JBIG Color", 32766: "Next",
                32769: "Epson ERF Compressed", 32771: "CCIRLEW", 32773: "PackBits", 32809: "Thunderscan",
                32895: "IT8CTPAD", 32896: "IT8LW", 32897: "IT8MP", 32898: "IT8BL", 32908: "PixarFilm",
                32909: "PixarLog", 32946: "Deflate", 32947: "DCS", 34661: "JBIG", 34676: "SGILog", 34677: "SGILog24",
                34712: "JPEG 2000", 34713: "Nikon NEF Compressed", 65000: "Kodak DCR Compressed",
                65535: "Pentax PEF Compressed",
            ])),
        0x0106: EXIFTag("PhotometricInterpretation"),
        0x0107: EXIFTag("Thresholding"),
        0x0108: EXIFTag("CellWidth"),
        0x0109: EXIFTag("CellLength"),
        0x010A: EXIFTag("FillOrder"),
        0x010D: EXIFTag("DocumentName"),
        0x010E: EXIFTag("ImageDescription"),
        0x010F: EXIFTag("Make"),
        0x0110: EXIFTag("Model"),
        0x0111: EXIFTag("StripOffsets"),
        0x0112: EXIFTag(
            "Orientation",
            .labels([
                1: "Horizontal (normal)", 2: "Mirrored horizontal", 3: "Rotated 180", 4: "Mirrored vertical",
                5: "Mirrored horizontal then rotated 90 CCW", 6: "Rotated 90 CW",
                7: "Mirrored horizontal then rotated 90 CW", 8: "Rotated 90 CCW",
            ])),
        0x0115: EXIFTag("SamplesPerPixel"),
        0x0116: EXIFTag("RowsPerStrip"),
        0x0117: EXIFTag("StripByteCounts"),
        0x0118: EXIFTag("MinSampleValue"),
        0x0119: EXIFTag("MaxSampleValue"),
        0x011A: EXIFTag("XResolution"),
        0x011B: EXIFTag("YResolution"),
        0x011C: EXIFTag("PlanarConfiguration"),
        0x011D: EXIFTag("PageName", .text),
        0x011E: EXIFTag("XPosition"),
        0x011F: EXIFTag("YPosition"),
        0x0122: EXIFTag(
            "GrayResponseUnit",
            .labels([1: "0.1", 2: "0.001", 3: "0.0001", 4: "1e-05", 5: "1e-06"])),
        0x0123: EXIFTag("GrayResponseCurve"),
        0x0124: EXIFTag("T4Options"),
        0x0125: EXIFTag("T6Options"),
        0x0128: EXIFTag(
            "ResolutionUnit",
            .labels([1: "Not Absolute", 2: "Pixels/Inch", 3: "Pixels/Centimeter"])),
        0x0129: EXIFTag("PageNumber"),
        0x012C: EXIFTag("ColorResponseUnit"),
        0x012D: EXIFTag("TransferFunction"),
        0x0131: EXIFTag("Software"),
        0x0132: EXIFTag("DateTime"),
        0x013B: EXIFTag("Artist"),
        0x013C: EXIFTag("HostComputer"),
        0x013D: EXIFTag(
            "Predictor",
            .labels([1: "None", 2: "Horizontal differencing"])),
        0x013E: EXIFTag("WhitePoint"),
        0x013F: EXIFTag("PrimaryChromaticities"),
        0x0140: EXIFTag("ColorMap"),
        0x0141: EXIFTag("HalftoneHints"),
        0x0142: EXIFTag("TileWidth"),
        0x0143: EXIFTag("TileLength"),
        0x0144: EXIFTag("TileOffsets"),
        0x0145: EXIFTag("TileByteCounts"),
        0x0146: EXIFTag("BadFaxLines"),
        0x0147: EXIFTag(
            "CleanFaxData",
            .labels([0: "Clean", 1: "Regenerated", 2: "Unclean"])),
        0x0148: EXIFTag("ConsecutiveBadFaxLines"),
        0x014A: EXIFTag("SubIFDs"),
        0x014C: EXIFTag(
            "InkSet",
            .labels([1: "CMYK", 2: "Not CMYK"])),
        0x014D: EXIFTag("InkNames"),
        0x014E: EXIFTag("NumberofInks"),
        0x0150: EXIFTag("DotRange"),
        0x0151: EXIFTag("TargetPrinter"),
        0x0152: EXIFTag(
            "ExtraSamples",
            .labels([0: "Unspecified", 1: "Associated Alpha", 2: "Unassociated Alpha"])),
        0x0153: EXIFTag(
            "SampleFormat",
            .labels([1: "Unsigned", 2: "Signed", 3: "Float", 4: "Undefined", 5: "Complex int", 6: "Complex float"])),
        0x0154: EXIFTag("SMinSampleValue"),
        0x0155: EXIFTag("SMaxSampleValue"),
        0x0156: EXIFTag("TransferRange"),
        0x0157: EXIFTag("ClipPath"),
        0x015B: EXIFTag("JPEGTables"),
        0x0200: EXIFTag("JPEGProc"),
        0x0201: EXIFTag("JPEGInterchangeFormat"),
        0x0202: EXIFTag("JPEGInterchangeFormatLength"),
        0x0211: EXIFTag("YCbCrCoefficients"),
        0x0212: EXIFTag("YCbCrSubSampling"),
        0x0213: EXIFTag(
            "YCbCrPositioning",
            .labels([1: "Centered", 2: "Co-sited"])),
        0x0214: EXIFTag("ReferenceBlackWhite"),
        0x02BC: EXIFTag("ApplicationNotes"),
        0x4746: EXIFTag("Rating"),
        0x828D: EXIFTag("CFARepeatPatternDim"),
        0x828E: EXIFTag("CFAPattern"),
        0x828F: EXIFTag("BatteryLevel"),
        0x8298: EXIFTag("Copyright"),
        0x829A: EXIFTag("ExposureTime"),
        0x829D: EXIFTag("FNumber"),
        0x83BB: EXIFTag("IPTC/NAA"),
        0x8769: EXIFTag("ExifOffset"),
        0x8773: EXIFTag("InterColorProfile"),
        0x8822: EXIFTag(
            "ExposureProgram",
            .labels([
                0: "Unidentified", 1: "Manual", 2: "Program Normal", 3: "Aperture Priority", 4: "Shutter Priority",
                5: "Program Creative", 6: "Program Action", 7: "Portrait Mode", 8: "Landscape Mode",
            ])),
        0x8824: EXIFTag("SpectralSensitivity"),
        0x8825: EXIFTag("GPSInfo", .subIFD(.gps)),
        0x8827: EXIFTag("ISOSpeedRatings"),
        0x8828: EXIFTag("OECF"),
        0x8829: EXIFTag("Interlace"),
        0x882A: EXIFTag("TimeZoneOffset"),
        0x882B: EXIFTag("SelfTimerMode"),
        0x8830: EXIFTag(
            "SensitivityType",
            .labels([
                0: "Unknown", 1: "Standard Output Sensitivity", 2: "Recommended Exposure Index", 3: "ISO Speed",
                4: "Standard Output Sensitivity and Recommended Exposure Index",
                5: "Standard Output Sensitivity and ISO Speed", 6: "Recommended Exposure Index and ISO Speed",
                7: "Standard Output Sensitivity, Recommended Exposure Index and ISO Speed",
            ])),
        0x8832: EXIFTag("RecommendedExposureIndex"),
        0x8833: EXIFTag("ISOSpeed"),
        0x9000: EXIFTag("ExifVersion", .text),
        0x9003: EXIFTag("DateTimeOriginal"),
        0x9004: EXIFTag("DateTimeDigitized"),
        0x9010: EXIFTag("OffsetTime"),
        0x9011: EXIFTag("OffsetTimeOriginal"),
        0x9012: EXIFTag("OffsetTimeDigitized"),
        0x9101: EXIFTag(
            "ComponentsConfiguration",
            .labels([0: "", 1: "Y", 2: "Cb", 3: "Cr", 4: "Red", 5: "Green", 6: "Blue"])),
        0x9102: EXIFTag("CompressedBitsPerPixel"),
        0x9201: EXIFTag("ShutterSpeedValue"),
        0x9202: EXIFTag("ApertureValue"),
        0x9203: EXIFTag("BrightnessValue"),
        0x9204: EXIFTag("ExposureBiasValue"),
        0x9205: EXIFTag("MaxApertureValue"),
        0x9206: EXIFTag("SubjectDistance"),
        0x9207: EXIFTag(
            "MeteringMode",
            .labels([
                0: "Unidentified", 1: "Average", 2: "CenterWeightedAverage", 3: "Spot", 4: "MultiSpot", 5: "Pattern",
                6: "Partial", 255: "other",
            ])),
        0x9208: EXIFTag(
            "LightSource",
            .labels([
                0: "Unknown", 1: "Daylight", 2: "Fluorescent", 3: "Tungsten (incandescent light)", 4: "Flash",
                9: "Fine weather", 10: "Cloudy weather", 11: "Shade", 12: "Daylight fluorescent (D 5700 - 7100K)",
                13: "Day white fluorescent (N 4600 - 5400K)", 14: "Cool white fluorescent (W 3900 - 4500K)",
                15: "White fluorescent (WW 3200 - 3700K)", 17: "Standard light A", 18: "Standard light B",
                19: "Standard light C", 20: "D55", 21: "D65", 22: "D75", 23: "D50", 24: "ISO studio tungsten",
                255: "other light source",
            ])),
        0x9209: EXIFTag(
            "Flash",
            .labels([
                0: "Flash did not fire", 1: "Flash fired", 5: "Strobe return light not detected",
                7: "Strobe return light detected", 9: "Flash fired, compulsory flash mode",
                13: "Flash fired, compulsory flash mode, return light not detected",
                15: "Flash fired, compulsory flash mode, return light detected",
                16: "Flash did not fire, compulsory flash mode", 24: "Flash did not fire, auto mode",
                25: "Flash fired, auto mode", 29: "Flash fired, auto mode, return light not detected",
                31: "Flash fired, auto mode, return light detected", 32: "No flash function",
                65: "Flash fired, red-eye reduction mode",
                69: "Flash fired, red-eye reduction mode, return light not detected",
                71: "Flash fired, red-eye reduction mode, return light detected",
                73: "Flash fired, compulsory flash mode, red-eye reduction mode",
                77: "Flash fired, compulsory flash mode, red-eye reduction mode, return light not detected",
                79: "Flash fired, compulsory flash mode, red-eye reduction mode, return light detected",
                89: "Flash fired, auto mode, red-eye reduction mode",
                93: "Flash fired, auto mode, return light not detected, red-eye reduction mode",
                95: "Flash fired, auto mode, return light detected, red-eye reduction mode",
            ])),
        0x920A: EXIFTag("FocalLength"),
        0x920B: EXIFTag("FlashEnergy"),
        0x920C: EXIFTag("SpatialFrequencyResponse"),
        0x920D: EXIFTag("Noise"),
        0x9211: EXIFTag("ImageNumber"),
        0x9212: EXIFTag("SecurityClassification"),
        0x9213: EXIFTag("ImageHistory"),
        0x9214: EXIFTag("SubjectArea"),
        0x9215: EXIFTag("ExposureIndex"),
        0x9216: EXIFTag("TIFF/EPStandardID"),
        0x927C: EXIFTag("MakerNote"),
        0x9286: EXIFTag("UserComment", .userComment),
        0x9290: EXIFTag("SubSecTime"),
        0x9291: EXIFTag("SubSecTimeOriginal"),
        0x9292: EXIFTag("SubSecTimeDigitized"),
        0x9C9B: EXIFTag("XPTitle"),
        0x9C9C: EXIFTag("XPComment"),
        0x9C9D: EXIFTag("XPAuthor", .text),
        0x9C9E: EXIFTag("XPKeywords"),
        0x9C9F: EXIFTag("XPSubject"),
        0xA000: EXIFTag("FlashPixVersion", .text),
        0xA001: EXIFTag(
            "ColorSpace",
            .labels([1: "sRGB", 2: "Adobe RGB", 65535: "Uncalibrated"])),
        0xA002: EXIFTag("ExifImageWidth"),
        0xA003: EXIFTag("ExifImageLength"),
        0xA004: EXIFTag("RelatedSoundFile"),
        0xA005: EXIFTag("InteroperabilityOffset", .subIFD(.interoperability)),
        0xA20B: EXIFTag("FlashEnergy"),
        0xA20C: EXIFTag("SpatialFrequencyResponse"),
        0xA20E: EXIFTag("FocalPlaneXResolution"),
        0xA20F: EXIFTag("FocalPlaneYResolution"),
        0xA210: EXIFTag("FocalPlaneResolutionUnit"),
        0xA214: EXIFTag("SubjectLocation"),
        0xA215: EXIFTag("ExposureIndex"),
        0xA217: EXIFTag(
            "SensingMethod",
            .labels([
                1: "Not defined", 2: "One-chip color area", 3: "Two-chip color area", 4: "Three-chip color area",
                5: "Color sequential area", 7: "Trilinear", 8: "Color sequential linear",
            ])),
        0xA300: EXIFTag(
            "FileSource",
            .labels([1: "Film Scanner", 2: "Reflection Print Scanner", 3: "Digital Camera"])),
        0xA301: EXIFTag(
            "SceneType",
            .labels([1: "Directly Photographed"])),
        0xA302: EXIFTag("CVAPattern"),
        0xA401: EXIFTag(
            "CustomRendered",
            .labels([0: "Normal", 1: "Custom"])),
        0xA402: EXIFTag(
            "ExposureMode",
            .labels([0: "Auto Exposure", 1: "Manual Exposure", 2: "Auto Bracket"])),
        0xA403: EXIFTag(
            "WhiteBalance",
            .labels([0: "Auto", 1: "Manual"])),
        0xA404: EXIFTag("DigitalZoomRatio"),
        0xA405: EXIFTag("FocalLengthIn35mmFilm"),
        0xA406: EXIFTag(
            "SceneCaptureType",
            .labels([0: "Standard", 1: "Landscape", 2: "Portrait", 3: "Night"])),
        0xA407: EXIFTag(
            "GainControl",
            .labels([0: "None", 1: "Low gain up", 2: "High gain up", 3: "Low gain down", 4: "High gain down"])),
        0xA408: EXIFTag(
            "Contrast",
            .labels([0: "Normal", 1: "Soft", 2: "Hard"])),
        0xA409: EXIFTag(
            "Saturation",
            .labels([0: "Normal", 1: "Soft", 2: "Hard"])),
        0xA40A: EXIFTag(
            "Sharpness",
            .labels([0: "Normal", 1: "Soft", 2: "Hard"])),
        0xA40B: EXIFTag("DeviceSettingDescription"),
        0xA40C: EXIFTag("SubjectDistanceRange"),
        0xA420: EXIFTag("ImageUniqueID"),
        0xA430: EXIFTag("CameraOwnerName"),
        0xA431: EXIFTag("BodySerialNumber"),
        0xA432: EXIFTag("LensSpecification"),
        0xA433: EXIFTag("LensMake"),
        0xA434: EXIFTag("LensModel"),
        0xA435: EXIFTag("LensSerialNumber"),
        0xA500: EXIFTag("Gamma"),
        0xC4A5: EXIFTag("PrintIM"),
        0xC61A: EXIFTag("BlackLevel"),
        0xEA1C: EXIFTag("Padding"),
        0xEA1D: EXIFTag("OffsetSchema"),
        0xFDE8: EXIFTag("OwnerName"),
        0xFDE9: EXIFTag("SerialNumber"),
    ]

    /// The GPS IFD's tags.
    static let gps: [Int: EXIFTag] = [
        0x0000: EXIFTag("GPSVersionID"),
        0x0001: EXIFTag("GPSLatitudeRef"),
        0x0002: EXIFTag("GPSLatitude"),
        0x0003: EXIFTag("GPSLongitudeRef"),
        0x0004: EXIFTag("GPSLongitude"),
        0x0005: EXIFTag("GPSAltitudeRef"),
        0x0006: EXIFTag("GPSAltitude"),
        0x0007: EXIFTag("GPSTimeStamp"),
        0x0008: EXIFTag("GPSSatellites"),
        0x0009: EXIFTag("GPSStatus"),
        0x000A: EXIFTag("GPSMeasureMode"),
        0x000B: EXIFTag("GPSDOP"),
        0x000C: EXIFTag("GPSSpeedRef"),
        0x000D: EXIFTag("GPSSpeed"),
        0x000E: EXIFTag("GPSTrackRef"),
        0x000F: EXIFTag("GPSTrack"),
        0x0010: EXIFTag("GPSImgDirectionRef"),
        0x0011: EXIFTag("GPSImgDirection"),
        0x0012: EXIFTag("GPSMapDatum"),
        0x0013: EXIFTag("GPSDestLatitudeRef"),
        0x0014: EXIFTag("GPSDestLatitude"),
        0x0015: EXIFTag("GPSDestLongitudeRef"),
        0x0016: EXIFTag("GPSDestLongitude"),
        0x0017: EXIFTag("GPSDestBearingRef"),
        0x0018: EXIFTag("GPSDestBearing"),
        0x0019: EXIFTag("GPSDestDistanceRef"),
        0x001A: EXIFTag("GPSDestDistance"),
        0x001B: EXIFTag("GPSProcessingMethod"),
        0x001C: EXIFTag("GPSAreaInformation"),
        0x001D: EXIFTag("GPSDate"),
        0x001E: EXIFTag("GPSDifferential"),
    ]

    /// The Interoperability IFD's tags.
    static let interoperability: [Int: EXIFTag] = [
        0x0001: EXIFTag("InteroperabilityIndex"),
        0x0002: EXIFTag("InteroperabilityVersion"),
        0x1000: EXIFTag("RelatedImageFileFormat"),
        0x1001: EXIFTag("RelatedImageWidth"),
        0x1002: EXIFTag("RelatedImageLength"),
    ]
}
