"""Real documents for tests, made with the libraries that write them (fpdf2, python-docx,
openpyxl, pypdf), plus the hostile ones: encrypted PDFs and zip bombs.

Every function returns the file's bytes; write them where the test needs them. PDF text goes
through fpdf2's core Helvetica font, so keep it to Latin-1.
"""

from __future__ import annotations

import datetime
import io
import struct
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from docx import Document
from docx.enum.text import WD_BREAK
from fpdf import FPDF
from openpyxl import Workbook
from pypdf import PdfReader, PdfWriter


def make_pdf(pages: Sequence[str]) -> bytes:
    """A PDF with one page per string (each string laid out as wrapped text)."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def make_encrypted_pdf(
    pages: Sequence[str],
    *,
    user_password: str = "",
    owner_password: str = "owner-secret",  # noqa: S107
    algorithm: str = "AES-256",
) -> bytes:
    """`make_pdf(pages)`, encrypted by pypdf. With an empty `user_password` anyone may open it
    (only the owner's permissions are protected); with one, nobody can read it without it."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(pages))))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx(
    paragraphs: Sequence[str],
    *,
    page_break_after: Iterable[int] = (),
    table: Sequence[Sequence[str]] | None = None,
) -> bytes:
    """A DOCX with these paragraphs; an explicit page break (`WD_BREAK.PAGE`) ends each
    paragraph whose index is in `page_break_after`; `table` (rows of cells) follows them."""
    breaks = set(page_break_after)
    document = Document()
    for index, text in enumerate(paragraphs):
        paragraph = document.add_paragraph(text)
        if index in breaks:
            paragraph.add_run().add_break(WD_BREAK.PAGE)
    if table:
        grid = document.add_table(rows=len(table), cols=max(len(row) for row in table))
        for row, values in zip(grid.rows, table, strict=False):
            for cell, value in zip(row.cells, values, strict=False):
                cell.text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_xlsx(sheets: dict[str, Sequence[Sequence[Any]]]) -> bytes:
    """A workbook with one worksheet per entry (title: rows of cell values), in order."""
    workbook = Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(list(row))
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def make_zip_bomb_docx(inflated_bytes: int, *, lie_about_size: bool = False) -> bytes:
    """A DOCX that inflates to more than `inflated_bytes`, from a few kilobytes.

    Honest: an extra member of `inflated_bytes` spaces whose header says so. Lying:
    `word/document.xml` is followed, inside the same deflate stream, by `inflated_bytes`
    spaces, while its headers give the size and CRC-32 of the real XML alone. zipfile then
    returns just the XML, and python-docx reads the document, but only after inflating the
    whole stream in one go."""
    return _zip_bomb(
        make_docx(["Nothing to see here."]), "word/document.xml", inflated_bytes, lie_about_size
    )


def make_zip_bomb_xlsx(inflated_bytes: int, *, lie_about_size: bool = False) -> bytes:
    """`make_zip_bomb_docx` for a workbook; the lying member is `xl/workbook.xml`."""
    return _zip_bomb(
        make_xlsx({"Sheet": [["quiet"]]}), "xl/workbook.xml", inflated_bytes, lie_about_size
    )


def _zip_bomb(office: bytes, target: str, inflated_bytes: int, lie: bool) -> bytes:
    with zipfile.ZipFile(io.BytesIO(office)) as archive:
        members = [(info.filename, archive.read(info)) for info in archive.infolist()]
    entries = []
    for name, data in members:
        if lie and name == target:
            packed = _deflate([data], inflated_bytes)
            entries.append((name, packed, zlib.crc32(data), len(data)))
        else:
            entries.append((name, _deflate([data]), zlib.crc32(data), len(data)))
    if not lie:
        crc = zlib.crc32(b"", 0)
        for piece in _spaces(inflated_bytes):
            crc = zlib.crc32(piece, crc)
        entries.append(
            ("word/media/padding.bin", _deflate([], inflated_bytes), crc, inflated_bytes)
        )
    return _raw_zip(entries)


