"""Reading scanned pages and images (issue 51)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class OcrSettings(BaseModel):
    """Reading scanned pages and images (issue 51)."""

    ocr: Literal["tesseract", "off"] = Field(
        default="tesseract",
        description=(
            "Read scanned PDF pages and PNG, JPEG and TIFF images by OCR (issue 51): Tesseract 5 "
            "with its English and orientation models, both from PyPI wheels (nothing is downloaded"
            " at run time). `off`: such pages are not read, and a document with no other text "
            "fails with `no_text`. `/readyz` names the engine under `details.ocr`."
        ),
    )
    ocr_max_pages: int = Field(
        default=500,
        ge=1,
        description=(
            "Bound on the pages of one document read by OCR (a PDF's pages without text, a TIFF's "
            "frames); above it `document_too_large`. At about a second of CPU a page, 500 pages "
            "are 8 minutes of one job slot."
        ),
    )
    ocr_max_image_pixels: int = Field(
        default=100_000_000,
        ge=1_000_000,
        description=(
            "Bound on the pixels an image or TIFF frame may declare, checked before anything is "
            "decoded (a 100-byte PNG may declare 100,000 x 100,000); above it "
            "`document_too_large`. Larger pages are read scaled down to 12 million pixels."
        ),
    )
    ocr_dpi: int = Field(
        default=300,
        ge=72,
        le=600,
        description=(
            "Resolution at which a PDF page without text is rendered for OCR (72-600; a page is "
            "also kept within 12 million pixels)."
        ),
    )
    ocr_page_seconds: float = Field(
        default=60.0,
        gt=0,
        description=(
            "Tesseract's deadline for one page: a page not read by then counts as empty "
            "(`empty_page_count`). Each page also has the child's CPU budget "
            "(`STRONGROOM_JOB_CPU_LIMIT_SECONDS`), and the job its timeout."
        ),
    )
