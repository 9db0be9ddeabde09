#!/usr/bin/env python3
"""Makes the placeholder fixtures and their reference hashes (vectors.json).

The small PNGs are corpus images box-averaged to fit 100x100 (ThumbHash's input limit), written without
colour chunks so every decoder reads the same bytes. The hashes come from the reference implementations,
run offline from their repositories:

  BLURHASH_REPO  a checkout of github.com/woltapp/blurhash: C/encode.c (blurHashForPixels) compiled with gcc
                 beside a small driver of ours that reads the PNGs with the repository's C/stb_image.h, 3
                 channels (alpha dropped), as its own front end C/encode_stb.c does (that one stops at 8
                 components; the library takes 9).
  THUMBHASH_REPO a checkout of github.com/evanw/thumbhash: js/thumbhash.js (rgbaToThumbHash), run by node
                 on the RGBA bytes this script decodes.

  BLURHASH_REPO=... THUMBHASH_REPO=... python3 make_vectors.py
"""
import json, os, struct, subprocess, sys, tempfile, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "corpus", "images")


def read_png(path):
    """(width, height, RGBA bytes) of an 8-bit, non-interlaced PNG of colour type 0, 2, 3, 4 or 6."""
    data = open(path, "rb").read()
    pos, idat, palette, trns = 8, b"", None, None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0, path
        elif kind == b"PLTE":
            palette = body
        elif kind == b"tRNS":
            trns = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = previous[x]
            c = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    rgba = bytearray()
    for line in rows:
        for x in range(width):
            px = line[x * channels:(x + 1) * channels]
            if colour == 0:
                rgba += bytes([px[0]] * 3 + [255])
            elif colour == 2:
                rgba += bytes(px) + b"\xff"
            elif colour == 3:
                alpha = trns[px[0]] if trns and px[0] < len(trns) else 255
                rgba += palette[px[0] * 3:px[0] * 3 + 3] + bytes([alpha])
            elif colour == 4:
                rgba += bytes([px[0]] * 3 + [px[1]])
            else:
                rgba += bytes(px)
    return width, height, bytes(rgba)


def box_fit(width, height, rgba, side=100):
    """Each output pixel the mean of the input pixels whose centres fall in it (straight alpha)."""
    scale = side / max(width, height)
    w, h = max(1, round(width * scale)), max(1, round(height * scale))
    sums = [[0] * 5 for _ in range(w * h)]
    for y in range(height):
        oy = min(h - 1, y * h // height)
        for x in range(width):
            ox, i = min(w - 1, x * w // width), (y * width + x) * 4
            cell = sums[oy * w + ox]
            for k in range(4):
                cell[k] += rgba[i + k]
            cell[4] += 1
    out = bytearray()
    for cell in sums:
        out += bytes((cell[k] + cell[4] // 2) // cell[4] for k in range(4))
    return w, h, bytes(out)


def write_png(path, width, height, rgba):
    rows = b"".join(b"\x00" + rgba[y * width * 4:(y + 1) * width * 4] for y in range(height))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    with open(path, "wb") as out:
        out.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def main():
    blurhash_repo, thumbhash_repo = os.environ["BLURHASH_REPO"], os.environ["THUMBHASH_REPO"]
    work = tempfile.mkdtemp()
    with open(os.path.join(work, "driver.c"), "w") as out:
        out.write(
            "#define STB_IMAGE_IMPLEMENTATION\n#include \"stb_image.h\"\n#include \"encode.h\"\n#include <stdio.h>\n"
            "int main(int argc, char **argv) {\n"
            "  int w, h, n; unsigned char *p = stbi_load(argv[3], &w, &h, &n, 3);\n"
            "  if (!p) return 1;\n"
            "  const char *hash = blurHashForPixels(atoi(argv[1]), atoi(argv[2]), w, h, p, w * 3);\n"
            "  if (!hash) return 1;\n"
            "  printf(\"%s\\n\", hash);\n"
            "  return 0;\n"
            "}\n")
    subprocess.run(
        ["gcc", "-O2", "-o", os.path.join(work, "blurhash_encoder"), "-I", os.path.join(blurhash_repo, "C"),
         os.path.join(blurhash_repo, "C", "encode.c"), os.path.join(work, "driver.c"), "-lm"],
        check=True)
    with open(os.path.join(work, "thumbhash.mjs"), "w") as out:
        out.write(open(os.path.join(thumbhash_repo, "js", "thumbhash.js")).read())
    with open(os.path.join(work, "run.mjs"), "w") as out:
        out.write(
            "import { rgbaToThumbHash } from './thumbhash.mjs'\n"
            "import { readFileSync } from 'fs'\n"
            "const [w, h, file] = process.argv.slice(2)\n"
            "const hash = rgbaToThumbHash(+w, +h, readFileSync(file))\n"
            "console.log(Buffer.from(hash).toString('hex').toUpperCase())\n")

    small = {"coffee-rgb.png": "coffee-100.png", "horse-palette-trns.png": "horse-alpha-100.png",
             "chelsea-palette.png": "chelsea-100.png", "camera-gray.png": "camera-100.png"}
    for source, name in small.items():
        write_png(os.path.join(HERE, name), *box_fit(*read_png(os.path.join(CORPUS, source))))

    vectors = {"blurhash": [], "thumbhash": []}
    blur_inputs = [(os.path.join("..", "corpus", "images", f), f) for f in small] + [(n, n) for n in small.values()]
    for relative, _ in blur_inputs:
        for x, y in [(4, 3), (1, 1), (9, 9), (3, 7)]:
            out = subprocess.run([os.path.join(work, "blurhash_encoder"), str(x), str(y), os.path.join(HERE, relative)],
                                 check=True, capture_output=True, text=True).stdout.strip()
            vectors["blurhash"].append({"file": relative, "x": x, "y": y, "hash": out})
    for name in small.values():
        w, h, rgba = read_png(os.path.join(HERE, name))
        raw = os.path.join(work, name + ".rgba")
        open(raw, "wb").write(rgba)
        out = subprocess.run(["node", os.path.join(work, "run.mjs"), str(w), str(h), raw],
                             check=True, capture_output=True, text=True).stdout.strip()
        vectors["thumbhash"].append({"file": name, "hash": out})
    with open(os.path.join(HERE, "vectors.json"), "w") as out:
        json.dump(vectors, out, indent=1)
        out.write("\n")


if __name__ == "__main__":
    sys.exit(main())
