"""Scans and photos read by OCR (issue 51), and the bounds of images: each test reads files
made as a scanner or a camera makes them (tests/scans.py) the way the ingestion job does,
first call then a call a page (strongroom.ingest.passages, strongroom.ingest.ocr).

The pages read here are slips of A4's width and a quarter of its height (`SLIP`): what OCR
costs grows with a page's pixels, what it reads does not (issue 54: full A4 pages took three
times as long). Whole A4 scans are read end to end in tests/vault/test_site_documents.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.detect import detect
from strongroom.ingest.limits import DocumentTooLarge, IngestLimits, UnreadableDocument
from strongroom.ingest.ocr import ocr_blocks, read_page
from strongroom.ingest.passages import (
    IndexedPassages,
    Unrecognised,
    index_pages,
    read_indexed_passages,
)
from strongroom.ingest.recognition import OcrLimits, ToRecognise
from tests.documents import make_pdf
from tests.scans import (
    degraded,
    image_file,
    image_pdf,
    image_pdf_of_pages,
    page_image,
    png_declaring,
    tiff_of_frames,
    truncated_jpeg,
)

CLAUSE = (
    "If the Contractor fails to complete the work within the time\n"
    "specified, the Contractor shall pay liquidated damages of\n"
    "5,000 pounds per week of delay."
)
LIMITS, OCR = IngestLimits(), OcrLimits()
SLIP = (1654, 600)  # pixels at 200 dpi: 8.3 x 3 inches


def slip(text: str, turn: int = 0) -> Image.Image:
    return page_image(text, size=SLIP, turn=turn)


def _write(tmp_path: Path, data: bytes, name: str = "scan") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _read_all(path: Path, document_type: DocumentType) -> IndexedPassages:
    """What the ingestion job does: the first call, then each page by OCR, then indexing."""
    first = read_indexed_passages(path, document_type, limits=LIMITS, ocr=OCR)
    if not isinstance(first, Unrecognised):
        return first
    pages = [
        read_page(path, document_type, page.index, OCR).blocks
        if isinstance(page, ToRecognise)
        else page
        for page in first.pages
    ]
    return index_pages(pages, limits=LIMITS, scanned_pages=len(pages), ocr_pages=len(pages))


def _words(read: IndexedPassages) -> str:
    return " ".join(" ".join(chunk.content.split()) for chunk in read.passages.chunks)


def test_an_image_only_pdf_page_is_recognised_and_keeps_its_page(tmp_path):
    path = _write(tmp_path, image_pdf([slip("A cover page."), slip(CLAUSE)]))
    read = _read_all(path, DocumentType.PDF)
    assert "liquidated damages of 5,000 pounds per week" in _words(read)
    pages = {chunk.page_number for chunk in read.passages.chunks if "damages" in chunk.content}
    assert pages == {2}


def test_a_pdf_with_a_text_layer_is_not_sent_to_ocr(tmp_path):
    path = _write(tmp_path, make_pdf(["The Contractor shall keep the site clean every day."]))
    first = read_indexed_passages(path, DocumentType.PDF, limits=LIMITS, ocr=OCR)
    assert isinstance(first, IndexedPassages)
    assert first.passages.scanned_pages == 0


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_page_scanned_sideways_or_upside_down_is_turned_before_reading(tmp_path, turn):
    path = _write(tmp_path, image_pdf([degraded(slip(CLAUSE, turn=turn))]))
    read = read_page(path, DocumentType.PDF, 0, OCR)
    assert read.turned == (360 - turn) % 360
    assert "liquidated damages" in " ".join(read.blocks)


@pytest.mark.parametrize("format", ["PNG", "JPEG"])
def test_a_photo_is_read_as_one_page(tmp_path, format):
    data = image_file([slip(CLAUSE).convert("RGB")], format)
    path = _write(tmp_path, data)
    assert detect(path, "photo.bin").type is DocumentType(format.lower())
    read = _read_all(path, DocumentType(format.lower()))
    assert read.passages.page_count == 1
    assert "pounds per week" in _words(read)


def test_every_frame_of_a_tiff_is_a_page(tmp_path):
    frames = [slip("The first frame."), slip(CLAUSE), slip("Third.", turn=180)]
    path = _write(tmp_path, image_file(frames, "TIFF"))
    assert detect(path, "scan.tif").type is DocumentType.TIFF
    read = _read_all(path, DocumentType.TIFF)
    assert read.passages.page_count == 3
    by_page = {chunk.page_number: chunk.content for chunk in read.passages.chunks}
    assert "first frame" in by_page[1] and "damages" in by_page[2] and "Third" in by_page[3]


def test_a_blank_scan_gives_no_passages(tmp_path):
    path = _write(tmp_path, image_pdf([Image.new("L", SLIP, 255)] * 2))
    read = _read_all(path, DocumentType.PDF)
    assert read.passages.chunks == []
    assert read.passages.empty_pages == 2


def test_with_ocr_off_a_scan_counts_its_unread_pages(tmp_path):
    path = _write(tmp_path, image_pdf([slip(CLAUSE)] * 3))
    read = read_indexed_passages(path, DocumentType.PDF, limits=LIMITS, ocr=None)
    assert isinstance(read, IndexedPassages)
    assert (read.passages.page_count, read.passages.unread_pages) == (3, 3)
    assert read.passages.chunks == []


def test_lines_of_a_paragraph_join_and_list_items_stay_apart():
    text = "The Contractor shall pay weekly and\nin full.\n(a) first item;\n(b) second."
    assert ocr_blocks(text) == [
        "The Contractor shall pay weekly and in full.",
        "(a) first item;",
        "(b) second.",
    ]


def test_lines_a_tables_rules_part_into_cells_are_rows_under_their_header():
    from strongroom.ingest.chunking import Row

    text = "Table D-2\nHours| Sound level\n8|90\n| 6 | 92 |\nThe table ends."
    assert ocr_blocks(text) == [
        "Table D-2",
        Row("Hours | Sound level", header=True),
        Row("8 | 90"),
        Row("6 | 92"),
        "The table ends.",
    ]


def test_a_word_broken_at_a_line_end_is_joined_only_when_the_page_spells_it_whole():
    text = "Damages are due. The Contractor shall pay dam-\nages and keep the large-\nscale plans."
    assert ocr_blocks(text) == [
        "Damages are due. The Contractor shall pay damages and keep the large-scale plans."
    ]


# ---------------------------------------------------------------------------------------------
# Bounds (issue 51, item 2): each hostile image ends with a clear error, decoding nothing


def test_a_small_png_declaring_ten_billion_pixels_is_too_large_before_decoding(tmp_path):
    path = _write(tmp_path, png_declaring(100_000, 100_000))
    assert path.stat().st_size < 200
    assert detect(path, "tiny.png").type is DocumentType.PNG
    with pytest.raises(DocumentTooLarge, match="100,000 x 100,000 pixels"):
        read_indexed_passages(path, DocumentType.PNG, limits=LIMITS, ocr=OCR)


def test_a_tiff_of_ten_thousand_frames_is_too_large(tmp_path):
    path = _write(tmp_path, tiff_of_frames(10_000))
    with pytest.raises(DocumentTooLarge, match="more than 500 pages"):
        read_indexed_passages(path, DocumentType.TIFF, limits=LIMITS, ocr=OCR)


def test_a_pdf_of_more_image_pages_than_the_bound_is_too_large(tmp_path):
    path = _write(tmp_path, image_pdf_of_pages(30))
    with pytest.raises(DocumentTooLarge, match="30 pages without text"):
        read_indexed_passages(path, DocumentType.PDF, limits=LIMITS, ocr=OcrLimits(max_pages=20))


def test_a_truncated_jpeg_is_unreadable(tmp_path):
    path = _write(tmp_path, truncated_jpeg())
    assert detect(path, "cut.jpg").type is DocumentType.JPEG
    with pytest.raises(UnreadableDocument):
        read_page(path, DocumentType.JPEG, 0, OCR)


def test_a_huge_pdf_page_is_rendered_within_the_pixels_read(tmp_path):
    """A page of 200 x 200 inches would be 3.6 G pixels at 300 dpi: it is rendered within
    `max_pixels_read` and read."""
    from strongroom.ingest.ocr import _pdf_page_image

    big = page_image(CLAUSE, size=(4000, 4000), font_size=60)
    path = _write(tmp_path, image_pdf([big], dpi=20))  # 200 inches a side
    image = _pdf_page_image(path, 0, OCR)
    assert image.width * image.height <= OCR.max_pixels_read


def test_the_engine_check_reads_a_blank_page_and_names_tesseract():
    """What the image's build runs (Dockerfile): the engine and its models load offline."""
    from strongroom.ingest.ocr import check_engine

    assert check_engine().startswith("tesseract 5.")


