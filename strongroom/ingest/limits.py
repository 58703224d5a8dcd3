"""How much one document may cost to read (issue 18): the bounds ingestion checks while it
parses, and the two ways a document fails them.

Every bound is counted as the text is produced, so a hostile file stops being read as soon as
it passes one: nothing is parsed, kept or stored beyond it."""

from __future__ import annotations

from dataclasses import dataclass

from strongroom.settings import Settings


class UnreadableDocument(Exception):
    """The file cannot be read as its type (corrupt, encrypted, a zip bomb)."""


class DocumentTooLarge(UnreadableDocument):
    """The file is readable but would produce more than one document may (text, passages,
    XML tags, cells). A kind of unreadable document, so callers that only know that one
    (template fill) still refuse it."""


@dataclass(frozen=True)
class IngestLimits:
    max_unzipped_bytes: int = 512 * 1024 * 1024
    max_xml_tags: int = 2_000_000
    max_xml_bytes: int = 128 * 1024 * 1024
    max_sheet_cells: int = 5_000_000
    max_pdf_page_chars: int = 200_000
    max_text_chars: int = 25_000_000
    max_passages: int = 20_000

    @classmethod
    def from_settings(cls, settings: Settings) -> IngestLimits:
        return cls(
            max_unzipped_bytes=settings.ingest_max_unzipped_bytes,
            max_xml_tags=settings.ingest_max_xml_tags,
            max_xml_bytes=settings.ingest_max_xml_bytes,
            max_sheet_cells=settings.ingest_max_sheet_cells,
            max_pdf_page_chars=settings.ingest_max_pdf_page_chars,
            max_text_chars=settings.ingest_max_text_chars,
            max_passages=settings.ingest_max_passages,
        )


class Budget:
    """A count that may not pass `limit`: `spend` raises DocumentTooLarge, naming `what`,
    as soon as it does."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.spent = 0

    @classmethod
    def text_of(cls, limits: IngestLimits) -> Budget:
        """The characters of text one document may give (`max_text_chars`)."""
        return cls(limits.max_text_chars, "characters of text")

    def spend(self, amount: int) -> None:
        self.spent += amount
        if self.spent > self.limit:
            raise DocumentTooLarge(f"The document holds more than {self.limit:,} {self.what}.")
