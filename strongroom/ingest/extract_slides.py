"""PowerPoint decks (PPTX) as pages of blocks (issue 51): one page per slide, checked against
the bounds of strongroom.ingest.office_limits before python-pptx parses it.

A slide's page: its title first; then the text of its other shapes in reading order, which
in PowerPoint is the order of the slide's shape tree (what its Reading Order pane edits and
screen readers follow), shapes inside groups in their place; each paragraph a block; a
table's rows as `Row`s under its first row; then, when the slide has speaker notes, the block
`NOTES_MARKER` ("Notes:") followed by a block per paragraph of the notes. Pictures, charts
and media have no text here.

Every piece of text is counted against `max_text_chars` as it is read, and a deck of more
slides than `max_passages` is refused before it is parsed (a slide is a page, so a deck of
more slides than a document may give passages is larger than any a site sends)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pptx import Presentation
from pptx.oxml.ns import qn
from pptx.shapes.group import GroupShape

from strongroom.ingest.chunking import Block, Row, table_row
from strongroom.ingest.limits import Budget, IngestLimits
from strongroom.ingest.office_limits import check_pptx

NOTES_MARKER = "Notes:"
_P, _T, _BR = qn("a:p"), qn("a:t"), qn("a:br")
_TX_BODY = qn("p:txBody")


def pptx_pages(path: Path, limits: IngestLimits) -> Iterator[list[Block]]:
    """The deck's slides as pages of blocks, in the deck's order. Raises DocumentTooLarge
    past the slide, tag or text bounds, UnreadableDocument for a package that is unsound."""
    check_pptx(
        path,
        max_unzipped=limits.max_unzipped_bytes,
        max_xml_tags=limits.max_xml_tags,
        max_xml_bytes=limits.max_xml_bytes,
        max_slides=limits.max_passages,
    )
    text = Budget.text_of(limits)
    with open(path, "rb") as handle:  # stored blobs have no .pptx name
        deck = Presentation(handle)
    for slide in deck.slides:
        yield list(_slide_blocks(slide, text))


def _slide_blocks(slide, text: Budget) -> Iterator[Block]:
    title = slide.shapes.title
    if title is not None:
        yield from _text_blocks(title, text)
    for shape in slide.shapes:
        if title is None or shape.shape_id != title.shape_id:
            yield from _shape_blocks(shape, text)
    yield from _notes_blocks(slide, text)


def _shape_blocks(shape, text: Budget) -> Iterator[Block]:
    """A shape's text: a group's shapes in their order, a table's rows, a text frame's
    paragraphs; nothing for shapes without text."""
    if isinstance(shape, GroupShape):
        for inner in shape.shapes:
            yield from _shape_blocks(inner, text)
    elif shape.has_table:
        yield from _table_rows(shape.table, text)
    elif shape.has_text_frame:
        yield from _text_blocks(shape, text)


def _text_blocks(shape, text: Budget) -> Iterator[str]:
    body = shape._element.find(_TX_BODY)
    if body is not None:
        yield from (p for p in _paragraphs(body, text) if p.strip())


def _paragraphs(body, text: Budget) -> Iterator[str]:
    """Each `a:p` of a text body as a string, line breaks (`a:br`, shift-Enter) as newlines;
    python-pptx's own `.text` gives them as vertical tabs, which passages drop as control
    characters and so ran the lines' words together. Text is spent from `text` as read."""
    for paragraph in body.iter(_P):
        parts = []
        for node in paragraph.iter(_T, _BR):
            if node.tag == _BR:
                parts.append("\n")
            else:
                content = node.text or ""
                text.spend(len(content))
                parts.append(content)
        yield "".join(parts)


def _table_rows(table, text: Budget) -> Iterator[Row]:
    """One `Row` per row with text, its first such row the header; a cell's paragraphs apart
    by spaces. Cells merged into another are empty, keeping the columns in place."""
    first = True
    for row in table.rows:
        cells = []
        for cell in row.cells:
            body = cell._tc.find(qn("a:txBody"))
            paragraphs = _paragraphs(body, text) if body is not None else ()
            cells.append(" ".join(" ".join(p.split()) for p in paragraphs if p.strip()))
        found = table_row(cells, header=first)
        if found is not None:
            yield found
            first = False


def _notes_blocks(slide, text: Budget) -> Iterator[str]:
    if not slide.has_notes_slide:  # reading `notes_slide` would create one
        return
    frame = slide.notes_slide.notes_text_frame
    if frame is None:
        return
    notes = [p for p in _paragraphs(frame._txBody, text) if p.strip()]
    if notes:
        yield NOTES_MARKER
        yield from notes
