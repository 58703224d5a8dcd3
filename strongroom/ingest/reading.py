"""One way a parser's failure on a hostile or broken file is told: UnreadableDocument
(issue 18), shared by the extractors (strongroom.ingest.extract) and OCR
(strongroom.ingest.ocr)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import contextmanager

from pypdf.errors import PdfReadError, PyPdfError

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.limits import UnreadableDocument


@contextmanager
def reading(document_type: DocumentType) -> Iterator[None]:
    """Whatever a parser raises on a hostile or broken file becomes UnreadableDocument
    (DocumentTooLarge, one of them, passes as it is)."""
    try:
        yield
    except (UnreadableDocument, MemoryError):
        raise  # out of memory is the child's limit (job_resource_limit), not the file's fault
    except (PyPdfError, PdfReadError, zipfile.BadZipFile, KeyError, ValueError, OSError) as error:
        raise UnreadableDocument(f"The file could not be read as {document_type.value}.") from error
    except Exception as error:  # parsers of hostile files fail in many ways
        raise UnreadableDocument(
            f"The file could not be read as {document_type.value} ({type(error).__name__})."
        ) from error
