"""What a document is and where it stands (D42), apart from the tables: the parsing
children import these (strongroom/jobs/bounded.py), and SQLModel with SQLAlchemy were 0.7 of
the 1.7 s a child took to import its parsers (issue 41)."""

from __future__ import annotations

from enum import StrEnum


class DocumentType(StrEnum):
    """What a document is, detected from its content (D42)."""

    PDF = "pdf"
    DOCX = "docx"
    XLSX = "xlsx"
    TEXT = "text"
    MARKDOWN = "markdown"
    HTML = "html"
    CSV = "csv"
    # Issue 51: what a site sends besides. Images are read by OCR, every TIFF frame a page.
    PNG = "png"
    JPEG = "jpeg"
    TIFF = "tiff"
    PPTX = "pptx"
    XLS = "xls"
    EML = "eml"
    MSG = "msg"

    @property
    def content_type(self) -> str:
        return _CONTENT_TYPES[self]

    @property
    def is_image(self) -> bool:
        return self in _IMAGES


_CONTENT_TYPES = {
    DocumentType.PDF: "application/pdf",
    DocumentType.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    DocumentType.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    DocumentType.TEXT: "text/plain; charset=utf-8",
    DocumentType.MARKDOWN: "text/markdown; charset=utf-8",
    DocumentType.HTML: "text/html; charset=utf-8",
    DocumentType.CSV: "text/csv; charset=utf-8",
    DocumentType.PNG: "image/png",
    DocumentType.JPEG: "image/jpeg",
    DocumentType.TIFF: "image/tiff",
    DocumentType.PPTX: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    DocumentType.XLS: "application/vnd.ms-excel",
    DocumentType.EML: "message/rfc822; charset=utf-8",
    DocumentType.MSG: "application/vnd.ms-outlook",
}
_IMAGES = frozenset({DocumentType.PNG, DocumentType.JPEG, DocumentType.TIFF})


# What an upload may be, as the upload's `unsupported_file_type` and its error page say it:
# every DocumentType is named (tests/unit/ingest/test_detect.py keeps them in step).
READ_FORMATS = (
    "PDF (scanned pages read by OCR), DOCX, XLSX, XLS, PPTX, PNG, JPEG, TIFF, email (EML or "
    "Outlook MSG), plain text, Markdown, HTML or CSV"
)


class DocumentStatus(StrEnum):
    PROCESSING = "processing"
    READY = "ready"
    FAILED = "failed"


class DocumentMeaning(StrEnum):
    """Whether a ready document's vectors are made (issue 50): it is searched by words and
    answered as soon as it is `ready`; its passages' vectors follow in a job of their own."""

    PENDING = "pending"  # its vectors are being made; passages without them match by words
    COMPLETE = "complete"  # every passage has its vectors
    FAILED = "failed"  # the embeddings provider failed: by words until `strongroom reembed`
    OFF = "off"  # no embeddings provider was configured when it was read


# The status of a document whose project is being deleted (issue 42): its rows go in the
# project's deletion job, and meanwhile no list, lookup, search or answer shows it. Not a
# DocumentStatus: no client ever sees a document in it.
DOCUMENT_DELETING = "deleting"
