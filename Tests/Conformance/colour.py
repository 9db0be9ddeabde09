"""Colour conversions the references need, written from the specifications (PNG 3rd edition for gAMA and
cHRM, ITU-T H.273 for CICP code points), plus ICC profiles through Pillow's ImageCms (LittleCMS).

Every function takes and returns straight-alpha RGBA as float32 arrays in 0…1, shape (height, width, 4).
The target is always sRGB, which is what `webimage convert` writes when it is not asked to keep a profile.
"""

import io

import numpy as np
from PIL import Image, ImageCms

# White x, y, then red, green, blue x, y, for the H.273 ColourPrimaries code points a decoder meets.
D65 = (0.3127, 0.3290)
PRIMARIES = {
    1: D65 + (0.640, 0.330, 0.300, 0.600, 0.150, 0.060),  # BT.709 / sRGB
    4: (0.310, 0.316, 0.67, 0.33, 0.21, 0.71, 0.14, 0.08),  # BT.470 M
    5: D65 + (0.64, 0.33, 0.29, 0.60, 0.15, 0.06),  # BT.470 BG
    6: D65 + (0.630, 0.340, 0.310, 0.595, 0.155, 0.070),  # SMPTE 170M
    7: D65 + (0.630, 0.340, 0.310, 0.595, 0.155, 0.070),  # SMPTE 240M
    9: D65 + (0.708, 0.292, 0.170, 0.797, 0.131, 0.046),  # BT.2020
    11: (0.314, 0.351, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060),  # DCI-P3
    12: D65 + (0.680, 0.320, 0.265, 0.690, 0.150, 0.060),  # Display P3
}
SRGB_CHROMATICITIES = PRIMARIES[1]


def srgb_to_linear(v):
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(v):
    v = np.clip(v, 0.0, 1.0)
    return np.where(v <= 0.0031308, v * 12.92, 1.055 * np.power(v, 1 / 2.4) - 0.055)


def bt709_to_linear(v):
    """The inverse of BT.709's OETF (H.273 transfer 1, 6, 14, 15)."""
    return np.where(v < 0.081, v / 4.5, ((v + 0.099) / 1.099) ** (1 / 0.45))


# H.273 TransferCharacteristics code point -> function from encoded to linear light. PQ (16) and HLG (18)
# are tone-mapped instead (hdr_to_sdr).
TRANSFERS = {
    1: bt709_to_linear,
    6: bt709_to_linear,
    14: bt709_to_linear,
    15: bt709_to_linear,
    2: srgb_to_linear,  # unspecified: taken as sRGB
    13: srgb_to_linear,
    4: lambda v: v**2.2,
    5: lambda v: v**2.8,
    8: lambda v: v,
}


def _rgb_to_xyz(c):
    """The RGB -> XYZ matrix for chromaticities (white x, y, red x, y, green x, y, blue x, y)."""
    wx, wy, rx, ry, gx, gy, bx, by = c
    columns = np.array([[x / y, 1.0, (1 - x - y) / y] for x, y in ((rx, ry), (gx, gy), (bx, by))]).T
    white = np.array([wx / wy, 1.0, (1 - wx - wy) / wy])
    return columns * np.linalg.solve(columns, white)


def _bradford(source_white, target_white):
    """Chromatic adaptation between two white points (x, y), as LittleCMS adapts relative colorimetric."""
    m = np.array([[0.8951, 0.2664, -0.1614], [-0.7502, 1.7135, 0.0367], [0.0389, -0.0685, 1.0296]])

    def xyz(w):
        return np.array([w[0] / w[1], 1.0, (1 - w[0] - w[1]) / w[1]])

    scale = (m @ xyz(target_white)) / (m @ xyz(source_white))
    return np.linalg.inv(m) @ np.diag(scale) @ m


