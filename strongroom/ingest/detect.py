"""What an upload is, from its bytes (D42): the name only tells text formats apart.

PNG, JPEG and TIFF by their signatures (issue 51: read by OCR); an OLE2 compound file is a
legacy Excel workbook (a `Workbook` or `Book` stream) or an Outlook message (`__substg1.0_`
streams beside `__properties_version1.0`); a text whose first lines are RFC 5322 header
fields (`From:` and one of `Subject:`, `Date:`, `Message-ID:`, `MIME-Version:`, then a blank
line) is an email, whatever its name.

A PDF named `.txt` is a PDF and a text file named `.pdf` is text: content wins, the name is
kept as given (docs/decisions.md). Anything else binary is refused (400
`unsupported_file_type`).

Text is UTF-8 (with or without a BOM), UTF-16 with a BOM, or a legacy 8-bit encoding that
charset-normalizer recognises in the first MiB (a Windows-1252 CSV exported from Excel, say);
the charset is kept on the document's content type and used to read it.

A ZIP is told a DOCX or an XLSX by the names in its central directory, read here, in the API
process, so within fixed bounds (issue 44: zipfile read the whole index of an 82 MB upload of
a million entries, 420 MB of memory per upload): the end record first, then at most
`_MAX_ZIP_ENTRIES` entries and `_MAX_CENTRAL_DIRECTORY` bytes of the index, one pass, stopping
at the first name that tells. ZIP64 archives (more than 65,535 entries or 4 GiB, which no
Office document an upload may be comes near) and anything past a bound are no Office
document (400 `unsupported_file_type`)."""

from __future__ import annotations

import codecs
import re
import struct
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from strongroom.corpus.kinds import DocumentType
from strongroom.lazy import LazyModule

# Only a text upload without a declared charset needs the guess (issue 29: not every start).
charset_normalizer = LazyModule("charset_normalizer")
olefile = LazyModule("olefile")

_HEAD_BYTES = 8192
_GUESS_BYTES = 1024 * 1024
_READ_BYTES = 1024 * 1024
# Python codec names as HTTP charsets (IANA names); Python's codecs know these aliases too.
_IANA_NAMES = {
    "utf_8": "utf-8",
    "utf_16": "utf-16",
    "latin_1": "iso-8859-1",
    "mac_roman": "macintosh",
    "koi8_r": "koi8-r",
    **{f"cp125{n}": f"windows-125{n}" for n in range(9)},
    **{f"iso8859_{n}": f"iso-8859-{n}" for n in range(2, 17)},
}


@dataclass(frozen=True)
class Detected:
    type: DocumentType
    charset: str | None = None  # text types only: an IANA name Python's codecs know

    @property
    def content_type(self) -> str:
        base = self.type.content_type.split(";")[0]
        return f"{base}; charset={self.charset}" if self.charset else base


_TEXT_TYPES_BY_SUFFIX = {
    ".md": DocumentType.MARKDOWN,
    ".markdown": DocumentType.MARKDOWN,
    ".csv": DocumentType.CSV,
    ".html": DocumentType.HTML,
    ".htm": DocumentType.HTML,
}


def detect(path: Path, filename: str) -> Detected | None:
    """What the file at `path` is, or None when it is nothing we accept. Blocking (reads
    the file): call it through `asyncio.to_thread`."""
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
    if head.startswith(b"%PDF-"):
        return Detected(DocumentType.PDF)
    if head.startswith(b"PK\x03\x04"):
        office = _office_type(path)
        return Detected(office) if office else None
    image = _image_type(head)
    if image is not None:
        return Detected(image)
    if head.startswith(_OLE_SIGNATURE):
        compound = _compound_type(path)
        return Detected(compound) if compound else None
    charset = text_charset(path)
    if charset is None:
        return None
    decoded = _decoded_head(head, charset)
    if _looks_like_html(decoded):
        return Detected(DocumentType.HTML, charset)
    if _looks_like_email(decoded):
        return Detected(DocumentType.EML, charset)
    suffix = PurePosixPath(filename.lower()).suffix
    return Detected(_TEXT_TYPES_BY_SUFFIX.get(suffix, DocumentType.TEXT), charset)


def charset_of(content_type: str) -> str:
    """The `charset` parameter of a document's content type (UTF-8 when it has none)."""
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.strip().partition("=")
        if name.lower() == "charset" and value:
            return value.strip('"')
    return "utf-8"


def detect_type(path: Path, filename: str) -> DocumentType | None:
    detected = detect(path, filename)
    return detected.type if detected else None


def text_charset(path: Path) -> str | None:
    """The charset the file's text is written in, or None when it is not text."""
    with open(path, "rb") as handle:
        sample = handle.read(_GUESS_BYTES)
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16" if _is_text(path, "utf-16", nul_allowed=True) else None
    if _is_text(path, "utf-8"):
        return "utf-8"
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.reason == "unexpected end of data" and len(sample) < _GUESS_BYTES:
            return None  # UTF-8 cut inside its last character: truncated, not a legacy text
    guess = _legacy_encoding(sample)
    if guess is None:
        return None
    charset = _IANA_NAMES.get(guess, guess)
    return charset if _is_text(path, charset) else None


def _legacy_encoding(sample: bytes) -> str | None:
    """charset-normalizer's best guess; among guesses it cannot tell apart (cp1250 and
    cp1252 often read a Western text the same), Windows-1252, the most common one and the
    web's default for unlabelled text."""
    matches = charset_normalizer.from_bytes(sample)
    best = matches.best()
    if best is None or best.encoding in ("utf_8", "utf_16", "utf_32", "ascii"):
        return None
    tied = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    if any("cp1252" in match.could_be_from_charset for match in tied):
        return "cp1252"
    return best.encoding


