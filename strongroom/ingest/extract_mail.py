"""Emails as pages (issue 51): an RFC 5322 message (.eml) or an Outlook message (.msg).

The first page is the message: a block each for `From:`, `To:`, `Cc:` (when there is one),
`Date:` (ISO 8601 when the date parses) and `Subject:`, then the body's paragraphs, each a
block; the HTML body is read (as its visible text) only when there is no plain one. Then
each attachment the caller can read (`read_attachment(data, filename)` gives its pages, or
None for a file Strongroom does not read): its pages, each opened by a block naming it,
`Attachment: report.pdf`, or `Attachment: report.pdf (page 2 of 3)` when it has several.
An Outlook message attached to an Outlook message is read here, its own first page only (its
attachments are not: one level of nesting). Images embedded in the body (inline, with a
Content-ID: logos, signatures) are not attachments.

Bounds, as for any document: the text of the whole email, attachments included, is counted
against `max_text_chars`; the bytes of its attachments against `max_unzipped_bytes` (an
email is a package of files, as an Office archive is); at most `MAX_ATTACHMENTS`
attachments and `MAX_PARTS` MIME parts (DocumentTooLarge, counted while the message is
parsed, so 10,000 parts stop at the first past the bound), nested at most `MAX_DEPTH` deep
(UnreadableDocument: no mail client nests so, and the stdlib parser recurses per level).

An .msg is read with olefile, its MAPI properties from their streams ([MS-OXMSG]): no
library for it is a dependency (extract-msg is GPL)."""

from __future__ import annotations

import codecs
import datetime
import email
import email.policy
import mimetypes
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path

import olefile

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.chunking import Block, Page, Row
from strongroom.ingest.extract_html import html_text_blocks
from strongroom.ingest.limits import Budget, DocumentTooLarge, IngestLimits, UnreadableDocument

ReadAttachment = Callable[[bytes, str], "list[Page] | None"]

MAX_PARTS = 1_000
MAX_DEPTH = 20
MAX_ATTACHMENTS = 50
_MAX_NAME_CHARS = 255
_PARAGRAPHS = re.compile(r"\n[ \t\r]*\n")
_WHITE_SPACE = re.compile(r"\s+")


@dataclass
class _Attachment:
    """An attachment to read when its turn comes: its bytes (`data`, `size` of them), or,
    for a message embedded in an Outlook message, its pages (`pages`)."""

    name: str
    size: int = 0
    data: Callable[[], bytes] | None = None
    pages: Callable[[], list[Page]] | None = None


@dataclass
class _Mail:
    fields: list[tuple[str, str]]
    body: Iterable[Block]
    attachments: list[_Attachment] = field(default_factory=list)


def email_pages(
    path: Path,
    document_type: DocumentType,
    limits: IngestLimits,
    read_attachment: ReadAttachment,
) -> Iterator[Page]:
    """The pages of the .eml (DocumentType.EML) or .msg (DocumentType.MSG) at `path`: the
    message, then its readable attachments. Raises DocumentTooLarge past a bound,
    UnreadableDocument for a file that is not a sound message of its type."""
    text = Budget.text_of(limits)
    sizes = Budget(limits.max_unzipped_bytes, "bytes of attachments")
    with _opened(path, document_type, limits) as mail:
        if len(mail.attachments) > MAX_ATTACHMENTS:
            raise DocumentTooLarge(f"The email has more than {MAX_ATTACHMENTS} attachments.")
        yield list(_counted(_message_blocks(mail), text))
        for attachment in mail.attachments:
            sizes.spend(attachment.size)
            if attachment.pages is not None:
                pages = attachment.pages()
            else:
                pages = read_attachment(attachment.data(), attachment.name)
            for number, page in enumerate(pages or (), start=1):
                label = f"Attachment: {attachment.name}"
                if len(pages) > 1:
                    label += f" (page {number} of {len(pages)})"
                yield _counted(_labelled(label, page), text)