def convert_linear(rgba, to_linear, chromaticities):
    """Pixels whose RGB are `to_linear`-encoded in the colour space of `chromaticities`, in sRGB."""
    out = rgba.copy()
    linear = to_linear(np.clip(rgba[..., :3], 0.0, 1.0))
    if tuple(chromaticities) != SRGB_CHROMATICITIES:
        matrix = (
            np.linalg.inv(_rgb_to_xyz(SRGB_CHROMATICITIES))
            @ _bradford(chromaticities[:2], D65)
            @ _rgb_to_xyz(chromaticities)
        )
        linear = linear @ matrix.T
    out[..., :3] = linear_to_srgb(linear)
    return out


def png_gamma(rgba, gamma, chromaticities):
    """PNG gAMA (file gamma: sample = linear ** gamma) with cHRM, or sRGB's primaries without it.

    Gamma 1/2.2, alone or with sRGB's cHRM, is taken as sRGB, as browsers take it (encoders write it for
    sRGB files).
    """
    srgb_like = chromaticities is None or all(abs(a - b) < 0.0011 for a, b in zip(chromaticities, SRGB_CHROMATICITIES))
    if abs(gamma - 1 / 2.2) < 0.0005 and srgb_like:
        return rgba
    return convert_linear(rgba, lambda v: v ** (1 / gamma), chromaticities or SRGB_CHROMATICITIES)


# HDR to SDR as WebImage documents it (HDRToneMapper): PQ's EOTF, or HLG's inverse OETF and BT.2100's OOTF
# for a 1,000 cd/m2 display; BT.2390's EETF on the luminance from a 1,000 cd/m2 peak to 203 cd/m2 (BT.2408's
# reference white), which becomes SDR white, the RGB scaled with the luminance; BT.709 primaries, clipped,
# sRGB's curve. Written here from the standards' formulas, in float.
PQ_M1, PQ_M2 = 2610 / 16384, 2523 / 4096 * 128
PQ_C1, PQ_C2, PQ_C3 = 3424 / 4096, 2413 / 4096 * 32, 2392 / 4096 * 32
HDR_PEAK, SDR_WHITE = 1000.0, 203.0


def pq_eotf(e):
    p = np.power(np.clip(e, 0, 1), 1 / PQ_M2)
    return 10000 * np.power(np.maximum(p - PQ_C1, 0) / (PQ_C2 - PQ_C3 * p), 1 / PQ_M1)


def pq_inverse_eotf(nits):
    y = np.power(np.clip(nits / 10000, 0, 1), PQ_M1)
    return np.power((PQ_C1 + PQ_C2 * y) / (1 + PQ_C3 * y), PQ_M2)


def bt2390_eetf(nits):
    source = pq_inverse_eotf(HDR_PEAK)
    e1 = np.minimum(pq_inverse_eotf(nits) / source, 1)
    max_lum = pq_inverse_eotf(SDR_WHITE) / source
    ks = 1.5 * max_lum - 0.5
    t = np.clip((e1 - ks) / (1 - ks), 0, 1)
    spline = (2 * t**3 - 3 * t**2 + 1) * ks + (t**3 - 2 * t**2 + t) * (1 - ks) + (-2 * t**3 + 3 * t**2) * max_lum
    return pq_eotf(np.where(e1 > ks, spline, e1) * source)


def hdr_to_sdr(rgba, primaries, transfer):
    """PQ (16) or HLG (18) code values with `primaries` to SDR sRGB."""
    code = np.clip(rgba[..., :3].astype(np.float64), 0, 1)
    to_xyz = _rgb_to_xyz(PRIMARIES[primaries])
    weights = to_xyz[1]
    if transfer == 16:
        light = pq_eotf(code)
    else:
        a = 0.17883277
        b, c = 1 - 4 * a, 0.5 - a * np.log(4 * a)
        scene = np.where(code <= 0.5, code**2 / 3, (np.exp((code - c) / a) + b) / 12)
        ys = scene @ weights
        light = scene * (HDR_PEAK * np.power(np.maximum(ys, 0), 0.2))[..., None]
    luminance = light @ weights
    safe = np.where(luminance > 0, luminance, 1)
    scale = np.where(luminance > 0, bt2390_eetf(safe) / safe / SDR_WHITE, 0)
    linear = light * scale[..., None]
    linear = linear @ (np.linalg.inv(_rgb_to_xyz(SRGB_CHROMATICITIES)) @ to_xyz).T
    out = rgba.copy()
    out[..., :3] = linear_to_srgb(linear).astype(np.float32)
    return out


