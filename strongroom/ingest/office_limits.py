"""Bounds on a DOCX, XLSX or PPTX checked before any Office library parses it (issue 18): zip bombs
and documents whose XML would build a tree far larger than the file. The one guard for Office
archives: ingestion (strongroom.ingest.extract_office, `STRONGROOM_INGEST_MAX_*`) and template
fill (strongroom.templates.docx_fill, `STRONGROOM_TEMPLATE_MAX_*`) call `check_docx` /
`check_xlsx` / `check_pptx` on the file first; only a file that passes is handed to
python-docx, openpyxl or python-pptx.

What fails how, for the callers to map to their problem codes: a bomb (the archive declares
or inflates to more than its bound, or has too many members) raises ArchiveTooLarge; too many
XML tags or bytes of XML raise DocumentTooLarge; anything else unsound (encrypted, another
compression method, corrupt) UnreadableDocument, of which both are kinds.

Why the archive is inflated here rather than trusted: the sizes in a zip's headers are only
claims. zipfile stops a member's output at its declared size, but `ZipFile.read` (which
python-docx and openpyxl use) first inflates everything the member's deflate stream holds, up
to 1 GiB per call. So besides the sum of the claims, every member is inflated here in small
steps, and one that holds more than it claims is refused as soon as it does. Members must be
stored or deflated (the only methods Office Open XML allows; zipfile inflates bzip2 and LZMA
without any bound) and not encrypted.

Why tags are counted: a 154 KB DOCX can inflate to 100 MiB of `<w:p/>`, well within any
sensible inflated-size bound, yet python-docx builds a tree of 17 million elements from it
(2.4 GB). Every `<` of an XML member is a tag (XML text escapes it), so counting them while
inflating bounds the elements any parser could build, at the speed of `bytes.count`. Members
that are not XML (images) are not counted; worksheets of an XLSX are not either, as openpyxl
streams them (their cells are bounded while reading, strongroom.ingest.extract_office)."""

from __future__ import annotations

import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO

from lxml import etree

from strongroom.ingest.limits import Budget, DocumentTooLarge, UnreadableDocument

WORKSHEET_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
_CONTENT_TYPES = "[Content_Types].xml"
_CONTENT_TYPES_MAX_BYTES = 1024 * 1024
_INFLATE_STEP = 64 * 1024
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., file name length, extra length
_SAFE_XML = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
_LEADING = b" \t\r\n\xef\xbb\xbf"  # white space and a UTF-8 byte order mark
_MAX_MEMBERS = 10_000
_SLIDE_PART = re.compile(r"ppt/slides/slide[0-9]+\.xml")


class ArchiveTooLarge(UnreadableDocument):
    """A zip bomb: the archive declares or inflates to more than it may, or holds more
    members than an Office document needs. Ingestion reports it as unreadable (like any
    bomb), template fill as too large."""


def check_docx(
    path: Path, *, max_unzipped: int, max_xml_tags: int, max_xml_bytes: int | None = None
) -> None:
    """Refuse a DOCX that would expand past `max_unzipped` bytes (ArchiveTooLarge) or whose
    XML holds more than `max_xml_tags` tags or, given, `max_xml_bytes` bytes
    (DocumentTooLarge): python-docx parses every XML part of the package into one tree."""
    check_office_archive(
        path, max_unzipped=max_unzipped, max_xml_tags=max_xml_tags, max_xml_bytes=max_xml_bytes
    )


def check_xlsx(
    path: Path, *, max_unzipped: int, max_xml_tags: int, max_xml_bytes: int | None = None
) -> None:
    """`check_docx` for a workbook, its worksheets aside (read as a stream); its shared
    strings are counted, as openpyxl reads them whole."""
    check_office_archive(
        path,
        max_unzipped=max_unzipped,
        max_xml_tags=max_xml_tags,
        max_xml_bytes=max_xml_bytes,
        streamed_types=frozenset({WORKSHEET_TYPE}),
    )


def check_pptx(
    path: Path,
    *,
    max_unzipped: int,
    max_xml_tags: int,
    max_xml_bytes: int | None = None,
    max_slides: int | None = None,
) -> None:
    """`check_docx` for a presentation: python-pptx parses every XML part when it opens the
    package, so every part is counted. Given `max_slides`, a deck of more slide parts
    (`ppt/slides/slide*.xml`) is DocumentTooLarge before anything is inflated: each slide is
    a page, and a deck of 100,000 empty slides costs a parse and a page each while its tags
    alone may pass."""
    if max_slides is not None:
        _check_slide_count(path, max_slides)
    check_office_archive(
        path, max_unzipped=max_unzipped, max_xml_tags=max_xml_tags, max_xml_bytes=max_xml_bytes
    )


def _check_slide_count(path: Path, max_slides: int) -> None:
    with zipfile.ZipFile(path) as archive:
        slides = sum(1 for name in archive.namelist() if _SLIDE_PART.fullmatch(name))
    if slides > max_slides:
        raise DocumentTooLarge(f"The presentation has more than {max_slides:,} slides.")