@contextmanager
def _opened(path: Path, document_type: DocumentType, limits: IngestLimits) -> Iterator[_Mail]:
    if document_type is DocumentType.EML:
        yield _eml(path)
    elif document_type is DocumentType.MSG:
        with _compound(path) as ole:
            yield _msg(_Storage(ole, [], limits))
    else:
        raise ValueError(f"{document_type} is not an email type")


def _message_blocks(mail: _Mail) -> Iterator[Block]:
    for name, value in mail.fields:
        value = _WHITE_SPACE.sub(" ", value).strip()
        if value:
            yield f"{name}: {value}"
    yield from mail.body


def _labelled(label: str, page: Page) -> Iterator[Block]:
    yield label
    yield from [page] if isinstance(page, str) else page


def _counted(blocks: Iterable[Block], text: Budget) -> Iterator[Block]:
    """The blocks, each spent from `text` before it is passed on."""
    for block in blocks:
        text.spend(len(block.text) if isinstance(block, Row) else len(block))
        yield block


def _paragraphs(body: str) -> Iterator[str]:
    """A plain body's paragraphs (apart by blank lines), each a block."""
    for paragraph in _PARAGRAPHS.split(body.replace("\r\n", "\n")):
        if paragraph.strip():
            yield paragraph.strip("\n")


def _clean_name(name: str) -> str:
    """A file name fit for a block: one line, cut to `_MAX_NAME_CHARS` characters."""
    return _WHITE_SPACE.sub(" ", name).strip()[:_MAX_NAME_CHARS]


def _iso(moment: datetime.datetime | None) -> str | None:
    return moment.isoformat(sep=" ") if moment is not None else None


# RFC 5322 (.eml)


class _CountedMessage(EmailMessage):
    """A MIME part that counts itself while the parser makes it: `email` builds every part
    of a message before a caller sees any, so the bound must stop the parser itself."""

    made = 0

    def __init__(self, *args, **kwargs) -> None:
        type(self).made += 1
        if type(self).made > MAX_PARTS:
            raise DocumentTooLarge(f"The email has more than {MAX_PARTS:,} MIME parts.")
        super().__init__(*args, **kwargs)


def _parsed(path: Path) -> EmailMessage:
    """The message at `path`, parsed whole (its size is the upload's), at most `MAX_PARTS`
    parts and `MAX_DEPTH` levels of them."""
    counted = type("_Counting", (_CountedMessage,), {"made": 0})  # a count per file
    policy = email.policy.default.clone(message_factory=counted)
    try:
        with open(path, "rb") as handle:
            message = email.message_from_binary_file(handle, policy=policy)
    except RecursionError as error:
        raise UnreadableDocument(f"The email nests more than {MAX_DEPTH} parts deep.") from error
    _check_depth(message)
    return message


def _check_depth(message: EmailMessage) -> None:
    """Walk the parts without recursion (the stdlib's `walk` recurses), refusing a tree
    deeper than `MAX_DEPTH`; after it, the stdlib's recursive helpers are safe to call."""
    stack = [(message, 0)]
    while stack:
        part, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UnreadableDocument(f"The email nests more than {MAX_DEPTH} parts deep.")
        if part.is_multipart():
            stack.extend((child, depth + 1) for child in part.get_payload())


def _eml(path: Path) -> _Mail:
    message = _parsed(path)
    date = message["Date"]
    moment = getattr(date, "datetime", None) if date is not None else None
    fields = [
        ("From", str(message["From"] or "")),
        ("To", str(message["To"] or "")),
        ("Cc", str(message["Cc"] or "")),
        ("Date", _iso(moment) or str(date or "")),
        ("Subject", str(message["Subject"] or "")),
    ]
    body = message.get_body(preferencelist=("plain", "html"))
    return _Mail(fields, _eml_body(body), _eml_attachments(message, body))


def _eml_body(part: EmailMessage | None) -> Iterator[Block]:
    if part is None:
        return
    content = _part_text(part)
    if part.get_content_subtype() == "html":
        yield from html_text_blocks(content)
    else:
        yield from _paragraphs(content)


