"""Document types are told from content (D42): the name only tells text formats apart."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest

from strongroom.corpus.models import DocumentType
from strongroom.ingest.detect import Detected, charset_of, detect_type
from strongroom.ingest.detect import detect as detect_file
from tests.documents import make_docx, make_pdf, make_xlsx


@pytest.fixture
def stored(tmp_path: Path):
    """Bytes stored under a blob-like name (no extension), as an upload is."""
    counter = iter(range(1_000_000))

    def store(data: bytes) -> Path:
        path = tmp_path / f"upload-{next(counter)}"
        path.write_bytes(data)
        return path

    return store


@pytest.fixture
def detect(stored):
    """detect_type over bytes."""

    def run(data: bytes, filename: str) -> DocumentType | None:
        return detect_type(stored(data), filename)

    return run


def test_a_pdf_is_a_pdf(detect) -> None:
    assert detect(make_pdf(["Site plan"]), "plan.pdf") is DocumentType.PDF


def test_a_pdf_named_txt_is_a_pdf(detect) -> None:
    assert detect(make_pdf(["Site plan"]), "notes.txt") is DocumentType.PDF


def test_a_text_file_named_pdf_is_text(detect) -> None:
    assert detect(b"Just some notes about the site.\n", "plan.pdf") is DocumentType.TEXT


@pytest.mark.parametrize("filename", ["report.docx", "report.xlsx", "report.pdf", "report"])
def test_a_docx_is_a_docx_whatever_its_name(detect, filename: str) -> None:
    assert detect(make_docx(["Minutes"]), filename) is DocumentType.DOCX


@pytest.mark.parametrize("filename", ["costs.xlsx", "costs.docx", "costs.csv", "costs"])
def test_an_xlsx_is_an_xlsx_whatever_its_name(detect, filename: str) -> None:
    assert detect(make_xlsx({"Costs": [["Steel", 12]]}), filename) is DocumentType.XLSX


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("readme.md", DocumentType.MARKDOWN),
        ("README.MD", DocumentType.MARKDOWN),
        ("notes.markdown", DocumentType.MARKDOWN),
        ("rows.csv", DocumentType.CSV),
        ("page.html", DocumentType.HTML),
        ("page.htm", DocumentType.HTML),
        ("notes.txt", DocumentType.TEXT),
        ("notes", DocumentType.TEXT),
        ("archive.tar.gz", DocumentType.TEXT),
    ],
)
def test_text_formats_are_told_apart_by_name(detect, filename: str, expected) -> None:
    assert detect(b"a,b\n1,2\n", filename) is expected


@pytest.mark.parametrize(
    "html",
    [
        b"<!DOCTYPE html><html><body><p>Hi</p></body></html>",
        b"<html lang='en'><body>Hi</body></html>",
        b"\xef\xbb\xbf\n  <!doctype HTML>\n<title>Hi</title>",
        b"<?xml version='1.0'?>\n<!-- exported -->\n<html xmlns='http://www.w3.org/1999/xhtml'/>",
    ],
)
def test_html_is_told_from_its_opening_whatever_its_name(detect, html: bytes) -> None:
    assert detect(html, "page.txt") is DocumentType.HTML


@pytest.mark.parametrize(
    ("filename", "expected"),
    [("notes.md", DocumentType.MARKDOWN), ("notes.txt", DocumentType.TEXT)],
)
def test_text_that_merely_mentions_html_keeps_its_type(detect, filename: str, expected) -> None:
    text = b"# Export\n\nThe export wraps every page in `<html>` tags.\n"
    assert detect(text, filename) is expected


def test_utf8_text_with_a_bom_is_text(detect) -> None:
    assert detect("\ufeffBeton, Stahl, Fenster\n".encode(), "notes.txt") is DocumentType.TEXT


def test_a_multibyte_character_across_the_read_boundary_is_text(detect) -> None:
    data = b"a" * (1024 * 1024 - 1) + "é".encode() + b"\n"  # é straddles the 1 MiB read
    assert detect(data, "notes.txt") is DocumentType.TEXT


@pytest.mark.parametrize(
    "data",
    [
        random.Random(7).randbytes(4096),
        b"GIF89a" + bytes(200),  # images other than PNG, JPEG and TIFF are not read (issue 51)
        b"\x1f\x8b\x08\x00" + random.Random(8).randbytes(500),
        b"text with a NUL \x00 inside",
    ],
    ids=["random", "gif", "gzip", "nul"],
)
def test_binary_junk_is_none(detect, data: bytes) -> None:
    assert detect(data, "notes.txt") is None


@pytest.fixture
def detected(stored):
    """detect over bytes: the type and the charset."""

    def run(data: bytes, filename: str) -> Detected | None:
        return detect_file(stored(data), filename)

    return run


COSTS_CSV = (
    "Item;Amount;Note\nFaçade repairs;1.200,50 €;phase 2, north\n"
    "Café fit-out;300;“as agreed”\nBesançon site;45;Müller & Söhne\n" * 5
)
MEETING_HTML = "<!doctype html><p>Réunion à Besançon, coût estimé élevé.</p>" * 5


@pytest.mark.parametrize(
    ("text", "encoding", "filename", "content_type", "charset"),
    [
        ("Plain notes, ünïcode.", "utf-8", "n.txt", "text/plain", "utf-8"),
        (COSTS_CSV, "cp1252", "costs.csv", "text/csv", "windows-1252"),
        ("Notes in UTF-16, wörds.", "utf-16", "n.md", "text/markdown", "utf-16"),
        (MEETING_HTML, "cp1252", "m.txt", "text/html", "windows-1252"),
    ],
    ids=["utf-8", "windows-1252-csv", "utf-16-bom", "windows-1252-html"],
)
def test_text_in_another_charset_is_text_read_in_its_charset(
    detected, text, encoding, filename, content_type, charset
):
    data = text.encode(encoding)
    found = detected(data, filename)
    assert found is not None
    assert found.content_type == f"{content_type}; charset={charset}"
    assert charset_of(found.content_type) == found.charset == charset
    assert data.decode(found.charset).lstrip("\ufeff") == text


def test_a_binary_file_has_no_charset(detected) -> None:
    found = detected(make_pdf(["x"]), "x.pdf")
    assert found == Detected(DocumentType.PDF)
    assert found.content_type == "application/pdf"


def test_text_cut_inside_a_character_is_none(detect) -> None:
    assert detect(b"Caf" + "é".encode()[:1], "notes.txt") is None


def test_text_with_many_control_characters_is_none(detect) -> None:
    assert detect(b"abc\x01\x02\x03\x04\x05" * 50, "notes.txt") is None


def test_a_zip_that_is_no_office_document_is_none(detect) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("notes.txt", "not an office file")
    assert detect(out.getvalue(), "report.docx") is None


def test_a_corrupt_zip_is_none(detect) -> None:
    assert detect(b"PK\x03\x04" + random.Random(9).randbytes(2000), "report.docx") is None


def _zip_of(count: int, last: str = "notes.txt") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for index in range(count - 1):
            archive.writestr(f"m/{index}", b"")
        archive.writestr(last, b"<x/>")
    return out.getvalue()


def test_an_office_part_named_last_of_many_entries_is_still_found(detect) -> None:
    assert detect(_zip_of(2_000, "word/document.xml"), "report.docx") is DocumentType.DOCX
    assert detect(_zip_of(2_000, "xl/workbook.xml"), "rates.xlsx") is DocumentType.XLSX


def test_a_zip_of_more_entries_than_an_office_package_may_hold_is_none(detect) -> None:
    """Issue 44: a ZIP's index is read in the API process, so within bounds."""
    assert detect(_zip_of(10_001, "word/document.xml"), "report.docx") is None