def _spaces(count: int, piece: int = 1 << 20) -> Iterable[bytes]:
    while count > 0:
        yield b" " * min(piece, count)
        count -= piece


def _deflate(chunks: Iterable[bytes], trailing_spaces: int = 0) -> bytes:
    """Raw deflate (as in ZIP) of `chunks` then `trailing_spaces` spaces, in bounded memory."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = [compressor.compress(chunk) for chunk in chunks]
    out += [compressor.compress(piece) for piece in _spaces(trailing_spaces)]
    out.append(compressor.flush())
    return b"".join(out)


def _raw_zip(entries: Sequence[tuple[str, bytes, int, int]]) -> bytes:
    """A ZIP archive written by hand, so its headers can say anything: each entry is (name,
    deflated data, CRC-32, declared uncompressed size), the same in the local and central
    headers."""
    out = io.BytesIO()
    central = []
    for name, data, crc, size in entries:
        encoded = name.encode()
        offset = out.tell()
        # method, time, date (1980-01-01), CRC-32, compressed and uncompressed size, name size
        common = (zipfile.ZIP_DEFLATED, 0, 33, crc, len(data), size, len(encoded))
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, *common, 0) + encoded + data)
        central.append(
            struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, *common, 0, 0, 0, 0, 0, offset)
            + encoded
        )
    start, directory = out.tell(), b"".join(central)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(central), len(central),
                      len(directory), start, 0)  # fmt: skip
    return out.getvalue() + directory + end


TemplateRun = str | tuple[str, dict[str, Any]]


def make_docx_template(
    paragraphs: Sequence[str | Sequence[TemplateRun]],
    *,
    table: Sequence[Sequence[str]] | None = None,
    header: Sequence[str] = (),
    footer: Sequence[str] = (),
    first_page_header: Sequence[str] = (),
    first_page_footer: Sequence[str] = (),
) -> bytes:
    """A DOCX template (for `{{ field }}` placeholders). Each paragraph is a string (one run)
    or a list of runs, each a string or (text, formatting), formatting keys being `bold`,
    `italic`, `underline`, `size` (points), `font` and `color` ("RRGGBB"), so a placeholder
    can be split across runs the way Word splits it:
    `["Dear ", ("{{", {"bold": True}), "client", ("_name }}", {"italic": True})]`.
    `table` (rows of cells) follows the paragraphs; headers and footers get one paragraph per
    string; a first-page header or footer turns on "different first page"."""
    document = Document()
    for content in paragraphs:
        paragraph = document.add_paragraph()
        for run in [content] if isinstance(content, str) else content:
            text, formatting = (run, {}) if isinstance(run, str) else run
            _format_run(paragraph.add_run(text), formatting)
    if table:
        grid = document.add_table(rows=len(table), cols=max(len(row) for row in table))
        for row, values in zip(grid.rows, table, strict=False):
            for cell, value in zip(row.cells, values, strict=False):
                cell.text = value
    section = document.sections[0]
    if first_page_header or first_page_footer:
        section.different_first_page_header_footer = True
    for story, lines in [
        (section.header, header),
        (section.footer, footer),
        (section.first_page_header, first_page_header),
        (section.first_page_footer, first_page_footer),
    ]:
        for index, line in enumerate(lines):
            if index == 0:
                story.paragraphs[0].text = line
            else:
                story.add_paragraph(line)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _format_run(run: Any, formatting: dict[str, Any]) -> None:
    from docx.shared import Pt, RGBColor

    for key, value in formatting.items():
        if key in ("bold", "italic", "underline"):
            setattr(run, key, value)
        elif key == "size":
            run.font.size = Pt(value)
        elif key == "font":
            run.font.name = value
        elif key == "color":
            run.font.color.rgb = RGBColor.from_string(value)
        else:
            raise ValueError(f"unknown run formatting {key!r}")


def make_pptx(slides: Sequence[dict[str, Any]]) -> bytes:
    """A deck with python-pptx, a slide per entry on the Title Only layout. Keys, all optional,
    placed in this order on the slide: `title`; `texts` (a text box each, its lines
    paragraphs); `group` (text boxes grouped together); `table` (rows of cells); `notes` (the
    speaker notes, lines as paragraphs)."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for spec in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        if "title" in spec:
            slide.shapes.title.text = spec["title"]
        top = 2
        for text in spec.get("texts", ()):
            box = slide.shapes.add_textbox(Inches(1), Inches(top), Inches(6), Inches(1))
            box.text_frame.text = text
            top += 1
        if "group" in spec:
            group = slide.shapes.add_group_shape()
            for text in spec["group"]:
                box = group.shapes.add_textbox(Inches(1), Inches(top), Inches(3), Inches(1))
                box.text_frame.text = text
                top += 1
        if "table" in spec:
            rows = spec["table"]
            columns = max(len(row) for row in rows)
            frame = slide.shapes.add_table(
                len(rows), columns, Inches(1), Inches(top), Inches(6), Inches(2)
            )
            for row, values in zip(frame.table.rows, rows, strict=False):
                for cell, value in zip(row.cells, values, strict=False):
                    cell.text = value
        if "notes" in spec:
            slide.notes_slide.notes_text_frame.text = spec["notes"]
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_xls(sheets: dict[str, Sequence[Sequence[Any]]], *, cells: dict[str, Any] = ()) -> bytes:
    """A legacy Excel 97-2003 workbook written by xlwt, one worksheet per entry (title: rows
    of cell values; dates and datetimes formatted as dates, so Excel shows them as such).
    `cells` maps a sheet's title to extra `(row, column, value)` triples, for cells far out."""
    import xlwt

    dates = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    times = xlwt.easyxf(num_format_str="YYYY-MM-DD HH:MM")
    workbook = xlwt.Workbook()
    for title, rows in sheets.items():
        sheet = workbook.add_sheet(title)
        placed = [(r, c, v) for r, row in enumerate(rows) for c, v in enumerate(row)]
        for row, column, value in placed + list(dict(cells).get(title, ())):
            if isinstance(value, datetime.datetime):
                sheet.write(row, column, value, times)
            elif isinstance(value, datetime.date):
                sheet.write(row, column, value, dates)
            elif value is not None:
                sheet.write(row, column, value)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def make_eml(
    *,
    sender: str = "Jane Smith <jane@example.com>",
    to: str = "Site Team <site@example.com>",
    cc: str | None = None,
    subject: str = "Pour schedule",
    date: str = "Fri, 01 Mar 2024 09:30:00 +0000",
    text: str | None = "Hello team.\n\nThe pour is on Tuesday.",
    html: str | None = None,
    attachments: Sequence[tuple[str, str, bytes]] = (),
) -> bytes:
    """An RFC 5322 message built by the stdlib `email` package: a plain `text` body, an
    `html` one (an alternative to the plain one, or the only body when `text` is None), and
    `attachments` as (filename, MIME type, bytes)."""
    from email.message import EmailMessage
    from email.policy import SMTP

    message = EmailMessage()
    message["From"], message["To"], message["Subject"], message["Date"] = (
        sender,
        to,
        subject,
        date,
    )
    if cc:
        message["Cc"] = cc
    if text is not None:
        message.set_content(text)
        if html is not None:
            message.add_alternative(html, subtype="html")
    elif html is not None:
        message.set_content(html, subtype="html")
    for filename, mime_type, data in attachments:
        maintype, subtype = mime_type.split("/")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes(policy=SMTP)


