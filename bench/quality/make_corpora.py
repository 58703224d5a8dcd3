"""Writes each bench-quality corpus's `corpus/` from its `text/` (SOURCES.md): Markdown and text
copied, PDF (fpdf2, DejaVu Sans), DOCX, HTML and XLSX written with fixed dates, the same bytes
each run. Run it after changing a text file (tests/unit/bench/test_quality_corpora.py):

    .venv/bin/python bench/quality/make_corpora.py [far|osha-1926|...]   # default: every one
"""

from __future__ import annotations

import csv
import html
import io
import re
import shutil
import sys
import zipfile
from datetime import UTC, datetime
from pathlib import Path

from docx import Document
from fpdf import FPDF
from fpdf.fonts import FontFace
from openpyxl import Workbook

HERE = Path(__file__).parent
CORPORA = HERE / "corpora"
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
WRITTEN = datetime(2026, 11, 28, tzinfo=UTC)  # every file's date, so that its bytes stay
CREATOR = "bench/quality/make_corpora.py"
SAFETY_CREATOR = "bench/quality/corpora/safety-large/make.py"

Table = list[list[str]]

# 29 CFR 1926.52, Table D-2 (Permissible noise exposures), as the eCFR prints it.
NOISE_TABLE = [
    ["Duration per day, hours", "Sound level dBA slow response"],
    ["8", "90"], ["6", "92"], ["4", "95"], ["3", "97"], ["2", "100"], ["1 1/2", "102"],
    ["1", "105"], ["1/2", "110"], ["1/4 or less", "115"],
]  # fmt: skip
# 48 CFR 1852.243-72 (b), the ceilings on overhead, profit and commission ("—": none).
CEILINGS_TABLE = [
    ["", "Overhead (percent)", "Profit (percent)", "Commission"],
    ["To Contractor on work performed by other than its own forces", "—", "—", "10"],
    ["To first tier subcontractor on work performed by its subcontractors", "—", "—", "10"],
    ["To Contractor and/or subcontractors on work performed with their own forces", "10", "10",
     "—"],
]  # fmt: skip
# Village of Orland Park, Illinois: its standards of quality for sidewalk and driveway
# materials (the source's own spelling, "Norman" and "Curring", kept).
MATERIALS_TABLE = [
    ["Material", "Standard of quality"], ["Portland Cement", "ASTM C150 Type I, Norman"],
    ["", "ASTM C150 Type II, High-Early-Strength"],
    ["Fine Aggregate", "ASTM C33, clean sand graded between #100 and #4 sieve limits."],
    ["Coarse Aggregate",
     "ASTM C33, uncoated crushed stone or washed gravel. Slag shall not be permitted."],
    ["Water", "Potable and fit to drink."],
    ["Water-Reducing Admixture", "ASTM C494 Type (normal) or Type D (retarder)."],
    ["Air Entraining Agent", "ASTM C260"], ["Premolded Filler Strips", "ASTM D994"],
    ["Curring Compound", "ASTM C309, Type 2 (white, pigmented)"],
    ["Reinforcement", "ASTM A615, Grade 40."],
]  # fmt: skip
# FAR 52.225-9 (d), the "Foreign and Domestic Construction Materials Price Comparison" form,
# as the clause prints it (its empty first and last columns left out; "Item1:" as "Item 1:").
_BLANKS = ["_______"] * 3
_PRICES = [
    ["Foreign construction material", *_BLANKS],
    ["Domestic construction material", *_BLANKS],
]
PRICE_TABLE = [
    ["Construction Material Description", "Unit of Measure", "Quantity", "Price (dollars)*"],
    *(row for item in (1, 2) for row in ([f"Item {item}:", "", "", ""], *_PRICES)),
]


def paragraphs(path: Path) -> list[str]:
    return [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]


def as_table(paragraph: str) -> Table | None:
    """The rows of a paragraph whose every line holds a `|` (the first the header), or None."""
    lines = paragraph.splitlines()
    if not all("|" in line for line in lines):
        return None
    rows = [[cell.strip() for cell in line.split("|")] for line in lines]
    width = max(len(row) for row in rows)
    return [row + [""] * (width - len(row)) for row in rows]


def tables(path: Path) -> list[Table]:
    return [t for p in paragraphs(path) if (t := as_table(p))]