def cicp(rgba, primaries, transfer):
    """H.273 colour primaries and transfer characteristics to sRGB; PQ and HLG tone-mapped (hdr_to_sdr);
    unchanged for unknowns."""
    primaries = 1 if primaries == 2 else primaries  # unspecified: BT.709
    if transfer in (16, 18):
        return hdr_to_sdr(rgba, primaries, transfer) if primaries in (1, 9, 11, 12) else rgba
    if primaries not in PRIMARIES or transfer not in TRANSFERS:
        return rgba
    if primaries == 1 and TRANSFERS[transfer] is srgb_to_linear:
        return rgba
    return convert_linear(rgba, TRANSFERS[transfer], PRIMARIES[primaries])


_SRGB_PROFILE = ImageCms.createProfile("sRGB")


def icc(rgba, profile_bytes):
    """Pixels in the ICC profile `profile_bytes` to sRGB with LittleCMS (perceptual intent), at 8 bits:
    Pillow's ImageCms transforms 8-bit images only. Returns None when LittleCMS cannot use the profile
    (a decoder then keeps the stored pixels, as browsers do)."""
    try:
        profile = ImageCms.ImageCmsProfile(io.BytesIO(profile_bytes))
    except (OSError, ImageCms.PyCMSError):
        return None
    space = profile.profile.xcolor_space.strip()
    if space not in ("RGB", "GRAY"):
        return None
    eight = np.clip(np.rint(rgba * 255), 0, 255).astype(np.uint8)
    if space == "GRAY":
        source = Image.fromarray(eight[..., 0], "L")
    else:
        source = Image.fromarray(eight[..., :3], "RGB")
    try:
        converted = ImageCms.profileToProfile(
            source, profile, _SRGB_PROFILE, renderingIntent=ImageCms.Intent.PERCEPTUAL, outputMode="RGB"
        )
    except ImageCms.PyCMSError:
        return None
    out = rgba.copy()
    out[..., :3] = np.asarray(converted, dtype=np.float32) / 255
    return out


# MARK: - YUV to RGB (ITU-T H.273)

# MatrixCoefficients -> (KR, KB). Unspecified (2) is taken as BT.601, as libavif (0.11 and Pillow's) takes
# it; 10 is BT.2020's constant-luminance system (yuv_to_rgb).
MATRICES = {1: (0.2126, 0.0722), 2: (0.299, 0.114), 4: (0.30, 0.11), 5: (0.299, 0.114), 6: (0.299, 0.114),
            7: (0.212, 0.087), 9: (0.2627, 0.0593), 10: (0.2627, 0.0593)}


def bt709_oetf(v):
    v = np.clip(v, 0, 1)
    return np.where(v < 0.018, 4.5 * v, 1.099 * np.power(v, 0.45) - 0.099)


def hlg_oetf(v):
    a = 0.17883277
    b, c = 1 - 4 * a, 0.5 - a * np.log(4 * a)
    v = np.clip(v, 0, 1)
    return np.where(v <= 1 / 12, np.sqrt(3 * v), a * np.log(np.maximum(12 * v - b, 1e-12)) + c)


def hlg_inverse_oetf(e):
    a = 0.17883277
    b, c = 1 - 4 * a, 0.5 - a * np.log(4 * a)
    e = np.clip(e, 0, 1)
    return np.where(e <= 0.5, e**2 / 3, (np.exp((e - c) / a) + b) / 12)


# TransferCharacteristics -> (to linear, from linear) on the nominal 0…1 range, for the constant-luminance
# equations; PQ's linear 1 is 10,000 cd/m2.
TRANSFER_PAIRS = {
    1: (bt709_to_linear, bt709_oetf), 6: (bt709_to_linear, bt709_oetf), 14: (bt709_to_linear, bt709_oetf),
    15: (bt709_to_linear, bt709_oetf), 13: (srgb_to_linear, linear_to_srgb),
    16: (lambda e: pq_eotf(e) / 10000, lambda v: pq_inverse_eotf(np.clip(v, 0, 1) * 10000)),
    18: (hlg_inverse_oetf, hlg_oetf), 8: (lambda e: e, lambda v: v),
}


