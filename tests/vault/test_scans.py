"""Scans and photos through the API (issue 51), on both backends: an image-only PDF, a
photo and a multi-frame TIFF are read by OCR in the ingestion job and answer a search, with
their page; a scan with no text at all is never an empty `ready`."""

from __future__ import annotations

from tests.documents import make_pdf
from tests.scans import blank_pdf, degraded, image_file, image_pdf, page_image
from tests.vault.conftest import unique_word

CLAUSE = (
    "12. Liquidated damages\n"
    "If the Contractor fails to complete the work within the time\n"
    "specified, the Contractor shall pay liquidated damages of\n"
    "5,000 pounds per week of delay to {word}."
)


async def _hits(vault, project_id: str, query: str) -> list[dict]:
    found = await vault.search(query=query, project_ids=[project_id])
    return found["data"]


async def test_a_scanned_pdf_is_read_by_ocr_and_its_page_is_cited(vault):
    project_id = await vault.create_project()
    word = unique_word()
    pages = [
        page_image("Subcontract - cover sheet"),
        degraded(page_image(CLAUSE.format(word=word))),
    ]
    document = await vault.ingested(image_pdf(pages), "subcontract-scan.pdf", project_id)
    assert document["status"] == "ready", document["error"]
    assert document["document_type"] == "pdf"
    assert (document["page_count"], document["ocr_page_count"]) == (2, 2)
    assert document["empty_page_count"] == 0
    hits = await _hits(vault, project_id, "liquidated damages")
    assert hits and hits[0]["document_id"] == document["id"]
    assert hits[0]["page_number"] == 2


async def test_a_photo_and_a_tiff_are_accepted_and_read(vault):
    project_id = await vault.create_project()
    photo = image_file([page_image(CLAUSE.format(word="the Employer")).convert("RGB")], "JPEG")
    document = await vault.ingested(photo, "IMG_2041.jpg", project_id)
    assert (document["status"], document["document_type"]) == ("ready", "jpeg")
    assert document["content_type"] == "image/jpeg"
    assert document["ocr_page_count"] == 1
    frames = [page_image("Delivery docket 1"), page_image("Inspection report: formwork passed")]
    tiff = await vault.ingested(image_file(frames, "TIFF"), "dockets.tif", project_id)
    assert (tiff["status"], tiff["page_count"], tiff["ocr_page_count"]) == ("ready", 2, 2)
    hits = await _hits(vault, project_id, "formwork inspection")
    assert [hit["page_number"] for hit in hits if hit["document_id"] == tiff["id"]] == [2]


async def test_a_scan_with_no_text_fails_with_no_text_saying_what_was_tried(vault):
    project_id = await vault.create_project()
    document = await vault.ingested(blank_pdf(3), "blank-scan.pdf", project_id)
    assert document["status"] == "failed"
    assert document["error"]["code"] == "no_text"
    assert document["error"]["detail"] == (
        "The PDF's 3 pages hold no text layer, and OCR found no text."
    )


async def test_a_document_with_some_empty_pages_is_ready_and_counts_them(vault):
    project_id = await vault.create_project()
    document = await vault.ingested(
        make_pdf(["The roof membrane is warranted for twenty years.", "", ""]), "w.pdf", project_id
    )
    assert document["status"] == "ready", document["error"]
    assert (document["page_count"], document["empty_page_count"]) == (3, 2)