def fix_zip_times(path: Path, written: datetime = WRITTEN, stamp: bool = True) -> None:
    """A DOCX or XLSX's members dated `written`, and (if `stamp`) its `modified` too."""
    with zipfile.ZipFile(path) as original:
        members = [(info, original.read(info)) for info in original.infolist()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as rewritten:
        for info, data in members:
            if stamp and info.filename == "docProps/core.xml":
                when = written.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
                data = re.sub(rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>" + when, data)
            fixed = zipfile.ZipInfo(info.filename, date_time=written.timetuple()[:6])
            fixed.compress_type = zipfile.ZIP_DEFLATED
            rewritten.writestr(fixed, data)
    path.write_bytes(out.getvalue())


def write_pdf(source: Path, target: Path, creator: str = CREATOR) -> None:
    """The title, then each paragraph on Letter pages, table paragraphs as grids."""
    pdf = FPDF(format="letter")
    pdf.set_creator(creator)
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
        table = as_table(paragraph)
        if table:
            style = FontFace(emphasis="")
            with pdf.table(line_height=5, text_align="LEFT", headings_style=style) as grid:
                for row in table:
                    grid.row(row)
        else:
            pdf.multi_cell(0, 5, paragraph)
        pdf.ln(2.5)
    pdf.output(str(target))


def write_docx(
    source: Path, target: Path, table: Table | None = None, creator: str | None = CREATOR,
    written: datetime = WRITTEN,
) -> None:  # fmt: skip
    """The title as a heading, `## ...` a second-level one, a paragraph `TABLE` `table`, a
    table paragraph its table; no `creator`: python-docx's own properties kept."""
    document = Document()
    title, *rest = paragraphs(source)
    document.add_heading(title, level=1)
    for paragraph in rest:
        rows = table if paragraph == "TABLE" and table else as_table(paragraph)
        if rows:
            grid = document.add_table(rows=0, cols=len(rows[0]))
            grid.style = "Table Grid"
            for row in rows:
                for cell, value in zip(grid.add_row().cells, row, strict=True):
                    cell.text = value
        elif paragraph.startswith("## "):
            document.add_heading(paragraph[3:], level=2)
        else:
            document.add_paragraph(paragraph)
    if creator:
        document.core_properties.author = creator
        document.core_properties.created = document.core_properties.modified = written
        document.core_properties.last_modified_by = creator
    document.save(str(target))
    fix_zip_times(target, written, stamp=bool(creator))


def write_html(
    source: Path, target: Path, tables: dict[str, tuple[str, Table]], keep_rest: bool = True
) -> None:
    """<h1> the title, <p> a paragraph (lines apart by <br>); a paragraph whose first line is
    a key of `tables` that (caption, table), then its other lines if `keep_rest`."""
    title, *rest = paragraphs(source)
    body = [f"<h1>{html.escape(title)}</h1>"]
    for paragraph in rest:
        first, *after = paragraph.splitlines()
        if first in tables:
            caption, (header, *rows) = tables[first]
            body.append(f"<table>\n<caption>{html.escape(caption)}</caption>")
            body.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in header) + "</tr>")
            for row in rows:
                body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
            body.append("</table>")
            if after and keep_rest:
                body.append(f"<p>{html.escape(' '.join(after))}</p>")
        else:
            lines = "<br>\n".join(html.escape(line) for line in paragraph.splitlines())
            body.append(f"<p>{lines}</p>")
    head = '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>'
    head += f"{html.escape(title)}</title></head>\n<body>"
    page = "\n".join([head, *body, "</body>\n</html>\n"])
    target.write_text(page, encoding="utf-8")


def write_xlsx(
    sheets: dict[str, Table], target: Path, creator: str = CREATOR, numbers: bool = True
) -> None:
    """One worksheet a table, cell for cell (whole numbers as numbers if `numbers`)."""
    workbook = Workbook()
    workbook.remove(workbook.active)
    for name, table in sheets.items():
        worksheet = workbook.create_sheet(name)
        for row in table:
            worksheet.append([float(c) if numbers and c.isdigit() else c for c in row])
    workbook.properties.creator = creator
    workbook.properties.created = workbook.properties.modified = WRITTEN.replace(tzinfo=None)
    workbook.save(str(target))
    fix_zip_times(target)


def fresh(corpus: Path, copies: dict[str, str]) -> tuple[Path, Path]:
    """Empties the corpus's corpus/ and copies `copies` (text file -> document) into it."""
    text, out = corpus / "text", corpus / "corpus"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for source, target in copies.items():
        shutil.copy(text / source, out / target)
    return text, out


def small(name: str) -> tuple[Path, Path]:
    """Issue 27's three corpora: every Markdown file copied, its name prefixed."""
    corpus = CORPORA / name
    prefix = name.split("-")[0]
    return fresh(corpus, {p.name: f"{prefix}-{p.name}" for p in (corpus / "text").glob("*.md")})


def far() -> None:
    text, out = HERE / "text", HERE / "corpus"
    written = datetime(2026, 11, 25, 9, 19, 44)  # when it was first written, without a fix
    write_docx(text / "far-52.246-21-warranty.txt", out / "far-52.246-21-warranty.docx",
               creator=None, written=written)  # fmt: skip


def osha_1926() -> None:
    text, out = small("osha-1926")
    write_pdf(text / "1926.1053-ladders.txt", out / "osha-1926.1053-ladders.pdf")
    write_html(text / "1926.52-noise.txt", out / "osha-1926.52-noise.html",
               {"TABLE D-2": ("Table D-2", NOISE_TABLE)})  # fmt: skip
    write_xlsx({"Table D-2": NOISE_TABLE}, out / "osha-1926.52-table-d-2-noise.xlsx")


