"""Every document a site sends, through the API (issue 51), on both backends: an image-only
PDF, a photo and a multi-frame TIFF are read by OCR in the ingestion job and answer a search,
with their page; slides, legacy Excel and mail (with a scanned attachment) are read; a scan
with no text at all is never an empty `ready`."""

from __future__ import annotations

from tests.documents import make_eml, make_msg, make_pdf, make_pptx, make_xls
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


async def test_slides_legacy_excel_and_outlook_mail_are_read_page_by_page(vault):
    project_id = await vault.create_project()
    word = unique_word()
    deck = make_pptx(
        [
            {"title": "Programme"},
            {"title": "Crane lift", "texts": ["Tower crane dismantled in week 32"],
             "notes": f"Confirm the lift plan with {word}."},
        ]
    )  # fmt: skip
    slides = await vault.ingested(deck, "site-meeting.pptx", project_id)
    assert (slides["status"], slides["document_type"], slides["page_count"]) == ("ready", "pptx", 2)
    hits = await _hits(vault, project_id, word)
    assert [hit["page_number"] for hit in hits] == [2]
    sheets = make_xls({"Rates": [["Item", "Rate"], ["Rebar supply", 1450]]})
    legacy = await vault.ingested(sheets, "rates.xls", project_id)
    assert (legacy["status"], legacy["document_type"]) == ("ready", "xls")
    outlook = make_msg(subject="Variation instruction 14", body="Omit the canopy at gridline C.")
    message = await vault.ingested(outlook, "VI-14.msg", project_id)
    assert (message["status"], message["document_type"]) == ("ready", "msg")
    assert (await _hits(vault, project_id, "canopy gridline"))[0]["document_id"] == message["id"]


async def test_an_email_reads_its_body_then_its_attachments_a_scan_by_ocr(vault):
    project_id = await vault.create_project()
    scan = image_pdf([page_image(CLAUSE.format(word="the Employer"))])
    mail = make_eml(
        subject="Signed subcontract",
        text="Please find the signed subcontract attached.",
        attachments=[("subcontract-signed.pdf", "application/pdf", scan)],
    )
    document = await vault.ingested(mail, "signed.eml", project_id)
    assert (document["status"], document["document_type"]) == ("ready", "eml")
    assert document["page_count"] == 2
    hits = await _hits(vault, project_id, "liquidated damages")
    assert hits[0]["page_number"] == 2
    assert "Attachment: subcontract-signed.pdf" in hits[0]["content"]