def _upsample(plane, width, height):
    """A subsampled chroma plane at the luma size: bilinear, each chroma sample centred on the luma samples it
    covers (the horizontal and, for 4:2:0, vertical neighbours weighted 3/4 and 1/4), edges repeated."""

    def along(values, size, axis):
        stored = values.shape[axis]
        if stored == size:
            return values
        position = (np.arange(size) + 0.5) / 2 - 0.5
        low = np.floor(position).astype(int)
        weight = position - low
        first, second = np.clip(low, 0, stored - 1), np.clip(low + 1, 0, stored - 1)
        if axis == 0:
            return values[first] * (1 - weight)[:, None] + values[second] * weight[:, None]
        return values[:, first] * (1 - weight) + values[:, second] * weight

    return along(along(plane, height, 0), width, 1)


def yuv_to_rgb(planes, matrix, transfer):
    """Decoded YUV planes (readers.avif_planes) as straight-alpha RGBA in float64 per ITU-T H.273: the
    range (full, or limited: 219 and 224 steps at 8 bits, times 2^(depth-8)), chroma upsampled bilinearly,
    then MatrixCoefficients `matrix`: 0 (identity: G, B, R stored), the KR/KB matrices, or 10 (BT.2020
    constant luminance, whose Y' is TF(luminance) and whose colour differences are scaled apart for negative
    and positive values, so the transfer `transfer` is needed to come back to R'G'B'). The result holds the
    R'G'B' code values (0…1) of the file's transfer. None for a matrix this does not know."""
    depth, y = planes["depth"], planes["y"]
    height, width = y.shape
    scale = 1 << (depth - 8)
    full, peak = planes["full_range"], (1 << depth) - 1

    def as_luma(p):
        return p / peak if full else (p - 16 * scale) / (219 * scale)

    luma = as_luma(y)
    stored = [None if p is None else _upsample(p, width, height) for p in (planes["u"], planes["v"])]
    if stored[0] is None:
        cb = cr = np.zeros_like(luma)
    elif full:
        cb, cr = ((p - (1 << (depth - 1))) / peak for p in stored)
    else:
        cb, cr = ((p - 128 * scale) / (224 * scale) for p in stored)
    if matrix == 0:
        # Identity: G, B and R are coded as Y, U and V, each with luma's range.
        channels = [luma] * 3 if stored[0] is None else [as_luma(stored[1]), luma, as_luma(stored[0])]
        rgb = np.dstack(channels)
    elif matrix == 10:
        if transfer not in TRANSFER_PAIRS:
            return None
        to_linear, from_linear = TRANSFER_PAIRS[transfer]
        kr, kb = MATRICES[10]
        # The colour differences B'-Y' and R'-Y' span [-TF(1-K), 1-TF(K)]; each half is scaled to 0.5.
        nb, pb = from_linear(1 - kb), 1 - from_linear(kb)
        nr, pr = from_linear(1 - kr), 1 - from_linear(kr)
        blue = luma + np.where(cb <= 0, 2 * nb * cb, 2 * pb * cb)
        red = luma + np.where(cr <= 0, 2 * nr * cr, 2 * pr * cr)
        lum, r, b = to_linear(np.clip(luma, 0, 1)), to_linear(np.clip(red, 0, 1)), to_linear(np.clip(blue, 0, 1))
        green = from_linear((lum - kr * r - kb * b) / (1 - kr - kb))
        rgb = np.dstack([red, green, blue])
    elif matrix in MATRICES:
        kr, kb = MATRICES[matrix]
        kg = 1 - kr - kb
        red, blue = luma + 2 * (1 - kr) * cr, luma + 2 * (1 - kb) * cb
        rgb = np.dstack([red, (luma - kr * red - kb * blue) / kg, blue])
    else:
        return None
    return np.dstack([np.clip(rgb, 0, 1), np.ones_like(luma)])