def check_office_archive(
    path: Path,
    *,
    max_unzipped: int,
    max_xml_tags: int,
    max_xml_bytes: int | None = None,
    streamed_types: frozenset[str] = frozenset(),
) -> None:
    """Inflate every member of the archive at `path` in small steps: refuse one that is
    encrypted, compressed otherwise than deflate, holds other than it declares, or makes the
    archive pass `max_unzipped` bytes; count the tags (and bytes, against `max_xml_bytes`
    when given) of XML members whose content type is not in `streamed_types`. Raises
    zipfile.BadZipFile for a file that is not a zip archive at all."""
    xml = _XmlBudget(max_xml_tags, max_xml_bytes)
    with zipfile.ZipFile(path) as archive, open(path, "rb") as raw:
        members = archive.infolist()
        if len(members) > _MAX_MEMBERS:
            raise ArchiveTooLarge(f"The file has more than {_MAX_MEMBERS:,} archive members.")
        total = sum(info.file_size for info in members)
        if total > max_unzipped:
            raise ArchiveTooLarge(
                f"The file expands to {total} bytes, more than the limit of {max_unzipped}."
            )
        for info in members:
            _check_method(info)
        types = _ContentTypes({}, {})
        if streamed_types:
            types = _content_types(archive, raw)
        for info in members:
            counted = xml if types.of(info.filename) not in streamed_types else None
            _read_member(raw, info, counted)


class _XmlBudget:
    """The XML tags and bytes read so far, across the archive's counted members."""

    def __init__(self, max_tags: int, max_bytes: int | None) -> None:
        self.tags = Budget(max_tags, "XML tags")
        self.bytes = Budget(max_bytes, "bytes of XML") if max_bytes is not None else None

    def spend(self, piece: bytes) -> None:
        self.tags.spend(piece.count(b"<"))
        if self.bytes is not None:
            self.bytes.spend(len(piece))


class _ContentTypes:
    def __init__(self, defaults: dict[str, str], overrides: dict[str, str]) -> None:
        self.defaults = defaults
        self.overrides = overrides

    def of(self, name: str) -> str | None:
        override = self.overrides.get("/" + name.lower())
        if override is not None:
            return override
        return self.defaults.get(name.rpartition(".")[2].lower())


def _content_types(archive: zipfile.ZipFile, raw: BinaryIO) -> _ContentTypes:
    try:
        info = archive.getinfo(_CONTENT_TYPES)
    except KeyError:
        return _ContentTypes({}, {})
    if info.file_size > _CONTENT_TYPES_MAX_BYTES:
        raise UnreadableDocument(f"The archive's {_CONTENT_TYPES} is implausibly large.")
    _read_member(raw, info, None)  # before zipfile inflates it: it may lie about its size
    try:
        root = etree.fromstring(archive.read(info), _SAFE_XML)
    except etree.XMLSyntaxError as error:
        raise UnreadableDocument(f"The archive's {_CONTENT_TYPES} is not XML.") from error
    defaults, overrides = {}, {}
    for element in root:
        tag = str(element.tag).rpartition("}")[2]
        content_type = element.get("ContentType", "")
        if tag == "Default":
            defaults[element.get("Extension", "").lower()] = content_type
        elif tag == "Override":
            overrides[element.get("PartName", "").lower()] = content_type
    return _ContentTypes(defaults, overrides)


def _inflated(raw: BinaryIO, info: zipfile.ZipInfo):
    """The member's bytes, `_INFLATE_STEP` at a time, never more than its header declares
    plus one step (then UnreadableDocument)."""
    if info.compress_type == zipfile.ZIP_STORED:
        raw.seek(_data_offset(raw, info))
        left = info.file_size
        while left:
            piece = raw.read(min(_INFLATE_STEP, left))
            if not piece:
                raise UnreadableDocument(f"The archive member {info.filename!r} is corrupt.")
            left -= len(piece)
            yield piece
        return
    raw.seek(_data_offset(raw, info))
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    left, produced, pending = info.compress_size, 0, b""
    while not inflater.eof:
        if not pending:
            pending = raw.read(min(_INFLATE_STEP, left))
            if not pending:
                break
            left -= len(pending)
        piece = inflater.decompress(pending, _INFLATE_STEP)
        pending = inflater.unconsumed_tail
        produced += len(piece)
        if produced > info.file_size:
            raise ArchiveTooLarge(
                f"The archive member {info.filename!r} holds more than the "
                f"{info.file_size} bytes its header declares."
            )
        yield piece
    rest = inflater.flush()
    if produced + len(rest) != info.file_size:
        raise UnreadableDocument(f"The archive member {info.filename!r} is corrupt.")
    if rest:
        yield rest


def _data_offset(raw: BinaryIO, info: zipfile.ZipInfo) -> int:
    raw.seek(info.header_offset)
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
    if signature != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename!r}")
    return info.header_offset + _LOCAL_HEADER.size + name_length + extra_length


def _check_method(info: zipfile.ZipInfo) -> None:
    if info.flag_bits & 0x1:
        raise UnreadableDocument(f"The archive member {info.filename!r} is encrypted.")
    if info.compress_type == zipfile.ZIP_STORED:
        if info.compress_size != info.file_size:
            raise UnreadableDocument(f"The archive member {info.filename!r} is corrupt.")
    elif info.compress_type != zipfile.ZIP_DEFLATED:
        raise UnreadableDocument(
            f"The archive member {info.filename!r} uses compression method "
            f"{info.compress_type}, which Office documents do not use."
        )


def _read_member(raw: BinaryIO, info: zipfile.ZipInfo, xml: _XmlBudget | None) -> None:
    """Inflate the member (UnreadableDocument if it is not what it declares) and, with
    `xml`, count its tags and bytes if it is XML (its first byte past white space is `<`)."""
    is_xml: bool | None = None if xml is not None else False
    for piece in _inflated(raw, info):
        if is_xml is None:
            start = piece.lstrip(_LEADING)
            if not start:
                continue
            is_xml = start.startswith(b"<")
        if is_xml:
            xml.spend(piece)