# The ZIP records the detection reads (APPNOTE 4.3.16 and 4.3.12).
_END = struct.Struct("<4s4H2LH")  # signature, disks, entries here, entries, size, offset, comment
_END_SIGNATURE = b"PK\x05\x06"
_ENTRY = struct.Struct("<4s24sHHH12s")  # signature, ..., name, extra and comment lengths, ...
_ENTRY_SIGNATURE = b"PK\x01\x02"
_MAX_ZIP_ENTRIES = 10_000  # as strongroom.ingest.office_limits allows an Office package
_MAX_CENTRAL_DIRECTORY = 4 * 1024 * 1024
_OFFICE_PARTS = {
    b"word/document.xml": DocumentType.DOCX,
    b"xl/workbook.xml": DocumentType.XLSX,
    b"ppt/presentation.xml": DocumentType.PPTX,
}
_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", DocumentType.PNG),
    (b"\xff\xd8\xff", DocumentType.JPEG),
    (b"II*\x00", DocumentType.TIFF),
    (b"MM\x00*", DocumentType.TIFF),
)
_OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _office_type(path: Path) -> DocumentType | None:
    """DOCX, XLSX or PPTX by the part its central directory names, None for any other ZIP, a
    corrupt one, or one past the bounds above; reads at most 64 KiB + 4 MiB of the file."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            tail_start = max(0, size - (_END.size + 0xFFFF))
            handle.seek(tail_start)
            tail = handle.read()
            at = tail.rfind(_END_SIGNATURE)
            if at < 0 or len(tail) - at < _END.size:
                return None
            _, _, _, _, entries, directory_size, offset, _ = _END.unpack_from(tail, at)
            if entries == 0xFFFF or 0xFFFFFFFF in (directory_size, offset):
                return None  # ZIP64
            if entries > _MAX_ZIP_ENTRIES or directory_size > _MAX_CENTRAL_DIRECTORY:
                return None
            if offset + directory_size > tail_start + at:
                return None
            handle.seek(offset)
            directory = handle.read(directory_size)
    except OSError:
        return None
    return _named_part(directory, entries)


def _image_type(head: bytes) -> DocumentType | None:
    for signature, image in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return image
    return None


def _compound_type(path: Path) -> DocumentType | None:
    """XLS or MSG by the streams of an OLE2 compound file; None for any other (a Word 97
    document, a corrupt file). olefile reads the file's allocation tables and directory,
    bounded by the upload's size."""
    try:
        with olefile.OleFileIO(str(path)) as compound:
            streams = {entry[0] for entry in compound.listdir(streams=True, storages=True)}
    except Exception:  # olefile raises many kinds on a corrupt file: it is no document
        return None
    if "Workbook" in streams or "Book" in streams:
        return DocumentType.XLS
    if "__properties_version1.0" in streams and any(
        name.startswith("__substg1.0_") for name in streams
    ):
        return DocumentType.MSG
    return None


_HEADER_LINE = re.compile(r"^([A-Za-z0-9-]+):[ \t]?")
_EMAIL_FIELDS = {"subject", "date", "message-id", "mime-version"}


def _looks_like_email(head: str) -> bool:
    """The text opens with RFC 5322 header fields (folded lines allowed) up to a blank line,
    among them `From` and one of `_EMAIL_FIELDS`."""
    fields: set[str] = set()
    for line in head.removeprefix("\ufeff").splitlines():
        if not line.strip():
            return "from" in fields and bool(fields & _EMAIL_FIELDS)
        if line[0] in " \t" and fields:
            continue  # a folded field
        match = _HEADER_LINE.match(line)
        if match is None:
            return False
        fields.add(match.group(1).lower())
    return False  # the head ended before the header block did


def _named_part(directory: bytes, entries: int) -> DocumentType | None:
    position = 0
    for _ in range(entries):
        if len(directory) - position < _ENTRY.size:
            return None
        signature, _, name_length, extra_length, comment_length, _ = _ENTRY.unpack_from(
            directory, position
        )
        if signature != _ENTRY_SIGNATURE:
            return None
        name_start = position + _ENTRY.size
        found = _OFFICE_PARTS.get(directory[name_start : name_start + name_length])
        if found is not None:
            return found
        position = name_start + name_length + extra_length + comment_length
    return None


def _is_text(path: Path, charset: str, *, nul_allowed: bool = False) -> bool:
    """Valid in `charset` all the way through, with no NUL (none is encoded as a NUL byte
    but in UTF-16) and few control characters."""
    decoder = codecs.getincrementaldecoder(charset)()
    with open(path, "rb") as handle:
        while chunk := handle.read(_READ_BYTES):
            if b"\x00" in chunk and not nul_allowed:
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


def _decoded_head(head: bytes, charset: str) -> str:
    codec = "utf-8-sig" if charset == "utf-8" else charset
    return codecs.getincrementaldecoder(codec)(errors="replace").decode(head)


def _looks_like_html(head: str) -> bool:
    """The text opens (after a BOM, blank space, an XML declaration and comments) with
    `<!doctype html` or `<html`: a Markdown or plain text file that merely mentions `<html>`
    keeps its own type."""
    start = head.removeprefix("\ufeff").lstrip()
    while start.startswith(("<?xml", "<!--")):
        end = start.find("?>" if start.startswith("<?") else "-->")
        if end < 0:
            return False
        start = start[end:].partition(">")[2].lstrip()
    return start[:14].lower().startswith(("<!doctype html", "<html"))
