"""Scans and photos for tests (issue 51), made as a scanner or a phone makes them: text drawn
on a white page with Pillow, then saved as the image formats or as an image-only PDF (Pillow
writes a PDF whose pages are its images: no text layer). Pillow's own scalable font, so that
no system font is needed.

Every function returns the file's bytes."""

from __future__ import annotations

import io
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
