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
