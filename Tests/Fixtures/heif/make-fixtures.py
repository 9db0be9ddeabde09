#!/usr/bin/env python3
"""Writes the HEIC files of this folder with pillow-heif (its libheif and x265), from generated pictures.

    .venv-conformance/bin/python3 Tests/Fixtures/heif/make-fixtures.py   # from the repository root

HEIFDecodingTests checks what WebImage decodes from them against the pictures written here:
- alpha.heic: 64x48 RGBA, red = 4x, green = 5y, blue = 128; rows 0-23 have alpha 80, the rest are opaque;
- orientation6.heic: stored 60x40, white with a red 10x10 block at the stored top-left, under EXIF
  orientation 6, which pillow-heif writes as irot/imir transforms (shown 40x60, the block at the top-right);
- thumbnail.heic: 1200x800 gradients with an embedded 160-pixel thumbnail;
- grid.heic: 200x150 gradients (red = 255x/199, green = 255y/149, blue = 60) in a grid of 64-pixel tiles.
"""
import os

import numpy as np
import pillow_heif
from PIL import Image

os.chdir(os.path.dirname(os.path.abspath(__file__)))
pillow_heif.register_heif_opener()

alpha = np.zeros((48, 64, 4), np.uint8)
alpha[..., 0] = np.arange(64)[None, :] * 4
alpha[..., 1] = np.arange(48)[:, None] * 5
alpha[..., 2] = 128
alpha[..., 3] = 255
alpha[:24, :, 3] = 80
Image.fromarray(alpha, "RGBA").save("alpha.heic", quality=95)

block = np.full((40, 60, 3), 255, np.uint8)
block[:10, :10] = [255, 0, 0]
picture = Image.fromarray(block)
exif = picture.getexif()
exif[0x0112] = 6
picture.save("orientation6.heic", exif=exif.tobytes(), quality=95)

y, x = np.mgrid[0:800, 0:1200]
gradients = np.stack([x * 255 // 1199, y * 255 // 799, (x + y) * 255 // 1999], -1).astype(np.uint8)
Image.fromarray(gradients).save("thumbnail.heic", quality=50, thumbnails=[160])

pillow_heif.options.GRID_TILE_SIZE = 64
y, x = np.mgrid[0:150, 0:200]
tiles = np.stack([x * 255 // 199, y * 255 // 149, np.full_like(x, 60)], -1).astype(np.uint8)
Image.fromarray(tiles).save("grid.heic", quality=95)
