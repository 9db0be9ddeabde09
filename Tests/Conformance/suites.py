"""The four suites: which files each holds, what is expected of each, and the reference it is compared with.

A suite is read from its own folder layout, the same for a fetched copy and for the in-repository subset
(Tests/Fixtures/conformance/SUITE/), so a case has one key (`suite/path`) in both:

  pngsuite    libpng's contrib/ folder: pngsuite/ and testpngs/ (crashers/ inside). Files named x*.png
              (PngSuite's corrupt files) must be refused; testpngs/crashers/ must decode or be refused
              without a crash; every other file must decode to the reference.
  jxl         libjxl/conformance's testcases/: one folder per case with input.jxl, ref.png (or ref.apng,
              ref.gif) and test.json. A case whose reference image is missing from the copy, or is only
              ref.gif (256 colours a frame), is compared with libjxl 0.11's float decode
              (readers.jxl_frames_newer) instead; the ref.gif difference is reported, not judged.
  avif        AOMediaCodec/av1-avif's testFiles/: every *.avif.
  sdwebimage  SDWebImage's Tests/Tests/Images/: every image.

Tolerances are in 8-bit steps (1/255), on straight-alpha RGBA in sRGB; colour errors are weighted by the
reference's alpha, so the colour of (nearly) transparent pixels, which nobody sees and which 8-bit straight
alpha cannot keep, does not count. `peak` bounds every sample, `rms` each channel's root mean square.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

import colour
import readers


@dataclass
class Tolerance:
    peak: float  # in 8-bit steps
    rms: float
    why: str


# PNG: the reference is exact (pypng at the file's bit depth, colour maths in float); the decoder's 8-bit
# output may round differently and LittleCMS's 8-bit transforms interpolate, so one step of rounding and
# one of interpolation.
PNG_TOLERANCE = Tolerance(2, 0.6, "exact reference; rounding and LittleCMS's 8-bit interpolation")
# Lossy formats decoded by the same libraries on both sides (libjpeg-turbo, libwebp, libavif+an AV1
# decoder) in possibly different versions; YUV to RGB conversion and chroma upsampling may round
# differently, and colour conversion runs at 8 bits on one side.
PILLOW_TOLERANCE = Tolerance(6, 1.5, "same codec libraries, other versions; YUV->RGB rounding")
# JPEG XL: test.json's limits are for a float decode; an 8-bit sRGB output cannot meet them, so they are
# widened to this floor (rounding to 8 bits, then the 8-bit sRGB conversion of the reference).
JXL_FLOOR = Tolerance(3, 1.0, "test.json limits widened to 8-bit output")


@dataclass
class Case:
    suite: str
    key: str  # suite/relative path: the key of the known-failures list
    input: Path
    expect: str  # "match" (decode and compare), "refuse", "no-crash" (decode or refuse), "decode" (no reference)
    reference: Optional[Callable[[], list]] = None  # frames (float RGBA), built lazily
    tolerance: Optional[Tolerance] = None
    frame_tolerances: list = field(default_factory=list)  # per-frame override (JPEG XL)
    skip: Optional[str] = None  # why the case is not run
    also: Optional[tuple] = None  # (name, frames): another image, compared and reported but not judged


def _root(path, *inner):
    """`path` itself, or `path/inner` when given a whole checkout."""
    candidate = Path(path).joinpath(*inner)
    return candidate if candidate.is_dir() else Path(path)


# MARK: - PNG


def png_reference(data):
    """A PNG file's first frame, or every frame of an APNG (through Pillow, 8-bit), in sRGB."""
    if any(kind == "acTL" for kind, _ in readers.png_chunks(data)[:8]):
        frames, _ = readers.pillow_frames(data)
    else:
        frames = [readers.png_pixels(data)]
    space = readers.png_colour(data)
    if space is None or space[0] == "srgb":
        return frames
    if space[0] == "cicp":
        return [colour.cicp(frame, space[1], space[2]) for frame in frames]
    if space[0] == "icc":
        converted = [colour.icc(frame, space[1]) for frame in frames]
        return frames if any(c is None for c in converted) else converted
    return [colour.png_gamma(frame, space[1], space[2]) for frame in frames]


