"""Text per page out of real files made in the tests (tests/documents.py), and the hostile
ones: corrupt and encrypted PDFs, zip bombs whose headers tell the truth and ones that lie.

Files are written under names without an extension, as blobs are stored."""

from __future__ import annotations

import io
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from docx import Document
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls

from strongroom.corpus.models import DocumentType
from strongroom.ingest.extract import UnreadableDocument, extract_pages
from strongroom.ingest.limits import IngestLimits
from tests.documents import (
    make_docx,
    make_encrypted_pdf,
    make_pdf,
    make_xlsx,
    make_zip_bomb_docx,
    make_zip_bomb_xlsx,
)

LIMIT = 64 * 1024 * 1024
PDF, DOCX, XLSX = DocumentType.PDF, DocumentType.DOCX, DocumentType.XLSX


@pytest.fixture
def extract(tmp_path: Path):
    counter = iter(range(1_000_000))

    def run(data: bytes, document_type: DocumentType, max_unzipped: int = LIMIT) -> list[str]:
        path = tmp_path / f"blob-{next(counter)}"
        path.write_bytes(data)
        limits = IngestLimits(max_unzipped_bytes=max_unzipped)
        return extract_pages(path, document_type, limits=limits)

    return run


def _docx_bytes(document) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _recompress(data: bytes, method: int) -> bytes:
    """The same archive, every member written again with compression `method`."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", method) as copy:
        for info in source.infolist():
            copy.writestr(info.filename, source.read(info))
    return out.getvalue()


# PDF


def test_a_pdf_gives_one_text_per_page(extract) -> None:
    pages = extract(make_pdf(["Concrete pour", "Steel delivery", "Roof inspection"]), PDF)
    assert len(pages) == 3
    assert "Concrete pour" in pages[0]
    assert "Steel delivery" in pages[1]
    assert "Roof inspection" in pages[2]


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.7\n",
        b"%PDF-1.7\n" + bytes(range(256)) * 20,
        b"%PDF-1.4\n%%EOF\n",
        make_pdf(["Half of a file"])[:700],
    ],
    ids=["header-only", "garbage", "no-xref", "truncated"],
)
def test_a_corrupt_pdf_is_unreadable(extract, data: bytes) -> None:
    with pytest.raises(UnreadableDocument, match="could not be read as pdf"):
        extract(data, PDF)


@pytest.mark.parametrize("algorithm", ["AES-256", "AES-128", "RC4-128"])
def test_a_pdf_with_a_user_password_is_unreadable(extract, algorithm: str) -> None:
    data = make_encrypted_pdf(["Secret"], user_password="let-me-in", algorithm=algorithm)
    with pytest.raises(UnreadableDocument, match="encrypted"):
        extract(data, PDF)


@pytest.mark.parametrize("algorithm", ["AES-256", "AES-128", "RC4-128"])
def test_a_pdf_with_only_an_owner_password_still_reads(extract, algorithm: str) -> None:
    data = make_encrypted_pdf(["Tender summary", "Second page"], algorithm=algorithm)
    pages = extract(data, PDF)
    assert len(pages) == 2
    assert "Tender summary" in pages[0]
    assert "Second page" in pages[1]


# DOCX


def test_docx_pages_are_cut_at_explicit_page_breaks(extract) -> None:
    data = make_docx(["Intro", "Before the break", "After the break", "Last"], page_break_after=[1])
    pages = extract(data, DOCX)
    assert pages == ["Intro\n\nBefore the break", "After the break\n\nLast"]


def test_a_docx_without_page_breaks_is_one_page_of_one_block_per_paragraph(extract) -> None:
    assert extract(make_docx(["One", "Two", "Three"]), DOCX) == ["One\n\nTwo\n\nThree"]


def test_docx_tables_are_read_row_by_row_with_cell_separators_on_their_page(extract) -> None:
    data = make_docx(
        ["Cover", "Schedule"], page_break_after=[0], table=[["Item", "Qty"], ["Rebar", "40"]]
    )
    pages = extract(data, DOCX)
    assert pages == ["Cover", "Schedule\n\nItem | Qty\nRebar | 40"]


def test_docx_line_breaks_and_cell_paragraphs_keep_words_apart(extract) -> None:
    document = Document()
    paragraph = document.add_paragraph("Line one")
    paragraph.add_run().add_break()  # a line break, not a page break
    paragraph.add_run("Line two")
    cell = document.add_table(rows=1, cols=1).rows[0].cells[0]
    cell.text = "First para"
    cell.add_paragraph("Second para")
    [page] = extract(_docx_bytes(document), DOCX)
    assert page == "Line one\nLine two\n\nFirst para Second para"


def test_a_table_nested_in_a_cell_is_read_once(extract) -> None:
    document = Document()
    outer = document.add_table(rows=1, cols=2).rows[0].cells
    outer[0].text = "Outer"
    outer[0].add_table(rows=1, cols=1).rows[0].cells[0].text = "Nested"
    outer[1].text = "Right"
    [page] = extract(_docx_bytes(document), DOCX)
    assert page.count("Nested") == 1
    assert page == "Outer Nested | Right"


def test_docx_text_inside_content_controls_is_read(extract) -> None:
    document = Document()
    document.add_paragraph("Body text")
    cover = parse_xml(
        f"<w:sdt {nsdecls('w')}><w:sdtPr/><w:sdtContent>"
        "<w:p><w:r><w:t>Cover page title</w:t></w:r></w:p></w:sdtContent></w:sdt>"
    )
    document.element.body.insert(0, cover)
    assert extract(_docx_bytes(document), DOCX) == ["Cover page title\n\nBody text"]


def test_a_file_that_is_no_docx_is_unreadable_as_one(extract) -> None:
    with pytest.raises(UnreadableDocument, match="docx"):
        extract(make_xlsx({"Sheet": [["x"]]}), DOCX)


# XLSX


def test_xlsx_gives_one_page_per_sheet(extract) -> None:
    data = make_xlsx(
        {
            "Costs": [["Item", "Amount"], ["Steel", 12.5], [None, None], ["Glass", 3]],
            "Dates": [["Start", "2024-03-01"]],
        }
    )
    assert extract(data, XLSX) == [
        "Sheet: Costs\n\nItem | Amount\nSteel | 12.5\nGlass | 3",
        "Sheet: Dates\n\nStart | 2024-03-01",
    ]


def test_xlsx_reads_from_a_file_without_an_xlsx_extension(tmp_path: Path) -> None:
    path = tmp_path / "0b9f6a7e-blob-key"  # stored blobs have no extension
    path.write_bytes(make_xlsx({"Only": [["value"]]}))
    assert extract_pages(path, XLSX) == ["Sheet: Only\n\nvalue"]


# Zip bombs


def test_the_hand_written_zip_reads_when_its_headers_tell_the_truth(extract) -> None:
    """The bomb generator itself makes sound archives: with nothing appended, it is a DOCX."""
    assert extract(make_zip_bomb_docx(0, lie_about_size=True), DOCX) == ["Nothing to see here."]


@pytest.mark.parametrize("make", [make_zip_bomb_docx, make_zip_bomb_xlsx])
def test_an_archive_declaring_more_than_max_unzipped_is_unreadable(extract, make) -> None:
    data = make(8 * 1024 * 1024)
    assert len(data) < 64 * 1024
    with pytest.raises(UnreadableDocument, match="more than the limit of 1048576"):
        extract(data, DOCX if make is make_zip_bomb_docx else XLSX, max_unzipped=1024 * 1024)


def test_an_archive_exactly_at_max_unzipped_reads(extract) -> None:
    data = make_docx(["Within bounds"])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        declared = sum(info.file_size for info in archive.infolist())
    assert extract(data, DOCX, max_unzipped=declared) == ["Within bounds"]
    with pytest.raises(UnreadableDocument, match="more than the limit"):
        extract(data, DOCX, max_unzipped=declared - 1)


def test_zipfile_alone_trusts_a_member_that_lies_about_its_size() -> None:
    """Why extract.py inflates members itself: zipfile cuts the member at its declared size,
    finds the CRC-32 right and calls the archive sound, whatever the stream holds."""
    data = make_zip_bomb_docx(4 * 1024 * 1024, lie_about_size=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None
        info = archive.getinfo("word/document.xml")
        assert info.file_size < 4096
        assert len(archive.read(info)) == info.file_size


@pytest.mark.parametrize("make", [make_zip_bomb_docx, make_zip_bomb_xlsx])
def test_a_member_holding_more_than_its_header_declares_is_unreadable(extract, make) -> None:
    data = make(4 * 1024 * 1024, lie_about_size=True)
    document_type = DOCX if make is make_zip_bomb_docx else XLSX
    with pytest.raises(UnreadableDocument, match=r"holds more than the \d+ bytes its header"):
        extract(data, document_type)


@pytest.mark.parametrize("make", [make_zip_bomb_docx, make_zip_bomb_xlsx])
def test_inflating_a_lying_member_stays_bounded(extract, make) -> None:
    """16 MiB behind a header claiming 2 KB: refused after inflating a step past the claim,
    not after inflating it all (python-docx and openpyxl would have: zipfile inflates the
    whole stream before cutting it to the declared size). Twice the 8 MiB bound is enough
    to fail a reader that inflated it all (64 MiB took 0.36 s to make, issue 54)."""
    data = make(16 * 1024 * 1024, lie_about_size=True)
    document_type = DOCX if make is make_zip_bomb_docx else XLSX
    tracemalloc.start()
    try:
        with pytest.raises(UnreadableDocument):
            extract(data, document_type)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA], ids=["bzip2", "lzma"])
def test_members_compressed_otherwise_than_deflate_are_unreadable(extract, method: int) -> None:
    """zipfile inflates bzip2 and LZMA members with no bound at all; Office files never use
    them."""
    data = _recompress(make_docx(["Compressed oddly"]), method)
    with pytest.raises(UnreadableDocument, match="compression method"):
        extract(data, DOCX)


def test_stored_members_read(extract) -> None:
    data = _recompress(make_xlsx({"Plain": [["stored"]]}), zipfile.ZIP_STORED)
    assert extract(data, XLSX) == ["Sheet: Plain\n\nstored"]


# Text formats


def test_text_pages_are_cut_at_form_feeds(extract) -> None:
    assert extract(b"First page\n\fSecond page\n", DocumentType.TEXT) == [
        "First page\n",
        "Second page\n",
    ]


def test_text_without_form_feeds_is_one_page(extract) -> None:
    assert extract(b"One page\nof text\n", DocumentType.TEXT) == ["One page\nof text\n"]


def test_a_utf8_bom_is_not_part_of_the_text(extract) -> None:
    assert extract("\ufeffNotes".encode(), DocumentType.TEXT) == ["Notes"]


def test_markdown_is_kept_as_written(extract) -> None:
    text = "# Heading\n\n* item with `code`\n"
    assert extract(text.encode(), DocumentType.MARKDOWN) == [text]


def test_text_that_is_not_utf8_is_unreadable(extract) -> None:
    with pytest.raises(UnreadableDocument, match="as text"):
        extract("Café".encode("latin-1"), DocumentType.TEXT)


def test_html_gives_only_the_visible_text_of_the_body(extract) -> None:
    html = (
        b"<!DOCTYPE html><html><head><title>Site log</title><style>p{color:red}</style>"
        b"<script>var secret = 1;</script></head><body><!-- internal note -->"
        b"<h1>Day 1</h1><p>Poured &amp; cured &lt;slab&gt;</p><noscript>enable js</noscript>"
        b"</body></html>"
    )
    assert extract(html, DocumentType.HTML) == ["Day 1\n\nPoured & cured <slab>"]


def test_html_inline_markup_does_not_split_words(extract) -> None:
    html = b"<p>The con<b>crete</b> <a href='#'>slab</a> is <em>cured</em>.</p>"
    assert extract(html, DocumentType.HTML) == ["The concrete slab is cured."]


def test_html_block_elements_are_blocks_of_their_own_and_br_a_line_break(extract) -> None:
    html = b"<ul><li>Rebar</li><li>Formwork</li></ul><div>Load<br>test</div><p>Done</p>"
    assert extract(html, DocumentType.HTML) == ["Rebar\n\nFormwork\n\nLoad\ntest\n\nDone"]


def test_csv_rows_become_lines_of_cells_apart_by_a_bar(extract) -> None:
    data = b'item,note\r\nrebar,"12 mm, ribbed"\r\n,,\r\nglass,"two\nlines"\r\n'
    assert extract(data, DocumentType.CSV) == [
        "item | note\nrebar | 12 mm, ribbed\nglass | two lines"
    ]


def test_csv_that_does_not_parse_is_kept_as_text(extract) -> None:
    data = b'name,remark\nx,"unbalanced ' + b"long remark " * 20_000
    [page] = extract(data, DocumentType.CSV)
    assert page.startswith('name,remark\nx,"unbalanced long remark')
    assert len(page) == len(data)


def test_a_stack_of_one_line_pages_keeps_its_lines_where_a_blank_pages_footer_goes():
    """Issue 51: scanned dockets of one line each, alike but for their numbers, read as one
    running header and lost all their text."""
    from strongroom.ingest.extract import drop_running_lines

    dockets = [f"Delivery docket {n}: 12 m3 of concrete delivered." for n in range(1, 6)]
    assert drop_running_lines(dockets) == dockets
    blank = [f"Report text on page {n} differs: item {'abcde'[n]}.\nPage {n}" for n in range(5)]
    assert all(not page.endswith(f"Page {n}") for n, page in enumerate(drop_running_lines(blank)))