def fhwa_635() -> None:
    text, out = small("fhwa-635")
    write_pdf(text / "635.109-changed-conditions.txt", out / "fhwa-635.109-changed-conditions.pdf")
    write_docx(text / "635.112-advertising.txt", out / "fhwa-635.112-advertising.docx")
    write_html(text / "635.114-award.txt", out / "fhwa-635.114-award.html", {})


def agency_clauses() -> None:
    text, out = small("agency-clauses")
    write_pdf(text / "va-852.236-88-contract-changes.txt", out / "va-852.236-88-changes.pdf")
    write_docx(text / "nasa-1852.243-72-equitable-adjustments.txt",
               out / "nasa-1852.243-72-equitable-adjustments.docx", CEILINGS_TABLE)  # fmt: skip
    write_xlsx({"Ceilings": CEILINGS_TABLE}, out / "nasa-1852.243-72-ceilings.xlsx")
    write_html(text / "gsa-552.236-77-specifications-and-drawings.txt",
               out / "gsa-552.236-77-specifications-and-drawings.html", {})  # fmt: skip


def concrete_spec() -> None:
    text, out = fresh(CORPORA / "concrete-spec", {
        "osha-1926.703-705-concrete.md": "osha-1926.703-705-concrete.md",
        "other-municipal-concrete.md": "mn-sd-tx-ky-municipal-concrete.md",
        "indiana-municipal-concrete.txt": "indiana-municipal-concrete.txt",
    })  # fmt: skip
    write_pdf(text / "lawrenceburg-in-155-concrete.txt", out / "lawrenceburg-in-155-concrete.pdf")
    write_docx(text / "ohio-municipal-concrete.txt", out / "ohio-municipal-concrete.docx")
    # MATERIAL STANDARDS (its rows as "Material: standard" lines) becomes the table alone
    write_html(text / "illinois-municipal-concrete.txt", out / "illinois-municipal-concrete.html",
               {"MATERIAL STANDARDS": ("Material standards", MATERIALS_TABLE)},
               keep_rest=False)  # fmt: skip
    write_xlsx({"Materials": MATERIALS_TABLE}, out / "orland-park-il-material-standards.xlsx")


def contracts_large() -> None:
    text, out = fresh(CORPORA / "contracts-large", {
        "site-work-and-drawings.md": "far-site-work-and-drawings.md",
        "time-changes-and-disputes.txt": "far-time-changes-and-disputes.txt",
    })  # fmt: skip
    for name in ("payments-prompt-payment", "inspection-and-termination"):
        write_pdf(text / f"{name}.txt", out / f"far-{name}.pdf")
    write_docx(text / "labor-standards.txt", out / "far-labor-standards.docx")
    write_docx(text / "buy-american-construction-materials.txt",
               out / "far-buy-american-construction-materials.docx", PRICE_TABLE)  # fmt: skip
    write_html(text / "bonds-and-sureties.txt", out / "far-bonds-and-sureties.html", {})
    with (text / "clause-matrix.csv").open(encoding="utf-8", newline="") as f:
        matrix = list(csv.reader(f))
    write_xlsx({"Clause matrix": matrix}, out / "far-construction-clause-matrix.xlsx")


def safety_large() -> None:
    text, out = fresh(CORPORA / "safety-large", {
        name: f"osha-{name}" for name in (
            "1926-subpart-c-general-safety-provisions.txt",
            "1926-subpart-e-personal-protective-equipment.md",
            "1926-subpart-q-concrete-masonry.md",
        )
    })  # fmt: skip
    for name in ("1926.502-fall-protection-systems", "1926.453-aerial-lifts"):
        write_pdf(text / f"{name}.txt", out / f"osha-{name}.pdf", SAFETY_CREATOR)
    for name in ("1926.451-scaffolds-general-requirements", "1926.150-fire-protection"):
        write_docx(text / f"{name}.txt", out / f"osha-{name}.docx", creator=SAFETY_CREATOR)
    name = "1926.50-medical-services-first-aid"
    write_html(text / f"{name}.txt", out / f"osha-{name}.html", {})
    (nets,) = tables(text / "1926.502-fall-protection-systems.txt")
    write_xlsx({"Safety nets": nets}, out / "osha-1926.502-c-2-safety-net-distances.xlsx")
    insulated, uninsulated = tables(text / "1926.451-scaffolds-general-requirements.txt")
    write_xlsx({"Insulated lines": insulated, "Uninsulated lines": uninsulated},
               out / "osha-1926.451-f-6-power-line-clearances.xlsx",
               SAFETY_CREATOR, numbers=False)  # fmt: skip


WRITERS = (far, osha_1926, fhwa_635, agency_clauses, concrete_spec, contracts_large, safety_large)
CORPUS_WRITERS = {writer.__name__.replace("_", "-"): writer for writer in WRITERS}

if __name__ == "__main__":
    for corpus in sys.argv[1:] or CORPUS_WRITERS:
        CORPUS_WRITERS[corpus]()
