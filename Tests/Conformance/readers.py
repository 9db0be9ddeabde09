"""Independent decoders for the references: pypng for PNG (every sample at its own bit depth, so a 16-bit
file's reference keeps 16 bits), Pillow (with pillow-heif for HEIF) for the other formats, libjxl 0.11 in
float (through ctypes) for JPEG XL files without a usable reference image, and small
readers for the container facts those libraries do not apply: PNG's colour chunks and AVIF's
colr/clap/irot/imir properties.

Frames are float32 straight-alpha RGBA arrays in 0…1, shape (height, width, 4).
"""

import io
import struct
import zlib

import numpy as np
import png
from pathlib import Path
import pillow_heif
from PIL import Image, ImageSequence, PngImagePlugin

pillow_heif.register_heif_opener()


# MARK: - PNG


def png_chunks(data):
    """The chunks of a PNG file as (type, payload) pairs, in file order (stops at a damaged length)."""
    chunks, offset = [], 8
    while offset + 8 <= len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8].decode("latin-1")
        if offset + 12 + length > len(data):
            break
        chunks.append((kind, data[offset + 8 : offset + 8 + length]))
        offset += 12 + length
    return chunks


def png_colour(data):
    """What the file says about its colours, by the PNG precedence: cICP (PNG's third edition), then iCCP,
    then sRGB, then gAMA (+ cHRM).

    Returns ("cicp", primaries, transfer), ("icc", bytes), ("srgb",), ("gamma", gamma, chromaticities or
    None) or None. A cICP chunk for anything but full-range RGB (matrix coefficients 0) is not used.
    """
    found = {}
    for kind, payload in png_chunks(data):
        if kind == "IDAT":
            break  # colour chunks come before the image data
        found.setdefault(kind, payload)
    if "cICP" in found:
        cicp = found["cICP"]
        if len(cicp) == 4 and cicp[2] == 0 and cicp[3] == 1:
            return ("cicp", cicp[0], cicp[1])
        return None
    if "iCCP" in found:
        name_end = found["iCCP"].find(b"\0")
        try:
            return ("icc", zlib.decompress(found["iCCP"][name_end + 2 :]))
        except zlib.error:
            return None  # a damaged profile is ignored, the pixels kept as stored
    if "sRGB" in found:
        return ("srgb",)
    if "gAMA" in found and len(found["gAMA"]) == 4:
        (gamma,) = struct.unpack(">I", found["gAMA"])
        if gamma == 0:
            return None
        chromaticities = None
        if "cHRM" in found and len(found["cHRM"]) == 32:
            values = [v / 100000 for v in struct.unpack(">8I", found["cHRM"])]
            if all(0 < v < 1 for v in values):
                chromaticities = tuple(values)
        return ("gamma", gamma / 100000, chromaticities)
    return None


def png_pixels(data):
    """The first frame of a PNG file as RGBA at full precision, with tRNS as alpha (pypng).

    A palette index past the palette's end (libpng's `contrib/testpngs/badpal`; the PNG specification calls
    it an error, and pypng refuses it) is opaque black, as libpng expands it and browsers show it."""
    reader = png.Reader(bytes=data)
    width, height, rows, info = reader.read()
    if "palette" in info:
        palette = np.array(reader.palette(alpha="force"), dtype=np.float64) / 255
        padded = np.zeros((256, 4))
        padded[:, 3] = 1
        padded[: len(palette)] = palette
        indices = np.array([np.asarray(row, dtype=np.int64) for row in rows]).reshape(height, width)
        return padded[indices].astype(np.float32)
    width, height, rows, info = png.Reader(bytes=data).asDirect()
    planes, depth = info["planes"], info["bitdepth"]
    samples = np.array([np.asarray(row, dtype=np.float64) for row in rows]).reshape(height, width, planes)
    samples /= (1 << depth) - 1
    gray = planes <= 2
    rgb = np.repeat(samples[..., :1], 3, axis=2) if gray else samples[..., :3]
    alpha = samples[..., -1:] if planes in (2, 4) else np.ones((height, width, 1))
    return np.concatenate([rgb, alpha], axis=2).astype(np.float32)


# MARK: - Pillow


