"""Bounds on a DOCX template of a template fill."""

from __future__ import annotations

from pydantic import BaseModel, Field


class TemplateSettings(BaseModel):
    """Bounds on a DOCX template of a template fill."""

    template_max_unzipped_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        description=(
            "Bound on what a DOCX template (POST /templates/fill) may expand to, as its archive "
            "declares and as it actually inflates (checked while streaming, before python-docx "
            "reads it); above it the fill job fails with `template_too_large`."
        ),
    )
    template_max_xml_bytes: int = Field(
        default=32 * 1024 * 1024,
        ge=1,
        description=(
            "Bound on the inflated size of a template's XML parts together; above it "
            "`template_too_large`."
        ),
    )
    template_max_xml_elements: int = Field(
        default=500_000,
        ge=1,
        description=(
            "Bound on the XML elements of a template's parts together, counted as tags (`<`) while"
            " inflating, before any parser runs, by the same guard as "
            "`STRONGROOM_INGEST_MAX_XML_TAGS` (`strongroom/ingest/office_limits.py`): an empty "
            "element such as `<w:p/>` is one tag, an element with content two, so the bound on "
            "elements is never passed and a template may be refused a little before it. Above it "
            "`template_too_large` (a 154 KB DOCX of 100 MiB of `<w:p/>` holds 17 million). A "
            "300-page contract has well under 200,000 elements."
        ),
    )