@pytest.mark.parametrize(
    ("entries", "directory_size", "offset"),
    [
        (0xFFFF, 46, 0),  # ZIP64: a million entries
        (20, 0xFFFFFFFF, 0),  # ZIP64: a directory past 4 GiB
        (20, 50 * 1024 * 1024, 0),  # a directory of 50 MiB
        (20, 46, 10**9),  # a directory past the end of the file
    ],
)
def test_a_zip_whose_end_record_claims_too_much_is_none_without_reading_it(
    stored, monkeypatch, entries, directory_size, offset
) -> None:
    """The end record is read first (at most 64 KiB from the end); a claim past a bound stops
    the detection there: counted in bytes read, not seconds."""
    import struct

    from strongroom.ingest import detect as detect_module

    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries, directory_size, offset, 0)
    path = stored(b"PK\x03\x04" + b"\x00" * (8 * 1024 * 1024) + end)
    read: list[int] = []

    class Counting(io.FileIO):
        def read(self, size: int = -1) -> bytes:
            data = super().read(size)
            read.append(len(data))
            return data

    monkeypatch.setattr(detect_module, "open", lambda p, mode: Counting(p, "r"), raising=False)
    assert detect_module._office_type(path) is None
    assert sum(read) <= 22 + 0xFFFF


def test_the_unsupported_file_type_message_names_every_type_read():
    """Issue 51 item 4: the refusal lists what is read, in step with the code."""
    from strongroom.corpus.kinds import READ_FORMATS, DocumentType

    names = {"TEXT": "plain text", "MARKDOWN": "Markdown", "EML": "EML", "MSG": "MSG"}
    for kind in DocumentType:
        assert names.get(kind.name, kind.name) in READ_FORMATS, kind
