"""PowerPoint decks read slide by slide (issue 51): a page per slide, the title first, the
shapes' text in the slide's reading order (groups included), tables as rows under their
header, speaker notes after a "Notes:" block; and the bounds checked before python-pptx
parses a deck (strongroom.ingest.office_limits.check_pptx)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pptx import Presentation

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.chunking import Row, page_texts
from strongroom.ingest.extract import reading
from strongroom.ingest.extract_slides import NOTES_MARKER, pptx_pages
from strongroom.ingest.limits import DocumentTooLarge, IngestLimits, UnreadableDocument
from strongroom.ingest.office_limits import ArchiveTooLarge
from tests.documents import _zip_bomb, make_pptx


def read(tmp_path: Path, data: bytes, limits: IngestLimits | None = None) -> list[list]:
    path = tmp_path / "blob"  # stored blobs have no extension
    path.write_bytes(data)
    with reading(DocumentType.PPTX):
        return list(pptx_pages(path, limits or IngestLimits()))


def test_each_slide_is_a_page_of_title_text_group_table_then_notes(tmp_path: Path) -> None:
    data = make_pptx(
        [
            {
                "title": "Site update",
                "texts": ["Pour complete\nLevel 3 next"],
                "group": ["Grouped left", "Grouped right"],
                "table": [["Item", "Qty"], ["Rebar", "40"]],
                "notes": "Ask about the crane\nBook the pump",
            },
            {"title": "Programme"},
        ]
    )
    first, second = read(tmp_path, data)
    assert first == [
        "Site update",
        "Pour complete",
        "Level 3 next",
        "Grouped left",
        "Grouped right",
        Row("Item | Qty", header=True),
        Row("Rebar | 40"),
        NOTES_MARKER,
        "Ask about the crane",
        "Book the pump",
    ]
    assert second == ["Programme"]


def test_a_slide_without_text_is_an_empty_page_so_slide_numbers_stay_right(tmp_path) -> None:
    pages = read(tmp_path, make_pptx([{"title": "One"}, {}, {"title": "Three"}]))
    assert list(page_texts(pages)) == ["One", "", "Three"]


def test_the_title_comes_first_wherever_it_sits_in_the_shape_tree(tmp_path: Path) -> None:
    deck = Presentation(io.BytesIO(make_pptx([{"title": "Heading", "texts": ["Body"]}])))
    slide = deck.slides[0]
    tree = slide.shapes._spTree
    tree.append(slide.shapes.title._element)  # the title now last in reading order
    out = io.BytesIO()
    deck.save(out)
    [page] = read(tmp_path, out.getvalue())
    assert page == ["Heading", "Body"]


def test_line_breaks_inside_a_paragraph_keep_words_apart(tmp_path: Path) -> None:
    # python-pptx writes a vertical tab as a line break (a:br)
    [page] = read(tmp_path, make_pptx([{"texts": ["Line one\vLine two"]}]))
    assert page == ["Line one\nLine two"]


def test_slides_past_max_passages_are_refused_before_parsing(tmp_path, monkeypatch) -> None:
    data = make_pptx([{"title": f"Slide {n}"} for n in range(4)])
    monkeypatch.setattr("strongroom.ingest.extract_slides.Presentation", _never_parse)
    with pytest.raises(DocumentTooLarge, match="more than 3 slides"):
        read(tmp_path, data, IngestLimits(max_passages=3))


def _never_parse(*_args, **_kwargs):
    raise AssertionError("python-pptx must not parse a deck past a bound")


def test_slide_text_past_max_text_chars_is_too_large(tmp_path: Path) -> None:
    data = make_pptx([{"title": "x" * 60}, {"title": "y" * 60}])
    assert read(tmp_path, data, IngestLimits(max_text_chars=120))
    with pytest.raises(DocumentTooLarge, match="characters of text"):
        read(tmp_path, data, IngestLimits(max_text_chars=119))


def test_a_deck_past_max_xml_tags_is_refused_before_parsing(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("strongroom.ingest.extract_slides.Presentation", _never_parse)
    with pytest.raises(DocumentTooLarge, match="XML tags"):
        read(tmp_path, make_pptx([{"title": "Hi"}]), IngestLimits(max_xml_tags=100))


@pytest.mark.parametrize("lie", [False, True], ids=["honest", "lying-headers"])
def test_a_zip_bomb_deck_is_refused_as_an_archive_too_large(tmp_path: Path, lie: bool) -> None:
    data = _zip_bomb(make_pptx([{"title": "Hi"}]), "ppt/presentation.xml", 8 << 20, lie)
    with pytest.raises(ArchiveTooLarge):
        read(tmp_path, data, IngestLimits(max_unzipped_bytes=4 << 20))


def test_a_truncated_deck_is_unreadable(tmp_path: Path) -> None:
    data = make_pptx([{"title": "Half a deck"}])
    with pytest.raises(UnreadableDocument, match="could not be read as pptx"):
        read(tmp_path, data[: len(data) // 2])
