"""Structure-preserving ingestion (issue 15, point 2): tables, lists, headings and pages kept
as structure in the passages; passages never cut a sentence or a table row; page numbers
right; passages are text as the document has it. Real files made in the tests, read the way
the ingestion job reads them."""

from __future__ import annotations

from pathlib import Path

from docx import Document
from docx.oxml import OxmlElement

from strongroom.corpus.models import DocumentType
from strongroom.ingest.limits import IngestLimits
from strongroom.ingest.passages import read_passages
from tests.documents import make_docx, make_pdf, make_xlsx
from tests.unit.ingest.test_extract import _docx_bytes


def passages(tmp_path: Path, data: bytes, document_type: DocumentType, target: int = 1200):
    path = tmp_path / "blob"
    path.write_bytes(data)
    return read_passages(path, document_type, limits=IngestLimits(), target=target).chunks


def _assert_table_passages(chunks, header: str, rows: list[str]) -> None:
    seen = []
    for chunk in chunks:
        first, *lines = chunk.content.split("\n")
        assert first == header, chunk.content
        seen += lines
    assert seen == rows  # every row whole, once, in order


def test_csv_passages_repeat_the_header_row_and_keep_rows_whole(tmp_path: Path) -> None:
    rows = [f"2024-03-{day:02d},Level {day},Pour slab {day}" for day in range(1, 29)]
    data = ("Date,Location,Activity\n" + "\n".join(rows) + "\n").encode()
    chunks = passages(tmp_path, data, DocumentType.CSV, target=200)
    assert len(chunks) > 3
    _assert_table_passages(
        chunks, "Date | Location | Activity", [row.replace(",", " | ") for row in rows]
    )


def test_csv_empty_cells_keep_their_column(tmp_path: Path) -> None:
    [chunk] = passages(tmp_path, b"Item,Qty,Unit\nRebar,,t\n", DocumentType.CSV)
    assert chunk.content == "Item | Qty | Unit\nRebar | | t"


def test_xlsx_passages_repeat_the_header_row_per_sheet(tmp_path: Path) -> None:
    rows = [["Item", "Amount"]] + [[f"Variation {n}", n * 100] for n in range(1, 40)]
    chunks = passages(tmp_path, make_xlsx({"Costs": rows}), DocumentType.XLSX, target=150)
    assert chunks[0].content.startswith("Sheet: Costs\n\nItem | Amount\nVariation 1 | 100")
    first = chunks[0].content.split("\n\n", 1)[1]
    _assert_table_passages(
        [type(chunks[0])(1, first), *chunks[1:]],
        "Item | Amount",
        [f"Variation {n} | {n * 100}" for n in range(1, 40)],
    )


def test_html_title_is_not_body_text_and_headings_and_items_are_blocks(tmp_path: Path) -> None:
    html = (
        b"<html><head><title>Harbour Tower site diary</title></head><body>"
        b"<h1>Day 12</h1><p>The contractor shall:</p>"
        b"<ul><li>(a) pour the slab;</li><li>(b) strip the forms.</li></ul>"
        b"<table><tr><th>Trade</th><th>Crew</th></tr><tr><td>Concrete</td><td>8</td></tr></table>"
        b"<p>Is the slab cured? Yes! It was.</p></body></html>"
    )
    [chunk] = passages(tmp_path, html, DocumentType.HTML)
    assert "site diary" not in chunk.content
    assert chunk.content == (
        "Day 12\n\nThe contractor shall:\n\n(a) pour the slab;\n\n(b) strip the forms.\n\n"
        "Trade | Crew\nConcrete | 8\n\nIs the slab cured? Yes! It was."
    )


def test_html_white_space_is_collapsed_but_pre_keeps_its_lines(tmp_path: Path) -> None:
    html = b"<p>The   contractor\n   shall pay.</p><pre>line one\nline two</pre>"
    [chunk] = passages(tmp_path, html, DocumentType.HTML)
    assert chunk.content == "The contractor shall pay.\n\nline one\nline two"