def _keep_apng_canvas_before_frame():
    """Pillow (13.0) composes an APNG frame with blend operation "over" into the very canvas it keeps for
    the frame's dispose operation "previous", so that disposal restores nothing and every later frame keeps
    the disposed one (SDWebImage's TestImageAnimated.apng from its frame 68). The APNG specification restores
    the canvas as it was before the frame, as browsers do: keep a copy of it while the frame is composed."""
    compose = PngImagePlugin.PngImageFile.load_end

    def load_end(self):
        before = getattr(self, "_prev_im", None)
        before = before.copy() if before is not None and getattr(self, "is_animated", False) else None
        compose(self)
        if before is not None:
            self._prev_im = before

    PngImagePlugin.PngImageFile.load_end = load_end


_keep_apng_canvas_before_frame()


def pillow_frames(data):
    """Every frame of an image file as Pillow composes it (animations: full canvases), and its ICC
    profile (None when it has none)."""
    image = Image.open(io.BytesIO(data))
    frames = [to_float(frame) for frame in ImageSequence.Iterator(image)]
    return frames, image.info.get("icc_profile") or None


# libjxl's decoder API (jxl/decode.h, stable since 0.9): the event and status codes and the pixel format used.
_JXL_BASIC_INFO, _JXL_COLOR_ENCODING, _JXL_FULL_IMAGE = 0x40, 0x100, 0x1000
_JXL_SUCCESS, _JXL_NEED_IMAGE_OUT_BUFFER = 0, 5
_JXL_TYPE_FLOAT, _JXL_TARGET_DATA = 0, 1


def _libjxl():
    """libjxl 0.11 as imagecodecs ships it (imagecodecs.libs/), loaded through ctypes: imagecodecs'
    jpegxl_decode gives only the file's own bit depth (8 bits for most files, too coarse once a linear
    image is converted to sRGB) and no colour profile, so the decoder is driven directly for float output."""
    import ctypes
    import glob
    import os

    import imagecodecs
    from imagecodecs import _jpegxl  # noqa: F401 (loads libjxl's own libraries, which its RPATH names)

    folder = os.path.join(os.path.dirname(imagecodecs.__file__), os.pardir, "imagecodecs.libs")
    found = sorted(glob.glob(os.path.join(folder, "libjxl-*.so*")))
    if not found:
        raise FileNotFoundError(f"no libjxl in {folder}")
    lib = ctypes.CDLL(found[0])
    lib.JxlDecoderCreate.restype = ctypes.c_void_p
    lib.JxlDecoderCreate.argtypes = [ctypes.c_void_p]
    lib.JxlDecoderDestroy.restype = None
    lib.JxlDecoderDestroy.argtypes = [ctypes.c_void_p]
    return lib


