#!/usr/bin/env python3
"""Writes the AVIF files of this folder: YUV planes computed here, written as Y4M, encoded losslessly by
libavif's avifenc (Debian's libavif-bin; quantizer 0, so the planes decode back unchanged).

    .venv-conformance/bin/python3 Tests/Fixtures/avif/make-fixtures.py   # from the repository root

Both are 32x16 pictures of eight flat 8x8 patches (four a row), coded with matrix coefficients 10 (BT.2020
constant luminance, ITU-T H.273): Y' = TF(KR*R + KG*G + KB*B) on linear light, and each colour difference
B'-Y', R'-Y' divided by 2*TF(1-K) when negative and by 2*(1-TF(K)) when positive (KR 0.2627, KB 0.0593),
with TF the file's transfer. AVIFConstantLuminanceTests checks WebImage's decode against the patches here:
- constant-luminance-srgb-444-full.avif: CICP 1/13/10 (sRGB's primaries and curve), 10-bit 4:4:4, full
  range; patches SRGB_PATCHES, which the decode must give back as they are;
- constant-luminance-pq-420-limited.avif: CICP 9/16/10 (BT.2020 primaries, PQ), 10-bit 4:2:0 (chroma the
  mean of each 2x2 block), limited range; patches PQ_PATCHES as PQ code values (0-255 for 0-1), which the
  decode tone-maps to sRGB.
"""
import os
import subprocess
import sys

import numpy as np

os.chdir(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, "../../Conformance")
import colour  # noqa: E402  (the checker's transfer functions)

KR, KB = 0.2627, 0.0593
SRGB_PATCHES = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255), (255, 0, 255),
                (128, 128, 128), (230, 120, 40)]
PQ_PATCHES = [(153, 77, 77), (77, 153, 102), (89, 102, 158), (140, 140, 51), (115, 115, 115), (148, 89, 128),
              (51, 128, 140), (166, 128, 89)]


def write(name, patches, primaries, transfer, layout, full, depth=10, patch=8):
    to_linear, from_linear = colour.TRANSFER_PAIRS[transfer]
    width, height = 4 * patch, 2 * patch
    rgb = np.zeros((height, width, 3))
    for index, value in enumerate(patches):
        row, column = divmod(index, 4)
        rgb[row * patch : (row + 1) * patch, column * patch : (column + 1) * patch] = np.array(value) / 255
    linear = to_linear(rgb)
    luma = from_linear(KR * linear[..., 0] + (1 - KR - KB) * linear[..., 1] + KB * linear[..., 2])
    blue, red = rgb[..., 2] - luma, rgb[..., 0] - luma
    pb = np.where(blue <= 0, blue / (2 * from_linear(1 - KB)), blue / (2 * (1 - from_linear(KB))))
    pr = np.where(red <= 0, red / (2 * from_linear(1 - KR)), red / (2 * (1 - from_linear(KR))))
    peak, steps = (1 << depth) - 1, 1 << (depth - 8)
    if full:
        planes = [luma * peak, pb * peak + (1 << (depth - 1)), pr * peak + (1 << (depth - 1))]
    else:
        planes = [16 * steps + 219 * steps * luma, 128 * steps + 224 * steps * pb, 128 * steps + 224 * steps * pr]
    planes = [np.clip(np.rint(p), 0, peak) for p in planes]
    if layout == "420":
        planes[1:] = [np.rint(p.reshape(height // 2, 2, width // 2, 2).mean(axis=(1, 3))) for p in planes[1:]]
    colour_range = "FULL" if full else "LIMITED"
    header = f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C{layout}p{depth} XCOLORRANGE={colour_range}\n"
    y4m = name + ".y4m"
    with open(y4m, "wb") as out:
        out.write(header.encode() + b"FRAME\n" + b"".join(p.astype("<u2").tobytes() for p in planes))
    subprocess.run(["avifenc", "--min", "0", "--max", "0", "--cicp", f"{primaries}/{transfer}/10",
                    "--range", "full" if full else "limited", y4m, name + ".avif"], check=True, capture_output=True)
    os.remove(y4m)


write("constant-luminance-srgb-444-full", SRGB_PATCHES, 1, 13, "444", True)
write("constant-luminance-pq-420-limited", PQ_PATCHES, 9, 16, "420", False)
