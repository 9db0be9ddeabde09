#!/usr/bin/env python3
"""Makes the image-pipeline fixtures in this folder from the corpus photos (../corpus/images).

Run from the repository root, with Pillow in the Python that runs it and Debian's libavif-bin,
libjxl-tools, libjxl-dev, liblcms2-dev and libjpeg62-turbo-dev installed:

    python3 -m venv /tmp/fixtures && /tmp/fixtures/bin/pip install Pillow
    /tmp/fixtures/bin/python Tests/Fixtures/pipeline/make-fixtures.py

It writes the AVIF and JPEG XL files with avifenc / cjxl, their reference decodes (*.ref.png) with
avifdec / djxl (8 bits per channel), the colour fixtures (a Display P3 profile and a synthetic CMYK one
made with LittleCMS by tools/make-colour-fixtures.c, images carrying them, and a CMYK JPEG XL made
with libjxl's encoder by tools/make-cmyk-jxl.c), and manifest.json, which
lists what each file holds. The tests read only the committed results: nothing here runs in `make test`.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

from PIL import Image, ImageCms, PngImagePlugin

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "corpus", "images")


def run(*command):
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def out(name):
    return os.path.join(HERE, name)


def corpus(name):
    return os.path.join(CORPUS, name)


def gif_frames(path, workdir):
    """The GIF's frames composed to RGB PNGs, with durations in milliseconds (the GIF's own, made uneven
    so that a decoder reading one duration for all frames is caught)."""
    gif = Image.open(path)
    frames, durations = [], []
    for index in range(gif.n_frames):
        gif.seek(index)
        frame = gif.convert("RGB")
        name = os.path.join(workdir, f"frame{index:03}.png")
        frame.save(name)
        frames.append(name)
        durations.append(gif.info.get("duration", 100) + 40 * (index % 3))
    return frames, durations


def main():
    manifest = []
    with tempfile.TemporaryDirectory() as workdir:
        # AVIF ---------------------------------------------------------------------------------
        stills = [
            ("coffee.avif", corpus("coffee-rgb.png"), ["-s", "6"], False),
            ("horse-alpha.avif", corpus("horse-rgba.png"), ["-s", "6"], True),
            ("coffee-10bit.avif", corpus("coffee-rgb.png"), ["-s", "6", "-d", "10"], False),
            ("coffee-12bit-444.avif", corpus("coffee-rgb.png"), ["-s", "6", "-d", "12", "-y", "444"], False),
        ]
        for name, source, options, alpha in stills:
            run("avifenc", *options, source, out(name))
            reference = name.replace(".avif", ".ref.png")
            run("avifdec", "-d", "8", out(name), out(reference))
            width, height = Image.open(source).size
            manifest.append(dict(file=name, format="avif", width=width, height=height, alpha=alpha,
                                 frames=1, reference=reference))

        frames, durations = gif_frames(corpus("chelsea-animated.gif"), workdir)
        command = ["avifenc", "-s", "8", "--timescale", "1000"]
        for frame, duration in zip(frames, durations):
            command += ["--duration", str(duration), frame]
        run(*command, out("chelsea-animated.avif"))
        run("avifdec", "-d", "8", "--index", "0", out("chelsea-animated.avif"), out("chelsea-animated.avif.ref.png"))
        width, height = Image.open(frames[0]).size
        # avifenc gives a sequence an alpha plane even from RGB frames; Pillow tells what the file holds.
        sequence_alpha = "A" in Image.open(out("chelsea-animated.avif")).mode
        manifest.append(dict(file="chelsea-animated.avif", format="avif", width=width, height=height,
                             alpha=sequence_alpha, frames=len(frames), durationsMs=durations,
                             reference="chelsea-animated.avif.ref.png"))

        # JPEG XL ------------------------------------------------------------------------------
        jxl = [
            ("coffee.jxl", corpus("coffee-rgb.png"), ["-d", "1", "--container=0"], False),
            ("horse-alpha-container.jxl", corpus("horse-rgba.png"), ["-d", "0", "--container=1"], True),
            ("coffee-progressive.jxl", corpus("coffee-rgb.png"), ["-d", "1", "-p"], False),
        ]
        for name, source, options, alpha in jxl:
            run("cjxl", source, out(name), *options)
            reference = name.replace(".jxl", ".ref.png")
            run("djxl", out(name), out(reference), "--bits_per_sample=8")
            width, height = Image.open(source).size
            manifest.append(dict(file=name, format="jxl", width=width, height=height, alpha=alpha,
                                 frames=1, reference=reference))
        # cjxl reads APNG but not every GIF: the same frames and durations go through an APNG.
        apng = os.path.join(workdir, "chelsea.apng")
        first, *rest = [Image.open(frame) for frame in frames]
        first.save(apng, format="PNG", save_all=True, append_images=rest, duration=durations, loop=0)
        run("cjxl", apng, out("chelsea-animated.jxl"), "-d", "0")
        width, height = first.size
        manifest.append(dict(file="chelsea-animated.jxl", format="jxl", width=width, height=height,
                             alpha=False, frames=len(frames), durationsMs=durations))

        # Small files for the mutation tests (thousands of decodes each): 64 px wide, with alpha.
        small = os.path.join(workdir, "small-horse.png")
        Image.open(corpus("horse-rgba.png")).resize((64, 52), Image.LANCZOS).save(small)
        for name, command in [
            ("small-horse.avif", ["avifenc", "-s", "8", small, out("small-horse.avif")]),
            ("small-horse.jxl", ["cjxl", small, out("small-horse.jxl"), "-d", "1"]),
            ("small-horse-lossless.jxl", ["cjxl", small, out("small-horse-lossless.jxl"), "-d", "0"]),
        ]:
            run(*command)
            reference = name.rsplit(".", 1)[0] + ("" if name.endswith(".jxl") else ".avif") + ".ref.png"
            decoder = ["avifdec", "-d", "8", out(name), out(reference)] if name.endswith(".avif") else [
                "djxl", out(name), out(reference), "--bits_per_sample=8"]
            run(*decoder)
            manifest.append(dict(file=name, format=name.rsplit(".", 1)[1], width=64, height=52, alpha=True,
                                 frames=1, reference=reference))

        # Colour -------------------------------------------------------------------------------
        tool = os.path.join(workdir, "make-colour-fixtures")
        run("gcc", "-O1", "-o", tool, os.path.join(HERE, "tools", "make-colour-fixtures.c"), "-llcms2", "-ljpeg",
            "-lm")
        run(tool, HERE)
        # A CMYK JPEG XL with alpha (cmyk-test.icc embedded), which cjxl cannot make: libjxl's encoder API.
        cmyk_tool = os.path.join(workdir, "make-cmyk-jxl")
        run("gcc", "-O1", "-o", cmyk_tool, os.path.join(HERE, "tools", "make-cmyk-jxl.c"), "-ljxl")
        run(cmyk_tool, HERE)
        p3 = ImageCms.ImageCmsProfile(out("display-p3.icc"))
        srgb = ImageCms.createProfile("sRGB")
        coffee = Image.open(corpus("coffee-rgb.png")).convert("RGB")
        in_p3 = ImageCms.profileToProfile(coffee, srgb, p3, outputMode="RGB")
        icc = open(out("display-p3.icc"), "rb").read()
        in_p3.save(out("coffee-p3.jpg"), quality=95, icc_profile=icc)
        in_p3.save(out("coffee-p3.png"), icc_profile=icc)
        in_p3.save(out("coffee-p3.webp"), quality=95, icc_profile=icc)
        in_p3.save(out("coffee-p3.avif"), quality=95, icc_profile=icc)
        run("cjxl", out("coffee-p3.png"), out("coffee-p3.jxl"), "-d", "0")
        for name, format in [("coffee-p3.jpg", "jpeg"), ("coffee-p3.png", "png"), ("coffee-p3.webp", "webp"),
                             ("coffee-p3.avif", "avif"), ("coffee-p3.jxl", "jxl")]:
            manifest.append(dict(file=name, format=format, width=600, height=400, alpha=False, frames=1,
                                 profile="display-p3.icc"))
        # The same P3 pixels described by CICP (nclx: Display P3 primaries, sRGB curve) instead of a profile.
        run("avifenc", "-s", "6", "--ignore-icc", "--cicp", "12/13/6", out("coffee-p3.png"), out("coffee-p3-nclx.avif"))
        manifest.append(dict(file="coffee-p3-nclx.avif", format="avif", width=600, height=400, alpha=False,
                             frames=1))
        # sRGB under another name (Pillow's own sRGB profile): nothing to convert.
        srgb_bytes = ImageCms.ImageCmsProfile(srgb).tobytes()
        coffee.save(out("coffee-srgb-profile.png"), icc_profile=srgb_bytes)
        manifest.append(dict(file="coffee-srgb-profile.png", format="png", width=600, height=400, alpha=False,
                             frames=1))
        for name in ["cmyk-plain.jpg", "cmyk-adobe.jpg"]:
            manifest.append(dict(file=name, format="jpeg", width=256, height=192, alpha=False, frames=1,
                                 profile="cmyk-test.icc", adobe=name == "cmyk-adobe.jpg"))

        # A PNG with gAMA 1/1.8 and cHRM (the P3 primaries) and no profile: pixels encoded for that
        # gamma and those primaries, so a decoder that honours the chunks gets sRGB back.
        info = PngImagePlugin.PngInfo()
        info.add(b"gAMA", struct.pack(">I", round(100000 / 1.8)))
        chrm = [0.3127, 0.3290, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060]
        info.add(b"cHRM", struct.pack(">8I", *[round(v * 100000) for v in chrm]))
        gamma_image = Image.open(corpus("coffee-rgb.png")).convert("RGB")
        gamma_image.save(out("coffee-gamma18-p3chrm.png"), pnginfo=info)
        manifest.append(dict(file="coffee-gamma18-p3chrm.png", format="png", width=600, height=400, alpha=False,
                             frames=1, gamma=1 / 1.8, chromaticities=chrm))

        # Lanczos references: Pillow's LANCZOS (premultiplied for RGBA) on the corpus pixels.
        resizes = [("coffee-rgb.png", (150, 100)), ("coffee-rgb.png", (400, 267)), ("coffee-rgb.png", (900, 600)),
                   ("horse-rgba.png", (100, 82)), ("horse-rgba.png", (333, 273))]
        for source, size in resizes:
            name = f"{source.rsplit('.', 1)[0]}-lanczos-{size[0]}x{size[1]}.png"
            Image.open(corpus(source)).resize(size, Image.LANCZOS).save(out(name))
            manifest.append(dict(file=name, format="png", width=size[0], height=size[1],
                                 alpha=source == "horse-rgba.png", frames=1, resizedFrom=source))

    with open(out("manifest.json"), "w") as file:
        json.dump(manifest, file, indent=1)
        file.write("\n")


if __name__ == "__main__":
    sys.exit(main())