def test_docx_headings_list_labels_and_lead_ins_stay_apart(tmp_path: Path) -> None:
    data = make_docx(
        ["5. PAYMENT", "The Contractor shall:", "(a) submit a claim monthly;", "(b) keep records."]
    )
    [chunk] = passages(tmp_path, data, DocumentType.DOCX)
    assert chunk.content == (
        "5. PAYMENT\n\nThe Contractor shall:\n\n(a) submit a claim monthly;\n\n(b) keep records."
    )


def test_docx_tables_repeat_their_header_row(tmp_path: Path) -> None:
    table = [["Milestone", "Date"]] + [[f"Stage {n}", f"2025-0{n % 9 + 1}-01"] for n in range(30)]
    chunks = passages(tmp_path, make_docx(["Programme"], table=table), DocumentType.DOCX, 120)
    assert chunks[0].content.startswith("Programme\n\nMilestone | Date\nStage 0 | ")
    for chunk in chunks[1:]:
        assert chunk.content.startswith("Milestone | Date\nStage ")


def test_docx_pages_follow_words_rendered_page_breaks(tmp_path: Path) -> None:
    """Word marks where each page began when it last laid the file out; those are the pages
    a reader sees, explicit breaks or not."""
    document = Document()
    document.add_paragraph("Page one text.")
    second = document.add_paragraph()
    run = second.add_run("Page two starts here.")
    run._r.insert(0, OxmlElement("w:lastRenderedPageBreak"))
    document.add_paragraph("Still page two.")
    third = document.add_paragraph("Page three.")
    third.runs[0]._r.insert(0, OxmlElement("w:lastRenderedPageBreak"))
    chunks = passages(tmp_path, _docx_bytes(document), DocumentType.DOCX)
    assert [(c.page_number, c.content) for c in chunks] == [
        (1, "Page one text."),
        (2, "Page two starts here.\n\nStill page two."),
        (3, "Page three."),
    ]


def test_docx_paragraphs_that_start_a_page_start_one(tmp_path: Path) -> None:
    document = Document()
    document.add_paragraph("Cover")
    document.add_paragraph("Contents").paragraph_format.page_break_before = True
    chunks = passages(tmp_path, _docx_bytes(document), DocumentType.DOCX)
    assert [(c.page_number, c.content) for c in chunks] == [(1, "Cover"), (2, "Contents")]


def test_pdf_running_headers_and_footers_are_dropped_and_pages_kept(tmp_path: Path) -> None:
    works = ["the piles", "the slab", "the frame", "the facade", "the fit-out"]
    bodies = [
        f"Clause {n}. The contractor shall complete {w} on time." for n, w in enumerate(works)
    ]
    pages = [
        f"Harbour Tower - Specification\n{body}\nPage {n} of 5"
        for n, body in enumerate(bodies, start=1)
    ]  # fpdf2 lays each line out as a line of its own
    chunks = passages(tmp_path, make_pdf(pages), DocumentType.PDF)
    assert [chunk.page_number for chunk in chunks] == [1, 2, 3, 4, 5]
    for chunk, body in zip(chunks, bodies, strict=True):
        assert "Harbour Tower" not in chunk.content
        assert "Page" not in chunk.content
        assert " ".join(chunk.content.split()) == body


def test_pdf_lines_that_only_some_pages_share_are_kept(tmp_path: Path) -> None:
    pages = ["Notes\nFirst page.", "Second page.", "Third page.", "Notes\nFourth page."]
    chunks = passages(tmp_path, make_pdf(pages), DocumentType.PDF)
    assert chunks[0].content.startswith("Notes")
    assert chunks[3].content.startswith("Notes")


def test_passages_never_cut_a_sentence_that_fits(tmp_path: Path) -> None:
    sentences = [f"Sentence {n} says the works end by day {n * 7}." for n in range(200)]
    text = " ".join(sentences).encode()
    for chunk in passages(tmp_path, text, DocumentType.TEXT, target=300):
        assert chunk.content.startswith("Sentence ")
        assert chunk.content.endswith(".")
        assert chunk.content in text.decode()
