"""Legacy Excel workbooks (.xls, issue 51) read as XLSX ones are: a page per sheet, `Sheet:
<name>` then rows, the first row with a value the header, dates as ISO dates; files written by
xlwt, a real producer of the format. And the bounds: rows as long as their last cell (never
padded to the sheet's widest), cells and text counted, broken files unreadable."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.chunking import Row, page_texts
from strongroom.ingest.extract import reading
from strongroom.ingest.extract_office import xls_pages, xlsx_pages
from strongroom.ingest.limits import DocumentTooLarge, IngestLimits, UnreadableDocument
from tests.documents import make_xls, make_xlsx
from tests.unit.ingest.measure import WarmReader


def read(tmp_path: Path, data: bytes, limits: IngestLimits | None = None) -> list[list]:
    path = tmp_path / "blob"
    path.write_bytes(data)
    with reading(DocumentType.XLS):
        return [list(page) for page in xls_pages(path, limits or IngestLimits())]


def test_each_sheet_is_a_page_of_its_name_then_rows_under_a_header(tmp_path: Path) -> None:
    data = make_xls(
        {
            "Costs": [
                ["Item", "Qty", "Delivered"],
                ["Rebar", 40, datetime.date(2024, 3, 1)],
                ["Mesh", 2.5, datetime.datetime(2024, 3, 1, 9, 30)],
                [None, None, True],
            ],
            "Notes": [[None], ["Pour on Tuesday"]],
        }
    )
    costs, notes = read(tmp_path, data)
    assert costs == [
        "Sheet: Costs",
        Row("Item | Qty | Delivered", header=True),
        Row("Rebar | 40 | 2024-03-01"),
        Row("Mesh | 2.5 | 2024-03-01 09:30:00"),
        Row(" |  | True"),
    ]
    assert notes == ["Sheet: Notes", Row("Pour on Tuesday", header=True)]


def test_an_xls_reads_as_the_same_workbook_saved_as_xlsx_does(tmp_path: Path) -> None:
    rows = [["Item", "Amount", "Due"], ["Variation 1", 100, datetime.datetime(2024, 5, 2)]]
    xlsx = tmp_path / "xlsx"
    xlsx.write_bytes(make_xlsx({"Costs": rows}))
    expected = list(page_texts(xlsx_pages(xlsx, IngestLimits())))
    assert list(page_texts(read(tmp_path, make_xls({"Costs": rows})))) == expected


def test_sheets_are_loaded_one_at_a_time_and_released(tmp_path: Path, monkeypatch) -> None:
    import xlrd

    loaded: list[int] = []
    opened = xlrd.open_workbook

    def spying(*args, **kwargs):
        book = opened(*args, **kwargs)
        load, unload = book.sheet_by_index, book.unload_sheet
        book.sheet_by_index = lambda i: (loaded.append(i), load(i))[1]
        book.unload_sheet = lambda i: (loaded.remove(i), unload(i))[1]
        return book

    monkeypatch.setattr(xlrd, "open_workbook", spying)
    path = tmp_path / "blob"
    path.write_bytes(make_xls({"A": [["a"]], "B": [["b"]], "C": [["c"]]}))
    for page in xls_pages(path, IngestLimits()):
        list(page)
        assert len(loaded) == 0  # the sheet read was released before the next loads
    assert loaded == []


def test_one_cell_at_iv65536_reads_in_bounded_memory(
    tmp_path: Path, warm_reader: WarmReader
) -> None:
    """xlrd pads each row to the sheet's widest unless rows are ragged: 16.7 million cells
    (153 MiB) for this 6 KB file. Memory is measured in a process of its own (conftest.py;
    tracemalloc made the read seven times slower, issue 54)."""
    data = make_xls({"Far": [["Head"]]}, cells={"Far": [(65535, 255, "far")]})
    assert len(data) < 10_000
    (tmp_path / "far.xls").write_bytes(data)
    measured = warm_reader.measure(tmp_path / "far.xls", "xls")
    assert measured["outcome"] == "ok"
    assert measured["rss_growth_bytes"] < 40 << 20
    [page] = read(tmp_path, data)
    assert page[:2] == ["Sheet: Far", Row("Head", header=True)]
    assert page[2].text.endswith("| far") and page[2].text.count("|") == 255


def test_rows_count_against_max_sheet_cells_even_when_empty(tmp_path: Path) -> None:
    data = make_xls({"Far": [["Head"]]}, cells={"Far": [(65535, 255, "far")]})
    assert read(tmp_path, data, IngestLimits(max_sheet_cells=65_535 + 256))
    with pytest.raises(DocumentTooLarge, match="spreadsheet cells"):
        read(tmp_path, data, IngestLimits(max_sheet_cells=65_535 + 255))


def test_xls_text_past_max_text_chars_is_too_large(tmp_path: Path) -> None:
    data = make_xls({"Words": [["x" * 100], ["y" * 100]]})
    assert read(tmp_path, data, IngestLimits(max_text_chars=200))
    with pytest.raises(DocumentTooLarge, match="characters of text"):
        read(tmp_path, data, IngestLimits(max_text_chars=199))


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_a_truncated_xls_is_unreadable(tmp_path: Path, cut: float) -> None:
    data = make_xls({"Costs": [["Item", "Qty"]] + [[f"Item {n}", n] for n in range(500)]})
    with pytest.raises(UnreadableDocument, match="could not be read as xls"):
        read(tmp_path, data[: int(len(data) * cut)])


def test_a_compound_file_without_a_workbook_is_unreadable(tmp_path: Path) -> None:
    data = make_xls({"Costs": [["Item"]]}).replace(
        b"W\x00o\x00r\x00k\x00b\x00o\x00o\x00k", b"X" * 16
    )
    with pytest.raises(UnreadableDocument, match="could not be read as xls"):
        read(tmp_path, data)
