"""A scanned copy of a corpus document (issue 51): its text as Strongroom reads it, printed 45
lines of 78 characters to an A4 page, scanned askew and soft, one page in ten upside down or
sideways, as an image-only PDF: every word must come back through OCR."""

from __future__ import annotations

import textwrap
from pathlib import Path

from strongroom.ingest.detect import detect
from strongroom.ingest.extract import extract_pages
from tests.scans import degraded, image_pdf, page_image

LINES_A_PAGE, CHARACTERS_A_LINE = 45, 78
_TURNS = {3: 180, 7: 90}  # by page number modulo 10


def printed_pages(text_pages: list[str]) -> list[str]:
    """Paragraphs wrapped, a blank line between them, a page over as many as it needs."""
    printed: list[str] = []
    for text in text_pages:
        lines: list[str] = []
        for paragraph in text.split("\n\n"):
            for line in paragraph.splitlines():
                lines += textwrap.wrap(line, CHARACTERS_A_LINE) or [""]
            lines.append("")
        printed += [
            "\n".join(lines[i : i + LINES_A_PAGE]) for i in range(0, len(lines), LINES_A_PAGE)
        ]
    return [page for page in printed if page.strip()]


def scanned_copy(path: Path) -> bytes:
    """The document at `path` as a scanner would give it back."""
    detected = detect(path, path.name)
    if detected is None:
        raise ValueError(f"{path.name} is no document Strongroom reads")
    printed = printed_pages(extract_pages(path, detected.type, charset=detected.charset or "utf-8"))
    return image_pdf([
        degraded(page_image(page, font_size=26, turn=_TURNS.get(number % 10, 0)))
        for number, page in enumerate(printed)
    ])  # fmt: skip