def pngsuite(path):
    root = _root(path, "contrib")
    folders = [root / "pngsuite", root / "testpngs"]
    # Only libpng's two test folders (contrib/ holds other programs' sample images); a folder without them
    # (a copy of the full PngSuite, say) is read whole.
    files = [f for d in folders if d.is_dir() for f in d.rglob("*.png")] or list(root.rglob("*.png"))
    for file in sorted(files):
        relative = file.relative_to(root).as_posix()
        case = Case("pngsuite", "pngsuite/" + relative, file, "match")
        if file.name.startswith("x"):
            case.expect = "refuse"
        elif "crashers" in file.parts:
            case.expect = "no-crash"
        else:
            case.reference = lambda file=file: png_reference(file.read_bytes())
            case.tolerance = PNG_TOLERANCE
        yield case


# MARK: - JPEG XL


REFERENCE_IMAGES = ("ref.png", "ref.apng", "ref.gif")


def newer_libjxl_available():
    try:
        import imagecodecs  # noqa: F401
    except ImportError:
        return False
    return True


def _to_srgb(frames, profile):
    if profile:
        converted = [colour.icc(frame, profile) for frame in frames]
        frames = frames if any(c is None for c in converted) else converted
    return frames


def _reference_image(folder):
    """The name of the case's reference image in the copy, or None."""
    return next((name for name in REFERENCE_IMAGES if (folder / name).exists()), None)


def jxl_reference(folder):
    """The case's reference in sRGB: its ref.png or ref.apng; libjxl 0.11's decode
    (readers.jxl_frames_newer) where the copy has no reference image, or only ref.gif (256 colours a
    frame; the suite's own reference is a .npy the copy lacks)."""
    name = _reference_image(folder)
    if name in (None, "ref.gif"):
        return readers.jxl_frames_newer((folder / "input.jxl").read_bytes())
    data = (folder / name).read_bytes()
    if name == "ref.png":
        return png_reference(data)
    return _to_srgb(*readers.pillow_frames(data))


def jxl(path):
    root = _root(path, "testcases")
    for folder in sorted(p for p in root.iterdir() if (p / "input.jxl").exists()):
        case = Case("jxl", "jxl/" + folder.name, folder / "input.jxl", "match")
        name = _reference_image(folder)
        if name in (None, "ref.gif") and not newer_libjxl_available():
            missing = "only ref.gif" if name else "no reference image"
            case.skip = f"{missing} in this copy, and no imagecodecs (libjxl 0.11)"
        descriptor = json.loads((folder / "test.json").read_text())
        for frame in descriptor["frames"]:
            case.frame_tolerances.append(
                Tolerance(
                    max(JXL_FLOOR.peak, frame["peak_error"] * 255),
                    max(JXL_FLOOR.rms, frame["rms_error"] * 255),
                    f"test.json peak {frame['peak_error']:g}, rms {frame['rms_error']:g}, widened to 8-bit output",
                )
            )
        case.tolerance = case.frame_tolerances[0]
        case.reference = lambda folder=folder: jxl_reference(folder)
        if name == "ref.gif":
            # Not judged, but reported, so that a difference between the preview and libjxl stays visible.
            gif = folder / "ref.gif"
            case.also = ("ref.gif", lambda gif=gif: _to_srgb(*readers.pillow_frames(gif.read_bytes())))
        yield case


# MARK: - Pillow-decoded formats


