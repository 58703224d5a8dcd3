"""Word's tracked changes and comments (issue 51, item 3): a DOCX reads as its text now reads
(insertions and moves kept where they went, deletions and what was moved away dropped), and
each comment is a block `Comment (<author>): <text>` after the paragraph or table it is
anchored to. Documents made with python-docx, the changes written as Word writes them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from docx import Document
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls

from strongroom.ingest.extract_office import docx_pages
from strongroom.ingest.limits import DocumentTooLarge, IngestLimits

_W = nsdecls("w")


def read(tmp_path: Path, document, limits: IngestLimits | None = None) -> list[list]:
    out = io.BytesIO()
    document.save(out)
    path = tmp_path / "blob"
    path.write_bytes(out.getvalue())
    return docx_pages(path, limits or IngestLimits())


def _paragraph(xml_runs: str):
    return parse_xml(f"<w:p {_W}>{xml_runs}</w:p>")


def _run(text: str, tag: str = "w:t") -> str:
    return f'<w:r><{tag} xml:space="preserve">{text}</{tag}></w:r>'


def _change(kind: str, runs: str, change_id: int = 1) -> str:
    attributes = f'w:id="{change_id}" w:author="Tom Brown" w:date="2024-03-01T09:00:00Z"'
    return f"<w:{kind} {attributes}>{runs}</w:{kind}>"


def test_inserted_text_is_kept_and_deleted_text_dropped(tmp_path: Path) -> None:
    document = Document()
    runs = (
        _run("The pour is on ")
        + _change("del", _run("Monday", "w:delText"))
        + _change("ins", _run("Tuesday"), 2)
        + _run(".")
    )
    document.element.body.insert(0, _paragraph(runs))
    assert read(tmp_path, document) == [["The pour is on Tuesday."]]


def test_text_moved_away_is_dropped_and_kept_where_it_went(tmp_path: Path) -> None:
    document = Document()
    body = document.element.body
    body.insert(0, _paragraph(_run("First. ") + _change("moveFrom", _run("Moved sentence."))))
    body.insert(1, _paragraph(_run("Second. ") + _change("moveTo", _run("Moved sentence."), 2)))
    assert read(tmp_path, document) == [["First. ", "Second. Moved sentence."]]


def test_a_deleted_line_break_or_tab_is_no_longer_there(tmp_path: Path) -> None:
    document = Document()
    deleted = _change("del", "<w:r><w:br/></w:r><w:r><w:tab/></w:r>")
    document.element.body.insert(0, _paragraph(_run("Line one") + deleted + _run(" goes on")))
    assert read(tmp_path, document) == [["Line one goes on"]]


def test_deleted_text_in_a_table_cell_is_dropped(tmp_path: Path) -> None:
    document = Document()
    cell = document.add_table(rows=1, cols=1).rows[0].cells[0]
    cell.paragraphs[0]._p.append(
        parse_xml(_change("del", _run("Old", "w:t")).replace("<w:del ", f"<w:del {_W} "))
    )
    cell.add_paragraph("New")
    [page] = read(tmp_path, document)
    assert [block.text for block in page] == ["New"]


def test_a_comment_follows_the_paragraph_it_is_anchored_to(tmp_path: Path) -> None:
    document = Document()
    document.add_paragraph("Intro.")
    checked = document.add_paragraph("The slab is C40.")
    document.add_paragraph("Closing.")
    document.add_comment(checked.runs, text="Check the grade", author="Jane Smith")
    assert read(tmp_path, document) == [
        ["Intro.", "The slab is C40.", "Comment (Jane Smith): Check the grade", "Closing."]
    ]


def test_a_comment_over_several_paragraphs_follows_the_first_once(tmp_path: Path) -> None:
    document = Document()
    first = document.add_paragraph("One.")
    second = document.add_paragraph("Two.")
    document.add_comment([first.runs[0], second.runs[0]], text="Both", author="Ann Lee")
    assert read(tmp_path, document) == [["One.", "Comment (Ann Lee): Both", "Two."]]


def test_a_comment_in_a_table_follows_the_table(tmp_path: Path) -> None:
    document = Document()
    table = document.add_table(rows=2, cols=1)
    table.rows[0].cells[0].text = "Item"
    table.rows[1].cells[0].text = "Rebar"
    document.add_comment(
        table.rows[1].cells[0].paragraphs[0].runs, text="Which bar?", author="Ann Lee"
    )
    [page] = read(tmp_path, document)
    assert [getattr(block, "text", block) for block in page] == [
        "Item",
        "Rebar",
        "Comment (Ann Lee): Which bar?",
    ]


def test_without_comments_the_document_reads_as_before(tmp_path: Path) -> None:
    document = Document()
    document.add_paragraph("Plain.")
    assert read(tmp_path, document) == [["Plain."]]


def test_comment_text_counts_against_max_text_chars(tmp_path: Path) -> None:
    document = Document()
    paragraph = document.add_paragraph("x" * 50)
    document.add_comment(paragraph.runs, text="y" * 50, author="A")
    assert read(tmp_path, document, IngestLimits(max_text_chars=100))
    with pytest.raises(DocumentTooLarge, match="characters of text"):
        read(tmp_path, document, IngestLimits(max_text_chars=99))
