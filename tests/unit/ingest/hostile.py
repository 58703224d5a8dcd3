"""Small files that cost much to read (issue 18), made here for the tests (and, before it
was retired, bench/hostile_bench.py). Each returns the file's bytes."""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterable

from tests.documents import make_docx

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _docx_with_body(pieces: Iterable[bytes]) -> bytes:
    """A DOCX whose `word/document.xml` body is `pieces`, written as they come (streamed into
    the zip, deflated): what a hostile document inflates to."""
    source = make_docx(["Nothing to see here."])
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(source)) as original,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
    ):
        for info in original.infolist():
            if info.filename != "word/document.xml":
                archive.writestr(info, original.read(info))
                continue
            with archive.open("word/document.xml", "w", force_zip64=True) as member:
                member.write(f'<w:document xmlns:w="{_W}"><w:body>'.encode())
                for piece in pieces:
                    member.write(piece)
                member.write(b"</w:body></w:document>")
    return out.getvalue()


def docx_of_empty_paragraphs(inflated_bytes: int) -> bytes:
    """A DOCX whose `word/document.xml` inflates to `inflated_bytes` of `<w:p/>`, its headers
    telling the truth (a 154 KB one held 100 MiB: python-docx built a 2.4 GB tree from it)."""
    piece = b"<w:p/>" * (1 << 16)
    return _docx_with_body(piece for _ in range(inflated_bytes // len(piece)))


def pdf_sharing_one_stream(pages: int, stream_bytes: int) -> bytes:
    """A PDF of `pages` pages that all draw one content stream of about `stream_bytes` of
    text operators, deflated (a 21.6 KB one with a 1 MiB stream gave 79,000 passages)."""
    line = b"(The contractor shall pour the slab on level three.) Tj T*\n"
    content = b"BT /F1 10 Tf 12 TL 72 720 Td\n" + line * (stream_bytes // len(line)) + b"ET\n"
    packed = zlib.compress(content, 9)
    first_page = 5
    kids = " ".join(f"{first_page + n} 0 R" for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream",
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    )
    objects += [page] * pages
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def bold_html(size: int) -> bytes:
    """`size` bytes of `<b>a</b>`."""
    return b"<b>a</b>" * (size // 8)


def one_letter_csv(size: int) -> bytes:
    """`size` bytes of `a\\n`: one row per two bytes."""
    return b"a\n" * (size // 2)


def one_paragraph(size: int) -> bytes:
    """`size` bytes of words with no sentence end and no line break."""
    return b"concrete " * (size // 9)


def xlsx_sharing_one_string(string_bytes: int, cells: int) -> bytes:
    """An XLSX whose one shared string of `string_bytes` words is the value of `cells` cells
    (issue 28: a 35 KB one with an 8 MB string in 10,000 cells took a worker to 2.3 GB)."""
    word = b"slab "
    string = word * (string_bytes // len(word))
    rows = b"".join(
        b'<row r="%d"><c r="A%d" t="s"><v>0</v></c></row>' % (n, n) for n in range(1, cells + 1)
    )
    parts = {
        "[Content_Types].xml": (
            b'<?xml version="1.0" encoding="UTF-8"?>'
            b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            b'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            b'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            b'<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
            b'officedocument.spreadsheetml.sheet.main+xml"/>'
            b'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/'
            b'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
            b'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>'
        ),
        "_rels/.rels": (
            b'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.'
            b'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="'
            b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
            b'officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": (
            b'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.'
            b'openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.'
            b'openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet '
            b'name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            b'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.'
            b'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="'
            b'http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
            b'Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.'
            b'openxmlformats.org/officeDocument/2006/relationships/sharedStrings" '
            b'Target="sharedStrings.xml"/></Relationships>'
        ),
        "xl/worksheets/sheet1.xml": (
            b'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.'
            b'openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
            + rows
            + b"</sheetData></worksheet>"
        ),
        "xl/sharedStrings.xml": (
            b'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.'
            b'openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1"><si><t>'
            + string
            + b"</t></si></sst>"
        ),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return out.getvalue()


def docx_of_long_text_nodes(nodes: int, node_bytes: int) -> bytes:
    """A DOCX of `nodes` paragraphs each one `w:t` of `node_bytes` words (issue 28: a 488 KB
    one of 53 nodes of 9 MB took 1.2 GB)."""
    word = b"pour "
    paragraph = b"<w:p><w:r><w:t>" + word * (node_bytes // len(word)) + b"</w:t></w:r></w:p>"
    return _docx_with_body(paragraph for _ in range(nodes))
