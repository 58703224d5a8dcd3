"""Bounds on what reading one document may take or give."""

from __future__ import annotations

from pydantic import BaseModel, Field


class IngestionSettings(BaseModel):
    """Bounds on what reading one document may take or give."""

    ingest_max_unzipped_bytes: int = Field(
        default=512 * 1024 * 1024,
        ge=1,
        description=(
            "Bound on what a DOCX or XLSX may expand to when read (zip bombs); above it the "
            "document fails with `unreadable_document`."
        ),
    )
    ingest_max_xml_tags: int = Field(
        default=2_000_000,
        ge=1,
        description=(
            "Bound on the XML tags (`<` of XML members, counted while inflating, before any parser"
            " runs) of a DOCX, every part, or an XLSX, every part but its worksheets (streamed, "
            "bounded by the next setting). Above it the document fails with `document_too_large`. "
            "Templates are held to `STRONGROOM_TEMPLATE_MAX_*` instead, by the same guard. Two "
            "million tags are about a million elements: a python-docx tree of roughly 150 MB."
        ),
    )
    ingest_max_xml_bytes: int = Field(
        default=128 * 1024 * 1024,
        ge=1,
        description=(
            "Bound on the bytes of XML of a DOCX, every part, or an XLSX, every part but its "
            "worksheets (its shared strings included), counted while inflating, before any parser "
            "builds a tree of them; above it `document_too_large`. A 488 KB DOCX of 53 text nodes "
            "of 9 MB held 477 MB (issue 28)."
        ),
    )
    ingest_max_sheet_cells: int = Field(
        default=5_000_000,
        ge=1,
        description=(
            "Bound on the cells read from an XLSX, all sheets together, empty cells within a row "
            "included (a row is as wide as its last cell); above it `document_too_large`. A cell's"
            " text is read up to Excel's own 32,767 characters and counted against "
            "`STRONGROOM_INGEST_MAX_TEXT_CHARS` before it is copied."
        ),
    )
    ingest_max_pdf_page_chars: int = Field(
        default=200_000,
        ge=1,
        description=(
            "Bound on the text one PDF page may give (a dense page holds about 10,000 characters);"
            " counted as pypdf finds the text, so a page past it stops there: "
            "`document_too_large`. Catches small PDFs whose pages all draw one huge content "
            "stream."
        ),
    )
    ingest_max_text_chars: int = Field(
        default=25_000_000,
        ge=1,
        description=(
            "Bound on the characters of text one document may give, counted as it is read; above "
            "it `document_too_large` and nothing is stored."
        ),
    )
    ingest_max_passages: int = Field(
        default=20_000,
        ge=1,
        description=(
            "Bound on the passages (search chunks of up to 1,200 characters) one document may "
            "give; above it `document_too_large` and nothing is stored. 20,000 is also what one "
            "workflow run reads at most."
        ),
    )