def _part_text(part: EmailMessage) -> str:
    """A text part's content; one in a charset Python does not know as UTF-8, its errors
    replaced (a body is not refused for its label)."""
    try:
        return part.get_content()
    except LookupError:
        return (part.get_payload(decode=True) or b"").decode("utf-8", "replace")


def _eml_attachments(message: EmailMessage, body: EmailMessage | None) -> list[_Attachment]:
    """The parts sent as files, in order: leaves (and attached messages, whole) that are
    not the body and that are marked as attachments or named, inline images with a
    Content-ID aside. Their bytes are decoded only when read."""
    found: list[_Attachment] = []
    stack = [message]
    while stack:
        part = stack.pop()
        is_message = part.get_content_type() == "message/rfc822"
        if part.is_multipart() and not is_message:
            stack.extend(reversed(part.get_payload()))
            continue
        if part is body or not _is_attachment(part, is_message):
            continue
        found.append(_eml_attachment(part, is_message, len(found) + 1))
    return found


def _is_attachment(part: EmailMessage, is_message: bool) -> bool:
    disposition = part.get_content_disposition()
    if (
        part.get_content_maintype() == "image"
        and part["Content-ID"]
        and disposition != "attachment"
    ):
        return False
    return is_message or disposition == "attachment" or bool(part.get_filename())


def _eml_attachment(part: EmailMessage, is_message: bool, number: int) -> _Attachment:
    name = part.get_filename()
    if not name:
        extension = ".eml" if is_message else mimetypes.guess_extension(part.get_content_type())
        name = f"attachment {number}{extension or ''}"
    if is_message:
        data = part.get_payload(0).as_bytes()
        return _Attachment(_clean_name(name), len(data), data=lambda: data)
    encoded = part.get_payload()
    size = len(encoded) if isinstance(encoded, str) else 0
    return _Attachment(_clean_name(name), size, data=lambda: part.get_payload(decode=True) or b"")


# Outlook (.msg): [MS-OXMSG] properties in an OLE2 compound file

_STRING, _STRING8, _BINARY, _OBJECT = "001F", "001E", "0102", "000D"
_PT_LONG, _PT_SYSTIME, _PT_BOOLEAN = 0x0003, 0x0040, 0x000B
_PROPERTIES = "__properties_version1.0"
_ATTACHMENT_PREFIX = "__attach_version1.0_#"
_MAX_PROPERTIES_BYTES = 1024 * 1024
_FILETIME_EPOCH = datetime.datetime(1601, 1, 1, tzinfo=datetime.UTC)
_SUBJECT, _SENDER_NAME, _SENDER_ADDRESS, _SENDER_SMTP = "0037", "0C1A", "0C1F", "5D01"
_DISPLAY_TO, _DISPLAY_CC, _BODY, _HTML = "0E04", "0E03", "1000", "1013"
_DELIVERY_TIME, _SUBMIT_TIME = 0x0E06, 0x0039
_CODEPAGE, _INTERNET_CODEPAGE = 0x3FFD, 0x3FDE
_ATTACH_DATA, _ATTACH_LONG_NAME, _ATTACH_NAME = "3701", "3707", "3704"
_ATTACH_METHOD, _ATTACH_CONTENT_ID, _ATTACH_HIDDEN = 0x3705, "3712", 0x7FFE
_EMBEDDED_MESSAGE = 5


@contextmanager
def _compound(path: Path) -> Iterator[olefile.OleFileIO]:
    """The compound file at `path`, opened strictly: olefile reads a truncated or corrupt
    file as far as it can by default (a message cut in half read as an empty email); here
    any defect of the format is UnreadableDocument, when opening or reading a stream."""
    with _unsound():
        ole = olefile.OleFileIO(str(path), raise_defects=olefile.DEFECT_INCORRECT)
    try:
        yield ole
    finally:
        ole.close()


