"""Writes the oriented test files of this folder (run with the conformance venv's Python, which has Pillow;
AVIF files need libavif's avifenc). Each file stores the same 48×32 picture: a red 16×16 marker in the
stored top-left corner on gray, so a test finds where the marker lands once the decoder turns it upright.

    .venv-conformance/bin/python3 Tests/Fixtures/orientation/make_orientation.py
"""

import subprocess
import tempfile
from pathlib import Path

from PIL import Image, PngImagePlugin

HERE = Path(__file__).resolve().parent


def picture():
    image = Image.new("RGB", (48, 32), (128, 128, 128))
    image.paste((255, 0, 0), (0, 0, 16, 16))
    return image


def exif(orientation):
    data = Image.Exif()
    data[0x0112] = orientation
    return data.tobytes()


def xmp(orientation):
    return (
        '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" '
        f'xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="{orientation}"/></rdf:RDF></x:xmpmeta>'
        '<?xpacket end="w"?>'
    ).encode()


def main():
    image = picture()
    for orientation in range(1, 9):
        image.save(HERE / f"jpeg-exif-{orientation}.jpg", quality=95, exif=exif(orientation))
    image.save(HERE / "jpeg-xmp-8.jpg", quality=95, xmp=xmp(8))
    # EXIF wins over XMP when both are there (ImageIO and Pillow read XMP only without an EXIF tag).
    image.save(HERE / "jpeg-exif-6-xmp-3.jpg", quality=95, exif=exif(6), xmp=xmp(3))
    image.save(HERE / "webp-exif-6.webp", lossless=True, exif=exif(6))
    image.save(HERE / "webp-xmp-7.webp", lossless=True, xmp=xmp(7))
    image.save(HERE / "png-exif-5.png", exif=exif(5))
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", xmp(6).decode())
    image.save(HERE / "png-xmp-6.png", pnginfo=info)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "picture.png"
        image.save(source)
        # irot 1 turns 90° anti-clockwise (EXIF 8); irot 1 then imir 1 (left-right) is EXIF 7.
        for name, flags in (("avif-irot1.avif", ["--irot", "1"]), ("avif-irot1-imir1.avif", ["--irot", "1", "--imir", "1"])):
            subprocess.run(["avifenc", "--lossless", *flags, str(source), str(HERE / name)], check=True,
                           capture_output=True)


if __name__ == "__main__":
    main()
