"""What OCR is asked to read (issue 51), apart from the engine: the extractors mark the pages
whose text must be recognised, and the API process names the engine, without importing
Tesseract, PDFium or Pillow (strongroom.ingest.ocr reads the pages, in a parsing child)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

from strongroom.ingest.chunking import Block
from strongroom.settings import Settings

ENGINE = "tesseract"


@dataclass(frozen=True, slots=True)
class ToRecognise:
    """A page whose text is in its image: a PDF page with no text layer, or a negligible one
    beside its images, or a frame of a PNG, JPEG or TIFF. `index` is the page's or frame's
    index in its file, from 0; `layer`, a PDF page's scant text layer, kept when OCR reads
    less."""

    index: int
    layer: str = ""


@dataclass(frozen=True)
class ReadPage:
    """What OCR read on one page: its blocks, by how many degrees it was turned upright, and
    whether Tesseract's deadline passed first (the page then counts as empty)."""

    blocks: list[Block]
    turned: int = 0
    gave_up: bool = False


# OCR's reading replaces a page's scant text layer only when it holds at least this many
# more letters: a cover page whose whole text is its short layer ("Owner only: Harbour
# Tower") is kept as written, not as read back from its pixels.
OCR_GAIN_LETTERS = 40


def letters(blocks: list[Block] | str) -> int:
    """Characters other than white space."""
    texts = [blocks] if isinstance(blocks, str) else [getattr(b, "text", b) for b in blocks]
    return sum(len(text) - sum(c.isspace() for c in text) for text in texts)


def page_text(wanted: ToRecognise, found: ReadPage) -> list[Block] | str:
    """What a page holds: OCR's reading, or its text layer when OCR did not read clearly
    more."""
    if found.blocks and letters(found.blocks) >= letters(wanted.layer) + OCR_GAIN_LETTERS:
        return found.blocks
    if found.blocks and not wanted.layer.strip():
        return found.blocks
    return wanted.layer


@dataclass(frozen=True)
class OcrLimits:
    """How much reading one document's images may cost (settings `ocr_*`)."""

    max_pages: int = 500
    max_pixels: int = 100_000_000  # what an image may declare (A0 at 300 dpi is 140 M)
    max_pixels_read: int = 12_000_000  # what is recognised: A4 at 300 dpi is 8.7 M
    dpi: int = 300
    page_seconds: float = 60.0

    @classmethod
    def from_settings(cls, settings: Settings) -> OcrLimits | None:
        """The limits, or None when OCR is off."""
        if settings.ocr == "off":
            return None
        return cls(
            max_pages=settings.ocr_max_pages,
            max_pixels=settings.ocr_max_image_pixels,
            dpi=settings.ocr_dpi,
            page_seconds=settings.ocr_page_seconds,
        )


def engine_description(settings: Settings) -> str:
    """What /readyz says of OCR: `off`, or the engine and its package's version."""
    if settings.ocr == "off":
        return "off"
    try:
        return f"{ENGINE} (tesserocr {metadata.version('tesserocr')})"
    except metadata.PackageNotFoundError:
        return f"{ENGINE} (not installed)"