def pillow_reference(data, suffix):
    """Pillow's frames in sRGB and upright: the ICC profile applied; for AVIF also the nclx colour, the
    clean aperture and irot/imir, none of which Pillow applies to the pixels (it turns irot/imir into an
    EXIF orientation tag, which is not used here: the transforms are read from the file). 10- and 12-bit
    AVIF files take the exact YUV conversion (_exact_avif) instead of Pillow's."""
    profile, properties = None, readers.avif_properties(data) if suffix == ".avif" else {}
    exact = _exact_avif(data, properties) if suffix == ".avif" else None
    if suffix == ".png":
        frames = png_reference(data)
    else:
        frames, profile = (exact, properties.get("icc")) if exact else readers.pillow_frames(data)
        if profile:
            converted = [colour.icc(frame, profile) for frame in frames]
            frames = frames if any(c is None for c in converted) else converted
    if suffix == ".avif":
        if "nclx" in properties and not profile:
            if properties["nclx"][1] in (16, 18) and len(frames) == 1 and not exact:
                frames = readers.avif_frames_deep(data) or frames
            frames = [colour.cicp(frame, *properties["nclx"]) for frame in frames]
        if "clap" in properties:
            frames = [_clap(frame, properties["clap"]) for frame in frames]
        irot, imir = properties.get("irot", 0), properties.get("imir")
        return [np.ascontiguousarray(readers.orient(frame, irot, imir)) for frame in frames]
    if suffix in (".heic", ".heif", ".heics"):
        # libheif (pillow-heif) applies clap, irot and imir itself, and turns YUV into RGB, but leaves the
        # nclx primaries and transfer (PQ, HLG) to the caller.
        nclx = readers.heif_nclx(data)
        if nclx and not profile:
            if nclx[1] in (16, 18):
                frames = readers.heif_frames_deep(data)
            frames = [colour.cicp(frame, *nclx) for frame in frames]
        return frames
    # EXIF orientation, as the decoded side is turned by the orientation webimage reports.
    orientation = readers.pillow_orientation(data)
    return [readers.exif_orient(frame, orientation) for frame in frames]


def _exact_avif(data, properties):
    """A 10- or 12-bit AVIF's reference without 8-bit steps: its decoded YUV planes at their own depth
    (avifdec's Y4M) turned into R'G'B' in float64 by the H.273 equations (colour.yuv_to_rgb), or None (an
    8-bit file, an alpha plane, a matrix the checker does not know, no avifdec); every frame of a sequence.
    Pillow's libavif converts such files to 8 bits directly, which puts red and blue of the Link-U 12-bit
    files about 1.3 steps low (rms up to 1.7; docs/CONFORMANCE.md), and it cannot convert BT.2020 constant
    luminance (matrix 10) at all: a reference must be more precise than what it judges. PQ and HLG files
    are tone-mapped from these floats (no 16-bit decode needed)."""
    if properties.get("depth", 8) <= 8:
        return None
    count = readers.avif_frame_count(data)
    transfer = properties.get("nclx", (2, 2))[1]
    frames = []
    for index in range(count):
        planes = readers.avif_planes(data, index)
        frame = None if planes is None else colour.yuv_to_rgb(planes, properties.get("matrix", 2), transfer)
        if frame is None:
            return None
        frames.append(frame)
    return frames


def _clap(frame, clap):
    """`frame` (as stored) cropped to the clean aperture; unchanged when the aperture is invalid, as
    browsers ignore it."""
    rectangle = readers.clap_rectangle(clap, frame.shape[1], frame.shape[0])
    if rectangle is None:
        return frame
    x, y, w, h = rectangle
    return np.ascontiguousarray(frame[y : y + h, x : x + w])


def avif(path):
    root = _root(path, "testFiles")
    for file in sorted(root.rglob("*.avif")):
        relative = file.relative_to(root).as_posix()
        yield Case(
            "avif",
            "avif/" + relative,
            file,
            "match",
            reference=lambda file=file: pillow_reference(file.read_bytes(), ".avif"),
            tolerance=PILLOW_TOLERANCE,
        )


# Vector and camera-raw formats are outside what an image decoder of web images is for.
NOT_APPLICABLE = {".pdf": "PDF (a document format)", ".svg": "SVG (vector)", ".nef": "NEF (camera raw)"}


def sdwebimage(path):
    root = _root(path, "Tests", "Tests", "Images")
    for file in sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith(".")):
        suffix = file.suffix.lower()
        case = Case("sdwebimage", "sdwebimage/" + file.name, file, "match")
        if suffix in NOT_APPLICABLE:
            case.skip = NOT_APPLICABLE[suffix] + " is not an image format WebImage decodes"
        elif suffix == ".jxl":
            # No independent JPEG XL decoder in the venv: the file must decode cleanly.
            case.expect = "decode"
        else:
            case.reference = lambda file=file, suffix=suffix: pillow_reference(file.read_bytes(), suffix)
            case.tolerance = PNG_TOLERANCE if suffix == ".png" else PILLOW_TOLERANCE
        yield case


SUITES = {"pngsuite": pngsuite, "jxl": jxl, "avif": avif, "sdwebimage": sdwebimage}
