"""Scans and photos for tests (issue 51), made as a scanner or a phone makes them: text drawn
on a white page with Pillow, then saved as the image formats or as an image-only PDF (Pillow
writes a PDF whose pages are its images: no text layer). Pillow's own scalable font, so that
no system font is needed.

Every function returns the file's bytes."""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Sequence

from PIL import Image, ImageDraw, ImageFilter, ImageFont

A4_AT_200_DPI = (1654, 2339)


def page_image(
    text: str, *, size: tuple[int, int] = A4_AT_200_DPI, font_size: int = 34, turn: int = 0
) -> Image.Image:
    """`text` (lines as given) on a white page, in black; turned `turn` degrees
    counter-clockwise, as a page fed sideways or upside down."""
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=font_size)
    draw.multiline_text((size[0] // 12, size[1] // 12), text, font=font, fill=0, spacing=14)
    if turn:
        image = image.rotate(turn, expand=True, fillcolor=255)
    return image


def degraded(image: Image.Image, *, skew: float = 1.5) -> Image.Image:
    """A page scanned a little askew and soft, as an office scanner leaves it."""
    return image.rotate(skew, expand=False, fillcolor=255).filter(ImageFilter.GaussianBlur(0.6))


def image_pdf(images: Sequence[Image.Image], *, dpi: int = 200) -> bytes:
    """An image-only PDF: one page per image, no text layer (what a scanner writes)."""
    out = io.BytesIO()
    first, *rest = [image.convert("RGB") for image in images]
    first.save(out, format="PDF", save_all=True, append_images=rest, resolution=dpi)
    return out.getvalue()


def image_file(images: Sequence[Image.Image], format: str) -> bytes:
    """The image(s) as PNG, JPEG or TIFF (every image a TIFF frame)."""
    out = io.BytesIO()
    first, *rest = images
    if format == "TIFF":
        first.save(out, format="TIFF", save_all=True, append_images=rest, compression="tiff_lzw")
    else:
        first.save(out, format=format)
    return out.getvalue()


def blank_pdf(pages: int = 1) -> bytes:
    """An image-only PDF of white pages: nothing to read, by text layer or by OCR."""
    return image_pdf([Image.new("L", A4_AT_200_DPI, 255) for _ in range(pages)])


# ---------------------------------------------------------------------------------------------
# Hostile images (issue 51, item 2): small files that would cost much if trusted


def png_declaring(width: int, height: int) -> bytes:
    """A PNG of about 100 bytes whose header declares `width` x `height` pixels (its data is
    one short row)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    data = zlib.compress(b"\x00" + b"\xff" * 64)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


def tiff_of_frames(frames: int) -> bytes:
    """A TIFF of `frames` 8 x 8 white frames, every frame's directory naming the same 8 bytes
    of pixels: 1 MB for 10,000 frames (Pillow takes minutes to write as many)."""
    pixels_at, first_at = 8, 16
    entries = [  # tag, type (3 SHORT, 4 LONG), value: an 8 x 8 one-bit strip, uncompressed
        (256, 3, 8), (257, 3, 8), (258, 3, 1), (259, 3, 1), (262, 3, 1),
        (273, 4, pixels_at), (278, 3, 8), (279, 4, 8),
    ]  # fmt: skip
    size = 2 + 12 * len(entries) + 4
    out = bytearray(b"II*\x00" + struct.pack("<I", first_at) + b"\xff" * 8)
    for frame in range(frames):
        at = first_at + frame * size
        following = at + size if frame + 1 < frames else 0
        out += struct.pack("<H", len(entries))
        for tag, kind, value in entries:
            out += struct.pack("<HHII", tag, kind, 1, value)
        out += struct.pack("<I", following)
    return bytes(out)


def image_pdf_of_pages(pages: int) -> bytes:
    """An image-only PDF of `pages` small white pages: every one a page for OCR."""
    return image_pdf([Image.new("L", (40, 40), 255)] * pages)


def truncated_jpeg(text: str = "A delivery docket, cut short.") -> bytes:
    """A JPEG photo of a page, its second half missing (an upload cut off)."""
    whole = image_file([page_image(text).convert("RGB")], "JPEG")
    return whole[: len(whole) // 2]
