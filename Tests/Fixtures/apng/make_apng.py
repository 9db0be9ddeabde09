"""Writes the APNG test files of this folder with Pillow (run with the conformance venv's Python):

    .venv-conformance/bin/python3 Tests/Fixtures/apng/make_apng.py

`dispose{D}-blend{B}.png` holds four 24×16 frames with opaque shapes that move on transparency, written
with dispose operation D and blend operation B (Pillow crops each frame to what changed, so frames have
their own rectangles); `default-image.png` has a default image that is not part of its three-frame
animation. Beside each, `NAME.rgba` holds Pillow's decode: every frame's full canvas, RGBA8, one after
another. Pillow 13 composes a blend-over frame into the canvas it keeps for dispose "previous"; the decode
here keeps a copy, as the APNG specification (and Tests/Conformance/readers.py) does.

Pillow blends "over" by pasting through the frame's alpha, which is the specification's "over" only for
alpha 0 and 255, so the shapes are opaque. `over-alpha.png` covers partial alpha: two full-canvas frames of
half-transparent colour, blend "over"; its `.rgba` is the specification's formula computed here in floating
point, not Pillow's decode.
"""

import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageSequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "Conformance"))
import readers  # noqa: E402,F401  (its import keeps Pillow's canvas before a frame, see above)


def frames(count=4):
    result = []
    for index in range(count):
        image = Image.new("RGBA", (24, 16), (0, 0, 0, 0))
        draw = ImageDraw.Draw(image)
        draw.rectangle((2 + 4 * index, 2, 9 + 4 * index, 9), fill=(255, 40 * index, 0, 255))
        draw.rectangle((12, 6 + index, 21, 13), fill=(0, 0, 255, 255))
        if index % 2:
            draw.rectangle((0, 0, 23, 1), fill=(0, 200, 0, 255))
        result.append(image)
    return result


def write(name, images, **options):
    path = HERE / name
    images[0].save(path, save_all=True, append_images=images[1:], duration=[100, 50, 200, 30][: len(images)],
                   loop=2, **options)
    decoded = Image.open(path)
    with open(path.with_suffix(".rgba"), "wb") as out:
        for frame in ImageSequence.Iterator(decoded):
            out.write(frame.convert("RGBA").tobytes())


def main():
    for dispose in (0, 1, 2):
        for blend in (0, 1):
            write(f"dispose{dispose}-blend{blend}.png", frames(), disposal=dispose, blend=blend)
    write("default-image.png", frames(), default_image=True)
    over_alpha()


def over_alpha():
    first = Image.new("RGBA", (8, 4), (0, 0, 0, 0))
    ImageDraw.Draw(first).rectangle((0, 0, 3, 3), fill=(255, 0, 0, 128))
    second = Image.new("RGBA", (8, 4), (0, 64, 255, 96))
    path = HERE / "over-alpha.png"
    first.save(path, save_all=True, append_images=[second], duration=100, loop=0, blend=1, disposal=0)
    below = np.asarray(first, dtype=np.float64) / 255
    above = np.asarray(second, dtype=np.float64) / 255
    alpha = above[..., 3:] + below[..., 3:] * (1 - above[..., 3:])
    colour = (above[..., :3] * above[..., 3:] + below[..., :3] * below[..., 3:] * (1 - above[..., 3:])) / np.where(
        alpha > 0, alpha, 1)
    composed = np.concatenate([colour, alpha], axis=-1)
    with open(path.with_suffix(".rgba"), "wb") as out:
        out.write(np.asarray(first).tobytes())
        out.write(np.round(composed * 255).astype(np.uint8).tobytes())


if __name__ == "__main__":
    main()