def test_a_scans_running_header_and_page_numbers_are_dropped_as_a_pdfs_are():
    duties = ["keep records", "insure the works", "clean the site", "protect trees"]
    pages = [
        ["SUBCONTRACT 4471", f"The Subcontractor shall {duty}.", f"Page {n}"]
        for n, duty in enumerate(duties, start=1)
    ]
    read = index_pages(pages, limits=LIMITS, scanned_pages=4, ocr_pages=4)
    text = " ".join(chunk.content for chunk in read.passages.chunks)
    assert "SUBCONTRACT 4471" not in text and "Page 3" not in text
    assert "The Subcontractor shall clean the site." in text


def test_a_short_text_layer_is_kept_unless_ocr_reads_clearly_more():
    from strongroom.ingest.recognition import ReadPage, page_text

    cover = ToRecognise(0, layer="Owner only: Harbour Tower")
    assert page_text(cover, ReadPage(["0wner only: Harbour T0wer"])) == cover.layer
    stamp = ToRecognise(1, layer="RECEIVED")
    scan = ReadPage(["RECEIVED", CLAUSE])
    assert page_text(stamp, scan) is scan.blocks
    assert page_text(ToRecognise(2), ReadPage(["A line."])) == ["A line."]


def test_a_scanned_page_holding_a_tables_rows_is_indexed_with_them():
    from strongroom.ingest.chunking import Row

    pages = [
        ["Table D-2", Row("Hours | Sound level", header=True), Row("8 | 90")],
        ["Noise exposure shall be kept within the table's limits."],
    ]
    read = index_pages(pages, limits=LIMITS, scanned_pages=2, ocr_pages=2)
    assert read.passages.chunks[0].content == "Table D-2\n\nHours | Sound level\n8 | 90"


def test_a_paragraph_tesseract_broke_inside_a_sentence_is_one_block_again():
    text = "The cement shall be so ground that ninety\n\n(92%) will pass a sieve.\n\nNext one."
    assert ocr_blocks(text) == [
        "The cement shall be so ground that ninety (92%) will pass a sieve.",
        "Next one.",
    ]
