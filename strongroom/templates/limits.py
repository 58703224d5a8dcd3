"""Bounds on what reading a DOCX template may cost (issue 18), checked before python-docx
loads it, while streaming the archive: nothing is inflated or parsed whole here.

- the members' declared sizes add up to at most `max_unzipped_bytes`, and no member inflates
  to more than it declares (the deflate stream is inflated in small steps and counted, so a
  member lying about its size is caught as soon as it does);
- the XML parts (`*.xml`, `*.rels`) inflate to at most `max_xml_bytes` together and hold at
  most `max_xml_elements` elements together, counted by a SAX-style lxml parser that builds
  no tree (a 154 KB DOCX holding 100 MiB of `<w:p/>` is refused after reading a few MB:
  python-docx would have built an lxml tree of twenty million elements, several GB);
- members are stored or deflated (the only methods Office Open XML uses) and not encrypted.

The vault's ingestion has its own guard for documents (strongroom/vault); the two may be
unified into one module later.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from lxml import etree

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra length
_LOCAL_SIGNATURE = b"PK\x03\x04"
_READ_BYTES = 64 * 1024
_INFLATE_STEP = 1024 * 1024
_MAX_MEMBERS = 10_000


class TemplateError(Exception):
    """The file is not a readable DOCX (not a zip, corrupt, not Word)."""


class TemplateTooLarge(TemplateError):
    """The DOCX is readable but would cost more than the limits allow to read."""


@dataclass(frozen=True)
class TemplateLimits:
    max_unzipped_bytes: int = 64 * 1024 * 1024
    max_xml_bytes: int = 32 * 1024 * 1024
    max_xml_elements: int = 500_000


def check_template(path: Path, limits: TemplateLimits) -> None:
    """Raise TemplateTooLarge when reading the DOCX at `path` would pass `limits`, and
    TemplateError when it is not a sound zip archive. Blocking; memory stays bounded."""
    try:
        with zipfile.ZipFile(path) as archive, open(path, "rb") as raw:
            members = archive.infolist()
            if len(members) > _MAX_MEMBERS:
                raise TemplateTooLarge(f"The file has more than {_MAX_MEMBERS} archive members.")
            declared = sum(info.file_size for info in members)
            if declared > limits.max_unzipped_bytes:
                raise TemplateTooLarge(
                    f"The file expands to {declared} bytes, more than the limit of "
                    f"{limits.max_unzipped_bytes} bytes."
                )
            counter = _XmlBudget(limits)
            for info in members:
                _check_member(raw, info, counter)
    except zipfile.BadZipFile as error:
        raise TemplateError("The file is not a readable zip archive.") from error


class _XmlBudget:
    """The XML bytes and elements read so far, across the template's parts."""

    def __init__(self, limits: TemplateLimits) -> None:
        self.limits = limits
        self.bytes = 0
        self.elements = 0

    def parser(self, name: str) -> etree.XMLParser:
        return etree.XMLParser(
            target=_ElementCounter(self, name),
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
        )

    def add_bytes(self, count: int) -> None:
        self.bytes += count
        if self.bytes > self.limits.max_xml_bytes:
            raise TemplateTooLarge(
                f"The template's XML expands to more than the limit of "
                f"{self.limits.max_xml_bytes} bytes."
            )

    def add_element(self) -> None:
        self.elements += 1
        if self.elements > self.limits.max_xml_elements:
            raise TemplateTooLarge(
                f"The template has more than the limit of {self.limits.max_xml_elements} "
                "XML elements."
            )


class _ElementCounter:
    """An lxml parser target: counts elements, keeps nothing."""

    def __init__(self, budget: _XmlBudget, name: str) -> None:
        self.budget = budget
        self.name = name

    def start(self, tag, attrib) -> None:
        self.budget.add_element()

    def close(self) -> None:
        return None


def _check_member(raw: BinaryIO, info: zipfile.ZipInfo, budget: _XmlBudget) -> None:
    name = info.filename
    if info.flag_bits & 0x1:
        raise TemplateError(f"The archive member {name!r} is encrypted.")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise TemplateError(
            f"The archive member {name!r} uses compression method {info.compress_type}, "
            "which Office documents do not use."
        )
    is_xml = name.endswith((".xml", ".rels"))
    parser = budget.parser(name) if is_xml else None
    produced = 0
    for piece in _inflated(raw, info):
        produced += len(piece)
        if produced > info.file_size:
            raise TemplateTooLarge(
                f"The archive member {name!r} expands to more than the {info.file_size} "
                "bytes it declares."
            )
        if parser is not None:
            budget.add_bytes(len(piece))
            _feed(parser, name, piece)
    if parser is not None:
        _feed(parser, name, None)


def _feed(parser: etree.XMLParser, name: str, piece: bytes | None) -> None:
    try:
        if piece is None:
            parser.close()
        else:
            parser.feed(piece)
    except TemplateTooLarge:
        raise
    except etree.XMLSyntaxError as error:
        raise TemplateError(f"The archive member {name!r} is not well-formed XML.") from error


def _inflated(raw: BinaryIO, info: zipfile.ZipInfo):
    """The member's bytes, inflated step by step from its raw data in the archive."""
    raw.seek(info.header_offset)
    header = raw.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size:
        raise TemplateError(f"The archive member {info.filename!r} is corrupt.")
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    if signature != _LOCAL_SIGNATURE:
        raise TemplateError(f"The archive member {info.filename!r} is corrupt.")
    raw.seek(name_length + extra_length, 1)
    remaining = info.compress_size
    inflater = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
    while True:
        if inflater is not None and inflater.unconsumed_tail:
            pending = inflater.unconsumed_tail
        elif remaining > 0:
            pending = raw.read(min(_READ_BYTES, remaining))
            if not pending:
                raise TemplateError(f"The archive member {info.filename!r} is truncated.")
            remaining -= len(pending)
        elif inflater is None:
            return
        else:
            pending = b""  # all input read: what the inflater still holds
        if inflater is None:
            yield pending
            continue
        try:
            piece = inflater.decompress(pending, _INFLATE_STEP)
        except zlib.error as error:
            raise TemplateError(f"The archive member {info.filename!r} is corrupt.") from error
        if piece:
            yield piece
        if inflater.eof or (not pending and not piece):
            return
