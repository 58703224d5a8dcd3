"""A document from which no text comes says what was tried (issue 51, item 4)."""

from __future__ import annotations

import pytest

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.passages import Passages
from strongroom.vault.ingestion import no_text_detail


@pytest.mark.parametrize(
    ("document_type", "passages", "ocr_on", "detail"),
    [
        (DocumentType.PDF, Passages(3, [], scanned_pages=3), True,
         "The PDF's 3 pages hold no text layer, and OCR found no text."),
        (DocumentType.PDF, Passages(1, [], scanned_pages=1, unread_pages=1), False,
         "The PDF's page holds no text layer, and OCR is off (STRONGROOM_OCR)."),
        (DocumentType.PNG, Passages(1, [], scanned_pages=1), True,
         "The image holds text only as pixels, and OCR found no text."),
        (DocumentType.TIFF, Passages(4, [], scanned_pages=4, unread_pages=4), False,
         "The image's 4 pages hold text only as pixels, and OCR is off (STRONGROOM_OCR)."),
        (DocumentType.DOCX, Passages(2, []), True, "The docx document holds no text."),
    ],
    ids=["scan", "scan-ocr-off", "photo", "tiff-ocr-off", "blank-docx"],
)  # fmt: skip
def test_no_text_says_what_was_tried(document_type, passages, ocr_on, detail):
    assert no_text_detail(document_type, passages, ocr_on) == detail