def jxl_frames_newer(data):
    """A JPEG XL file decoded by libjxl 0.11 (the reference implementation, newer than the system's 0.7.0
    that WebImage links), every frame composed as shown, in sRGB, as float RGBA: for the conformance cases
    without a reference image in the copy, and those whose only one is a GIF (suites.jxl_reference).

    libjxl decodes to 32-bit float in the pixels' own colour space (the data colour profile, which it gives
    as ICC), upright, alpha unpremultiplied; LittleCMS (imagecodecs' cms_transform) converts that to sRGB
    in float, perceptual intent, as colour.icc does at 8 bits. A recompressed JPEG is decoded to pixels,
    as the suite's own references are."""
    import ctypes

    import imagecodecs

    lib = _libjxl()
    decoder = ctypes.c_void_p(lib.JxlDecoderCreate(None))
    if not decoder:
        raise MemoryError("JxlDecoderCreate failed")
    try:
        if lib.JxlDecoderSubscribeEvents(decoder, _JXL_BASIC_INFO | _JXL_COLOR_ENCODING | _JXL_FULL_IMAGE):
            raise ValueError("JxlDecoderSubscribeEvents failed")
        lib.JxlDecoderSetUnpremultiplyAlpha(decoder, 1)
        source = ctypes.create_string_buffer(bytes(data), len(data))
        lib.JxlDecoderSetInput(decoder, source, ctypes.c_size_t(len(data)))
        lib.JxlDecoderCloseInput(decoder)
        class PixelFormat(ctypes.Structure):  # JxlPixelFormat
            _fields_ = [
                ("num_channels", ctypes.c_uint32),
                ("data_type", ctypes.c_int),
                ("endianness", ctypes.c_int),
                ("align", ctypes.c_size_t),
            ]

        pixel_format = PixelFormat(4, _JXL_TYPE_FLOAT, 0, 0)  # RGBA (gray repeated), native endianness
        info = ctypes.create_string_buffer(1024)  # JxlBasicInfo is under 300 bytes
        frames, buffers, profile = [], [], None
        while True:
            status = lib.JxlDecoderProcessInput(decoder)
            if status == _JXL_BASIC_INFO:
                if lib.JxlDecoderGetBasicInfo(decoder, info):
                    raise ValueError("JxlDecoderGetBasicInfo failed")
                # xsize and ysize follow have_container (JXL_BOOL, an int); the upright size when oriented
                width, height = np.frombuffer(info.raw[4:12], np.uint32)
            elif status == _JXL_COLOR_ENCODING:
                size = ctypes.c_size_t()
                if lib.JxlDecoderGetICCProfileSize(decoder, _JXL_TARGET_DATA, ctypes.byref(size)):
                    raise ValueError("JxlDecoderGetICCProfileSize failed")
                icc = ctypes.create_string_buffer(size.value)
                if lib.JxlDecoderGetColorAsICCProfile(decoder, _JXL_TARGET_DATA, icc, size):
                    raise ValueError("JxlDecoderGetColorAsICCProfile failed")
                profile = icc.raw
            elif status == _JXL_NEED_IMAGE_OUT_BUFFER:
                size = ctypes.c_size_t()
                lib.JxlDecoderImageOutBufferSize(decoder, ctypes.byref(pixel_format), ctypes.byref(size))
                pixels = np.zeros(size.value // 4, np.float32)
                buffers.append(pixels)
                if lib.JxlDecoderSetImageOutBuffer(
                    decoder, ctypes.byref(pixel_format), pixels.ctypes.data_as(ctypes.c_void_p), size
                ):
                    raise ValueError("JxlDecoderSetImageOutBuffer failed")
            elif status == _JXL_FULL_IMAGE:
                frames.append(buffers[-1])
            elif status == _JXL_SUCCESS:
                break
            else:
                raise ValueError(f"libjxl: JxlDecoderProcessInput status {status}")
    finally:
        lib.JxlDecoderDestroy(decoder)
    if not frames or profile is None:
        raise ValueError("libjxl gave no image")
    pixels_per_frame = frames[0].size // 4
    if pixels_per_frame != int(width) * int(height):
        raise ValueError(f"libjxl gave {pixels_per_frame} pixels for {width}x{height}")
    srgb = imagecodecs.cms_profile("srgb")
    out = []
    for flat in frames:
        rgba = flat.reshape(int(height), int(width), 4)
        out.append(_icc_float(rgba, profile, srgb))
    return out


def _icc_float(rgba, profile, srgb):
    """Float RGBA in the ICC profile `profile` (RGB or gray) to sRGB with LittleCMS in float, perceptual."""
    import imagecodecs
    from PIL import ImageCms

    space = ImageCms.ImageCmsProfile(io.BytesIO(profile)).profile.xcolor_space.strip()
    if space == "GRAY":
        source, colorspace = np.ascontiguousarray(rgba[..., 0]), "gray"
    else:
        source, colorspace = np.ascontiguousarray(rgba[..., :3]), "rgb"
    converted = imagecodecs.cms_transform(
        source, profile, srgb, colorspace=colorspace, outcolorspace="rgb", outdtype="f4", intent=0
    )
    out = np.empty_like(rgba)
    out[..., :3] = np.clip(converted, 0.0, 1.0)
    out[..., 3] = np.clip(rgba[..., 3], 0.0, 1.0)
    return out


def avif_frames_deep(data):
    """An AVIF file's first image through libavif's own avifdec at 16 bits (not cropped or turned), as
    float RGBA: for PQ and HLG images, whose 8-bit code values are too coarse to tone-map. None when
    avifdec is missing (Debian's libavif-bin)."""
    import shutil
    import subprocess
    import tempfile

    if shutil.which("avifdec") is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        source, output = Path(folder) / "in.avif", Path(folder) / "out.png"
        source.write_bytes(data)
        run = subprocess.run(
            ["avifdec", "--depth", "16", "--ignore-icc", str(source), str(output)], capture_output=True)
        if run.returncode != 0:
            return None
        return [png_pixels(output.read_bytes())]


def avif_planes(data, index=0):
    """Image `index` of an AVIF file (a sequence's frame) as libavif's decoder gives it, before any conversion
    to RGB: avifdec writes the YUV planes at their own bit depth to a Y4M file. Returns {"depth", "full_range", "y", "u", "v"} (u and
    v None for monochrome; numpy arrays of code values, chroma at its stored size), or None when avifdec is
    missing (Debian's libavif-bin) or the image has an alpha plane (avifdec's Y4M keeps alpha only at 8 bits)."""
    import shutil
    import subprocess
    import tempfile

    if shutil.which("avifdec") is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        source, output = Path(folder) / "in.avif", Path(folder) / "out.y4m"
        source.write_bytes(data)
        run = subprocess.run(["avifdec", "--index", str(index), str(source), str(output)], capture_output=True)
        if run.returncode != 0:
            return None
        y4m = output.read_bytes()
    end = y4m.index(b"\n")
    fields = {token[:1]: token[1:] for token in y4m[:end].decode("ascii").split()[1:]}
    extras = [token for token in y4m[:end].decode("ascii").split() if token.startswith("X")]
    width, height, layout = int(fields["W"]), int(fields["H"]), fields.get("C", "420")
    if "alpha" in layout:
        return None
    # C420p10, C422p12, C444, Cmono12, ...
    kind, bits = (layout[:4], layout[4:]) if layout.startswith("mono") else layout.partition("p")[::2]
    depth = int(bits) if bits.isdigit() else 8
    chroma = {"420": ((width + 1) // 2, (height + 1) // 2), "422": ((width + 1) // 2, height), "444": (width, height)}
    offset = y4m.index(b"FRAME", end) + 6
    sample = np.dtype("<u2" if depth > 8 else "u1")

    def plane(w, h):
        nonlocal offset
        values = np.frombuffer(y4m, sample, w * h, offset).reshape(h, w).astype(np.float64)
        offset += w * h * sample.itemsize
        return values

    planes = {"depth": depth, "full_range": "XCOLORRANGE=FULL" in extras, "y": plane(width, height)}
    if kind == "mono":
        planes["u"] = planes["v"] = None
    else:
        planes["u"], planes["v"] = plane(*chroma[kind]), plane(*chroma[kind])
    return planes


def avif_frame_count(data):
    """How many frames Pillow's libavif finds in an AVIF file (1 for a still), without decoding them."""
    return getattr(Image.open(io.BytesIO(data)), "n_frames", 1)


def heif_frames_deep(data):
    """A HEIF file's primary image at its own bit depth (pillow-heif without the reduction to 8 bits), as
    float RGBA: for PQ and HLG images, whose 8-bit code values are too coarse to tone-map."""
    import pillow_heif

    heif = pillow_heif.open_heif(data, convert_hdr_to_8bit=False)
    bits = heif.info.get("bit_depth", 8)
    samples = np.asarray(heif[0], dtype=np.float64)
    if bits > 8:  # pillow-heif shifts the samples to the top of 16 bits
        samples = samples / (((1 << bits) - 1) << (16 - bits))
    else:
        samples = samples / 255
    if samples.shape[2] == 3:
        samples = np.dstack([samples, np.ones(samples.shape[:2])])
    return [samples.astype(np.float32)]


def heif_nclx(data):
    """A HEIF file's nclx (primaries, transfer) as pillow-heif reads it, or None."""
    nclx = Image.open(io.BytesIO(data)).info.get("nclx_profile")
    return (nclx["color_primaries"], nclx["transfer_characteristics"]) if nclx else None


def pillow_orientation(data):
    """The orientation of an image file (1 when absent): its EXIF orientation tag, else XMP's
    tiff:Orientation, as Pillow's getexif() reads them (and Apple's ImageIO, and WebImage's decoders)."""
    try:
        return int(Image.open(io.BytesIO(data)).getexif().get(0x0112, 1))
    except Exception:  # damaged EXIF: as if absent
        return 1


def to_float(image):
    """A Pillow image as float RGBA; 16-bit gray keeps its precision."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        gray = np.asarray(image, dtype=np.float64) / 65535
        return np.dstack([gray, gray, gray, np.ones_like(gray)]).astype(np.float32)
    return np.asarray(image.convert("RGBA"), dtype=np.float32) / 255


# MARK: - AVIF (ISOBMFF) properties


def _boxes(data, offset, end):
    """(type, payload start, payload end) for the boxes in data[offset:end]."""
    while offset + 8 <= end:
        size, kind = struct.unpack(">I4s", data[offset : offset + 8])
        header = 8
        if size == 1:
            (size,) = struct.unpack(">Q", data[offset + 8 : offset + 16])
            header = 16
        elif size == 0:
            size = end - offset
        if size < header or offset + size > end:
            return
        yield kind.decode("latin-1"), offset + header, offset + size
        offset += size


def avif_properties(data):
    """The primary item's properties that Pillow does not apply or report: {"nclx": (primaries,
    transfer), "matrix": matrix coefficients, "icc": profile bytes, "depth": av1C's bit depth, "clap": (8 ints), "irot": quarter
    turns anticlockwise, "imir": axis}. Empty when the file cannot be read this way."""
    meta = next((b for b in _boxes(data, 0, len(data)) if b[0] == "meta"), None)
    if meta is None:
        return {}
    children = {k: (s, e) for k, s, e in _boxes(data, meta[1] + 4, meta[2])}  # meta is a full box
    if "pitm" not in children or "iprp" not in children:
        return {}
    start, _ = children["pitm"]
    primary = struct.unpack(">H", data[start + 4 : start + 6])[0] if data[start] == 0 else struct.unpack(
        ">I", data[start + 4 : start + 8]
    )[0]
    iprp = list(_boxes(data, *children["iprp"]))
    ipco = next((b for b in iprp if b[0] == "ipco"), None)
    if ipco is None:
        return {}
    properties = list(_boxes(data, ipco[1], ipco[2]))
    associated = []
    for kind, start, end in iprp:
        if kind != "ipma":
            continue
        version, flags = data[start], int.from_bytes(data[start + 1 : start + 4], "big")
        (count,) = struct.unpack(">I", data[start + 4 : start + 8])
        offset = start + 8
        for _ in range(count):
            if version < 1:
                (item,) = struct.unpack(">H", data[offset : offset + 2])
                offset += 2
            else:
                (item,) = struct.unpack(">I", data[offset : offset + 4])
                offset += 4
            n = data[offset]
            offset += 1
            for _ in range(n):
                if flags & 1:
                    index = struct.unpack(">H", data[offset : offset + 2])[0] & 0x7FFF
                    offset += 2
                else:
                    index = data[offset] & 0x7F
                    offset += 1
                if item == primary and 0 < index <= len(properties):
                    associated.append(properties[index - 1])
    found = {}
    for kind, start, end in associated:
        body = data[start:end]
        if kind == "colr" and body[:4] == b"nclx" and "nclx" not in found:
            found["nclx"] = struct.unpack(">HH", body[4:8])
            found["matrix"] = struct.unpack(">H", body[8:10])[0]
        elif kind == "colr" and body[:4] in (b"prof", b"rICC") and "icc" not in found:
            found["icc"] = body[4:]
        elif kind == "clap":
            found["clap"] = struct.unpack(">IIIIiIiI", body[:32])
        elif kind == "av1C" and "av1" not in found:
            found["av1"] = av1_colour(body[4:])
            found["depth"] = (12 if body[2] & 0x20 else 10) if body[2] & 0x40 else 8
        elif kind == "irot":
            found["irot"] = body[0] & 3
        elif kind == "imir":
            found["imir"] = body[0] & 1
    # Without an nclx box the AV1 sequence header's colour description applies (as libavif reads it).
    if "nclx" not in found and found.get("av1"):
        found["nclx"], found["matrix"] = found["av1"][:2], found["av1"][2]
    found.pop("av1", None)
    return found


class _Bits:
    """A big-endian bit reader (AV1's f(n))."""

    def __init__(self, data):
        self.data, self.position = data, 0

    def f(self, n):
        value = 0
        for _ in range(n):
            byte = self.data[self.position >> 3]
            value = (value << 1) | ((byte >> (7 - (self.position & 7))) & 1)
            self.position += 1
        return value

    def uvlc(self):
        zeros = 0
        while not self.f(1):
            zeros += 1
        return (1 << zeros) - 1 + self.f(zeros) if zeros < 32 else (1 << 32) - 1


def av1_colour(obus):
    """(colour primaries, transfer characteristics, matrix coefficients) from the sequence header OBU among av1C's configOBUs
    (AV1 specification 5.5), or None when it has no colour description or cannot be read."""
    offset = 0
    try:
        while offset < len(obus):
            header = obus[offset]
            kind, extension, has_size = (header >> 3) & 15, (header >> 2) & 1, (header >> 1) & 1
            offset += 1 + extension
            size, shift = 0, 0
            if has_size:
                while True:
                    byte = obus[offset]
                    offset += 1
                    size |= (byte & 0x7F) << shift
                    shift += 7
                    if not byte & 0x80:
                        break
            else:
                size = len(obus) - offset
            if kind == 1:
                return _sequence_header_colour(_Bits(obus[offset : offset + size]))
            offset += size
    except IndexError:
        pass
    return None


def _sequence_header_colour(b):
    profile, _, reduced = b.f(3), b.f(1), b.f(1)
    if reduced:
        b.f(5)
    else:
        decoder_model_info = False
        buffer_delay_length = 0
        if b.f(1):  # timing_info_present_flag
            b.f(32), b.f(32)
            if b.f(1):  # equal_picture_interval
                b.uvlc()
            decoder_model_info = bool(b.f(1))
            if decoder_model_info:
                buffer_delay_length = b.f(5) + 1
                b.f(32), b.f(5), b.f(5)
        initial_display_delay = b.f(1)
        for _ in range(b.f(5) + 1):  # operating points
            b.f(12)
            if b.f(5) > 7:
                b.f(1)
            if decoder_model_info and b.f(1):
                b.f(buffer_delay_length), b.f(buffer_delay_length), b.f(1)
            if initial_display_delay and b.f(1):
                b.f(4)
    width_bits, height_bits = b.f(4) + 1, b.f(4) + 1
    b.f(width_bits), b.f(height_bits)
    if not reduced and b.f(1):  # frame_id_numbers_present_flag
        b.f(4), b.f(3)
    b.f(1), b.f(1), b.f(1)  # 128x128 superblocks, filter intra, intra edge filter
    if not reduced:
        b.f(1), b.f(1), b.f(1), b.f(1)  # interintra, masked compound, warped motion, dual filter
        order_hint = b.f(1)
        if order_hint:
            b.f(1), b.f(1)
        force_screen_content_tools = 2 if b.f(1) else b.f(1)
        if force_screen_content_tools > 0 and not b.f(1):
            b.f(1)
        if order_hint:
            b.f(3)
    b.f(1), b.f(1), b.f(1)  # superres, cdef, restoration
    high_bitdepth = b.f(1)
    if profile == 2 and high_bitdepth:
        b.f(1)
    if profile != 1:
        b.f(1)  # mono_chrome
    if not b.f(1):  # color_description_present_flag
        return None
    return b.f(8), b.f(8), b.f(8)


def clap_rectangle(clap, width, height):
    """The clean aperture (x, y, width, height) in stored pixels, as MIAF defines it: a centred box moved
    by the offsets."""
    wn, wd, hn, hd, xn, xd, yn, yd = clap
    if min(wd, hd, xd, yd) == 0:
        return None
    crop_w, crop_h = wn / wd, hn / hd
    x = xn / xd + (width - 1) / 2 - (crop_w - 1) / 2
    y = yn / yd + (height - 1) / 2 - (crop_h - 1) / 2
    x, y, crop_w, crop_h = (int(round(v)) for v in (x, y, crop_w, crop_h))
    if x < 0 or y < 0 or crop_w <= 0 or crop_h <= 0 or x + crop_w > width or y + crop_h > height:
        return None
    return x, y, crop_w, crop_h


def orient(frame, irot, imir):
    """Applies irot (anticlockwise quarter turns), then imir (0: top and bottom swap, 1: left and right
    swap), as HEIF orders the transformative properties."""
    frame = np.rot90(frame, irot)
    if imir is not None:
        frame = frame[::-1] if imir == 0 else frame[:, ::-1]
    return frame


def exif_orient(frame, orientation):
    """A frame stored with EXIF orientation 1…8, turned upright (what a viewer shows)."""
    transforms = {
        2: lambda a: a[:, ::-1],  # mirrored
        3: lambda a: a[::-1, ::-1],  # rotate 180°
        4: lambda a: a[::-1],  # mirrored vertically
        5: lambda a: a.transpose(1, 0, 2),  # mirrored, rotate 90° CW: the main diagonal
        6: lambda a: np.rot90(a, -1),  # rotate 90° CW
        7: lambda a: np.rot90(a, 2).transpose(1, 0, 2),  # mirrored, rotate 90° CCW: the other diagonal
        8: lambda a: np.rot90(a, 1),  # rotate 90° CCW
    }
    return np.ascontiguousarray(transforms[orientation](frame)) if orientation in transforms else frame