def make_msg(
    *,
    sender_name: str = "Jane Smith",
    sender_email: str = "jane@example.com",
    to: str = "Site Team",
    cc: str | None = None,
    subject: str = "Pour schedule",
    delivered: datetime.datetime | None = None,
    body: str | None = "Hello team.\r\n\r\nThe pour is on Tuesday.",
    html: bytes | None = None,
    attachments: Sequence[tuple[str, bytes]] = (),
    embedded: dict[str, str] | None = None,
    eight_bit_codepage: int | None = None,
) -> bytes:
    """An Outlook message ([MS-OXMSG]) written by `compound_file`, the few properties
    Strongroom reads: sender, display To and Cc, subject, delivery time, plain and HTML
    body, attachments by value (filename, bytes), and `embedded`, an attached message of
    `subject` and `body`. Strings are UTF-16 (`001F`), or 8-bit (`001E`) in
    `eight_bit_codepage` when one is given."""
    streams: dict[str, bytes] = {}

    def string(prefix: str, tag: str, value: str) -> None:
        if eight_bit_codepage is None:
            streams[f"{prefix}__substg1.0_{tag}001F"] = value.encode("utf-16-le")
        else:
            streams[f"{prefix}__substg1.0_{tag}001E"] = value.encode(f"cp{eight_bit_codepage}")

    fixed = []
    if delivered is not None:
        ticks = int(
            (delivered - datetime.datetime(1601, 1, 1, tzinfo=datetime.UTC)).total_seconds()
        )
        fixed.append((0x0E060040, struct.pack("<Q", ticks * 10_000_000)))
    if eight_bit_codepage is not None:
        fixed.append((0x3FFD0003, struct.pack("<i4x", eight_bit_codepage)))
    streams["__properties_version1.0"] = _msg_properties(32, fixed)
    for tag, value in [("0C1A", sender_name), ("5D01", sender_email), ("0E04", to),
                       ("0037", subject), ("0E03", cc), ("1000", body)]:  # fmt: skip
        if value is not None:
            string("", tag, value)
    if html is not None:
        streams["__substg1.0_10130102"] = html
    for number, (filename, data) in enumerate(attachments):
        prefix = f"__attach_version1.0_#{number:08X}/"
        streams[prefix + "__properties_version1.0"] = _msg_properties(
            8, [(0x37050003, struct.pack("<i4x", 1))]
        )
        string(prefix, "3707", filename)
        streams[prefix + "__substg1.0_37010102"] = data
    if embedded is not None:
        prefix = f"__attach_version1.0_#{len(attachments):08X}/"
        streams[prefix + "__properties_version1.0"] = _msg_properties(
            8, [(0x37050003, struct.pack("<i4x", 5))]
        )
        inner = prefix + "__substg1.0_3701000D/"
        streams[inner + "__properties_version1.0"] = _msg_properties(24, [])
        string(inner, "0037", embedded["subject"])
        string(inner, "1000", embedded["body"])
        string(inner, "0C1A", embedded.get("sender", "Tom Brown"))
    return compound_file(streams)