@contextmanager
def _unsound() -> Iterator[None]:
    try:
        yield
    except (UnreadableDocument, MemoryError):
        raise
    except Exception as error:  # olefile raises many kinds on a corrupt file
        raise UnreadableDocument("The file could not be read as msg.") from error


class _Storage:
    """A message's (or an attachment's) storage in the compound file: its properties, read
    as streams, each bounded before it is read."""

    def __init__(self, ole: olefile.OleFileIO, prefix: list[str], limits: IngestLimits) -> None:
        self.ole, self.prefix, self.limits = ole, prefix, limits
        self._fixed: dict[int, bytes] | None = None

    def child(self, name: str) -> _Storage:
        return _Storage(self.ole, [*self.prefix, name], self.limits)

    def _stream(self, name: str, max_bytes: int) -> bytes | None:
        path = [*self.prefix, name]
        if not self.has(name, olefile.STGTY_STREAM):
            return None
        if self.ole.get_size(path) > max_bytes:
            raise DocumentTooLarge(f"The message's stream {name!r} is larger than it may be.")
        with _unsound():
            return self.ole.openstream(path).read()

    def string(self, tag: str) -> str | None:
        """A string property: UTF-16 (`001F`) or in the message's code page (`001E`)."""
        max_bytes = 2 * self.limits.max_text_chars
        data = self._stream(f"__substg1.0_{tag}{_STRING}", max_bytes)
        if data is not None:
            return data.decode("utf-16-le", "replace").rstrip("\x00")
        data = self._stream(f"__substg1.0_{tag}{_STRING8}", max_bytes)
        if data is not None:
            return data.decode(self.codepage(), "replace").rstrip("\x00")
        return None

    def binary(self, tag: str) -> bytes | None:
        return self._stream(f"__substg1.0_{tag}{_BINARY}", self.limits.max_unzipped_bytes)

    def size(self, tag: str, kind: str) -> int:
        return self.ole.get_size([*self.prefix, f"__substg1.0_{tag}{kind}"])

    def has(self, name: str, kind: int) -> bool:
        """Whether the storage holds `name` as a stream or storage (`kind`, olefile's)."""
        path = [*self.prefix, name]
        return bool(self.ole.exists(path)) and self.ole.get_type(path) == kind

    def fixed(self, property_id: int) -> bytes | None:
        """The 8-byte value of a fixed-length property (a number, a time, a flag), from the
        storage's `__properties_version1.0` stream."""
        if self._fixed is None:
            self._fixed = self._read_fixed()
        return self._fixed.get(property_id)

    def _read_fixed(self) -> dict[int, bytes]:
        data = self._stream(_PROPERTIES, _MAX_PROPERTIES_BYTES) or b""
        # The header before the entries: 32 bytes for the message, 24 for a message attached
        # to it, 8 for an attachment or a recipient.
        if not self.prefix:
            header = 32
        elif self.prefix[-1].lower().startswith("__substg1.0_"):
            header = 24
        else:
            header = 8
        values = {}
        for start in range(header, len(data) - 15, 16):
            tag, _flags, value = struct.unpack_from("<II8s", data, start)
            values[tag >> 16] = (tag & 0xFFFF, value)
        return {key: value for key, (kind, value) in values.items() if kind in _FIXED_KINDS}

    def number(self, property_id: int) -> int | None:
        value = self.fixed(property_id)
        return struct.unpack_from("<i", value)[0] if value is not None else None

    def time(self, property_id: int) -> datetime.datetime | None:
        value = self.fixed(property_id)
        if value is None:
            return None
        ticks = struct.unpack_from("<Q", value)[0]  # 100 ns since 1601
        try:
            return _FILETIME_EPOCH + datetime.timedelta(microseconds=ticks // 10)
        except OverflowError:
            return None

    def codepage(self) -> str:
        """The Python codec of the message's 8-bit strings (Windows-1252 when unknown)."""
        for property_id in (_CODEPAGE, _INTERNET_CODEPAGE):
            number = self.number(property_id)
            if number:
                name = "utf-8" if number == 65001 else f"cp{number}"
                try:
                    return codecs.lookup(name).name
                except LookupError:
                    continue
        return "cp1252"


_FIXED_KINDS = frozenset({_PT_LONG, _PT_SYSTIME, _PT_BOOLEAN})


def _msg(message: _Storage) -> _Mail:
    return _Mail(_msg_fields(message), _msg_body(message), _msg_attachments(message))


def _msg_fields(message: _Storage) -> list[tuple[str, str]]:
    name = message.string(_SENDER_NAME) or ""
    address = message.string(_SENDER_SMTP) or message.string(_SENDER_ADDRESS) or ""
    if address.startswith("/"):  # an Exchange directory name, no address to anyone
        address = ""
    sender = f"{name} <{address}>" if name and address and name != address else name or address
    moment = message.time(_DELIVERY_TIME) or message.time(_SUBMIT_TIME)
    return [
        ("From", sender),
        ("To", message.string(_DISPLAY_TO) or ""),
        ("Cc", message.string(_DISPLAY_CC) or ""),
        ("Date", _iso(moment) or ""),
        ("Subject", message.string(_SUBJECT) or ""),
    ]


def _msg_body(message: _Storage) -> Iterator[Block]:
    body = message.string(_BODY)
    if body and body.strip():
        yield from _paragraphs(body)
        return
    html = message.binary(_HTML)
    if html is not None:
        yield from html_text_blocks(html.decode(message.codepage(), "replace"))
    elif (text := message.string(_HTML)) is not None:
        yield from html_text_blocks(text)


def _msg_attachments(message: _Storage) -> list[_Attachment]:
    names = sorted(
        {
            entry[len(message.prefix)]
            for entry in message.ole.listdir(streams=False, storages=True)
            if len(entry) == len(message.prefix) + 1
            and entry[:-1] == message.prefix
            and entry[-1].lower().startswith(_ATTACHMENT_PREFIX)
        }
    )
    if len(names) > MAX_ATTACHMENTS:
        raise DocumentTooLarge(f"The email has more than {MAX_ATTACHMENTS} attachments.")
    found = []
    for number, name in enumerate(names, start=1):
        attachment = _msg_attachment(message.child(name), number)
        if attachment is not None:
            found.append(attachment)
    return found


def _msg_attachment(storage: _Storage, number: int) -> _Attachment | None:
    """An attachment's name and how to read it; None for one that is no file (hidden, an
    image shown in the body, an OLE object)."""
    name = storage.string(_ATTACH_LONG_NAME) or storage.string(_ATTACH_NAME) or ""
    hidden = storage.number(_ATTACH_HIDDEN)
    image = (mimetypes.guess_type(name)[0] or "").startswith("image/")
    if hidden or (image and storage.string(_ATTACH_CONTENT_ID)):
        return None
    embedded = f"__substg1.0_{_ATTACH_DATA}{_OBJECT}"
    embedded_message = storage.number(_ATTACH_METHOD) == _EMBEDDED_MESSAGE
    if embedded_message and storage.has(embedded, olefile.STGTY_STORAGE):
        inner = storage.child(embedded)
        label = _clean_name(name or inner.string(_SUBJECT) or f"message {number}.msg")
        return _Attachment(label, pages=lambda: [list(_message_blocks(_msg_without(inner)))])
    if not storage.has(f"__substg1.0_{_ATTACH_DATA}{_BINARY}", olefile.STGTY_STREAM):
        return None  # an OLE object or a link: no file's bytes
    size = storage.size(_ATTACH_DATA, _BINARY)
    return _Attachment(
        _clean_name(name or f"attachment {number}"),
        size,
        data=lambda: storage.binary(_ATTACH_DATA) or b"",
    )


def _msg_without(message: _Storage) -> _Mail:
    """An attached message's header and body, not its own attachments (one level)."""
    return _Mail(_msg_fields(message), _msg_body(message))
