"""Writes the documents of the added bench-quality corpora (issue 27) from their text.

Each corpus's `text/` holds the public-domain text as read from its source (SOURCES.md says
where, and what was changed); this script writes what is uploaded, in `corpus/`: copies of
the Markdown files, and PDF (fpdf2, DejaVu Sans), DOCX (python-docx), HTML and XLSX
(openpyxl) written from the text files, so that the benchmark reads the formats users
upload. The tables are the sources' own tables (OSHA Table D-2; the NASA clause's ceilings),
cell for cell. Run it again after changing a text file:

    .venv/bin/python bench/quality/make_corpora.py
"""

from __future__ import annotations

import html
import io
import re
import shutil
import zipfile
from datetime import UTC, datetime
from pathlib import Path

from docx import Document
from fpdf import FPDF
from openpyxl import Workbook

HERE = Path(__file__).parent
CORPORA = HERE / "corpora"
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
# Written into each file's metadata, so that writing them again gives the same bytes.
WRITTEN = datetime(2026, 11, 28, tzinfo=UTC)

# 29 CFR 1926.52, Table D-2 (Permissible noise exposures), as the eCFR prints it.
NOISE_TABLE = [
    ["Duration per day, hours", "Sound level dBA slow response"],
    ["8", "90"],
    ["6", "92"],
    ["4", "95"],
    ["3", "97"],
    ["2", "100"],
    ["1 1/2", "102"],
    ["1", "105"],
    ["1/2", "110"],
    ["1/4 or less", "115"],
]
# 48 CFR 1852.243-72 (b), the ceilings on overhead, profit and commission ("—": none).
CEILINGS_TABLE = [
    ["", "Overhead (percent)", "Profit (percent)", "Commission"],
    ["To Contractor on work performed by other than its own forces", "—", "—", "10"],
    ["To first tier subcontractor on work performed by its subcontractors", "—", "—", "10"],
    ["To Contractor and/or subcontractors on work performed with their own forces", "10", "10",
     "—"],
]  # fmt: skip


def paragraphs(path: Path) -> list[str]:
    return [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]


def fix_zip_times(path: Path) -> None:
    """Rewrites a DOCX or XLSX (a zip) with every member, and its `modified` property, dated
    WRITTEN: the libraries date them now, which would change the bytes each time."""
    with zipfile.ZipFile(path) as original:
        members = [(info, original.read(info)) for info in original.infolist()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as rewritten:
        for info, data in members:
            if info.filename == "docProps/core.xml":
                stamp = WRITTEN.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
                data = re.sub(rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>" + stamp, data)
            fixed = zipfile.ZipInfo(info.filename, date_time=WRITTEN.timetuple()[:6])
            fixed.compress_type = zipfile.ZIP_DEFLATED
            rewritten.writestr(fixed, data)
    path.write_bytes(out.getvalue())


def write_pdf(source: Path, target: Path) -> None:
    """One paragraph after another, the first as the title, on Letter pages."""
    pdf = FPDF(format="letter")
    pdf.set_creator("bench/quality/make_corpora.py")
    pdf.set_creation_date(WRITTEN)
    pdf.add_font("DejaVu", "", str(FONT))
    pdf.set_margins(25, 25, 25)
    pdf.add_page()
    title, *rest = paragraphs(source)
    pdf.set_font("DejaVu", size=13)
    pdf.multi_cell(0, 7, title)
    pdf.ln(3)
    pdf.set_font("DejaVu", size=10)
    for paragraph in rest:
        pdf.multi_cell(0, 5, paragraph)
        pdf.ln(2.5)
    pdf.output(str(target))


def write_docx(source: Path, target: Path, table: list[list[str]] | None = None) -> None:
    """The title as a heading, each paragraph a paragraph; a paragraph `TABLE` is the table."""
    document = Document()
    title, *rest = paragraphs(source)
    document.add_heading(title, level=1)
    for paragraph in rest:
        if paragraph == "TABLE" and table:
            grid = document.add_table(rows=0, cols=len(table[0]))
            grid.style = "Table Grid"
            for row in table:
                cells = grid.add_row().cells
                for cell, value in zip(cells, row, strict=True):
                    cell.text = value
        else:
            document.add_paragraph(paragraph)
    document.core_properties.author = "bench/quality/make_corpora.py"
    document.core_properties.created = document.core_properties.modified = WRITTEN
    document.core_properties.last_modified_by = "bench/quality/make_corpora.py"
    document.save(str(target))
    fix_zip_times(target)


def write_html(source: Path, target: Path, tables: dict[str, list[list[str]]]) -> None:
    """A page with the title as <h1> and a <p> a paragraph; a paragraph naming a table (a key
    of `tables`) is that table, its first row the header."""
    title, *rest = paragraphs(source)
    body = [f"<h1>{html.escape(title)}</h1>"]
    for paragraph in rest:
        if paragraph.splitlines()[0] in tables:
            caption, *after = paragraph.splitlines()
            header, *rows = tables[caption]
            body.append(f"<table>\n<caption>{html.escape(caption.title())}</caption>")
            body.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in header) + "</tr>")
            for row in rows:
                body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
            body.append("</table>")
            if after:
                body.append(f"<p>{html.escape(' '.join(after))}</p>")
        else:
            body.append(f"<p>{html.escape(paragraph)}</p>")
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    target.write_text(page, encoding="utf-8")