def _msg_properties(header: int, fixed: Sequence[tuple[int, bytes]]) -> bytes:
    """A `__properties_version1.0` stream: `header` reserved bytes, then 16 bytes a fixed
    property (tag, flags, 8-byte value)."""
    return bytes(header) + b"".join(struct.pack("<II", tag, 6) + value for tag, value in fixed)


_FREE, _END_OF_CHAIN, _FAT_SECTOR, _NO_STREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF


def compound_file(streams: dict[str, bytes]) -> bytes:
    """A version 3 OLE2 compound file ([MS-CFB]) holding `streams`, named by paths with `/`
    between storages (created as needed). Written here because no writer of new compound
    files is a dependency (olefile only reads or overwrites): 512-byte sectors, streams
    under 4,096 bytes in the mini stream, each storage's children in a balanced tree
    sorted as the format sorts names (by length, then upper-cased)."""
    tree: dict[str, Any] = {}
    for path, data in streams.items():
        *storages, name = path.split("/")
        node = tree
        for storage in storages:
            node = node.setdefault(storage, {})
        node[name] = data
    entries: list[dict[str, Any]] = [{"name": "Root Entry", "type": 5, "data": b""}]

    def add(children: dict[str, Any]) -> int:
        ordered = sorted(children, key=lambda n: (len(n), n.upper()))
        indexes = []
        for name in ordered:
            value = children[name]
            entries.append({"name": name, "type": 1 if isinstance(value, dict) else 2})
            index = len(entries) - 1
            indexes.append(index)
            if isinstance(value, dict):
                entries[index]["child"] = add(value)
            else:
                entries[index]["data"] = value
        return _balanced(entries, indexes)

    entries[0]["child"] = add(tree)
    return _cfb_layout(entries)


