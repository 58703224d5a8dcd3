"""What an upload is, from its bytes (D42): the name only tells text formats apart.

A PDF named `.txt` is a PDF and a text file named `.pdf` is text: content wins, the name is
kept as given (docs/decisions.md). Anything else binary is refused (400
`unsupported_file_type`)."""

from __future__ import annotations

import codecs
import zipfile
from pathlib import Path, PurePosixPath

from strongroom.vault.models import DocumentType

_HEAD_BYTES = 8192
_TEXT_TYPES_BY_SUFFIX = {
    ".md": DocumentType.MARKDOWN,
    ".markdown": DocumentType.MARKDOWN,
    ".csv": DocumentType.CSV,
    ".html": DocumentType.HTML,
    ".htm": DocumentType.HTML,
}


def detect_type(path: Path, filename: str) -> DocumentType | None:
    """The document type of the file at `path`, or None when it is none we accept.
    Blocking (reads the file): call it through `asyncio.to_thread`."""
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
    if head.startswith(b"%PDF-"):
        return DocumentType.PDF
    if head.startswith(b"PK\x03\x04"):
        return _office_type(path)
    if not _is_utf8_text(path):
        return None
    if _looks_like_html(head):
        return DocumentType.HTML
    suffix = PurePosixPath(filename.lower()).suffix
    return _TEXT_TYPES_BY_SUFFIX.get(suffix, DocumentType.TEXT)


def _office_type(path: Path) -> DocumentType | None:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return None
    if "word/document.xml" in names:
        return DocumentType.DOCX
    if "xl/workbook.xml" in names:
        return DocumentType.XLSX
    return None


def _is_utf8_text(path: Path) -> bool:
    """Valid UTF-8 all the way through, with no NUL and few control characters."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    with open(path, "rb") as handle:
        while chunk := handle.read(1024 * 1024):
            if b"\x00" in chunk:
                return False
            try:
                text = decoder.decode(chunk)
            except UnicodeDecodeError:
                return False
            controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f")
            if controls > len(text) // 100:
                return False
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return False
    return True


def _looks_like_html(head: bytes) -> bool:
    """The text opens (after a BOM, blank space, an XML declaration and comments) with
    `<!doctype html` or `<html`: a Markdown or plain text file that merely mentions `<html>`
    keeps its own type."""
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    while start.startswith((b"<?xml", b"<!--")):
        end = start.find(b"?>" if start.startswith(b"<?") else b"-->")
        if end < 0:
            return False
        start = start[end:].partition(b">")[2].lstrip()
    return start[:14].lower().startswith((b"<!doctype html", b"<html"))