def write_xlsx(table: list[list[str]], target: Path, sheet: str) -> None:
    workbook = Workbook()
    worksheet = workbook.active
    worksheet.title = sheet
    for row in table:
        worksheet.append([float(c) if c.isdigit() else c for c in row])
    workbook.properties.creator = "bench/quality/make_corpora.py"
    workbook.properties.created = workbook.properties.modified = WRITTEN.replace(tzinfo=None)
    workbook.save(str(target))
    fix_zip_times(target)


def main() -> None:
    osha, fhwa, agency = (CORPORA / n for n in ("osha-1926", "fhwa-635", "agency-clauses"))
    for corpus in (osha, fhwa, agency):
        out = corpus / "corpus"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        for markdown in (corpus / "text").glob("*.md"):
            shutil.copy(markdown, out / f"{corpus.name.split('-')[0]}-{markdown.name}")

    text, out = osha / "text", osha / "corpus"
    write_pdf(text / "1926.1053-ladders.txt", out / "osha-1926.1053-ladders.pdf")
    write_html(text / "1926.52-noise.txt", out / "osha-1926.52-noise.html",
               {"TABLE D-2": NOISE_TABLE})  # fmt: skip
    write_xlsx(NOISE_TABLE, out / "osha-1926.52-table-d-2-noise.xlsx", "Table D-2")

    text, out = fhwa / "text", fhwa / "corpus"
    write_pdf(text / "635.109-changed-conditions.txt", out / "fhwa-635.109-changed-conditions.pdf")
    write_docx(text / "635.112-advertising.txt", out / "fhwa-635.112-advertising.docx")
    write_html(text / "635.114-award.txt", out / "fhwa-635.114-award.html", {})

    text, out = agency / "text", agency / "corpus"
    write_pdf(text / "va-852.236-88-contract-changes.txt", out / "va-852.236-88-changes.pdf")
    write_docx(text / "nasa-1852.243-72-equitable-adjustments.txt",
               out / "nasa-1852.243-72-equitable-adjustments.docx", CEILINGS_TABLE)  # fmt: skip
    write_xlsx(CEILINGS_TABLE, out / "nasa-1852.243-72-ceilings.xlsx", "Ceilings")
    write_html(text / "gsa-552.236-77-specifications-and-drawings.txt",
               out / "gsa-552.236-77-specifications-and-drawings.html", {})  # fmt: skip


if __name__ == "__main__":
    main()