def _balanced(entries: list[dict[str, Any]], indexes: list[int]) -> int:
    if not indexes:
        return _NO_STREAM
    middle = len(indexes) // 2
    root = indexes[middle]
    entries[root]["left"] = _balanced(entries, indexes[:middle])
    entries[root]["right"] = _balanced(entries, indexes[middle + 1 :])
    return root


def _cfb_layout(entries: list[dict[str, Any]]) -> bytes:
    sector, mini = 512, 64
    small = [e for e in entries if e["type"] == 2 and len(e["data"]) < 4096]
    large = [e for e in entries if e["type"] == 2 and len(e["data"]) >= 4096]
    ministream, minifat = b"", []
    for entry in small:
        count = -(-len(entry["data"]) // mini)
        entry["start"] = len(ministream) // mini if count else _END_OF_CHAIN
        start = len(minifat)
        minifat += [start + i + 1 for i in range(count - 1)] + ([_END_OF_CHAIN] if count else [])
        ministream += entry["data"].ljust(count * mini, b"\0")
    entries[0]["data"] = ministream
    directory = -(-len(entries) // 4)
    minifat_sectors = -(-len(minifat) * 4 // sector)
    chains = [("dir", directory), ("minifat", minifat_sectors),
              ("mini", -(-len(ministream) // sector))]  # fmt: skip
    chains += [(id(e), -(-len(e["data"]) // sector)) for e in large]
    content = sum(count for _, count in chains)
    fat_sectors = 1
    while fat_sectors * 128 < fat_sectors + content:
        fat_sectors += 1
    fat = [_FAT_SECTOR] * fat_sectors
    starts = {}
    for key, count in chains:
        starts[key] = len(fat) if count else _END_OF_CHAIN
        fat += [len(fat) + i + 1 for i in range(count - 1)] + ([_END_OF_CHAIN] if count else [])
    fat += [_FREE] * (fat_sectors * 128 - len(fat))
    entries[0]["start"] = starts["mini"]
    for entry in large:
        entry["start"] = starts[id(entry)]
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII",
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", bytes(16), 0x3E, 3, 0xFFFE, 9, 6, bytes(6),
        0, fat_sectors, starts["dir"], 0, 4096, starts["minifat"], minifat_sectors,
        _END_OF_CHAIN, 0,
    )  # fmt: skip
    header += struct.pack("<109I", *(list(range(fat_sectors)) + [_FREE] * (109 - fat_sectors)))
    body = [struct.pack(f"<{len(fat)}I", *fat)]
    body.append(b"".join(_cfb_entry(e) for e in entries).ljust(directory * sector, b"\0"))
    minifat += [_FREE] * (minifat_sectors * 128 - len(minifat))
    body.append(struct.pack(f"<{len(minifat)}I", *minifat))
    body.append(ministream.ljust(-(-len(ministream) // sector) * sector, b"\0"))
    body += [e["data"].ljust(-(-len(e["data"]) // sector) * sector, b"\0") for e in large]
    return header + b"".join(body)


def _cfb_entry(entry: dict[str, Any]) -> bytes:
    name = entry["name"].encode("utf-16-le") + b"\0\0"
    return struct.pack(
        "<64sHBBIII16sIQQIQ",
        name, len(name), entry["type"], 1, entry.get("left", _NO_STREAM),
        entry.get("right", _NO_STREAM), entry.get("child", _NO_STREAM), bytes(16), 0, 0, 0,
        entry.get("start", _END_OF_CHAIN), len(entry.get("data", b"")),
    )  # fmt: skip
